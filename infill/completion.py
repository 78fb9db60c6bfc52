"""What a completion hands back: an edit of the document (torch-free, so the daemon's protocol layer can build
and read one before the model has loaded)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Completion:
    start: int  # string offsets into the document text: replace text[start:end] with `text`
    end: int
    text: str
    kind: str
    source: str = "model"  # "model", or "copy" / "next line" for a line copied from the code around


def edit_key(key: str | None) -> str:
    """The prompt cache's key of a document's inline edits (a rename's canvas), kept beside its completions'."""
    return f"{key or ''}#edit"
