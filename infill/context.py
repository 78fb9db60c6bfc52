"""Cross-file context for the prompt: definitions from other files that the code at the cursor names, and the
ranges the user edited recently, each under a file-path header, within a token budget."""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .chunks import Chunk
from .workspace import WorkspaceIndex, identifiers

CONTEXT_LINES_BEFORE = 30
IDENT_TAIL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


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

    def record(self, path: str, text: str, line: int, radius: int = 3) -> None:
        lines = text.split("\n")
        lo, hi = max(0, line - radius), min(len(lines), line + radius + 1)
        snippet = "\n".join(lines[lo:hi]).strip("\n")
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


def query_terms(text: str, offset: int) -> list[str]:
    """Identifiers in the lines before the cursor (nearest lines weigh more: they are repeated)."""
    start = offset
    for _ in range(CONTEXT_LINES_BEFORE):
        nl = text.rfind("\n", 0, max(0, start - 1))
        if nl < 0:
            start = 0
            break
        start = nl + 1
    window = text[start:offset]
    near = text[text.rfind("\n", 0, offset) + 1 : offset]
    return identifiers(window) + identifiers(near) * 2


def format_block(path: str, lines: list[str], root: Path | None = None) -> str:
    shown = path
    if root is not None:
        try:
            shown = str(Path(path).relative_to(root))
        except ValueError:
            pass
    return f"# {shown}\n" + "\n".join(lines)


def gather(
    text: str,
    offset: int,
    path: str | None,
    index: WorkspaceIndex | None,
    recent: RecentEdits | None,
    max_chars: int,
) -> list[str]:
    """Context blocks (most relevant first) whose total size stays under `max_chars`."""
    blocks: list[str] = []
    used = 0
    root = index.root_of(Path(path)) if index is not None and path else None
    if index is not None:
        by_file: dict[str, list[Chunk]] = {}
        word = IDENT_TAIL.search(text, max(0, offset - 64), offset)
        prefix = word.group(0) if word else ""
        for chunk in index.search(query_terms(text, offset), exclude_path=path, k=8, prefix=prefix):
            by_file.setdefault(chunk.path, []).append(chunk)
        for file, chunks in by_file.items():
            block = format_block(file, [c.text for c in sorted(chunks, key=lambda c: c.line)], root)
            if used + len(block) > max_chars:
                continue
            blocks.append(block)
            used += len(block)
    for r in recent.items(exclude_path=path) if recent is not None else []:
        block = format_block(r.path, [r.text], root)
        if used + len(block) > max_chars:
            break
        blocks.append(block)
        used += len(block)
    return blocks
