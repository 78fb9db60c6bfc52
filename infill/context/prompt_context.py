"""Cross-file context for the prompt: definitions from other files that the code at the cursor names, and the
ranges the user edited recently, each under a file-path header, within a token budget."""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from ..document import SyntaxDocument
from .definitions import Chunk
from .recent_edits import RecentEdits
from .workspace import WorkspaceIndex, identifiers

CONTEXT_LINES_BEFORE = 30
# characters before the cursor whose identifiers are the query: the 30 lines above it, unless they are long (a
# minified line of megabytes must not be read whole at every completion)
QUERY_CHARS = 8_000
CHARS_PER_CONTEXT_TOKEN = 3  # the budget in tokens, packed in characters
IDENT_TAIL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


class PromptContext:
    """The context blocks of a document's prompt, gathered again only when the cursor line or the index changes,
    so the prompt (and with it the reused encoder cache) stays stable while the user types along a line."""

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._stamp: tuple | None = None

    def blocks(
        self,
        doc: SyntaxDocument,
        offset: int,
        key: str | None,
        path: str | None,
        workspace: WorkspaceIndex | None,
        recent: RecentEdits | None,
        budget_tokens: int,
    ) -> list[str]:
        """The blocks for a completion at `offset` of the document `key` (saved at `path`)."""
        if not budget_tokens or (workspace is None and recent is None):
            return []
        line = bisect.bisect_right(doc.line_starts, offset)  # (the document's line index: no count of the text)
        stamp = (key, line, workspace.version if workspace is not None else 0)
        if self._stamp != stamp:
            self._blocks = gather(doc.text, offset, path, workspace, recent, budget_tokens * CHARS_PER_CONTEXT_TOKEN)
            self._stamp = stamp
        return self._blocks


def query_terms(text: str, offset: int) -> list[str]:
    """Identifiers in the lines before the cursor (nearest lines weigh more: they are repeated), within
    QUERY_CHARS of it."""
    lo = max(0, offset - QUERY_CHARS)
    start = offset
    for _ in range(CONTEXT_LINES_BEFORE):
        nl = text.rfind("\n", lo, max(lo, start - 1))
        if nl < 0:
            start = lo
            break
        start = nl + 1
    window = text[start:offset]
    near = text[max(lo, text.rfind("\n", lo, offset) + 1) : offset]
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
