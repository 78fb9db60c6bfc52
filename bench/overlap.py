"""The contamination check every quality command prints: how much of the evaluated text the model trained on.

A figure counts only on code the model never saw. The embedded model ships its training fingerprints
(diffill.training.fingerprints) beside its weights; a model folder without them (or a hub id, a server) gets an
"unknown" line instead of a share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from diffill.model.embedded import local_folder
from diffill.training.fingerprints import FILE_NAME, load_fingerprints, overlap

WARN_SHARE = 0.02  # above this share of the evaluated text in the training corpus, the figures flatter the model


def fingerprints_path(model: str) -> Path | None:
    """The fingerprints file beside the model a setting names ("" = the embedded model), if there is one."""
    folder = local_folder(model or "")
    path = folder / FILE_NAME if folder is not None else None
    return path if path is not None and path.exists() else None


def training_overlap(texts: Iterable[str], model: str = "") -> float | None:
    """The share of `texts` that the model's training corpus holds; None where the model ships no fingerprints."""
    path = fingerprints_path(model)
    if path is None:
        return None
    return overlap(load_fingerprints(path), texts)[0]


def report_overlap(texts: Iterable[str], model: str = "", out: Callable[[str], None] = print) -> float | None:
    """Prints `training overlap: N %` on a line of its own (and a warning above WARN_SHARE); returns the share."""
    share = training_overlap(texts, model)
    if share is None:
        out(f"training overlap: unknown (no {FILE_NAME} beside the model {model or '(embedded)'})")
        return None
    out(f"training overlap: {100 * share:.1f} %")
    if share > WARN_SHARE:
        out(
            f"warning: the model trained on {100 * share:.0f} % of this code; its figures here flatter it "
            "(held-out sets: `diffill bench heldout`, docs/benchmarks.md)"
        )
    return share
