"""A text buffer kept in sync with its tree-sitter tree through incremental LSP edits.

LSP positions count characters in the client's position encoding (UTF-8 bytes, UTF-16 code units or code points)
while tree-sitter wants UTF-8 byte offsets and (row, byte-column) points with rows split on "\\n" only; this module
is the one place that converts between those and Python string offsets.
"""

from __future__ import annotations

import bisect
import logging
import re
import time
from array import array

import numpy as np
import tree_sitter

from diffill.infill.languages import parser_for
from diffill.infill.parse_feed import parse_chunks
from diffill.infill.text import EOL_RE, unit_len, utf8

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LONE_CR = re.compile(rb"\r(?!\n)")
log = logging.getLogger(__name__)

# tree-sitter can take seconds on pathological input (a string literal of megabytes, to parse and again to reparse
# after one edit, all on the server's event loop; docs/reliability.md). Large documents get a time budget; past it
# they stay plain text.
BUDGETED_PARSE_BYTES = 256 * 1024
PARSE_BUDGET_S = 0.5
READ_CHUNK = 65_536  # bytes handed to tree-sitter per read of a budgeted parse
# A document this large has a tree of a window around where the user works, not of the whole text: tree-sitter
# re-parses a whole document at each edit in time that grows with it (tens of milliseconds for a few megabytes),
# a window in the time of a small file (docs/benchmarks.md, "Tuned constants").
WINDOWED_BYTES = 512 * 1024
WINDOW_REACH = 16 * 1024  # bytes of the window on either side of where it is centred
WINDOW_SNAP = 8 * 1024  # further bytes searched for a line at column 0 to start or end the window at
WINDOW_MARGIN = 4 * 1024  # an edit or a completion this near a window's edge centres a new window


def window_ranges(tree: tree_sitter.Tree) -> list[tree_sitter.Range] | None:
    """The byte ranges a tree covers when it is a large document's window (SyntaxDocument.window), else None."""
    ranges = tree.included_ranges
    return None if len(ranges) == 1 and ranges[0].start_byte == 0 and ranges[0].end_byte >= 0xFFFFFFFF else ranges


def count_tree_errors(tree: tree_sitter.Tree | None) -> int:
    """Number of ERROR and MISSING nodes in a tree (0 for None); only subtrees flagged `has_error` are walked."""
    if tree is None:
        return 0
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        if node.has_error:
            stack.extend(node.children)
    return count


def count_errors(language: str | None, text: str) -> int:
    """ERROR + MISSING nodes in a fresh parse of `text` (0 for plain text)."""
    if language is None:
        return 0
    return count_tree_errors(parser_for(language).parse(utf8(text)))


def _prefix_for_units(s: str, units: int, encoding: str) -> int:
    """How many code points of `s` fit in `units` units, rounding down inside a character.

    Counts per code point, so a lone surrogate (valid in JSON-decoded LSP text) is one UTF-16 unit and three UTF-8
    bytes, as `unit_len` counts it; decoding a truncated encoding with errors="ignore" dropped it instead and
    shifted every later position on the line.
    """
    if units <= 0:
        return 0
    if encoding == "utf-32" or s.isascii():
        return min(units, len(s))
    if encoding == "utf-16":
        k = units  # each astral character before the cut takes one more unit than its one code point
        for m in _ASTRAL.finditer(s):
            if m.start() >= k:
                break
            k -= 1
        return min(k, len(s))
    if encoding == "utf-8":
        data = utf8(s)
        cut = min(units, len(data))
        while cut < len(data) and cut > 0 and (data[cut] & 0xC0) == 0x80:  # back to a character boundary
            cut -= 1
        return len(data[:cut].decode("utf-8", "surrogatepass"))
    raise ValueError(f"unknown position encoding {encoding!r}")


def _point(data: bytes, byte: int, row: int) -> tuple[int, int]:
    """tree-sitter point of a byte offset on `row` (rows end at "\\n" only): its byte column, found backwards from
    `byte` within its line."""
    return row, byte - (data.rfind(b"\n", 0, byte) + 1)


def _top_level_line(data: bytes, lo: int, hi: int, last: bool) -> int | None:
    """The byte offset of the last (or first) line in data[lo:hi] that starts at column 0 with code (not a blank
    line, a comment or a closing bracket), or None."""
    starts = [m.end() for m in re.finditer(rb"\n(?=[^\s#/)\]}*-])", data[lo:hi])]
    if not starts:
        return None
    return lo + (starts[-1] if last else starts[0])


def _offsets(values) -> array:
    """Offsets as a compact int64 array: indexed like a list (Python ints), shifted in place through numpy."""
    return array("q", np.asarray(values, dtype=np.int64).tobytes())


def _line_index_of(data: bytes) -> tuple[array, array]:
    """The LSP line starts (after each "\\n", "\\r\\n" and lone "\\r") of the UTF-8 `data`, as string offsets and as
    byte offsets: read off the bytes at once (a string offset is the byte offset less the continuation bytes
    before it), where a line-by-line count took a tenth of a second for a few megabytes."""
    a = np.frombuffer(data, dtype=np.uint8)
    cr = np.flatnonzero(a == 13)
    lone_cr = cr[(cr + 1 >= len(a)) | (a[np.minimum(cr + 1, max(len(a) - 1, 0))] != 10)]
    starts = np.concatenate(([0], np.flatnonzero(a == 10) + 1, lone_cr + 1))
    starts.sort()
    if data.isascii():
        return _offsets(starts), _offsets(starts)
    continuation = np.flatnonzero((a & 0xC0) == 0x80)  # the second and later bytes of each character
    return _offsets(starts - np.searchsorted(continuation, starts)), _offsets(starts)


def _shifted_starts(
    starts: array, byte_starts: array, text: str, start: int, end: int, inserted: int, byte_delta: int
) -> tuple[array, array]:
    """The line starts of `text` after text[start:end] of the old text became `inserted` characters (the document
    `byte_delta` UTF-8 bytes longer), as string and byte offsets, from the old ones: the lines around the edit are
    found again, the ones after it only move (an edit costs the lines it touches, not the document). A start more
    than two characters past the edit keeps its terminator intact."""
    delta = inserted - (end - start)
    lo = max(0, bisect.bisect_right(starts, start) - 2)  # a line start before the edit's own line: still valid
    hi = bisect.bisect_right(starts, end + 1)
    tail = starts[hi:]
    stop = tail[0] + delta if tail else len(text)
    middle = [m.end() for m in EOL_RE.finditer(text, starts[lo], stop) if not tail or m.end() < stop]
    middle_bytes, byte, at = [], byte_starts[lo], starts[lo]
    for m in middle:
        segment = text[at:m]
        byte += len(segment) if segment.isascii() else len(utf8(segment))
        middle_bytes.append(byte)
        at = m
    byte_tail = byte_starts[hi:]
    np.frombuffer(tail, dtype=np.int64)[:] += delta  # (the lines after the edit only move: shifted in place, in C)
    np.frombuffer(byte_tail, dtype=np.int64)[:] += byte_delta
    return starts[: lo + 1] + array("q", middle) + tail, byte_starts[: lo + 1] + array("q", middle_bytes) + byte_tail


class SyntaxDocument:
    """Text plus its syntax tree (None for plain text), updated incrementally by LSP content changes."""

    def __init__(self, text: str, language: str | None) -> None:
        self.language = language
        self.text = text
        self._data = utf8(text)
        # LSP line starts as string offsets (line_starts) and as UTF-8 byte offsets, made when first asked for and
        # then kept by each edit: byte and string offsets convert within a line.
        self._starts: array | None = None
        self._byte_starts: array | None = None
        self.parse_abandoned = False  # the parse ran past its budget once: no tree from then on
        # The bytes the tree covers, (start, end), in a document of WINDOWED_BYTES or more; None: all of them.
        self.window: tuple[int, int] | None = self._window_around(0)
        self.tree: tree_sitter.Tree | None = self._parse(None)

    # -- parsing -------------------------------------------------------------------------------------------------
    def _parse(self, old: tree_sitter.Tree | None) -> tree_sitter.Tree | None:
        if self.language is None or self.parse_abandoned:
            return None
        parser = parser_for(self.language)
        data = self._data
        if len(data) < BUDGETED_PARSE_BYTES:
            return parser.parse(data, old) if old is not None else parser.parse(data)
        deadline = time.monotonic() + PARSE_BUDGET_S
        view = memoryview(data)
        if self.window is not None:  # (an edited tree's range was moved by its edit, rows included)
            parser.included_ranges = old.included_ranges if old is not None else [self._range(*self.window)]
        try:  # (a progress callback needs the chunked form of parse)
            return parse_chunks(
                parser, lambda byte: view[byte : byte + READ_CHUNK], old, lambda *_: time.monotonic() > deadline
            )
        except ValueError:
            parser.reset()  # else the shared parser would resume this parse on the next document
            self.parse_abandoned = True
            log.warning(
                "%s parse of %d bytes ran past %.1f s: kept as plain text", self.language, len(data), PARSE_BUDGET_S
            )
            return None
        finally:
            parser.included_ranges = []  # (the parser is shared: the next document is parsed whole)

    # -- the window a large document's tree covers ---------------------------------------------------------------
    def _window_around(self, byte: int) -> tuple[int, int] | None:
        """The bytes a tree centred on `byte` covers (None: all of them, for a document under WINDOWED_BYTES): about
        WINDOW_REACH either side, from and to a line at column 0 where one is near (a top-level statement, so that
        the window holds whole constructs), else a line start."""
        data = self._data
        if len(data) < WINDOWED_BYTES:
            return None
        start = max(0, byte - WINDOW_REACH)
        if start > 0:
            top = _top_level_line(data, max(0, start - WINDOW_SNAP), start, last=True)
            start = top if top is not None else data.rfind(b"\n", 0, start) + 1
        end = min(len(data), byte + WINDOW_REACH)
        if end < len(data):
            top = _top_level_line(data, end, min(len(data), end + WINDOW_SNAP), last=False)
            nl = data.find(b"\n", end)
            end = top if top is not None else (len(data) if nl < 0 else nl + 1)
        return start, end

    def _range(self, start: int, end: int) -> tree_sitter.Range:
        """tree-sitter's range of bytes [start, end) (rows at "\\n", as the tree counts them)."""
        data = self._data
        start_row, end_row = data.count(b"\n", 0, start), data.count(b"\n", 0, end)
        return tree_sitter.Range(_point(data, start, start_row), _point(data, end, end_row), start, end)

    def focus(self, offset: int) -> None:
        """Makes the tree cover the string `offset` (a completion's place) with a margin: a large document's window
        moves there when it does not (a fresh parse of the new window). Call it where the edits are made (the
        server's event loop), not beside them."""
        if self.window is None or self.tree is None:
            return
        byte = self.byte_offset(offset)
        if not self._inside(byte):
            self.window = self._window_around(byte)
            self.tree = self._parse(None)

    def _inside(self, byte: int) -> bool:
        """Whether `byte` lies inside the window, WINDOW_MARGIN from each edge that is not the document's own."""
        assert self.window is not None
        start, end = self.window
        low = start if start == 0 else start + WINDOW_MARGIN
        high = end if end == len(self._data) else end - WINDOW_MARGIN
        return low <= byte <= high

    @property
    def source(self) -> bytes:
        """The UTF-8 bytes the tree was parsed from."""
        return self._data

    def replace_all(self, text: str) -> None:
        """Full-document sync (LSP change without a range): reparse from scratch."""
        self.text = text
        self._data = utf8(text)
        self._starts = self._byte_starts = None
        self.window = self._window_around(0)
        self.tree = self._parse(None)

    def apply_change(
        self,
        start_line: int,
        start_char: int,
        end_line: int,
        end_char: int,
        new_text: str,
        encoding: str = "utf-16",
    ) -> None:
        """Apply one ranged LSP content change: edit the text, `tree.edit` the old tree, reparse incrementally."""
        start = self.offset_at(start_line, start_char, encoding)
        end = self.offset_at(end_line, end_char, encoding)
        self.replace_range(start, end, new_text)

    def replace_range(self, start: int, end: int, new_text: str) -> None:
        """Replace text[start:end] (string offsets) with `new_text`, keeping the tree in sync incrementally."""
        start, end = sorted((max(0, min(start, len(self.text))), max(0, min(end, len(self.text)))))
        old_data = self._data
        starts, byte_starts = self._line_index()  # (the old text's: the edit shifts them)
        start_byte = self.byte_offset(start)
        removed = self.text[start:end]
        old_end_byte = start_byte + (len(removed) if removed.isascii() else len(utf8(removed)))
        inserted = utf8(new_text)
        new_end_byte = start_byte + len(inserted)
        # (joined, not added: `a + b + c` copies a large document twice, the join once; the bytes through views)
        self.text = "".join((self.text[:start], new_text, self.text[end:]))
        view = memoryview(old_data)
        self._data = b"".join((view[:start_byte], inserted, view[old_end_byte:]))
        byte_delta = len(inserted) - (old_end_byte - start_byte)
        self._starts, self._byte_starts = _shifted_starts(
            starts, byte_starts, self.text, start, end, len(new_text), byte_delta
        )
        if self.tree is None:
            return
        if self.window is None and len(self._data) >= WINDOWED_BYTES:  # grown large: a window from now on
            self.window = self._window_around(start_byte)
            self.tree = self._parse(None)
            return
        if self.window is not None:  # a large document: its window moves with the edits
            start, end = self.window
            if not (start <= start_byte and old_end_byte <= end):  # outside it: a new window where the user is
                self.window = self._window_around(start_byte)
                self.tree = self._parse(None)
                return
            self.window = (start, end + byte_delta)
            if not self._inside(start_byte):
                self.window = self._window_around(start_byte)
                self.tree = self._parse(None)
                return
        # tree-sitter's rows end at "\n" only: they are the LSP lines but where a lone "\r" ends one
        lone_cr = _LONE_CR.search(old_data) is not None if b"\r" in old_data else False
        row = old_data.count(b"\n", 0, start_byte) if lone_cr else bisect.bisect_right(byte_starts, start_byte) - 1
        self.tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=new_end_byte,
            start_point=_point(old_data, start_byte, row),
            old_end_point=_point(old_data, old_end_byte, row + old_data.count(b"\n", start_byte, old_end_byte)),
            new_end_point=_point(self._data, new_end_byte, row + inserted.count(b"\n")),
        )
        self.tree = self._parse(self.tree)

    # -- positions -----------------------------------------------------------------------------------------------
    @property
    def line_starts(self) -> array:
        """String offsets of LSP line starts (lines split on \\n, \\r\\n and \\r), cached until the next edit."""
        return self._line_index()[0]

    def _line_index(self) -> tuple[array, array]:
        """The line starts as string and as byte offsets, counted once, then kept up to date by each edit."""
        if self._starts is None or self._byte_starts is None:
            self._starts, self._byte_starts = _line_index_of(self._data)
        return self._starts, self._byte_starts

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_text(self, line: int) -> str:
        """The text of LSP line `line` without its terminator."""
        starts = self.line_starts
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def offset_at(self, line: int, char: int, encoding: str = "utf-16") -> int:
        """String offset of an LSP position; a line past the end clamps to the document end, a character past
        the end of its line clamps to the line end, and a position inside a character rounds down."""
        if line < 0:
            return 0
        starts = self.line_starts
        if line >= len(starts):
            return len(self.text)
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        # `char` units hold at most `char` characters: only those are read (not the whole of a long line)
        head = self.text[start : min(end, start + max(0, char))].rstrip("\r\n")
        return start + _prefix_for_units(head, char, encoding)

    def position_at(self, offset: int, encoding: str = "utf-16") -> tuple[int, int]:
        """LSP (line, character) of a string offset (clamped to the document); inside a CRLF maps to the line end."""
        offset = max(0, min(offset, len(self.text)))
        starts = self.line_starts
        line = bisect.bisect_right(starts, offset) - 1
        start = starts[line]
        segment = self.text[start:offset]
        if segment.endswith("\r"):  # offset between "\r" and "\n"
            segment = segment[:-1]
        return line, unit_len(segment, encoding)

    def byte_offset(self, offset: int) -> int:
        """UTF-8 byte offset of a string offset (from its line's: the cost of a line, not of the document)."""
        offset = max(0, min(offset, len(self.text)))
        starts, byte_starts = self._line_index()
        row = bisect.bisect_right(starts, offset) - 1
        segment = self.text[starts[row] : offset]
        return byte_starts[row] + (len(segment) if segment.isascii() else len(utf8(segment)))

    def offset_of_byte(self, byte: int) -> int:
        """String offset of a UTF-8 byte offset (as found in tree-sitter nodes; inside a character: the one before)."""
        byte = max(0, min(byte, len(self._data)))
        starts, byte_starts = self._line_index()
        row = bisect.bisect_right(byte_starts, byte) - 1
        chunk = self._data[byte_starts[row] : byte]
        try:
            return starts[row] + len(chunk.decode("utf-8", "surrogatepass"))
        except UnicodeDecodeError:
            return starts[row] + len(chunk.decode("utf-8", "ignore"))

    # -- diagnostics ---------------------------------------------------------------------------------------------
    def error_count(self, tree: tree_sitter.Tree | None = None) -> int:
        """ERROR + MISSING nodes in `tree` (default: this document's tree)."""
        return count_tree_errors(tree if tree is not None else self.tree)

    def node_at(self, offset: int) -> tree_sitter.Node | None:
        """Smallest node spanning the string offset (None for plain text)."""
        if self.tree is None:
            return None
        byte = self.byte_offset(offset)
        return self.tree.root_node.descendant_for_byte_range(byte, byte)
