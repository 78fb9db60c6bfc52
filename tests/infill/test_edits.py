"""Inline edits: rename tracking, the region to rewrite, the canvas layout, and the engine's edit path."""

import pytest

from diffill.infill.document import SyntaxDocument
from diffill.infill.edits import RenameTracker, apply_fill, canvas_layout, find_region


def type_rename(text: str, old_at: int, old: str, new: str) -> tuple[str, RenameTracker, int]:
    """Deletes `old` at `old_at` with backspaces, then types `new` char by char, as an editor sends it."""
    tracker = RenameTracker()
    cur = old_at + len(old)
    for _ in old:
        before, text = text, text[: cur - 1] + text[cur:]
        cur -= 1
        tracker.observe(before, text, cur)
    for ch in new:
        before, text = text, text[:cur] + ch + text[cur:]
        tracker.observe(before, text, cur)
        cur += 1
    return text, tracker, cur


SRC = "def f(items):\n    count = 0\n    for x in items:\n        count += x\n    return count\n"


def test_rename_tracked_through_keystrokes():
    text, tracker, cur = type_rename(SRC, SRC.index("count"), "count", "total")
    assert text.startswith("def f(items):\n    total = 0")
    assert tracker.rename_at(text, cur) == ("count", "total")
    assert tracker.rename_at(text, cur - 1) is None  # not at the end of the identifier


def test_partial_retyping_of_a_name():
    # Appending to a name is a rename too: count -> counter
    tracker = RenameTracker()
    at = SRC.index("count") + 5
    text = SRC
    for ch in "er":
        before, text = text, text[:at] + ch + text[at:]
        tracker.observe(before, text, at)
        at += 1
    assert tracker.rename_at(text, at) == ("count", "counter")


def test_edit_elsewhere_ends_the_session():
    text, tracker, cur = type_rename(SRC, SRC.index("count"), "count", "total")
    before, text = text, text[:cur] + " " + text[cur:]
    tracker.observe(before, text, cur)
    assert tracker.rename_at(text, cur + 1) is None


@pytest.mark.parametrize(
    "text, old, expected",
    [
        (SRC.replace("count = 0", "total = 0"), "count", ["        count += x", "    return count"]),
        ("a = 1\nb = a + a\nc = aa\n", "a", None),  # cursor after the first line: only line 2 uses `a`
    ],
)
def test_find_region(text, old, expected):
    cursor = text.index("\n")
    if old == "a":
        cursor = 1
        region = find_region(text, cursor, old)
        assert [text[lo:hi] for lo, hi in region.occurrences] == ["a", "a"]
        assert text[region.start : region.end] == " = 1\nb = a + a"
        return
    cursor = text.index("total") + 5
    region = find_region(text, cursor, old)
    assert text[region.start : region.end].split("\n")[-2:] == expected
    assert find_region(text, cursor, "nothere") is None


def test_canvas_layout_pins_everything_but_the_slots():
    text = SRC.replace("count = 0", "total = 0")
    cursor = text.index("total") + 5
    region = find_region(text, cursor, "count")
    encode = lambda s: [ord(c) for c in s]  # a character tokenizer keeps the test readable
    new_ids = encode("total")
    ids, pinned, slots = canvas_layout(text, region, new_ids, encode)
    assert len(slots) == 2 and all(b - a == 5 for a, b in slots)
    assert all(not pinned[i] for a, b in slots for i in range(a, b))
    kept = "".join(chr(t) for t, p in zip(ids, pinned, strict=True) if p)
    assert kept == text[region.start : region.end].replace("count", "")
    assert apply_fill(text, region, ["total", "total"]) == text[region.start : region.end].replace("count", "total")


def test_engine_edit_plumbing_with_a_model_that_fills_the_slots():
    from tiny import random_net, tiny_config

    from diffill.infill.engine import CompletionEngine
    from diffill.model.tokenizer import CodeTokenizer

    tok = CodeTokenizer.train([SRC] * 50, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class PerfectModel:
        """Answers with the pinned canvas and the new name in every open slot: tests the layout round trip."""

        def __init__(self, new_ids):
            self.new_ids, self.net, self.config = new_ids, net, net.config

        def generate(self, prompt, max_new_tokens, pinned, trim=False, **kw):
            out, i = [], 0
            while i < max_new_tokens:
                if i in pinned:
                    out.append(pinned[i])
                    i += 1
                else:
                    out.extend(self.new_ids)
                    i += len(self.new_ids)
            return out

    text = SRC.replace("count = 0", "total = 0")
    cursor = text.index("total") + 5
    eng = CompletionEngine(PerfectModel(tok.encode("total")), tok)
    result = eng.edit(SyntaxDocument(text, "python"), cursor, ("count", "total"), key="k")
    assert result is not None and result.kind == "edit"
    assert result.start == cursor
    assert text[: result.start] + result.text + text[result.end :] == SRC.replace("count", "total")


def test_typing_a_new_word_is_not_a_rename():
    text = "x = 1\nprint(fo)\n"
    tracker = RenameTracker()
    cur = len("x = 1\n")
    for ch in "foo":
        before, text = text, text[:cur] + ch + text[cur:]
        tracker.observe(before, text, cur)
        cur += 1
    assert tracker.rename_at(text, cur) is None
