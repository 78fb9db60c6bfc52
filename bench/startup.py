"""`diffill bench startup`: launches of `diffill serve` timed from the process start to the `initialize` answer,
to the editor being told the model loads (`$/progress` begun) and to `diffill/status` saying ready, as an editor
sees them (over stdio, through bench.wire's bare client)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .wire import RawClient

TIMEOUT_S = 120


def _loading_shown_at(client: RawClient) -> float | None:
    """When the `$/progress` that tells the editor the model is loading began (time.perf_counter), if it did."""
    for message, at in zip(list(client.messages), list(client.arrived), strict=False):
        value = (message.get("params") or {}).get("value")
        if message.get("method") == "$/progress" and isinstance(value, dict) and value.get("kind") == "begin":
            return at
    return None


def launch(root: str, settings: dict[str, Any]) -> tuple[float, float, float]:
    """One launch: ms to the `initialize` answer, to the loading shown in the editor (`$/progress` begun) and to
    ready."""
    started = time.perf_counter()
    client = RawClient(env={"DIFFILL_TEST_HOOKS": "0"})  # the daemon as an editor starts it
    try:
        client.initialize(settings, str(Path(root).resolve()))
        initialized = time.perf_counter()
        if not client.wait_ready(TIMEOUT_S, poll=0.02)["ready"]:
            raise RuntimeError("the model did not load")
        ready = time.perf_counter()
        shown = _loading_shown_at(client)
        client.shutdown()
    finally:
        client.close()
    if shown is None:
        raise RuntimeError("the daemon never told the editor it was loading")
    return (initialized - started) * 1e3, (shown - started) * 1e3, (ready - started) * 1e3


def run(root: str, runs: int = 5, settings: dict[str, Any] | None = None, out: Callable[[str], None] = print) -> dict:
    """`runs` launches one after another; prints each and the medians."""
    times = []
    for i in range(runs):
        init_ms, shown_ms, ready_ms = launch(root, settings or {})
        times.append((init_ms, shown_ms, ready_ms))
        out(
            f"launch {i + 1}: initialize answered at {init_ms:.0f} ms, loading shown at {shown_ms:.0f} ms, "
            f"model ready at {ready_ms:.0f} ms"
        )
    inits, shown, readies = ([t[k] for t in times] for k in range(3))
    out(
        f"median of {runs}: initialize {statistics.median(inits):.0f} ms, loading shown "
        f"{statistics.median(shown):.0f} ms, ready {statistics.median(readies):.0f} ms"
    )
    return {"initialize_ms": inits, "loading_shown_ms": shown, "ready_ms": readies}
