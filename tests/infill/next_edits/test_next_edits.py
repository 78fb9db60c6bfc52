"""The next edits a document's changes imply (infill.next_edits.NextEdits)."""

from __future__ import annotations

from next_edit_sample import SIGNING as SOURCE

from diffill.infill.document import SyntaxDocument
from diffill.infill.next_edits import Edit, NextEdits, apply


class Typist:
    """A document the user edits line by line, with its next edits asked after each edit."""

    def __init__(self, text: str, language: str = "python"):
        self.doc = SyntaxDocument(text, language)
        self.next = NextEdits()

    def edit(self, line: int, new_line: str) -> list[str]:
        text = self.doc.text
        lines = text.splitlines(keepends=True)
        start = sum(map(len, lines[:line]))
        before = lines[line]
        lines[line] = new_line
        was, self.doc = self.doc, SyntaxDocument("".join(lines), self.doc.language)
        self.proposals = self.next.propose(was, self.doc, Edit(start, before, new_line))
        return [self._line_of(p.start) for p in self.proposals]

    def _line_of(self, offset: int) -> str:
        text = self.doc.text
        return text[text.rfind("\n", 0, offset) + 1 : text.find("\n", offset)]


def test_a_name_replaced_is_proposed_at_its_other_places_of_the_same_shape():
    t = Typist(SOURCE)
    assert t.edit(4, "    mac = _lazy_sha1(key)\n") == ["    mac = hashlib.sha1(key)"]  # not `return hashlib.sha1(`
    assert [p.text for p in t.proposals] == ["_lazy_sha1"]
    made = apply(t.doc.text, t.proposals)
    assert made.count("mac = _lazy_sha1(key)") == 2 and "return hashlib.sha1(secret)" in made


def test_a_made_proposal_is_no_longer_proposed_and_an_unrelated_edit_keeps_the_others():
    t = Typist(SOURCE + "\n\ndef more(key):\n    mac = hashlib.sha1(key)\n")
    assert len(t.edit(4, "    mac = _lazy_sha1(key)\n")) == 2
    assert t.edit(9, "    mac = _lazy_sha1(key)\n") == ["    mac = hashlib.sha1(key)"]  # the one left
    assert t.edit(13, "def derive(secret, n):\n") == ["    mac = hashlib.sha1(key)"]  # still carried
    assert t.edit(len(t.doc.text.splitlines()) - 1, "    mac = _lazy_sha1(key)\n") == []


def test_a_local_renamed_is_not_carried_to_another_functions_local():
    t = Typist(SOURCE)
    assert t.edit(5, "    return mac.digest(value)\n") == []  # `value` is a parameter of sign: a rename's business
    assert t.edit(4, "    digest = hashlib.sha1(key)\n") == []  # an assignment's target


def test_a_change_that_is_no_name_is_carried_once_the_user_made_it_twice():
    text = "def f(a):\n    raise E(a)\n\n\ndef g(b):\n    raise E(b)\n\n\ndef h(c):\n    raise E(c)\n"
    t = Typist(text)
    assert t.edit(1, "    raise E(a) from None\n") == []  # once: as likely a local fix
    assert t.edit(5, "    raise E(b) from None\n") == ["    raise E(c)"]
    assert [p.text for p in t.proposals] == [" from None"]


def test_digits_and_single_letters_are_local_fixes():
    t = Typist("x = f(1)\ny = f(1)\nz = g(a)\nw = g(a)\n")
    assert t.edit(0, "x = f(2)\n") == []
    assert t.edit(2, "z = g(b)\n") == []


def test_a_proposal_that_adds_a_parse_error_is_never_offered():
    assert Typist("a = old(1)\nb = old(2)\n").edit(0, "a = new(1)\n") == ["b = old(2)"]
    assert Typist("a = old(1)\nb = old(2)\n").edit(0, "a = del(1)\n") == []  # (the edit's own error aside)


def test_a_methods_name_after_its_object_is_carried_once_made_twice():
    text = "a = x.digest()\nb = y.digest()\nc = z.digest()\n"
    t = Typist(text)
    assert t.edit(0, "a = x.hexdigest()\n") == []  # a method renamed at one call: as often at some calls only
    assert t.edit(1, "b = y.hexdigest()\n") == ["c = z.digest()"]


def test_a_word_of_the_language_itself_is_never_carried():
    go = "package p\n\nfunc f() {\n\ta.Sorted = true\n\tb.Sorted = true\n\tc.Sorted = true\n\td.Sorted = true\n}\n"
    t = Typist(go, "go")
    assert t.edit(3, "\ta.Sorted = defaultSorting\n") == []
    assert t.edit(4, "\tb.Sorted = defaultSorting\n") == []  # made twice: still the language's `true` elsewhere
    named = go.replace("true", "enabled")
    t = Typist(named, "go")
    t.edit(3, "\ta.Sorted = defaultSorting\n")
    assert t.edit(4, "\tb.Sorted = defaultSorting\n") == ["\tc.Sorted = enabled", "\td.Sorted = enabled"]
    t = Typist("def f(x: str) -> str:\n    return x\n\n\ndef g(y: str) -> str:\n    return y\n")
    assert t.edit(0, "def f(x: Text) -> str:\n") == []  # a builtin's name, not a name of the program


def test_places_above_the_edit_were_passed_and_are_not_proposed():
    t = Typist(SOURCE + "\n\ndef more(key):\n    mac = hashlib.sha1(key)\n")
    assert t.edit(9, "    mac = _lazy_sha1(key)\n") == ["    mac = hashlib.sha1(key)"]  # more's, not sign's
    assert t.proposals[0].start > t.doc.text.index("def more")
    assert t.edit(4, "    mac = _lazy_sha1(key)\n") == ["    mac = hashlib.sha1(key)"]  # going back up: below again
