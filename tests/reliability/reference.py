"""A reference model of LSP document sync, written independently of infill/document.py, and a random edit source.

Semantics (LSP 3.17, plus what diffill documents for out-of-range input): lines end at "\\n", "\\r\\n" or "\\r";
a position's character counts units of the negotiated encoding (a lone surrogate is one code point: 1 UTF-16 unit,
3 UTF-8 bytes); a character past the line end clamps to it, a line past the end clamps to the document end, a
position inside a character rounds down; a range whose start is after its end is taken in order; a document over
MAX_DOCUMENT_BYTES (UTF-8) is dropped (on open and when an edit makes it grow past the limit).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
_EOL = re.compile(r"\r\n|\r|\n")


def units_of(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def offset_at(text: str, line: int, char: int, encoding: str) -> int:
    starts = [0] + [m.end() for m in _EOL.finditer(text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    m = _EOL.search(text, start)
    end = m.start() if m else len(text)
    used = 0
    i = start
    while i < end:
        u = units_of(text[i], encoding)
        if used + u > char:
            break
        used += u
        i += 1
    return i


def wire(text: str) -> str:
    """`text` as a JSON peer receives it: adjacent lone surrogates "\\ud800\\udfff" arrive as one astral character."""
    return json.loads(json.dumps(text))


def apply_change(text: str, change: dict, encoding: str) -> str:
    if "range" not in change:
        return wire(change["text"])
    r = change["range"]
    a = offset_at(text, r["start"]["line"], r["start"]["character"], encoding)
    b = offset_at(text, r["end"]["line"], r["end"]["character"], encoding)
    a, b = min(a, b), max(a, b)
    return text[:a] + wire(change["text"]) + text[b:]


@dataclass
class Reference:
    """What each open document must contain: text and diffill's own version counter (one per didChange)."""

    encoding: str = "utf-16"
    docs: dict[str, tuple[str, int]] = field(default_factory=dict)

    def open(self, uri: str, text: str) -> None:
        text = wire(text)
        if nbytes(text) > MAX_DOCUMENT_BYTES:
            self.docs.pop(uri, None)
        else:
            self.docs[uri] = (text, 0)

    def change(self, uri: str, changes: list[dict]) -> None:
        if uri not in self.docs:
            return
        text, version = self.docs[uri]
        for change in changes:
            text = apply_change(text, change, self.encoding)
        if nbytes(text) > MAX_DOCUMENT_BYTES:
            del self.docs[uri]
        else:
            self.docs[uri] = (text, version + 1)

    def close(self, uri: str) -> None:
        self.docs.pop(uri, None)


# Characters that stress position mapping: multi-byte, astral (surrogate pairs), lone surrogates, NUL, every
# line terminator LSP knows and the ones it does not (form feed, U+2028, NEL: str.splitlines splits on those).
PIECES = [
    "a", "x = 1", "def f(a, b):\n    return a", "\n", "\r\n", "\r", "\t", " ", "é", "ß", "中文", "😀", "𝔘",
    "\x00", "\ud800", "\udfff", "\u2028", "\x0c", "\x85", "\x1c", "\u200b", "\ufeff", "}", "{", "(", '"', "\\",
]  # fmt: skip


def random_text(rng: random.Random, max_pieces: int = 12) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, max_pieces)))


def random_position(rng: random.Random, text: str) -> dict:
    lines = len(_EOL.findall(text)) + 1
    kind = rng.random()
    if kind < 0.8:  # mostly in range, characters sometimes past the line end
        return {"line": rng.randrange(lines), "character": rng.randint(0, 12)}
    if kind < 0.9:
        return {"line": rng.randint(lines, lines + 3), "character": rng.randint(0, 5)}
    return {"line": rng.randrange(lines), "character": rng.choice([10**6, 2**31 - 1])}


def random_change(rng: random.Random, text: str) -> dict:
    if rng.random() < 0.03:
        return {"text": random_text(rng, 30)}
    start, end = random_position(rng, text), random_position(rng, text)
    if rng.random() < 0.6:  # editors mostly send ordered ranges
        start, end = sorted((start, end), key=lambda p: (p["line"], p["character"]))
    return {"range": {"start": start, "end": end}, "text": random_text(rng, 4) if rng.random() < 0.7 else ""}
