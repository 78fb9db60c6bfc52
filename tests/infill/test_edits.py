"""Inline edits: rename tracking, the region to rewrite, the canvas layout, and the engine's edit path."""

import re

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


@pytest.mark.parametrize(
    "language, text",
    [
        ("python", "def f():\n    total = 1\n    return count\n\n\ndef g():\n    count = 2\n    return count\n"),
        ("javascript", "function f() {\n  let total = 1;\n  return count;\n}\nfunction g() {\n  return count;\n}\n"),
        ("go", "package m\n\nfunc f() int {\n\ttotal := 1\n\treturn count\n}\n\nfunc g() int {\n\treturn count\n}\n"),
    ],
)
def test_rename_region_stops_at_the_end_of_the_function(language, text):
    """`count` in the next function is another variable: the region ends with the function being edited."""
    from diffill.infill.edits import scope_end

    doc = SyntaxDocument(text, language)
    cursor = text.index("total") + 5
    end = scope_end(doc, cursor)
    assert end is not None and text[:end].rstrip().endswith(("count", "count;", "}"))
    region = find_region(text, cursor, "count", limit_at=end)
    assert len(region.occurrences) == 1 and region.occurrences[0][0] < text.index("g()")
    assert len(find_region(text, cursor, "count").occurrences) >= 2  # without the scope: g's too
    assert scope_end(SyntaxDocument("count = 1\nx = count\n", "python"), 3) is None  # top level


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


def _engine_with_scores(prefer):
    """An engine whose model scores slots by `prefer(candidate_name, slot_index)` (higher = more believed)."""
    from tiny import random_net, tiny_config

    from diffill.infill.engine import CompletionEngine
    from diffill.model.tokenizer import CodeTokenizer

    tok = CodeTokenizer.train([SRC] * 50, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class ScoringModel:
        def __init__(self):
            self.net, self.config = net, net.config

        def prefill(self, prompt, cache):
            return 0

        def slot_logprobs(self, prompt, canvas, slots, cache=None, seed=0):
            return [prefer(tok.decode(canvas[a:b]), k) for k, (a, b) in enumerate(slots)]

    return CompletionEngine(ScoringModel(), tok)


@pytest.mark.parametrize(
    "prefer, expected",
    [
        (lambda name, k: 0.0 if name == "total" else -1.0, lambda src: src.replace("count", "total")),
        # the old name believed, but by less than the rename prior: the rename still wins
        (lambda name, k: 0.0 if name == "count" else -1.0, lambda src: src.replace("count", "total")),
        # the model is sure the second use keeps its name (say, another variable): only the first is renamed
        (lambda name, k: 0.0 if (name == "total") == (k == 0) else -5.0, None),
        (lambda name, k: 0.0 if name == "count" else -5.0, "no edit"),
    ],
)
def test_engine_edit_takes_the_name_the_model_believes_in_each_slot(prefer, expected):
    text = SRC.replace("count = 0", "total = 0")
    cursor = text.index("total") + 5
    eng = _engine_with_scores(prefer)
    result = eng.edit(SyntaxDocument(text, "python"), cursor, ("count", "total"), key="k")
    if expected == "no edit":
        assert result is None
        return
    assert result is not None and result.kind == "edit" and result.start == cursor
    edited = text[: result.start] + result.text + text[result.end :]
    if expected is None:
        region = text[cursor:]
        first = region.index("count")
        want = text[:cursor] + region[:first] + "total" + region[first + 5 :]
        assert edited == want
    else:
        assert edited == expected(SRC)


def test_a_region_too_long_for_one_canvas_renames_every_use_in_the_code():
    """Past `max_canvas` tokens the model cannot judge the slots: every use of the old name in the code is
    renamed (not the word in a string), as a rename-all would, rather than no edit at all."""
    src = SRC.replace("return count", 'return count  # "count"')
    text = src.replace("count = 0", "total = 0")
    cursor = text.index("total") + 5
    scored = []
    eng = _engine_with_scores(lambda name, k: scored.append(name) or (0.0 if name == "count" else -9.0))
    result = eng.edit(SyntaxDocument(text, "python"), cursor, ("count", "total"), key="k", max_canvas=8)
    edited = text[: result.start] + result.text + text[result.end :]
    assert scored == []  # no model pass
    assert edited == src.replace("count", "total").replace('# "total"', '# "count"')


def test_slot_logprobs_score_candidates_with_one_pass():
    import torch
    from tiny import random_model, tiny_config

    model = random_model(tiny_config(vocab_size=200, canvas_length=16))
    prompt, slots = [2, 10, 11], [(1, 3), (4, 5)]
    a = [20, 21, 22, 23, 24, 25, 1]
    b = [20, 40, 41, 23, 24, 25, 1]  # another candidate for the first slot only
    score_a = model.slot_logprobs(prompt, a, slots, seed=3)
    score_b = model.slot_logprobs(prompt, b, slots, seed=3)
    assert len(score_a) == 2 and all(v <= 0 for v in score_a)
    assert model.slot_logprobs(prompt, a, slots, seed=3) == score_a  # seeded
    # The slots are noised before the pass, so both candidates are read against the same distribution.
    assert score_a[1] == pytest.approx(score_b[1]) and score_a[0] != pytest.approx(score_b[0])
    gen = torch.Generator().manual_seed(3)
    noisy = list(a)
    for lo, hi in slots:
        noisy[lo:hi] = torch.randint(0, 200, (hi - lo,), generator=gen).tolist()
    logp = model.denoise_logits(prompt, noisy).log_softmax(-1)
    assert score_a[0] == pytest.approx(float((logp[1, 21] + logp[2, 22]) / 2), abs=1e-5)
    assert score_b[0] == pytest.approx(float((logp[1, 40] + logp[2, 41]) / 2), abs=1e-5)


def test_typing_a_new_word_is_not_a_rename():
    text = "x = 1\nprint(fo)\n"
    tracker = RenameTracker()
    cur = len("x = 1\n")
    for ch in "foo":
        before, text = text, text[:cur] + ch + text[cur:]
        tracker.observe(before, text, cur)
        cur += 1
    assert tracker.rename_at(text, cur) is None


@pytest.mark.parametrize(
    "language, text, typed, old, kept",
    [
        # code uses of the old name are renamed, its words in a docstring and a comment are not
        (
            "python",
            'def f(tok):\n    """Send tok to the hub."""\n    # tok is a token\n    return tok\n',
            "tok",
            "to",
            None,  # `to` is no name anywhere below: nothing to rename
        ),
        (
            "python",
            'def f(count):\n    total = 0\n    """count words"""\n    # count\n    return count + 1\n',
            "total",
            "count",
            ["count"],  # the return's, not the docstring's or the comment's
        ),
        # a keyword lengthened is no rename (`in` -> `inf`), nor a word becoming one (`tr` -> `try`)
        ("python", "for x in xs:\n    inf\n    y = x in xs\n", "inf", "in", None),
        ("python", "def f(tr):\n    try\n    return tr\n", "try", "tr", None),
        # the start of a name the file has: the user is typing it (`func` -> `funct`, with `functools` around)
        ("python", "import functools\ndef f(func):\n    funct\n    return func\n", "funct", "func", None),
        # shortening a name is a rename even though the old, longer name still starts with the new one
        ("python", "count = 1\nprint(counter)\n", "count", "counter", ["counter"]),
        ("javascript", "let total = 1;\n// count me\nreturn count;\n", "total", "count", ["count"]),
    ],
)
def test_rename_touches_names_in_the_code_only(language, text, typed, old, kept):
    from diffill.infill.edits import names_only

    doc = SyntaxDocument(text, language)
    cursor = text.index(typed) + len(typed)
    region = find_region(text, cursor, old)
    assert region is not None  # the text search alone finds the old word below
    named = names_only(doc, region, (cursor - len(typed), cursor), old)
    if kept is None:
        assert named is None
        return
    assert [text[lo:hi] for lo, hi in named.occurrences] == kept
    assert text[named.occurrences[-1][1] : named.end].count("\n") == 0  # the region ends on the last use's line


def test_a_word_typed_in_a_docstring_renames_nothing():
    from diffill.infill.edits import names_only

    text = 'def f(names):\n    """Take names. Retur\n    names go here"""\n    return names\n'
    doc = SyntaxDocument(text, "python")
    cursor = text.index("Retur") + 5
    region = find_region(text, cursor, "Retu")
    assert region is None or names_only(doc, region, (cursor - 5, cursor), "Retu") is None
    cursor = text.index("names.") + 5  # `names` typed in the docstring; the code below uses `names`
    assert names_only(doc, find_region(text, cursor, "names"), (cursor - 5, cursor), "name") is None


def test_engine_edit_leaves_prose_alone_whatever_the_model_says():
    """The bench's keystroke after opening a file (`to` -> `tok`) looked like a rename and rewrote the docstring's
    `to` into `tok`: the edit path only renames names."""
    text = 'def f():\n    tok\n    """Send to the hub, to the end."""\n    return 1\n'
    cursor = text.index("tok") + 3
    eng = _engine_with_scores(lambda name, k: 0.0 if name == "tok" else -9.0)
    assert eng.edit(SyntaxDocument(text, "python"), cursor, ("to", "tok"), key="k") is None


def test_a_rename_reads_names_not_keyword_argument_names_or_strings():
    from diffill.infill.edits import is_variable

    text = 'def f(count):\n    g(count=count, label="count")\n    return count\n'
    doc = SyntaxDocument(text, "python")
    spans = [(m.start(), m.end()) for m in re.finditer("count", text)]
    assert [is_variable(doc, a, b) for a, b in spans] == [True, False, True, False, True]


def test_a_run_of_word_characters_too_long_for_a_name_is_no_word():
    """A base64 blob or a minified identifier run is no name being renamed, and each keystroke must not walk it."""
    from diffill.infill.edits import MAX_NAME_CHARS, _word_at

    assert _word_at("x = some_name + 1", 6) == (4, 13)
    assert _word_at("a" * MAX_NAME_CHARS, 10) == (0, MAX_NAME_CHARS)
    blob = "data = '" + "QUJD" * 250_000 + "'"
    assert _word_at(blob, len(blob) // 2) == (len(blob) // 2, len(blob) // 2)
