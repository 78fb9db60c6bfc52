"""Refuse completions that break the parse.

A completion must not add tree-sitter ERROR/MISSING nodes the buffer did not already have (nor, in Python, open a
block it leaves empty). Counting (rather than demanding zero) lets a line completion inside an unfinished construct through as long as it makes nothing worse.
When the whole completion fails, shorter prefixes are tried, longest first: whole lines first (cleaner to accept),
then token boundaries of the first line (`self.read(` -> `self.read`). A completion the engine cut short on purpose
(`Candidate.whole`: `im|` -> `port`, the model unsure of what follows) with no such prefix is extended along the
line it was cut from to the first token end where it parses again (`port sys`), when that line parses: an answer
must leave the buffer as sound as it was, even at some cost in useful answers; shorter prefixes first win some
back (docs/benchmarks.md, "Tuned constants"). The extension is judged by the filters that judge names (postprocess passes them): what
they would cut (`port torch` in a file that never uses torch) is not put back, and the word being typed is
completed instead (`port`). Each try is a parse of the edited document (incremental from its tree), so tries are
capped in number and in time (a large file parses in tens of milliseconds: past the budget, no suggestion); a
document too large to parse in time (no tree) is not checked. A check whose re-parse runs past its time
(`CHECK_BUDGET_S`) fails: an edit tree-sitter re-reads that far past unsettles the file (a bracket left open makes
it re-read all that follows; a line of megabytes is one node, re-read whole at every try).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import lru_cache

from tree_sitter import Node

from diffill.infill.document import BUDGETED_PARSE_BYTES, count_errors, count_tree_errors, window_ranges
from diffill.infill.filters.base import Candidate
from diffill.infill.languages import INDENT_BLOCK_LANGUAGES, parser_for
from diffill.infill.parse_feed import parse_chunks
from diffill.infill.text import EOL_RE, utf8

MAX_TRIES = 32
TRY_BUDGET_S = 0.04  # for the shorter tries, after the first check
CHECK_BUDGET_S = 0.25  # for the first check's re-parse: past it the answer fails, and no shorter one is tried
READ_CHUNK = 16_384
_TOKEN_END_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"\w*")


@lru_cache(maxsize=8)
def _errors(language: str, text: str) -> int:
    return count_errors(language, text)


def syntax_guard(c: Candidate, judges: tuple[Callable[[Candidate], Candidate], ...] = ()) -> Candidate:
    """The candidate if it adds no parse errors, else its longest prefix that adds none, else (an answer cut short)
    its shortest extension that adds none and that each of `judges` (the filters that judge names) leaves as it
    is, else the end of the word being typed, else no suggestion."""
    if c.language is None or not c.text:
        return c
    if c.tree is None and len(c.doc_text) >= BUDGETED_PARSE_BYTES:  # its parse ran out of time: each try would too
        return c
    allowed = count_tree_errors(c.tree) if c.tree is not None else _errors(c.language, c.doc_text)
    try:
        if _acceptable(c, allowed, time.perf_counter() + CHECK_BUDGET_S):
            return c
        body, trail = c.split_trail()
        deadline = time.perf_counter() + TRY_BUDGET_S
        for prefix in _prefixes(body)[:MAX_TRIES]:
            if time.perf_counter() > deadline:
                break
            shorter = c.with_text(prefix + trail, replace_end=c.offset)
            if _acceptable(shorter, allowed, deadline):
                return shorter
        written = time.perf_counter()
        whole = c.whole_line() if c.whole.startswith(c.text) else ""
        deadline += time.perf_counter() - written  # (writing the line's rest is the model's time, not the parses')
        if whole.startswith(c.text) and _acceptable(c.with_text(whole), allowed, deadline):
            longer = _shortest_extension(c, whole, allowed, deadline)
            if all(judge(longer).text == longer.text for judge in judges):
                return longer
    except _OutOfTime:
        pass
    return _word_completion(c)


class _OutOfTime(Exception):
    """A parse of the edited document ran past its deadline."""


def _shortest_extension(c: Candidate, whole: str, allowed: int, deadline: float | None = None) -> Candidate:
    """The shortest extension of an answer cut short, at a token end of the line it was cut from (`whole`), that
    adds no parse error (that line itself does not)."""
    for end in (m.end() for m in _TOKEN_END_RE.finditer(whole, len(c.text))):
        longer = c.with_text(whole[:end])
        if _acceptable(longer, allowed, deadline):
            return longer
    return c.with_text(whole)


def _word_completion(c: Candidate) -> Candidate:
    """The end of the word being typed (`impo|` -> `rt`, `d|` -> `ef`), when no prefix of the answer parses: a
    keyword or a name alone seldom parses (`import`), yet completing it is what the user is typing."""
    word = _WORD_RE.match(c.text).group(0)
    word_goes_on = bool(_WORD_RE.match(c.doc_text, c.offset, c.offset + 1).group(0))  # (one character tells)
    typing_a_word = c.before_cursor[-1:].isidentifier() and not word_goes_on
    return c.with_text(word, replace_end=c.offset) if word and typing_a_word else c.empty()


def parse_errors(c: Candidate, budget_s: float = CHECK_BUDGET_S) -> int | None:
    """The ERROR/MISSING nodes of the document with the candidate's edit made (incremental from its tree), or None
    when that parse runs past `budget_s`."""
    try:
        return count_tree_errors(_parse_edited(c, time.perf_counter() + budget_s))
    except _OutOfTime:
        return None


def _acceptable(c: Candidate, allowed: int, deadline: float | None = None) -> bool:
    """No more ERROR/MISSING nodes than `allowed` in a fresh parse of the edited text, and (Python) no empty block
    opened by the completion itself: tree-sitter-python parses `if a:` followed by a line at the same depth as an
    empty block without error, though Python rejects it. Raises _OutOfTime when the parse runs past `deadline`
    (time.perf_counter)."""
    tree = _parse_edited(c, deadline)
    if count_tree_errors(tree) > allowed:
        return False
    if c.language in INDENT_BLOCK_LANGUAGES:
        start = _anchor(c)[0]
        return not _empty_block_opened_in(tree.root_node, start, start + len(utf8(c.text)))
    return True


def _anchor(c: Candidate) -> tuple[int, int, int]:
    """The byte offset and tree-sitter (row, byte column) of the cursor: where every try edits. From the document's
    bytes when the candidate has them (one count of their newlines), else from its text (`_text_anchor`)."""
    if c.source is None or c.offset_byte is None:
        return _text_anchor(c.doc_text, c.offset)
    return _byte_anchor(c.source, c.offset_byte)


@lru_cache(maxsize=4)
def _byte_anchor(source: bytes, byte: int) -> tuple[int, int, int]:
    """`_anchor` from the document's bytes: one count of the newlines before the cursor, shared by the tries."""
    return byte, source.count(b"\n", 0, byte), byte - (source.rfind(b"\n", 0, byte) + 1)


@lru_cache(maxsize=4)
def _text_anchor(text: str, offset: int) -> tuple[int, int, int]:
    """`_anchor` from the text alone: a copy and an encoding of what precedes the cursor, shared by the tries."""
    before = text[:offset]
    nl = before.rfind("\n")
    return len(utf8(before)), before.count("\n"), len(utf8(before[nl + 1 :]))


def _point_after(row: int, column: int, text: str) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of the end of `text` written from (row, column)."""
    nl = text.rfind("\n")
    if nl < 0:
        return row, column + len(utf8(text))
    return row + text.count("\n"), len(utf8(text[nl + 1 :]))


@lru_cache(maxsize=4)
def _doc_bytes(text: str) -> bytes:
    return utf8(text)


def _parse_edited(c: Candidate, deadline: float | None = None):
    """The edited document's tree: an incremental re-parse of the document's tree when the candidate has it
    (tree-sitter re-reads only around the edit, through a reader over the unchanged bytes: no copy of a large
    file per try), else a fresh parse. The re-parse stops at `deadline` (time.perf_counter): _OutOfTime."""
    parser = parser_for(c.language)
    if c.tree is None:
        return parser.parse(utf8(c.edited_text()))
    doc = c.source if c.source is not None else _doc_bytes(c.doc_text)
    start, row, column = _anchor(c)
    replaced = c.doc_text[c.offset : c.replace_end]
    old_end = start + len(utf8(replaced))
    inserted = utf8(c.text)
    new_end = start + len(inserted)
    tree = c.tree.copy()
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=(row, column),
        old_end_point=_point_after(row, column, replaced),
        new_end_point=_point_after(row, column, c.text),
    )

    view = memoryview(doc)
    window = window_ranges(tree)  # a large document's window: the edited window is what is parsed

    def chunk(byte: int) -> bytes | memoryview:
        if byte < start:
            return view[byte : min(start, byte + READ_CHUNK)]
        if byte < new_end:
            return inserted[byte - start :]
        at = old_end + byte - new_end
        return view[at : at + READ_CHUNK]

    if window is not None:
        parser.included_ranges = window
    try:
        if deadline is None:
            return parse_chunks(parser, chunk, tree)
        return parse_chunks(parser, chunk, tree, lambda *_: time.perf_counter() > deadline)
    except ValueError:
        parser.reset()  # else the shared parser would resume this parse on the next document
        raise _OutOfTime() from None
    finally:
        if window is not None:
            parser.included_ranges = []  # (the parser is shared)


def _empty_block_opened_in(root: Node, start: int, end: int) -> bool:
    """Whether a statement starting in bytes [start, end) has an empty (comment-only) block."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "block" and node.parent is not None and start <= node.parent.start_byte < end:
            if not any(child.type != "comment" for child in node.named_children):
                return True
        stack.extend(_named_children_around(node, start, end + 1))
    return False


def _named_children_around(node: Node, start: int, end: int) -> list[Node]:
    """The named children of `node` that overlap bytes [start, end] (one ending at `start` included), found from
    the first of them on: a node of a million children (a list a megabyte long) costs the few near the answer."""
    cursor = node.walk()
    if cursor.goto_first_child_for_byte(max(0, start - 1)) is None:
        return []
    out = []
    while cursor.node.start_byte < end:
        child = cursor.node
        if child.is_named and child.end_byte >= start:
            out.append(child)
        if not cursor.goto_next_sibling():
            break
    return out


def _prefixes(body: str) -> list[str]:
    """Shorter non-blank prefixes of `body`, longest first: cuts at line ends, then at token ends of the first line."""
    out: list[str] = []
    ends = [m.start() for m in EOL_RE.finditer(body)]
    for end in reversed(ends):
        prefix = body[:end].rstrip()
        if prefix.strip() and prefix not in out and prefix != body:
            out.append(prefix)
    first_end = ends[0] if ends else len(body)
    lead = len(body) - len(body.lstrip("\r\n")) if not body[:first_end].strip() else 0
    if lead:  # body starts with a line break (span lead): the first real line is the next one
        m = EOL_RE.search(body, lead)
        first_end = m.start() if m else len(body)
    token_ends = [m.end() for m in _TOKEN_END_RE.finditer(body, lead, first_end)]
    for end in reversed(token_ends):
        prefix = body[:end]
        if prefix.strip() and prefix not in out and prefix != body:
            out.append(prefix)
    return out
