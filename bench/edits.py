"""`diffill bench edits`: inline edits drawn from real code, renames and signature changes, accepted whole or not
(with the rename-all baseline beside)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from diffill.infill import edits
from diffill.infill.call_sites import MAX_LINES, calls_of, follow_signature, read_arguments
from diffill.infill.document import SyntaxDocument
from diffill.infill.edits import lines_below
from diffill.infill.engine import CompletionEngine
from diffill.infill.signatures import SignatureTracker, signature_at
from diffill.lsp.settings import engine_options
from diffill.model import runtime

from .cases import source_files
from .evaluate import daemon_settings
from .overlap import report_overlap


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
    for path in source_files(root, random.Random(seed)):
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
    paths = {path for path, *_ in cases} | set(sig["paths"])
    summary["training_overlap"] = report_overlap((Path(p).read_text(encoding="utf-8") for p in paths), model, out)
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
    paths = sorted({path for path, *_ in cases})
    return {"cases": len(cases), "proposed": round(proposed / k, 4), "accepted": round(accepted / k, 4), "paths": paths}
