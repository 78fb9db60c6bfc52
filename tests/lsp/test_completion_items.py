"""The completion fallback's popup item (lsp.server._completion_item): clients filter items by the word being
typed, so the item's edit starts at that word and its label and filter text start with it."""

import pytest
from lsprotocol import types

from diffill.infill.completion import Completion
from diffill.lsp.documents import open_state
from diffill.lsp.server import _completion_item


def _state(text: str):
    return open_state(types.TextDocumentItem(uri="file:///tmp/items/a.py", language_id="python", version=1, text=text))


@pytest.mark.parametrize(
    "text, answer, typed",
    [
        ("def f(self):\n    self._ex", "rule.append(x)", "_ex"),  # mid-word: the item spells the whole word
        ("value = get_", "netrc_auth()", "get_"),
        ("print(", "value)", ""),  # after a bracket: nothing typed, the item starts at the cursor
        ("x = caf\u00e9_", "au_lait", "caf\u00e9_"),  # a word with a non-ASCII letter (UTF-16 positions)
    ],
)
def test_the_item_starts_at_the_word_being_typed(text, answer, typed):
    state = _state(text)
    item = _completion_item(state, Completion(len(text), len(text), answer, "line"), "utf-16")
    assert item.text_edit.new_text == typed + answer
    assert item.label.startswith(typed) and item.filter_text.startswith(typed)
    start = item.text_edit.range.start
    assert state.doc.offset_at(start.line, start.character, "utf-16") == len(text) - len(typed)
    assert item.kind != types.CompletionItemKind.Snippet
    assert item.insert_text_format == types.InsertTextFormat.PlainText


def test_a_multi_line_answer_is_labelled_by_its_first_line():
    text = "def f():\n    retu"
    item = _completion_item(_state(text), Completion(len(text), len(text), "rn 1\n\nx = 2", "block"), "utf-16")
    assert item.label == "return 1" and item.text_edit.new_text == "return 1\n\nx = 2"
