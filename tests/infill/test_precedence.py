"""The engine's precedence (CompletionEngine.answer): a rename in progress, then a signature being edited, then a
completion; each falls through to the next when it has nothing to offer."""

import pytest

from diffill.infill.completion import Completion
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine

EDIT = Completion(0, 1, "renamed", "edit")
FOLLOWED = Completion(0, 1, "passed on", "edit")
COMPLETED = Completion(0, 0, "completed", "line")


class Engine:
    """An engine double that records what `answer` asked of it and answers as the test says."""

    def __init__(self, edit, follow):
        self.asked: list[str] = []
        self._edit, self._follow = edit, follow

    def edit(self, doc, offset, rename, cancel=None, key=None):
        self.asked.append(f"edit {rename[0]}->{rename[1]}")
        return self._edit

    def follow_signature(self, doc, offset, change):
        self.asked.append(f"signature {change}")
        return self._follow

    def complete(self, doc, offset, **kw):
        self.asked.append("complete")
        return COMPLETED


class Renames:
    def __init__(self, pending):
        self.pending = pending

    def rename_at(self, text, offset):
        return self.pending


class Signatures:
    def __init__(self, pending):
        self.pending = pending

    def change_at(self, doc, offset):
        return self.pending


@pytest.mark.parametrize(
    "rename, edit, change, follow, answer, asked",
    [
        (("a", "b"), EDIT, "added x", FOLLOWED, EDIT, ["edit a->b"]),  # a rename first
        (("a", "b"), None, "added x", FOLLOWED, FOLLOWED, ["edit a->b", "signature added x"]),
        (("a", "b"), None, "added x", None, COMPLETED, ["edit a->b", "signature added x", "complete"]),
        (None, EDIT, "added x", FOLLOWED, FOLLOWED, ["signature added x"]),  # no rename: the signature
        (None, EDIT, None, FOLLOWED, COMPLETED, ["complete"]),  # neither: a completion
    ],
)
def test_a_rename_then_a_signature_then_a_completion(rename, edit, change, follow, answer, asked):
    engine = Engine(edit, follow)
    got = CompletionEngine.answer(
        engine, SyntaxDocument("x = 1\n", "python"), 5, renames=Renames(rename), signatures=Signatures(change)
    )
    assert got is answer and engine.asked == asked


def test_without_trackers_it_completes():
    engine = Engine(EDIT, FOLLOWED)
    assert CompletionEngine.answer(engine, SyntaxDocument("x = 1\n", "python"), 5) is COMPLETED
    assert engine.asked == ["complete"]
