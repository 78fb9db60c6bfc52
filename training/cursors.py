"""Where a cursor stands mid-edit in a real file: a line cut with its rest gone, or a fresh line's indentation with
a few lines gone. `diffill eval` draws its cases this way and `diffill train decoder` its anchors (no torch here)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Cut:
    before: str  # the text up to the cursor
    after: str  # the text after it (the removed part gone)
    truth: str  # what was removed, as the answer would write it (its trailing space dropped)
    line: int  # the cut line's index
    column: int  # the cursor's column in it


def cut(text: str, rng: random.Random, kind: str) -> Cut | None:
    """A cut of `kind` "line" (the rest of a line of 4+ characters, from a point after its first character) or
    "lines" (1-3 non-blank lines, the cursor at the first one's indentation); None where the draw does not fit."""
    lines = text.split("\n")
    candidates = [i for i, ln in enumerate(lines) if 1 <= i < len(lines) - 1 and len(ln.strip()) >= 4]
    if not candidates:
        return None
    i = rng.choice(candidates)
    line = lines[i]
    indent = line[: len(line) - len(line.lstrip())]
    if kind == "line":
        lo = len(indent) + 1
        if len(line.rstrip()) - lo < 2:
            return None
        at = rng.randrange(lo, len(line.rstrip()))
        before = "\n".join(lines[:i] + [line[:at]])
        return Cut(before, "\n" + "\n".join(lines[i + 1 :]), line[at:].rstrip(), i, at)
    k = rng.randint(1, 3)
    body = lines[i : i + k]
    if any(not b.strip() for b in body):
        return None
    before = "\n".join(lines[:i] + [indent])
    return Cut(before, "\n" + "\n".join(lines[i + k :]), "\n".join(body)[len(indent) :].rstrip(), i, len(indent))
