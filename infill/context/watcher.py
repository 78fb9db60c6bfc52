"""The workspace index's file watcher (watchdog): changed paths go to a callback, nothing else."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

CHANGE_EVENTS = {"created", "modified", "deleted", "moved"}


class _Handler(FileSystemEventHandler):
    def __init__(self, notify: Callable[[str], None]):
        self.notify = notify

    def on_any_event(self, event: FileSystemEvent) -> None:
        # Only changes: watchdog also reports opens and closes, and the index's own reads would requeue
        # themselves forever.
        if event.is_directory or event.event_type not in CHANGE_EVENTS:
            return
        for attr in ("src_path", "dest_path"):
            p = getattr(event, attr, "")
            if p:
                self.notify(os.fsdecode(p))


def watch(roots: Iterable[Path], notify: Callable[[str], None]) -> Observer:
    """A started observer calling `notify(path)` for each file created, modified, deleted or moved under `roots`."""
    observer = Observer()
    handler = _Handler(notify)
    for root in roots:
        observer.schedule(handler, str(root), recursive=True)
    observer.daemon = True
    observer.start()
    return observer
