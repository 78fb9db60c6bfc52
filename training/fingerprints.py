"""Training fingerprints: which text a model's training corpus holds, shipped without the corpus.

A quality figure counts only on code the model never saw: a package it trained on (or that its corpus memory holds)
flatters it. The fingerprints are hashes of windows of WINDOW_LINES consecutive code lines of the training split,
kept where the hash falls in one bucket of SAMPLE_MOD (the same windows are kept wherever they occur, so a
text's kept windows can be looked up; a sample keeps the file small). `overlap` says what share of a text's
kept windows the training corpus holds: near 0 on code the model never saw, near 1 on its training files.

Lines are compared without their indentation or inner spacing; blank lines and lines of fewer than MIN_LINE_CHARS
characters (a lone `}` or `else:`) are skipped, so that a window is four lines that say something.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from .card import set_section

FILE_NAME = "fingerprints.safetensors"
DATA_SECTION = "## Training fingerprints"
WINDOW_LINES = 4  # with the two below: docs/benchmarks.md, "Tuned constants"
MIN_LINE_CHARS = 6
SAMPLE_MOD = 8  # one window in this many is kept (the file's size against the sample's noise on a small set)
COMMON_FILES = 8  # a window in more training files than this is boilerplate (a licence header), not code


def _lines(text: str) -> list[str]:
    """The text's lines that count, normalised: inner whitespace collapsed, short and blank lines left out."""
    out = []
    for line in text.splitlines():
        norm = " ".join(line.split())
        if len(norm) >= MIN_LINE_CHARS:
            out.append(norm)
    return out


def window_hashes(text: str) -> np.ndarray:
    """The 64-bit hashes of every window of WINDOW_LINES consecutive counted lines of `text`, in order."""
    lines = _lines(text)
    hashes = [
        int.from_bytes(
            hashlib.blake2b("\n".join(lines[i : i + WINDOW_LINES]).encode(), digest_size=8).digest(), "little"
        )
        for i in range(len(lines) - WINDOW_LINES + 1)
    ]
    return np.array(hashes, dtype=np.uint64)


def sampled(hashes: np.ndarray) -> np.ndarray:
    """The hashes kept as fingerprints: those in bucket 0 of SAMPLE_MOD."""
    return hashes[hashes % np.uint64(SAMPLE_MOD) == 0]


def fingerprint(texts: Iterable[str]) -> np.ndarray:
    """Sorted, distinct fingerprints of many texts (a training split), less the windows of more than COMMON_FILES
    texts: a licence header is in thousands of files, and in the held-out ones too."""
    parts = [np.unique(sampled(window_hashes(t))) for t in texts]
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    prints, files = np.unique(np.concatenate(parts), return_counts=True)
    return prints[files <= COMMON_FILES]


def save_fingerprints(path: str | Path, prints: np.ndarray, files: int) -> None:
    meta = {"format": "diffill-fingerprints", "window_lines": str(WINDOW_LINES), "sample_mod": str(SAMPLE_MOD)}
    save_file(
        {"hashes": np.ascontiguousarray(prints, dtype=np.uint64)}, str(path), metadata=meta | {"files": str(files)}
    )


def load_fingerprints(path: str | Path) -> np.ndarray:
    return load_file(str(path))["hashes"]


def build_fingerprints(corpus: str | Path, out: str | Path) -> tuple[int, int]:
    """Fingerprints of a training split (.jsonl of {"path", "text"}, as `diffill train corpus` writes it) written to
    `out`; returns (files, fingerprints)."""
    from .corpus import iter_docs

    texts = [doc["text"] for doc in iter_docs(Path(corpus))]
    prints = fingerprint(texts)
    save_fingerprints(out, prints, len(texts))
    body = (
        f"`{Path(out).name}`: {len(prints):,} hashes of windows of {WINDOW_LINES} code lines (one window in "
        f"{SAMPLE_MOD}) of the {len(texts):,} files of the training split, written by `diffill train fingerprints`. "
        "The quality commands (`diffill eval`, `diffill bench typing`, ...) print from them the share of the "
        "evaluated code the model trained on (`training overlap: N %`)."
    )
    set_section(Path(out).parent / "DATA.md", DATA_SECTION, body)
    return len(texts), len(prints)


def overlap(prints: np.ndarray, texts: Iterable[str]) -> tuple[float, int]:
    """(share of the texts' kept windows that the fingerprints hold, how many kept windows were looked up)."""
    kept = [sampled(window_hashes(t)) for t in texts]
    windows = np.concatenate(kept) if kept else np.zeros(0, dtype=np.uint64)
    if not len(windows) or not len(prints):
        return 0.0, len(windows)
    at = np.searchsorted(prints, windows).clip(max=len(prints) - 1)
    return float(np.mean(prints[at] == windows)), len(windows)
