import pytest

from diffill.infill.filters.markdown_fence import strip_markdown_fence

# (language, document with cursor, raw model output, expected text)
CASES = [
    ("python", "x = <CURSOR>\n", "```python\ncompute(1)\n```", "compute(1)"),
    ("python", "def f(x):\n    <CURSOR>\n", "```\nreturn x + 1\n```\nMore text.", "return x + 1"),
    ("python", "x = <CURSOR>\n", "  ```py\r\ny = 2\r\n```", "y = 2"),
    ("python", "x = <CURSOR>\n", "```python\nvalue = 3", "value = 3"),  # the canvas ended before the fence closed
    ("python", "x = foo(<CURSOR>)\n", "a, b<|cursor|>)", "a, b"),  # what follows the marker is already there
    ("python", "x = <CURSOR>\n", "<|cursor|>", ""),
    ("python", 'doc = "<CURSOR>"\n', "use ```code``` here", "use ```code``` here"),  # no leading fence: kept
    ("javascript", "const s = <CURSOR>\n", "`a ${b}`;", "`a ${b}`;"),
    ("python", "x = <CURSOR>\n", "compute(1)", "compute(1)"),
]


@pytest.mark.parametrize("language, src, raw, expected", CASES)
def test_markdown_fence_golden(candidate, language, src, raw, expected):
    assert strip_markdown_fence(candidate(language, src, raw)).text == expected


def test_an_untouched_candidate_is_the_same_object(candidate):
    c = candidate("python", "x = <CURSOR>\n", "compute(1)")
    assert strip_markdown_fence(c) is c
