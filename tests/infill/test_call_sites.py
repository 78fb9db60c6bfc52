"""Call sites: a parameter added to or dropped from a function's list is carried to the calls below.

Golden cases: (document before, the change typed into the parameter list, expected document after the edit).
"""

import pytest
from signature_typing import PY, type_into

from diffill.infill.call_sites import follow_signature


def follow(doc, tracker, at):
    change = tracker.change_at(doc, at)
    if change is None:
        return None
    found = follow_signature(doc, at, change)
    if found is None:
        return None
    start, end, new = found
    assert start == at  # the edit starts at the cursor, as inline completions do
    return doc.text[:start] + new + doc.text[end:]


def test_added_parameter_is_passed_on_where_the_caller_has_it():
    doc, tracker, at = type_into(PY, PY.index("retries)") + len("retries"), ", timeout")
    after = follow(doc, tracker, at)
    assert after == PY.replace("def fetch(url, retries)", "def fetch(url, retries, timeout)").replace(
        "fetch(url, retries - 1)",
        "fetch(url, retries - 1, timeout)",  # recursive call: its own parameter
    ).replace("fetch(url, 3)", "fetch(url, 3, timeout)").replace(
        "fetch(url, retries=2)",
        "fetch(url, retries=2, timeout=timeout)",  # after a keyword: by keyword
    )  # other() has no timeout to pass: its call is left alone


def test_added_parameter_with_a_default_goes_by_position_unless_keywords_are_used():
    """As real code passes them (measured on the stdlib cases of `bench edits`)."""
    doc, tracker, at = type_into(PY, PY.index("retries)") + len("retries"), ", timeout=None")
    after = follow(doc, tracker, at)
    assert "fetch(url, 3, timeout)" in after
    assert "fetch(url, retries - 1, timeout)" in after
    assert "fetch(url, retries=2, timeout=timeout)" in after
    assert "fetch(url, 1)" in after


def test_one_argument_a_line_layout_is_kept():
    src = "def make(a, b):\n    c = 1\n    return make(\n        a,\n        b,\n    ) + make(a,\n             b)\n"
    doc, tracker, at = type_into(src, src.index("b)") + 1, ", c")
    after = follow(doc, tracker, at)
    assert "make(\n        a,\n        b,\n        c,\n    )" in after
    assert "make(a,\n             b,\n             c)" in after


def test_added_parameter_in_the_middle_goes_in_its_slot():
    doc, tracker, at = type_into(PY, PY.index("url, retries)") + len("url"), ", timeout")
    after = follow(doc, tracker, at)
    assert "fetch(url, timeout, 3)" in after and "fetch(url, timeout, retries - 1)" in after
    assert "fetch(url, timeout, retries=2)" in after


def test_removed_parameter_is_dropped_from_the_calls():
    at = PY.index(", retries)") + len(", retries")
    doc, tracker, at = type_into(PY, at, "", delete=len(", retries"))
    after = follow(doc, tracker, at)
    assert "def fetch(url):" in after
    assert "return fetch(url)\n" in after and "data = fetch(url)\n" in after and "again = fetch(url)\n" in after
    assert after.count("fetch(url)") == 5  # def, the recursive call, main's two calls, other's call


def test_renamed_parameter_is_left_to_the_rename_tracker():
    at = PY.index("retries)") + len("retries")
    doc, tracker, at = type_into(PY, at, "count", delete=len("retries"))
    assert tracker.change_at(doc, at) is None


def test_method_calls_skip_self_and_unreadable_calls_are_left_alone():
    src = """class Client:
    def send(self, data):
        return self.send(data)

    def flush(self, data, block):
        self.send(data)
        self.send(*data)
"""
    doc, tracker, at = type_into(src, src.index("data):") + len("data"), ", block")
    after = follow(doc, tracker, at)
    assert "return self.send(data, block)" in after  # its own new parameter
    assert "        self.send(data, block)\n" in after  # flush has a block to pass
    assert "self.send(*data)" in after  # a splat: positions unknown


def test_no_call_needs_a_change_gives_no_edit():
    src = "def f(a):\n    return a\n\n\ndef g():\n    return f(1)\n"
    doc, tracker, at = type_into(src, src.index("a)"), "b, ")
    assert tracker.change_at(doc, at) is not None
    assert follow(doc, tracker, at) is None  # g has no b


@pytest.mark.parametrize(
    "language, src, at_after, typed, expected",
    [
        (
            "javascript",
            "function load(path) {\n  return load(path);\n}\nfunction main(path, opts) {\n  load(path);\n}\n",
            "load(path",
            ", opts",
            "function load(path, opts) {\n  return load(path, opts);\n}\nfunction main(path, opts) {\n  load(path, opts);\n}\n",
        ),
        (
            "go",
            "package m\n\nfunc load(path string) int {\n\treturn 1\n}\n\nfunc main2(path string, n int) {\n\tload(path)\n}\n",
            "load(path string",
            ", n int",
            "package m\n\nfunc load(path string, n int) int {\n\treturn 1\n}\n\nfunc main2(path string, n int) {\n\tload(path, n)\n}\n",
        ),
        (
            "typescript",  # a method: this.load follows, other.load may be another class's
            "class A {\n  load(path: string) {\n    return 1;\n  }\n  run(path: string, o: number) {\n"
            "    this.load(path);\n    other.load(path);\n  }\n}\n",
            "load(path: string",
            ", o: number",
            "class A {\n  load(path: string, o: number) {\n    return 1;\n  }\n  run(path: string, o: number) {\n"
            "    this.load(path, o);\n    other.load(path);\n  }\n}\n",
        ),
        (
            "rust",
            "fn load(path: &str) -> i32 {\n    1\n}\nfn run(path: &str, n: i32) {\n    load(path);\n}\n",
            "load(path: &str",
            ", n: i32",
            "fn load(path: &str, n: i32) -> i32 {\n    1\n}\nfn run(path: &str, n: i32) {\n    load(path, n);\n}\n",
        ),
        (
            "java",  # java methods are called bare or through this
            "class A {\n  int load(String p) {\n    return 1;\n  }\n  void run(String p, int n) {\n    load(p);\n"
            "    this.load(p);\n  }\n}\n",
            "load(String p",
            ", int n",
            "class A {\n  int load(String p, int n) {\n    return 1;\n  }\n  void run(String p, int n) {\n"
            "    load(p, n);\n    this.load(p, n);\n  }\n}\n",
        ),
        (
            "c",
            "int load(char *p) {\n  return 1;\n}\nvoid run(char *p, int n) {\n  load(p);\n}\n",
            "load(char *p",
            ", int n",
            "int load(char *p, int n) {\n  return 1;\n}\nvoid run(char *p, int n) {\n  load(p, n);\n}\n",
        ),
        (
            "lua",
            "local function load(p)\n  return 1\nend\nlocal function run(p, n)\n  load(p)\nend\n",
            "load(p",
            ", n",
            "local function load(p, n)\n  return 1\nend\nlocal function run(p, n)\n  load(p, n)\nend\n",
        ),
    ],
)
def test_other_languages_pass_new_parameters_by_position(language, src, at_after, typed, expected):
    doc, tracker, at = type_into(src, src.index(at_after) + len(at_after), typed, language)
    assert follow(doc, tracker, at) == expected


def test_a_keyword_of_another_call_is_no_value_to_pass_on():
    src = "def f(a):\n    return a\n\n\ndef g(x):\n    h(x, timeout=5)\n    return f(x)\n"
    doc, tracker, at = type_into(src, src.index("a)"), "timeout, ")
    assert tracker.change_at(doc, at) is not None
    assert follow(doc, tracker, at) is None  # g never had a timeout of its own
