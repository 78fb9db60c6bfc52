"""`diffill bench lsp` drives the real daemon over stdio and reports (and with --dump writes) every case."""

import json

from diffill.bench.lsp import run

SOURCE = """import os


def join_all(parts):
    joined = os.path.join(*parts)
    return joined.strip()


def count(items):
    total = 0
    for item in items:
        total += len(item)
    return total
"""


def test_cases_are_reported_and_dumped(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text(SOURCE)
    (root / "b.py").write_text(SOURCE.replace("join_all", "join_some"))
    dump = tmp_path / "cases.jsonl"
    lines: list[str] = []
    res = run(str(root), n=3, out=lines.append, dump=str(dump))
    rows = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(rows) == res["cases"] >= 1
    for row in rows:
        assert set(row) == {"path", "offset", "line", "truth", "answer", "wrong"}
        text = (root / row["path"].split("/")[-1]).read_text()
        assert text[: row["offset"]].endswith(row["line"]) and row["line"]  # the typed line, up to the cursor
        assert row["wrong"] == bool(
            row["answer"].rstrip() and not row["truth"].rstrip().startswith(row["answer"].rstrip())
        )
    shown = [r for r in rows if r["answer"]]
    assert res["wrong_shown"] == round(sum(r["wrong"] for r in shown) / max(1, len(shown)), 4)
