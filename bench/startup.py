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


# ---------------------------------------------------------------- the first answers in a big workspace

KEYSTROKE_GAP_S = 0.05  # a fast typist
TYPED_LINES = 4  # lines typed back after the first answer, a keystroke and a request each
FIRST_ANSWER_S = 60  # a launch with no answer by then reports none
PHASES = {"loading": "while the model loads", "indexing": "while indexing", "after": "after"}


def _typing_document(root: str) -> tuple[str, str, str]:
    """(uri, the text opened, the text then typed): a Python file of the root with lines to type, opened as a new
    unsaved file beside it (the user starts a module), cut a third of the way down after a line's first word."""
    for path in sorted(Path(root).rglob("*.py")):
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        cut = len(lines) // 3
        block = lines[cut : cut + TYPED_LINES]
        head = len(block[0]) - len(block[0].lstrip()) + 4 if block else 0
        typed = "\n".join(block)[head:]
        if len(lines) >= 30 and len(block[0].strip()) > 8 and len(typed) > 40 and max(map(len, block)) < 120:
            uri = (path.parent / f"diffill_startup_probe_{path.stem}.py").resolve().as_uri()
            return uri, "\n".join(lines[:cut]) + "\n" + block[0][:head], typed
    raise RuntimeError(f"no Python file to type in under {root}")


def _position(text: str) -> dict:
    return {"line": text.count("\n"), "character": len(text) - (text.rfind("\n") + 1)}


def _keystroke(client: RawClient, uri: str, text: str, ch: str, version: int) -> float:
    """Types `ch` at the end of `text` and asks for the inline completion there: the request's milliseconds."""
    at = _position(text)
    change = {"range": {"start": at, "end": at}, "text": ch}
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})  # fmt: skip
    t0 = time.perf_counter()
    client.result("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": _position(text + ch), "context": {"triggerKind": 2}})  # fmt: skip
    return (time.perf_counter() - t0) * 1e3


def first_answers(root: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One launch with `root` as the workspace: the ms from the `initialize` answer to the first non-empty
    completion (a request every KEYSTROKE_GAP_S from then on), then the keystrokes' latencies by what the daemon
    was doing: loading the model (answers from the code around alone), building the workspace index, done."""
    client = RawClient(env={"DIFFILL_TEST_HOOKS": "0"})
    try:
        client.initialize(settings, str(Path(root).resolve()))
        initialized = time.perf_counter()
        uri, text, typed = _typing_document(root)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
        first_ms = None
        while first_ms is None and time.perf_counter() - initialized < FIRST_ANSWER_S:
            params = {"textDocument": {"uri": uri}, "position": _position(text), "context": {"triggerKind": 2}}
            answer = client.result("textDocument/inlineCompletion", params, timeout=TIMEOUT_S)
            if (answer or {}).get("items"):
                first_ms = (time.perf_counter() - initialized) * 1e3
            else:
                time.sleep(KEYSTROKE_GAP_S)
        phases: dict[str, list[float]] = {"loading": [], "indexing": [], "after": []}
        version, done = 1, 0
        while done < 3 * len(typed) and time.perf_counter() - initialized < TIMEOUT_S:
            status = client.status()
            phase = "loading" if not status["ready"] else "indexing" if status["workspace"]["indexing"] else "after"
            if phase == "after" and not phases["indexing"] and done == len(phases["loading"]) and done > 0:
                break  # the index was built before the model was ready: nothing to compare
            ch = typed[done % len(typed)]
            version += 1
            phases[phase].append(_keystroke(client, uri, text, ch, version))
            text += ch
            done += 1
            if len(phases["after"]) >= len(typed):
                break
            time.sleep(KEYSTROKE_GAP_S)
        status = client.status()
        client.shutdown()
    finally:
        client.close()
    return {"first_answer_ms": first_ms, **phases, "files": status["workspace"]["files"]}


def _p95(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * 0.95))] if s else 0.0


def run_first_answers(
    root: str, runs: int = 3, settings: dict[str, Any] | None = None, out: Callable[[str], None] = print
) -> dict:
    """`runs` launches: the first answer after `initialize`, and keystroke latency while the model loads, while the
    index builds and after."""
    firsts: list[float | None] = []
    phases: dict[str, list[float]] = {"loading": [], "indexing": [], "after": []}
    for i in range(runs):
        got = first_answers(root, settings or {})
        firsts.append(got["first_answer_ms"])
        for name, times in phases.items():
            times += got[name]
        shown = "never" if got["first_answer_ms"] is None else f"{got['first_answer_ms']:.0f} ms"
        counts = ", ".join(f"{len(got[n])} {PHASES[n]} (p95 {_p95(got[n]):.0f} ms)" for n in phases)
        out(f"launch {i + 1}: first answer {shown} after initialize; keystrokes {counts}; {got['files']} files indexed")
    answered = [f for f in firsts if f is not None]
    during, after = phases["indexing"], phases["after"]
    ratio = _p95(during) / _p95(after) if during and after else None
    out(
        f"median first answer {statistics.median(answered):.0f} ms after initialize; keystroke p95 while the model "
        f"loads {_p95(phases['loading']):.0f} ms, while indexing {_p95(during):.0f} ms, after {_p95(after):.0f} ms"
        + (f" (ratio {ratio:.2f})" if ratio else "")
        if answered
        else "no answer"
    )
    p95s = {f"{name}_p95_ms": _p95(times) for name, times in phases.items()}
    return {"first_answer_ms": firsts, **p95s, "ratio": ratio}
