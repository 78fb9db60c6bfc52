"""The edit the user is making, keystroke by keystroke: when it is finished, and what it changed.

An edit begins with a change and goes on while the changes stay on the lines it has touched (a line broken in two
is still those lines); a change elsewhere finishes it, as does a pause (the caller's timer). What it changed is
found at the end, by comparing the document as it was before it began with the document now: the lines between
the parts the two share (`edit_between`).
"""

from __future__ import annotations

from .edit import Edit

PAUSE_S = 0.6  # an edit with no change for this long is finished (a typist's pause between two edits)


def _shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (a binary search of slice compares: memcmp, not a Python loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def edit_between(before: str, after: str) -> Edit | None:
    """The whole lines that differ between `before` and `after` (None when they are equal)."""
    if before == after:
        return None
    head = _shared_prefix(before, after)
    start = before.rfind("\n", 0, head) + 1
    limit = min(len(before), len(after)) - start
    tail = _shared_prefix(before[::-1][:limit], after[::-1][:limit])  # (a reversed copy: once per finished edit)
    end_before, end_after = len(before) - tail, len(after) - tail
    if not (_line_start(before, end_before) and _line_start(after, end_after)):
        nl = before.find("\n", end_before)  # the shared part's first line end: both texts have it
        step = len(before) - end_before if nl < 0 else nl + 1 - end_before
        end_before, end_after = end_before + step, end_after + step
    return Edit(start, before[start:end_before], after[start:end_after])


def _line_start(text: str, i: int) -> bool:
    return i == 0 or text[i - 1] == "\n"


class EditInProgress:
    """The document before the edit began, and the lines the edit has touched since (in the present lines)."""

    def __init__(self) -> None:
        self.base: str | None = None
        self.lines = (0, 0)  # first and last line touched, in the document's present lines

    def continues(self, first: int, last: int) -> bool:
        """Whether a change of lines first..last (present lines) goes on with this edit."""
        return self.base is not None and self.lines[0] <= first and last <= self.lines[1]

    def change(self, text: str, first: int, last: int, lines_added: int) -> None:
        """A change of lines first..last of `text` (the document before it) that adds `lines_added` lines (fewer
        when negative): it begins an edit unless one goes on."""
        if self.base is None:
            self.base, self.lines = text, (first, last)
        self.lines = (min(self.lines[0], first), max(self.lines[1], last) + lines_added)

    def finish(self, text: str) -> tuple[str, Edit] | None:
        """The document before the edit and what the edit changed, in `text` (the document now); None when there was
        no edit or it changed nothing in the end. The next change begins a new edit."""
        base, self.base = self.base, None
        if base is None:
            return None
        edit = edit_between(base, text)
        return None if edit is None else (base, edit)
