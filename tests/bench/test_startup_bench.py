"""`diffill bench startup` launches the real daemon and times its start as an editor sees it."""

from diffill.bench.startup import run


def test_a_launch_is_timed_to_initialize_to_the_loading_shown_and_to_ready(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    res = run(".", runs=1, out=lines.append)  # the command's default root: the folder it runs in
    (init_ms,), (shown_ms,), (ready_ms,) = res["initialize_ms"], res["loading_shown_ms"], res["ready_ms"]
    assert 0 < init_ms < shown_ms <= ready_ms
    assert lines[0].startswith("launch 1: initialize answered at") and lines[-1].startswith("median of 1:")
