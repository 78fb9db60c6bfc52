"""`diffill bench typing`: the simulated typist, its two baselines, and a run through the real daemon."""

import asyncio
import json
import random

from diffill.bench.typing import (
    Tally,
    TypingCase,
    accepted_length,
    ctrl_p,
    free_indent,
    line_oracle,
    run,
    type_case,
    typing_cases,
)

SOURCE = """import os


def join_all(parts):
    joined = os.path.join(*parts)
    if joined:
        return joined.strip()
    return ""


def count(items):
    total = 0
    for item in items:
        total += len(item)
    return total
"""


def _case() -> TypingCase:
    before, rest = SOURCE.split("    if joined:\n")
    typed = 'if joined:\n        return joined.strip()\n    return ""'
    after = rest[len('        return joined.strip()\n    return ""') :]
    return TypingCase("a.py", before, "    ", typed, after)


def _type(case: TypingCase, suggest) -> Tally:
    tally = Tally()
    asyncio.run(type_case(case, suggest, tally))
    return tally


def test_cases_put_the_file_back_together(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(SOURCE.replace("join_all", f"join_{name[0]}"))
    cases = typing_cases([str(tmp_path)], 3, 2, random.Random(0))
    assert len(cases) == 3
    for case in cases:
        text = (tmp_path / case.path.split("/")[-1]).read_text()
        assert case.before + case.indent + case.typed + case.after == text
        assert case.typed.count("\n") == 1 and case.typed[:1].strip()  # two lines, typed from the first character
        assert case.before.endswith("\n") and case.after.startswith("\n")


def test_indentation_comes_free_after_a_newline():
    typed = "if x:\n        y = 1\n\n    z"
    assert free_indent(typed, 6) == 14  # after the newline, past the eight spaces
    assert free_indent(typed, 3) == 3  # inside a line nothing is free
    assert free_indent(typed, 20) == 20  # a blank line has no indentation to skip
    assert free_indent(typed, 21) == 25


def test_a_suggestion_is_accepted_only_when_it_is_what_comes_next():
    doc, cursor = "x = fo\n", 6
    assert accepted_length("o(1)", doc, cursor, "o(1)") == 4
    assert accepted_length("o", doc, cursor, "o(1)") == 1  # a start of the rest is accepted too
    assert accepted_length("o(2)", doc, cursor, "o(1)") == 0
    assert accepted_length("", doc, cursor, "o(1)") == 0
    # an edit given as the document it makes: the word typed replaced by itself and its end is an insertion
    assert accepted_length(("x = foo(1)\n", 10), doc, cursor, "o(1)") == 4
    # one that also rewrites what was typed is not what the user was about to type
    assert accepted_length(("x = bar(1)\n", 10), doc, cursor, "o(1)") == 0
    # nor one that eats the text after the cursor
    assert accepted_length(("x = foo(1)", 10), doc, cursor, "o(1)") == 0


def test_with_no_suggestions_every_character_but_the_indentation_is_typed():
    case = _case()

    async def silent(document, cursor, keystroke):
        return None

    tally = _type(case, silent)
    indentation = 8 + 4  # the second and third lines' indentation comes free
    assert tally.keystrokes == tally.keystrokes_without == len(case.typed) - indentation
    assert tally.summary()["saved"] == 0 and tally.wrong == tally.accepted == 0


def test_the_line_oracle_takes_one_key_per_line_and_one_per_newline():
    case = _case()
    tally = _type(case, line_oracle(case))
    assert tally.accepted == 3 and tally.keystrokes == 5 and tally.wrong == 0
    assert tally.accepted_chars == len("if joined:") + len("return joined.strip()") + len('return ""')


def test_a_wrong_suggestion_is_counted_and_typed_past():
    case = _case()
    seen = []

    async def always_wrong(document, cursor, keystroke):
        seen.append((document, cursor, keystroke))
        return "#"

    tally = _type(case, always_wrong)
    assert tally.wrong == tally.keystrokes == tally.keystrokes_without
    # each keystroke reaches the suggester as the text inserted, the indentation with its newline
    typed_back = "".join(k.text for _, _, k in seen[1:])
    assert seen[0][2] is None and typed_back == case.typed[:-1]
    final_document, final_cursor, _ = seen[-1]
    assert final_document[:final_cursor] == case.before + case.indent + case.typed[:-1]
    assert final_document[final_cursor:] == case.after


def test_ctrl_p_completes_the_word_with_the_nearest_one_before_then_wraps():
    async def ask(doc, cursor):
        return await ctrl_p(doc, cursor, None)

    doc = "total_a = 1\ntotal_b = 2\ntot"
    assert asyncio.run(ask(doc, len(doc))) == "al_b"  # the nearest word before the cursor
    doc = "x = tot\ntotal_after = 1\n"
    assert asyncio.run(ask(doc, 7)) == "al_after"  # none before: the search wraps to the text below
    assert asyncio.run(ask("x = 1 + ", 8)) is None  # no word being typed
    assert asyncio.run(ask("total\ntotal", 11)) is None  # nothing extends it


def test_the_daemon_run_reports_every_suggester_and_dumps_what_it_showed(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    for name in ("a.py", "b.py"):
        (root / name).write_text(SOURCE.replace("join_all", f"join_{name[0]}"))
    dump = tmp_path / "typing.jsonl"
    lines: list[str] = []
    result = run([str(root)], n=2, lines=2, out=lines.append, dump=str(dump))
    assert set(result) == {"diffill", "before the model", "ctrl-p", "line oracle", "training_overlap"}
    ours, looked_up = result["diffill"], result["before the model"]
    assert ours["keystrokes_without"] == result["ctrl-p"]["keystrokes_without"] == looked_up["keystrokes_without"] > 0
    assert looked_up["requests"] == looked_up["keystrokes"] > 0
    assert ours["requests"] == ours["keystrokes"] > 0  # one request per keystroke
    assert 0 <= ours["saved"] < 1 and ours["p95_ms"] >= ours["p50_ms"] > 0
    assert result["line oracle"]["saved"] > 0.8
    rows = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(rows) == 2
    shown = [s for row in rows for s in row["shown"]]
    assert sum(s["accepted"] for s in shown) == ours["accepted"]
    assert sum(not s["accepted"] for s in shown) == round(ours["wrong_per_100"] * ours["keystrokes"] / 100)
    assert any("| diffill |" in line for line in lines)
    assert f"training overlap: {100 * result['training_overlap']:.1f} %" in lines  # the cases' files, looked up
