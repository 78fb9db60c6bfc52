"""Rule under test: a rest of line may end right after a bracket it opens, not inside it, unless the rest of the
line closes it; strings, comments and answers of several lines are left alone."""

import pytest

from diffill.infill.filters.balanced_brackets import keep_brackets_balanced

# (language, document with cursor, raw answer, expected text)
CASES = [
    ("python", "def f(path):\n    return os.path.<CURSOR>\n", "exists(path", "exists("),
    ("python", "def f(path):\n    return os.path.<CURSOR>\n", "exists(path)", "exists(path)"),
    ("python", "def f(path):\n    return os.path.<CURSOR>\n", "exists(", "exists("),
    ("python", "x = <CURSOR>\n", "f(a, g(b", "f(a, g("),
    ("python", "x = <CURSOR>\n", "[1, 2", "["),
    # the rest of the line closes it
    ("python", "print(<CURSOR>)\n", "len(x", "len(x"),
    ("python", "x = f(<CURSOR>)\n", "a, (b", "a, (b"),  # as far as brackets tell: `f(` keeps its `)`
    # closing what was opened before the cursor is fine
    ("python", "x = f(a, <CURSOR>\n", "b)", "b)"),
    # brackets in strings and comments do not count
    ("python", "x = <CURSOR>\n", "'(' + s", "'(' + s"),
    ("python", "x = 1<CURSOR>\n", "  # see f(x", "  # see f(x"),
    ("javascript", "const a = <CURSOR>\n", "`${(x`", "`${(x`"),
    # several lines: left alone
    ("python", "def f():\n<CURSOR>\n", "    g(\n        1", "    g(\n        1"),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected"), CASES)
def test_balanced_brackets_golden(candidate, language, src, raw, expected):
    assert keep_brackets_balanced(candidate(language, src, raw)).text == expected
