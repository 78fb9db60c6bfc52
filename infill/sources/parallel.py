"""A copy from a parallel place, with that place's names swapped for this one's.

Code repeats itself with other names: `value = ConvertingDict(value)` beside `config = ConvertingDict(config)`,
`future.set_exception(ex)` under `except BaseException as ex:` beside the same call under `... as exc:`. A line
copied from there is right here only with the names this place uses. Where the text before the copied rest (what
is typed on the line, and the line above) has the same shape in both places, token for token, and differs only in
names, those names are the renaming; the copied rest gets it. Names in strings and comments are prose and stay.
"""

from __future__ import annotations

import re

from ..text import STRING_PATTERN

_TOKEN = re.compile(rf"{STRING_PATTERN}|[A-Za-z_]\w*|\d[\w.]*|\S")
_NAME = re.compile(r"[A-Za-z_]\w*")
_VALUE = re.compile(rf"{STRING_PATTERN}|\d[\w.]*")
# in the rest: strings (to their end on the line) and comments are left as they are, names are renamed
_REST = re.compile(rf"#.*|{STRING_PATTERN}|(?P<name>[A-Za-z_]\w*)")


def renaming(pairs: list[tuple[str, str]], tail: bool = False) -> dict[str, str]:
    """Their name -> ours, from (their text, our text) pairs that have the same tokens but for names (and values,
    which rename nothing). A pair of another shape says nothing; a pair of more than one token that shares no name
    (a keyword counts) is too loose an analogy (two unrelated assignments); names that would map two ways are left
    out. With `tail`, only the ends the two texts share are compared: the text before a copied rest may start
    further left in one place (a parameter on a line of its own, the other's on the `def` line)."""
    mapping: dict[str, str] = {}
    clashes: set[str] = set()
    for theirs, ours in pairs:
        a, b = _tokens(theirs), _tokens(ours)
        if tail:
            n = min(len(a), len(b))
            a, b = a[len(a) - n :], b[len(b) - n :]
        if len(a) != len(b) or a == b:
            continue
        if any(x != y and not _alike(x, y) for x, y in zip(a, b, strict=True)):
            continue
        if len(a) > 1 and not any(x == y and _NAME.fullmatch(x) for x, y in zip(a, b, strict=True)):
            continue
        for x, y in zip(a, b, strict=True):
            if x != y and _NAME.fullmatch(x):
                if mapping.get(x, y) != y:
                    clashes.add(x)
                mapping[x] = y
    for x in clashes:
        del mapping[x]
    targets = list(mapping.values())
    return {x: y for x, y in mapping.items() if targets.count(y) == 1}


def _tokens(text: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(text)]


def _alike(x: str, y: str) -> bool:
    """Two tokens in the same place of two texts of one shape: two names (renamed) or two values (strings,
    numbers: they differ, which renames nothing)."""
    return bool(_NAME.fullmatch(x) and _NAME.fullmatch(y)) or bool(_VALUE.fullmatch(x) and _VALUE.fullmatch(y))


def renamed(rest: str, mapping: dict[str, str]) -> str:
    """`rest` with its names (not the words of its strings and comments) renamed by `mapping`."""
    if not mapping:
        return rest

    def swap(m: re.Match[str]) -> str:
        name = m.group("name")
        return mapping.get(name, name) if name is not None else m.group(0)

    return _REST.sub(swap, rest)
