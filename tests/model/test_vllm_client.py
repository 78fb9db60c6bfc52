"""The client of a vLLM server: the request body, the answer read back, and every way a request fails (a stand-in
server on 127.0.0.1: tests/vllm_stub.py; the real vLLM is tests/lsp/test_vllm_server.py's)."""

import socket
import threading
import time

import pytest
from vllm_stub import StubServer, canvas_answer

from diffill.model.cancel import Cancelled
from diffill.model.server_url import is_server_url
from diffill.model.vllm_server import (
    API_KEY_ENV,
    CanvasRequest,
    Connection,
    Late,
    ServedModel,
    ServerError,
    VllmServer,
    completion_body,
    parse_canvas,
)


@pytest.fixture
def stub():
    server = StubServer()
    yield server
    server.close()


def client(url: str, **kw) -> VllmServer:
    return VllmServer(Connection(url, **kw))


def test_urls_name_servers_and_paths_do_not():
    assert is_server_url("http://gpu:8000") and is_server_url(" HTTPS://x/v1") and not is_server_url("/models/dg")
    assert not is_server_url("google/diffusiongemma-26B-A4B-it")
    assert Connection("http://gpu:8000/v1/").base == "http://gpu:8000"


def test_a_read_only_canvas_with_pins_gets_a_seed_canvas_of_noise_and_no_temperature():
    request = CanvasRequest([7, 8, 9], width=8, steps=6, pins={5: 41, 6: 106})
    body = completion_body("m", request, vocab_size=300, seed=3)
    x = body["vllm_xargs"]
    assert body["prompt"] == [7, 8, 9] and body["max_tokens"] == 8 and body["model"] == "m"
    assert x["diffusion_canvas_length"] == 8 and x["diffusion_max_steps"] == 6 and x["diffusion_read_only"] == 1
    seed = x["diffusion_seed_canvas"]
    assert len(seed) == 8 and seed[5:7] == [41, 106] and all(0 <= t < 300 for t in seed)
    assert x["diffusion_pinned"] == [5, 6]
    assert "temperature" not in body and "seed" not in body  # vLLM refuses both for this model
    assert completion_body("m", request, 300, seed=3) == body  # the same noise for the same seed


def test_a_draft_seeds_the_canvas_and_no_pins_no_draft_sends_neither():
    drafted = completion_body("m", CanvasRequest([1], 4, 2, seed_canvas=[10, 11]), 300)["vllm_xargs"]
    assert drafted["diffusion_seed_canvas"][:2] == [10, 11] and "diffusion_pinned" not in drafted
    plain = completion_body("m", CanvasRequest([1], 4, 2), 300)["vllm_xargs"]
    assert "diffusion_seed_canvas" not in plain and "diffusion_pinned" not in plain


def test_the_answer_keeps_what_was_pinned():
    request = CanvasRequest([1], 4, 2, pins={2: 99})
    answer = parse_canvas(canvas_answer({"vllm_xargs": {"diffusion_canvas_length": 4}}), request, 1.0)
    assert answer.tokens == [5, 5, 99, 5] and answer.logprobs == [-0.1, -0.1, 0.0, -0.1]
    with pytest.raises(ServerError, match="token ids"):
        parse_canvas({"choices": [{"text": "x"}]}, request, 1.0)


def test_models_and_a_canvas_through_the_pool(stub):
    server = client(stub.url)
    try:
        assert server.models() == [ServedModel("tiny-dg", "tiny-dg")]
        for _ in range(3):
            answer = server.canvas("tiny-dg", CanvasRequest([1, 2], 4, 2, pins={3: 7}), 50)
            assert answer.tokens == [5, 5, 5, 7] and answer.server_ms > 0
        assert stub.bodies[-1]["vllm_xargs"]["diffusion_pinned"] == [3]
    finally:
        server.close()


def test_the_api_key_is_sent_as_a_bearer_token_from_the_settings_or_the_environment(stub, monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, "from-env")
    for key, sent in ((None, "Bearer from-env"), ("sk-set", "Bearer sk-set")):
        server = client(stub.url, api_key=key)
        try:
            server.models()
        finally:
            server.close()
        assert stub.headers[-1]["Authorization"] == sent
    assert "sk-set" not in repr(Connection(stub.url, api_key="sk-set"))


def test_an_http_error_says_what_the_server_said(stub):
    stub.behave = lambda body: (400, {"error": {"message": "temperature must be 1.0", "code": 400}}, 0.0)
    server = client(stub.url)
    try:
        with pytest.raises(ServerError, match="HTTP 400: temperature must be 1.0"):
            server.canvas("tiny-dg", CanvasRequest([1], 4, 2), 50)
        stub.behave = lambda body: (503, "upstream gone", 0.0)
        with pytest.raises(ServerError, match="HTTP 503: upstream gone"):
            server.canvas("tiny-dg", CanvasRequest([1], 4, 2), 50)
    finally:
        server.close()


def test_an_unreachable_server_and_a_timeout_are_server_errors():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = client(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(ServerError, match="cannot reach"):
            server.models()
    finally:
        server.close()
    silent = socket.socket()  # accepts and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    server = client(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.2)
    try:
        t0 = time.perf_counter()
        with pytest.raises(ServerError, match="timed out"):
            server.models()
        assert time.perf_counter() - t0 < 2.0
    finally:
        server.close()
        silent.close()


def test_a_cancelled_request_is_closed_and_the_server_stops_it(stub):
    stub.behave = lambda body: (200, canvas_answer(body), 2.0)
    server = client(stub.url)
    cancelled = threading.Event()
    threading.Timer(0.1, cancelled.set).start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(Cancelled):
            server.canvas("tiny-dg", CanvasRequest([1], 4, 2), 50, cancel=cancelled.is_set)
        assert time.perf_counter() - t0 < 0.5
        deadline = time.monotonic() + 3
        while stub.aborted == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stub.aborted == 1 and stub.finished == 0
    finally:
        server.close()


def test_an_answer_after_its_deadline_is_dropped(stub):
    stub.behave = lambda body: (200, canvas_answer(body), 1.0)
    server = client(stub.url)
    try:
        t0 = time.perf_counter()
        with pytest.raises(Late):
            server.canvas("tiny-dg", CanvasRequest([1], 4, 2), 50, deadline=time.perf_counter() + 0.15)
        assert time.perf_counter() - t0 < 0.6
    finally:
        server.close()


def test_a_ca_file_that_cannot_be_read_is_a_clear_error(tmp_path):
    with pytest.raises(ServerError, match="CA file"):
        client("https://127.0.0.1:9", ca_file=str(tmp_path / "missing.pem"))
