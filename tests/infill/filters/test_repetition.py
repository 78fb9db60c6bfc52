import dataclasses

import pytest

from diffill.infill.filters.repetition import drop_repetition

LUA_NEST = "if a then\n  if b then\n    if c then\n      x()\n<CURSOR>\n"

# (language, document with cursor, raw model output, expected text, expected replaced text)
CASES = [
    # the same line three or more times: keep the first copy
    ("python", "x = 1\n<CURSOR>\n", "y = 2\ny = 2\ny = 2\ny = 2", "y = 2", ""),
    ("javascript", "const a = 1;\n<CURSOR>\n", "const b = 2;\nconst b = 2;\nconst b = 2;", "const b = 2;", ""),
    ("python", "x = 1\n<CURSOR>\n", "a = 0\ny = 2\ny = 2\ny = 2", "a = 0\ny = 2", ""),
    # a group of lines repeated three times
    ("python", "def f():\n    <CURSOR>\n", "a()\n    b()\n    a()\n    b()\n    a()\n    b()", "a()\n    b()", ""),
    # twice is not degenerate
    ("python", "def f():\n    <CURSOR>\n", "a()\n    a()", "a()\n    a()", ""),
    # short token groups repeated on a line
    ("python", "x = <CURSOR>\n", "foo foo foo foo", "foo", ""),
    ("python", "x = <CURSOR>\n", "self.self.self.self.y", "self.", ""),
    ("go", "package main\n\nfunc f() {\n\tx := <CURSOR>\n}\n", "a + a + a + a", "a +", ""),
    ("python", "x = <CURSOR>\n", "return return return", "return", ""),
    # a piece of a word stuttering (a greedy draft in a loop): keep the first copy
    ("python", "x = status<CURSOR>\n", "_code_code_code_code", "_code", ""),
    ("python", "    retu<CURSOR>\n", "rnnnnnnnnnnnn", "rn", ""),
    ("python", "x = f(<CURSOR>)\n", "aminginginginging)", "aming", ""),
    ("python", ":param plain<CURSOR>\n", "::::::::::::: bool", ":", ""),
    # legitimate repeats: hex words, rulers, short doubles
    ("python", "MASK = 0x<CURSOR>\n", "ffffffffffffffff", "ffffffffffffffff", ""),
    ("python", "# <CURSOR>\n", "----------------------", "----------------------", ""),
    ("python", "x = <CURSOR>\n", "'www.example.com'", "'www.example.com'", ""),
    ("python", "x = <CURSOR>\n", "self.assertEqual(a, b)", "self.assertEqual(a, b)", ""),
    # legitimate repeats: numbers, closing brackets, `end` closing nested blocks, `}` lines
    ("python", "x = [<CURSOR>]\n", "0, 0, 0, 0", "0, 0, 0, 0", ""),
    ("python", "print(f(g(<CURSOR>\n", "x)))", "x)))", ""),
    ("lua", LUA_NEST, "    end\n  end\nend", "    end\n  end\nend", ""),
    ("javascript", "if (a) {\n  if (b) {\n    x();\n  }\n<CURSOR>", "}", "}", ""),
    # a completion copying the line above the cursor
    ("python", "x = compute(a, b)\n<CURSOR>\n", "x = compute(a, b)", "", ""),
    ("python", "def f():\n    x = compute(a, b)\n    <CURSOR>\n", "x = compute(a, b)\n    return x", "", ""),
    ("python", "total += price\ntotal <CURSOR>\n", "+= price", "", ""),
    ("python", "print(value)\nprint(<CURSOR>)\n", "value", "", ""),  # with the suffix on the line
    ("javascript", "  counter++;\n  <CURSOR>\n", "counter++;", "", ""),
    ("python", "x = compute(a, b)\n<CURSOR>\n", "y = compute(a, b)", "y = compute(a, b)", ""),
]


@pytest.mark.parametrize(("language", "src", "raw", "expected", "expected_replaced"), CASES)
def test_repetition_golden(candidate, language, src, raw, expected, expected_replaced):
    out = drop_repetition(candidate(language, src, raw))
    assert out.text == expected
    assert out.doc_text[out.offset : out.replace_end] == expected_replaced


def test_a_degenerate_line_an_answer_was_cut_from_is_not_run_on_along(candidate):
    """The syntax guard extends an answer cut short along the line it was cut from (`Candidate.whole`); when that
    line stutters, the repetition filter forgets it and the guard completes the word being typed instead."""
    from diffill.infill.postprocess import postprocess

    c = candidate("python", "fr<CURSOR>\nx = path.sep\n", "om")
    stutter = dataclasses.replace(c, whole="omromromromromromrom")
    assert drop_repetition(stutter).whole == ""
    assert postprocess(stutter).text == "om"
    sound = dataclasses.replace(c, whole="om os import path, sep")
    assert drop_repetition(sound).whole == "om os import path, sep"
    assert postprocess(sound).text == "om os import path"


def test_a_line_written_to_its_end_later_is_judged_for_repetition_then(candidate):
    """Where the engine wrote the line an answer was cut from only as far as shown, the rest written later
    (`Candidate.rest_of_whole`) is judged as a whole line would have been: a stutter there is forgotten too."""
    from diffill.infill.postprocess import postprocess

    c = candidate("python", "fr<CURSOR>\nx = path.sep\n", "om")
    stutter = dataclasses.replace(c, whole="omr", rest_of_whole=lambda: "omromromromromromrom")
    assert drop_repetition(stutter).whole_line() == ""
    assert postprocess(stutter).text == "om"
    sound = dataclasses.replace(c, whole="om o", rest_of_whole=lambda: "om os import path, sep")
    assert drop_repetition(sound).whole_line() == "om os import path, sep"
    assert postprocess(sound).text == "om os import path"
    known_stutter = dataclasses.replace(c, whole="omromromromromromrom", rest_of_whole=lambda: 1 / 0)
    assert drop_repetition(known_stutter).rest_of_whole is None  # its start stutters already: nothing is written
