"""Lines copied from the code around, found by text alone (infill.sources.line_search)."""

from diffill.infill.sources.line_search import LineCopy, can_copy_next_line, could_match, line_copies, next_line_copies


def at_cursor(text: str) -> tuple[str, int]:
    offset = text.index("|")
    return text[:offset] + text[offset + 1 :], offset


def test_the_rest_of_a_line_that_starts_the_same_is_a_candidate():
    text, offset = at_cursor(
        "def f(x):\n    logger = logging.getLogger(__name__)\n    return x\n\ndef g(y):\n    logger = logging.get|\n"
    )
    assert line_copies(text, offset) == [LineCopy("Logger(__name__)", len("logger = logging.get"), True, 1)]


def test_longer_matches_rank_first_then_more_lines_then_the_nearest():
    text, offset = at_cursor(
        "a.assert_called_with(1)\n"
        "self.assertEqual(x, 1)\n"
        "self.assertEqual(y, 2)\n"
        "b.assert_called_with(1)\n"
        "self.assertEqual(y, 2)\n"
        "self.assertTrue(z)\n"
        "self.assert|\n"
    )
    copies = line_copies(text, offset, min_key=5)
    rests = [c.rest for c in copies]
    # `self.assert` matches all three whole lines; `(y, 2)` continues two of them; `True(z)` is nearer than `(x, 1)`
    assert rests[:3] == ["Equal(y, 2)", "True(z)", "Equal(x, 1)"]
    assert all(c.whole_line for c in copies[:3])
    assert rests[3] == "_called_with(1)"  # only `assert` matches there
    assert not copies[3].whole_line


def test_a_match_in_the_middle_of_a_line_is_not_a_whole_line_match():
    text, offset = at_cursor("x = foo.bar(1)\ny = foo.bar(2)\n    foo.b|\n")
    copies = line_copies(text, offset, min_key=5)
    assert {c.rest for c in copies} == {"ar(1)", "ar(2)"} and not any(c.whole_line for c in copies)
    assert line_copies(text, offset) == []  # by default 8 typed characters must match (shorter: the n-gram model's)


def test_lines_below_the_cursor_count_too_and_the_current_rest_is_left_out():
    text, offset = at_cursor(
        "def f():\n    return compute|(a)\n\ndef g():\n    return compute(a)\n    return compute(b)\n"
    )
    assert [c.rest for c in line_copies(text, offset)] == ["(b)"]  # `(a)` is already there


def test_short_typed_text_and_no_match_give_nothing():
    text, offset = at_cursor("x=foo(1)\nx=fo|\n")
    assert line_copies(text, offset) == []  # `x=fo` is four characters: too short to trust
    text, offset = at_cursor("x = foo(1)\nprint(value|\n")
    assert line_copies(text, offset) == []
    text, offset = at_cursor("|")
    assert line_copies(text, offset) == []


def test_other_texts_give_candidates_and_this_file_wins_a_tie():
    other = "def g():\n    logger = logging.getLogger('other')\n    client = make_client(timeout=5)\n"
    text, offset = at_cursor("def f():\n    client = make_client(timeout=3)\n    client = make_|\n")
    copies = line_copies(text, offset, [other])
    assert [c.rest for c in copies] == ["client(timeout=3)", "client(timeout=5)"]  # same evidence: this file first
    text, offset = at_cursor("def h():\n    logger = logging.get|\n")
    assert [c.rest for c in line_copies(text, offset, [other])] == ["Logger('other')"]
    assert [c.count for c in line_copies(text, offset, [other, other])] == [2]  # more texts agreeing: a higher count


def brute_force(text: str, offset: int, limit: int = 4) -> list[str]:
    """Every match of the shortest key, ranked by the longest agreement before it (a text within the search
    window): the definition that the progressive search (long keys first) must agree with on its top ones."""
    line_start = text.rfind("\n", 0, offset) + 1
    typed = text[line_start:offset].lstrip()
    line_end = text.find("\n", offset)
    others = text[:line_start] + text[line_end:]
    best: dict[str, int] = {}
    for i in range(len(others)):
        if others.startswith(typed[-5:], i):
            n = 0
            while n < len(typed) and i + 5 - n > 0 and others[i + 5 - n - 1] == typed[len(typed) - n - 1]:
                n += 1
            end = others.find("\n", i + 5)
            rest = others[i + 5 : end if end >= 0 else None].rstrip()
            if rest and rest != text[offset:line_end].rstrip():
                best[rest] = max(best.get(rest, 0), n)
    lengths = sorted(set(best.values()), reverse=True)
    top = [r for r in best if best[r] in lengths[:1]]
    return sorted(top)


def test_the_longest_matches_agree_with_a_brute_force_search():
    import random

    rng, long_keys = random.Random(3), 0
    words = ["self.", "assert", "Equal", "(x", ", y)", "get", "_name", "logger", " = ", "client.", "call("]
    lines = ["    " + "".join(rng.choice(words) for _ in range(rng.randint(2, 6))) for _ in range(150)]
    for trial in range(40):
        i = rng.randrange(10, len(lines))
        cut = rng.randrange(4 + 5, max(10, len(lines[i])))
        text = "\n".join(lines[:i] + [lines[i][:cut]] + lines[i + 1 :])
        offset = len("\n".join(lines[:i])) + 1 + cut
        if len(lines[i][:cut].lstrip()) < 5:
            continue
        expected = brute_force(text, offset)
        got = line_copies(text, offset, min_key=5, limit=100, rename=False)
        longest = [c.rest for c in got if got and c.key_length == got[0].key_length]
        assert sorted(longest) == expected, (trial, lines[i][:cut])
        long_keys += got[0].key_length > 5 if got else 0
    assert long_keys >= 5  # the longer keys were exercised, not only the shortest


def test_a_common_key_looks_at_a_bounded_number_of_matches_this_file_first(monkeypatch):
    import diffill.infill.sources.line_search as line_search

    monkeypatch.setattr(line_search, "MAX_MATCHES", 10)
    other = "    value = compute(1)\n" * 100
    text, offset = at_cursor("    value = compute(2)\n    value = comp|\n")
    found = line_copies(text, offset, [other])
    assert [(c.rest, c.count) for c in found] == [("ute(1)", 9), ("ute(2)", 1)]


def test_a_new_line_copies_what_followed_the_same_line_elsewhere_at_the_same_depth():
    text, offset = at_cursor(
        "class A(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        super().setUp()\n"
        "        self.client = Client()\n"
        "\n"
        "class B(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        |\n"
    )
    copies = next_line_copies(text, offset)
    assert [c.rest for c in copies] == ["super().setUp()"]
    assert copies[0].key_length == 1  # one line above agrees (`class A` is not `class B`)
    # one level shallower, the line after `def setUp(self):` is no candidate: it sits deeper than the cursor
    text, offset = at_cursor("    def setUp(self):\n        super().setUp()\n    def setUp(self):\n    |\n")
    assert next_line_copies(text, offset) == []


def test_new_line_candidates_rank_by_the_lines_above_that_agree_then_by_count():
    other = "x = 1\nfor item in items:\n    total += item\n" + "for item in items:\n    print(item)\n" * 2
    text, offset = at_cursor("x = 1\nfor item in items:\n    |\n")
    copies = next_line_copies(text, offset, [other])
    assert [(c.rest, c.key_length) for c in copies] == [("total += item", 2), ("print(item)", 1)]
    assert copies[1].count == 2


def test_typed_text_filters_new_line_candidates_and_a_short_line_above_gives_none():
    text, offset = at_cursor("for item in items:\n    print(item)\nfor item in items:\n    pr|\n")
    assert [c.rest for c in next_line_copies(text, offset)] == ["int(item)"]  # what follows the typed `pr`
    text, offset = at_cursor("for item in items:\n    print(item)\nfor item in items:\n    zz|\n")
    assert next_line_copies(text, offset) == [] and can_copy_next_line(text, offset)  # the line above says enough
    text, offset = at_cursor("for item in items:\n    print(item)\nfor item in items:\n    pr|int(item)\n")
    assert next_line_copies(text, offset) == []  # the line already ends that way
    text, offset = at_cursor("x=1\ny = 2\nx=1\n|\n")
    assert next_line_copies(text, offset) == []  # `x=1` is too short to be evidence
    text, offset = at_cursor("x = 1\ny = 2\nx = 1\n|\n")
    assert [c.rest for c in next_line_copies(text, offset)] == ["y = 2"]  # five characters are enough
    text, offset = at_cursor("for item in items:\n|\n    print(item)\n")
    assert next_line_copies(text, offset) == [] and can_copy_next_line(text, offset)  # only the line above itself


def test_any_text_and_offset_give_candidates_or_nothing_never_an_error():
    """Bad input never crashes the daemon: random texts (CRLF, tabs, empty lines, unicode, one huge line) at
    every kind of offset."""
    import random

    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\t", "\n", "\r\n", "(", ")", ":", "é", "self.", "x = 1", "    "]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(150)]
    texts.append("x = f(1)\n" + "y = g(2); " * 5000 + "\ny = g(")  # a minified line
    for text in texts:
        for offset in {0, len(text), rng.randint(0, len(text)), rng.randint(0, len(text))}:
            for found in (line_copies(text, offset, [text]), next_line_copies(text, offset, [text])):
                assert all(isinstance(c, LineCopy) and c.rest for c in found)
    long = texts[-1]
    assert line_copies(long, len(long), min_key=5)[0].rest == "2);"  # the nearest of the minified line's repeats


def test_after_a_short_line_the_line_above_it_must_agree_too():
    """`try:` says little: what followed it elsewhere counts only where the line above `try:` is the same too."""
    text, offset = at_cursor(
        "with lock:\n    try:\n        release(lock)\n"
        "while running:\n    try:\n        step()\n"
        "with lock:\n    try:\n        |\n"
    )
    assert [(c.rest, c.key_length) for c in next_line_copies(text, offset)] == [("release(lock)", 2)]
    text, offset = at_cursor("x = 1\ntry:\n    step()\ny = 2\ntry:\n    |\n")
    assert next_line_copies(text, offset) == []  # `x = 1` is not `y = 2`
    text, offset = at_cursor("ok\nab:\n    x()\nok\nab:\n    |\n")
    assert next_line_copies(text, offset) == []  # a match, but neither line above is long enough to trust


def test_copies_are_looked_for_only_where_they_could_match():
    """A line above to follow, or enough typed on a line: only then are the files around read."""
    assert could_match("for item in items:\n    ", 23, "lines")
    assert could_match("x=1\nlogger = logging.get", 24, "line")  # enough typed (the line above is too short)
    assert not could_match("x=1\nlogger = logging.get", 24, "lines")  # typed text counts on a rest of line only
    assert not could_match("x=1\nlog", 7, "line")  # too little typed
    assert not could_match("", 0, "lines")


def test_a_copy_from_a_parallel_place_takes_the_names_of_this_one():
    """The text before the copy (the typed line, the line above) has the same shape in both places but for names:
    the copy gets this place's names, not the ones of the place it came from."""
    text, offset = at_cursor(
        "def a(config):\n    config = ConvertingDict(config)\n\n\ndef b(value):\n    value = ConvertingDi|\n"
    )
    assert line_copies(text, offset) == [LineCopy("ct(value)", len(" = ConvertingDi"), True, 1)]  # a whole line's
    assert [c.rest for c in line_copies(text, offset, rename=False)] == ["ct(config)"]
    handlers = (
        "try:\n    f()\nexcept BaseException as exc:\n    future.set_exception(exc)\n"
        "try:\n    g()\nexcept BaseException as ex:\n    future.set_excep|\n"
    )
    text, offset = at_cursor(handlers)
    assert [c.rest for c in line_copies(text, offset)] == ["tion(ex)"]
    # the line above of another shape says nothing: the copy stays as it was
    text, offset = at_cursor(handlers.replace("as ex:", "as ex:\n    log(ex)"))
    assert [c.rest for c in line_copies(text, offset)] == ["tion(exc)"]


def test_a_comments_words_are_not_copied_into_code():
    text, offset = at_cursor("# import multiprocessing.synchronize, usually\n\nimport multiprocessing.sy|\n")
    assert line_copies(text, offset) == []
    text, offset = at_cursor("x = '#'; import multiprocessing.synchronize\n\nimport multiprocessing.sy|\n")
    assert [c.rest for c in line_copies(text, offset)] == ["nchronize"]  # a `#` in a string starts no comment
    text, offset = at_cursor("# see multiprocessing.synchronize, usually\n\n# and multiprocessing.sy|\n")
    assert [c.rest for c in line_copies(text, offset)] == ["nchronize, usually"]  # comment to comment


def test_places_that_agree_once_renamed_are_one_copy_with_their_count():
    text, offset = at_cursor(
        "def a(x: Caps, default: Symbol) -> Symbol: ...\n"
        "def b(x: Caps, default: Folding) -> Folding: ...\n"
        "def c(x: Caps,\n      default: Lens) -> Lens: ...\n"
        "def d(x: Caps, default: Diagnostics) -> |\n"
    )
    assert [(c.rest, c.count) for c in line_copies(text, offset, min_key=5)] == [("Diagnostics: ...", 3)]


def test_a_docstrings_words_are_not_copied_into_code_nor_lost_in_one():
    doc = '"""The class EntityResolver."""\n\n\nclass EntityResolver|\n'
    text, offset = at_cursor(doc)
    assert line_copies(text, offset, min_key=5) == []
    text, offset = at_cursor('"""The class EntityResolver.\n\nAnd class EntityResolver|\n"""\n')
    assert [c.rest for c in line_copies(text, offset, min_key=5)] == ["."]  # docstring to docstring
    filler = "x = 1\n" * 2000  # the window starts far below the file's start: the quotes before it count
    text, offset = at_cursor('"""Docs.\n' + filler + 'class EntityResolver.\n"""\n\nclass EntityResolver|\n')
    assert line_copies(text, offset, min_key=5) == []


def test_a_docstring_opened_on_the_cursors_line_is_prose_below_it():
    text, offset = at_cursor('class EntityResolver| ; """\nclass EntityResolver.\n"""\n')
    assert line_copies(text, offset, min_key=5) == []  # the line below is in the docstring the cursor's line opens


def test_a_rest_that_runs_on_through_a_minified_line_is_no_copy():
    """The rest of a match in a minified line runs to that line's end: tens of kilobytes that the model would
    score whole. A copy is a line's end that a person types (MAX_REST_CHARS)."""
    from diffill.infill.sources.line_search import MAX_REST_CHARS

    text = "total = compute(a, b); " * 2_000 + "\ntotal = compute(a, b); total = comp"
    found = line_copies(text, len(text), [text])
    assert found and all(len(c.rest) <= MAX_REST_CHARS for c in found)
    assert found[0].rest == "ute(a, b);"  # the line's own end, as before


def test_prose_is_told_by_the_syntax_tree_when_there_is_one():
    """Whether the window starts in a docstring is asked of the tree (`in_docstring`) instead of counting the triple
    quotes of the whole text before it; without a tree they are counted."""
    from diffill.infill.context.neighbours import WINDOW_BEFORE

    docstring = '"""\n' + "x\n" * 12_000 + "logger = logging.getLogger(__name__)\n" + '"""\n'
    text, offset = at_cursor(docstring + "logger = logging.get|")  # (the docstring opens before the window)
    assert line_copies(text, offset) == []  # counted: the line is the docstring's, and prose is not copied into code
    asked = []
    assert line_copies(text, offset, in_docstring=lambda at: asked.append(at) or True) == []
    assert asked == [len(docstring) - WINDOW_BEFORE]  # asked where the window starts
    assert [c.rest for c in line_copies(text, offset, in_docstring=lambda at: False)] == ["Logger(__name__)"]


def test_the_common_end_of_two_texts_is_found_by_halving():
    """`_common_suffix` compares slices, halving: a repetitive window's thousands of matches each cost a few
    comparisons, not a Python loop over the typed text. Same answers as counting one character at a time."""
    import random

    from diffill.infill.sources.line_search import _common_suffix

    def counted(a: str, a_end: int, b: str, b_end: int, limit: int) -> int:
        n = 0
        while n < limit and a_end - n > 0 and b_end - n > 0 and a[a_end - n - 1] == b[b_end - n - 1]:
            n += 1
        return n

    rng = random.Random(5)
    for _ in range(500):
        a, b = ("".join(rng.choice("ab") for _ in range(rng.randrange(12))) for _ in range(2))
        a_end, b_end, limit = rng.randint(0, len(a)), rng.randint(0, len(b)), rng.randint(0, 12)
        assert _common_suffix(a, a_end, b, b_end, limit) == counted(a, a_end, b, b_end, limit), (a, a_end, b, b_end)
    typed = "var a=1;" * 32
    assert _common_suffix("x" + typed, len(typed) + 1, typed, len(typed), len(typed), known=8) == len(typed)
