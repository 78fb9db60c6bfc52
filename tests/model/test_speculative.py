"""Self-speculative decoding (model.speculative): the decoder drafts, the encoder verifies, and the answer is the
encoder's greedy answer token for token, whatever the decoder drafts."""

from __future__ import annotations

import pytest
import torch
from tiny import random_model, tiny_config

from diffill.model.ngram import NgramMixer, TokenIndex
from diffill.model.speculative import Speculator

PROMPTS = [[2, 10, 11, 12], [2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49], [2, 7]]


@pytest.fixture(scope="module", params=[0, 1])
def model(request):
    return random_model(tiny_config(), seed=request.param)


def _greedy(model, prompt, max_tokens, stop_ids, allowed=None, mix=None):
    return model.ar_drafts(prompt, max_tokens, stop_ids, first_allowed=allowed, k=1, mix=mix)[0]


@pytest.mark.parametrize("canvas", [4, 8, 16])
def test_the_answer_is_the_encoders_greedy_answer(model, canvas):
    spec = Speculator(model.net, canvas=canvas)
    for prompt in PROMPTS:
        want, score = _greedy(model, prompt, 12, set())
        got = spec.greedy(prompt, 12, set())
        assert got.tokens == want
        assert got.score == pytest.approx(score, abs=1e-4)
        # one pass a round, the decoder's canvas beside the verification: never more passes than tokens
        assert len(want) <= got.passes + sum(got.accepted) and got.passes <= len(want)


def test_stop_ids_constraints_and_evidence_mixing_match_the_greedy_draft(model):
    spec = Speculator(model.net, canvas=6)
    prompt = PROMPTS[1]
    free = _greedy(model, prompt, 10, set())[0]
    at = next(i for i in range(2, 10) if free[i] not in free[:i])  # a token the answer writes first there
    stop = {free[at]}
    assert spec.greedy(prompt, 10, stop).tokens == _greedy(model, prompt, 10, stop)[0] == free[: at + 1]
    # a constraint on the tokens so far (token healing over several tokens)
    allowed = lambda tokens: [50, 51, 52] if len(tokens) < 2 else None
    want = _greedy(model, prompt, 10, set(), allowed=allowed)[0]
    assert want[0] in (50, 51, 52) and spec.greedy(prompt, 10, set(), allowed=allowed).tokens == want
    assert spec.greedy(prompt, 10, set(), allowed=lambda tokens: []).tokens == []
    # n-gram evidence that pulls the answer towards a stream the model did not write
    index = TokenIndex([[*prompt[-3:], 90, 91, 92, 93, 94, 95]], model.config.vocab_size)
    mix = NgramMixer([index], prompt, weight=0.9, per_order=0.0)
    want, score = _greedy(model, prompt, 10, set(), mix=mix)
    assert want[:2] == [90, 91]
    got = spec.greedy(prompt, 10, set(), mix=mix)
    assert got.tokens == want and got.score == pytest.approx(score, abs=1e-4)


def test_beliefs_are_judged_among_the_allowed_tokens_and_count_the_texts_that_go_on_alike(model):
    """Where a constraint holds (token healing), a token's log-probability is among the allowed (or the `among`)
    ids; its prefix belief counts every id `extensions` names. The verified beliefs are the ones token_beliefs
    computes for the same tokens, and the score stays the plain sum."""
    spec = Speculator(model.net, canvas=6)
    prompt = PROMPTS[1]
    allowed = lambda tokens: [50, 51, 52] if not tokens else None
    among = lambda tokens: [50, 51] if not tokens else None
    ext = lambda token: [token, 60] if token != 60 else [60]
    got = spec.greedy(prompt, 5, set(), allowed=allowed, extensions=ext)
    base = _greedy(model, prompt, 5, set(), allowed=allowed)
    assert got.tokens == base[0] and got.score == pytest.approx(base[1], abs=1e-4)
    logps, prefix = model.token_beliefs(prompt, got.tokens, allowed=allowed, extensions=ext)
    assert got.logprobs == pytest.approx(logps, abs=1e-4) and got.prefix_logprobs == pytest.approx(prefix, abs=1e-4)
    assert got.logprobs[0] > got.score - sum(got.logprobs[1:])  # among 3 ids: likelier than among all
    assert all(p >= lp - 1e-6 for p, lp in zip(prefix, logps, strict=True))  # more texts go on alike
    assert all(p <= 1e-6 for p in prefix)
    if got.tokens[0] in (50, 51):
        narrower = spec.greedy(prompt, 5, set(), allowed=allowed, among=among)
        assert narrower.tokens == got.tokens and narrower.logprobs[0] >= got.logprobs[0] - 1e-6


def test_a_decoder_that_drafts_the_answer_commits_a_canvas_a_pass(model, monkeypatch):
    prompt = PROMPTS[0]
    want = _greedy(model, prompt, 15, set())[0]
    spec = Speculator(model.net, canvas=8)

    def oracle(fed, cache, generator, room):
        written = cache.length + fed.shape[1] - len(prompt)  # answer tokens fed: the canvas guesses from there
        return model.net.encode(fed, cache), want[written : written + min(8, room + 1) - 1]

    monkeypatch.setattr(spec, "_verify_and_draft", oracle)
    got = spec.greedy(prompt, 15, set())
    assert got.tokens == want
    # the first pass commits want[0] and guesses want[0:7]: want[0] agrees, so want[1:7] is the next draft; each
    # later pass commits its 6 drafted tokens and the encoder's own, and drafts the next 6 beside them
    assert got.accepted == [6, 6] and got.passes == 3
    # after a draft of the code around that the encoder takes whole, the canvas beside it drafts on
    after = spec.greedy(prompt, 15, set(), mix=_evidence(model, prompt, want[:3]))
    assert after.tokens == want and after.looked_up[:1] == [3] and after.accepted[:1] == [6]
    # the code around's draft stops where the decoder's, agreeing with it, goes on: the longer one is verified
    # (the first pass commits want[0] and guesses want[0:7]; the code around drafts want[1:3] after want[0])
    index = TokenIndex([[250, prompt[-1], *want[:3]]], model.config.vocab_size)  # no match after the prompt
    mix = NgramMixer([index], prompt, weight=1e-4, per_order=0.0)
    assert mix.draft([], 15) == [] and mix.draft(want[:1], 15) == want[1:3]
    longer = spec.greedy(prompt, 15, set(), mix=mix)
    assert longer.tokens == want and longer.looked_up[:1] == [6]


def test_a_canvas_the_encoder_refuses_part_of_is_dropped(model, monkeypatch):
    prompt = PROMPTS[0]
    want = _greedy(model, prompt, 15, set())[0]
    spec = Speculator(model.net, canvas=8)

    def wrong_at_3(fed, cache, generator, room):
        written = cache.length + fed.shape[1] - len(prompt)
        guess = want[written : written + min(8, room + 1) - 1]
        if len(guess) > 3:
            guess[3] = (guess[3] + 1) % model.config.vocab_size
        return model.net.encode(fed, cache), guess

    monkeypatch.setattr(spec, "_verify_and_draft", wrong_at_3)
    got = spec.greedy(prompt, 15, set())
    assert got.tokens == want
    # want[1:3] taken, want[3] the encoder's own; the canvas guessed after the refused token is not drafted from,
    # so the next pass is a plain one (with a fresh canvas beside it): 1 + 1 + 1 passes for the first 5 tokens
    assert got.accepted[0] == 2 and len(got.accepted) < got.passes - 1


def test_the_cache_is_left_holding_the_prompt_and_keep_going_stops_at_a_verified_prefix(model):
    prompt = PROMPTS[1]
    cache = model.net.new_cache()
    spec = Speculator(model.net, canvas=4)
    spec.greedy(prompt, 10, set(), cache=cache)
    assert cache.length == len(prompt)
    fresh = model.net.new_cache()
    model.net.encode(torch.tensor([prompt]), fresh)
    for a, b in zip(cache.keys, fresh.keys, strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    want = _greedy(model, prompt, 10, set())[0]
    budget, asked = iter([True, False]), []
    part = spec.greedy(prompt, 10, set(), cache=cache, keep_going=lambda passes: asked.append(passes) or next(budget))
    assert not part.finished and part.tokens == want[: len(part.tokens)] and part.passes == 2
    assert asked == [1, 1]  # each round asks for its one pass (the decoder's canvas rides in it)
    assert len(part.tokens) == sum(part.accepted) + 2
    assert cache.length == len(prompt)


def test_enough_stops_the_rounds_at_a_verified_prefix_of_the_greedy_answer(model):
    """`enough` is asked after each round with the tokens so far and their beliefs; when it says yes the rounds
    stop there: what came back is the greedy answer's start, with the beliefs of each of its tokens."""
    prompt = PROMPTS[1]
    spec = Speculator(model.net, canvas=4, decoder=False)
    full = spec.greedy(prompt, 10, set())
    asked = []

    def enough(tokens, logprobs, prefix):
        asked.append((list(tokens), list(logprobs), list(prefix)))
        return len(tokens) >= 3

    part = spec.greedy(prompt, 10, set(), enough=enough)
    assert part.enough and part.finished and part.tokens == full.tokens[:3] and part.passes == 3
    assert part.logprobs == pytest.approx(full.logprobs[:3], abs=1e-5)
    assert [a[0] for a in asked] == [full.tokens[:1], full.tokens[:2], full.tokens[:3]]  # a token a round here
    assert asked[-1][1] == part.logprobs and asked[-1][2] == part.prefix_logprobs
    never = spec.greedy(prompt, 10, set(), enough=lambda *a: False)
    assert not never.enough and never.tokens == full.tokens


def test_while_healing_holds_the_text_it_asks_for_is_the_draft(model):
    """`spelled` drafts the rounds a constraint holds in (token healing's text left to write): the answer stays the
    greedy one under the constraint, and a spelling the encoder agrees with is committed in one pass."""
    prompt = PROMPTS[1]
    spec = Speculator(model.net, canvas=4, decoder=False)
    free = _greedy(model, prompt, 10, set())[0]
    allowed = lambda tokens: free[len(tokens) : len(tokens) + 1] + [7] if len(tokens) < 3 else None  # noqa: E731
    want = _greedy(model, prompt, 10, set(), allowed=allowed)[0]
    plain = spec.greedy(prompt, 10, set(), allowed=allowed)
    asked = []
    right = spec.greedy(prompt, 10, set(), allowed=allowed, spelled=lambda t: asked.append(list(t)) or want[len(t) : 3])
    assert right.tokens == plain.tokens == want
    assert asked[0] == [] and right.looked_up[0] == 3 and right.passes < plain.passes
    assert all(len(t) < 3 for t in asked)  # asked only while the constraint holds
    wrong = spec.greedy(prompt, 10, set(), allowed=allowed, spelled=lambda t: [7, 7, 7][len(t) :])
    assert wrong.tokens == want


def test_riders_are_scored_in_the_first_pass_and_change_nothing_else(model):
    """Continuations given as `riders` ride in the first verifying pass (a tree mask: each sees the prompt and
    itself, not the draft): their rows are the ones a scoring pass gives, and the answer, its passes and the
    cache are the draft's own."""
    prompt = PROMPTS[1]
    riders = [[50, 51, 52], [60], [70, 71, 72, 73, 74, 75]]
    spec = Speculator(model.net, canvas=4, decoder=False)
    mix = _evidence(model, prompt, _greedy(model, prompt, 10, set())[0])  # the first pass verifies a draft too
    plain = spec.greedy(prompt, 10, set(), cache=model.net.new_cache(), mix=mix)
    cache = model.net.new_cache()
    rode = spec.greedy(prompt, 10, set(), cache=cache, mix=mix, riders=riders)
    assert rode.tokens == plain.tokens and rode.passes == plain.passes and len(rode.rider_rows) == 3
    assert rode.looked_up[0] > 0
    rows = {}
    model.continuation_logprobs(prompt, riders, model.net.new_cache(), end_ids={1}, logps_out=rows)
    for rider, got in zip(riders, rode.rider_rows, strict=True):
        assert got.shape[0] == len(rider) + 1  # a row a token, then the one after its last (the line end)
        assert torch.allclose(got, rows[tuple(rider)], atol=1e-4)
    fresh = model.net.new_cache()
    model.net.encode(torch.tensor([prompt]), fresh)
    assert cache.length == len(prompt)
    for a, b in zip(cache.keys, fresh.keys, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_riders_ride_beside_the_decoders_canvas_too(model):
    """With the decoder on, the riders still ride in the first pass, and the decoder's canvas beside it is the
    one written without them: the same drafts, passes and answer."""
    prompt = PROMPTS[0]
    riders = [[50, 51, 52], [60]]
    spec = Speculator(model.net, canvas=8)
    plain = spec.greedy(prompt, 15, set(), cache=model.net.new_cache())
    rode = spec.greedy(prompt, 15, set(), cache=model.net.new_cache(), riders=riders)
    assert rode.tokens == plain.tokens and rode.passes == plain.passes and rode.accepted == plain.accepted
    assert len(rode.rider_rows) == 2 and plain.rider_rows == []
    rows = {}
    model.continuation_logprobs(prompt, riders, model.net.new_cache(), end_ids={1}, logps_out=rows)
    for rider, got in zip(riders, rode.rider_rows, strict=True):
        assert torch.allclose(got, rows[tuple(rider)], atol=1e-4)
    fed = torch.tensor([prompt])  # the first pass alone: the same canvas, guess for guess
    _, guesses = spec._verify_and_draft(fed, model.net.new_cache(), torch.Generator().manual_seed(5), 14)
    _, _, beside = spec._verify_with_riders(fed, fed.shape[1], model.net.new_cache(), riders,
                                            torch.Generator().manual_seed(5), 14)  # fmt: skip
    assert beside == guesses and len(guesses) == 7


def _evidence(model, prompt, stream):
    """A mixer whose code around holds the prompt's tail followed by `stream`."""
    index = TokenIndex([[*prompt[-3:], *stream]], model.config.vocab_size)
    return NgramMixer([index], prompt, weight=1e-4, per_order=0.0)  # barely mixed: the model's answer stands


def test_drafts_from_the_code_around_cost_no_pass_and_change_nothing(model):
    prompt = PROMPTS[1]
    want = _greedy(model, prompt, 12, set())[0]
    # the code around continues with the model's own answer: one verifying pass commits it all
    mix = _evidence(model, prompt, want)
    assert _greedy(model, prompt, 12, set(), mix=mix)[0] == want
    before = model.net.passes
    got = Speculator(model.net, canvas=8, decoder=False).greedy(prompt, 12, set(), mix=mix)
    assert got.tokens == want and got.passes == 1 and got.looked_up == [12] and got.accepted == []
    # the prompt's prefill rides in that pass too: one pass in all, and its time is told apart
    assert model.net.passes - before == 1 and got.prefill_ms > 0
    cache = model.net.new_cache()
    model.net.encode(torch.tensor([prompt[:-1]]), cache)
    again = Speculator(model.net, canvas=8, decoder=False).greedy(prompt, 12, set(), cache=cache, mix=mix)
    assert again.tokens == want and again.passes == 1 and again.prefill_ms == 0  # nothing left to prefill
    # code around that continues otherwise: every draft is refused, each round still commits the encoder's token
    wrong = [t + 1 for t in want]
    mix = _evidence(model, prompt, wrong)
    want_mixed = _greedy(model, prompt, 12, set(), mix=mix)[0]
    got = Speculator(model.net, canvas=8, decoder=False).greedy(prompt, 12, set(), mix=mix)
    assert got.tokens == want_mixed and got.passes == len(want_mixed)
    # with the decoder on, the answer stays the same
    both = Speculator(model.net, canvas=8).greedy(prompt, 12, set(), mix=_evidence(model, prompt, want[:3]))
    assert both.tokens == want and both.looked_up[0] == 3


def test_a_round_with_a_draft_from_the_code_around_asks_the_deadline_for_one_pass(model):
    prompt = PROMPTS[1]
    want = _greedy(model, prompt, 12, set())[0]
    mix = _evidence(model, prompt, want[:2] + [9999 % model.config.vocab_size] + want[3:])
    asked = []
    spec = Speculator(model.net, canvas=8, decoder=False)
    got = spec.greedy(prompt, 12, set(), mix=mix, keep_going=lambda passes: asked.append(passes) or True)
    assert got.tokens == _greedy(model, prompt, 12, set(), mix=mix)[0]
    assert asked and set(asked) == {1}


SNIPPETS = [
    ("import os\n\n\ndef read(path):\n    with open(path) as f:\n        return f.", "\n"),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.", "\n"),
    ("for i in range(10):\n    if i % 2 == 0:\n        print(", "\n"),
]


def test_on_the_shipped_model_the_answer_is_its_greedy_answer():
    from diffill.model import runtime
    from diffill.model.fim import build_prompt

    loaded = runtime.load("", "cpu", dtype="float32")
    tok, model = loaded.tokenizer, loaded.model
    stops = {i for i in range(tok.vocab_size) if "\n" in tok.decode([i])} | {1}
    spec = Speculator(model.net, canvas=16)
    for prefix, suffix in SNIPPETS:
        prompt = build_prompt(tok.encode(prefix), tok.encode(suffix), 256, 64)
        want, score = _greedy(model, prompt, 15, stops)
        got = spec.greedy(prompt, 15, stops)
        assert got.tokens == want and got.score == pytest.approx(score, abs=1e-3)
        assert got.passes <= len(want)
