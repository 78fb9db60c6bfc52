"""A storm of 10,000 file events is absorbed by the workspace index with bounded memory and threads, and the index
ends up matching the disk."""

from __future__ import annotations

import threading
import time
import tracemalloc
from pathlib import Path

import pytest

workspace = pytest.importorskip("diffill.infill.context.workspace")
watcher = pytest.importorskip("diffill.infill.context.watcher")
events = pytest.importorskip("watchdog.events")


def _files(root: Path, n: int, start: int = 0) -> list[Path]:
    out = []
    for i in range(start, start + n):
        p = root / f"pkg{i % 7}" / f"mod{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"def function_{i}(x):\n    return x + {i}\n")
        out.append(p)
    return out


def _settle(index, timeout: float = 30.0) -> None:
    """Wait until the debounced flush has run and nothing is pending."""
    deadline = time.monotonic() + timeout
    last, stable_since = index.version, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        with index._lock:
            busy = bool(index._pending) or index._rescan
        if index.version != last or busy:
            last, stable_since = index.version, time.monotonic()
        elif time.monotonic() - stable_since > 4 * index.debounce_s + 0.5:
            return
    raise AssertionError("the index never settled")


def test_storm_of_10000_events_is_bounded(tmp_path):
    root = tmp_path / "ws"
    present = _files(root, 200)
    index = workspace.WorkspaceIndex([root], debounce_s=0.2)
    index.scan()
    assert index.file_count() == 200
    handler = watcher._Handler(index.notify)
    threads_before = threading.active_count()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    max_threads = 0
    started = time.monotonic()
    for i in range(10_000):
        kind = i % 4
        p = str(present[i % len(present)]) if kind < 2 else str(root / f"gone/file{i}.py")
        if kind == 0:
            event = events.FileModifiedEvent(p)
        elif kind == 1:
            event = events.FileCreatedEvent(p)
        elif kind == 2:
            event = events.FileDeletedEvent(p)
        else:
            event = events.FileMovedEvent(p, str(root / f"moved/file{i}.py"))
        handler.on_any_event(event)
        if i % 100 == 0:
            max_threads = max(max_threads, threading.active_count())
    storm_s = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    with index._lock:
        pending = len(index._pending)
    assert pending <= index.max_pending
    assert peak - base < 8 * 1024 * 1024, f"storm held {(peak - base) / 1e6:.1f} MB"
    assert max_threads <= threads_before + 16, (threads_before, max_threads)  # transient debounce timers only
    assert storm_s < 20, storm_s
    _settle(index)
    assert index.file_count() == 200  # deleted and moved paths never existed: the disk still has the same files
    assert threading.active_count() <= threads_before + 1
    print(f"10,000 events in {storm_s:.2f} s; peak {(peak - base) / 1e6:.2f} MB traced; threads <= {max_threads}")


# watchdog >= 2.3 also reports reads ("opened", "closed_no_write"): the index re-queues the files it just read, so
# after the first change it re-reads every file forever (one core busy, `version` climbing ~1000/s).
def test_index_goes_quiet_after_a_change(tmp_path):
    root = tmp_path / "ws"
    _files(root, 50)
    index = workspace.WorkspaceIndex([root], debounce_s=0.2)
    index.start()
    try:
        (root / "pkg0" / "mod0.py").write_text("def changed():\n    pass\n")
        time.sleep(1.5)
        before = index.version
        time.sleep(1.5)
        assert index.version == before, f"index still busy: version {before} -> {index.version} with no change"
    finally:
        index.stop()


def test_real_watchdog_storm_matches_disk(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _files(root, 20)
    index = workspace.WorkspaceIndex([root], debounce_s=0.2)
    index.start()
    try:
        made = _files(root, 2000, start=100)  # create + write: thousands of inotify events
        for p in made[:1000]:
            p.unlink()
        for p in made[1000:1500]:
            p.write_text(p.read_text() + "\n\ndef extra():\n    pass\n")
        _settle(index, timeout=20)
        on_disk = len(list(root.rglob("*.py")))
        assert on_disk == 1020
        assert index.file_count() == on_disk
    finally:
        index.stop()
