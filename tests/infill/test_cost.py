"""What a completion cost (infill.cost), and self-speculative drafts in the engine: the same answers as the
encoder's greedy drafts, with their drafts counted."""

from engine_doubles import options

from diffill.infill import tuning
from diffill.infill.cost import Cost
from diffill.infill.document import SyntaxDocument

HEADS = ["name = call(arg", "items = [a", "print(", "x = ", "for i in ", "if value"]


def test_a_trace_times_its_stages_and_sums_with_others():
    a = Cost(passes=3, drafts=2, accepted=5)
    with a.stage("answer"):
        pass
    with a.stage("answer"):
        pass
    assert set(a.ms) == {"answer"} and a.ms["answer"] >= 0.0
    total = Cost()
    total.add(a)
    total.add(Cost(passes=1, ms={"prompt": 2.0}))
    assert (total.passes, total.drafts, total.accepted) == (4, 2, 5)
    assert set(total.ms) == {"answer", "prompt"} and total.accepted_per_draft == 2.5
    assert Cost().accepted_per_draft == 0.0


def test_stages_count_the_model_passes_they_make(engine):
    """With the model's pass count (the engine sets it), each stage counts its passes; they sum with others', and
    a completion's stages account for its passes."""
    count = iter([0, 2, 2, 5, 5, 5])
    a = Cost(pass_count=lambda: next(count))
    for stage in ("draft", "copies", "cut"):
        with a.stage(stage):
            pass
    assert a.stage_passes == {"draft": 2, "copies": 3, "cut": 0}
    total = Cost()
    total.add(a)
    total.add(Cost(stage_passes={"draft": 1}))
    assert total.stage_passes == {"draft": 3, "copies": 3, "cut": 0}
    assert Cost().stage_passes == {}  # no counter: no passes by stage
    spent = Cost()
    doc = SyntaxDocument("def f(x):\n    return g(x)\n\nname = call(arg", "python")
    engine.complete(doc, len(doc.text), cost=spent)
    assert spent.passes >= 1 and sum(spent.stage_passes.values()) <= spent.passes
    assert set(spent.stage_passes) <= set(spent.ms)


def test_speculative_drafts_give_the_greedy_answers_and_are_traced(engine, monkeypatch):
    kept = engine.options
    docs = [SyntaxDocument(f"def f(x):\n    return g(x)\n\n{head}", "python") for head in HEADS]
    # a line written before: the code around drafts its rest
    docs.append(SyntaxDocument("total = compute(alpha, beta, gamma)\nprint(total)\ntotal = compute(alpha, ", "python"))
    try:
        engine.options = options(steps=4, draft="ar", draft_candidates=1)
        plain, plain_costs = [], []
        for d in docs:
            plain_costs.append(Cost())
            plain.append(engine.complete(d, len(d.text), cost=plain_costs[-1]))
        assert any(c is not None and c.text for c in plain)
        monkeypatch.setattr(tuning, "SPECULATIVE_CANVAS", 6)
        engine.options = options(steps=4, draft="ar", draft_candidates=1, speculative=True, decoder_drafts=True)
        drafted = 0
        for d, want, before in zip(docs, plain, plain_costs, strict=True):
            spent = Cost()
            assert engine.complete(d, len(d.text), cost=spent) == want
            # the decoder's canvas rides in the verifying passes: never more passes than a token a pass
            assert 1 <= spent.passes <= before.passes and before.drafts == before.lookups == 0
            assert {"prompt", "prefill", "draft", "cut", "filters"} <= set(spent.ms)
            drafted += spent.drafts + spent.lookups
        assert drafted >= 1
    finally:
        engine.options = kept
