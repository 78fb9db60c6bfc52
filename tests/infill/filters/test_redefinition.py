"""Rule under test: an answer does not define again what its block defines (a `def`/`class` name, an import); the
other arm of an `if`/`try`, another class, grouped definitions (`@overload`, `.setter`) and a name typed whole
before the cursor are left alone."""

import pytest

from diffill.infill.filters.redefinition import no_redefinition

CLASS = "class P:\n    def is_dir(self):\n        return True\n\n    d<CURSOR>\n\n    def name(self):\n        pass\n"
MODULE = "import os\nfrom .core import _BaseCommand, Group\n\n\ndef run(coro):\n    pass\n\n\n<CURSOR>\n"

# (language, document with cursor, raw answer, expected text)
CASES = [
    # a method the class has, above or below the cursor: cut before the name
    ("python", CLASS, "ef is_dir(self):", "ef "),
    ("python", CLASS, "ef name(self):", "ef "),
    ("python", CLASS, "ef stem(self):", "ef stem(self):"),  # a new name
    ("python", CLASS.replace("    d<CURSOR>", "    def is_<CURSOR>"), "dir(self):", ""),  # its name began before
    ("python", CLASS.replace("    d<CURSOR>", "    def is_dir<CURSOR>"), "(self, x):", "(self, x):"),  # typed whole
    # module level: functions, classes and imports already there
    ("python", MODULE, "def run(coro):", "def "),
    ("python", MODULE, "class run:", "class "),
    ("python", MODULE, "import os", "import "),
    ("python", MODULE, "from .core import _BaseCommand", "from .core import "),
    ("python", MODULE, "from .core import Group, _BaseCommand", "from .core import "),
    ("python", MODULE.replace("<CURSOR>", "from .core import _Ba<CURSOR>"), "seCommand", ""),
    ("python", MODULE, "import sys", "import sys"),
    ("python", MODULE, "from .core import _MultiCommand", "from .core import _MultiCommand"),
    ("python", MODULE, "from .other import Group", "from .other import Group"),
    ("python", MODULE, "def run_all(coros):", "def run_all(coros):"),
    # another block: another class, the other arm of an if or a try, a function body
    ("python", "class A:\n    def f(self):\n        pass\n\n\nclass B:\n    d<CURSOR>\n", "ef f(self):", "ef f(self):"),
    ("python", "try:\n    import json\nexcept ImportError:\n    im<CURSOR>\n", "port json", "port json"),
    ("python", "if X:\n    def f():\n        pass\nelse:\n    d<CURSOR>\n", "ef f():", "ef f():"),
    ("python", "import os\n\n\ndef g():\n    im<CURSOR>\n", "port os", "port os"),
    # definitions that come in groups
    (
        "python",
        "class A:\n    @property\n    def x(self):\n        pass\n\n    @x.setter\n    d<CURSOR>\n",
        "ef x(self, v):",
        "ef x(self, v):",
    ),  # fmt: skip
    ("python", "@overload\ndef f(x: int) -> int: ...\n\n\n<CURSOR>\n", "def f(x):", "def f(x):"),
    # not Python, or not a definition
    ("javascript", "function run() {}\n<CURSOR>\n", "function run() {}", "function run() {}"),
    ("python", MODULE, "run(coro)", "run(coro)"),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected"), CASES)
def test_redefinition_golden(candidate, language, src, raw, expected):
    assert no_redefinition(candidate(language, src, raw)).text == expected
