"""What to offer at a cursor: the one completion policy of the daemon, `diffill complete` and `diffill eval`.

A rename in progress comes first (carry it into the lines below, if the model agrees), then a parameter list
being edited (the calls below follow, if any must), then a completion at the cursor.
"""

from __future__ import annotations

from collections.abc import Callable

from .completion import Completion
from .document import SyntaxDocument
from .edits import RenameTracker
from .engine import CompletionEngine
from .signatures import SignatureTracker
from .trace import Trace


class CompletionPolicy:
    """Picks the kind of answer for a request and asks the engine for it."""

    def __init__(self, engine: CompletionEngine) -> None:
        self.engine = engine

    def answer(
        self,
        doc: SyntaxDocument,
        offset: int,
        *,
        renames: RenameTracker | None = None,
        signatures: SignatureTracker | None = None,
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        path: str | None = None,
        trace: Trace | None = None,
        start: float | None = None,
    ) -> Completion | None:
        """The answer at `offset`, or None. `renames` / `signatures`: what the editor's edits of this document
        showed (absent for a document seen once, as in `diffill eval`); `trace` gets what a completion cost, `start` is when the request arrived. Raises
        Cancelled when `cancel()` says so."""
        rename = renames.rename_at(doc.text, offset) if renames is not None else None
        if rename is not None:
            edited = self.engine.edit(doc, offset, rename, cancel=cancel, key=key)
            if edited is not None:
                return edited
        changed = signatures.change_at(doc, offset) if signatures is not None else None
        if changed is not None:
            followed = self.engine.follow_signature(doc, offset, changed)
            if followed is not None:
                return followed
        return self.engine.complete(doc, offset, cancel=cancel, key=key, path=path, trace=trace, start=start)
