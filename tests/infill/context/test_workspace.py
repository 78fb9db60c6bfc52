"""Workspace index: what it reads, what it skips, how it follows file events, and what retrieval finds."""

import os
import time

import pytest

from diffill.infill.context.workspace import WorkspaceIndex, identifiers


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(index):
    return sorted(c.name for chunks in index._chunks.values() for c in chunks if c.kind == "definition")


def wait_for(cond, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture()
def ws(tmp_path):
    root = tmp_path / "proj"
    write(root / "util.py", "def parse_header(line):\n    return line\n\n\nclass HeaderError(Exception):\n    pass\n")
    write(root / "web" / "app.ts", "export function renderPage(title: string): string { return title }\n")
    write(root / ".gitignore", "generated/\n*.tmp.py\n")
    write(root / "generated" / "big.py", "def generated_fn():\n    pass\n")
    write(root / "scratch.tmp.py", "def ignored_fn():\n    pass\n")
    write(root / "node_modules" / "dep.js", "function depFn() {}\n")
    (root / "blob.py").write_bytes(b"def binary_fn():\x00\x00\n")
    write(root / "huge.py", "def huge_fn():\n    pass\n" + "#" * 600_000)
    outside = write(tmp_path / "outside" / "secret.py", "def secret_fn():\n    pass\n")
    os.symlink(outside, root / "link.py")
    os.symlink(outside.parent, root / "linkdir")
    return root


def test_scan_reads_only_wanted_files_inside_the_root(ws):
    index = WorkspaceIndex([ws])
    index.scan()
    assert names(index) == ["HeaderError", "parse_header", "renderPage"]


def test_the_scan_reads_nothing_while_completions_wait_and_goes_on_after(ws):
    """Completions first: while `yield_to` says a completion waits or runs, the scan reads no file; it says it is
    scanning meanwhile, and finishes once the completions are done."""
    import threading

    busy = threading.Event()
    busy.set()
    index = WorkspaceIndex([ws], yield_to=busy.is_set)
    scan = threading.Thread(target=index.scan)
    scan.start()
    time.sleep(0.3)
    assert index.scanning and index.file_count() == 0
    busy.clear()
    scan.join(timeout=10)
    assert not index.scanning and names(index) == ["HeaderError", "parse_header", "renderPage"]


def test_a_scan_in_a_process_of_its_own_indexes_what_a_scan_here_does(ws, monkeypatch):
    """The initial scan reads and parses in a child process (its parses would hold up the completions here): the
    same files, under the same rules (ignored, binary, huge and outside files skipped), the same definitions; where
    no child can run, the scan is done here."""
    here = WorkspaceIndex([ws])
    here.scan()
    there = WorkspaceIndex([ws])
    there.scan(elsewhere=True)
    assert names(there) == names(here) == ["HeaderError", "parse_header", "renderPage"]
    assert there._chunks == here._chunks and there.chunk_count() == here.chunk_count() > 0
    from diffill.infill.context import workspace

    monkeypatch.setattr(workspace.sys, "executable", str(ws / "no-python"))
    fallback = WorkspaceIndex([ws])
    fallback.scan(elsewhere=True)
    assert names(fallback) == names(here)


def test_the_watcher_is_set_up_once_the_completions_are_quiet(ws):
    """Setting up a big tree's watches takes seconds of the daemon's time: it waits for a pause in the typing."""
    import threading

    quiet = [0.0]
    index = WorkspaceIndex([ws], quiet_for=lambda: quiet[0])
    started = threading.Thread(target=index.start)
    started.start()
    assert wait_for(lambda: names(index) == ["HeaderError", "parse_header", "renderPage"])
    time.sleep(0.3)
    assert index._observer is None  # indexed, not yet watching
    quiet[0] = 5.0
    started.join(timeout=10)
    assert index._observer is not None
    index.stop()


def test_the_scans_process_is_paused_while_completions_run(ws):
    """`hold(True)` stops the scan's process (SIGSTOP) and `hold(False)` lets it go on: on two cores its parses
    beside a completion would slow the completion down."""
    import subprocess
    import sys

    index = WorkspaceIndex([ws])
    index._child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])

    def state() -> str:
        return open(f"/proc/{index._child.pid}/stat").read().rsplit(")", 1)[1].split()[0]

    try:
        index.hold(True)
        assert wait_for(lambda: state() == "T")
        index.hold(False)
        assert wait_for(lambda: state() in ("S", "R"))
    finally:
        index.stop()
    assert index._child.wait(timeout=10) != 0  # stopped with the index


def test_search_ranks_by_identifier_overlap_and_prefix(ws):
    index = WorkspaceIndex([ws])
    index.scan()
    hits = index.search(identifiers("header = parse_header(raw_line)"))
    assert hits[0].name == "parse_header" and hits[0].text == "def parse_header(line):"
    assert index.search([], prefix="rend")[0].name == "renderPage"
    assert index.search(identifiers("parse_header"), exclude_path=str(ws / "util.py")) == []


def test_watcher_follows_create_modify_delete_rename(ws):
    index = WorkspaceIndex([ws], debounce_s=0.05)
    index.start()
    try:
        write(ws / "new.py", "def brand_new():\n    pass\n")
        assert wait_for(lambda: "brand_new" in names(index))
        write(ws / "new.py", "def renamed_inside():\n    pass\n")
        assert wait_for(lambda: "renamed_inside" in names(index) and "brand_new" not in names(index))
        os.rename(ws / "new.py", ws / "moved.py")
        assert wait_for(lambda: any(p.endswith("moved.py") for p in index._chunks))
        assert not any(p.endswith("new.py") for p in index._chunks)
        os.remove(ws / "moved.py")
        assert wait_for(lambda: "renamed_inside" not in names(index))
    finally:
        index.stop()


def test_event_storm_is_bounded(ws):
    index = WorkspaceIndex([ws], max_pending=100, debounce_s=0.05)
    index.scan()
    for i in range(10_000):
        index.notify(str(ws / f"f{i}.py"))
    assert len(index._pending) <= 100 and index._rescan
    index.flush()
    assert names(index) == ["HeaderError", "parse_header", "renderPage"]


def test_caps_on_files_and_chunks(tmp_path):
    for i in range(20):
        write(tmp_path / f"m{i}.py", "".join(f"def f{i}_{j}():\n    pass\n" for j in range(10)))
    index = WorkspaceIndex([tmp_path], max_files=5)
    index.scan()
    assert index.file_count() == 5
    index = WorkspaceIndex([tmp_path], max_chunks=35)
    index.scan()
    assert index.chunk_count() <= 35
