"""The cache n-gram model (model.ngram): where a context occurs in the code around, what follows it, and how that
is mixed into the model's next-token probabilities."""

import math

import numpy as np
import pytest
import torch
from tiny import random_model, tiny_config

from diffill.model.ngram import MAX_ORDER, MIN_ORDER, NgramMixer, TokenIndex, mixed_rows

V = 50


def test_the_longest_matching_context_decides_what_follows():
    # 1 2 3 is followed by 9 once, 2 3 by 4 twice more: the longer context wins
    index = TokenIndex([[1, 2, 3, 9, 5, 2, 3, 4, 7, 2, 3, 4]], V)
    order, follow = index.continuations([8, 1, 2, 3])
    assert order == 3 and follow.tolist() == [9]
    order, follow = index.continuations([6, 2, 3])
    assert order == 2 and sorted(follow.tolist()) == [4, 4, 9]


def test_no_match_across_texts_nor_past_the_end_nor_from_one_token():
    index = TokenIndex([[1, 2], [3, 4], [5, 6, 7]], V)
    assert index.continuations([1, 2])[0] == 0  # 1 2 ends its text: nothing follows it there
    assert index.continuations([2, 3])[0] == 0  # 2 | 3 spans two texts
    assert index.continuations([7])[0] == 0  # one token is too little context
    assert index.continuations([5, 6])[1].tolist() == [7]
    assert len(TokenIndex([], V)) == 0 and TokenIndex([], V).continuations([1, 2])[0] == 0


def test_matching_stops_at_max_order():
    stream = list(range(1, 30)) + [40] + list(range(1, 30)) + [41]
    index = TokenIndex([stream], V)
    order, follow = index.continuations(list(range(1, 30)), max_order=MAX_ORDER)
    assert order == MAX_ORDER and sorted(follow.tolist()) == [40, 41]


def _uniform() -> torch.Tensor:
    return torch.full((V,), -math.log(V))


def test_the_mix_moves_weight_to_what_the_code_around_continues_with():
    index = TokenIndex([[1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 3, 8]], V)
    mixer = NgramMixer([index], tail=[7, 1, 2], weight=0.2, per_order=0.1)
    mixed = mixer.mix([3], _uniform())  # context 1 2 3 (order 3): 9 twice, 8 once
    w = 0.2 + 0.1 * (3 - MIN_ORDER)
    p = mixed.exp()
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-5)
    assert float(p[9]) == pytest.approx((1 - w) / V + w * 2 / 3, rel=1e-5)
    assert float(p[8]) == pytest.approx((1 - w) / V + w / 3, rel=1e-5)
    assert float(p[5]) == pytest.approx((1 - w) / V, rel=1e-5)


def test_without_a_match_the_model_is_left_alone():
    mixer = NgramMixer([TokenIndex([[1, 2, 3]], V)], tail=[4, 5], weight=0.5, per_order=0.1)
    logp = torch.log_softmax(torch.randn(V, generator=torch.Generator().manual_seed(0)), -1)
    assert torch.equal(mixer.mix([6], logp), logp)
    assert torch.equal(NgramMixer([], tail=[1, 2], weight=0.5, per_order=0.1).mix([], logp), logp)


def test_rows_are_mixed_after_the_tokens_before_them_and_after_extends_the_tail():
    index = TokenIndex([[1, 2, 3, 4, 5]], V)
    mixer = NgramMixer([index], tail=[1], weight=0.5, per_order=0.0)
    tokens = [2, 3, 4]
    rows = [mixer.mix(tokens[:i], _uniform()) for i in range(4)]  # row i: the distribution after tokens[:i]
    # row i follows tokens[:i]: row 0 after [1] (one token: no match), row 1 after 1 2 -> 3, row 2 after 2 3 -> 4
    assert torch.equal(rows[0], _uniform())
    assert int(rows[1].argmax()) == 3 and int(rows[2].argmax()) == 4 and int(rows[3].argmax()) == 5
    later = mixer.after([2, 3])
    assert int(later.mix([], _uniform()).argmax()) == 4 and int(later.mix([4], _uniform()).argmax()) == 5


def test_the_mixed_scores_reach_the_beam_and_the_scorers():
    """ar_drafts with a mixer: a continuation the code around repeats outscores what the random model prefers;
    token_beliefs and continuation_logprobs score it with the same mixed probabilities."""
    model = random_model(tiny_config(vocab_size=V), seed=0, eos=[1])
    prompt = [2, 10, 11, 12]
    target = [20, 21, 22]
    assert model.ar_drafts(prompt, 3, {1}, k=2)[0][0] != target
    mixer = NgramMixer([TokenIndex([[11, 12, *target] * 5], V)], tail=prompt, weight=0.9, per_order=0.0)
    mixed, score = model.ar_drafts(prompt, 3, {1}, k=2, mix=mixer)[0]
    assert mixed == target
    rows = model.token_beliefs(prompt, mixed, mix=mixer)[0]
    assert all(r > math.log(0.85) for r in rows)  # the cache is sure of each of them
    assert score == pytest.approx(sum(rows), abs=1e-4)
    assert np.all(np.array(model.token_beliefs(prompt, mixed)[0]) < math.log(0.85))  # the model alone is not
    assert model.continuation_logprobs(prompt, [mixed], mix=mixer)[0] == pytest.approx(score, abs=1e-4)


def test_a_draft_follows_what_the_code_around_continues_with_until_it_stops_matching():
    index = TokenIndex([[1, 2, 3, 9, 4, 2, 3, 9, 4, 5, 6]], V)
    mixer = NgramMixer([index], tail=[7, 2], weight=0.5, per_order=0.1)
    # 2 3 -> 9 (twice), 3 9 -> 4, 9 4 -> 2 or 5 (the likelier of equals: the smaller id), ...
    assert mixer.draft([3], room=3) == [9, 4, 2]
    assert mixer.draft([3], room=20, stop_ids={4}) == [9, 4]  # up to a stop id, included
    assert mixer.draft([3], room=0) == []
    assert NgramMixer([index], tail=[7, 8], weight=0.5).draft([], room=5) == []  # 7 8 occurs nowhere
    # the drafted tokens are the mixed distribution's likeliest where the code around decides it
    drafted = mixer.draft([3], room=1)
    assert drafted == [int(mixer.mix([3], _uniform()).argmax())]


def test_where_the_code_around_has_nothing_the_corpus_memory_drafts():
    from diffill.model.corpus_memory import SEPARATOR, CorpusMemory

    memory = CorpusMemory(np.array([1, 2, 3, 4, 5, 6, 7, SEPARATOR] * 3, dtype=np.uint16), V)
    mixer = NgramMixer([TokenIndex([[30, 31, 32]], V)], tail=[1, 2, 3], memory=memory)
    assert mixer.draft([4], room=5) == [5, 6, 7]  # the memory knows 1 2 3 4 -> 5 6 7, then nothing follows


def test_the_mix_at_some_ids_is_the_whole_mix_there():
    from diffill.model.corpus_memory import SEPARATOR, CorpusMemory

    memory = CorpusMemory(np.array([1, 2, 3, 4, 5, 6, 7, SEPARATOR] * 3, dtype=np.uint16), V)
    index = TokenIndex([[1, 2, 3, 4, 9, 2, 3, 4, 5]], V)
    logp = torch.log_softmax(torch.randn(V, generator=torch.Generator().manual_seed(1)), -1)
    at = torch.tensor([5, 9, 0, 17])
    for tail, tokens in (([1, 2, 3], [4]), ([7, 7], [8]), ([1, 2], [3, 4])):  # both, neither, the index alone
        mixer = NgramMixer([index], tail, weight=0.3, per_order=0.1, memory=memory, memory_weight=0.4)
        assert torch.allclose(mixer.mix_at(tokens, logp, at), mixer.mix(tokens, logp)[at], atol=1e-6)


def _logits(rows: dict[int, int], length: int, favoured: int = 5) -> torch.Tensor:
    """Canvas logits [length, V]: the positions in `rows` sure of their id, the others mildly favouring one."""
    logits = torch.zeros(length, V)
    logits[:, favoured] = 1.0
    for k, token in rows.items():
        logits[k, token] = 20.0
    return logits


def test_a_canvas_read_with_the_evidence_spells_on_as_the_code_around_does():
    mixer = NgramMixer([TokenIndex([[11, 12, 20, 21, 22, 30] * 3], V)], tail=[11, 12], weight=0.9, per_order=0.0)
    logits = _logits({0: 20}, 3)
    rows = mixed_rows(mixer, logits)
    tokens = rows.argmax(-1)
    assert tokens.tolist() == [20, 21, 22]  # each position read after the ones before it: 12 20 -> 21, 20 21 -> 22
    assert logits.argmax(-1).tolist() == [20, 5, 5]  # what the decoder alone wrote
    for k in range(3):  # each row is the model's mixed with the evidence after the tokens read before it
        want = mixer.mix(tokens[:k].tolist(), torch.log_softmax(logits[k], -1))
        assert torch.allclose(rows[k], want, atol=1e-5)
    assert all(p > 0.85 for p in rows.exp().gather(1, tokens[:, None]).squeeze(1).tolist())


def test_a_read_leaves_pinned_rows_and_keeps_out_ids_the_logits_rule_out():
    mixer = NgramMixer([TokenIndex([[11, 12, 20, 21, 22] * 3], V)], tail=[11, 12], weight=0.9, per_order=0.0)
    logits = _logits({1: 7}, 3)
    floor = torch.finfo(logits.dtype).min
    logits[0, 20] = floor  # token healing rules 20 out of the first position
    pinned = torch.tensor([False, True, False])
    rows = mixed_rows(mixer, logits, pinned)
    assert int(rows[0].argmax()) != 20 and float(rows[0, 20]) == floor
    assert torch.equal(rows[1], torch.log_softmax(logits[1], -1))  # held: as the decoder's pass left it
    assert int(rows[1].argmax()) == 7


def test_without_a_match_a_read_is_the_decoders_own():
    mixer = NgramMixer([TokenIndex([[1, 2, 3]], V)], tail=[4, 6], weight=0.9, per_order=0.0)
    logits = torch.randn(4, V, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(mixed_rows(mixer, logits), torch.log_softmax(logits, -1), atol=1e-6)


def test_every_denoising_step_is_read_with_the_evidence():
    """The step after the first is conditioned on the first step's logits as the evidence read them (its
    self-conditioning input), not on the decoder's alone."""
    from diffill.model.sampler import SamplerConfig, denoise_canvas

    model = random_model(tiny_config(vocab_size=V), seed=0, eos=[1])
    prompt = torch.tensor([[2, 10, 11, 12]])
    mixer = NgramMixer([TokenIndex([[11, 12, 20, 21, 22] * 5], V)], tail=[2, 10, 11, 12], weight=0.95, per_order=0.0)
    seen: list = []
    decode = model.net.decode

    def recording(x, cache, prev, positions):
        out = decode(x, cache, prev, positions)
        seen.append((prev, out.clone()))
        return out

    cfg = SamplerConfig(max_denoising_steps=2, eos_token_ids=[1])
    for mix in (None, mixer):
        cache = model.net.new_cache()
        model.net.encode(prompt, cache)
        seen.clear()
        model.net.decode = recording
        try:
            got = denoise_canvas(model.net, cache, torch.arange(4, 7)[None], cfg, torch.Generator().manual_seed(0),
                                 3, mix=mix)  # fmt: skip
        finally:
            model.net.decode = decode
        (_, first), (prev, last) = seen
        read = first[0] if mix is None else mixed_rows(mix, first[0])
        assert torch.equal(prev[0].argmax(-1), read.argmax(-1))
        final = last[0] if mix is None else mixed_rows(mix, last[0])
        assert got.tokens[0].tolist() == final.argmax(-1).tolist()
    assert got.tokens[0].tolist() == [20, 21, 22] and read.argmax(-1).tolist() != first[0].argmax(-1).tolist()


def test_a_canvas_from_noise_is_read_with_the_evidence_and_a_seeded_one_is_not():
    model = random_model(tiny_config(vocab_size=V), seed=0, eos=[1])
    prompt, target = [2, 10, 11, 12], [20, 21, 22]
    mixer = NgramMixer([TokenIndex([[11, 12, *target] * 5], V)], tail=prompt, weight=0.95, per_order=0.0)

    def denoise(**kw) -> list[int]:
        return model.denoise(prompt, model.net.new_cache(), canvas=3, steps=2, seed=0, **kw)

    assert denoise() != target
    assert denoise(mix=mixer) == target
    seed = [30, 31, 32]
    assert denoise(init=seed, mix=mixer) == denoise(init=seed)
