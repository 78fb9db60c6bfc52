"""glibc's heap kept to what the daemon uses: few malloc arenas, and freed pages handed back.

Every thread that allocates gets an arena of its own (up to eight a core), and each arena keeps the pages freed in
it: the model, event-loop, warm-up and index threads all allocate tensors and texts of changing sizes, so the
server's memory grew with the requests it answered (docs/benchmarks.md, "Tuned constants"). No-ops where there is
no glibc.
"""

from __future__ import annotations

import ctypes

MALLOC_ARENAS = 2  # arenas the threads share (mallopt's M_ARENA_MAX)
M_ARENA_MAX = -8  # the mallopt parameter (malloc.h)


class _MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (malloc.h)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def limit_arenas() -> None:
    """At most MALLOC_ARENAS arenas from now on: call it before the daemon starts its threads."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS)


def release_freed_memory() -> None:
    """Asks glibc to return freed heap pages to the system. A big document's text, bytes and syntax tree are freed
    when it closes, but the allocator keeps their pages: without this the server's memory only ever grows by about
    its size (docs/benchmarks.md, "Tuned constants")."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def heap_figures() -> dict[str, int]:
    """glibc's heap in kB: `in_use` (allocated blocks), `held_free` (freed but kept by the arenas) and `mapped`
    (big blocks mmapped apart). A leak grows `in_use`; fragmentation grows `held_free`. Empty without glibc."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {"in_use": info.uordblks // 1024, "held_free": info.fordblks // 1024, "mapped": info.hblkhd // 1024}
