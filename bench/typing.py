"""`diffill bench typing`: what a typist gains from the ghost text, through the real daemon.

For each case, K consecutive lines of a real file are deleted (the code below stays) and a simulated user types
them back one character at a time, as in an editor with ghost text: after a newline the indentation comes free
(auto-indent), after every keystroke the client sends `didChange` and `textDocument/inlineCompletion`, and when
the suggestion is exactly what the user was about to type (the whole of it, possibly several lines) the user
accepts it with one key; otherwise they type on and the suggestion counts as a wrong one shown.

The same loop runs three suggesters without a model beside the daemon: Vim's Ctrl-P (the word being typed
completed with the nearest word of the buffer that extends it), an oracle offering the rest of the line, and what
the daemon answers while its model loads (infill.sources.lookup, run in this process). What
is reported for each: keystrokes saved (1 - keystrokes used / keystrokes without completion), wrong suggestions per
100 keystrokes typed, accepted suggestions and their mean length, and (for the daemon) request latency.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffill.bench.cases import source_texts
from diffill.bench.lsp import initialize_params, position, shown_settings, wait_read
from diffill.infill.context.folder import FolderFiles
from diffill.infill.context.neighbours import neighbours_of
from diffill.infill.languages import language_for
from diffill.infill.sources.lookup import LookupAnswers, embedded_lookups
from diffill.model.embedded import prefetch_memory

from .overlap import report_overlap

MAX_FILE_CHARS = 300_000  # bigger files are left out of the cases (`diffill bench lsp --big` times those)
MAX_LINE_CHARS = 160  # nor are lines longer than this typed (generated or minified code)
MIN_LINE = 3  # the deleted lines start below this line, so the file has a head to read
WORD_BEFORE = re.compile(r"\w+$")


@dataclass(frozen=True)
class TypingCase:
    """Lines deleted from a real file: the document holds `before`, the first line's indentation, then `after`;
    the user types `typed` (the lines, less that indentation) at the cursor."""

    path: str
    before: str  # the text above the deleted lines (ends with a newline)
    indent: str  # the first deleted line's indentation, given (the user pressed Enter above it)
    typed: str  # what the user types: the deleted lines joined by newlines, less `indent`
    after: str  # the newline that ended the last deleted line and the code below

    @property
    def language(self) -> str:
        return language_for(None, self.path) or "plaintext"


def typing_cases(roots: list[str], n: int, lines: int, rng: random.Random) -> list[TypingCase]:
    """`n` cases, one per file in `source_texts`' seeded order: `lines` consecutive lines starting at a non-blank
    line (the block may hold blank lines, which are typed as newlines)."""
    cases = []
    for path, text in source_texts(roots, rng):
        if len(cases) >= n:
            break
        if len(text) > MAX_FILE_CHARS:
            continue
        rows = text.split("\n")
        starts = [
            i
            for i in range(MIN_LINE, len(rows) - lines)
            if rows[i].strip() and all(len(r) <= MAX_LINE_CHARS for r in rows[i : i + lines])
        ]
        if not starts:
            continue
        i = rng.choice(starts)
        block = rows[i : i + lines]
        indent = block[0][: len(block[0]) - len(block[0].lstrip())]
        cases.append(
            TypingCase(
                path=str(path),
                before="".join(r + "\n" for r in rows[:i]),
                indent=indent,
                typed="\n".join(block)[len(indent) :],
                after="\n" + "\n".join(rows[i + lines :]),
            )
        )
    return cases


@dataclass(frozen=True)
class Keystroke:
    """What the client sends after the user acted: the text inserted at `at` (a typed character with any free
    indentation, or an accepted suggestion) in the document before it."""

    at: int
    text: str


# A suggester sees the document, the cursor and the keystroke that led there, and returns what it proposes to
# insert at the cursor (a suggestion that also replaces text around it is given as the document it would make).
Suggest = Callable[[str, int, Keystroke | None], Awaitable[str | tuple[str, int] | None]]


@dataclass
class Tally:
    """Counts over all cases of one suggester."""

    keystrokes_without: int = 0  # the characters a user types with no completion (indentation comes free)
    keystrokes: int = 0  # what the user pressed: typed characters plus accepts
    accepted: int = 0
    accepted_chars: int = 0
    wrong: int = 0  # suggestions shown and not accepted
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        lat = sorted(self.latencies_ms)
        pick = (lambda q: round(lat[min(len(lat) - 1, int(len(lat) * q))], 1)) if lat else (lambda q: 0.0)
        return {
            "saved": round(1 - self.keystrokes / max(1, self.keystrokes_without), 4),
            "wrong_per_100": round(100 * self.wrong / max(1, self.keystrokes), 2),
            "accepted": self.accepted,
            "mean_accepted_chars": round(self.accepted_chars / max(1, self.accepted), 1),
            "keystrokes": self.keystrokes,
            "keystrokes_without": self.keystrokes_without,
            "requests": len(lat),
            "p50_ms": pick(0.5),
            "p95_ms": pick(0.95),
        }


def free_indent(typed: str, p: int) -> int:
    """Where the user's typing resumes at `p`: past the indentation of a line that starts there (auto-indent)."""
    if p == 0 or typed[p - 1] != "\n":
        return p
    q = p
    while q < len(typed) and typed[q] in " \t":
        q += 1
    return q


def accepted_length(suggestion: str | tuple[str, int] | None, document: str, cursor: int, rest: str) -> int:
    """How many characters of `rest` (what the user is about to type) accepting `suggestion` writes: 0 unless
    its whole effect is to insert a start of `rest` at the cursor. A suggestion is the text to insert at the
    cursor, or (new document, new cursor) for one that also replaces text around it."""
    if not suggestion:
        return 0
    if isinstance(suggestion, str):
        return len(suggestion) if rest.startswith(suggestion) else 0
    new_doc, new_cursor = suggestion
    k = new_cursor - cursor
    if k <= 0 or len(new_doc) - len(document) != k:
        return 0
    same = new_doc[:cursor] == document[:cursor] and new_doc[new_cursor:] == document[cursor:]
    return k if same and rest.startswith(new_doc[cursor:new_cursor]) else 0


async def type_case(case: TypingCase, suggest: Suggest, tally: Tally) -> list[dict]:
    """Types one case through `suggest`; returns the suggestions shown (for --dump)."""
    document = case.before + case.indent + case.after
    head = len(case.before) + len(case.indent)  # the document offset of `typed`'s start
    p = 0  # how much of `typed` is in the document
    tally.keystrokes_without += len(case.typed) - sum(
        free_indent(case.typed, q) - q for q in range(1, len(case.typed)) if case.typed[q - 1] == "\n"
    )
    shown: list[dict] = []
    keystroke: Keystroke | None = None
    while p < len(case.typed):
        cursor = head + p
        suggestion = await suggest(document, cursor, keystroke)
        rest = case.typed[p:]
        k = accepted_length(suggestion, document, cursor, rest)
        if k:
            tally.accepted += 1
            tally.accepted_chars += k
            insert = rest[:k]
        else:
            insert = rest[:1]
            if suggestion:
                tally.wrong += 1
        tally.keystrokes += 1
        if suggestion:
            text = suggestion if isinstance(suggestion, str) else suggestion[0][cursor : suggestion[1]]
            shown.append({"at": p, "suggestion": text, "accepted": bool(k)})
        q = free_indent(case.typed, p + len(insert))
        insert = case.typed[p:q]
        document = document[:cursor] + insert + document[cursor:]
        keystroke = Keystroke(cursor, insert)
        p = q
    return shown


# ---------------------------------------------------------------- suggesters without a model


async def ctrl_p(document: str, cursor: int, _keystroke: Keystroke | None) -> str | None:
    """Vim's Ctrl-P: the nearest word before the cursor that extends the word being typed, else the last one
    below it (the search wraps around the buffer)."""
    word = WORD_BEFORE.search(document, max(0, cursor - 200), cursor)
    if word is None:
        return None
    prefix = word.group(0)
    pattern = re.compile(rf"(?<!\w){re.escape(prefix)}\w+")
    found = _last(pattern.finditer(document, 0, word.start())) or _last(pattern.finditer(document, cursor))
    return found.group(0)[len(prefix) :] if found is not None else None


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    return next(iter(deque(matches, maxlen=1)), None)


def line_oracle(case: TypingCase) -> Suggest:
    """An oracle that always offers the rest of the line the user is typing."""
    head = len(case.before) + len(case.indent)

    async def suggest(document: str, cursor: int, _keystroke: Keystroke | None) -> str | None:
        rest = case.typed[cursor - head :]
        return rest.split("\n", 1)[0] or None

    return suggest


def before_model(case: TypingCase, lookups: LookupAnswers, folder: FolderFiles, tally: Tally) -> Suggest:
    """The daemon's answers while its model loads: the code around and the corpus memory alone, the document open
    under the file's own path (so its saved copy, which holds the truth, is left out as the daemon leaves it out)."""

    async def suggest(document: str, cursor: int, _keystroke: Keystroke | None) -> str | None:
        t0 = time.perf_counter()
        around = neighbours_of(case.path, lambda: {case.path: document}, folder, None)
        answer = lookups.answer(document, cursor, around)
        tally.latencies_ms.append((time.perf_counter() - t0) * 1e3)
        return answer

    return suggest


# ---------------------------------------------------------------- the daemon


def _offset(text: str, pos: types.Position) -> int:
    """The string offset of an LSP position (UTF-16 characters)."""
    start = 0
    for _ in range(pos.line):
        start = text.index("\n", start) + 1
    line_end = text.find("\n", start)
    line = text[start : line_end if line_end >= 0 else len(text)]
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


class Daemon:
    """`diffill serve` over stdio, driven like an editor: one document at a time, a request per keystroke."""

    def __init__(self, roots: list[str], settings: dict):
        self.roots = roots
        self.settings = settings
        self.client = LanguageClient("diffill-bench-typing", "1")
        self.uri = ""
        self.version = 0

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "diffill.lsp.cli", "serve")
        await self.client.initialize_async(initialize_params(self.roots, self.settings))
        self.client.initialized(types.InitializedParams())
        launched = time.perf_counter()
        while not getattr(await self.client.protocol.send_request_async("diffill/status", None), "ready", False):
            if time.perf_counter() - launched > 120:
                raise RuntimeError("model did not load")
            await asyncio.sleep(0.05)

    async def open(self, case: TypingCase, text: str) -> None:
        """Opens the case's document under the file's own URI, as an editor does (so the server never copies from
        the file's saved version, which holds the truth), then waits until the files beside it are read."""
        self.uri = Path(case.path).resolve().as_uri()
        self.version = 1
        item = types.TextDocumentItem(uri=self.uri, language_id=case.language, version=1, text=text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        await wait_read(self.client)

    def close(self) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(self.uri)))

    def suggester(self, tally: Tally) -> Suggest:
        async def suggest(document: str, cursor: int, keystroke: Keystroke | None) -> tuple[str, int] | None:
            t0 = time.perf_counter()
            if keystroke is not None:
                before = document[: keystroke.at]  # the document the keystroke was typed into, up to it
                pos = position(before, keystroke.at)
                self.version += 1
                self.client.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                        content_changes=[
                            types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=keystroke.text)
                        ],
                    )
                )
            res = await self.client.text_document_inline_completion_async(
                types.InlineCompletionParams(
                    text_document=types.TextDocumentIdentifier(self.uri),
                    position=position(document, cursor),
                    context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
                )
            )
            tally.latencies_ms.append((time.perf_counter() - t0) * 1e3)
            if not res or not res.items or not res.items[0].insert_text:
                return None
            item = res.items[0]
            text = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
            if item.range is None:
                start = end = cursor
            else:
                start, end = _offset(document, item.range.start), _offset(document, item.range.end)
            return document[:start] + text + document[end:], start + len(text)

        return suggest

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


# ---------------------------------------------------------------- the run


async def _run(
    roots: list[str], n: int, seed: int, lines: int, settings: dict, out: Callable[[str], None], dump: str | None
) -> dict[str, dict[str, float]]:
    cases = typing_cases(roots, n, lines, random.Random(seed))
    tallies = {"diffill": Tally(), "before the model": Tally(), "ctrl-p": Tally(), "line oracle": Tally()}
    dumped = []
    lookups, folder = embedded_lookups(), FolderFiles()
    if lookups is not None:  # the daemon has its corpus memory a second or two after start (model.embedded)
        prefetched = prefetch_memory("")
        if prefetched is not None:
            prefetched.join()
    for case in cases:
        await type_case(case, ctrl_p, tallies["ctrl-p"])
        await type_case(case, line_oracle(case), tallies["line oracle"])
        if lookups is not None:
            await type_case(case, before_model(case, lookups, folder, tallies["before the model"]), tallies["before the model"])  # fmt: skip
    daemon = Daemon(roots, settings)
    await daemon.start()
    try:
        for case in cases:
            await daemon.open(case, case.before + case.indent + case.after)
            ours = tallies["diffill"]
            used, without = ours.keystrokes, ours.keystrokes_without
            shown = await type_case(case, daemon.suggester(ours), ours)
            daemon.close()
            keys = {"keystrokes": ours.keystrokes - used, "keystrokes_without": ours.keystrokes_without - without}
            dumped.append(
                asdict(case) | {"before": case.before[-300:], "after": case.after[:300], "shown": shown} | keys
            )
        status = await daemon.client.protocol.send_request_async("diffill/status", None)
    finally:
        await daemon.stop()
    result = {name: tally.summary() for name, tally in tallies.items()}
    requests = getattr(status.cost, "server_requests", 0) or 0
    if requests:  # a server model: its share of the keystrokes' time, the rest diffill's own
        ours = tallies["diffill"].latencies_ms
        server_ms = status.cost.server_ms / requests
        result["server"] = {"requests": requests, "ms_per_request": round(server_ms, 1),
                            "share_of_latency": round(status.cost.server_ms / max(1e-9, sum(ours)), 3)}  # fmt: skip
    shown = json.dumps(shown_settings(settings))
    out(f"typing roots={' '.join(roots)} cases={len(cases)} lines={lines} seed={seed} settings={shown}")
    texts = {c.path: c.before + c.indent + c.typed + c.after for c in cases}.values()
    result["training_overlap"] = report_overlap(texts, settings.get("model", ""), out)
    if "server" in result:
        srv = result["server"]
        out(f"server: {srv['requests']} requests, {srv['ms_per_request']} ms each, {srv['share_of_latency']:.0%} of "
            "the keystrokes' time (the rest: diffill's own)")  # fmt: skip
    out("| suggester | keystrokes saved | wrong per 100 keystrokes | accepted | mean accepted chars | p50 / p95 ms |")
    out("|---|---|---|---|---|---|")
    for name in tallies:
        s = result[name]
        lat = f"{s['p50_ms']} / {s['p95_ms']}" if s["requests"] else "-"
        out(
            f"| {name} | {s['saved']:.3f} | {s['wrong_per_100']:.1f} | {s['accepted']} | "
            f"{s['mean_accepted_chars']} | {lat} |"
        )
    out(json.dumps(result))
    if dump is not None:
        Path(dump).write_text("".join(json.dumps(d) + "\n" for d in dumped))
    return result


def run(
    roots: list[str],
    n: int = 30,
    seed: int = 0,
    lines: int = 3,
    settings: dict | None = None,
    out: Callable[[str], None] = print,
    dump: str | None = None,
) -> dict[str, dict[str, float]]:
    """The three suggesters over the same cases; `dump` gets one JSON line per case with what the daemon showed."""
    return asyncio.run(_run(roots, n, seed, lines, settings or {}, out, dump))
