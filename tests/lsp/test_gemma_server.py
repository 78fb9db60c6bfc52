"""`diffill serve` with a checkpoint laid out like google/diffusiongemma-26B-A4B-it (tests/gemma_style.py), driven
as an editor would: it loads, says which model it serves, and answers every request (a suggestion or none)."""

import pytest
import pytest_lsp
from gemma_style import CODE
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import SERVER, capabilities, end_position, get_status, inline, open_doc, wait_ready


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, gemma_checkpoint):
    settings = {"model": str(gemma_checkpoint), "steps": 2}
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), initialization_options=settings)
    )
    status = await wait_ready(lsp_client)
    assert status["ready"], status
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_it_serves_the_checkpoint_and_answers_every_request(client: LanguageClient, gemma_checkpoint):
    status = await get_status(client)
    assert status["source"] == str(gemma_checkpoint) and status["prompt_format"].startswith("DiffusionGemma chat")
    text = CODE + "\n\ndef main():\n    store = Store(os.getcwd())\n    "
    uri = open_doc(client, text)
    for version, ch in enumerate("print(store.path(", start=2):  # typed key by key, each keystroke asked
        at = end_position(text)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(range=types.Range(at, at), text=ch)],
            )
        )
        text += ch
        res = await inline(client, uri, end_position(text))
        assert res is not None and len(res.items) <= 1
        for item in res.items:
            assert item.range.start == end_position(text)
    for line in (0, 5, 12):  # mid-file cursors, block bodies among them
        res = await inline(client, uri, types.Position(line=line, character=4))
        assert res is not None
    assert client.log_messages == [] or not any(m.type == types.MessageType.Error for m in client.log_messages)
