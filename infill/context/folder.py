"""The files of the edited one's folder: texts that copies (infill.sources.copies) come from and the n-gram
evidence (infill.context.ngram_evidence) learns from.

A project repeats itself across files far more than a model of a few million parameters can remember: test
modules call the same helpers, clients mirror each other, handlers share their boilerplate. The files in the
same folder with the same extension are read from disk, cached while their size and mtime stay the same, and
bounded (count, size per file, total) so that a huge folder costs no more than a small one.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

MAX_FILES = 48  # the most recently modified first
MAX_FILE_BYTES = 256_000
MAX_TOTAL_BYTES = 4_000_000
MAX_LISTED = 2000  # folder entries looked at
LISTING_TTL_S = 2.0  # a folder is listed (and its files stat'ed) again after this long, not on every keystroke


class FolderFiles:
    """Texts of the files beside a path (same folder, same extension; the file itself only when asked)."""

    def __init__(self, clock=time.monotonic) -> None:
        self._texts: dict[Path, tuple[tuple[int, int], str]] = {}  # path -> ((mtime_ns, size), text)
        self._listings: dict[tuple[Path, str], tuple[float, list]] = {}  # (folder, suffix) -> (time, entries)
        self._clock = clock
        self._lock = threading.Lock()

    def _entries(self, folder: Path, suffix: str) -> list[tuple[Path, os.stat_result]]:
        """The folder's files with that suffix and their stat, newest first; listed again after LISTING_TTL_S."""
        now = self._clock()
        cached = self._listings.get((folder, suffix))
        if cached is not None and now - cached[0] < LISTING_TTL_S:
            return cached[1]
        entries = []
        try:
            for i, p in enumerate(folder.iterdir()):
                if i >= MAX_LISTED:
                    break
                if p.suffix == suffix and not p.is_symlink() and p.is_file():
                    entries.append((p, p.stat()))
        except OSError:
            entries = []
        entries.sort(key=lambda e: -e[1].st_mtime_ns)
        if len(self._listings) > 64:
            self._listings.clear()
        self._listings[(folder, suffix)] = (now, entries)
        return entries

    def texts(self, path: str | Path, include_self: bool = False) -> list[tuple[Path, str]]:
        """(path, text) of the files beside `path` (and of `path` itself with `include_self`), newest first."""
        with self._lock:  # the server's warm-up thread reads them too
            return self._texts_of(Path(path), include_self)

    def _texts_of(self, here: Path, include_self: bool) -> list[tuple[Path, str]]:
        entries = [(p, st) for p, st in self._entries(here.parent, here.suffix) if include_self or p.name != here.name]
        out, total = [], 0
        for p, st in entries[:MAX_FILES]:
            if st.st_size > MAX_FILE_BYTES or total + st.st_size > MAX_TOTAL_BYTES:
                continue
            text = self._read(p, (st.st_mtime_ns, st.st_size))
            if text:
                out.append((p, text))
                total += st.st_size
        return out

    def _read(self, path: Path, stamp: tuple[int, int]) -> str | None:
        cached = self._texts.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if b"\x00" in data[:8192]:  # binary
            return None
        if len(self._texts) > 4 * MAX_FILES:
            self._texts.clear()
        text = data.decode("utf-8", errors="replace")
        self._texts[path] = (stamp, text)
        return text
