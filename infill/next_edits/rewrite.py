"""Next edits a model writes: the lines below the user's edit rewritten on a canvas, kept where the model is sure.

A model that can rewrite (a chat checkpoint, here or on a server: model.prompt_format.ChatFormat) is shown the
user's latest edits and the code below the last one, and writes that code again with the edits followed. The canvas
is seeded with the region as it reads, so the sampler starts from the code and changes what it disagrees with. The
written region is compared with the old one line by line; each changed run of lines becomes a proposal, its text
trimmed to the tokens that differ, and is kept only where the model gave every token it wrote there a probability
of at least the card's `diffill_rewrite_min_confidence`: a rewrite the model is unsure of is no edit to offer.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from itertools import accumulate

from .change import shared_head, tokens
from .edit import Proposal

# Set, not tuned: no model that rewrites and knows code has been measured (docs/benchmarks.md, "Tuned constants";
# `diffill bench next-edits --model` measures them).
REWRITE_LINES = 12  # the lines below an edit a model rewrites (half a screen: where the user looks next)
RECENT_EDITS = 3  # the user's latest edits shown in the prompt, the finished one last
GROWTH = 4  # 1/GROWTH of the canvas is left for what a rewrite adds to the region (an argument at each call)


def region_below(text: str, edit_end: int, max_lines: int = REWRITE_LINES) -> tuple[int, int] | None:
    """(start, end) of the whole lines below an edit that ended at `edit_end` (the next line's start, or a place on
    the edit's last line), at most `max_lines` of them, or None when the document ends there or they hold no
    code."""
    if edit_end == 0 or text[edit_end - 1 : edit_end] == "\n":
        start = edit_end
    else:
        nl = text.find("\n", edit_end)
        if nl < 0:
            return None
        start = nl + 1
    end = start
    for _ in range(max_lines):
        if end >= len(text):
            break
        nl = text.find("\n", end)
        end = len(text) if nl < 0 else nl + 1
    return (start, end) if text[start:end].strip() else None


def fit_region(
    region: tuple[int, int], text: str, encode: Callable[[str], list[int]], canvas: int
) -> tuple[tuple[int, int], list[int]] | None:
    """The region cut to its first lines whose tokens fit on a canvas of `canvas` tokens with room for what the
    rewrite adds and its end, with those tokens; None when not one line fits."""
    room = canvas - 1 - canvas // GROWTH
    start, end = region
    while end > start:
        ids = encode(text[start:end])
        if len(ids) <= room:
            return (start, end), ids
        end = text.rfind("\n", start, end - 1) + 1
    return None


def char_confidence(ids: Sequence[int], probs: Sequence[float], decode: Callable[[list[int]], str]) -> list[float]:
    """The probability of the token that wrote each character of decode(ids) (`probs`: each token's); a character
    that takes two tokens (a byte split between them) is as sure as the less sure one."""
    out: list[float] = []
    for i, p in enumerate(probs[: len(ids)]):
        n = len(decode(list(ids[: i + 1])))
        if n <= len(out):  # this token completed the last character
            del out[max(n, 1) :]
            if out:
                out[-1] = min(out[-1], p)
        out += [p] * (n - len(out))
    return out


def proposals(
    text: str, region: tuple[int, int], written: str, confidence: Sequence[float], min_confidence: float
) -> list[Proposal]:
    """The proposals that turn text[region] into `written` (the model's rewrite, `confidence` its characters'
    probabilities): one per changed run of lines, trimmed to the tokens that differ, those the model is sure of."""
    start, end = region
    old = text[start:end]
    if old.endswith("\n") and not written.endswith("\n"):
        written += "\n"
    old_lines, new_lines = old.splitlines(keepends=True), written.splitlines(keepends=True)
    old_at = list(accumulate(map(len, old_lines), initial=0))  # each line's start, and the end
    new_at = list(accumulate(map(len, new_lines), initial=0))
    runs = []  # (old lines i1..i2, new lines j1..j2) changed: a line rewritten as one line is a run of its own
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            runs += [(i, i + 1, j, j + 1) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
        elif tag != "equal":
            runs.append((i1, i2, j1, j2))
    out = []
    for i1, i2, j1, j2 in runs:
        o0, o1, n0, n1 = old_at[i1], old_at[i2], new_at[j1], new_at[j2]
        head, tail = _shared_ends(old[o0:o1], written[n0:n1])
        o0, n0, o1, n1 = o0 + head, n0 + head, o1 - tail, n1 - tail
        judged = confidence[n0:n1] if n1 > n0 else confidence[max(0, n0 - 1) : n0 + 1]  # a deletion: its join
        if judged and min(judged) >= min_confidence:
            out.append(Proposal(start + o0, start + o1, written[n0:n1], old[o0:o1]))
    return out


def _shared_ends(a: str, b: str) -> tuple[int, int]:
    """The characters of whole tokens `a` and `b` share at their start and, after that, at their end."""
    ta, tb = tokens(a), tokens(b)
    head = shared_head(ta, tb)
    tail = shared_head(ta[head:][::-1], tb[head:][::-1])
    return sum(map(len, ta[:head])), sum(map(len, ta[len(ta) - tail :]))
