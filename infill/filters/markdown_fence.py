"""An instruction model's answer as code: its Markdown fence and the prompt's cursor marker taken off.

A chat model asked for the code at the cursor (model.prompt_format.ChatFormat) may still wrap it in a fence
(```` ```python ```` ... ```` ``` ````) or write the cursor marker it was shown. The code inside the fence is the
answer, and nothing after the marker is: the marker stands where the code before the cursor ends, so what follows
it is the code after the cursor, already there. An answer that does not start with a fence keeps every backtick
(a Markdown string in code is code).
"""

from __future__ import annotations

import re

from diffill.infill.filters.base import Candidate
from diffill.model.prompt_format import CURSOR

OPENING = re.compile(r"[ \t]*```[\w+.-]*[ \t]*(\r\n|\r|\n)")
CLOSING = re.compile(r"(\r\n|\r|\n)?[ \t]*```")


def strip_markdown_fence(c: Candidate) -> Candidate:
    """The candidate with a leading fence line and its closing fence removed, cut before a cursor marker."""
    text = c.text
    if CURSOR in text:
        text = text[: text.index(CURSOR)]
    opened = OPENING.match(text)
    if opened:
        text = text[opened.end() :]
        closed = CLOSING.search(text)
        text = text[: closed.start()] if closed else text
    return c if text == c.text else c.with_text(text)
