"""Plain-string helpers shared by the syntax layer: LSP line splitting, encodings, indentation.

LSP splits lines on "\\n", "\\r\\n" and "\\r" (unlike `str.splitlines`, which also splits on form feeds and
Unicode separators), so every module that reasons about lines goes through these helpers.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

EOL_RE = re.compile(r"\r\n|\r|\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_WS_RE = re.compile(r"[ \t]*")
# a string literal on one line (an unclosed one runs to the line's end)
STRING_PATTERN = r"""[rbfuRBFU]{0,2}('''|\"\"\"|'|")(?:\\.|(?!\1)[^\\\n])*(?:\1)?"""
_STRING_RE = re.compile(STRING_PATTERN)

ENCODINGS = ("utf-8", "utf-16", "utf-32")


def utf8(s: str) -> bytes:
    """UTF-8 bytes of `s`; lone surrogates (possible in JSON-decoded LSP text) pass through instead of raising."""
    return s.encode("utf-8", "surrogatepass")


def unit_len(s: str, encoding: str) -> int:
    """Length of `s` in the units of an LSP position encoding."""
    if encoding == "utf-32" or s.isascii():
        return len(s)
    if encoding == "utf-16":
        return len(s.encode("utf-16-le", "surrogatepass")) // 2
    if encoding == "utf-8":
        return len(utf8(s))
    raise ValueError(f"unknown position encoding {encoding!r}")


def line_starts(text: str) -> list[int]:
    """String offsets where each LSP line begins (always at least one line)."""
    return [0] + [m.end() for m in EOL_RE.finditer(text)]


# The work at the cursor reads its line at most this many characters either side of it: a minified bundle's one
# line of megabytes must not cost its length at every filter and copy search (see `line_window`).
LINE_REACH = 4096


def _line_start(text: str, upto: int, lo: int = 0) -> int:
    """Where the line holding text[upto] starts: after the last "\\n" or "\\r" before `upto`, else `lo` (where the
    search stops). The "\\r" is looked for only after that "\\n" (a file without one would be searched whole, at
    every keystroke)."""
    nl = text.rfind("\n", lo, upto)
    eol = max(nl, text.rfind("\r", max(lo, nl + 1), upto))
    return eol + 1 if eol >= 0 else lo


def line_bounds(text: str, offset: int) -> tuple[int, int]:
    """(start, end) of the LSP line holding `offset`; end excludes the line terminator.

    An offset between "\\r" and "\\n" of a CRLF belongs to the line the CRLF ends.
    """
    return line_window(text, offset, len(text))


def line_window(text: str, offset: int, reach: int = LINE_REACH) -> tuple[int, int]:
    """`line_bounds` of `offset` cut to `reach` characters either side of it: what the work at the cursor reads of
    its line, so that a line of megabytes costs no more than one of `reach` characters. Where the line runs on
    past a cut, the cut stands for its start or end (`is_line_start` / `is_line_end` tell them apart)."""
    offset = max(0, min(offset, len(text)))
    start = _line_start(text, offset, max(0, offset - reach))
    if start > 0 and start == offset and text[start - 1] == "\r" and text.startswith("\n", offset):
        # Inside a CRLF: the line is the one before it.
        return _line_start(text, offset - 1, max(0, offset - 1 - reach)), offset - 1
    m = EOL_RE.search(text, offset, offset + reach)
    return start, (m.start() if m else min(len(text), offset + reach))


def is_line_start(text: str, at: int) -> bool:
    """Whether `at` starts a line (and is no cut of `line_window` inside a long one)."""
    return at <= 0 or text[at - 1] in "\r\n"


def is_line_end(text: str, at: int) -> bool:
    """Whether `at` ends a line (and is no cut of `line_window` inside a long one)."""
    return at >= len(text) or text[at] in "\r\n"


def split_lines(text: str) -> list[str]:
    """Lines of `text` without terminators, LSP-style; "" gives [""] and a trailing EOL gives a final ""."""
    return EOL_RE.split(text)


def split_lines_keepends(text: str) -> list[str]:
    """Lines of `text` with their terminators, LSP-style (concatenating them gives `text` back)."""
    return _LINE_RE.findall(text)


STYLE_SAMPLE_CHARS = 32_000  # style (indent unit, line ends) is read from the file's head: ~1,000 lines is plenty


def dominant_eol(text: str) -> str:
    """The line terminator the document mostly uses ("\\n" when it has none), judged on its head."""
    counts = Counter(m.group() for m in EOL_RE.finditer(text, 0, STYLE_SAMPLE_CHARS))
    return counts.most_common(1)[0][0] if counts else "\n"


def leading_ws(line: str) -> str:
    """The spaces and tabs a line starts with."""
    m = _WS_RE.match(line)
    return m.group() if m else ""


def in_hash_comment(head: str) -> bool:
    """Whether the end of `head` (a line's text up to some point) is inside a `#` comment: a `#` outside the
    line's strings. For copies, which must not carry a comment's words into code."""
    return "#" in head and "#" in _STRING_RE.sub("", head)


def is_blank(line: str) -> bool:
    """True for an empty or whitespace-only line."""
    return not line.strip()


def detect_indent_unit(text: str, default: str = "    ") -> str:
    """The file's indentation step: a tab, or the most common positive change in leading spaces (2, 4, ...).

    Looking at changes between consecutive indented lines rather than absolute widths makes a file whose every line
    sits at 8 spaces still read as 4-space indented when its steps are 4. Read from the file's head (and cached):
    scanning a large file on every keystroke costs too much (docs/benchmarks.md, "Tuned constants").
    """
    return _indent_unit(text[:STYLE_SAMPLE_CHARS], default)


@lru_cache(maxsize=16)
def _indent_unit(text: str, default: str) -> str:
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    prev = 0
    for line in split_lines(text):
        if is_blank(line):
            # An editor-indented empty line still shows the style, though not the step.
            tabs += line.startswith("\t")
            spaces += line.startswith(" ")
            continue
        ws = leading_ws(line)
        if ws.startswith("\t"):
            tabs += 1
            continue
        width = len(ws)
        if width:
            spaces += 1
        if 2 <= width - prev <= 8:
            steps[width - prev] += 1
        prev = width
    if tabs > spaces:
        return "\t"
    if not steps:
        return default
    step = max(steps.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    return " " * step


def indent_width(ws: str, tab_size: int = 4) -> int:
    """Visual width of leading whitespace, tabs advancing to the next multiple of `tab_size`."""
    width = 0
    for ch in ws:
        width = (width // tab_size + 1) * tab_size if ch == "\t" else width + 1
    return width


def render_indent(width: int, unit: str) -> str:
    """Whitespace of visual `width` in the file's style: tabs (plus spaces for a remainder) or spaces."""
    if unit == "\t":
        tabs, rest = divmod(width, 4)
        return "\t" * tabs + " " * rest
    return " " * width
