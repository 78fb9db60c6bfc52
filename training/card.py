"""Sections of a model folder's data card (DATA.md), each written by the command that makes what it describes."""

from __future__ import annotations

from pathlib import Path


def section(text: str, heading: str) -> str:
    """The section under `heading` (the heading line to the next `## ` line), or ""."""
    start = text.find(heading + "\n")
    if start < 0:
        return ""
    after = text.find("\n## ", start + len(heading))
    return text[start : after + 1 if after >= 0 else len(text)]


def set_section(card: Path, heading: str, body: str) -> None:
    """Writes `body` under `heading` (a `## ` line) in the card, in place of that section where it has one, else at
    the end; a folder without a card gets none."""
    if not card.exists():
        return
    text = card.read_text(encoding="utf-8")
    new = f"{heading}\n\n{body.strip()}\n"
    old = section(text, heading)
    text = text.replace(old, new) if old else f"{text.rstrip()}\n\n{new}"
    card.write_text(text, encoding="utf-8")
