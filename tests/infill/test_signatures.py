"""Signatures: a function's parameter list read from the tree, and a session that remembers it as it was before
the user began editing it."""

from signature_typing import PY, type_into

from diffill.infill.document import SyntaxDocument
from diffill.infill.signatures import signature_at


def test_session_starts_in_a_parameter_list_and_ends_outside_it():
    doc, tracker, at = type_into(PY, PY.index("retries)") + len("retries"), ", t")
    assert tracker.session is not None and tracker.session.name == "fetch"
    assert [p.name for p in tracker.session.original] == ["url", "retries"]  # as it was before typing
    body = doc.text.index("return get")
    was = tracker.before_change(doc, body)
    doc.replace_range(body, body, "x")
    tracker.observe(was, doc, body)
    assert tracker.session is None


def test_signature_at_reads_defaults_keyword_only_and_variadics():
    src = "class A:\n    def f(self, a, b=1, *args, c, d=2, **kw):\n        pass\n"
    doc = SyntaxDocument(src, "python")
    sig = signature_at(doc, src.index("a, b"))
    assert sig.name == "f" and sig.receiver
    assert [(p.name, p.index, p.has_default, p.keyword_only) for p in sig.params] == [
        ("a", 0, False, False),
        ("b", 1, True, False),
        ("args", -1, False, False),
        ("c", -1, False, True),
        ("d", -1, True, True),
        ("kw", -1, False, True),
    ]
    assert signature_at(doc, src.index("pass")) is None
