"""Next edits over LSP: a change typed key by key becomes hint diagnostics at the other places it applies, with
code actions that apply one or all (the real server, over stdio)."""

from __future__ import annotations

import pytest
from next_edit_sample import SIGNING as SOURCE

from diffill.bench.wire import RawClient
from diffill.infill.document import SyntaxDocument
from diffill.lsp.documents import DocState
from diffill.lsp.next_edit_hints import DocumentHints

URI = "file:///tmp/diffill_next_edits/sign.py"


def _at(line: int, char: int) -> dict:
    return {"line": line, "character": char}


def _type(client: RawClient, line: int, char: int, delete: int, text: str, version: int) -> int:
    """Deletes `delete` characters at (line, char) one key at a time, then types `text` a key at a time."""
    for _ in range(delete):
        version += 1
        change = {"range": {"start": _at(line, char), "end": _at(line, char + 1)}, "text": ""}
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]})  # fmt: skip
    for i, ch in enumerate(text):
        version += 1
        change = {"range": {"start": _at(line, char + i), "end": _at(line, char + i)}, "text": ch}
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]})  # fmt: skip
    return version


def _hints(client: RawClient) -> list[dict] | None:
    published = [m for m in client.messages if m.get("method") == "textDocument/publishDiagnostics"]
    return published[-1]["params"]["diagnostics"] if published else None


def _apply(text: str, edits: list[dict]) -> str:
    doc = SyntaxDocument(text, None)
    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        r = e["range"]
        start = doc.offset_at(r["start"]["line"], r["start"]["character"])
        end = doc.offset_at(r["end"]["line"], r["end"]["character"])
        text = text[:start] + e["newText"] + text[end:]
        doc = SyntaxDocument(text, None)
    return text


@pytest.fixture
def client():
    c = RawClient()
    c.initialize({"steps": 2})
    yield c
    c.close()


def test_a_change_typed_then_paused_is_hinted_where_it_applies_and_applied_by_code_actions(client):
    client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": SOURCE}})  # fmt: skip
    _type(client, 4, 10, len("hashlib.sha1"), "_lazy_sha1", 1)  # then a pause: the edit is finished
    assert client.wait_for(lambda: _hints(client), timeout=10)
    hints = _hints(client)
    assert [(h["range"]["start"]["line"], h["severity"], h["source"]) for h in hints] == [(9, 4, "diffill")]
    assert "_lazy_sha1" in hints[0]["message"] and "hashlib.sha1" in hints[0]["message"]

    actions = client.result("textDocument/codeAction", {"textDocument": {"uri": URI}, "range": hints[0]["range"], "context": {"diagnostics": hints}})  # fmt: skip
    assert [a["kind"] for a in actions] == ["quickfix"]  # one place: "apply here" only
    edits = actions[0]["edit"]["changes"][URI]
    now = SOURCE.replace("    mac = hashlib.sha1(key)\n    return mac.digest()\n", "    mac = _lazy_sha1(key)\n    return mac.digest()\n", 1)  # fmt: skip
    assert _apply(now, edits) == now.replace("hashlib.sha1(key)", "_lazy_sha1(key)")

    # the cursor on the hinted place: the inline completion there is the next edit (Tab applies it)
    cursor = hints[0]["range"]["start"]
    got = client.result("textDocument/inlineCompletion", {"textDocument": {"uri": URI}, "position": cursor, "context": {"triggerKind": 1}})  # fmt: skip
    assert [(i["insertText"], i["range"]) for i in got["items"]] == [("_lazy_sha1", edits[0]["range"])]

    # a keystroke on the hinted place contradicts it: the hint goes
    _type(client, 9, 10, 1, "H", 100)
    assert client.wait_for(lambda: _hints(client) == [], timeout=10)
    assert client.shutdown() == 0


def test_apply_at_all_places_is_one_edit_and_the_setting_turns_hints_off(client):
    text = SOURCE + "\n\ndef more(key):\n    mac = hashlib.sha1(key)\n"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
    version = _type(client, 4, 10, len("hashlib.sha1"), "_lazy_sha1", 1)
    _type(client, 0, 14, 0, "  # noqa", version)  # a change elsewhere finishes the edit at once
    assert client.wait_for(lambda: _hints(client) and len(_hints(client)) == 2, timeout=10)
    first = _hints(client)[0]
    actions = client.result("textDocument/codeAction", {"textDocument": {"uri": URI}, "range": first["range"], "context": {"diagnostics": [first]}})  # fmt: skip
    assert len(actions) == 2 and "all 2 places" in actions[1]["title"]
    assert len(actions[1]["edit"]["changes"][URI]) == 2

    client.notify("workspace/didChangeConfiguration", {"settings": {"diffill": {"nextEdits": False}}})
    assert client.result("textDocument/codeAction", {"textDocument": {"uri": URI}, "range": first["range"], "context": {"diagnostics": []}}) == []  # fmt: skip
    assert client.shutdown() == 0


def test_proposals_move_with_the_changes_above_them():
    state = DocState(SyntaxDocument(SOURCE, "python"), "python")
    hints: DocumentHints = state.hints
    doc = state.doc
    at = SOURCE.index("hashlib.sha1(key)")
    hints.before_change(doc, at, at + len("hashlib.sha1"), "_lazy_sha1")
    doc.replace_range(at, at + len("hashlib.sha1"), "_lazy_sha1")
    hints.finish(doc)
    assert [doc.text[p.start : p.end] for p in hints.proposals] == ["hashlib.sha1"]
    hints.before_change(doc, 0, 0, "# top\n")  # a line added above: the proposal moves with its text
    doc.replace_range(0, 0, "# top\n")
    assert [doc.text[p.start : p.end] for p in hints.proposals] == ["hashlib.sha1"]
