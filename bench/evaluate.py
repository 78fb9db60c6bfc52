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
import json
import random
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from diffill.infill.cost import Cost
from diffill.infill.document import SyntaxDocument, count_errors
from diffill.infill.engine import CompletionEngine
from diffill.infill.languages import language_for
from diffill.infill.options import EngineOptions
from diffill.lsp.settings import Settings, engine_options
from diffill.model import runtime

from .cases import draw_block_cases, draw_cases
from .overlap import report_overlap


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


def mean_cost(costs: list[Cost]) -> dict[str, float]:
    """`cost_per_answer` of these completions' costs."""
    total = Cost()
    for t in costs:
        total.add(t)
    return cost_per_answer(total, len(costs))


def cost_per_answer(total: Cost, answers: int) -> dict[str, float]:
    """Per answer: model passes, decoder drafts and the tokens accepted per draft, mean milliseconds and model
    passes by stage (the stages that made any)."""
    n = max(1, answers)
    cost = {"passes": round(total.passes / n, 2), "drafts": round(total.drafts / n, 2)}
    cost["accepted_per_draft"] = round(total.accepted_per_draft, 2)
    cost["lookups"] = round(total.lookups / n, 2)
    cost["accepted_per_lookup"] = round(total.looked_up / total.lookups, 2) if total.lookups else 0.0
    cost |= {f"{stage}_ms": round(ms / n, 1) for stage, ms in total.ms.items()}
    cost |= {f"{stage}_passes": round(passes / n, 2) for stage, passes in total.stage_passes.items() if passes}
    return cost


def format_cost(cost: dict[str, float]) -> str:
    """One line of `mean_cost`'s figures."""
    stages = ", ".join(f"{k.removesuffix('_ms')} {v} ms" for k, v in cost.items() if k.endswith("_ms"))
    drafts = f"{cost['drafts']} decoder drafts ({cost['accepted_per_draft']} tokens accepted each)"
    drafts += f", {cost['lookups']} drafts from the code around ({cost['accepted_per_lookup']} accepted each)"
    by_stage = ", ".join(f"{k.removesuffix('_passes')} {v}" for k, v in cost.items() if k.endswith("_passes"))
    return f"{cost['passes']} model passes per answer ({by_stage}), {drafts}; {stages}"


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
    canvas: int | None = None,
    line_canvas: int | None = None,
    prompt_tokens: int = 256,
    draft: str = "model",
    min_confidence: float | None = None,
    token_healing: bool = True,
    draft_candidates: int | None = None,
    copy_prior: float | None = None,
    copies: bool = True,
    speculative: bool | None = None,
    decoder_drafts: bool | None = None,
    latency_budget: float | None = 200.0,
) -> EngineOptions:
    """The options `diffill eval` runs with: the daemon's (lsp.settings.engine_options over the default settings
    and the model's card) with each flag that is given on top; files are evaluated alone (no cross-file context:
    `bench context` measures it). Each knob left None is the daemon's (or the card's); `copies` False: none;
    `latency_budget` None: no deadline."""
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
    if line_canvas is not None:
        experiment["line_canvas_length"] = line_canvas
    if draft != "model":
        experiment["draft"] = draft
    if not token_healing:
        experiment["token_healing"] = False
    if not copies:
        experiment["copy_prior"] = None  # no copies
    elif copy_prior is not None:
        experiment["copy_prior"] = copy_prior
    if speculative is not None:  # None: the engine's default
        experiment["speculative"] = speculative
    if decoder_drafts is not None:  # None: the model's card
        experiment["decoder_drafts"] = decoder_drafts
    return engine_options(settings, loaded, **experiment)


def run(
    root: str | list[str],
    n: int = 200,
    seed: int = 0,
    model: str = "",
    out: Callable[[str], None] = print,
    dtype: str = "auto",
    draft_margin: str = "model",
    siblings: bool = False,
    dump: str = "",
    blocks: bool = False,
    latency_budget: float | None = None,
    **knobs: Any,
) -> dict:
    """Score the engine on cases drawn under `root`; with `dump`, one JSON line per case is written there
    (path, kind, truth, answer, source, scores) so that misses can be read, not just counted. `blocks`: the
    cases are Python function bodies removed whole (make_block_case) instead of lines. `knobs`: the engine's,
    as `eval_options` takes them (each left out is the daemon's)."""

    rng = random.Random(seed)
    loaded = runtime.load(model, "auto", dtype=dtype)
    if draft_margin != "model":  # "off": drafts are denoised like noise; a number: kept, changed past the margin
        margin = None if draft_margin == "off" else float(draft_margin)
        loaded.model.sampler = dataclasses.replace(loaded.model.sampler, draft_margin=margin)
    options = eval_options(loaded, latency_budget=latency_budget, **knobs)
    engine = CompletionEngine(loaded.model, loaded.tokenizer, options, loaded.memory)
    engine.warm_up()  # as the daemon does at load
    cases = draw_block_cases(root, n, rng) if blocks else draw_cases(root, n, rng)
    results: dict[str, list] = {"model": [], "empty": [], "prev_line": []}
    by_kind: dict[str, list] = {"line": [], "lines": [], "block": []}
    latencies = []
    costs: dict[str, list[Cost]] = {"line": [], "lines": [], "block": []}
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
        spent = Cost()
        doc.focus(case.offset)
        comp = engine.answer(doc, case.offset, path=case.path if siblings else None, cost=spent, start=t0)
        latencies.append((time.perf_counter() - t0) * 1e3)
        costs[case.kind].append(spent)
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
        "steps": options.drafts.steps,
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
    out(f"root={where} cases={len(cases)} steps={options.drafts.steps} seed={seed} siblings={siblings}")
    summary["training_overlap"] = report_overlap({c.path: c.text for c in cases}.values(), model, out)
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
        cost = mean_cost(costs[kind])
        summary[f"{name}_cost"] = cost
        out(f"{name}: {format_cost(cost)}")
    final = dict(summary["model"])
    final.update(
        {
            "rest_of_line_exact": summary["rest_of_line"]["exact"],
            "rest_of_line_useful": summary["rest_of_line"]["useful"],
            "cases": len(cases),
            "training_overlap": summary["training_overlap"],
        }
    )
    out(json.dumps(final))
    return summary
