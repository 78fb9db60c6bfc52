"""`diffill bench next-edits --repo GIT_DIR`: a repository's history replayed as a user would have typed it, the
next edits diffill proposes after each hunk scored against the hunks still to come.

Each commit's change to a file (bench.history) is applied hunk by hunk, in order; after each, the proposals are
asked for and compared with the hunks not yet applied. A hunk is proposed exactly when the proposals that fall in
its lines, applied together, give its new lines; each of those proposals is right, any other wrong. A proposal
made again after a later hunk counts once. Precision: right proposals over all proposals; recall: later hunks (the
second and after of each change) proposed exactly before they were applied; repeated: the hunks whose core
replacement an earlier hunk of the same change made already (the ones a tool can know of); wrong proposals per 100
edits over every change, those of one hunk included. With `--model` (a checkpoint or a server that can rewrite:
CompletionEngine.rewrites), the model's rewrite below each hunk joins the proposals, as in the daemon.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from diffill.infill.document import SyntaxDocument
from diffill.infill.next_edits import Edit, NextEdits, Proposal, apply, joined
from diffill.infill.next_edits.change import core_of, tokens
from diffill.infill.next_edits.rewrite import RECENT_EDITS

from .history import FileChange, file_changes, lines_of
from .overlap import report_overlap

MAX_DISTANCE_CELLS = 4_000_000  # hunks larger than this (tokens before x after) are compared as wholly different


@dataclass
class Score:
    edits: int = 0
    proposals: int = 0
    right: int = 0
    later_hunks: int = 0
    later_proposed: int = 0
    repeated: int = 0
    repeated_proposed: int = 0
    ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float | int]:
        ms = sorted(self.ms) or [0.0]
        return {
            "precision": round(self.right / self.proposals, 3) if self.proposals else 1.0,
            "recall": round(self.later_proposed / max(1, self.later_hunks), 3),
            "recall_repeated": round(self.repeated_proposed / max(1, self.repeated), 3),
            "wrong_per_100_edits": round(100 * (self.proposals - self.right) / max(1, self.edits), 2),
            "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
            "edits": self.edits,
            "proposals": self.proposals,
            "later_hunks": self.later_hunks,
            "repeated_hunks": self.repeated,
        }


def repeated_hunks(change: FileChange) -> set[int]:
    """The hunks whose core replacement an earlier hunk of the change made already."""
    lines, seen, out = lines_of(change.before), set(), set()
    for i, h in enumerate(change.hunks):
        core = core_of("".join(lines[h.old_start : h.old_start + h.old_count]), "".join(h.new_lines))
        key = None if core is None else (core.old, core.new)
        if key is not None and key in seen:
            out.add(i)
        seen.add(key)
    return out


Rewriter = Callable[[SyntaxDocument, list[Edit]], list[Proposal]]  # CompletionEngine.rewrite_below, bound


def replay(change: FileChange, score: Score, rewriter: Rewriter | None = None) -> None:
    """Applies `change`'s hunks in order, asking for next edits after each (and for the `rewriter`'s), and adds
    what came to `score`."""
    proposer = NextEdits().propose
    recent: list[Edit] = []
    lines = lines_of(change.before)
    repeated = repeated_hunks(change)
    shift = 0  # lines the applied hunks added before the ones still to come
    shown: set[tuple[str, int, str]] = set()
    proposed: set[int] = set()
    doc = SyntaxDocument(change.before, change.language)
    for i, hunk in enumerate(change.hunks):
        at = hunk.old_start + shift
        before = "".join(lines[at : at + hunk.old_count])
        lines[at : at + hunk.old_count] = hunk.new_lines
        shift += len(hunk.new_lines) - hunk.old_count
        text = "".join(lines)
        start = sum(map(len, lines[:at]))
        was, doc = doc, SyntaxDocument(text, change.language)
        t0 = time.perf_counter()
        edit = Edit(start, before, "".join(hunk.new_lines))
        got = proposer(was, doc, edit)
        recent = [*recent, edit][-RECENT_EDITS:]
        if rewriter is not None:
            got = joined(got, rewriter(doc, recent))
        score.ms.append((time.perf_counter() - t0) * 1e3)
        score.edits += 1
        if i > 0:
            score.later_hunks += 1
            score.repeated += i in repeated
            score.later_proposed += i in proposed
            score.repeated_proposed += i in proposed and i in repeated
        fresh = [p for p in got if _key(text, p) not in shown]
        shown.update(_key(text, p) for p in got)
        proposed.update(_exactly_proposed(lines, change, i, shift, got))
        score.proposals += len(fresh)
        score.right += sum(1 for p in fresh if _on_the_way(lines, change, i, shift, p))


def _key(text: str, p: Proposal) -> tuple[str, int, str]:
    """A proposal as the user sees it: its line's text, its column there, its text (stable across other edits)."""
    lo = text.rfind("\n", 0, p.start) + 1
    hi = text.find("\n", p.end)
    return text[lo : len(text) if hi < 0 else hi], p.start - lo, p.text


def _later(change: FileChange, i: int, shift: int) -> Iterable[tuple[int, int, int]]:
    """(hunk index, its first line now, its old line count) of the hunks after the i-th."""
    for j in range(i + 1, len(change.hunks)):
        yield j, change.hunks[j].old_start + shift, change.hunks[j].old_count


def _hunk_of(lines: list[str], change: FileChange, i: int, shift: int, p: Proposal) -> int | None:
    """The later hunk whose old lines hold proposal `p`, or None."""
    offset, first = 0, None
    for n, line in enumerate(lines):
        if first is None and offset + len(line) > p.start:
            first = n
        if offset + len(line) >= p.end and first is not None:
            last = n
            break
        offset += len(line)
    else:
        return None
    for j, start, count in _later(change, i, shift):
        if start <= first and last < start + count:
            return j
    return None


def _region(lines: list[str], change: FileChange, j: int, shift: int) -> tuple[int, str, str]:
    """(where the j-th hunk's old lines start now, those lines, the lines it makes of them)."""
    start = change.hunks[j].old_start + shift
    return (
        sum(map(len, lines[:start])),
        "".join(lines[start : start + change.hunks[j].old_count]),
        "".join(change.hunks[j].new_lines),
    )


def _distance(a: list[str], b: list[str]) -> int:
    """Tokens deleted plus tokens inserted to turn `a` into `b` (through their longest common subsequence)."""
    if len(a) * len(b) > MAX_DISTANCE_CELLS:
        return len(a) + len(b)
    row = [0] * (len(b) + 1)
    for x in a:
        prev_diag, row[0] = 0, 0
        for k, y in enumerate(b, 1):
            prev_diag, row[k] = row[k], prev_diag + 1 if x == y else max(row[k], row[k - 1])
    return len(a) + len(b) - 2 * row[-1]


def _on_the_way(lines: list[str], change: FileChange, i: int, shift: int, p: Proposal) -> bool:
    """Whether `p` makes a piece of a later hunk exactly: from the hunk's old lines through `p` to its new lines
    is no longer (in tokens changed) than straight from old to new. Nothing else the hunk does is asked of it."""
    j = _hunk_of(lines, change, i, shift, p)
    if j is None:
        return False
    base, old, new = _region(lines, change, j, shift)
    via = old[: p.start - base] + p.text + old[p.end - base :]
    a, b, c = tokens(old), tokens(via), tokens(new)
    return a != b and _distance(a, b) + _distance(b, c) == _distance(a, c)


def _exactly_proposed(lines: list[str], change: FileChange, i: int, shift: int, got: list[Proposal]) -> set[int]:
    """The later hunks that the proposals falling in their lines, applied together, make exactly."""
    by_hunk: dict[int, list[Proposal]] = {}
    for p in got:
        j = _hunk_of(lines, change, i, shift, p)
        if j is not None:
            by_hunk.setdefault(j, []).append(p)
    made = set()
    for j, props in by_hunk.items():
        base, old, new = _region(lines, change, j, shift)
        if apply(old, [Proposal(p.start - base, p.end - base, p.text) for p in props]) == new:
            made.add(j)
    return made


def run(
    repos: list[str], max_commits: int | None = None, out: Callable[[str], None] = print, model: str | None = None
) -> dict[str, float | int]:
    """Replays each repository's history; prints a line per repository and, last, the totals as one JSON object.
    `model`: a checkpoint or server URL whose rewrites join the proposals (the daemon's settings)."""
    rewriter = _rewriter(model) if model is not None else None
    total = Score()
    replayed: dict[tuple[str, str], str] = {}  # each file's newest text replayed (the log is newest first)
    for repo in repos:
        score = Score()
        for change in file_changes(repo, max_commits):
            replay(change, score, rewriter)
            replayed.setdefault((repo, change.path), change.before)
        s = score.summary()
        out(f"{repo}: " + ", ".join(f"{k} {v}" for k, v in s.items()))
        for name in ("edits", "proposals", "right", "later_hunks", "later_proposed", "repeated", "repeated_proposed"):
            setattr(total, name, getattr(total, name) + getattr(score, name))
        total.ms += score.ms
    overlap = report_overlap(replayed.values(), out=out)
    summary = total.summary()
    if total.ms:
        summary["p50_ms"] = round(statistics.median(total.ms), 1)
    summary["training_overlap"] = overlap
    out(json.dumps(summary))
    return summary


def _rewriter(model: str) -> Rewriter:
    """The rewrites of `model` as the daemon asks for them (its default settings, no latency budget)."""
    from diffill.infill.engine import CompletionEngine
    from diffill.lsp.settings import Settings, engine_options
    from diffill.model import runtime

    loaded = runtime.load(model, "auto")
    engine = CompletionEngine(
        loaded.model, loaded.tokenizer, engine_options(Settings(), loaded, latency_budget_ms=None)
    )
    if not engine.rewrites:
        raise SystemExit(f"{model}: this model cannot rewrite (a FIM model); its next edits are the rules' alone")
    return lambda doc, recent: engine.rewrite_below(doc, recent, key="replay")
