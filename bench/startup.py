"""`diffill bench startup`: launches of `diffill serve` timed from the process start to the `initialize` answer
and to `diffill/status` saying ready, as an editor sees them (over stdio, through bench.wire's bare client)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .wire import RawClient

TIMEOUT_S = 120


def launch(root: str, settings: dict[str, Any]) -> tuple[float, float]:
    """One launch: (ms to the `initialize` answer, ms to ready)."""
    started = time.perf_counter()
    client = RawClient(env={"DIFFILL_TEST_HOOKS": "0"})  # the daemon as an editor starts it
    try:
        client.initialize(settings, str(Path(root).resolve()))
        initialized = time.perf_counter()
        if not client.wait_ready(TIMEOUT_S, poll=0.02)["ready"]:
            raise RuntimeError("the model did not load")
        ready = time.perf_counter()
        client.shutdown()
    finally:
        client.close()
    return (initialized - started) * 1e3, (ready - started) * 1e3


def run(root: str, runs: int = 5, settings: dict[str, Any] | None = None, out: Callable[[str], None] = print) -> dict:
    """`runs` launches one after another; prints each and the medians."""
    times = []
    for i in range(runs):
        init_ms, ready_ms = launch(root, settings or {})
        times.append((init_ms, ready_ms))
        out(f"launch {i + 1}: initialize answered at {init_ms:.0f} ms, model ready at {ready_ms:.0f} ms")
    inits, readies = [t[0] for t in times], [t[1] for t in times]
    out(f"median of {runs}: initialize {statistics.median(inits):.0f} ms, ready {statistics.median(readies):.0f} ms")
    return {"initialize_ms": inits, "ready_ms": readies}
