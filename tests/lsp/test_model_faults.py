"""A model that cannot be loaded is reported in the editor; the server stays up on the embedded model."""

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import capabilities, end_position, get_status, inline, open_doc, wait_ready

SERVER = [sys.executable, "-m", "diffill.lsp.cli", "serve"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    broken = tmp_path_factory.mktemp("broken-model")
    (broken / "config.json").write_text('{"model_type": "diffusion_gemma", "text_config": {}}')
    (broken / "model.safetensors").write_bytes(b"\x00" * 64)
    lsp_client.broken = str(broken)
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), initialization_options={"model": str(broken)})
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_broken_model_falls_back_to_embedded(client: LanguageClient):
    status = await wait_ready(client)
    assert status["ready"] and "embedded" in status["model"], status
    assert client.broken in (status["error"] or "")
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert any("could not load model" in m and client.broken in m for m in errors), errors
    text = "def add(a, b):\n    return "
    uri = open_doc(client, text)
    res = await inline(client, uri, end_position(text))
    assert all(i.range.start == end_position(text) for i in res.items)
    # Switching to another broken model at run time: reported, and completions keep working.
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"model": "/definitely/not/here"})
    )
    for _ in range(100):
        status = await get_status(client)
        if status["error"] and "/definitely/not/here" in status["error"]:
            break
        import asyncio

        await asyncio.sleep(0.05)
    assert "/definitely/not/here" in status["error"]
    res = await inline(client, uri, end_position(text))
    assert (await get_status(client))["ready"]
