"""Rest-of-line candidates copied from the document: code repeats itself.

When the text typed on the current line (`self.assertEqual(` or `logger = logging.get`) also occurs elsewhere in
the file, the rest of that other line is a strong guess for the rest of this one. A small model spells long
identifiers and repeated argument lists badly; a copy spells them right, and the model only has to judge
whether the copy fits here (see CompletionEngine). Measured on held-out code (docs/benchmarks.md): the best copy
alone is as often exactly right as the model's own line, and the two are right on different lines.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

MIN_KEY = 5  # characters typed on the line that must match; shorter keys match too much by chance
WINDOW_BEFORE = 20_000  # characters of the document before the cursor line searched for matches
WINDOW_AFTER = 5_000  # ... and after it
MAX_CANDIDATES = 4
MAX_MATCHES = 3000  # matches looked at per key over all texts (this file's first): bounds a common key's time


@dataclass(frozen=True)
class LineCopy:
    rest: str  # text to put after the cursor: the rest of the other line, trailing space removed
    key_length: int  # characters before the cursor that match the text before the copied rest
    whole_line: bool  # the whole typed line (after its indentation) matches a whole other line's start
    count: int  # how many lines of the window continue this way


def _common_suffix(a: str, a_end: int, b: str, b_end: int, limit: int) -> int:
    """How many characters before a[a_end] and b[b_end] agree (at most `limit`)."""
    n = 0
    while n < limit and a_end - n > 0 and b_end - n > 0 and a[a_end - n - 1] == b[b_end - n - 1]:
        n += 1
    return n


def typed_on_line(text: str, offset: int) -> str:
    """The text before the cursor on its line, indentation left out: what copies must match."""
    return text[text.rfind("\n", 0, offset) + 1 : offset].lstrip(" \t")


def _key_lengths(typed: int, min_key: int) -> list[int]:
    """Key lengths to search, longest first: the whole typed text, then halving down to `min_key`. A long key
    finds the strongest evidence with few matches; shorter ones run only while candidates are still missing."""
    lengths = [typed]
    while lengths[-1] // 2 > min_key:
        lengths.append(lengths[-1] // 2)
    return lengths + [min_key] if lengths[-1] != min_key else lengths


def line_copies(
    text: str, offset: int, others: Sequence[str] = (), min_key: int = MIN_KEY, limit: int = MAX_CANDIDATES
) -> list[LineCopy]:
    """Candidates for the rest of the line at `offset`, best evidence first: the longest match of the typed text
    before the cursor (then a match of the whole line, then the most lines that continue the same way, then the
    nearest line of this file). `others` are more texts to copy from (files beside this one, open documents),
    searched after this file's window. Lines that would only repeat what already follows the cursor are left
    out."""
    typed = typed_on_line(text, offset)
    if len(typed) < min_key:
        return []
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    current_rest = text[offset:line_end].rstrip()
    window_start = max(0, line_start - WINDOW_BEFORE)
    window = text[window_start:line_start] + text[line_end : line_end + WINDOW_AFTER]
    cursor = line_start - window_start  # where the current line was cut out of the window
    sources = [(window, cursor)] + [(other, None) for other in others]
    found: dict[str, tuple[int, bool, float]] = {}  # rest -> (key length, whole line, -distance): the best match
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
                rest_end = source.find("\n", end)
                rest_end = len(source) if rest_end < 0 else rest_end
                rest = source[end:rest_end].rstrip()
                matched = _common_suffix(source, end, typed, len(typed), len(typed))
                if rest and rest != current_rest and matched < longer:
                    before = source[source.rfind("\n", 0, end - matched) + 1 : end - matched]
                    whole = matched == len(typed) and not before.strip(" \t")
                    evidence = (matched, whole, -abs(at - here) if here is not None else -math.inf)
                    counts[rest] += 1
                    if rest not in found or evidence > found[rest]:
                        found[rest] = evidence
                at = source.find(key, at + 1)
        if len(found) >= limit:
            break  # what shorter keys find matches less of the line: it would rank below these
        longer = key_length
    ranked = sorted(found, key=lambda r: (found[r][0], found[r][1], counts[r], found[r][2]), reverse=True)
    return [LineCopy(r, found[r][0], found[r][1], counts[r]) for r in ranked[:limit]]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _previous_lines(lines: list[str], index: int, n: int) -> list[str]:
    """The `n` non-empty lines before lines[index], nearest first, stripped."""
    out = []
    for j in range(index - 1, -1, -1):
        if lines[j].strip():
            out.append(lines[j].strip())
            if len(out) == n:
                break
    return out


def line_above(text: str, offset: int) -> str:
    """The nearest non-empty line above the cursor, stripped, when nothing but indentation precedes the cursor on
    its line; else "" (what next-line copies must match)."""
    line_start = text.rfind("\n", 0, offset) + 1
    if text[line_start:offset].strip(" \t"):
        return ""
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        if text[start:end].strip():
            return text[start:end].strip()
        end = start - 1
    return ""


def next_line_copies(
    text: str, offset: int, others: Sequence[str] = (), limit: int = MAX_CANDIDATES, context: int = 3
) -> list[LineCopy]:
    """Candidates for a new line at `offset` (nothing typed on it but indentation): in this file and `others`,
    the line that follows a line equal to the one above the cursor, at the same depth relative to it. Best
    evidence first: the most lines above agreeing (up to `context`), then the most places continuing the same
    way, then the nearest. `key_length` counts the agreeing lines; `whole_line` is always true."""
    line_start = text.rfind("\n", 0, offset) + 1
    if text[line_start:offset].strip(" \t"):
        return []
    lines = text[:line_start].split("\n")[:-1]  # the lines above the cursor's
    above = _previous_lines(lines, len(lines), context)
    if not above or len(above[0]) < MIN_KEY:
        return []
    prev = next(ln for ln in reversed(lines) if ln.strip())
    depth = (offset - line_start) - _indent(prev)  # the cursor's indentation relative to the line above
    line_end = text.find("\n", offset)
    below = text[line_end + 1 :] if line_end >= 0 else ""
    first, size = len(lines), 0
    while first > 0 and size + len(lines[first - 1]) < WINDOW_BEFORE:
        first, size = first - 1, size + len(lines[first - 1]) + 1
    if first == len(lines):
        return []  # the line above alone is longer than the window
    here = len(lines) - first  # index in the window of the first line below the cursor
    window = lines[first:] + below[:WINDOW_AFTER].split("\n")
    itself = next((j for j in range(here - 1, -1, -1) if window[j].strip()), -1)  # the line above: not a match
    sources = [(window, here)] + [(other.split("\n"), None) for other in others]
    found: dict[str, tuple[int, float]] = {}
    counts: Counter[str] = Counter()
    budget = MAX_MATCHES
    for source, cursor in sources:
        for i, line in enumerate(source):
            if budget <= 0:
                break
            if line.strip() != above[0] or (cursor is not None and i == itself):
                continue
            budget -= 1
            nxt = next((j for j in range(i + 1, min(len(source), i + 4)) if source[j].strip()), None)
            if nxt is None or _indent(source[nxt]) - _indent(line) != depth:
                continue
            rest = source[nxt].strip()
            agree = 1 + sum(a == b for a, b in zip(above[1:], _previous_lines(source, i, context - 1), strict=False))
            evidence = (agree, -abs(i - cursor) if cursor is not None else -math.inf)
            counts[rest] += 1
            if rest not in found or evidence > found[rest]:
                found[rest] = evidence
    ranked = sorted(found, key=lambda r: (found[r][0], counts[r], found[r][1]), reverse=True)
    return [LineCopy(r, found[r][0], True, counts[r]) for r in ranked[:limit]]
