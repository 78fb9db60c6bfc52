"""The ranges the user edited or opened lately: what they are working on is context for the prompt
(infill.context.prompt_context), kept as a few lines each, newest last."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from diffill.infill.text import EOL_RE, line_starts

# A range longer than this is not kept: a minified line says nothing to the prompt (whose context budget it would
# overflow anyway), and copying it out costs its length at every keystroke.
MAX_RANGE_CHARS = 16_384


@dataclass(frozen=True)
class RecentRange:
    path: str
    line: int
    text: str


class RecentEdits:
    """Ring buffer of recently edited or opened ranges (a few lines each), newest last."""

    def __init__(self, capacity: int = 16):
        self._items: deque[RecentRange] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def record(self, path: str, text: str, line: int, radius: int = 3, starts: Sequence[int] | None = None) -> None:
        """Keeps the lines within `radius` of LSP line `line`. `starts`, text's line starts when the caller has them
        (SyntaxDocument.line_starts), makes this cost those lines, not the document: it runs at every edit."""
        starts = line_starts(text) if starts is None else starts
        lo, hi = max(0, line - radius), min(len(starts), line + radius + 1)
        if lo >= hi:
            return
        end = starts[hi] if hi < len(starts) else len(text)
        if end - starts[lo] > MAX_RANGE_CHARS:
            return
        snippet = EOL_RE.sub("\n", text[starts[lo] : end]).strip("\n")
        if not snippet.strip():
            return
        with self._lock:
            # One entry per (file, neighbourhood): a new edit nearby replaces the old one.
            for old in list(self._items):
                if old.path == path and abs(old.line - line) <= radius:
                    self._items.remove(old)
            self._items.append(RecentRange(path, lo, snippet))

    def items(self, exclude_path: str | None = None) -> list[RecentRange]:
        with self._lock:
            return [r for r in reversed(self._items) if r.path != exclude_path]
