"""`diffill bench soak`: many completions with random edits and cancels against one `diffill serve` process.

A daemon that lives as long as the editor must not grow, leak threads or descriptors, or slow down. This drives the
real server over stdio as an editor would (type, request, sometimes cancel or supersede, sometimes close and reopen a
file) and reports, from /proc: RSS after warm-up and at the end (and of it the anonymous pages, the heap's, and the
file-backed ones, code paged in), threads and open descriptors, and the p50/p95 latency of the first and the last
window of requests (1000, or a third of the run when shorter), with RSS and latency at every tenth of the run (a
leak grows in every tenth) and the types of object that grew most. With `allocations`,
the server traces its Python allocations (tracemalloc) from the first request and the sites whose live memory
grew most are reported (the tracing slows the server: its latencies are not the daemon's). The server runs with
DIFFILL_TEST_HOOKS=1 so that the soak can read the documents back and count the server's own structures, among
them glibc's heap (`heap_in_use_kb` grows with a leak, native or of Python's larger blocks, `heap_held_free_kb`
with fragmentation). Before the run each document is completed once at its longest, so that the warm-up has seen
the sizes the run takes them to. The last window replays the first (the same documents, edits, cancels and
requests, from the same random state): its latencies, and the RSS at the end against the RSS after the first window,
compare the daemon with itself, not one stretch of the workload with another. RSS after warm-up, at each tenth and
at the end is read once the daemon has been idle long enough to hand its freed heap back (lsp/heap.py, IdleTrim):
what it holds while the user pauses; at each tenth it is read first as the run left it (mid-typing,
`busy_rss_series_kb`), and the peak whenever.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from diffill.lsp.heap import IDLE_TRIM_S

from .wire import RawClient, proc_figures

SETTLE_SAMPLES = 3  # RSS samples 50 ms apart once idle, the least kept (a cancelled generation ends at its next step)
TRIM_MARGIN_S = 0.3  # waited past IDLE_TRIM_S for the trim itself to run

SNIPPETS = [
    "import os\nimport sys\n\n\ndef main():\n    args = sys.argv[1:]\n    for arg in args:\n        print(",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.",
    "def add(a, b):\n    return ",
    "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.",
]
MAX_DOC_CHARS = 1500
ALLOCATION_FRAMES = 8  # the calls kept per traced allocation: a memo's site alone does not say who fills it
TYPED = "value = compute(items, key=lambda item: item.name)\nresult.append(value)\n"


@dataclass
class SoakReport:
    requests: int
    answered: int = 0
    cancelled: int = 0
    errors: int = 0
    seconds: float = 0.0
    warm: dict = field(default_factory=dict)  # /proc figures after warm-up
    end: dict = field(default_factory=dict)
    warm_counts: dict = field(default_factory=dict)  # the server's own structures (diffill/debugCounts)
    end_counts: dict = field(default_factory=dict)
    peak_rss_kb: int = 0
    rss_series_kb: list[int] = field(default_factory=list)  # every tenth of the run, idle: a leak grows steadily
    busy_rss_series_kb: list[int] = field(default_factory=list)  # every tenth, as the typing left it
    latency_series_ms: list[tuple[float, float]] = field(default_factory=list)  # p50, p95 of each tenth
    stage_series_ms: list[dict[str, float]] = field(default_factory=list)  # each tenth's mean ms an answer by stage
    type_growth: list[tuple[str, int]] = field(default_factory=list)  # object types that grew most after warm-up
    allocation_growth: list[dict] = field(default_factory=list)  # with `allocations`: the sites that grew most
    window: int = 0
    window_digests: list[str] = field(default_factory=list)  # the first and last windows' requests: equal, replayed
    first_p50_ms: float = 0.0
    first_p95_ms: float = 0.0
    last_p50_ms: float = 0.0
    last_p95_ms: float = 0.0
    documents_consistent: bool = True
    exit_code: int | None = None
    exit_seconds: float = 0.0

    @property
    def rss_growth(self) -> float:
        return (self.end["rss_kb"] - self.warm["rss_kb"]) / max(1, self.warm["rss_kb"])

    def lines(self) -> list[str]:
        return [
            f"requests {self.requests} in {self.seconds:.1f} s: {self.answered} answered, {self.cancelled} cancelled, "
            f"{self.errors} errors",
            f"RSS {self.warm['rss_kb'] / 1024:.1f} MiB after warm-up -> {self.end['rss_kb'] / 1024:.1f} MiB at the end "
            f"({100 * self.rss_growth:+.1f} %), peak {self.peak_rss_kb / 1024:.1f} MiB; every tenth: "
            + " ".join(f"{kb / 1024:.0f}" for kb in self.rss_series_kb)
            + "; while typing: "
            + " ".join(f"{kb / 1024:.0f}" for kb in self.busy_rss_series_kb),
            f"of it anonymous {self.warm['rss_anon_kb'] / 1024:.1f} -> {self.end['rss_anon_kb'] / 1024:.1f} MiB, "
            f"file-backed {self.warm['rss_file_kb'] / 1024:.1f} -> {self.end['rss_file_kb'] / 1024:.1f} MiB",
            f"threads {self.warm['threads']} -> {self.end['threads']}, open fds {self.warm['fds']} -> {self.end['fds']}",
            f"latency first {self.window}: p50 {self.first_p50_ms:.1f} ms, p95 {self.first_p95_ms:.1f} ms; "
            f"last {self.window}: p50 {self.last_p50_ms:.1f} ms, p95 {self.last_p95_ms:.1f} ms; every tenth (p50/p95): "
            + " ".join(f"{a:.0f}/{b:.0f}" for a, b in self.latency_series_ms),
            "server structures after warm-up -> end: "
            + ", ".join(f"{k} {v} -> {self.end_counts.get(k)}" for k, v in self.warm_counts.items()),
            "an answer's ms by stage, first tenth -> last: " + self._stages(),
            "object types grown after warm-up: " + (", ".join(f"{t} +{n}" for t, n in self.type_growth) or "none"),
            *(
                f"  grown at {a['site']}: {a['kib']:+.1f} KiB in {a['blocks']:+d} blocks"
                for a in self.allocation_growth
            ),
            f"documents match the client: {self.documents_consistent}; exit code {self.exit_code} "
            f"after {self.exit_seconds:.2f} s",
            json.dumps({**asdict(self), "rss_growth": round(self.rss_growth, 4)}),
        ]

    def _stages(self) -> str:
        if not self.stage_series_ms:
            return "none"
        first, last = self.stage_series_ms[0], self.stage_series_ms[-1]
        return ", ".join(f"{k} {first.get(k, 0):.1f} -> {last.get(k, 0):.1f}" for k in sorted(set(first) | set(last)))


def _stage_totals(status: dict) -> tuple[int, dict[str, float]]:
    """(answers traced, ms spent by stage) so far, from diffill/status."""
    cost = status.get("cost") or {}
    return cost.get("answers", 0), dict(cost.get("ms") or {})


def _settled(client: RawClient) -> dict[str, int]:
    """The server's figures once no generation has been in flight for as long as the daemon waits before it hands
    its freed heap back (a cancelled one stops at its next step): what it holds while the user pauses, not a
    generation's working memory (the least RSS of SETTLE_SAMPLES samples)."""
    deadline = time.monotonic() + 10
    while client.status()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(IDLE_TRIM_S + TRIM_MARGIN_S)
    samples = []
    for _ in range(SETTLE_SAMPLES):
        samples.append(proc_figures(client.pid))
        time.sleep(0.05)
    return min(samples, key=lambda f: f["rss_kb"])


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(len(s) * q))], 1) if s else 0.0


def _position(text: str, offset: int) -> dict:
    before = text[:offset]  # ASCII only: code points are UTF-16 units
    return {"line": before.count("\n"), "character": offset - (before.rfind("\n") + 1)}


class _Doc:
    """A document typed in from its snippet up to MAX_DOC_CHARS, then started over. Each starts at a random point of
    that cycle, so that the documents' sizes are the same early in the run and late: what grows is the daemon. (Each
    is first held at its longest, `_at_longest`: a document reaches its longest only once the run has typed it
    there, thousands of requests in.)"""

    def __init__(self, uri: str, snippet: str, rng: random.Random) -> None:
        self.uri, self.snippet = uri, snippet
        self.typed = rng.randrange(MAX_DOC_CHARS - len(snippet))
        self.text = self.typed_in(self.typed)
        self.cursor = len(self.text)

    def typed_in(self, n: int) -> str:
        """The snippet with the first `n` characters of the cycle's typing after it."""
        return self.snippet + (TYPED * (n // len(TYPED) + 1))[:n]


def _send_whole(client: RawClient, uri: str, text: str) -> None:
    """The document's whole text, as a full-sync didChange."""
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 0}, "contentChanges": [{"text": text}]})  # fmt: skip


def _at_longest(client: RawClient, doc: _Doc) -> None:
    """A completion asked at the end of the document at its longest, then the document back as it was: before the
    run, the daemon has held every document at the size the run will take it to (what it keeps by document, and
    the allocator's peak, are then those of the run's documents, not of the first ones that grew so far)."""
    longest = doc.typed_in(MAX_DOC_CHARS - len(doc.snippet))
    _send_whole(client, doc.uri, longest)
    params = {"textDocument": {"uri": doc.uri}, "position": _position(longest, len(longest)), "context": {"triggerKind": 2}}  # fmt: skip
    client.expect(client.start_request("textDocument/inlineCompletion", params), timeout=120)
    _send_whole(client, doc.uri, doc.text)


def _restore(
    client: RawClient, rng: random.Random, docs: list[_Doc], state: tuple[object, list[tuple[str, int, int]]]
) -> None:
    """The documents and the random stream as they were at the run's start (`state`), the server's documents too."""
    rng.setstate(state[0])
    for doc, (text, cursor, typed) in zip(docs, state[1], strict=True):
        doc.text, doc.cursor, doc.typed = text, cursor, typed
        _send_whole(client, doc.uri, text)


def _edit(rng: random.Random, client: RawClient, doc: _Doc) -> None:
    """One keystroke-like edit at the cursor (type, backspace, newline), or now and then a jump elsewhere."""
    roll = rng.random()
    if len(doc.text) > MAX_DOC_CHARS:  # start over (full sync): documents stay bounded, so growth means a leak
        doc.text, doc.cursor = doc.snippet, len(doc.snippet)
        _send_whole(client, doc.uri, doc.text)
        return
    if roll < 0.05:
        doc.cursor = rng.randint(0, len(doc.text))
        return
    if roll < 0.15 and doc.cursor > 0:
        start, new = doc.cursor - 1, ""
    else:
        start, new = doc.cursor, TYPED[doc.typed % len(TYPED)]
        doc.typed += 1
    a, b = _position(doc.text, start), _position(doc.text, doc.cursor)
    doc.text = doc.text[:start] + new + doc.text[doc.cursor :]
    doc.cursor = start + len(new)
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": doc.uri, "version": 0},
            "contentChanges": [{"range": {"start": a, "end": b}, "text": new}],
        },
    )


def run(
    requests: int = 20_000,
    seed: int = 0,
    steps: int = 4,
    cancel_rate: float = 0.1,
    out: Callable[[str], None] = print,
    allocations: bool = False,
) -> SoakReport:
    rng = random.Random(seed)
    client = RawClient()
    report = SoakReport(requests=requests)
    try:
        client.initialize({"steps": steps})
        status = client.wait_ready(120)
        if not status["ready"]:
            raise RuntimeError(f"model did not load: {status}")
        docs = [_Doc(f"file:///soak/doc{i}.py", SNIPPETS[i % len(SNIPPETS)], rng) for i in range(4)]
        for d in docs:
            client.notify("textDocument/didOpen", {"textDocument": {"uri": d.uri, "languageId": "python", "version": 1, "text": d.text}})  # fmt: skip
        for d in docs:
            _at_longest(client, d)
        window = min(1000, max(1, requests // 3))
        report.window = window
        latencies: list[float] = []
        tenth = max(1, requests // 10)
        warm_types: Counter[str] = Counter()
        totals = _stage_totals(client.status())
        if allocations:
            client.result("diffill/debugAllocations", {"start": True, "frames": ALLOCATION_FRAMES})
        started = time.perf_counter()
        first = (rng.getstate(), [(d.text, d.cursor, d.typed) for d in docs])
        digests = [hashlib.sha256(), hashlib.sha256()]
        for i in range(requests):
            if i == requests - window and i >= window:  # the last window replays the first (see the module)
                _restore(client, rng, docs, first)
            doc = rng.choice(docs)
            _edit(rng, client, doc)
            if rng.random() < 0.002:  # close and reopen: the per-document state must go away and come back
                client.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
                client.notify("textDocument/didOpen", {"textDocument": {"uri": doc.uri, "languageId": "python", "version": 1, "text": doc.text}})  # fmt: skip
            params = {"textDocument": {"uri": doc.uri}, "position": _position(doc.text, doc.cursor), "context": {"triggerKind": 2}}  # fmt: skip
            method = "textDocument/inlineCompletion" if rng.random() < 0.8 else "textDocument/completion"
            if i < window or i >= requests - window:
                digests[i >= requests - window].update(json.dumps([doc.text, method, params]).encode())
            t0 = time.perf_counter()
            msg_id = client.start_request(method, params)
            roll = rng.random()
            if roll < cancel_rate:
                client.notify("$/cancelRequest", {"id": msg_id})
            elif roll < cancel_rate + 0.05:  # typed again before the answer: the older generation is superseded
                _edit(rng, client, doc)
            response = client.expect(msg_id, timeout=120)
            latencies.append((time.perf_counter() - t0) * 1e3)
            if "error" in response:
                code = response["error"].get("code")
                report.cancelled += code == -32800
                report.errors += code != -32800
            else:
                report.answered += 1
            if i + 1 == window:
                report.warm = _settled(client)
                report.warm_counts = client.result("diffill/debugCounts")
                warm_types = Counter(client.result("diffill/debugTypes"))
            if i % 100 == 0:
                report.peak_rss_kb = max(report.peak_rss_kb, proc_figures(client.pid)["rss_kb"])
            if (i + 1) % tenth == 0:
                report.busy_rss_series_kb.append(proc_figures(client.pid)["rss_kb"])
                report.rss_series_kb.append(_settled(client)["rss_kb"])
                report.latency_series_ms.append((_pct(latencies[-tenth:], 0.5), _pct(latencies[-tenth:], 0.95)))
                now = _stage_totals(client.status())
                answers = max(1, now[0] - totals[0])
                report.stage_series_ms.append(
                    {k: round((v - totals[1].get(k, 0.0)) / answers, 2) for k, v in now[1].items()}
                )
                totals = now
        report.seconds = time.perf_counter() - started
        report.window_digests = [d.hexdigest()[:16] for d in digests]
        report.end = _settled(client)
        report.end_counts = client.result("diffill/debugCounts")
        grown = Counter(client.result("diffill/debugTypes"))
        grown.subtract(warm_types)
        report.type_growth = [(t, n) for t, n in grown.most_common(8) if n > 0]
        if allocations:
            report.allocation_growth = client.result("diffill/debugAllocations", {"limit": 12}, timeout=120)
        report.peak_rss_kb = max(report.peak_rss_kb, report.end["rss_kb"])
        report.first_p50_ms, report.first_p95_ms = _pct(latencies[:window], 0.5), _pct(latencies[:window], 0.95)
        report.last_p50_ms, report.last_p95_ms = _pct(latencies[-window:], 0.5), _pct(latencies[-window:], 0.95)
        for d in docs:
            got = client.result("diffill/documentText", {"uri": d.uri})
            report.documents_consistent &= got is not None and got["text"] == d.text
        t0 = time.perf_counter()
        report.exit_code = client.shutdown()
        report.exit_seconds = time.perf_counter() - t0
    finally:
        client.close()
    for line in report.lines():
        out(line)
    return report
