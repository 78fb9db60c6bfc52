"""The server's document copies (diffill.lsp.documents): text sync that never loses a document."""

from lsprotocol import types

from diffill.lsp import documents
from diffill.lsp.documents import apply_changes, best_effort, open_state


def _item(text: str, uri: str = "file:///tmp/docs/a.py", language_id: str = "python") -> types.TextDocumentItem:
    return types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)


def _edit(line: int, char: int, end_line: int, end_char: int, text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, char), types.Position(end_line, end_char)), text=text
    )


def test_open_takes_the_language_from_the_path_or_else_the_language_id():
    assert open_state(_item("x = 1\n", "file:///tmp/docs/a.go", "plaintext")).doc.language == "go"
    odd = open_state(_item("x = 1\n", "file://[x", "python"))  # urllib cannot split it: the languageId decides
    assert odd is not None and odd.doc.language == "python" and odd.version == 0


def test_a_document_over_the_size_cap_is_not_kept(monkeypatch):
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 16)
    assert open_state(_item("é" * 9)) is None  # 18 bytes in UTF-8, 9 characters
    state = open_state(_item("x = 1\n"))
    assert apply_changes("u", state, [_edit(1, 0, 1, 0, "y = 2\n")], "utf-16")
    assert not apply_changes("u", state, [_edit(2, 0, 2, 0, "z = 3\n")], "utf-16")  # grew past the cap


def test_changes_apply_in_order_in_the_clients_encoding():
    state = open_state(_item("s = '😀'\nx = 1\n"))
    changes = [_edit(0, 7, 0, 7, "!"), _edit(1, 4, 1, 5, "2")]  # the emoji is two UTF-16 units
    assert apply_changes("u", state, changes, "utf-16")
    assert state.doc.text == "s = '😀!'\nx = 2\n" and state.version == 1
    apply_changes("u", state, [types.TextDocumentContentChangeWholeDocument(text="y = 3\n")], "utf-16")
    assert state.doc.text == "y = 3\n" and state.version == 2 and state.renames.session is None


def test_a_failing_observer_costs_neither_the_edit_nor_the_later_ones(caplog):
    state = open_state(_item("value = 1\nprint(value)\n"))

    def broken(*args):
        raise IndexError("observer bug")

    state.renames.observe = broken
    assert apply_changes("u", state, [_edit(0, 0, 0, 5, "total"), _edit(1, 6, 1, 11, "total")], "utf-16")
    assert state.doc.text == "total = 1\nprint(total)\n"
    assert "failed; the edit itself is kept" in caplog.text


def test_a_failed_incremental_update_reparses_the_text_it_has(caplog):
    state = open_state(_item("x = 1\n"))
    old = state.doc

    def broken(*args):
        raise RuntimeError("tree bug")

    old.apply_change = broken
    assert apply_changes("u", state, [_edit(0, 0, 0, 1, "y")], "utf-16")
    assert state.doc is not old and state.doc.text == "x = 1\n" and state.doc.language == "python"
    assert "incremental update failed; reparsing" in caplog.text


def test_guarded_returns_the_result_or_none():
    assert best_effort(lambda a, b: a + b, 1, 2) == 3
    assert best_effort(lambda: 1 / 0) is None
