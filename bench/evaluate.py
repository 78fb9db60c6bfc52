"""`diffill eval`: completion quality on real source files, through the same engine the daemon uses.

Cases are drawn from files under --root: rest-of-line (the line is cut at a random point and the rest removed)
and multi-line (one to three whole lines removed, the cursor left on an empty line at their indentation).
One case per file in a seeded order, more passes over the files when --n asks for more cases than there are.
Reported per kind and overall: exact match, edit similarity, useful (non-empty and a prefix of the truth),
valid (the answer adds no syntax error); beside two baselines: the empty answer and repeating the previous
line. The last line printed is one JSON object.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from diffill.infill import edits
from diffill.infill.around.workspace import WorkspaceIndex
from diffill.infill.call_sites import MAX_LINES, calls_of, follow_signature, read_arguments
from diffill.infill.document import SyntaxDocument, count_errors
from diffill.infill.edits import lines_below
from diffill.infill.engine import CompletionEngine
from diffill.infill.languages import language_for
from diffill.infill.options import EngineOptions
from diffill.infill.policy import CompletionPolicy
from diffill.infill.signatures import SignatureTracker, signature_at
from diffill.infill.trace import Trace
from diffill.lsp.settings import Settings, engine_options
from diffill.model import runtime

EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".c", ".java", ".lua")
SKIP_PARTS = {".git", "node_modules", "__pycache__", ".venv", "site-packages"}


@dataclass
class Case:
    path: str
    text: str  # the document as the user has it (truth removed)
    offset: int  # cursor
    truth: str
    kind: str  # "line" or "lines"
    prev_line: str  # baseline material


def _files(roots: str | Path | list[str], rng: random.Random, limit: int = 4000) -> list[Path]:
    """Source files under one folder or several (a tuning set made of packages that live apart), seeded order."""
    files = [
        p
        for root in map(Path, [roots] if isinstance(roots, (str, Path)) else roots)
        for p in root.rglob("*")
        if p.suffix in EXTENSIONS and p.is_file() and not SKIP_PARTS.intersection(p.relative_to(root).parts)
    ]
    files.sort()
    rng.shuffle(files)
    return files[:limit]


def make_case(path: str, text: str, rng: random.Random, kind: str) -> Case | None:
    lines = text.split("\n")
    candidates = [i for i, ln in enumerate(lines) if 1 <= i < len(lines) - 1 and len(ln.strip()) >= 4]
    if not candidates:
        return None
    i = rng.choice(candidates)
    line = lines[i]
    indent = line[: len(line) - len(line.lstrip())]
    prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
    if kind == "line":
        lo = len(indent) + 1
        if len(line.rstrip()) - lo < 2:
            return None
        cut = rng.randrange(lo, len(line.rstrip()))
        truth = line[cut:].rstrip()
        before = "\n".join(lines[:i] + [line[:cut]])
        after = "\n" + "\n".join(lines[i + 1 :])
        return Case(path, before + after, len(before), truth, kind, prev[cut:].rstrip() if len(prev) > cut else "")
    k = rng.randint(1, 3)
    body = lines[i : i + k]
    if any(not b.strip() for b in body):
        return None
    truth = "\n".join(body)[len(indent) :].rstrip()
    before = "\n".join(lines[:i] + [indent])
    after = "\n" + "\n".join(lines[i + k :])
    return Case(path, before + after, len(before), truth, kind, prev.strip())


MAX_BODY_LINES = 12  # bodies longer than this are left out of block cases (a completion writes a few lines)


def make_block_case(path: str, text: str, rng: random.Random) -> Case | None:
    """A Python function with its body removed (its docstring kept), the cursor on the empty line under the
    signature (or the docstring) at the body's indentation: what the user has when starting a function. The truth
    is the body that was there."""
    if not path.endswith(".py"):
        return None
    doc = SyntaxDocument(text, "python")
    bodies = []
    stack = [doc.tree.root_node] if doc.tree is not None else []
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "function_definition":
            continue
        body = node.child_by_field_name("body")
        statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if statements and _is_docstring(statements[0]):
            statements = statements[1:]
        if 1 <= len(statements) and statements[-1].end_point[0] - statements[0].start_point[0] < MAX_BODY_LINES:
            bodies.append(statements)
    if not bodies:
        return None
    statements = rng.choice(sorted(bodies, key=lambda b: b[0].start_byte))
    lines = text.split("\n")
    first, last = statements[0].start_point[0], statements[-1].end_point[0]
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    truth = "\n".join(lines[first : last + 1])[len(indent) :].rstrip()
    before = "\n".join(lines[:first] + [indent])
    after = "\n" + "\n".join(lines[last + 1 :])
    return Case(path, before + after, len(before), truth, "block", lines[first - 1].strip() if first else "")


def _is_docstring(node) -> bool:
    return (
        node.type == "expression_statement" and node.named_child_count == 1 and node.named_children[0].type == "string"
    )


def source_texts(root: str | Path | list[str], rng: random.Random) -> Iterator[tuple[Path, str]]:
    """(path, text) of the readable source files under `root`, in `_files`' seeded order."""
    for path in _files(root, rng):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def draw_block_cases(root: str | list[str], n: int, rng: random.Random) -> list[Case]:
    """`n` block cases, at most one per Python file, in a seeded order."""
    cases = []
    for path, text in source_texts(root, rng):
        if len(cases) >= n:
            break
        case = make_block_case(str(path), text, rng) if len(text) <= 200_000 else None
        if case is not None:
            cases.append(case)
    return cases


def draw_cases(root: str | list[str], n: int, rng: random.Random) -> list[Case]:
    """`n` cases, one per file in a seeded order, rest-of-line and multi-line by turns; when the files run out
    another pass draws new cut points from the same files (so a small package still gives `n` cases)."""
    texts: dict[Path, str | None] = {}
    cases: list[Case] = []
    files = _files(root, rng)
    for turn in itertools.count():
        if len(cases) >= n:
            break
        before = len(cases)
        for index, path in enumerate(files):
            if len(cases) >= n:
                break
            if path not in texts:
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = None
                texts[path] = text if text is not None and len(text) <= 200_000 else None
            if texts[path] is None:
                continue
            # Kinds alternate by file, and each pass swaps them (a file cut for the rest of a line is cut for lines
            # next), so rest-of-line cases do not all come from the same half of the files.
            case = make_case(str(path), texts[path], rng, "line" if (index + turn) % 2 == 0 else "lines")
            if case is not None:
                cases.append(case)
        if len(cases) == before:
            break
    return cases


def edit_similarity(a: str, b: str) -> float:
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def score(answer: str, truth: str, valid: bool) -> dict[str, float]:
    a, t = answer.rstrip(), truth.rstrip()
    return {
        "exact": float(a == t),
        "useful": float(bool(a) and t.startswith(a)),
        "edit_similarity": edit_similarity(a, t),
        "valid": float(valid),
        "shown": float(bool(a)),
        "wrong": float(shown_wrong(answer, truth)),
    }


def shown_wrong(answer: str, truth: str) -> bool:
    """An answer shown that is not a start of the truth: a suggestion the user must read and reject."""
    a = answer.rstrip()
    return bool(a) and not truth.rstrip().startswith(a)


def trace_summary(traces: list[Trace]) -> dict[str, float]:
    """`cost_per_answer` of these completions' traces."""
    total = Trace()
    for t in traces:
        total.add(t)
    return cost_per_answer(total, len(traces))


def cost_per_answer(total: Trace, answers: int) -> dict[str, float]:
    """Per answer: model passes, decoder drafts and the tokens accepted per draft, mean milliseconds by stage."""
    n = max(1, answers)
    cost = {"passes": round(total.passes / n, 2), "drafts": round(total.drafts / n, 2)}
    cost["accepted_per_draft"] = round(total.accepted_per_draft, 2)
    cost["lookups"] = round(total.lookups / n, 2)
    cost["accepted_per_lookup"] = round(total.looked_up / total.lookups, 2) if total.lookups else 0.0
    cost |= {f"{stage}_ms": round(ms / n, 1) for stage, ms in total.ms.items()}
    return cost


def format_cost(cost: dict[str, float]) -> str:
    """One line of `trace_summary`'s figures."""
    stages = ", ".join(f"{k.removesuffix('_ms')} {v} ms" for k, v in cost.items() if k.endswith("_ms"))
    drafts = f"{cost['drafts']} decoder drafts ({cost['accepted_per_draft']} tokens accepted each)"
    drafts += f", {cost['lookups']} drafts from the code around ({cost['accepted_per_lookup']} accepted each)"
    return f"{cost['passes']} model passes per answer, {drafts}; {stages}"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def _first_line_mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {"first_line": round(sum(r["first_line"] for r in rows) / max(1, len(rows)), 4)}


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = ("exact", "useful", "edit_similarity", "valid")
    mean = {k: round(sum(r[k] for r in rows) / max(1, len(rows)), 4) for k in keys}
    mean["wrong_shown"] = round(sum(r["wrong"] for r in rows) / max(1, sum(r["shown"] for r in rows)), 4)
    return mean


def daemon_settings(**changes: Any) -> Settings:
    """The daemon's default settings with the `changes` that are given (not None): what a benchmark measures is
    what ships unless it says otherwise."""
    return replace(Settings(), **{name: value for name, value in changes.items() if value is not None})


def eval_options(
    loaded: runtime.LoadedModel,
    steps: int | None = None,
    canvas: int = 0,
    line_canvas: int = 0,
    prompt_tokens: int = 256,
    draft: str = "model",
    min_confidence: float = -1.0,
    token_healing: bool = True,
    draft_candidates: int = 0,
    copy_prior: float | None = None,
    speculative: bool | None = None,
    decoder_drafts: bool | None = None,
    latency_budget: float | None = 200.0,
) -> EngineOptions:
    """The options `diffill eval` runs with: the daemon's (lsp.settings.engine_options over the default settings
    and the model's card) with each flag that is given on top; files are evaluated alone (no cross-file context:
    `bench context` measures it). `latency_budget` None: no deadline."""
    settings = daemon_settings(
        steps=steps,
        canvas_length=canvas,
        max_prompt_tokens=prompt_tokens,
        min_confidence=min_confidence,
        draft_candidates=draft_candidates,
    )
    experiment: dict[str, Any] = {"context_tokens": 0}  # files are evaluated alone (bench context measures it)
    if latency_budget is None:
        experiment["latency_budget_ms"] = None  # no deadline
    else:
        settings = replace(settings, latency_budget_ms=int(latency_budget))
    if line_canvas:
        experiment["line_canvas_length"] = line_canvas
    if draft != "model":
        experiment["draft"] = draft
    if not token_healing:
        experiment["token_healing"] = False
    if copy_prior is not None:
        experiment["copy_prior"] = copy_prior if copy_prior >= 0 else None  # < 0: no copies
    if speculative is not None:  # None: the engine's default
        experiment["speculative"] = speculative
    if decoder_drafts is not None:  # None: the model's card
        experiment["decoder_drafts"] = decoder_drafts
    return engine_options(settings, loaded, **experiment)


def run(
    root: str | list[str],
    n: int = 200,
    seed: int = 0,
    steps: int | None = None,
    canvas: int = 0,
    model: str = "",
    out: Callable[[str], None] = print,
    line_canvas: int = 0,
    prompt_tokens: int = 256,
    draft: str = "model",
    min_confidence: float = -1.0,
    dtype: str = "auto",
    token_healing: bool = True,
    draft_margin: str = "model",
    draft_candidates: int = 0,
    siblings: bool = False,
    copy_prior: float | None = None,
    dump: str = "",
    speculative: bool | None = None,
    decoder_drafts: bool | None = None,
    latency_budget: float | None = None,
    blocks: bool = False,
) -> dict:
    """Score the engine on cases drawn under `root`; with `dump`, one JSON line per case is written there
    (path, kind, truth, answer, source, scores) so that misses can be read, not just counted. `blocks`: the
    cases are Python function bodies removed whole (make_block_case) instead of lines."""

    rng = random.Random(seed)
    loaded = runtime.load(model, "auto", dtype=dtype)
    if draft_margin != "model":  # "off": drafts are denoised like noise; a number: kept, changed past the margin
        margin = None if draft_margin == "off" else float(draft_margin)
        loaded.model.sampler = dataclasses.replace(loaded.model.sampler, draft_margin=margin)
    options = eval_options(
        loaded,
        steps=steps,
        canvas=canvas,
        line_canvas=line_canvas,
        prompt_tokens=prompt_tokens,
        draft=draft,
        min_confidence=min_confidence,
        token_healing=token_healing,
        draft_candidates=draft_candidates,
        copy_prior=copy_prior,
        speculative=speculative,
        decoder_drafts=decoder_drafts,
        latency_budget=latency_budget,
    )
    engine = CompletionEngine(loaded.model, loaded.tokenizer, options, loaded.memory)
    engine.warm_up()  # as the daemon does at load
    policy = CompletionPolicy(engine)
    cases = draw_block_cases(root, n, rng) if blocks else draw_cases(root, n, rng)
    results: dict[str, list] = {"model": [], "empty": [], "prev_line": []}
    by_kind: dict[str, list] = {"line": [], "lines": [], "block": []}
    latencies = []
    traces: dict[str, list[Trace]] = {"line": [], "lines": [], "block": []}
    dumped = []
    for case in cases:
        lang = language_for(None, case.path)
        doc = SyntaxDocument(case.text, lang)
        base_errors = count_errors(lang, case.text) if lang else 0
        if siblings:  # as the server does when a document opens (not part of a keystroke's latency)
            engine.warm_sources(case.path)
        t0 = time.perf_counter()
        # With `siblings`, the engine sees the case's path as an editor would give it: rest-of-line copies may then
        # come from the files beside it (never from the file itself: its copy on disk holds the truth).
        trace = Trace()
        comp = policy.answer(doc, case.offset, path=case.path if siblings else None, trace=trace, start=t0)
        latencies.append((time.perf_counter() - t0) * 1e3)
        traces[case.kind].append(trace)
        if comp is None:
            answer, new_text = "", case.text
        else:
            new_text = case.text[: comp.start] + comp.text + case.text[comp.end :]
            answer = comp.text
        valid = (count_errors(lang, new_text) <= base_errors) if lang else True
        row = score(answer, case.truth, valid)
        if case.kind == "block":  # the first line of a body is what the user reads first
            row["first_line"] = float(bool(answer.strip()) and _first_line(answer) == _first_line(case.truth))
        results["model"].append(row)
        by_kind[case.kind].append(row)
        if dump:
            source = comp.source if comp is not None else ""
            line_start = case.text.rfind("\n", 0, case.offset) + 1
            typed = case.text[line_start : case.offset]
            dumped.append(
                {
                    "path": case.path,
                    "kind": case.kind,
                    "typed": typed,
                    "truth": case.truth,
                    "answer": answer,
                    "source": source,
                    **row,
                }
            )
        results["empty"].append(score("", case.truth, True))
        results["prev_line"].append(score(case.prev_line, case.truth, True))
    if dump:
        Path(dump).write_text("".join(json.dumps(d) + "\n" for d in dumped), encoding="utf-8")
    latencies.sort()
    summary = {
        "cases": len(cases),
        "steps": steps,
        "model": _mean(results["model"]),
        "rest_of_line": _mean(by_kind["line"]),
        "multi_line": _mean(by_kind["lines"]),
        "block_body": _mean(by_kind["block"]) | _first_line_mean(by_kind["block"]),
        "baseline_empty": _mean(results["empty"]),
        "baseline_prev_line": _mean(results["prev_line"]),
        "latency_ms_p50": round(latencies[len(latencies) // 2], 1) if latencies else 0.0,
        "latency_ms_p95": round(latencies[int(len(latencies) * 0.95)], 1) if latencies else 0.0,
    }
    where = root if isinstance(root, str) else ",".join(root)
    out(f"root={where} cases={len(cases)} steps={steps} seed={seed} siblings={siblings}")
    out(f"{'':<22}{'exact':>8}{'useful':>8}{'edit_sim':>10}{'valid':>8}{'wrong':>8}")
    names = ("block_body",) if blocks else ("rest_of_line", "multi_line")
    for name in (*names, "model", "baseline_empty", "baseline_prev_line"):
        m = summary[name]
        out(
            f"{name:<22}{m['exact']:>8.3f}{m['useful']:>8.3f}{m['edit_similarity']:>10.3f}{m['valid']:>8.3f}"
            f"{m['wrong_shown']:>8.3f}"
        )
    if blocks:
        out(f"block bodies: first line exact {summary['block_body']['first_line']:.3f}")
    out(f"latency p50 {summary['latency_ms_p50']} ms, p95 {summary['latency_ms_p95']} ms")
    kinds = (("block", "block_body"),) if blocks else (("line", "rest_of_line"), ("lines", "multi_line"))
    for kind, name in kinds:
        cost = trace_summary(traces[kind])
        summary[f"{name}_cost"] = cost
        out(f"{name}: {format_cost(cost)}")
    final = dict(summary["model"])
    final.update(
        {
            "rest_of_line_exact": summary["rest_of_line"]["exact"],
            "rest_of_line_useful": summary["rest_of_line"]["useful"],
            "cases": len(cases),
        }
    )
    out(json.dumps(final))
    return summary


def _in_function(before: str, after_lines: list[str]) -> list[str]:
    """The lines of `after_lines` still inside the Python function that `before` ends in (by indentation: the
    scope ends at the first non-blank line indented no deeper than its `def`)."""
    defs = [ln for ln in before.split("\n") if ln.lstrip().startswith(("def ", "async def "))]
    if not defs:
        return after_lines
    depth = len(defs[-1]) - len(defs[-1].lstrip())
    for k, ln in enumerate(after_lines[1:], start=1):
        if ln.strip() and len(ln) - len(ln.lstrip()) <= depth:
            return after_lines[:k]
    return after_lines


def _python_sources(root: str, seed: int, max_chars: int = 0):
    """(path, text) of the readable Python files under `root`, in a seeded random order."""
    for path in _files(root, random.Random(seed)):
        if path.suffix != ".py":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not max_chars or len(text) <= max_chars:
            yield path, text


def edit_cases(root: str, n: int, seed: int) -> list[tuple[str, str, int, str, str, str]]:
    """(path, document, cursor, old, new, expected) rename pairs from real code: a local name assigned in a
    function and used again within the next lines is renamed where it is assigned; the expected edit renames
    its later uses too: the name where the code reads it, not the same word in a string or a comment, nor a
    keyword argument's name (`get("dataset")`, `f(dataset=dataset)` -> `f(dataset=new_dataset)`)."""
    import re

    assign = re.compile(r"^(\s+)([a-z_][a-z0-9_]{2,})\s*=[^=]", re.M)
    cases = []
    for path, text in _python_sources(root, seed):
        if len(cases) >= n:
            break
        parsed = None
        for m in assign.finditer(text):
            old = m.group(2)
            start = m.start(2)
            after = text[m.end(2) :]
            window = "\n".join(_in_function(text[: m.start(2)], after.split("\n"))[:20])
            word = re.compile(rf"(?<![A-Za-z0-9_.]){re.escape(old)}(?![A-Za-z0-9_])")
            parsed = parsed or SyntaxDocument(text, "python")
            uses = [
                u
                for u in word.finditer(text, m.end(2), m.end(2) + len(window))
                if edits.is_variable(parsed, u.start(), u.end())
            ]
            if not 1 <= len(uses) <= 4:
                continue
            new = "new_" + old
            shift = len(new) - len(old)
            doc = text[:start] + new + text[m.end(2) :]
            cursor = start + len(new)
            pieces, at = [doc[:cursor]], cursor
            for u in uses:
                pieces += [doc[at : u.start() + shift], new]
                at = u.end() + shift
            cases.append((str(path), doc, cursor, old, new, "".join(pieces) + doc[at:]))
            break
    return cases


def run_edits(
    root: str, n: int = 50, seed: int = 0, steps: int | None = None, model: str = "", out: Callable[[str], None] = print
) -> dict:
    """Edit acceptance: the share of renames whose proposed edit renames exactly the later uses."""

    loaded = runtime.load(model, "auto")
    options = engine_options(daemon_settings(steps=steps), loaded)
    engine = CompletionEngine(loaded.model, loaded.tokenizer, options, loaded.memory)
    accepted = proposed = baseline = 0
    latencies = []
    cases = edit_cases(root, n, seed)
    for path, doc_text, cursor, old, new, expected in cases:
        doc = SyntaxDocument(doc_text, "python")
        # Baseline without a model: every later use of the old name in the region renamed.
        region = edits.find_region(doc_text, cursor, old, limit_at=edits.scope_end(doc, cursor))
        if region is not None:
            every = edits.apply_fill(doc_text, region, [new] * len(region.occurrences))
            baseline += doc_text[: region.start] + every + doc_text[region.end :] == expected
        t0 = time.perf_counter()
        result = engine.edit(doc, cursor, (old, new), key=path)
        latencies.append((time.perf_counter() - t0) * 1e3)
        if result is None:
            continue
        proposed += 1
        edited = doc_text[: result.start] + result.text + doc_text[result.end :]
        accepted += edited == expected
    latencies.sort()
    k = max(1, len(cases))
    sig = run_signature_edits(root, n, seed)
    summary = {
        "cases": len(cases),
        "proposed": round(proposed / k, 4),
        "accepted": round(accepted / k, 4),
        "baseline_rename_all": round(baseline / k, 4),
        "latency_ms_p50": round(latencies[len(latencies) // 2], 1) if latencies else 0.0,
        "signature_cases": sig["cases"],
        "signature_proposed": sig["proposed"],
        "signature_accepted": sig["accepted"],
    }
    out(
        f"renames root={root} cases={len(cases)}: proposed {summary['proposed']:.3f}, accepted (exact) "
        f"{summary['accepted']:.3f} (rename-all baseline {summary['baseline_rename_all']:.3f}), latency p50 "
        f"{summary['latency_ms_p50']} ms"
    )
    out(f"signatures cases={sig['cases']}: proposed {sig['proposed']:.3f}, accepted (exact) {sig['accepted']:.3f}")
    out(json.dumps(summary))
    return summary


def signature_cases(root: str, n: int, seed: int) -> list[tuple[str, str, int, str, int, str]]:
    """(path, document, cursor, typed, deleted, expected) pairs from real Python code: a function's last
    parameter, passed on by name (`p` in its slot, or `p=p`) at one or more calls within the edit window below
    its definition (infill.signatures.MAX_LINES lines). Half the cases type the parameter back into a list
    that lacks it (the document has it nowhere; the expected edit passes it on where the real code does and
    touches no other call); half delete it (the expected edit drops the argument in its slot, or by keyword,
    from every call in the window)."""

    cases: list[tuple[str, str, int, str, int, str]] = []
    for path, text in _python_sources(root, seed, max_chars=100_000):
        if len(cases) >= n:
            break
        doc = SyntaxDocument(text, "python")
        if doc.tree is None:
            continue
        for node in _walk_params(doc.tree.root_node):
            sig = signature_at(doc, doc.offset_of_byte(node.start_byte) + 1)
            if sig is None or len(sig.params) < 2:
                continue
            items = [c for c in node.named_children if c.type != "comment"]
            p = sig.params[-1]  # the last parameter: removing it leaves the others' slots alone
            last = items[-1]
            if p.index < 0 or last.type not in ("identifier", "default_parameter", "typed_parameter"):
                continue
            window_end = lines_below(text, sig.params_end, MAX_LINES)
            calls = calls_of(doc, sig, doc.byte_offset(sig.params_end), doc.byte_offset(window_end))
            passing = [(c, a) for c in calls if (a := _argument_for(doc, c, p, pass_on=True)) is not None]
            if not passing:
                continue
            prev_end = items[-2].end_byte
            data = doc.source
            at = len(data[:prev_end].decode("utf-8"))
            typed = data[prev_end : last.end_byte].decode("utf-8")
            if len(cases) % 2 == 0:  # typed back: the calls that passed it must pass it on again
                drop = [(prev_end, last.end_byte)] + [_argument_span(doc, c, a) for c, a in passing]
                cases.append((str(path), _cut_bytes(data, drop).decode("utf-8"), at, typed, 0, text))
            else:  # deleted: every call that gives it an argument must drop it
                given = [(c, a) for c in calls if (a := _argument_for(doc, c, p, pass_on=False)) is not None]
                drop = [(prev_end, last.end_byte)] + [_argument_span(doc, c, a) for c, a in given]
                cases.append((str(path), text, at + len(typed), "", len(typed), _cut_bytes(data, drop).decode("utf-8")))
            break
    return cases


def _walk_params(node):
    """Parameter lists of function definitions, in document order."""
    if node.type == "function_definition":
        params = node.child_by_field_name("parameters")
        if params is not None:
            yield params
    for child in node.children:
        yield from _walk_params(child)


def _argument_for(doc, call, p, pass_on: bool):
    """The argument node a call gives parameter `p` (by slot or keyword); with `pass_on`, only when it is `p`
    itself. None for calls that cannot be read (splats) or give none."""

    read = read_arguments(doc, call)
    if read is None or len(read.items) < 2:
        return None
    arg = read.positional[p.index] if len(read.positional) > p.index else read.keywords.get(p.name)
    if arg is None:
        return None
    if pass_on:
        txt = doc.source[arg.start_byte : arg.end_byte].decode("utf-8", "replace").replace(" ", "")
        return arg if txt in (p.name, f"{p.name}={p.name}") else None
    return arg


def _argument_span(doc, call, arg) -> tuple[int, int]:
    """Bytes to cut to remove `arg` from its call with the comma before it (after it, for the first)."""

    items = read_arguments(doc, call).items
    k = items.index(arg)
    return (items[k - 1].end_byte, arg.end_byte) if k else (arg.start_byte, items[k + 1].start_byte)


def _cut_bytes(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    out, pos = [], 0
    for a, b in sorted(spans):
        out.append(data[pos:a])
        pos = b
    out.append(data[pos:])
    return b"".join(out)


def run_signature_edits(root: str, n: int = 50, seed: int = 0) -> dict:
    """Acceptance of signature edits (infill.signatures) on `signature_cases`: no model involved."""

    accepted = proposed = 0
    cases = signature_cases(root, n, seed)
    for _path, text, at, typed, deleted, expected in cases:
        doc = SyntaxDocument(text, "python")
        tracker = SignatureTracker()
        was = tracker.before_change(doc, at - deleted)
        doc.replace_range(at - deleted, at, typed)
        cursor = at - deleted + len(typed)
        tracker.observe(was, doc, at - deleted)
        change = tracker.change_at(doc, cursor)
        found = follow_signature(doc, cursor, change) if change is not None else None
        if found is None:
            continue
        proposed += 1
        start, end, new = found
        accepted += doc.text[:start] + new + doc.text[end:] == expected
    k = max(1, len(cases))
    return {"cases": len(cases), "proposed": round(proposed / k, 4), "accepted": round(accepted / k, 4)}


def context_cases(root: str, n: int, seed: int) -> list[Case]:
    """Rest-of-line cases whose truth starts with a name defined in another file of the project (found by the
    workspace index): the completion needs cross-file knowledge."""
    import re

    rng = random.Random(seed)
    index = WorkspaceIndex([root])
    index.scan()
    defined: dict[str, set[str]] = {}
    for path, chunks in index._chunks.items():
        for c in chunks:
            if c.kind == "definition" and len(c.name) >= 5 and not c.name.startswith("__"):
                defined.setdefault(c.name, set()).add(path)
    names = (
        re.compile(
            r"(?<![A-Za-z0-9_])(" + "|".join(re.escape(k) for k in sorted(defined, key=len, reverse=True)) + r")\("
        )
        if defined
        else None
    )
    cases: list[Case] = []
    for path in _files(root, rng):
        if names is None or len(cases) >= n or language_for(None, str(path)) is None:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        resolved = str(path.resolve())
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = names.search(line)
            if not m or line.lstrip().startswith(("def ", "class ", "#", "import ", "from ")):
                continue
            if resolved in defined[m.group(1)]:
                continue  # defined in this very file: no cross-file knowledge needed
            cut = m.start(1) + 2  # two characters of the name typed
            truth = line[cut:].rstrip()
            before = "\n".join(lines[:i] + [line[:cut]])
            after = "\n" + "\n".join(lines[i + 1 :])
            cases.append(Case(str(path), before + after, len(before), truth, "line", ""))
            break
    return cases


def run_context(
    root: str, n: int = 40, seed: int = 0, steps: int | None = None, model: str = "", out: Callable[[str], None] = print
) -> dict:
    """Exact match and the right name on cross-file cases: the model alone, with known names from the
    workspace, and with those plus the definitions as prompt context."""

    loaded = runtime.load(model, "auto")
    cases = context_cases(root, n, seed)
    index = WorkspaceIndex([root])
    index.scan()
    summary: dict = {"cases": len(cases), "trained_with_context": loaded.trained_with_context}
    # The model alone; with known names (workspace definitions extending the typed word, ranked by the model);
    # with known names and the definitions packed into the prompt as context (what the daemon does).
    for label, budget, names in (("alone", 0, False), ("names", 0, True), ("context", 96, True)):
        extra = {} if names else {"symbol_prior": None}
        options = engine_options(daemon_settings(steps=steps), loaded, context_tokens=budget, **extra)
        engine = CompletionEngine(loaded.model, loaded.tokenizer, options, loaded.memory)  # as the daemon sets it up
        engine.workspace = index
        exact = name_ok = 0
        for case in cases:
            doc = SyntaxDocument(case.text, language_for(None, case.path))
            comp = engine.complete(doc, case.offset, key=f"{label}:{case.path}", path=case.path)
            answer = comp.text.rstrip() if comp else ""
            exact += answer == case.truth
            name = case.truth.split("(")[0]
            name_ok += answer.startswith(name)
        k = max(1, len(cases))
        summary[f"exact_{label}"] = round(exact / k, 4)
        summary[f"name_{label}"] = round(name_ok / k, 4)
    out(
        f"context probe root={root} cases={len(cases)}: exact {summary['exact_alone']:.3f} model alone, "
        f"{summary['exact_names']:.3f} with known names, {summary['exact_context']:.3f} with names and context; "
        f"right name {summary['name_alone']:.3f} / {summary['name_names']:.3f} / {summary['name_context']:.3f}"
    )
    out(json.dumps(summary))
    return summary
