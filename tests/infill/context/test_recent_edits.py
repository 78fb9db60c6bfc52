"""Recent edits: a few lines around each, one entry per neighbourhood, newest first, bounded."""

from diffill.infill.context.recent_edits import RecentEdits

TEXT = "\n".join(f"line {i}" for i in range(20))


def test_an_edit_nearby_replaces_the_older_entry_and_the_newest_comes_first():
    recent = RecentEdits(capacity=3)
    recent.record("a.py", TEXT, 5, radius=1)
    recent.record("a.py", TEXT, 4, radius=1)  # the same neighbourhood: replaces the first
    recent.record("b.py", TEXT, 10, radius=1)
    assert [(r.path, r.line, r.text) for r in recent.items()] == [
        ("b.py", 9, "line 9\nline 10\nline 11"),
        ("a.py", 3, "line 3\nline 4\nline 5"),
    ]
    assert [r.path for r in recent.items(exclude_path="b.py")] == ["a.py"]


def test_blank_ranges_are_not_kept_and_the_buffer_is_bounded():
    recent = RecentEdits(capacity=2)
    recent.record("a.py", "\n\n\n", 1)
    assert recent.items() == []
    for i in range(4):
        recent.record(f"{i}.py", TEXT, 3)
    assert [r.path for r in recent.items()] == ["3.py", "2.py"]


def test_the_lines_are_lsp_lines_whether_the_line_starts_are_given_or_counted():
    from diffill.infill.text import line_starts

    text = "a\r\nb\rc\nd\ne\n"  # CRLF, a lone CR and LF all end LSP lines
    counted, given = RecentEdits(), RecentEdits()
    counted.record("a.py", text, 2, radius=1)
    given.record("a.py", text, 2, radius=1, starts=line_starts(text))
    assert [(r.line, r.text) for r in counted.items()] == [(1, "b\nc\nd")] == [(r.line, r.text) for r in given.items()]


def test_a_range_longer_than_a_few_lines_of_code_is_not_kept():
    """A minified line says nothing to the prompt, and slicing it out cost its length at every keystroke."""
    from diffill.infill.context.recent_edits import MAX_RANGE_CHARS

    recent = RecentEdits()
    recent.record("a.py", "x = 1\n" + "y" * (MAX_RANGE_CHARS + 1) + "\nz = 2\n", 1)
    assert recent.items() == []
    recent.record("a.py", "x = 1\n" + "y" * 100 + "\nz = 2\n", 1)
    assert [r.line for r in recent.items()] == [0]
