"""glibc's heap kept to what the daemon uses: few malloc arenas, and freed pages handed back.

Every thread that allocates gets an arena of its own (up to eight a core), and each arena keeps the pages freed in
it: the model, event-loop, warm-up and index threads all allocate tensors and texts of changing sizes, so the
server's memory grew with the requests it answered (docs/benchmarks.md, "Tuned constants"). The pages freed are
handed back after a big document closes, every so many answers (lsp/session.py) and when the model has been idle a
while (IdleTrim). No-ops where there is no glibc.

`malloc_trim` hands back the free pages inside every arena but the free top of the main one only: the top of the
other arenas (where the model thread's tensors live) goes back when a block of 64 KiB or more is freed in them while
the top is over M_TRIM_THRESHOLD. glibc slides that threshold up with the big blocks freed (to twice the mmap
threshold, 64 MiB at most), so the model thread's arena kept a top of 5-16 MiB, more as the sizes of the requests
grew (`diffill bench soak`). Both thresholds are fixed here instead: high while the model works, so a burst of
requests does not hand pages back and fault them in again, and the idle trim (release_idle_memory) drops the trim
threshold for a moment and frees a probe block on the model thread, which gives its arena's top back.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from collections.abc import Callable

MALLOC_ARENAS = 2  # arenas the threads share (mallopt's M_ARENA_MAX)
# Blocks from this size up are mmapped apart, smaller ones come from the arenas: glibc's own sliding threshold at its
# ceiling, so that the model's working tensors are never mmapped and unmapped per request.
MMAP_THRESHOLD = 32 << 20
BUSY_TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # the free top an arena keeps between trims (glibc's own ratio)
TRIM_PROBE_BYTES = 256 << 10  # freed at a trim: at least glibc's 64 KiB, below which a free never trims the top
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # the mallopt parameters (malloc.h)
# Seconds the model stays idle before the freed heap pages are handed back: past a typist's pauses between words, so
# a burst of typing is not slowed by faulting them in again (docs/benchmarks.md, "Tuned constants").
IDLE_TRIM_S = 5.0


class _MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (malloc.h)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """glibc, its allocator's functions typed once; None elsewhere."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
    return libc


def tune_heap() -> None:
    """At most MALLOC_ARENAS arenas and fixed thresholds (see the module) from now on: call it before the daemon
    starts its threads."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, BUSY_TRIM_THRESHOLD)


def release_freed_memory() -> None:
    """Asks glibc to return freed heap pages to the system: those inside every arena and the main arena's free top.
    A big document's text, bytes and syntax tree are freed when it closes, but the allocator keeps their pages:
    without this the server's memory only ever grows by about its size (docs/benchmarks.md, "Tuned constants")."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def release_idle_memory() -> None:
    """release_freed_memory, and the free top of the calling thread's arena too (so call it on the model thread):
    what a burst of requests left there is handed back once the user pauses, not kept while typing goes on."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return
    libc.mallopt(M_TRIM_THRESHOLD, 0)
    try:
        libc.free(libc.malloc(TRIM_PROBE_BYTES))
        release_freed_memory()
    finally:
        libc.mallopt(M_TRIM_THRESHOLD, BUSY_TRIM_THRESHOLD)


def heap_figures() -> dict[str, int]:
    """glibc's heap in kB: `in_use` (allocated blocks), `held_free` (freed but kept by the arenas) and `mapped`
    (big blocks mmapped apart). A leak grows `in_use`; fragmentation grows `held_free`. Empty without glibc."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    info = libc.mallinfo2()
    return {"in_use": info.uordblks // 1024, "held_free": info.fordblks // 1024, "mapped": info.hblkhd // 1024}


class IdleTrim:
    """Hands the freed heap pages back once the model has been idle for `idle_s`, once per idle spell: the memory a
    burst of requests left held by glibc's arenas (it moves by tens of MiB with the sizes the last requests took) is
    not kept while the user reads or thinks. The trim runs through `submit` (the model thread), so a request that
    arrives meanwhile waits for it rather than racing it. The watching thread starts with the first idle spell."""

    def __init__(
        self,
        quiet_for: Callable[[], float],
        submit: Callable[[Callable[[], None]], object],
        idle_s: float = IDLE_TRIM_S,
        trim: Callable[[], None] = release_idle_memory,
    ) -> None:
        self._quiet_for, self._submit, self._idle_s, self._trim = quiet_for, submit, idle_s, trim
        self._idle = threading.Event()  # set when the model goes idle, cleared by the watcher
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def told(self, busy: bool) -> None:
        """A Scheduler.on_busy listener: an idle spell starts when the last generation ends."""
        if busy:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="diffill-idle-trim", daemon=True)
                self._thread.start()
        self._idle.set()

    def _watch(self) -> None:
        while True:
            self._idle.wait()
            self._idle.clear()
            while (quiet := self._quiet_for()) > 0:  # 0: busy again, and its end starts the next spell
                if quiet >= self._idle_s:
                    self._idle.clear()  # this spell's end is counted in `quiet`
                    try:
                        self._submit(self._trim)
                    except RuntimeError:  # the model thread has shut down
                        return
                    break
                time.sleep(self._idle_s - quiet)
