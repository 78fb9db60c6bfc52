"""`diffill bench lsp`: drive `diffill serve` over stdio as an editor would and time keystroke -> answer.

For each case a real source file is cut at a random point of a line (the rest of the line removed); the
document is opened one character short, then that character is typed (didChange) and an inline completion
requested at once, as editors do on every keystroke. Reported: p50/p95 latency, exact-match and empty rates.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffill.bench.cases import make_case, source_texts
from diffill.bench.evaluate import cost_per_answer, format_cost, shown_wrong
from diffill.infill.cost import Cost
from diffill.infill.text import line_bounds


def position(text: str, offset: int) -> types.Position:
    """The LSP position (UTF-16 characters) of a string offset."""
    line_start = text.rfind("\n", 0, offset) + 1
    return types.Position(text.count("\n", 0, offset), len(text[line_start:offset].encode("utf-16-le")) // 2)


def initialize_params(roots: str | list[str], settings: dict) -> types.InitializeParams:
    """As an editor opens a project: the bench's folders are the workspace (files beside a document are read only
    inside it)."""
    folders = [
        types.WorkspaceFolder(uri=Path(r).resolve().as_uri(), name=Path(r).name)
        for r in ([roots] if isinstance(roots, str) else roots)
    ]
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        initialization_options=settings,
        root_uri=folders[0].uri,
        workspace_folders=folders,
    )


async def wait_read(client: LanguageClient, timeout_s: float = 30.0) -> None:
    """Until the server has read the files beside the documents just opened (diffill/status `warming`): a user
    reads a file before typing in it (the first completion right after opening a new folder is slower: see
    docs/benchmarks.md)."""
    t0 = time.perf_counter()
    while getattr(await client.protocol.send_request_async("diffill/status", None), "warming", 0):
        if time.perf_counter() - t0 > timeout_s:
            break
        await asyncio.sleep(0.01)


async def _run(
    root: str, n: int, seed: int, settings: dict, out: Callable[[str], None], dump: str | None = None
) -> dict:

    rng = random.Random(seed)
    cases = []
    for path, text in source_texts(Path(root), rng):
        if len(cases) >= n:
            break
        case = make_case(str(path), text, rng, "line")
        if case is not None and case.offset > 0 and case.text[case.offset - 1] not in "\n":
            cases.append(case)
    client = LanguageClient("diffill-bench", "1")
    launched = time.perf_counter()
    await client.start_io(sys.executable, "-m", "diffill.lsp.cli", "serve")
    await client.initialize_async(initialize_params(root, settings))
    initialized_ms = (time.perf_counter() - launched) * 1e3
    client.initialized(types.InitializedParams())
    while not getattr(await client.protocol.send_request_async("diffill/status", None), "ready", False):
        if time.perf_counter() - launched > 120:
            raise RuntimeError("model did not load")
        await asyncio.sleep(0.02)
    ready_ms = (time.perf_counter() - launched) * 1e3
    out(f"start-up: initialize answered {initialized_ms:.0f} ms after launch, model ready at {ready_ms:.0f} ms")
    latencies, exact, empty, wrong = [], 0, 0, 0
    own: list[float] = []  # with a server model: each answer's latency less its server requests' time
    served = await _server_ms(client)
    dumped: list[dict] = []
    for case in cases:
        # the file's own URI, as an editor sends it: the server then never copies from the file's saved version on
        # disk (which holds the truth); the files beside it are fair game, as in an editor
        uri = Path(case.path).resolve().as_uri()
        typed_at = case.offset - 1
        start_text = case.text[:typed_at] + case.text[case.offset :]
        lang = {
            ".py": "python",
            ".js": "javascript",
            ".ts": "typescript",
            ".go": "go",
            ".rs": "rust",
            ".c": "c",
            ".java": "java",
            ".lua": "lua",
        }.get(Path(case.path).suffix, "plaintext")
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id=lang, version=1, text=start_text)
            )
        )
        pos = position(start_text, typed_at)
        await wait_read(client)  # keystrokes are timed once the server has read the files beside it
        t0 = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=case.text[typed_at])
                ],
            )
        )
        res = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=position(case.text, case.offset),
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
            )
        )
        latencies.append((time.perf_counter() - t0) * 1e3)
        if served is not None:
            before, served = served, await _server_ms(client)
            own.append(latencies[-1] - (served - before))
        answer = res.items[0].insert_text if res and res.items else ""
        exact += answer.rstrip() == case.truth.rstrip()
        empty += not answer
        wrong += shown_wrong(answer, case.truth)
        if dump is not None:
            dumped.append({"path": case.path, "offset": case.offset, "line": case.text[line_bounds(case.text, case.offset)[0] : case.offset],
                           "truth": case.truth, "answer": answer, "wrong": shown_wrong(answer, case.truth)})  # fmt: skip
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    status = await client.protocol.send_request_async("diffill/status", None)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    latencies.sort()
    k = max(1, len(latencies))
    result = {
        "cases": len(latencies),
        "p50_ms": round(latencies[len(latencies) // 2], 1) if latencies else 0.0,
        "p95_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 1) if latencies else 0.0,
        "exact": round(exact / k, 4),
        "empty": round(empty / k, 4),
        "wrong_shown": round(wrong / max(1, k - empty), 4),  # of the answers shown
        "initialize_ms": round(initialized_ms),
        "ready_ms": round(ready_ms),
    }
    if own and getattr(status.cost, "server_requests", 0):
        own.sort()
        result["own_p50_ms"] = round(own[len(own) // 2], 1)
        result["own_p95_ms"] = round(own[min(len(own) - 1, int(len(own) * 0.95))], 1)
        result["server_ms_per_request"] = round(status.cost.server_ms / status.cost.server_requests, 1)
    cost = answer_cost(status)
    out(f"root={root} cases={result['cases']} settings={json.dumps(shown_settings(settings))}")
    if "own_p95_ms" in result:
        out(
            f"server: {result['server_ms_per_request']} ms a request ({status.cost.server_requests} requests); "
            f"diffill's own time on top, per answer: p50 {result['own_p50_ms']} ms, p95 {result['own_p95_ms']} ms"
        )
    out(
        f"latency p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms; exact {result['exact']:.3f}, "
        f"empty {result['empty']:.3f}, wrong of those shown {result['wrong_shown']:.3f}"
    )
    out(f"model answers: {format_cost(cost)}")
    out(json.dumps(result | {"cost": cost}))
    if dump is not None:
        Path(dump).write_text("".join(json.dumps(d) + "\n" for d in dumped))
    return result


async def _server_ms(client: LanguageClient) -> float | None:
    """The time the daemon's requests to its server took so far (diffill/status), or None: no server model."""
    status = await client.protocol.send_request_async("diffill/status", None)
    if getattr(status, "answering", "local") == "local":
        return None
    return float(getattr(status.cost, "server_ms", 0.0) or 0.0)


def shown_settings(settings: dict) -> dict:
    """The settings as a report prints them: an API key is never shown."""
    return {k: ("(set)" if k in ("apiKey", "api_key") else v) for k, v in settings.items()}


def answer_cost(status) -> dict[str, float]:
    """The daemon's per-answer cost (model passes, drafts and lookups with their accepted tokens, ms and passes by
    stage) from diffill/status."""
    cost = getattr(status, "cost", None)
    ms = getattr(cost, "ms", None)
    stages = ms._asdict() if hasattr(ms, "_asdict") else dict(ms or {})  # pygls hands JSON objects as namedtuples
    passes = getattr(cost, "stage_passes", None)
    stage_passes = passes._asdict() if hasattr(passes, "_asdict") else dict(passes or {})
    total = Cost(
        passes=getattr(cost, "passes", 0) or 0,
        drafts=getattr(cost, "drafts", 0) or 0,
        accepted=getattr(cost, "accepted", 0) or 0,
        lookups=getattr(cost, "lookups", 0) or 0,
        looked_up=getattr(cost, "looked_up", 0) or 0,
        ms=stages,
        stage_passes=stage_passes,
    )
    return cost_per_answer(total, getattr(cost, "answers", 0) or 0)


async def _typing(root: str, n: int, seed: int, settings: dict, out: Callable[[str], None], big_chars: int = 0) -> dict:
    """Types whole lines one character at a time, asking for a completion after every keystroke: the first
    request of a line pays the prompt prefill, the next ones reuse the encoder cache (or the typed-ahead cache).
    With `big_chars`, each line is typed in a document that long (the other files' text before its own): what a
    keystroke costs in a big file. Also reported: what one didChange costs the server and its memory."""

    rng = random.Random(seed)
    lines = []
    texts = list(source_texts(Path(root), rng))
    for path, text in texts:
        if len(lines) >= n:
            break
        rows = text.split("\n")
        cands = [i for i, r in enumerate(rows) if 20 <= len(r.strip()) <= 60 and i > 5]
        if cands:
            i = rng.choice(cands)
            filler = _filler(texts, path, big_chars) if big_chars else ""
            lines.append((path, filler + "\n".join(rows[:i]) + "\n", rows[i], "\n" + "\n".join(rows[i + 1 :])))
    client = LanguageClient("diffill-bench", "1")
    await client.start_io(sys.executable, "-m", "diffill.lsp.cli", "serve")
    await client.initialize_async(initialize_params(root, settings))
    client.initialized(types.InitializedParams())
    while not getattr(await client.protocol.send_request_async("diffill/status", None), "ready", False):
        await asyncio.sleep(0.05)
    first, follow, edits, memory = [], [], [], []
    for path, before, line, after in lines:
        uri = Path(path).resolve().as_uri()  # the file's own (see _run)
        indent = line[: len(line) - len(line.lstrip())]
        text = before + indent + after
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )
        row = before.count("\n")
        col = len(indent)
        for j, ch in enumerate(line[len(indent) :]):
            pos = types.Position(row, col)
            t0 = time.perf_counter()
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=j + 2),
                    content_changes=[types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=ch)],
                )
            )
            col += 1
            await client.text_document_inline_completion_async(
                types.InlineCompletionParams(
                    text_document=types.TextDocumentIdentifier(uri),
                    position=types.Position(row, col),
                    context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
                )
            )
            (first if j == 0 else follow).append((time.perf_counter() - t0) * 1e3)
        edits.append(await _edit_cost(client, uri, types.Position(row, col), len(line) + 2))
        memory.append(getattr(await client.protocol.send_request_async("diffill/status", None), "memory_mb", 0))
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    status = await client.protocol.send_request_async("diffill/status", None)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    first.sort()
    follow.sort()
    result = {
        "lines": len(first),
        "first_p50_ms": round(first[len(first) // 2], 1) if first else 0.0,
        "follow_p50_ms": round(follow[len(follow) // 2], 1) if follow else 0.0,
        "follow_p95_ms": round(follow[int(len(follow) * 0.95)], 1) if follow else 0.0,
        "cache_hits": getattr(status.stats, "cache_hits", 0),
        "model_calls": getattr(status.stats, "model_calls", 0),
        "document_chars": max((len(b) + len(ln) + len(a) for _, b, ln, a in lines), default=0),
        "edit_ms": round(sorted(edits)[len(edits) // 2], 1) if edits else 0.0,
        "memory_mb_first": memory[0] if memory else 0,
        "memory_mb_last": memory[-1] if memory else 0,
        "memory_mb": memory,
    }
    result["ratio"] = round(result["follow_p50_ms"] / max(1e-9, result["first_p50_ms"]), 3)
    out(
        f"typing {result['lines']} lines: first request p50 {result['first_p50_ms']} ms; follow-ups p50 "
        f"{result['follow_p50_ms']} ms, p95 {result['follow_p95_ms']} ms (ratio {result['ratio']}); "
        f"{result['model_calls']} model calls, {result['cache_hits']} typed-ahead hits; documents of up to "
        f"{result['document_chars']} characters, a didChange costs the server {result['edit_ms']} ms, memory "
        f"{result['memory_mb_first']} -> {result['memory_mb_last']} MB"
    )
    out(json.dumps(result))
    return result


def _filler(texts: list[tuple[Path, str]], path: Path, chars: int) -> str:
    """Other files' text, `chars` long at most, to put before a line typed in a big document."""
    parts, size = [], 0
    while size < chars:
        for other, text in texts:
            if other != path and size < chars:
                parts.append(text[: chars - size] + "\n")
                size += len(parts[-1])
        if not parts:
            break
    return "".join(parts)


async def _edit_cost(client: LanguageClient, uri: str, at: types.Position, version: int, reps: int = 5) -> float:
    """Milliseconds the server spends on one didChange (a typed space, then taken back): the round trip of a
    status request behind it, less that of a status request alone."""
    spent = []
    for k in range(reps):
        t0 = time.perf_counter()
        await client.protocol.send_request_async("diffill/status", None)
        alone = time.perf_counter() - t0
        t0 = time.perf_counter()
        for text, end in ((" ", at), ("", types.Position(at.line, at.character + 1))):
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 2 * k + len(text)),
                    content_changes=[types.TextDocumentContentChangePartial(range=types.Range(at, end), text=text)],
                )
            )
        await client.protocol.send_request_async("diffill/status", None)
        spent.append((time.perf_counter() - t0 - alone) * 1e3 / 2)
    return sorted(spent)[reps // 2]


def run_typing(
    root: str,
    n: int = 20,
    seed: int = 0,
    settings: dict | None = None,
    out: Callable[[str], None] = print,
    big_chars: int = 0,
) -> dict:
    return asyncio.run(_typing(root, n, seed, settings or {}, out, big_chars))


def run(
    root: str,
    n: int = 100,
    seed: int = 0,
    settings: dict | None = None,
    out: Callable[[str], None] = print,
    dump: str | None = None,
) -> dict:
    """`dump`: a file for one JSON line per case (the line before the cursor, the truth, the answer shown)."""
    return asyncio.run(_run(root, n, seed, settings or {}, out, dump))
