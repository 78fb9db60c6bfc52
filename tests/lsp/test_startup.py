"""Start-up: `initialize` needs no torch, and a completion asked for while the model loads is answered once it
is ready instead of coming back empty."""

import asyncio
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import PY_PROMPTS, SERVER, capabilities, end_position, get_status, inline, open_doc


def test_the_server_module_imports_without_torch():
    """What `initialize` runs on (the protocol, the settings, the documents) loads no torch: torch and the model
    come after the answer, on the loading thread."""
    code = "import sys, diffill.lsp.server; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def fresh(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_request_made_while_the_model_loads_is_answered_when_it_is_ready(fresh: LanguageClient):
    await fresh.initialize_session(types.InitializeParams(capabilities=capabilities()))
    uris = [(open_doc(fresh, text), text) for text in PY_PROMPTS]
    before = await get_status(fresh)
    answers = await asyncio.gather(*(inline(fresh, uri, end_position(text)) for uri, text in uris))
    assert not before["ready"]  # asked before the model was there
    assert (await get_status(fresh))["ready"]
    assert any(a.items and a.items[0].insert_text for a in answers)  # not dropped empty
