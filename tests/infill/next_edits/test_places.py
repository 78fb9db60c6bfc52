"""Where a change applies again (infill.next_edits.places, shape, scope)."""

from __future__ import annotations

from diffill.infill.document import SyntaxDocument
from diffill.infill.next_edits.change import core_of
from diffill.infill.next_edits.places import places
from diffill.infill.next_edits.scope import bound_locally
from diffill.infill.next_edits.shape import shape


def _places(text: str, before_line: str, after_line: str, language: str = "python") -> list[str]:
    """The lines of `text` where the change of `before_line` into `after_line` applies (shape as at its first use)."""
    change = core_of(before_line, after_line)
    doc = SyntaxDocument(text, language)
    at = text.index(before_line) + change.offset
    origin = shape(doc, at, at + len(change.old))
    found = places(doc, change, {origin}, (0, 0))
    return [text[text.rfind("\n", 0, s) + 1 : text.find("\n", e)] for s, e in found]


def test_whole_tokens_with_the_same_anchors():
    text = "a = hashlib.sha1(k)\nb = hashlib.sha10(k)\nc = hashlib.sha1(k)\nd = [hashlib.sha1]\n"
    assert _places(text, "a = hashlib.sha1(k)\n", "a = _lazy_sha1(k)\n") == [
        "a = hashlib.sha1(k)",
        "c = hashlib.sha1(k)",
    ]


def test_the_syntactic_shape_must_agree():
    text = "def f(self, message):\n    pass\n\nclass E:\n    def g(self):\n        Base.__init__(self, message)\n"
    # `self, ` removed from a call's arguments is not `self, ` removed from a function's parameters
    assert _places(text, "        Base.__init__(self, message)\n", "        Base.__init__(message)\n") == [
        "        Base.__init__(self, message)"
    ]


def test_a_word_in_a_comment_is_not_the_name_in_code():
    text = "x = old_name(1)  # old_name( is slow\ny = old_name(2)\n"
    found = _places(text, "y = old_name(2)\n", "y = new_name(2)\n")
    assert found == ["x = old_name(1)  # old_name( is slow", "y = old_name(2)"]
    change = core_of("y = old_name(2)\n", "y = new_name(2)\n")
    doc = SyntaxDocument(text, "python")
    code, comment = text.index("old_name"), text.index("old_name", text.index("#"))
    assert shape(doc, code, code + 8) != shape(doc, comment, comment + 8)
    assert change is not None


def test_a_suffix_goes_to_lines_of_the_same_shape():
    # the same first word, indentation and last token: not a `return`, not a line deeper in
    text = "def f():\n    raise E(x)\n    raise E(y)\n    return E(z)\n    if a:\n        raise E(w)\n"
    assert _places(text, "    raise E(x)\n", "    raise E(x) from None\n") == ["    raise E(x)", "    raise E(y)"]


def test_locals_are_found_however_deep_the_declarator():
    c = "static PyObject*\nescape(PyUnicodeObject *in)\n{\n    Py_INCREF(in);\n}\nint g(void) { return in; }\n"
    doc = SyntaxDocument(c, "c")
    assert bound_locally(doc, c.index("Py_INCREF(in") + 10, "in")
    assert not bound_locally(doc, c.index("return in") + 7, "in")
    py = "def f(a, *, value=1):\n    return value\n\ndef g():\n    for item in x:\n        return item, value\n"
    doc = SyntaxDocument(py, "python")
    assert bound_locally(doc, py.index("return value") + 7, "value")
    assert bound_locally(doc, py.index("item, value"), "item")
    assert not bound_locally(doc, py.index("item, value") + 6, "value")
