"""Faults: broken models (missing, truncated, corrupt weights, wrong config, pickle only, out of memory) are shown in
the editor and the server keeps serving on the embedded model; a client that dies mid-request leaves no stuck
worker and the process ends. (tests/lsp/test_model_faults.py covers the first broken model and a missing folder.)
"""

from __future__ import annotations

import json
import pickle
import shutil
import time
from pathlib import Path

import pytest
import torch
from lsprotocol import types

from diffill.bench.wire import RawClient
from diffill.model import runtime

EMBEDDED = runtime.EMBEDDED_DIR


class _Payload:
    """Unpickling this creates a file: if any code path loaded pickles, the file would appear."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


def _model_folder(root: Path, name: str, weights: bytes | None = None, config: str | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    shutil.copy(EMBEDDED / "tokenizer.json", folder / "tokenizer.json")
    (folder / "config.json").write_text(config if config is not None else (EMBEDDED / "config.json").read_text())
    if weights is not None:
        (folder / "model.safetensors").write_bytes(weights)
    return folder


@pytest.fixture(scope="module")
def broken_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("faults")
    weights = (EMBEDDED / "model.safetensors").read_bytes()
    header_len = int.from_bytes(weights[:8], "little")
    corrupt = bytearray(weights)
    corrupt[8 : 8 + header_len] = b"\xff" * header_len  # header no longer JSON
    lying = bytearray(weights)
    lying[:8] = (len(weights) * 4).to_bytes(8, "little")  # header length past the end of the file
    cfg = json.loads((EMBEDDED / "config.json").read_text())
    cfg["text_config"]["hidden_size"] = 384  # shapes disagree with the weights
    huge = json.loads((EMBEDDED / "config.json").read_text())
    huge["text_config"].update(vocab_size=2**40, hidden_size=2**20, num_hidden_layers=4096)  # would need exabytes
    pickled = root / "pickle-only"
    pickled.mkdir()
    shutil.copy(EMBEDDED / "tokenizer.json", pickled / "tokenizer.json")
    shutil.copy(EMBEDDED / "config.json", pickled / "config.json")
    (pickled / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(root / "PICKLE-RAN")))
    return {
        "truncated": str(_model_folder(root, "truncated", weights[: len(weights) // 2])),
        "missing": str(_model_folder(root, "missing", None)),
        "corrupt": str(_model_folder(root, "corrupt", bytes(corrupt))),
        "lying-header": str(_model_folder(root, "lying-header", bytes(lying))),
        "empty": str(_model_folder(root, "empty", b"")),
        "config-not-json": str(_model_folder(root, "config-not-json", weights, "{not json")),
        "config-wrong-shape": str(_model_folder(root, "config-wrong-shape", weights, json.dumps(cfg))),
        "config-absurd": str(_model_folder(root, "config-absurd", weights, json.dumps(huge))),
        "pickle-only": str(pickled),
        "shell": f"$(touch {root / 'SHELL-RAN'}); `touch {root / 'SHELL-RAN'}`",
        "root": str(root),
    }


def _errors(client: RawClient) -> list[str]:
    return [
        m["params"]["message"]
        for m in client.messages
        if m["method"] == "window/showMessage" and m["params"]["type"] == types.MessageType.Error
    ]


def test_broken_models_are_reported_and_the_embedded_model_serves(broken_models):
    client = RawClient()
    try:
        first = broken_models["truncated"]
        client.initialize({"model": first, "steps": 2})
        status = client.wait_ready()
        assert status["ready"] and "embedded" in status["model"], status
        assert first in status["error"]
        assert any("could not load model" in m and first in m for m in _errors(client))
        uri = "file:///tmp/faults/a.py"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "def add(a, b):\n    return "}})  # fmt: skip
        for name in ["missing", "corrupt", "lying-header", "empty", "config-not-json", "config-wrong-shape", "config-absurd", "pickle-only", "shell"]:  # fmt: skip
            source = broken_models[name]
            n_errors = len(_errors(client))
            client.notify("workspace/didChangeConfiguration", {"settings": {"diffill": {"model": source}}})
            assert client.wait_for(lambda n=n_errors: len(_errors(client)) > n, timeout=60), name
            message = _errors(client)[-1]
            assert "could not load model" in message and source in message, (name, message)
            status = client.status()
            assert status["ready"] and status["error"], (name, status)  # (the message above names the folder)
            if name == "pickle-only":
                assert "pickle files are never loaded" in message
            params = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}}  # fmt: skip
            response = client.request("textDocument/inlineCompletion", params, timeout=60)
            assert isinstance(response["result"]["items"], list), (name, response)
        root = Path(broken_models["root"])
        assert not (root / "PICKLE-RAN").exists() and not (root / "SHELL-RAN").exists()
        assert client.shutdown() == 0
    finally:
        client.close()


@pytest.mark.parametrize(
    "error",
    [MemoryError(), torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")],
    ids=["cpu", "cuda"],
)
def test_out_of_memory_at_load_falls_back(monkeypatch, error):
    """Simulated in process: the loader raising MemoryError (with an empty message) or torch's OOM."""
    from diffill.lsp.server import DiffillServer
    from diffill.lsp.settings import parse_settings

    real = runtime.load

    def load(source, *args, **kwargs):
        if source:
            raise error
        return real(source, *args, **kwargs)

    monkeypatch.setattr(runtime, "load", load)
    ls = DiffillServer()
    ls.protocol.client_capabilities = types.ClientCapabilities()
    shown: list[tuple[types.MessageType, str]] = []
    monkeypatch.setattr(ls, "show", lambda message, kind=types.MessageType.Error: shown.append((kind, message)))
    ls.session.settings = parse_settings({"model": "/models/too-big"})
    ls.session.loader.load()
    assert ls.session.loader.state == "ready (embedded fallback)" and ls.session.engine is not None
    errors = [m for k, m in shown if k == types.MessageType.Error]
    assert errors and "/models/too-big" in errors[0]
    assert "out of memory" in errors[0].lower()  # a bare MemoryError() used to give "could not load model '...': "
    ls.session.scheduler.shutdown()


def _wait_gone(client: RawClient, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while client.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.proc.poll()


def _busy_client() -> tuple[RawClient, object]:
    """A server with a long generation in flight (many denoising steps on a long prompt)."""
    client = RawClient()
    client.initialize({"steps": 128})
    assert client.wait_ready()["ready"]
    text = "import os\nimport sys\n\n\ndef main():\n" + "    x = compute(x)\n" * 200 + "    return "
    uri = "file:///tmp/faults/busy.py"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
    params = {"textDocument": {"uri": uri}, "position": {"line": 205, "character": 11}, "context": {"triggerKind": 1}}
    msg_id = client.start_request("textDocument/inlineCompletion", params)
    deadline = time.monotonic() + 10
    while client.status()["in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return client, msg_id


def test_client_closing_stdin_mid_request_ends_the_server():
    client, _ = _busy_client()
    try:
        client.proc.stdin.close()
        code = _wait_gone(client, 15)
        assert code is not None, "server still running 15 s after its client went away (stuck worker?)"
        assert code == 0, client.stderr()
    finally:
        client.close()


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (an orphan may wait for a reaper that never comes)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False


KILLED_CLIENT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from test_faults import _busy_client
client, _ = _busy_client()
print(client.pid, flush=True)
time.sleep(600)
"""


def test_client_killed_mid_request_ends_the_server():
    """A client process killed with SIGKILL while a generation runs: its pipes close under the server, whose
    answer then hits a broken pipe and whose reads end; the orphaned server must still end on its own."""
    import os
    import signal
    import subprocess
    import sys

    killer = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True
    )
    try:
        server_pid = int(killer.stdout.readline())
        os.kill(killer.pid, signal.SIGKILL)
        killer.wait()
        deadline = time.monotonic() + 15
        while _running(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = _running(server_pid)
        if alive:
            os.kill(server_pid, signal.SIGKILL)
        assert not alive, "server still running 15 s after its client was killed"
    finally:
        if killer.poll() is None:
            killer.kill()


def test_exit_ends_the_process_even_with_stdin_open():
    client, msg_id = _busy_client()
    try:
        assert "result" in client.request("shutdown", None, timeout=30)
        refused = client.request("diffill/status", None)  # pygls used to ignore requests after shutdown: no answer
        assert refused["error"]["code"] == -32600
        client.notify("exit")
        assert _wait_gone(client, 15) == 0, client.stderr()
    finally:
        client.close()


def test_exit_without_shutdown_exits_with_1():
    client = RawClient()
    try:
        client.initialize({})
        client.notify("exit")
        assert _wait_gone(client, 15) == 1
    finally:
        client.close()
