"""Rest-of-line candidates copied from the document: code repeats itself.

When the text typed on the current line (`self.assertEqual(` or `logger = logging.get`) also occurs elsewhere in
the file, the rest of that other line is a strong guess for the rest of this one. A small model spells long
identifiers and repeated argument lists badly; a copy spells them right, and the model only has to judge
whether the copy fits here (see CompletionEngine). Measured on held-out code (docs/benchmarks.md): the best copy
alone is as often exactly right as the model's own line, and the two are right on different lines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

MIN_KEY = 5  # characters typed on the line that must match; shorter keys match too much by chance
WINDOW_BEFORE = 20_000  # characters of the document before the cursor line searched for matches
WINDOW_AFTER = 5_000  # ... and after it
MAX_CANDIDATES = 4


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


def line_copies(text: str, offset: int, min_key: int = MIN_KEY, limit: int = MAX_CANDIDATES) -> list[LineCopy]:
    """Candidates for the rest of the line at `offset`, best evidence first: the longest match of the typed text
    before the cursor (then the most lines that continue the same way, then the nearest). Lines that would only
    repeat what already follows the cursor are left out."""
    line_start = text.rfind("\n", 0, offset) + 1
    typed = text[line_start:offset].lstrip(" \t")
    if len(typed) < min_key or "\n" in typed:
        return []
    line_end = text.find("\n", offset)
    line_end = len(text) if line_end < 0 else line_end
    current_rest = text[offset:line_end].rstrip()
    window_start = max(0, line_start - WINDOW_BEFORE)
    window = text[window_start:line_start] + text[line_end : line_end + WINDOW_AFTER]
    cursor = line_start - window_start  # where the current line was cut out of the window
    key = typed[-min_key:]
    found: dict[str, tuple[int, bool, int]] = {}  # rest -> (key length, whole line, distance), the best match
    counts: Counter[str] = Counter()
    at = window.find(key)
    while at >= 0:
        end = at + len(key)
        rest_end = window.find("\n", end)
        rest_end = len(window) if rest_end < 0 else rest_end
        rest = window[end:rest_end].rstrip()
        if rest and rest != current_rest:
            matched = _common_suffix(window, end, typed, len(typed), len(typed))
            before = window[window.rfind("\n", 0, end - matched) + 1 : end - matched]
            whole = matched == len(typed) and not before.strip(" \t")
            evidence = (matched, whole, -abs(at - cursor))
            counts[rest] += 1
            if rest not in found or evidence > found[rest]:
                found[rest] = evidence
        at = window.find(key, at + 1)
    ranked = sorted(found, key=lambda r: (found[r][0], found[r][1], counts[r], found[r][2]), reverse=True)
    return [LineCopy(r, found[r][0], found[r][1], counts[r]) for r in ranked[:limit]]
