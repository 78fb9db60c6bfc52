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
