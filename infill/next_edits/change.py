"""What an edit changed, at its core: the replaced text with what the text before and after share trimmed away.

A user's edit (a hunk of a commit, or the keystrokes on a line until they pause or leave it) is a region of whole
lines replaced by others. Its core replacement is found at the token level: `t.AnyStr` -> `_TSerialized` in a
signature, `assertEquals(` -> `assertEqual(`, `` -> `  # type: ignore` at a line's end. The tokens just before and
after the core are its anchors: where the same change applies elsewhere, the same tokens usually frame it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\s+|.", re.S)
MAX_CORE_CHARS = 400  # a core longer than this is a rewrite, not a change that repeats


@dataclass(frozen=True)
class Change:
    """One core replacement: `old` -> `new`, between the `left` and `right` tokens of the text it was made in."""

    old: str
    new: str
    offset: int  # where the core starts in the edited lines (the text before it is the same before and after)
    left: str  # the last non-blank token before the core on its line ("" at the line's start)
    right: str  # the first non-blank token after it on its line ("" at the line's end)
    at_line_end: bool  # the core ends where its line ends (trailing whitespace aside): an insertion of a suffix
    line_before: str  # the whole line the core was in, before the edit (a place whose line equals it is alike)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def shared_head(a: list[str], b: list[str]) -> int:
    """How many items `a` and `b` share at their start."""
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def core_of(before: str, after: str) -> Change | None:
    """The core replacement turning the lines `before` into the lines `after`, or None where there is none to
    repeat: nothing changed, the core spans lines (a block rewritten), or it is too long to recur."""
    a, b = tokens(before), tokens(after)
    head = shared_head(a, b)
    tail = shared_head(a[head:][::-1], b[head:][::-1])
    old, new = "".join(a[head : len(a) - tail]), "".join(b[head : len(b) - tail])
    if old == new or "\n" in old or "\n" in new or len(old) > MAX_CORE_CHARS or len(new) > MAX_CORE_CHARS:
        return None
    prefix = "".join(a[:head])
    line_start = prefix.rfind("\n") + 1
    suffix = "".join(a[len(a) - tail :])
    line_rest = suffix.split("\n", 1)[0]
    left = next((t for t in reversed(tokens(prefix[line_start:])) if not t.isspace()), "")
    right = next((t for t in tokens(line_rest) if not t.isspace()), "")
    return Change(old, new, len(prefix), left, right, not line_rest.strip(), prefix[line_start:] + old + line_rest)
