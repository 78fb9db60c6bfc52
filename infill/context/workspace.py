"""Workspace index: definition chunks of every supported file under the workspace roots, kept fresh by watchdog.

Completions first: the initial scan reads and parses the files in a process of its own at a low priority
(infill.context.scan: a parse holds Python's lock for as long as it takes, so in this process it would hold up the
completions), and this process takes each file's definitions in only while no completion is waiting or running
(`yield_to`). Without a second process the scan runs here, a file at a time between completions.

Safety and bounds: files are read only inside the roots (resolved paths, symlinks pointing out are skipped),
.gitignore'd, binary and large files are skipped, the file and chunk counts are capped, and file events are
debounced into one batch (a storm of events costs one pending-path set, itself capped: past the cap a
rescan is scheduled instead).
"""

from __future__ import annotations

import bisect
import heapq
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
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
MAX_QUERY_TERMS = 8  # a search scores the definitions of this many of its terms, the rarest in the workspace
WATCH_QUIET_S = 1.0  # completions quiet this long before the file watcher is set up (seconds of work, once)


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
        quiet_for: Callable[[], float] | None = None,
    ):
        self.roots = [Path(r).resolve() for r in roots if Path(r).is_dir()]
        self.max_files, self.max_file_bytes, self.max_chunks = max_files, max_file_bytes, max_chunks
        self.max_pending, self.debounce_s = max_pending, debounce_s
        self.yield_to = yield_to  # true while completions wait or run: the index does nothing meanwhile
        self.quiet_for = quiet_for  # seconds since the completions were last busy
        self.scanning = True  # the first scan is due (the daemon starts it later) or under way, or a rescan is
        self._lock = threading.Lock()
        self._chunks: dict[str, list[Chunk]] = {}
        self._chunk_total = 0  # chunks in `_chunks`
        self._child: subprocess.Popen | None = None  # the scan's own process, while it runs
        self._postings: dict[str, set[str]] = defaultdict(set)  # term -> paths
        # term -> the definitions whose names hold it ((path, chunk index) -> how often): a search scores only those
        self._defs: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
        # (lowercased name, path, chunk index) of every definition, in order: those a typed word starts are one slice
        self._names: list[tuple[str, str, int]] = []
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

    def scan(self, elsewhere: bool = False) -> None:
        """Indexes every wanted file under the roots; `elsewhere`: read and parsed by a process of its own (this
        one only takes the definitions in), else here."""
        self.scanning = True
        try:
            if not (elsewhere and self._scan_elsewhere()):
                for path in self.files():
                    self._wait_for_completions()
                    self.update(path)
        finally:
            self.scanning = False

    def files(self):
        """The wanted files under the roots, at most `max_files`, in a stable order."""
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
                        yield p
                        count += 1

    def hold(self, busy: bool) -> None:
        """Pauses the scan's own process while completions run (busy), and lets it go on after (where the system
        can stop a process: SIGSTOP): on two cores, its parses beside a completion would still slow it down."""
        child = self._child
        if child is None or child.poll() is not None or not hasattr(signal, "SIGSTOP"):
            return
        try:
            os.kill(child.pid, signal.SIGSTOP if busy else signal.SIGCONT)
        except OSError:  # it has just ended
            pass

    def _scan_elsewhere(self) -> bool:
        """The scan by infill.context.scan in a child process, its files' definitions taken in here between
        completions; False when that process could not run (the scan is then done here)."""
        limits = {"roots": [str(r) for r in self.roots], "max_files": self.max_files, "max_bytes": self.max_file_bytes}
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "diffill.infill.context.scan", json.dumps(limits)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                encoding="utf-8",
            )
        except OSError:
            log.info("workspace index: no scan process; scanning here", exc_info=True)
            return False
        child = self._child
        if self.yield_to is not None and self.yield_to():
            self.hold(True)  # a completion runs: the scan waits its turn
        try:
            for line in child.stdout:  # type: ignore[union-attr]
                key, chunks = json.loads(line)
                self._wait_for_completions()
                self.add(key, [Chunk(*c) for c in chunks])
        finally:
            ok = child.wait() == 0
            self._child = None
        return ok

    def read(self, path: Path) -> tuple[str, list[Chunk] | None]:
        """A file's key and definitions (None: not wanted, unreadable or gone)."""
        key = str(path.resolve()) if self.root_of(path) else str(path)
        text = self._read(path) if self.wanted(path) else None
        return key, None if text is None else extract_chunks(text, language_for(None, str(path)), key)

    def update(self, path: Path) -> None:
        key, chunks = self.read(path)
        if chunks is None:
            self.remove(path)
        else:
            self.add(key, chunks)

    def add(self, key: str, chunks: list[Chunk]) -> None:
        """Takes a file's definitions in, in place of those it had (none past the file and chunk caps)."""
        with self._lock:
            self._drop(key)
            if len(self._chunks) >= self.max_files or self._chunk_total + len(chunks) > self.max_chunks:
                return
            self._chunks[key] = chunks
            self._chunk_total += len(chunks)
            for i, c in enumerate(chunks):
                terms = Counter(identifiers(c.name))
                for term in terms:
                    self._postings[term].add(key)
                if c.kind == "definition":
                    for term, tf in terms.items():
                        self._defs[term][(key, i)] = tf
                    bisect.insort(self._names, (c.name.lower(), key, i))
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
        self._chunk_total -= len(chunks)
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
            if c.kind == "definition":
                entry = (c.name.lower(), key, i)
                at = bisect.bisect_left(self._names, entry)
                if at < len(self._names) and self._names[at] == entry:
                    del self._names[at]
        return True

    def chunk_count(self) -> int:
        return self._chunk_total

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
            # the rarest terms only: a common one (`self`, `get`) says little and has the most definitions to score
            df_of = {t: len(self._postings.get(t, ())) for t in q if t in self._defs}  # file-level document frequency
            for t in sorted(df_of, key=df_of.get)[:MAX_QUERY_TERMS]:
                hits, df, qf = self._defs[t], df_of[t], q[t]
                idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
                for ref, tf in hits.items():
                    scores[ref] += idf * tf * 2.2 / (tf + 1.2) * min(qf, 3)
            if low:
                lo = bisect.bisect_left(self._names, (low,))
                hi = bisect.bisect_left(self._names, (low + "\U0010ffff",), lo)
                for _, path, i in self._names[lo:hi]:
                    scores[(path, i)] += 10.0
            ranked = [(-score, path, i) for (path, i), score in scores.items() if score > 0 and path != exclude]
            return [self._chunks[path][i] for _, path, i in heapq.nsmallest(k, ranked)]

    # ----- watching -----
    def start(self) -> None:
        """Initial scan (in a process of its own), then watch the roots (recursive) for create/modify/delete/move:
        set up once the completions have been quiet for WATCH_QUIET_S (a big tree's watches take seconds of this
        process's time)."""
        self.scan(elsewhere=True)
        if not self.roots:
            return
        while self.quiet_for is not None and self.quiet_for() < WATCH_QUIET_S:
            time.sleep(0.1)
        from .watcher import watch

        self._observer = watch(self.roots, self.notify)

    def stop(self) -> None:
        child = self._child
        if child is not None and child.poll() is None:
            child.kill()  # (a stopped process is killed as well)
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
                self._chunk_total = 0
                self._postings.clear()
                self._defs.clear()
                self._names.clear()
            self.scan(elsewhere=True)
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
