"""Rule under test: a rest of line may end right after a bracket it opens, not inside it, unless the rest of the
line closes it; it does not end on a comma inside a bracket its line opened; strings, comments and answers of
several lines are left alone."""

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
    # a comma inside a bracket this line opened: the call goes on below, which a rest of line never shows
    ("python", "sock = socket.socket(af, socktyp<CURSOR>\n", "e, proto,", "e, proto"),
    ("python", "raise CharsetError(input_c<CURSOR>\n", "harset, ", "harset"),
    ("python", "x = f(<CURSOR>\n", ",", ""),
    # ... but one argument per line ends on its comma, and a comma the rest of the line follows stays
    ("python", "f(\n    logger=<CURSOR>\n", "logger,", "logger,"),
    ("python", "x = [\n    'utf-<CURSOR>\n", "16-le',", "16-le',"),
    ("python", "x = f(a, <CURSOR>)\n", "b,", "b,"),
    ("python", "a, b = <CURSOR>\n", "1,", "1,"),  # no bracket open: a tuple
    ("python", "x = '(a<CURSOR>\n", ", b',", ", b',"),  # the bracket is in a string
    # several lines: left alone
    ("python", "def f():\n<CURSOR>\n", "    g(\n        1", "    g(\n        1"),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected"), CASES)
def test_balanced_brackets_golden(candidate, language, src, raw, expected):
    assert keep_brackets_balanced(candidate(language, src, raw)).text == expected
