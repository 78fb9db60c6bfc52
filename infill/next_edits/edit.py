"""An edit the user made, and an edit proposed to them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    start: int  # where the edited lines start (the same offset in the text before and after)
    before: str  # those lines as they were
    after: str  # and as they are


@dataclass(frozen=True)
class Proposal:
    """Replace text[start:end] of the document with `text` (`old`: the text there now)."""

    start: int
    end: int
    text: str
    old: str = ""


def apply(text: str, proposals: list[Proposal]) -> str:
    """`text` with the (non-overlapping) proposals made."""
    for p in sorted(proposals, key=lambda p: p.start, reverse=True):
        text = text[: p.start] + p.text + text[p.end :]
    return text


def joined(shown: list[Proposal], more: list[Proposal]) -> list[Proposal]:
    """`shown` with those of `more` that overlap none of them (nor start where one starts), by their start."""
    out = list(shown)
    for p in more:
        if not any(p.start < q.end and q.start < p.end or p.start == q.start for q in out):
            out.append(p)
    return sorted(out, key=lambda p: p.start)
