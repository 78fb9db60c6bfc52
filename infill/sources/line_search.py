"""Lines copied from the code around, found by text alone (no model): code repeats itself.

When the text typed on the current line (`self.assertEqual(` or `logger = logging.get`) also occurs elsewhere in
the file (or beside it, or in another open document), the rest of that other line is a strong guess for the rest
of this one; on a new line, so is the line that followed the line above the cursor's elsewhere. A small model
spells long identifiers and repeated argument lists badly; a copy spells them right. infill.sources.copies has
the model judge whether one fits here.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..context.neighbours import WINDOW_AFTER, WINDOW_BEFORE
from ..text import LINE_REACH, in_hash_comment, is_line_start, line_window
from . import parallel

MIN_KEY = 5  # characters of the line above that must match for next-line copies
# characters typed on the line that must match for rest-of-line copies: shorter contexts are left to the n-gram
# model (model.ngram), which weighs them token by token (docs/benchmarks.md, "Tuned constants")
MIN_TYPED_KEY = 8
MAX_CANDIDATES = 4
MAX_TYPED = 256  # characters before the cursor that may match (a minified line must not cost its length per match)
MAX_MATCHES = 3000  # matches looked at per key over all texts (this file's first): bounds a common key's time
# a rest longer than this is no line's end that a person types (it runs on through a minified line): not a copy,
# and scoring it would cost the model a pass over all of it
MAX_REST_CHARS = 400
_TRIPLE_QUOTE = re.compile(r"\"\"\"|'''")
# Without a syntax tree to ask, whether the text around the cursor is a docstring is told by counting the triple
# quotes before it; past this many characters that count is skipped (taken as code): it would cost the document.
MAX_COUNTED_QUOTES_CHARS = 1_000_000


@dataclass(frozen=True)
class LineCopy:
    rest: str  # text to put after the cursor: the rest of the other line, trailing space removed
    key_length: int  # characters before the cursor that match the text before the copied rest
    # the whole typed line (after its indentation) matches a whole other line's start, or does but for the names
    # the copy was renamed by (infill.sources.parallel)
    whole_line: bool
    count: int  # how many lines of the window continue this way


def _common_suffix(a: str, a_end: int, b: str, b_end: int, limit: int, known: int = 0) -> int:
    """How many characters before a[a_end] and b[b_end] agree (at most `limit`; `known` of them are known to).
    Found by halving, each step one comparison of slices: a repetitive text's thousands of matches must not each
    cost a Python loop over the typed text."""
    lo, hi = min(known, limit), min(limit, a_end, b_end)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[a_end - mid : a_end] == b[b_end - mid : b_end]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def typed_on_line(text: str, offset: int) -> str:
    """The text before the cursor on its line, indentation left out (its last MAX_TYPED characters on a very long
    line): what copies must match."""
    return text[max(text.rfind("\n", 0, offset) + 1, offset - MAX_TYPED) : offset].lstrip(" \t")


def _key_lengths(typed: int, min_key: int) -> list[int]:
    """Key lengths to search, longest first: the whole typed text, then halving down to `min_key`. A long key
    finds the strongest evidence with few matches; shorter ones run only while candidates are still missing."""
    lengths = [typed]
    while lengths[-1] // 2 > min_key:
        lengths.append(lengths[-1] // 2)
    return lengths + [min_key] if lengths[-1] != min_key else lengths


def line_copies(
    text: str,
    offset: int,
    others: Sequence[str] = (),
    min_key: int = MIN_TYPED_KEY,
    limit: int = MAX_CANDIDATES,
    rename: bool = True,
    in_docstring: Callable[[int], bool] | None = None,
) -> list[LineCopy]:
    """Candidates for the rest of the line at `offset`, best evidence first: the longest match of the typed text
    before the cursor (then a match of the whole line, then the most lines that continue the same way, then the
    nearest line of this file). `others` are more texts to copy from (files beside this one, open documents),
    searched after this file's window. Lines that would only repeat what already follows the cursor are left
    out, and so are the words of a comment or a docstring copied into code. With `rename`, each copy takes the
    names this place uses where its own place uses others (infill.sources.parallel). `in_docstring`, when the
    caller has a syntax tree to ask, says whether an offset of `text` is inside a triple-quoted string (else the
    triple quotes before it are counted). A long line is read around the cursor (`line_window`)."""
    typed = typed_on_line(text, offset)
    if len(typed) < min_key:
        return []
    line_start, line_end = line_window(text, offset)
    current_rest = text[offset:line_end].rstrip()
    window_start = max(0, line_start - WINDOW_BEFORE)
    window = text[window_start:line_start] + text[line_end : line_end + WINDOW_AFTER]
    cursor = line_start - window_start  # where the current line was cut out of the window
    sources = [(window, cursor)] + [(other, None) for other in others]
    # prose is told by `#` on the line and by an odd number of triple quotes before: the window's count starts
    # with the text before it, and the cursor's line, cut out of the window, counts where it was cut
    window_before = _quotes_before(text, window_start, in_docstring)
    places = _quote_places(window)
    at_cursor = bisect.bisect_left(places, cursor)
    places[at_cursor:at_cursor] = [cursor] * _triple_quotes(text, line_start, line_end)
    docstrings = {id(window): (window_before, places)}
    before_cursor = window_before + at_cursor + _triple_quotes(text, line_start, offset)
    prose_here = in_hash_comment(typed) or before_cursor % 2 == 1
    found: dict[str, tuple[int, bool, float]] = {}  # rest -> (key length, whole line, -distance): the best match
    where: dict[str, tuple[str, int]] = {}  # rest -> (source, where the rest starts) of its best match
    counts: Counter[str] = Counter()
    longer = len(typed) + 1  # the previous key's length: matches at least this long were taken already
    for key_length in _key_lengths(len(typed), min_key):
        key = typed[-key_length:]
        budget = MAX_MATCHES
        for source, here in sources:
            at = source.find(key)
            while at >= 0 and budget > 0:
                budget -= 1
                end = at + key_length
                rest_end = source.find("\n", end, end + MAX_REST_CHARS + 1)
                if rest_end < 0:  # the end of the source, or a rest too long to be a copy (then "")
                    rest_end = len(source) if len(source) - end <= MAX_REST_CHARS else end
                rest = source[end:rest_end].rstrip()
                matched = _common_suffix(source, end, typed, len(typed), len(typed), key_length)
                if rest and rest != current_rest and matched < longer:
                    lo = max(0, end - matched - LINE_REACH)  # (the line's start, or its window's on a long line)
                    before = source[max(lo, source.rfind("\n", lo, end - matched) + 1) : end - matched]
                    head = before + typed[len(typed) - matched :]
                    if prose_here or not _in_prose(source, end, head, docstrings):  # no prose copied into code
                        whole = matched == len(typed) and not before.strip(" \t")
                        evidence = (matched, whole, -abs(at - here) if here is not None else -math.inf)
                        counts[rest] += 1
                        if rest not in found or evidence > found[rest]:
                            found[rest] = evidence
                            where[rest] = (source, end)
                at = source.find(key, at + 1)
        if len(found) >= limit:
            break  # what shorter keys find matches less of the line: it would rank below these
        longer = key_length
    ranked = sorted(found, key=lambda r: (found[r][0], found[r][1], counts[r], found[r][2]), reverse=True)
    ours = (typed, _lines_before(text, line_start, 1) if is_line_start(text, line_start) else [])
    out: dict[str, LineCopy] = {}  # renamed rest -> its copy: places that agree once renamed add up
    for r in ranked:
        rest, analogous = _renamed_here(r, *where[r], ours) if rename else (r, False)
        if rest == current_rest:
            continue
        if rest in out:
            out[rest] = dataclasses.replace(out[rest], count=out[rest].count + counts[r])
        else:
            out[rest] = LineCopy(rest, found[r][0], found[r][1] or analogous, counts[r])
            if len(out) == limit:
                break
    return list(out.values())


def _in_prose(source: str, at: int, head: str, docstrings: dict[int, tuple[int, list[int]]]) -> bool:
    """Whether `at` in `source` (`head` being its line's text before it) is in a `#` comment or a triple-quoted
    string: an odd number of triple quotes before it. `docstrings` keeps each source's (count before it, places of
    its triple quotes), found once per source."""
    if in_hash_comment(head):
        return True
    if id(source) not in docstrings:
        docstrings[id(source)] = (0, _quote_places(source))
    before, places = docstrings[id(source)]
    return (before + bisect.bisect_left(places, at)) % 2 == 1


def _quote_places(source: str) -> list[int]:
    return [m.start() for m in _TRIPLE_QUOTE.finditer(source)]


def _triple_quotes(text: str, start: int, end: int) -> int:
    return text.count('"""', start, end) + text.count("'''", start, end)


def _quotes_before(text: str, at: int, in_docstring: Callable[[int], bool] | None) -> int:
    """The triple quotes before `at`, or as many as tell whether `at` is in a docstring (1 or 0: only the parity
    counts), from `in_docstring` when given; taken as code past MAX_COUNTED_QUOTES_CHARS without it."""
    if at == 0:
        return 0
    if in_docstring is not None:
        return int(in_docstring(at))
    return _triple_quotes(text, 0, at) if at <= MAX_COUNTED_QUOTES_CHARS else 0


def _renamed_here(rest: str, source: str, end: int, ours: tuple[str, list[tuple[int, str]]]) -> tuple[str, bool]:
    """`rest`, copied from before `end` in `source`, with the names that place uses where this one uses others
    (infill.sources.parallel): compared are the text before it on its line and the line above. Also whether the
    typed line itself matched its line but for names that the rest then uses: as strong as a whole line's match
    (`value = ConvertingDi` -> `ct(value)` from `config = ConvertingDict(config)`)."""
    line_start = source.rfind("\n", 0, end) + 1
    typed, above = ours
    line_renaming = parallel.renaming([(source[line_start:end].lstrip(" \t"), typed)], tail=True)
    analogous = bool(line_renaming) and parallel.renamed(rest, line_renaming) != rest
    theirs_above = _lines_before(source, line_start, 1)
    above_renaming = (
        parallel.renaming([(theirs_above[0][1].strip(), above[0][1].strip())]) if above and theirs_above else {}
    )
    return parallel.renamed(rest, above_renaming | line_renaming), analogous


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _lines_before(text: str, pos: int, n: int) -> list[tuple[int, str]]:
    """The `n` nearest non-empty lines that end before `pos` (a line start), nearest first: (start, line). A line
    longer than LINE_REACH ends them: it matches nothing, and what lies above it is out of reach."""
    out: list[tuple[int, str]] = []
    end = pos - 1
    while end >= 0 and len(out) < n:
        start = text.rfind("\n", max(0, end - LINE_REACH), end) + 1
        if start == 0 and end > LINE_REACH:
            break
        if text[start:end].strip():
            out.append((start, text[start:end]))
        end = start - 1
    return out


def _enough_above(above: list[tuple[int, str]]) -> bool:
    """Whether the lines above say enough to match: the nearest has MIN_KEY characters, or the one above it does."""
    if not above:
        return False
    return len(above[0][1].strip()) >= MIN_KEY or (len(above) > 1 and len(above[1][1].strip()) >= MIN_KEY)


def can_copy_next_line(text: str, offset: int) -> bool:
    """Whether the lines above the cursor's say enough for next-line copies (see next_line_copies)."""
    return _enough_above(_lines_before(text, text.rfind("\n", 0, offset) + 1, 2))


def _next_line(source: str, line_end: int) -> tuple[int, str] | None:
    """The first non-empty line within three after the line that ends at `line_end`: (start, line), or None."""
    for _ in range(3):
        if line_end < 0 or line_end >= len(source):
            return None
        start = line_end + 1
        line_end = source.find("\n", start)
        line = source[start : line_end if line_end >= 0 else len(source)]
        if line.strip():
            return start, line
    return None


def next_line_copies(
    text: str, offset: int, others: Sequence[str] = (), limit: int = MAX_CANDIDATES, context: int = 3
) -> list[LineCopy]:
    """Candidates for the line at `offset` from the line above it: in this file and `others`, the line that
    follows a line equal to the one above the cursor's, at the same depth relative to it, and starts with what
    is typed on the cursor's line (`rest` is what follows that). Best evidence first: the most lines above
    agreeing (up to `context`), then the most places continuing the same way, then the nearest. `key_length`
    counts the agreeing lines; `whole_line` is always true."""
    line_start = text.rfind("\n", 0, offset) + 1
    head = text[line_start:offset]
    typed = head.lstrip(" \t")
    above = _lines_before(text, line_start, context)
    if not _enough_above(above):
        return []
    key = above[0][1].strip()
    short = len(key) < MIN_KEY  # (`try:`, `}`): the line above that one must agree too
    depth = (len(head) - len(typed)) - _indent(above[0][1])  # the cursor line's indentation relative to the above
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    current_rest = text[offset:line_end].rstrip()
    sources = [(text, line_start, max(0, line_start - WINDOW_BEFORE), line_end + WINDOW_AFTER)]
    sources += [(other, None, 0, len(other)) for other in others]
    found: dict[str, tuple[int, float]] = {}
    counts: Counter[str] = Counter()
    budget = MAX_MATCHES
    for source, cursor, lo, hi in sources:
        at = source.find(key, lo, hi)
        while at >= 0 and budget > 0:
            budget -= 1
            start = source.rfind("\n", 0, at) + 1
            end = source.find("\n", at)
            at = source.find(key, at + 1, hi)
            if cursor is not None and start in (above[0][0], line_start):
                continue  # the line above the cursor (or the cursor's own line) is no evidence for itself
            if source[start : end if end >= 0 else len(source)].strip() != key:
                continue
            nxt = _next_line(source, end)
            if nxt is None or (cursor is not None and nxt[0] == line_start):
                continue
            if _indent(nxt[1]) - _indent(source[start:end]) != depth:
                continue
            line = nxt[1].strip()
            if not line.startswith(typed) or len(line) == len(typed):
                continue
            rest = line[len(typed) :]
            if rest == current_rest or len(rest) > MAX_REST_CHARS:
                continue
            before = _lines_before(source, start, context - 1)
            if short and (not before or before[0][1].strip() != above[1][1].strip()):
                continue
            agree = 1 + sum(a[1].strip() == b[1].strip() for a, b in zip(above[1:], before, strict=False))
            evidence = (agree, -abs(start - cursor) if cursor is not None else -math.inf)
            counts[rest] += 1
            if rest not in found or evidence > found[rest]:
                found[rest] = evidence
    ranked = sorted(found, key=lambda r: (found[r][0], counts[r], found[r][1]), reverse=True)
    return [LineCopy(r, found[r][0], True, counts[r]) for r in ranked[:limit]]


def could_match(text: str, offset: int, kind: str) -> bool:
    """Whether copies could match here (a line above, or enough typed on a line): only then are the files around
    read."""
    return can_copy_next_line(text, offset) or (kind == "line" and len(typed_on_line(text, offset)) >= MIN_TYPED_KEY)
