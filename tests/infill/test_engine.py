"""The engine end to end on a small random model: offsets, cache reuse, answers cut at doubt, token healing; the
stages one by one are tested beside their modules (test_request, sources/, context/, test_priors, test_doubt)."""

from engine_doubles import CODE, FakeModel, options, twice
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.request import prompt_ids
from diffill.model.tokenizer import CodeTokenizer


def test_a_keystroke_reuses_the_encoder_cache(engine):
    text = "def f(x):\n    return g(x)\n\nname = call(arg"
    before = engine.prompter.prompt_cache.encoded_tokens
    engine.complete(SyntaxDocument(text, "python"), len(text), key="doc")
    encoded_first = engine.prompter.prompt_cache.encoded_tokens - before
    engine.complete(SyntaxDocument(text + ",", "python"), len(text) + 1, key="doc")
    encoded_second = engine.prompter.prompt_cache.encoded_tokens - before - encoded_first
    assert 0 < encoded_second <= 3 < encoded_first


def test_a_rest_of_line_answer_is_an_edit_from_the_cursor_to_the_line_end():
    """`return call(arg|)`: the drafted `, other)` ends with the `)` after the cursor, so the edit replaces it
    (not doubled) and starts at the cursor."""
    tok = CodeTokenizer.train(CODE, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode(", other)\n"), 0.0)]

    eng = CompletionEngine(Drafter(net), tok, options(steps=2, draft="ar", token_healing=False, copy_prior=None))
    text = "def f(arg, other):\n    return call(arg)\n"
    cursor = text.index("arg)") + 3
    out = eng.complete(SyntaxDocument(text, "python"), cursor)
    assert (out.start, out.end, out.text) == (cursor, cursor + 1, ", other)")


def test_min_confidence_drops_answers_the_model_doubts(engine):
    texts = [f"def f(x):\n    return g(x)\n\n{head}" for head in ("name = call(arg", "items = [a", "print(", "x = ")]
    docs = [SyntaxDocument(t, "python") for t in texts]
    kept = engine.options
    assert any(engine.complete(d, len(d.text)) is not None for d in docs)
    engine.options = options(steps=4, min_confidence=1.0)  # no token of a random model is certain
    try:
        assert all(engine.complete(d, len(d.text)) is None for d in docs)
    finally:
        engine.options = kept


def test_healed_answer_does_not_repeat_the_typed_text():
    """A model that writes a whole natural token (say ` argument`) after the healed prompt, then `)`: the
    completion inserts only what follows the typed ` arg`."""
    tok = CodeTokenizer.train(CODE + ["value = call(argument)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=12))
    seen = {}

    class Writer(FakeModel):
        def __init__(self):
            super().__init__(net)

        def denoise(self, prompt, cache=None, first_allowed=None, **kw):
            seen["first_allowed"] = first_allowed
            first = max(first_allowed or [tok.encode(" arg")[-1]], key=lambda i: len(tok.decode([i])))
            return [first, *tok.encode(")")]

    eng = CompletionEngine(Writer(), tok, options(steps=2))
    text = "value = call( arg\n"
    doc = SyntaxDocument(text, None)  # (no language: the names filter would judge the vocabulary's longest word)
    out = eng.complete(doc, text.index("\n"))
    at = text.index("\n")
    healed = prompt_ids(text, at, at, eng.vocabulary, eng.options.prompt, heal=True)[1]
    assert healed and " arg".endswith(healed)
    longest = max(seen["first_allowed"], key=lambda i: len(tok.decode([i])))
    assert all(tok.decode([i]).startswith(healed) or healed.startswith(tok.decode([i])) for i in seen["first_allowed"])
    assert out is not None and out.text == tok.decode([longest])[len(healed) :] + ")"
    eng.options = options(steps=2, token_healing=False)
    out = eng.complete(doc, text.index("\n"))
    assert seen["first_allowed"] is None


def test_a_completion_runs_its_stages_in_order():
    """With encoder drafts on a rest of line: the next-line copies are looked for (none here), the model drafts
    (a beam), copies of the typed line are scored against the draft, and the model's own answer is judged token
    by token for the cut: one encoder cache for all of them. The encoder wrote the draft, so it is not denoised."""
    tok = CodeTokenizer.train(CODE * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    calls = []

    class Recorder(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            calls.append(("draft", id(cache)))
            return [(tok.encode("total(x)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            calls.append(("copies", id(cache)))
            return [-50.0 for _ in continuations]

        def denoise(self, prompt, cache=None, init=None, **kw):
            calls.append(("denoise", id(cache)))
            return super().denoise(prompt, init=init)

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            calls.append(("doubt", id(cache)))
            return twice([0.0] * len(tokens))

    eng = CompletionEngine(Recorder(net), tok, options(steps=2, draft="ar", token_healing=False, min_confidence=0.3))
    text = "def f(x):\n    value = compute_total(x)\n\ndef g(x):\n    value = compute_\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.rindex("compute_") + 8)
    assert [kind for kind, _ in calls] == ["draft", "copies", "doubt"]
    assert len({cache for _, cache in calls}) == 1
    assert out is not None and out.source == "model" and out.text == "total(x)"
