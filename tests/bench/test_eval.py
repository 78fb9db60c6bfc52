"""Evaluation cases are built from real files as documented (the truth is what was removed)."""

import random

import pytest

from diffill.bench.cases import draw_cases, make_case
from diffill.bench.context import context_cases
from diffill.bench.edits import edit_cases
from diffill.bench.evaluate import edit_similarity, score

LIB = "def parse_header(line):\n    return line.split(':', 1)\n"
APP = (
    "import lib\n\n\ndef run(lines):\n    out = []\n    for line in lines:\n"
    "        key = parse_header(line)\n        out.append(key)\n    return out\n"
)


def test_make_case_removes_the_truth():
    rng = random.Random(0)
    for kind in ("line", "lines"):
        for _ in range(20):
            case = make_case("app.py", APP, rng, kind)
            if case is None:
                continue
            restored = case.text[: case.offset] + case.truth + case.text[case.offset :]
            assert restored.replace(" ", "") in APP.replace(" ", "") or kind == "lines"
            assert case.truth and case.truth not in case.text[case.offset : case.offset + 1]


def test_draw_cases_makes_more_passes_over_few_files(tmp_path):
    """Two files give ten cases (new cut points on each pass), kinds alternate, the seed fixes them; a folder
    with nothing to cut gives none instead of looping."""
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "app.py").write_text(APP)
    cases = draw_cases(str(tmp_path), 10, random.Random(1))
    assert len(cases) == 10 and [c.kind for c in cases[:2]] == ["line", "lines"]
    assert {c.kind for c in cases if c.path.endswith("app.py")} == {"line", "lines"}  # kinds swap between passes
    assert len({(c.path, c.offset, c.truth) for c in cases}) > 2  # not the same two cases again
    again = draw_cases(str(tmp_path), 10, random.Random(1))
    assert [(c.path, c.offset, c.truth) for c in again] == [(c.path, c.offset, c.truth) for c in cases]
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.py").write_text("\n")
    assert draw_cases(str(tmp_path / "empty"), 10, random.Random(0)) == []


def test_scores():
    right = score("foo(x)", "foo(x)", True)
    assert right == {"exact": 1.0, "useful": 1.0, "edit_similarity": 1.0, "valid": 1.0, "shown": 1.0, "wrong": 0.0}
    assert score("bar", "foo(x)", True)["wrong"] == 1.0 and score("foo(", "foo(x)", True)["wrong"] == 0.0
    assert score("", "foo", True)["wrong"] == 0.0 and score("", "foo", True)["shown"] == 0.0
    assert score("foo", "foo(x)", False)["useful"] == 1.0
    assert score("", "foo", True)["useful"] == 0.0
    assert 0 < edit_similarity("foo(y)", "foo(x)") < 1


def test_context_and_edit_cases(tmp_path):
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "app.py").write_text(APP)
    [case] = context_cases(str(tmp_path), 5, 0)
    assert case.path.endswith("app.py") and case.truth == "rse_header(line)"
    assert case.text[: case.offset].endswith("key = pa")
    cases = edit_cases(str(tmp_path), 5, 0)
    path, doc, cursor, old, new, expected = cases[0]
    assert (old, new) == ("out", "new_out")
    assert doc[:cursor].endswith("new_out") and expected.count("new_out") == 3 and " out.append" not in expected


SIGNATURES = """def fetch(url, timeout):
    return get(url, timeout)


def main(url, timeout):
    first = fetch(url, timeout)
    return fetch(url, 5), first
"""


def test_signature_cases_and_their_acceptance(tmp_path):
    """Typed-back cases remove the parameter from the list and from the calls that pass it on (only those);
    deleted cases expect every call's argument in that slot gone. The rule accepts both."""
    from diffill.bench.edits import run_signature_edits, signature_cases

    for i in range(2):
        (tmp_path / f"m{i}.py").write_text(SIGNATURES)
    cases = sorted(signature_cases(str(tmp_path), 2, 0), key=lambda c: c[4])
    assert len(cases) == 2
    _, typed_doc, at, typed, deleted, expected = cases[0]
    assert typed == ", timeout" and deleted == 0 and expected == SIGNATURES
    assert typed_doc.startswith("def fetch(url):") and "first = fetch(url)\n" in typed_doc
    assert "fetch(url, 5)" in typed_doc  # a call that gave something else keeps it
    _, doc, at, typed, deleted, expected = cases[1]
    assert doc == SIGNATURES and typed == "" and deleted == len(", timeout")
    assert "first = fetch(url)\n" in expected and "fetch(url), first" in expected
    paths = sorted(str(tmp_path / f"m{i}.py") for i in range(2))
    assert run_signature_edits(str(tmp_path), 2, 0) == {"cases": 2, "proposed": 1.0, "accepted": 1.0, "paths": paths}


def test_eval_command_reads_several_roots_and_ends_with_one_json_line(tmp_path, capsys):
    """`diffill eval --root A --root B` on the embedded model: cases come from both folders, and the last line is
    the JSON summary with fractions."""
    import json

    from diffill.lsp.cli import main

    for name, text in (("a", LIB), ("b", APP)):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.py").write_text(text)
    roots = [str(tmp_path / "a"), str(tmp_path / "b")]
    assert {c.path for c in draw_cases(roots, 6, random.Random(0))} == {
        str(tmp_path / "a" / "a.py"),
        str(tmp_path / "b" / "b.py"),
    }
    dump = tmp_path / "cases.jsonl"
    assert main(["eval", "--root", roots[0], "--root", roots[1], "--n", "6", "--steps", "1", "--dump", str(dump)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["cases"] == 6 and summary["training_overlap"] == 0.0  # code written for the test
    assert all(0.0 <= summary[k] <= 1.0 for k in ("exact", "useful", "edit_similarity", "valid"))
    # --dump: one line per case, whose scores average to the summary's
    rows = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(rows) == 6 and {r["kind"] for r in rows} == {"line", "lines"}
    for r in rows:
        assert r["exact"] == float(r["answer"].rstrip() == r["truth"].rstrip())
        assert r["source"] in ("", "model", "copy", "next line")
    assert sum(r["useful"] for r in rows) / 6 == pytest.approx(summary["useful"], abs=1e-3)


def test_block_cases_remove_a_function_body_and_keep_its_docstring():
    import random

    from diffill.bench.cases import make_block_case

    text = (
        "import os\n\n\n"
        "def listing(root):\n"
        '    """The names under root."""\n'
        "    names = os.listdir(root)\n"
        "    return sorted(names)\n\n\n"
        "x = 1\n"
    )
    case = make_block_case("m.py", text, random.Random(0))
    assert case.kind == "block"
    assert case.truth == "names = os.listdir(root)\n    return sorted(names)"
    assert case.text[: case.offset].endswith('"""The names under root."""\n    ')
    assert case.text[case.offset :].startswith("\n\n\nx = 1")
    assert make_block_case("m.js", text, random.Random(0)) is None
    assert make_block_case("m.py", "x = 1\n", random.Random(0)) is None


def test_eval_measures_what_ships():
    """`diffill eval` with no flags runs the daemon's options (the default settings over the model's card), less
    the cross-file context it leaves to `bench context`; a flag changes its knob alone."""
    from dataclasses import replace

    from diffill.bench.evaluate import eval_options
    from diffill.lsp.settings import Settings, engine_options
    from diffill.model import runtime

    loaded = runtime.load("", "cpu")
    daemon = engine_options(Settings(), loaded)
    assert eval_options(loaded) == replace(daemon, prompt=replace(daemon.prompt, context_tokens=0))
    wider = eval_options(loaded, line_canvas=32, latency_budget=None)
    assert wider.drafts.line_canvas_length == 32 and wider.budget.latency_budget_ms is None
    assert replace(wider, drafts=daemon.drafts, budget=daemon.budget) == eval_options(loaded)
