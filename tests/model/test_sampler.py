"""Sampler behaviour beyond parity: canvas length, pinned positions, cancel, drafts, EOS handling."""

import pytest
import torch
from tiny import random_model, tiny_config

from diffill.model.cancel import Cancelled
from diffill.model.draws import categorical_entropy
from diffill.model.sampler import trim_after_eos


@pytest.fixture(scope="module")
def model():
    return random_model(tiny_config(vocab_size=200, canvas_length=16))


def greedy(model, *args, **kwargs) -> list[int]:
    """The greedy draft: a beam one wide."""
    return model.ar_drafts(*args, k=1, **kwargs)[0][0]


def test_canvas_length_knob(model):
    out = model.generate([2, 10, 11], max_new_tokens=5, seed=1, canvas_length=5, trim=False)
    assert len(out) == 5
    out = model.generate([2, 10, 11], max_new_tokens=9, seed=1, canvas_length=5, trim=False, eos_token_ids=[])
    assert len(out) == 10  # two canvases of 5


def test_pinned_positions_hold(model):
    pins = {0: 50, 3: 51, 7: 52}
    out = model.generate(
        [2, 10, 11], max_new_tokens=8, seed=3, canvas_length=8, pinned=pins, trim=False, eos_token_ids=[]
    )
    for off, tok in pins.items():
        assert out[off] == tok


def test_same_seed_same_answer_and_seeds_differ(model):
    a = model.generate([2, 10, 11, 12], max_new_tokens=16, seed=4, trim=False, eos_token_ids=[])
    b = model.generate([2, 10, 11, 12], max_new_tokens=16, seed=4, trim=False, eos_token_ids=[])
    c = model.generate([2, 10, 11, 12], max_new_tokens=16, seed=5, trim=False, eos_token_ids=[])
    assert a == b
    assert a != c


def test_max_steps_and_drafts(model):
    drafts = []
    model.generate(
        [2, 10],
        max_new_tokens=16,
        seed=0,
        steps=5,
        stability_threshold=None,
        confidence_threshold=None,
        on_draft=lambda d, n: drafts.append((d.clone(), n)),
    )
    assert [n for _, n in drafts] == [1, 2, 3, 4, 5]
    assert all(d.shape == (1, 16) for d, _ in drafts)


def test_cancel_between_steps(model):
    seen = []

    def cancel():
        return len(seen) >= 2

    with pytest.raises(Cancelled):
        model.generate(
            [2, 10],
            max_new_tokens=16,
            seed=0,
            steps=10,
            stability_threshold=None,
            confidence_threshold=None,
            cancel=cancel,
            on_draft=lambda d, n: seen.append(n),
        )
    assert seen == [1, 2]


def test_eos_then_pad_and_trim(model):
    # Pin an EOS in the middle of the canvas: everything after it must become pad, and trimming drops it.
    out = model.generate([2, 10], max_new_tokens=8, seed=2, canvas_length=8, pinned={3: 1}, trim=False)
    assert out[3] == 1 and out[4:] == [0] * 4
    assert model.generate([2, 10], max_new_tokens=8, seed=2, canvas_length=8, pinned={3: 1}) == out[:3]


def test_categorical_entropy_matches_torch():
    logits = torch.randn(3, 7, 50) * 4
    logits[0, 0, :49] = torch.finfo(torch.float32).min
    expected = torch.distributions.Categorical(logits=logits).entropy()
    assert torch.allclose(categorical_entropy(logits), expected)


def test_trim_after_eos():
    assert trim_after_eos([5, 6, 1, 0, 0], [1], 0) == [5, 6]
    assert trim_after_eos([5, 6, 0, 0], [1], 0) == [5, 6]


def test_ar_draft_is_greedy_and_leaves_the_cache_at_the_prompt(model):
    prompt = [2, 10, 11, 12]
    cache = model.net.new_cache()
    draft = greedy(model, prompt, 5, stop_ids=set(), cache=cache)
    assert cache.length == len(prompt)
    seq = list(prompt)
    for _ in range(5):  # the same greedy continuation, recomputed from scratch each token
        hidden = model.net.encode(torch.tensor([seq]), model.net.new_cache())
        seq.append(int(model.net.head(hidden[:, -1]).argmax(-1)))
    assert draft == seq[len(prompt) :]
    # Stops at a stop id, included.
    stop = draft[1]
    short = greedy(model, prompt, 5, stop_ids={stop})
    assert short == draft[: draft.index(stop) + 1]


def test_ar_drafts_are_a_beam_search_scored_whole(model):
    """k drafts from a beam of width k, each scored by its summed log-probability (the number
    continuation_logprobs gives), likeliest first; k=1 is the plain greedy draft; the cache ends at the prompt."""
    prompt = [2, 10, 11, 12]
    cache = model.net.new_cache()
    drafts = model.ar_drafts(prompt, 5, stop_ids=set(), cache=cache, k=3)
    assert cache.length == len(prompt)
    assert len(drafts) == 3 and len({tuple(d[0]) for d in drafts}) == 3
    scores = model.continuation_logprobs(prompt, [d[0] for d in drafts])
    assert [d[1] for d in drafts] == pytest.approx(scores, abs=1e-4)
    assert [d[1] for d in drafts] == sorted((d[1] for d in drafts), reverse=True)
    best = greedy(model, prompt, 5, stop_ids=set())
    # Two tokens: the beam holds the greedy path, so its best is at least as likely.
    two = model.ar_drafts(prompt, 2, stop_ids=set(), k=3)
    assert two[0][1] >= model.continuation_logprobs(prompt, [best[:2]])[0] - 1e-5
    allowed = model.ar_drafts(prompt, 3, stop_ids=set(), first_allowed=[40, 41, 42, 43], k=2)
    assert len(allowed) == 2 and {d[0][0] for d in allowed} <= {40, 41, 42, 43}
    assert model.ar_drafts(prompt, 3, stop_ids=set(), first_allowed=[], k=2) == [([], 0.0)]  # nothing allowed
    assert greedy(model, prompt, 0, stop_ids=set()) == []
    stop = drafts[0][0][1]  # a draft ends at its first stop id, included
    assert all(stop not in d[:-1] for d, _ in model.ar_drafts(prompt, 5, stop_ids={stop}, k=3))


def test_a_full_width_beam_finds_the_likeliest_two_token_draft(model):
    """With the beam as wide as the vocabulary, two-token drafts are searched exhaustively: the best equals the
    brute-force argmax over every pair, scored from scratch."""
    prompt = [2, 10, 11]
    vocab = model.config.vocab_size
    with torch.inference_mode():
        hidden = model.net.encode(torch.tensor([prompt]), model.net.new_cache())
        first = torch.log_softmax(model.net.head(hidden[:, -1]).float(), -1)[0]
        pairs = torch.tensor([prompt + [t] for t in range(vocab)])
        second = torch.log_softmax(model.net.head(model.net.encode(pairs, model.net.new_cache())[:, -1]).float(), -1)
    total = first[:, None] + second  # [first token, second token]
    best = int(total.argmax())
    drafts = model.ar_drafts(prompt, 2, stop_ids=set(), k=vocab)
    assert drafts[0][0] == [best // vocab, best % vocab]
    assert drafts[0][1] == pytest.approx(float(total.max()), abs=1e-4)


def test_canvas_seeded_with_a_draft(model):
    init = [50, 51, 52, 1] + [0] * 12
    seen = []
    model.generate([2, 10], max_new_tokens=16, seed=0, steps=1, init=init, on_draft=lambda d, n: seen.append(d.clone()))
    assert len(seen) == 1  # ran from the given canvas (no error); one step as asked


def test_confidence_is_the_probability_of_each_committed_token(model):
    out = model.generate_full([2, 10, 11], max_new_tokens=8, seed=2, canvas_length=8, pinned={2: 60, 5: 61})
    assert len(out.confidence) == len(out.tokens) == 8
    assert all(0.0 <= p <= 1.0 for p in out.confidence)
    assert out.confidence[2] == pytest.approx(1.0) and out.confidence[5] == pytest.approx(1.0)  # pinned: certain
    assert min(out.confidence) < 0.5  # a random model doubts the rest


def test_min_confidence_cuts_before_the_first_doubtful_token(model):
    full = model.generate_full([2, 10, 11], max_new_tokens=8, seed=2, canvas_length=8, eos_token_ids=[])
    threshold = sorted(full.confidence)[len(full.confidence) // 2]
    first_doubt = next(i for i, p in enumerate(full.confidence) if p < threshold)
    cut = model.generate(
        [2, 10, 11], max_new_tokens=8, seed=2, canvas_length=8, eos_token_ids=[], min_confidence=threshold
    )
    assert cut == full.tokens[:first_doubt]
    assert model.generate([2, 10, 11], max_new_tokens=8, seed=2, canvas_length=8, eos_token_ids=[]) == full.tokens


def test_a_denoised_canvas_ends_before_its_first_unsure_token():
    from diffill.model.sampler import before_unsure

    assert before_unsure([5, 6, 7], [0.9, 0.2, 0.9], 0.5) == [5]
    assert before_unsure([5, 6, 7], [0.9, 0.6, 0.9], 0.5) == [5, 6, 7]
    assert before_unsure([5, 6, 7], [0.1, 0.9, 0.9], 0.0) == [5, 6, 7]  # 0 = off


def test_first_allowed_restricts_the_first_token_only(model):
    for seed in range(4):
        out = model.generate([2, 10, 11], max_new_tokens=8, seed=seed, canvas_length=8, trim=False,
                             eos_token_ids=[], first_allowed=[50, 51])  # fmt: skip
        assert out[0] in (50, 51)
    assert greedy(model, [2, 10, 11], 3, stop_ids=set(), first_allowed=[77])[0] == 77
    free = greedy(model, [2, 10, 11], 3, stop_ids=set())
    assert greedy(model, [2, 10, 11], 3, stop_ids=set(), first_allowed=[free[0]]) == free


def test_inverse_cdf_draws_follow_the_distribution():
    from diffill.model.draws import inverse_cdf_sample

    probs = torch.tensor([0.0, 0.1, 0.0, 0.6, 0.3]).repeat(4000, 1)
    draws = inverse_cdf_sample(probs, torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=5).float() / 4000
    assert freq[0] == 0 and freq[2] == 0  # zero-probability ids are never drawn
    assert torch.allclose(freq, probs[0], atol=0.03)
    one_hot = torch.zeros(3, 7)
    one_hot[torch.arange(3), torch.tensor([6, 0, 3])] = 1.0
    assert inverse_cdf_sample(one_hot, torch.Generator().manual_seed(1)).tolist() == [6, 0, 3]


def test_fast_sampling_keeps_pins_and_the_seed(model):
    pins = {0: 50, 3: 51}
    kw = dict(max_new_tokens=8, seed=3, canvas_length=8, trim=False, eos_token_ids=[], fast=True)
    a = model.generate([2, 10, 11], pinned=pins, **kw)
    assert a == model.generate([2, 10, 11], pinned=pins, **kw)
    assert a[0] == 50 and a[3] == 51


def test_a_draft_margin_keeps_the_draft_where_the_decoder_is_not_sure_enough(model):
    """draft_margin: a seeded canvas is kept, and a token changes only where the decoder's top choice beats it
    by the margin. A margin above 1 can never be beaten: the draft comes back as it was, after one pass."""
    init = [50, 51, 52, 53, 54, 55, 56, 57]
    passes = []
    out = model.generate_full([2, 10], max_new_tokens=8, seed=0, steps=4, canvas_length=8, init=init,
                              draft_margin=1.5, on_draft=lambda d, n: passes.append(n), eos_token_ids=[])  # fmt: skip
    assert out.tokens == init and passes == [1]


def test_a_negative_draft_margin_takes_every_argmax_of_a_pass(model):
    """With a margin below zero every token the decoder would argmax differently changes: one pass over the
    draft gives exactly the decoder's argmax canvas for it; pinned tokens hold."""
    import torch

    init = [50, 51, 52, 53, 54, 55, 56, 57]
    out = model.generate_full([2, 10], max_new_tokens=8, seed=0, steps=1, canvas_length=8, init=init,
                              draft_margin=-1.0, eos_token_ids=[], pinned={3: 99})  # fmt: skip
    logits = model.denoise_logits([2, 10], [50, 51, 52, 99, 54, 55, 56, 57])
    expected = logits.argmax(-1).tolist()
    expected[3] = 99
    assert out.tokens == expected
    assert out.tokens != init  # a random model disagrees with an arbitrary draft somewhere
    assert torch.tensor(out.confidence).le(1.0).all()


def test_continuation_logprobs_match_one_causal_pass(model):
    """Each candidate's summed log-probability equals the encoder's over prompt + candidate in one pass; the
    cache is left at the prompt."""
    prompt, candidates = [2, 10, 11, 12], [[40], [41, 42, 43], []]
    cache = model.net.new_cache()
    scores = model.continuation_logprobs(prompt, candidates, cache)
    assert cache.length == len(prompt) and scores[2] == 0.0
    for cand, score in zip(candidates[:2], scores, strict=False):
        hidden = model.net.encode(torch.tensor([prompt + cand[:-1]]), model.net.new_cache())
        logp = torch.log_softmax(model.net.head(hidden[0, len(prompt) - 1 :]).float(), dim=-1)
        expected = sum(float(logp[i, t]) for i, t in enumerate(cand))
        assert score == pytest.approx(expected, abs=1e-4)
    passes = model.net.passes
    assert model.continuation_logprobs(prompt, candidates, cache) == pytest.approx(scores, abs=1e-5)  # reused
    assert model.net.passes == passes + 1  # every candidate in one batched pass
    fresh = model.net.new_cache()
    model.net.encode(torch.tensor([prompt]), fresh)
    assert cache.length == len(prompt)
    for a, b in zip(cache.keys + cache.values, fresh.keys + fresh.values, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)


def test_continuation_logprobs_with_end_ids_add_the_chance_the_line_ends(model):
    """With end ids, a score is the candidate's log-probability plus log(sum of p(end id)) right after it: the
    same number a beam gives a draft that stops there when one end id holds all the mass."""
    prompt, cand, ends = [2, 10, 11, 12], [41, 42], {7, 9}
    plain = model.continuation_logprobs(prompt, [cand])[0]
    scored = model.continuation_logprobs(prompt, [cand], end_ids=ends)[0]
    hidden = model.net.encode(torch.tensor([prompt + cand]), model.net.new_cache())
    logp = torch.log_softmax(model.net.head(hidden[0, -1]).float(), dim=-1)
    assert scored == pytest.approx(plain + float(torch.logsumexp(logp[[7, 9]], 0)), abs=1e-4)
    assert model.continuation_logprobs(prompt, [cand, cand + [7]], end_ids={7})[1] < scored


def test_ar_drafts_out_of_time_rank_the_drafts_as_they_stand(model):
    prompt = [2, 10, 11, 12]
    asked = []

    def keep_going():
        asked.append(1)
        return len(asked) < 2  # one more step, then no time

    drafts = model.ar_drafts(prompt, 8, stop_ids=set(), k=3, keep_going=keep_going)
    assert len(asked) == 2 and all(len(d) == 2 for d, _ in drafts)  # first token + one step each
    assert [s for _, s in drafts] == sorted((s for _, s in drafts), reverse=True)
    scores = model.continuation_logprobs(prompt, [d for d, _ in drafts])
    assert [s for _, s in drafts] == pytest.approx(scores, abs=1e-4)
    assert model.ar_drafts(prompt, 8, stop_ids=set(), k=1, keep_going=lambda: False)[0][0] == greedy(
        model, prompt, 1, stop_ids=set()
    )
