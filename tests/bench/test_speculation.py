"""The speculation benchmark runs end to end on the shipped model and reports what it says."""

from diffill.bench.speculation import run

CODE = "import os\n\n\ndef walk(root):\n    for name in sorted(os.listdir(root)):\n        yield os.path.join(root, name)\n"


def test_the_benchmark_reports_acceptance_and_passes(tmp_path):
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(CODE.replace("walk", f"walk{i}"))
    lines = []
    rows = run([str(tmp_path)], n=3, out=lines.append)
    assert [r["draft_steps"] for r in rows] == [1, 2] and len(lines) == 2
    for r in rows:
        assert 0 <= r["first_at_least_one"] <= 1 and r["passes"] >= 2 and 0 <= r["greedy_exact"] <= 1
