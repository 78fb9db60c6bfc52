"""tree-sitter parses fed in chunks, without keeping every chunk in memory.

py-tree-sitter (0.25 and 0.26 at least) keeps one reference to each object a read callback returns: its read
wrapper takes a buffer view of the callback's return value and releases the view, but never the value itself. So
every chunk handed to tree-sitter stayed in memory for good: a 3 MB document leaked about 9 MB per full parse and
more per keystroke's reparse, and each completion's syntax check leaked what its tries read.

Here the chunks are copied into one buffer per thread, and that buffer is what tree-sitter is handed each time:
the leak is then one reference to an object that lives as long as the thread. Refilling it is safe for the
reason the binding's own release is: tree-sitter reads a chunk only until it asks for the next one, and the
binding releases its view of the buffer before it calls back for that one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import tree_sitter

Chunk = Callable[[int], bytes | memoryview]  # the bytes from a byte offset on (empty at the end)

_local = threading.local()


def _buffer() -> bytearray:
    buffer = getattr(_local, "buffer", None)
    if buffer is None:
        buffer = _local.buffer = bytearray()
    return buffer


def parse_chunks(
    parser: tree_sitter.Parser,
    chunk: Chunk,
    old_tree: tree_sitter.Tree | None = None,
    progress_callback: Callable[[int, bool], bool] | None = None,
) -> tree_sitter.Tree:
    """`parser.parse` over the text `chunk` gives from each byte offset tree-sitter asks for (an incremental
    reparse when `old_tree` is given; `progress_callback` returning True stops it: ValueError)."""
    buffer = _buffer()

    def read(byte: int, _point: tuple[int, int]) -> bytearray:
        buffer[:] = chunk(byte)  # (tree-sitter's view of the previous chunk is released by now)
        return buffer

    options: dict = {} if old_tree is None else {"old_tree": old_tree}  # (the binding takes no None for either)
    if progress_callback is not None:
        options["progress_callback"] = progress_callback
    return parser.parse(read, **options)
