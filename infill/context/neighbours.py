"""The texts around a document that copies come from and the n-gram evidence learns from: the editor's other open
documents (their unsaved text wins over the disk's) and the files of the document's folder, plus how much of the
document itself around the cursor line counts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .folder import MAX_FILE_BYTES, FolderFiles

log = logging.getLogger(__name__)

WINDOW_BEFORE = 20_000  # characters of the document before the cursor line searched for matches
WINDOW_AFTER = 5_000  # ... and after it
MAX_OPEN_SOURCES = 16  # open documents searched for copies (the last opened)


@dataclass(frozen=True)
class Neighbours:
    """The other open documents, and the files of the document's folder on disk (its own saved copy included: one
    n-gram index of a folder serves all its files, each left out of its own matches)."""

    opened: list[tuple[str, str]]  # (resolved path, the editor's text)
    folder: list[tuple[Path, str]]  # resolved paths
    here: Path | None  # the document's resolved path
    opened_paths: frozenset[str]

    def texts(self) -> list[str]:
        """What copies come from: the open documents, then the folder's files neither open nor this one (whose
        saved copy may hold what is being typed)."""
        opened = [t for _, t in self.opened]
        return opened + [t for p, t in self.folder if p != self.here and str(p) not in self.opened_paths]


def neighbours_of(
    path: str | None,
    open_documents: Callable[[], dict[str, str]] | None,
    folder: FolderFiles,
    read_roots: list[Path] | None,
) -> Neighbours:
    """The open documents other than `path` (at most MAX_OPEN_SOURCES, the last opened; `open_documents` gives
    them by file path) and the files of its folder on disk, only inside `read_roots` (None: any folder)."""
    opened = {}
    if open_documents is not None:
        try:
            opened = {str(Path(p).resolve()): t for p, t in open_documents().items()}
        except Exception:  # a source of extra context must never cost the completion
            log.exception("open documents for copies")
    here = Path(path).resolve() if path else None
    others = [(p, t) for p, t in opened.items() if p != str(here) and len(t) <= MAX_FILE_BYTES][-MAX_OPEN_SOURCES:]
    folder_files = []
    if path:
        # the folder's files are plain files (no links): resolved, they are the resolved folder plus a name
        parent = Path(path).parent.resolve()
        if read_roots is None or any(parent == r or parent.is_relative_to(r) for r in read_roots):
            folder_files = [(parent / p.name, t) for p, t in folder.texts(path, include_self=True)]
    return Neighbours(others, folder_files, here, frozenset(opened))
