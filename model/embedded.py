"""Where the embedded model lives, and the part of loading a model that needs no torch.

Building the corpus memory's index (model.corpus_memory) is numpy work that leaves the interpreter free, so it starts
on a thread before torch is imported and runs on the other core while torch loads (`prefetch_memory`); the
loader then finds it built.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .corpus_memory import FILE_NAME as MEMORY_FILE
from .corpus_memory import load_memory
from .tokenizer import CodeTokenizer

log = logging.getLogger(__name__)
EMBEDDED_DIR = Path(__file__).parent / "weights"
_STARTED: set[tuple[str, float]] = set()  # memory files (path, mtime) a prefetch has started on
_STARTED_LOCK = threading.Lock()


def embedded_available() -> bool:
    return (EMBEDDED_DIR / "model.safetensors").exists() and (EMBEDDED_DIR / "tokenizer.json").exists()


def local_folder(source: str) -> Path | None:
    """The folder a model setting names on this disk ("" = the embedded model), or None (a hub id)."""
    try:
        folder = EMBEDDED_DIR if not source else Path(source).expanduser()
        return folder if folder.is_dir() else None
    except (OSError, ValueError, RuntimeError):  # a NUL in the name, an unknown ~user: the loader reports it
        return None


def prefetch_memory(source: str) -> threading.Thread | None:
    """Starts building the corpus memory beside the model `source` names, when it is on this disk; the loader's
    own load_memory call then waits for this one (or finds it done). Failures are left for that call to report."""
    folder = local_folder(source)
    if folder is None or not (folder / MEMORY_FILE).exists() or not (folder / "tokenizer.json").exists():
        return None
    stamp = (str((folder / MEMORY_FILE).resolve()), (folder / MEMORY_FILE).stat().st_mtime)
    with _STARTED_LOCK:
        if stamp in _STARTED:  # started already (at `initialize`, then again by the loader): one build is enough
            return None
        _STARTED.add(stamp)

    def build() -> None:
        try:
            vocab = CodeTokenizer.from_file(folder / "tokenizer.json").vocab_size
            load_memory(folder / MEMORY_FILE, vocab)
        except Exception:  # noqa: BLE001 - the loader loads it again and says why
            log.debug("memory prefetch failed", exc_info=True)

    # Not a daemon: the interpreter waits the second it takes at exit. A daemon thread is stopped mid-sort instead,
    # and the stop unwinding through numpy's C++ aborts the process ("FATAL: exception not rethrown", SIGABRT).
    thread = threading.Thread(target=build, name="diffill-memory", daemon=False)
    thread.start()
    return thread
