"""`diffill bench context`: cross-file completions with and without the workspace's names and context."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from diffill.infill.context.workspace import WorkspaceIndex
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.languages import language_for
from diffill.lsp.settings import engine_options
from diffill.model import runtime

from .cases import Case, source_files
from .evaluate import daemon_settings
from .overlap import report_overlap


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
    for path in source_files(root, rng):
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
    summary: dict = {"cases": len(cases), "trained_with_context": loaded.card.trained_with_context}
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
    summary["training_overlap"] = report_overlap({c.path: c.text for c in cases}.values(), model, out)
    out(
        f"context probe root={root} cases={len(cases)}: exact {summary['exact_alone']:.3f} model alone, "
        f"{summary['exact_names']:.3f} with known names, {summary['exact_context']:.3f} with names and context; "
        f"right name {summary['name_alone']:.3f} / {summary['name_names']:.3f} / {summary['name_context']:.3f}"
    )
    out(json.dumps(summary))
    return summary
