"""`diffill serve` with a server as its model, driven as an editor would, against a stand-in vLLM on 127.0.0.1
(tests/vllm_stub.py; the real vLLM: test_vllm_server.py): it answers through the server, the embedded model
answers while the server fails (the status says so, with the server's message), and the server is picked up
again once it answers."""

import asyncio

import pytest
import pytest_lsp
from gemma_style import TURN_END
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import SERVER, capabilities, end_position, get_status, inline, open_doc, wait_ready
from vllm_stub import StubServer

from diffill.model.chat_tokenizer import ChatTokenizer

TEXT = "def f():\n    "


@pytest.fixture(scope="module")
def stub(gemma_checkpoint):
    server = StubServer(models=[str(gemma_checkpoint)])
    answer = ChatTokenizer.from_folder(gemma_checkpoint).encode("    return 1") + [TURN_END]

    def writes_the_answer(body):
        width = body["vllm_xargs"]["diffusion_canvas_length"]
        choice = {"token_ids": (answer + [0] * width)[:width], "logprobs": {"token_logprobs": [-0.01] * width}}
        return 200, {"choices": [choice]}, 0.0

    server.writes_the_answer = writes_the_answer
    server.behave = writes_the_answer
    yield server
    server.close()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, stub):
    settings = {"model": stub.url, "apiKey": "sk-test", "latencyBudgetMs": 5000}
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), initialization_options=settings)
    )
    status = await wait_ready(lsp_client)
    assert status["ready"], status
    yield
    await lsp_client.shutdown_session()


async def wait_for(client: LanguageClient, answering: str, timeout: float) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = await get_status(client)
        if status["answering"] == answering or loop.time() > deadline:
            return status
        await asyncio.sleep(0.1)


@pytest.mark.asyncio(loop_scope="module")
async def test_it_answers_through_the_server_and_keeps_the_key_to_itself(client: LanguageClient, stub):
    status = await get_status(client)
    assert status["answering"] == "server" and status["source"] == stub.url
    assert status["settings"]["api_key"] == "(set)"
    uri = open_doc(client, TEXT)
    res = await inline(client, uri, end_position(TEXT))
    assert [item.insert_text for item in res.items] == ["return 1"]
    assert stub.headers[-1]["Authorization"] == "Bearer sk-test"
    assert (await get_status(client))["cost"]["server_requests"] >= 1


@pytest.mark.asyncio(loop_scope="module")
async def test_the_embedded_model_answers_while_the_server_fails_and_the_server_is_picked_up_again(
    client: LanguageClient, stub
):
    stub.behave = lambda body: (500, {"error": {"message": "engine core died"}}, 0.0)
    uri = open_doc(client, TEXT + "x = 1\n")
    res = await inline(client, uri, types.Position(line=2, character=0))
    assert res is not None  # answered (by the embedded model: whatever it writes here)
    status = await get_status(client)
    assert status["answering"] == "embedded fallback" and "engine core died" in status["error"], status
    assert any("engine core died" in m.message for m in client.messages), client.messages
    asked = lambda: sum(body["vllm_xargs"]["diffusion_canvas_length"] > 1 for body in stub.bodies)  # no probes
    failed = asked()
    for _ in range(3):  # meanwhile completions do not go to the server (only its probes do)
        await inline(client, uri, types.Position(line=2, character=0))
    assert asked() == failed
    stub.behave = stub.writes_the_answer
    status = await wait_for(client, "server", timeout=10.0)
    assert status["answering"] == "server" and status["error"] is None, status
    res = await inline(client, open_doc(client, TEXT), end_position(TEXT))
    assert [item.insert_text for item in res.items] == ["return 1"]


@pytest.mark.asyncio(loop_scope="module")
async def test_after_a_pause_the_served_models_rewrite_below_the_edit_is_hinted(
    client: LanguageClient, stub, gemma_checkpoint
):
    """An edit, then a pause: the server is asked to rewrite the lines below (the user's change in its prompt), and
    the change it makes there is a hint whose message is the proposal (a code action applies it, as for the rules'
    own: test_next_edit_hints.py)."""
    tok = ChatTokenizer.from_folder(gemma_checkpoint)
    text = "def test():\n    eq(a, 1)\n    eq(b)\n"
    rewritten = tok.encode("    equal(b)\n") + [TURN_END]

    def rewrites(body):
        if "The code to rewrite" not in tok.decode(body["prompt"]):
            return stub.writes_the_answer(body)
        width = body["vllm_xargs"]["diffusion_canvas_length"]
        choice = {"token_ids": (rewritten + [0] * width)[:width], "logprobs": {"token_logprobs": [-0.01] * width}}
        return 200, {"choices": [choice]}, 0.0

    stub.behave = rewrites
    uri = open_doc(client, text)
    at = types.Position(line=1, character=6)  # `eq` -> `equal` on the first call
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(at, at), text="ual")],
        )
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while not client.diagnostics.get(uri) and loop.time() < deadline:
        await asyncio.sleep(0.1)
    hints = client.diagnostics.get(uri)
    assert [(h.message, h.range.start.line, h.range.start.character, h.source) for h in hints] == [
        ("`eq` -> `equal`", 2, 4, "diffill")
    ]
    asked = [tok.decode(b["prompt"]) for b in stub.bodies if "The code to rewrite" in tok.decode(b["prompt"])]
    assert asked and "After it:\n```python\n    equal(a, 1)\n```" in asked[-1]
    stub.behave = stub.writes_the_answer
