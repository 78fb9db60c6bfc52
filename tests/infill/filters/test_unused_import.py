"""Rule under test: an import answer binds names the document uses; a name it never mentions is cut before (or the
answer dropped when that name began before the cursor). `__future__`, star imports, modules that re-export what
they import and names used anywhere in the document (code, `__all__`) are left alone."""

import pytest

from diffill.infill.filters.unused_import import imports_used

USES = "import os\n<CURSOR>\n\n\ndef main():\n    traceback.print_exc()\n    return os.getcwd(), Group(), G2\n"
REEXPORT = "from ._a import One\nfrom ._a import Two\nfrom ._b import Three\n<CURSOR>\n\n\ndef f():\n    pass\n"

# (language, document with cursor, raw answer, expected text)
CASES = [
    # the module or name the code below uses: kept
    ("python", USES, "import traceback", "import traceback"),
    ("python", USES, "from .core import Group", "from .core import Group"),
    ("python", USES, "from .core import Group2 as G2", "from .core import Group2 as G2"),
    ("python", USES.replace("<CURSOR>", "im<CURSOR>"), "port traceback", "port traceback"),
    # one the document never mentions: cut before it, dropped when it began before the cursor
    ("python", USES, "import sys", "import "),
    ("python", USES.replace("<CURSOR>", "im<CURSOR>"), "port sys", "port "),
    ("python", USES, "from .core import Group, Command", "from .core import Group, "),
    ("python", USES, "from .core import Command, Group", "from .core import "),
    # a name begun with a letter or two is still a guess; with three it is the name the user is typing
    ("python", USES.replace("<CURSOR>", "from .core import Co<CURSOR>"), "mmand", ""),
    ("python", USES.replace("<CURSOR>", "from .core import Com<CURSOR>"), "mand", "mand"),
    ("python", USES.replace("<CURSOR>", "from .core import Com<CURSOR>"), "mand, Command2", "mand, "),
    ("python", USES, "import os.path, sys", "import os.path, "),
    # an alias of what the user typed is theirs to choose (a new file's imports come first)
    ("python", USES.replace("<CURSOR>", "import numpy as <CURSOR>"), "np", "np"),
    ("python", USES.replace("<CURSOR>", "import numpy a<CURSOR>"), "s np", "s np"),
    ("python", USES.replace("<CURSOR>", "import nu<CURSOR>"), "mpy as np", ""),  # the module itself is a guess
    # a name imported on another line is not a use of it
    ("python", "import sys\n<CURSOR>\n", "import sys", "import "),
    # named in __all__ (a re-export), or a module that re-exports most of what it imports
    ("python", USES + '__all__ = ["Command"]\n', "from .core import Command", "from .core import Command"),
    ("python", REEXPORT, "from ._b import Four", "from ._b import Four"),
    # left alone: __future__, star imports, not an import, not Python
    ("python", USES, "from __future__ import annotations", "from __future__ import annotations"),
    ("python", USES, "from .core import *", "from .core import *"),
    ("python", USES, "x = sys.argv", "x = sys.argv"),
    ("javascript", "<CURSOR>\n", "import sys", "import sys"),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected"), CASES)
def test_unused_import_golden(candidate, language, src, raw, expected):
    assert imports_used(candidate(language, src, raw)).text == expected
