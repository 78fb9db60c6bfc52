"""The speculation benchmark runs end to end on the shipped model and reports what it says."""

from diffill.bench.speculation import run

CODE = "import os\n\n\ndef walk(root):\n    for name in sorted(os.listdir(root)):\n        yield os.path.join(root, name)\n"


def test_the_benchmark_reports_passes_acceptance_and_that_the_answers_are_greedy(tmp_path):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(CODE.replace("walk", f"walk{i}"))
    lines = []
    rows = run([str(tmp_path)], n=4, out=lines.append)
    assert {r["mode"] for r in rows} == {"greedy", "lookups", "lookups+decoder"} and len(lines) == len(rows)
    for r in rows:
        assert r["same_as_greedy"] == 1.0 and r["passes"] >= 1 and r["ms"] > 0
    greedy = {r["kind"]: r for r in rows if r["mode"] == "greedy"}
    for r in rows:
        if r["mode"] == "lookups":  # the four files repeat each other: the code around drafts most of each answer
            assert r["lookups_per_answer"] > 0 and r["passes"] < greedy[r["kind"]]["passes"]
            assert r["first_per_answer"] == 0  # no decoder drafts
