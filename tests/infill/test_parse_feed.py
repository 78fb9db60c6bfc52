"""infill.parse_feed: tree-sitter parses fed chunk by chunk give the trees a parse of the whole bytes gives, without
keeping the chunks in memory (py-tree-sitter keeps a reference to everything a read callback returns)."""

import tracemalloc

import pytest

from diffill.infill.languages import parser_for
from diffill.infill.parse_feed import parse_chunks

SOURCE = "".join(f"def f{i}(x):\n    return x + {i}  # é\n\n" for i in range(400)).encode()


@pytest.mark.parametrize("size", [7, 4096])
def test_chunked_parses_equal_whole_parses_fresh_and_incremental(size):
    parser = parser_for("python")
    view = memoryview(SOURCE)
    tree = parse_chunks(parser, lambda byte: view[byte : byte + size])
    assert str(tree.root_node) == str(parser.parse(SOURCE).root_node)
    at = SOURCE.index(b"x + 7")
    edited = SOURCE[:at] + b"(" + SOURCE[at:]  # an open bracket: the reparse must see the new bytes
    tree.edit(at, at, at + 1, (0, 0), (0, 0), (0, 1))
    again = parse_chunks(parser, lambda byte: edited[byte : byte + size], tree)
    assert str(again.root_node) == str(parser.parse(edited).root_node) and again.root_node.has_error


def test_chunked_parses_do_not_keep_the_chunks():
    parser = parser_for("python")
    big = SOURCE * 40  # 1.3 MB
    parse_chunks(parser, lambda byte: big[byte : byte + 65536])  # (the thread's buffer is made)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            parse_chunks(parser, lambda byte: big[byte : byte + 65536], progress_callback=lambda *_: False)
            parse_chunks(parser, lambda byte: big[byte : byte + 65536])
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 256 * 1024, f"{grown} bytes kept after six parses of {len(big)} bytes"


def test_a_progress_callback_that_says_stop_stops_the_parse():
    parser = parser_for("python")
    with pytest.raises(ValueError):
        parse_chunks(parser, lambda byte: SOURCE[byte : byte + 64], progress_callback=lambda *_: True)
    parser.reset()
