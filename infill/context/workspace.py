"""Workspace index: definition chunks of every supported file under the workspace roots, kept fresh by watchdog.

Completions first: the index reads and parses a file only while no completion is waiting or running (`yield_to`),
so a big workspace being indexed costs the first answers nothing but the file in hand.

Safety and bounds: files are read only inside the roots (resolved paths, symlinks pointing out are skipped),
.gitignore'd, binary and large files are skipped, the file and chunk counts are capped, and file events are
debounced into one batch (a storm of events costs one pending-path set, itself capped: past the cap a
rescan is scheduled instead).
"""

from __future__ import annotations

import bisect
import logging
import math
import os
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..languages import language_for
from .definitions import Chunk, extract_chunks

if TYPE_CHECKING:  # both load where the index starts, after the model: not on the daemon's way to ready
    import pathspec
    from watchdog.observers import Observer

log = logging.getLogger(__name__)

ALWAYS_IGNORED = {
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    "dist",
    "build",
    "target",
    ".mypy_cache",
}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
YIELD_POLL_S = 0.005  # how often a yielding index looks again whether the completions are done


def identifiers(text: str) -> list[str]:
    """Identifiers of `text`, also split at snake_case and camelCase boundaries (lowercased)."""
    out = []
    for word in IDENT.findall(text):
        out.append(word.lower())
        parts = [p for p in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", word) if p]
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


class WorkspaceIndex:
    def __init__(
        self,
        roots: list[str | Path],
        max_files: int = 5000,
        max_file_bytes: int = 512_000,
        max_chunks: int = 100_000,
        max_pending: int = 2000,
        debounce_s: float = 0.3,
        yield_to: Callable[[], bool] | None = None,
    ):
        self.roots = [Path(r).resolve() for r in roots if Path(r).is_dir()]
        self.max_files, self.max_file_bytes, self.max_chunks = max_files, max_file_bytes, max_chunks
        self.max_pending, self.debounce_s = max_pending, debounce_s
        self.yield_to = yield_to  # true while completions wait or run: the index does nothing meanwhile
        self.scanning = False  # the initial scan (or a rescan) is under way
        self._lock = threading.Lock()
        self._chunks: dict[str, list[Chunk]] = {}
        self._postings: dict[str, set[str]] = defaultdict(set)  # term -> paths
        # term -> the definitions whose names hold it ((path, chunk index) -> how often): a search scores only those
        self._defs: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
        self._terms: list[str] | None = None  # the terms in order (for the typed word's prefix), built when asked
        self._ignores: dict[Path, pathspec.PathSpec] = {}
        self._pending: set[str] = set()
        self._rescan = False
        self._worker: threading.Thread | None = None
        self._last_event = 0.0
        self._observer: Observer | None = None
        self.version = 0  # bumped on every change (callers cache retrieval per version)

    # ----- which files -----
    def root_of(self, path: Path) -> Path | None:
        """The root containing `path` after resolving links, or None: nothing outside the roots is read."""
        try:
            real = path.resolve()
        except OSError:
            return None
        return next((r for r in self.roots if real == r or real.is_relative_to(r)), None)

    def _ignore_spec(self, root: Path) -> pathspec.PathSpec:
        import pathspec

        if root not in self._ignores:
            lines: list[str] = []
            gi = root / ".gitignore"
            try:
                if gi.is_file() and gi.stat().st_size < 1_000_000:
                    lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                pass
            self._ignores[root] = pathspec.PathSpec.from_lines("gitignore", lines)
        return self._ignores[root]

    def wanted(self, path: Path) -> bool:
        root = self.root_of(path)
        if root is None or language_for(None, str(path)) is None:
            return False
        rel = path.resolve().relative_to(root)
        if ALWAYS_IGNORED.intersection(rel.parts):
            return False
        return not self._ignore_spec(root).match_file(str(rel))

    def _read(self, path: Path) -> str | None:
        try:
            if path.is_symlink() and self.root_of(path) is None:
                return None
            if not path.is_file() or path.stat().st_size > self.max_file_bytes:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        if b"\x00" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    # ----- updates -----
    def _wait_for_completions(self) -> None:
        while self.yield_to is not None and self.yield_to():
            time.sleep(YIELD_POLL_S)

    def scan(self) -> None:
        self.scanning = True
        try:
            self._scan()
        finally:
            self.scanning = False

    def _scan(self) -> None:
        count = 0
        for root in self.roots:
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if d not in ALWAYS_IGNORED)
                for name in sorted(filenames):
                    if count >= self.max_files:
                        log.info("workspace index: file cap %d reached", self.max_files)
                        return
                    p = Path(dirpath) / name
                    if self.wanted(p):
                        self._wait_for_completions()
                        self.update(p)
                        count += 1

    def update(self, path: Path) -> None:
        key = str(path.resolve()) if self.root_of(path) else str(path)
        text = self._read(path) if self.wanted(path) else None
        if text is None:
            self.remove(path)
            return
        chunks = extract_chunks(text, language_for(None, str(path)), key)
        with self._lock:
            self._drop(key)
            if len(self._chunks) >= self.max_files or self.chunk_count() + len(chunks) > self.max_chunks:
                return
            self._chunks[key] = chunks
            for i, c in enumerate(chunks):
                terms = Counter(identifiers(c.name))
                for term in terms:
                    self._postings[term].add(key)
                if c.kind == "definition":
                    for term, tf in terms.items():
                        self._defs[term][(key, i)] = tf
            self._terms = None
            self.version += 1

    def remove(self, path: Path) -> None:
        key = str(path.resolve())
        with self._lock:
            if self._drop(key) or self._drop(str(path)):
                self.version += 1

    def _drop(self, key: str) -> bool:
        chunks = self._chunks.pop(key, None)
        if chunks is None:
            return False
        for i, c in enumerate(chunks):
            for term in set(identifiers(c.name)):
                paths = self._postings.get(term)
                if paths is not None:
                    paths.discard(key)
                    if not paths:
                        del self._postings[term]
                defs = self._defs.get(term)
                if defs is not None:
                    defs.pop((key, i), None)
                    if not defs:
                        del self._defs[term]
        self._terms = None
        return True

    def chunk_count(self) -> int:
        return sum(len(v) for v in self._chunks.values())

    def file_count(self) -> int:
        return len(self._chunks)

    # ----- search -----
    def search(
        self, query_terms: list[str], exclude_path: str | None = None, k: int = 6, prefix: str = ""
    ) -> list[Chunk]:
        """BM25 over definition names: the definitions whose names share identifiers with the query; names that
        start with `prefix` (the word being typed) come first."""
        exclude = str(Path(exclude_path).resolve()) if exclude_path else None
        q = Counter(t for t in query_terms if len(t) > 1)
        low = prefix.lower() if len(prefix) >= 2 else ""
        with self._lock:
            n_docs = max(1, len(self._chunks))
            scores: dict[tuple[str, int], float] = defaultdict(float)
            for t, qf in q.items():
                hits = self._defs.get(t)
                if not hits:
                    continue
                df = len(self._postings.get(t, ()))  # file-level document frequency
                idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
                for ref, tf in hits.items():
                    scores[ref] += idf * tf * 2.2 / (tf + 1.2) * min(qf, 3)
            if low:
                if self._terms is None:
                    self._terms = sorted(self._defs)
                at = bisect.bisect_left(self._terms, low)
                named = set()
                while at < len(self._terms) and self._terms[at].startswith(low):
                    named.update(self._defs[self._terms[at]])
                    at += 1
                for ref in named:
                    if self._chunks[ref[0]][ref[1]].name.lower().startswith(low):
                        scores[ref] += 10.0
            scored = [
                (score, self._chunks[path][i]) for (path, i), score in scores.items() if score > 0 and path != exclude
            ]
        scored.sort(key=lambda sc: (-sc[0], sc[1].path, sc[1].line))
        return [c for _, c in scored[:k]]

    # ----- watching -----
    def start(self) -> None:
        """Initial scan, then watch the roots (recursive) for create/modify/delete/move."""
        self.scan()
        if not self.roots:
            return
        from .watcher import watch

        self._observer = watch(self.roots, self.notify)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None

    def notify(self, path: str) -> None:
        """Queues a changed path; one worker thread processes the batch after `debounce_s` of quiet."""
        with self._lock:
            if len(self._pending) >= self.max_pending:
                self._rescan = True
            else:
                self._pending.add(path)
            self._last_event = time.monotonic()
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="diffill-index-events", daemon=True)
                self._worker.start()

    def _drain(self) -> None:
        """Waits for the events to go quiet, flushes, and ends when nothing is pending."""
        while True:
            with self._lock:
                quiet_for = time.monotonic() - self._last_event
                idle = not self._pending and not self._rescan
                if idle:
                    self._worker = None
                    return
            if quiet_for < self.debounce_s:
                time.sleep(self.debounce_s - quiet_for)
                continue
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, set()
            rescan, self._rescan = self._rescan, False
        if rescan:
            with self._lock:
                self._chunks.clear()
                self._postings.clear()
                self._defs.clear()
                self._terms = None
            self.scan()
            return
        for p in sorted(pending):
            self._wait_for_completions()
            path = Path(p)
            if path.name == ".gitignore":
                self._ignores.clear()
            if path.exists():
                self.update(path)
            else:
                self.remove(path)
