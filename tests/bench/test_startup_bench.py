"""`diffill bench startup` launches the real daemon and times its start as an editor sees it."""

from diffill.bench.startup import run, run_first_answers


def test_a_launch_is_timed_to_initialize_to_the_loading_shown_and_to_ready(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    res = run(".", runs=1, out=lines.append)  # the command's default root: the folder it runs in
    (init_ms,), (shown_ms,), (ready_ms,) = res["initialize_ms"], res["loading_shown_ms"], res["ready_ms"]
    assert 0 < init_ms < shown_ms <= ready_ms
    assert lines[0].startswith("launch 1: initialize answered at") and lines[-1].startswith("median of 1:")


def test_the_first_answer_is_timed_and_the_keystrokes_after_it_by_what_the_daemon_was_doing(tmp_path):
    body = "".join(f"def read_{i}(path):\n    with open(path, encoding='utf-8') as handle:\n        return handle.read()\n\n\n" for i in range(12))  # fmt: skip
    (tmp_path / "readers.py").write_text(body)
    lines: list[str] = []
    res = run_first_answers(str(tmp_path), runs=1, out=lines.append)
    (first,) = res["first_answer_ms"]
    assert first is not None and first > 0
    assert lines[0].startswith("launch 1: first answer") and "while the model loads" in lines[0]
    assert lines[-1].startswith("median first answer")
    assert set(res) >= {"loading_p95_ms", "indexing_p95_ms", "after_p95_ms", "ratio"}
