"""Position encodings negotiated (utf-8, utf-16, utf-32) and honoured for non-ASCII text, plus load progress."""

import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import capabilities, inline, wait_ready

SERVER = [sys.executable, "-m", "diffill.lsp.cli", "serve"]
LINE = 'label = "naïve 日本 😀"; print('
TEXT = "# émoji ✓\n" + LINE + "\nx = 1\n"

UNITS = {
    types.PositionEncodingKind.Utf8: lambda s: len(s.encode("utf-8")),
    types.PositionEncodingKind.Utf16: lambda s: len(s.encode("utf-16-le")) // 2,
    types.PositionEncodingKind.Utf32: lambda s: len(s),
}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER),
    params=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32],
)
async def client(lsp_client: LanguageClient, request):
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities([request.param])))
    lsp_client.encoding = request.param
    lsp_client.init_result = result
    assert (await wait_ready(lsp_client))["ready"]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_negotiated_encoding_is_used(client: LanguageClient):
    enc = client.encoding
    assert client.init_result.capabilities.position_encoding == enc
    uri = "file:///tmp/diffill-enc/doc.py"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT))
    )
    # The cursor right after "print(" on line 1, counted in the negotiated unit.
    pos = types.Position(line=1, character=UNITS[enc](LINE))
    res = await inline(client, uri, pos)
    for item in res.items:
        assert item.range.start == pos
        # The edit ends on the same line, within it (the rest of the line is empty after the cursor).
        assert item.range.end == pos
    # Mid-line in front of non-ASCII text: the replaced range must cover exactly the rest of the line.
    mid = LINE.index("日")
    res = await inline(client, uri, types.Position(line=1, character=UNITS[enc](LINE[:mid])))
    start = types.Position(1, UNITS[enc](LINE[:mid]))
    for item in res.items:
        assert item.range.start == start
        # Either a plain insertion or a rewrite of (part of) the rest of the line that retypes it at its end.
        assert item.range.end.line == 1 and start.character <= item.range.end.character <= UNITS[enc](LINE)
        replaced_units = item.range.end.character - start.character
        replaced = next(LINE[mid:j] for j in range(mid, len(LINE) + 1) if UNITS[enc](LINE[mid:j]) == replaced_units)
        assert item.insert_text.endswith(replaced)


@pytest.mark.asyncio
async def test_model_load_reports_progress(client: LanguageClient):
    kinds = [type(v).__name__ for reports in client.progress_reports.values() for v in reports]
    assert "WorkDoneProgressBegin" in kinds and "WorkDoneProgressEnd" in kinds
