"""The cyclic garbage collector paused while the daemon starts.

Start-up makes about a million objects that live as long as the process (torch's and the protocol's modules, the
model): the collector's passes over them while they are made cost about a tenth of the start
(docs/benchmarks.md, "Tuned constants"). `pause` at launch, `resume` once the first model load has settled: what start-up made is
frozen (gc.freeze: later passes, during completions, skip it) and the collector runs again.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freezes what exists and turns the collector back on, if `pause` turned it off (once; later calls do
    nothing, and a collector someone else turned off stays off)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
