"""Ghost text the user typed along instead of accepting it (one key) is declined: an answer that would show its
rest again is cut to the word being typed, or not given.

A suggestion typed along goes wrong somewhere: the word being typed is often right where what follows it is
not (`docu|ment which contains` when the user writes `document with the given`), so that word is still offered.
"""

from __future__ import annotations

import re

from .completion import Completion

WORD_HEAD = re.compile(r"\w*")
WORD_CHAR = re.compile(r"\w")


def after_declined(answer: Completion, offset: int, declined: str, text: str) -> Completion | None:
    """`answer` at `offset` of `text`, given the rest of the suggestion the user typed along to `offset`
    (`declined`): as it is when it does not show that rest again, else only the end of the word being typed
    when that is shorter than the rest, else None."""
    if answer.start != offset or not answer.text.startswith(declined):
        return answer
    if not WORD_CHAR.match(text, max(0, offset - 1), offset):  # no word being typed (nor any at the text's start)
        return None
    word = WORD_HEAD.match(answer.text).group(0)
    if not word or len(word) >= len(declined):
        return None
    return Completion(offset, offset, word, answer.kind, answer.source)
