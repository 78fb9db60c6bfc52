"""End-to-end: `diffill serve` over stdio, driven by pytest-lsp as an editor would, with the embedded model."""

import asyncio
import re
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [sys.executable, "-m", "diffill.lsp.cli", "serve"]

PY_PROMPTS = [
    "def total(values):\n    result = 0\n    for value in values:\n        result += value\n    return ",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = ",
    "import os\nimport sys\n\n\ndef main():\n    args = sys.argv[1:]\n    for arg in args:\n        print(",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.",
    "import numpy as ",
    "def add(a, b):\n    return ",
    "for i in range(",
]


def capabilities(encodings=None) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            inline_completion=types.InlineCompletionClientCapabilities(),
            completion=types.CompletionClientCapabilities(),
        ),
    )


def plain(value):
    """pygls hands back untyped results as namedtuples: turn them back into dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def get_status(client: LanguageClient) -> dict:
    return plain(await client.protocol.send_request_async("diffill/status", None))


async def wait_ready(client: LanguageClient, timeout: float = 60.0) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = await get_status(client)
        if status["ready"] or status["model"] == "failed" or loop.time() > deadline:
            return status
        await asyncio.sleep(0.1)


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities(), initialization_options={"steps": 6})
    )
    lsp_client.init_result = result
    status = await wait_ready(lsp_client)
    assert status["ready"], status
    yield
    await lsp_client.shutdown_session()


_counter = [0]


def open_doc(client: LanguageClient, text: str, language: str = "python", suffix: str = "py") -> str:
    _counter[0] += 1
    uri = f"file:///tmp/diffill-test/doc{_counter[0]}.{suffix}"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text))
    )
    return uri


def end_position(text: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(line=len(lines) - 1, character=len(lines[-1].encode("utf-16-le")) // 2)


async def inline(client: LanguageClient, uri: str, pos: types.Position):
    return await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=pos,
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        )
    )


async def first_suggestion(client: LanguageClient, min_len: int = 1):
    """(uri, text, item) for the first prompt that gets a suggestion of at least `min_len` characters."""
    for text in PY_PROMPTS:
        uri = open_doc(client, text)
        res = await inline(client, uri, end_position(text))
        if res.items and len(res.items[0].insert_text) >= min_len:
            return uri, text, res.items[0]
    pytest.fail("no prompt got a suggestion from the embedded model")


@pytest.mark.asyncio(loop_scope="module")
async def test_capabilities(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert (sync.change if hasattr(sync, "change") else sync) == types.TextDocumentSyncKind.Incremental
    assert caps.position_encoding == types.PositionEncodingKind.Utf16


@pytest.mark.asyncio(loop_scope="module")
async def test_inline_completion_returns_an_edit(client: LanguageClient):
    uri, text, item = await first_suggestion(client)
    assert (await get_status(client))["last_latency_ms"] > 0  # the last request's
    pos = end_position(text)
    assert item.range.start == pos  # the edit starts at the cursor
    assert item.range.end.line == pos.line
    assert "\n" not in item.insert_text or text.rstrip().endswith(":")


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_fallback_carries_text_edit(client: LanguageClient):
    uri, text, item = await first_suggestion(client)
    res = await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=end_position(text))
    )
    assert res.items, "completion fallback gave nothing where inline completion did"
    edit = res.items[0].text_edit
    word = re.search(r"\w*$", text).group(0)  # the item starts at the word being typed (popups filter by it)
    assert edit.new_text == word + item.insert_text
    assert edit.range.end == item.range.end and edit.range.start.character == item.range.start.character - len(word)
    assert res.items[0].filter_text.startswith(word) and res.items[0].kind != types.CompletionItemKind.Snippet


def close_doc(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


def type_text(client: LanguageClient, uri: str, at: types.Position, typed: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(at, at), text=typed)],
        )
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_a_popup_item_typed_along_is_served_from_cache(client: LanguageClient):
    uri, text, _ = await first_suggestion(client, min_len=2)
    pos = end_position(text)
    params = types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=pos)
    item = (await client.text_document_completion_async(params)).items[0]
    new_text = item.text_edit.new_text
    word = new_text[: pos.character - item.text_edit.range.start.character]  # the item starts at the typed word
    before = await get_status(client)
    type_text(client, uri, pos, new_text[len(word)], 2)
    res = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri), position=end_position(text + new_text[len(word)])
        )
    )
    after = await get_status(client)
    close_doc(client, uri)  # its half-typed line would be copied into the next tests' documents
    assert res.items[0].text_edit.new_text == new_text  # the same item, still starting at the word
    assert after["stats"]["cache_hits"] == before["stats"]["cache_hits"] + 1
    assert after["stats"]["model_calls"] == before["stats"]["model_calls"]


@pytest.mark.asyncio(loop_scope="module")
async def test_ghost_text_typed_along_is_declined(client: LanguageClient):
    """Ghost text is accepted with one key: typing its next character instead declines it, so its rest is not
    shown again (the model is asked afresh; an answer that repeats the rest is not given)."""
    uri, text, item = await first_suggestion(client, min_len=3)
    before = await get_status(client)
    typed = ""
    for k, ch in enumerate(item.insert_text[:2]):
        type_text(client, uri, end_position(text + typed), ch, 2 + k)
        typed += ch
        res = await inline(client, uri, end_position(text + typed))
        rest = item.insert_text[len(typed) :]
        assert not any(i.insert_text.startswith(rest) for i in res.items), (typed, res.items)
    after = await get_status(client)
    close_doc(client, uri)
    assert after["stats"]["cache_hits"] == before["stats"]["cache_hits"]
    assert after["stats"]["model_calls"] == before["stats"]["model_calls"] + 2


@pytest.mark.asyncio(loop_scope="module")
async def test_edit_during_generation_gives_empty_answer(client: LanguageClient):
    text = PY_PROMPTS[0]
    uri = open_doc(client, text)
    pos = end_position(text)
    task = asyncio.ensure_future(inline(client, uri, pos))
    await asyncio.sleep(0)  # the request is on its way
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text="x")],
        )
    )
    res = await task
    assert len(res.items) == 0
    status = await get_status(client)
    assert status["stats"]["cancelled"] + status["stats"]["stale"] >= 1


@pytest.mark.asyncio(loop_scope="module")
async def test_cancel_request_and_server_keeps_answering(client: LanguageClient):
    text = PY_PROMPTS[1]
    uri = open_doc(client, text)
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri),
        position=end_position(text),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
    )
    fut = client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id="cancel-me")
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wrap_future(fut)
    res = await inline(client, uri, end_position(text))
    assert all(isinstance(i.insert_text, str) for i in res.items)
    status = await get_status(client)
    assert status["in_flight"] == 0


@pytest.mark.asyncio(loop_scope="module")
async def test_settings_change_valid_and_invalid(client: LanguageClient):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"diffill": {"steps": 4}}))
    status = await get_status(client)
    assert status["settings"]["steps"] == 4
    n_messages = len(client.messages)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"diffill": {"steps": "many", "colour": 1}})
    )
    status = await get_status(client)
    assert status["settings"]["steps"] == 4  # previous settings stay
    for _ in range(50):
        if len(client.messages) > n_messages:
            break
        await asyncio.sleep(0.05)
    msg = client.messages[-1].message
    assert "steps" in msg and "colour" in msg and client.messages[-1].type == types.MessageType.Error


@pytest.mark.asyncio(loop_scope="module")
async def test_precision_and_quantization_settings_reload_the_model(client: LanguageClient):
    """Changing how the weights are held reloads the model (no restart), and completions keep coming."""
    try:
        for settings, expected in (
            ({"precision": "float32", "quantization": "int8"}, "float32, int8 weights"),
            ({"precision": "bfloat16", "quantization": "none"}, "bfloat16)"),
        ):
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"diffill": settings})
            )
            for _ in range(300):
                status = await get_status(client)
                if status["ready"] and expected in status["model"]:
                    break
                await asyncio.sleep(0.1)
            assert status["ready"] and expected in status["model"], status
            await first_suggestion(client)
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"diffill": {"precision": "auto", "quantization": "none"}})
        )
        await wait_ready(client)


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_document_gets_empty_result(client: LanguageClient):
    res = await inline(client, "file:///nowhere/never-opened.py", types.Position(0, 0))
    assert len(res.items) == 0


# In each language a call written in two functions above and begun in a third: the rest of the line is there to
# copy, so every language must get it (its grammar parses the document, its filters judge the answer).
_PY_LIKE = "def f{k}(name):\n    log_message(name, level)\n    return name\n\n\n"
_C_LIKE = "void f{k}(int name) {{\n    log_message(name, level);\n    return;\n}}\n\n"
_JS_LIKE = "function f{k}(name) {{\n  logMessage(name, level);\n  return name;\n}}\n\n"


def _twice(head: str, unit: str, begun: str) -> str:
    return head + unit.format(k=1) + unit.format(k=2) + begun


LANG_SNIPPETS = {
    "python": ("py", _twice("", _PY_LIKE, "def f3(name):\n    log_mes")),
    "javascript": ("js", _twice("", _JS_LIKE, "function f3(name) {\n  logMes")),
    "typescript": ("ts", _twice("", _JS_LIKE, "function f3(name: string) {\n  logMes")),
    "typescriptreact": ("tsx", _twice("", _JS_LIKE, "export const App = () => {\n  logMes")),
    "go": ("go", _twice("package main\n\n", "func f{k}(name string) {{\n\tlogMessage(name, level)\n}}\n\n", "func f3(name string) {\n\tlogMes")),
    "rust": ("rs", _twice("", "fn f{k}(name: &str) {{\n    log_message(name, level);\n}}\n\n", "fn f3(name: &str) {\n    log_mes")),
    "c": ("c", _twice("#include <stdio.h>\n\n", _C_LIKE, "void f3(int name) {\n    log_mes")),
    "cpp": ("cpp", _twice("#include <string>\n\n", _C_LIKE, "void f3(int name) {\n    log_mes")),
    "java": ("java", _twice("class A {\n", _C_LIKE, "void f3(int name) {\n    logMes").replace("log_message", "logMessage")),
    "lua": ("lua", _twice("", "local function f{k}(name)\n  log_message(name, level)\nend\n\n", "local function f3(name)\n  log_mes")),
}  # fmt: skip


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("language", list(LANG_SNIPPETS))
async def test_every_language(client: LanguageClient, language: str):
    suffix, text = LANG_SNIPPETS[language]
    uri = open_doc(client, text, language, suffix)
    res = await inline(client, uri, end_position(text))
    assert len(res.items) == 1, language
    item = res.items[0]
    assert item.range.start == end_position(text)
    # at least the word, and no more than the line copied (the cut at doubt may end it early)
    assert item.insert_text.startswith("sage") and "sage(name, level);".startswith(item.insert_text), item


@pytest.mark.asyncio(loop_scope="module")
async def test_a_parameter_added_to_a_signature_is_passed_on_at_the_calls_below(client: LanguageClient):
    text = "def fetch(url):\n    return get(url)\n\n\ndef main(url, timeout):\n    return fetch(url)\n"
    uri = open_doc(client, text)
    col = len("def fetch(url")
    for version, ch in enumerate(", timeout", start=2):  # typed key by key, as editors send it
        pos = types.Position(line=0, character=col)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=ch)],
            )
        )
        col += 1
    cursor = types.Position(line=0, character=col)
    res = await inline(client, uri, cursor)
    assert len(res.items) == 1
    item = res.items[0]
    assert item.range.start == cursor and item.range.end == types.Position(
        line=5, character=len("    return fetch(url)")
    )
    assert item.insert_text == "):\n    return get(url)\n\n\ndef main(url, timeout):\n    return fetch(url, timeout)"


@pytest.mark.asyncio(loop_scope="module")
async def test_a_line_of_another_open_document_is_copied(client: LanguageClient):
    """Rest-of-line copies come from the other open documents too: the line that another file starts the same
    way ends this one (the model alone does not know this project's helper)."""
    other = 'def setup():\n    with open(config_path, encoding="utf-8") as handle:\n        return handle.read()\n'
    open_doc(client, other)
    text = "def build():\n    with open(config_pa"
    uri = open_doc(client, text)
    before = (await get_status(client))["stats"]["copied"]
    res = await inline(client, uri, end_position(text))
    assert res.items and res.items[0].insert_text == 'th, encoding="utf-8") as handle:'  # alone: `th):`
    assert (await get_status(client))["stats"]["copied"] == before + 1  # counted for the status bar
