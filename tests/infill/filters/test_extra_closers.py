"""Rule under test: a rest of line that closes a bracket its line does not open is cut before that closer when the
cut parses no worse; a closer for a bracket opened on a line above stays, as do strings, comments and answers of
several lines."""

import pytest

from diffill.infill.filters.extra_closers import first_unopened_closer, no_extra_closers

# (language, document with cursor, raw answer, expected text)
CASES = [
    ("python", 'if p.exists():\n    s = p.read_text(encoding="utf-8"<CURSOR>\n    print(s)\n', "))", ")"),
    ("python", "try:\n    pass\nfinally:\n    unittest.removeResult(<CURSOR>\n", "result))", "result)"),
    ("python", "x = [f(a<CURSOR>\n", ")])", ")]"),
    ("python", "x = (a<CURSOR>\n", "])", ""),  # closes another kind: nothing of it is right
    # what is opened on the line is closed as the answer says
    ("python", "x = f(g(a<CURSOR>\n", "))", "))"),
    ("python", "x = f(<CURSOR>)\n", "a", "a"),
    # a bracket opened on a line above: its closer makes the parse better, and stays
    ("python", "x = f(\n    a,\n    b<CURSOR>\n", ")", ")"),
    ("python", "x = f(a,\n      g(b<CURSOR>\n", "))", "))"),
    # brackets in strings and comments do not count
    ("python", "x = f(a<CURSOR>\n", ", ')')", ", ')')"),
    ("python", "x = f(a)<CURSOR>\n", "  # ))", "  # ))"),
    ("javascript", "const a = f(b<CURSOR>\n", "));", ")"),  # cut, not mended: a start the user types on
    # several lines: left alone
    ("python", "def f():\n    g(<CURSOR>\n", "a))\n    h()", "a))\n    h()"),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected"), CASES)
def test_extra_closers_golden(candidate, language, src, raw, expected):
    for with_tree in (False, True):  # a fresh parse and an incremental one agree
        assert no_extra_closers(candidate(language, src, raw, with_tree=with_tree)).text == expected


def test_first_unopened_closer_positions():
    assert first_unopened_closer("f(a))", 2, False) == 4
    assert first_unopened_closer("f(a))", 5, False) is None  # the closer is typed, not answered
    assert first_unopened_closer("a), f(b))", 3, False) == 8  # the typed `)` closes a bracket opened above
    assert first_unopened_closer("f('(a'))", 2, False) == 7
    assert first_unopened_closer("x  # )", 0, True) is None
