"""Next edits: after the user changes the code, the edits that change implies elsewhere in the document.

`NextEdits.propose(before, after, edit)` takes an edit that is finished (the lines from `edit.start` that read `edit.before`
in the document `before` read `edit.after` in the document `after`), finds its core replacement (change.py), the
other places it applies with the same syntactic shape (places.py, shape.py), and keeps the proposals that add no
parse error. A model that rewrites adds the changes it writes below the edit (rewrite.py, through
CompletionEngine.rewrite_below).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from ..document import SyntaxDocument, count_errors
from .change import Change, core_of
from .edit import Edit, Proposal, apply, joined
from .places import places
from .predeclared import predeclared
from .scope import bound_locally
from .shape import shape

__all__ = ["Edit", "NextEdits", "Proposal", "apply", "joined", "parse_clean"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
REMEMBERED = 16  # the changes of a document kept to recognise a repeat
CARRIED = 4  # the changes whose places are proposed at once


@dataclass(frozen=True)
class Made:
    """A change the user made: its core, and the syntactic shape of the place it was made at."""

    change: Change
    origin: tuple[str, ...] | None


@dataclass(frozen=True)
class Carried:
    """A change being carried to the other places it applies, as the user made it (once or more)."""

    made: tuple[Made, ...]
    name: bool  # a name replaced by another (places where the name is a local are not its places)

    @property
    def change(self) -> Change:
        return self.made[-1].change


class NextEdits:
    """One document's next edits: the changes the user made lately, and what they imply.

    A name replaced by another (`t.AnyStr` -> `_TSerialized`, `hashlib.sha1` -> `_lazy_sha1`) is carried to the
    other places of the same shape at once, but not where the name is a local of its function. Any other change (a
    suffix added, an argument list reworked, a method's name after its object's `.`) is carried only once the user
    has made it twice: one such change alone is as likely a local fix. A word of the language itself (`true`,
    `string`) is never carried (predeclared.py). The last CARRIED changes are carried until their places are gone
    (made, or edited otherwise): each edit's proposals are theirs, the newest first where two want one place.

    Proposals come from below the edit only. A user carrying a change by hand goes down the file, so a place above
    the edit that still reads the old text is one they passed and kept: in the replayed histories not one proposal
    above the edit was right (docs/benchmarks.md, "Next edits"). A rename followed at the cursor (infill/edits.py)
    goes down the file as well.
    """

    def __init__(self) -> None:
        self._made: deque[Made] = deque(maxlen=REMEMBERED)
        self._carried: deque[Carried] = deque(maxlen=CARRIED)

    def propose(self, before: SyntaxDocument, after: SyntaxDocument, edit: Edit) -> list[Proposal]:
        """The next edits in the document `after`, once `edit` is made (an empty list when there are none)."""
        new = self._carry(before, edit)
        if new is not None:
            core = (new.change.old, new.change.new)
            self._carried = deque([c for c in self._carried if (c.change.old, c.change.new) != core], maxlen=CARRIED)
            self._carried.append(new)
        proposals: list[Proposal] = []
        taken: list[tuple[int, int]] = [(edit.start, edit.start + len(edit.after))]
        for carried in list(reversed(self._carried)):
            found = [
                (s, e)
                for s, e in places(after, carried.change, {m.origin for m in carried.made}, taken[0])
                if not any(s < b and e > a or s == e == a for a, b in taken)
                and not (carried.name and bound_locally(after, s, carried.change.old))
            ]
            if not found and carried is not new:
                self._carried.remove(carried)  # made everywhere, or edited otherwise: nothing left to carry
            ahead = [(s, e) for s, e in found if s >= edit.start]  # the places above were passed (see the class)
            taken += ahead
            proposals += [Proposal(s, e, carried.change.new, carried.change.old) for s, e in ahead]
        return parse_clean(after, proposals)

    def _carry(self, before: SyntaxDocument, edit: Edit) -> Carried | None:
        """The change `edit` made, when it is one to carry elsewhere (see the class)."""
        change = core_of(edit.before, edit.after)
        if change is None or not _names_something(change) or predeclared(before.language, change.old):
            return None
        at = edit.start + change.offset
        made = Made(change, shape(before, at, at + len(change.old)))
        same = [m for m in self._made if (m.change.old, m.change.new) == (change.old, change.new)] + [made]
        self._made.append(made)
        # A method or attribute named after its object's `.` is renamed at some of its uses as often as at all of them
        # (docs/benchmarks.md, "Next edits"): like any other change, it is carried once the user made it twice.
        member = change.left == "."
        name = NAME.fullmatch(change.old) is not None and not member and _names_only(before, at, at + len(change.old))
        if len(same) > 1 or (name and not bound_locally(before, at, change.old)):
            return Carried(tuple(same), name)
        return None


def _names_only(doc: SyntaxDocument, start: int, end: int) -> bool:
    """Whether doc.text[start:end] is names in the code, dotted or not (`hashlib.sha1`): no keyword or literal
    (`true`, `None`, `this`), no word of a string or a comment."""
    if doc.tree is None or start >= end:
        return False
    b0, b1 = doc.byte_offset(start), doc.byte_offset(end)
    todo = [doc.tree.root_node.descendant_for_byte_range(b0, b1)]
    while todo:
        node = todo.pop()
        if node is None or node.end_byte <= b0 or node.start_byte >= b1:
            continue
        if node.child_count:
            todo += node.children
        elif not ("identifier" in node.type or node.type == "."):
            return False
    return True


def _names_something(change: Change) -> bool:
    """A change worth offering elsewhere names something: a digit, a bracket or a letter alone is a local fix."""
    return any(len(t) > 1 and t[0].isalpha() for t in re.findall(r"\w+", change.old + " " + change.new))


def parse_clean(doc: SyntaxDocument, proposals: list[Proposal]) -> list[Proposal]:
    """The proposals that leave the document with no more parse errors than it has (all at once when they can)."""
    if not proposals or doc.language is None:
        return proposals
    base = doc.error_count()
    if count_errors(doc.language, apply(doc.text, proposals)) <= base:
        return proposals
    return [p for p in proposals if count_errors(doc.language, apply(doc.text, [p])) <= base]
