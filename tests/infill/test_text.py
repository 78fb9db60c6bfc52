import pytest

from diffill.infill.text import (
    detect_indent_unit,
    dominant_eol,
    in_hash_comment,
    indent_width,
    line_bounds,
    line_starts,
    render_indent,
    split_lines,
    split_lines_keepends,
)


def test_lsp_line_splitting_ignores_other_separators():
    text = "a\x0cb\u2028c\r\nd\re\n"
    assert split_lines(text) == ["a\x0cb\u2028c", "d", "e", ""]
    assert split_lines_keepends(text) == ["a\x0cb\u2028c\r\n", "d\r", "e\n"]
    assert "".join(split_lines_keepends("x\ny")) == "x\ny"
    assert line_starts(text) == [0, 7, 9, 11]


@pytest.mark.parametrize(
    ("offset", "bounds"),
    [(0, (0, 2)), (2, (0, 2)), (3, (0, 2)), (4, (4, 6)), (7, (7, 8)), (9, (9, 9))],
)
def test_line_bounds(offset, bounds):
    assert line_bounds("ab\r\ncd\rx\n", offset) == bounds  # offset 3 sits inside the CRLF


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("def f():\n    return 1\n", "    "),
        ("def f():\n  if x:\n    return 1\n", "  "),
        ("func f() {\n\treturn 1\n}\n", "\t"),
        # one step of 8, one of 4: a tie goes to the smaller
        ("class A:\n        def f(self):\n            pass\n", "    "),
        ("x = 1\n", "    "),
        ("f() {\n\t\n}\n", "\t"),  # an editor-indented empty line still shows tabs
    ],
)
def test_detect_indent_unit(text, unit):
    assert detect_indent_unit(text) == unit


def test_indent_helpers():
    assert indent_width("\t  ") == 6
    assert indent_width("  \t") == 4
    assert render_indent(6, "\t") == "\t  "
    assert render_indent(6, "  ") == "      "
    assert dominant_eol("a\r\nb\r\nc\n") == "\r\n"
    assert dominant_eol("abc") == "\n"


def test_line_bounds_agree_with_the_line_starts_at_every_offset_of_mixed_line_ends():
    import random

    rng = random.Random(3)
    for _ in range(50):
        text = "".join(rng.choice(["a", "b", "\n", "\r", "\r\n", " "]) for _ in range(rng.randrange(30)))
        starts = line_starts(text)
        for offset in range(len(text) + 1):
            inside_crlf = 0 < offset < len(text) and text[offset - 1 : offset + 1] == "\r\n"
            at = offset - 1 if inside_crlf else offset
            row = max(i for i, s in enumerate(starts) if s <= at)
            end = starts[row + 1] if row + 1 < len(starts) else len(text)
            while end > starts[row] and text[end - 1] in "\r\n":
                end -= 1
            assert line_bounds(text, offset) == (starts[row], end), (text, offset)


def test_line_window_is_the_line_within_reach_of_the_cursor():
    """A short line is its bounds; a long one is cut `reach` characters either side of the cursor, and the cuts are
    told from real line starts and ends."""
    from diffill.infill.text import LINE_REACH, is_line_end, is_line_start, line_window

    short = "ab\r\ncd\rx\n"
    assert all(line_window(short, at, 3) == line_bounds(short, at) for at in range(len(short) + 1))
    text = "x = 1\n" + "y" * 10_000 + "\nz\n"
    line_start, line_end = 6, 6 + 10_000
    at = line_start + 5_000
    assert line_window(text, at, 100) == (at - 100, at + 100)
    assert not is_line_start(text, at - 100) and not is_line_end(text, at + 100)
    assert line_window(text, line_start + 50, 100) == (line_start, line_start + 150)  # its start is within reach
    assert line_window(text, line_end - 10, 100) == (line_end - 110, line_end)  # ... its end
    assert is_line_start(text, line_start) and is_line_end(text, line_end) and is_line_end(text, len(text))
    assert line_window(text, at) == (at - LINE_REACH, at + LINE_REACH)
    crlf = "a" * 500 + "\r\n" + "b" * 500
    assert line_window(crlf, 501, 100) == (400, 500)  # inside the CRLF: the line it ends


@pytest.mark.parametrize(
    ("head", "inside"),
    [
        ("x = 1  # see", True),
        ("# comment", True),
        ('x = "#" + y', False),
        ('x = "#" + y  # z', True),
        ("f('a', b", False),
        ("'''doc # x", False),  # an unclosed string runs to the line's end
        ("x = 1", False),
    ],
)
def test_in_hash_comment(head, inside):
    assert in_hash_comment(head) is inside
