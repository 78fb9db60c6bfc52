"""Next edits as every editor already shows them: a hint diagnostic (source `diffill`) at each place a change the
user made applies again, its message the proposed text, and code actions on it: apply here, apply at all places
(one WorkspaceEdit: one undo step). The edits are found by infill.next_edits once the user's edit is finished
(the next change elsewhere, or a pause: the session's timer), and a model that rewrites adds those it writes below
the edit (`add`); proposals move with the document's changes and go where a change touches them (the user's
keystrokes contradict them)."""

from __future__ import annotations

from collections import deque

from lsprotocol import types

from diffill.infill.document import SyntaxDocument
from diffill.infill.next_edits import Edit, NextEdits, Proposal, joined
from diffill.infill.next_edits.progress import EditInProgress
from diffill.infill.next_edits.rewrite import RECENT_EDITS

SOURCE = "diffill"
CODE = "next-edit"


class DocumentHints:
    """One document's next edits: the edit in progress, and the proposals shown (in the document's offsets)."""

    def __init__(self) -> None:
        self.tracker = NextEdits()
        self.editing = EditInProgress()
        self.proposals: list[Proposal] = []
        self.recent: deque[Edit] = deque(maxlen=RECENT_EDITS)  # the edits finished last, the newest last
        self.dirty = False  # the proposals changed since they were last shown

    def before_change(self, doc: SyntaxDocument, start: int, end: int, new_text: str) -> None:
        """A change of doc.text[start:end] into `new_text` is about to be made: a change off the edit's lines
        finishes it first; proposals after the change move, those it touches go."""
        first, last = doc.position_at(start, "utf-32")[0], doc.position_at(end, "utf-32")[0]
        if not self.editing.continues(first, last):
            self.finish(doc)
        self.editing.change(doc.text, first, last, new_text.count("\n") - (last - first))
        delta = len(new_text) - (end - start)
        kept = []
        for p in self.proposals:
            if p.end < start:
                kept.append(p)
            elif p.start > end:
                kept.append(Proposal(p.start + delta, p.end + delta, p.text, p.old))
        self.dirty |= len(kept) != len(self.proposals) or (delta != 0 and bool(kept))
        self.proposals = kept

    def replaced(self) -> None:
        """The whole text was replaced: nothing is in progress, nothing proposed."""
        self.editing = EditInProgress()
        self.dirty |= bool(self.proposals)
        self.proposals = []

    def finish(self, doc: SyntaxDocument) -> Edit | None:
        """The edit in progress is finished: what it implies becomes the proposals (a large document, parsed in a
        window, gets none). The edit, or None when none was in progress or it changed nothing."""
        if doc.window is not None:
            self.editing = EditInProgress()
            return None
        done = self.editing.finish(doc.text)
        if done is None:
            return None
        base, edit = done
        self.proposals = sorted(self.tracker.propose(SyntaxDocument(base, doc.language), doc, edit), key=_start)
        self.recent.append(edit)
        self.dirty = True
        return edit

    def add(self, proposals: list[Proposal]) -> None:
        """More proposals for the document as it reads (a model's rewrite below the edit): those that overlap none
        shown join them."""
        shown = joined(self.proposals, proposals)
        self.dirty |= len(shown) != len(self.proposals)
        self.proposals = shown

    def at(self, offset: int) -> Proposal | None:
        """The proposal whose place holds `offset` (its ends included), if any."""
        return next((p for p in self.proposals if p.start <= offset <= p.end), None)

    def diagnostics(self, doc: SyntaxDocument, encoding: str) -> list[types.Diagnostic]:
        self.dirty = False
        return [_diagnostic(doc, p, encoding) for p in self.proposals]

    def code_actions(self, doc: SyntaxDocument, uri: str, at: types.Range, encoding: str) -> list[types.CodeAction]:
        """ "Apply here" for each proposal on the lines of `at`, and "apply at all N places" for its change."""
        first, last = at.start.line, at.end.line
        actions = []
        for p in self.proposals:
            line = doc.position_at(p.start, "utf-32")[0]
            if not first <= line <= last:
                continue
            diagnostic = _diagnostic(doc, p, encoding)
            same = [q for q in self.proposals if (q.old, q.text) == (p.old, p.text)]
            actions.append(_action(f"diffill: {_message(p)} here", doc, uri, [p], encoding, diagnostic, True))
            if len(same) > 1:
                title = f"diffill: {_message(p)} at all {len(same)} places"
                actions.append(_action(title, doc, uri, same, encoding, diagnostic, False))
        return actions


def _diagnostic(doc: SyntaxDocument, p: Proposal, encoding: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(doc, *_shown(doc, p), encoding),
        message=_message(p),
        severity=types.DiagnosticSeverity.Hint,
        source=SOURCE,
        code=CODE,
    )


def _start(p: Proposal) -> int:
    return p.start


def _message(p: Proposal) -> str:
    return f"`{p.old}` -> `{p.text}`" if p.old else f"add `{p.text.strip()}`"


def _shown(doc: SyntaxDocument, p: Proposal) -> tuple[int, int]:
    """The range a proposal's diagnostic marks: its own, or for a text added at a place, the word before it (an
    empty range is drawn by no editor)."""
    if p.start < p.end:
        return p.start, p.end
    line_start = doc.text.rfind("\n", 0, p.start) + 1
    return max(line_start, p.start - 1), p.start


def _range(doc: SyntaxDocument, start: int, end: int, encoding: str) -> types.Range:
    sl, sc = doc.position_at(start, encoding)
    el, ec = doc.position_at(end, encoding)
    return types.Range(types.Position(sl, sc), types.Position(el, ec))


def _action(
    title: str,
    doc: SyntaxDocument,
    uri: str,
    proposals: list[Proposal],
    encoding: str,
    diagnostic: types.Diagnostic,
    preferred: bool,
) -> types.CodeAction:
    edits = [types.TextEdit(_range(doc, p.start, p.end, encoding), p.text) for p in proposals]
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=preferred,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )
