"""What a rest of line costs in model passes on the shipped model (infill.plans): its draft stops where its cut at
doubt ends the answer, and the answers are the ones the whole drafts give."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from diffill.bench.cases import draw_cases
from diffill.bench.evaluate import eval_options
from diffill.infill import plans
from diffill.infill.cost import Cost
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.model import runtime


@pytest.fixture(scope="module")
def shipped():
    loaded = runtime.load("", "cpu", dtype="float32")  # (greedy drafts, no deadline: nothing depends on time)
    return CompletionEngine(
        loaded.model, loaded.tokenizer, eval_options(loaded, draft_candidates=1, latency_budget=None), loaded.memory
    )


def _answers(engine, cases) -> tuple[list[str | None], int]:
    answers, passes = [], 0
    for case in cases:
        cost = Cost()
        out = engine.complete(SyntaxDocument(case.text, "python"), case.offset, cost=cost)
        answers.append(out.text if out is not None else None)
        passes += cost.passes
    return answers, passes


def test_a_rest_of_line_drafted_as_far_as_it_is_shown_answers_the_same_in_fewer_passes(shipped, monkeypatch):
    root = Path(json.__file__).parent  # the standard library's json package: code the model never trained on
    cases = [c for c in draw_cases(str(root), 24, random.Random(3)) if c.kind == "line"]
    assert len(cases) >= 10
    early, early_passes = _answers(shipped, cases)
    monkeypatch.setattr(plans, "_draft_ends", lambda a: None)  # every draft to its end
    whole, whole_passes = _answers(shipped, cases)
    assert early == whole
    assert early_passes < whole_passes
