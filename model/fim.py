"""Fill-in-the-middle layout shared by training and completion, and the training spans drawn like real edits.

Prompt: `<bos> [<file_sep> context]* <fim_suffix> suffix <fim_prefix> prefix`; canvas: middle, `<eos>`, pads.
The suffix comes first so that typing at the cursor only appends to the prompt (the encoder cache is reused).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .tokenizer import BOS, EOS, FILE_SEP, FIM_PREFIX, FIM_SUFFIX, PAD


def build_prompt(
    prefix_ids: list[int],
    suffix_ids: list[int],
    budget: int,
    max_suffix: int = 64,
    context: list[list[int]] | None = None,
    block: int = 32,
) -> list[int]:
    """At most `budget` tokens: the suffix's head (<= max_suffix), context blocks, then the prefix's tail."""
    suffix = suffix_ids[:max_suffix]
    head = [BOS]
    for ctx in context or []:
        head += [FILE_SEP, *ctx]
    fixed = len(head) + 2 + len(suffix)
    if fixed >= budget:  # context never crowds out the code itself
        head = [BOS]
        fixed = len(head) + 2 + len(suffix)
    prefix = prefix_within(prefix_ids, max(0, budget - fixed), block)
    return head + [FIM_SUFFIX, *suffix, FIM_PREFIX, *prefix]


def prefix_within(prefix_ids: list[int], room: int, block: int = 32) -> list[int]:
    """The prefix's tail within `room` tokens, its head dropped in whole blocks: the prompt's start stays put while
    the user types, and the encoder cache of the previous keystroke stays valid (it moves once every `block`
    tokens)."""
    excess = len(prefix_ids) - room
    drop = -(-excess // block) * block if excess > 0 else 0
    return prefix_ids[drop:] if room else []


def build_canvas(middle_ids: list[int], length: int, end: int = EOS) -> list[int]:
    """The training target (and a draft's seeded canvas): the middle, its `end` id, then pads (truncated middles
    carry no end)."""
    if len(middle_ids) >= length:
        return middle_ids[:length]
    return middle_ids + [end] + [PAD] * (length - len(middle_ids) - 1)


@dataclass
class Span:
    start: int  # character offsets into the text: middle = text[start:end]
    end: int
    kind: str  # "line" (rest of line), "lines", "block"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def sample_span(text: str, rng: random.Random, max_chars: int = 160) -> Span | None:
    """A middle drawn like a real completion: the rest of a line (cursor mid-line), one to four whole lines,
    or the body of a block after a line that opens one (`:` or `{`)."""
    starts = _line_starts(text)
    n = len(starts)
    if n < 3:
        return None
    for _ in range(8):
        i = rng.randrange(1, n - 1)
        line_end = starts[i + 1] - 1
        line = text[starts[i] : line_end]
        if not line.strip():
            continue
        kind = rng.choices(["line", "lines", "block"], weights=[0.55, 0.3, 0.15])[0]
        if kind == "line":
            lo = starts[i] + _indent(line)
            if line_end - lo < 2:
                continue
            a = rng.randrange(lo, line_end)
            if line_end - a > max_chars:
                continue
            return Span(a, line_end, "line")
        if kind == "lines":
            k = rng.randint(1, 4)
            j = min(n - 1, i + k)
            a, b = starts[i], starts[j]
            if b - a > max_chars * 2 or b <= a:
                continue
            return Span(a, b, "lines")
        prev = text[starts[i - 1] : starts[i] - 1].rstrip()
        if not prev.endswith((":", "{")):
            continue
        base = _indent(text[starts[i - 1] : starts[i] - 1])
        j = i
        while j < n - 1:
            body_line = text[starts[j] : starts[j + 1] - 1]
            if body_line.strip() and _indent(body_line) <= base:
                break
            j += 1
        a, b = starts[i], starts[j]
        if b <= a or b - a > max_chars * 3:
            continue
        return Span(a, b, "block")
    return None
