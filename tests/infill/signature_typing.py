"""Typing into a document key by key as an editor sends changes, with a signature tracker watching: what the
signature and call-site tests start from."""

from diffill.infill.document import SyntaxDocument
from diffill.infill.signatures import SignatureTracker


def type_into(text: str, at: int, typed: str, language: str = "python", delete: int = 0):
    """Types `typed` (after deleting `delete` characters) at `at` key by key, as an editor sends changes."""
    doc = SyntaxDocument(text, language)
    tracker = SignatureTracker()
    for _ in range(delete):
        was = tracker.before_change(doc, at - 1)
        doc.replace_range(at - 1, at, "")
        at -= 1
        tracker.observe(was, doc, at)
    for ch in typed:
        was = tracker.before_change(doc, at)
        doc.replace_range(at, at, ch)
        tracker.observe(was, doc, at)
        at += 1
    return doc, tracker, at


PY = """def fetch(url, retries):
    if retries:
        return fetch(url, retries - 1)
    return get(url)


def main(url, timeout):
    data = fetch(url, 3)
    again = fetch(url, retries=2)
    return data


def other(url):
    return fetch(url, 1)
"""
