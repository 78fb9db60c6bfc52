"""`diffill bench startup`: launches of `diffill serve` timed from the process start to the `initialize` answer
and to `diffill/status` saying ready, as an editor sees them (raw stdio, nothing else in the client)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

TIMEOUT_S = 120


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    pipe.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    pipe.flush()


def _receive(pipe: IO[bytes]) -> dict[str, Any]:
    length = 0
    while True:
        line = pipe.readline()
        if not line:
            raise RuntimeError("the server closed its output")
        if not line.strip():
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(pipe.read(length))


def _answer(proc: subprocess.Popen, request_id: int) -> dict[str, Any]:
    """The response to `request_id`; server-to-client requests on the way (progress tokens) are answered."""
    while True:
        message = _receive(proc.stdout)
        if message.get("id") == request_id and "method" not in message:
            return message
        if "method" in message and "id" in message:
            _send(proc.stdin, {"id": message["id"], "result": None})


def launch(root: str, settings: dict[str, Any]) -> tuple[float, float]:
    """One launch: (ms to the `initialize` answer, ms to ready)."""
    uri = Path(root).resolve().as_uri()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "diffill.lsp.cli", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    try:
        params = {"processId": os.getpid(), "rootUri": uri, "capabilities": {}, "initializationOptions": settings}
        _send(proc.stdin, {"id": 0, "method": "initialize", "params": params})
        _answer(proc, 0)
        initialized = time.perf_counter()
        _send(proc.stdin, {"method": "initialized", "params": {}})
        n = 1
        while True:
            _send(proc.stdin, {"id": n, "method": "diffill/status", "params": None})
            if (_answer(proc, n).get("result") or {}).get("ready"):
                break
            if time.perf_counter() - started > TIMEOUT_S:
                raise RuntimeError("the model did not load")
            n += 1
            time.sleep(0.02)
        ready = time.perf_counter()
        _send(proc.stdin, {"id": n + 1, "method": "shutdown"})
        _answer(proc, n + 1)
        _send(proc.stdin, {"method": "exit"})
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
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
