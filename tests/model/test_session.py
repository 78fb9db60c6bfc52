"""A session's prefill (model.session): a speculative session's first draft carries it in its first pass, and
scores or beliefs carry it in their one pass, a denoising runs it first as a pass of its own; either way the
answer is the same and `counts` tells it. What `scores` ranked is believed without a pass.
"""

from __future__ import annotations

import pytest
from tiny import random_model, tiny_config

from diffill.model.session import Prompter, Speculation

PROMPT = [2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49]


@pytest.fixture(scope="module")
def model():
    return random_model(tiny_config(), seed=2, eos=[])


def _draft(model, speculation, then_scores: bool = False):
    prompter = Prompter(model)
    before = model.net.passes
    with prompter.session("doc", PROMPT, speculation=speculation) as session:
        opened = model.net.passes - before
        ids, score = session.draft(8, set())
        scores = session.scores([ids[:3]]) if then_scores else None
        return ids, score, scores, opened, model.net.passes - before, session.counts


def test_a_speculative_first_draft_carries_the_prefill_in_its_first_pass(model):
    plain_ids, plain_score, _, opened, plain_passes, plain_counts = _draft(model, None)
    assert opened == 1 and plain_counts.prefill_passes == 0  # opening the session was the prefill
    assert plain_passes == 1 + len(plain_ids)  # then a pass a token
    ids, score, _, opened, passes, counts = _draft(model, Speculation(canvas=6, decoder=False))
    assert ids == plain_ids and score == pytest.approx(plain_score, abs=1e-4)
    assert opened == 0 and passes <= len(plain_ids)  # the first pass carried the prefill: at least one fewer
    assert counts.prefill_passes == 1 and counts.prefill_ms > 0


def test_scores_and_beliefs_carry_the_prefill_and_a_denoising_runs_it_first(model):
    prompter = Prompter(model)
    with prompter.session("doc", PROMPT, speculation=Speculation(canvas=6)) as session:
        before = model.net.passes
        alone = session.scores([[50, 51], [60]], end_ids={1})
        assert session.counts.prefill_passes == 1 and model.net.passes - before == 1  # one pass: prefill and scores
        assert session.counts.prefill_ms > 0
    with Prompter(model).session("doc", PROMPT) as eager:
        assert eager.scores([[50, 51], [60]], end_ids={1}) == pytest.approx(alone, abs=1e-4)
        assert eager.counts.prefill_passes == 0
    with Prompter(model).session("doc", PROMPT, speculation=Speculation(canvas=6)) as believing:
        before = model.net.passes
        beliefs = believing.beliefs([70, 71])
        assert model.net.passes - before == 1 and believing.counts.prefill_passes == 1
    with Prompter(model).session("doc", PROMPT) as eager:
        assert eager.beliefs([70, 71])[0] == pytest.approx(beliefs[0], abs=1e-4)
    with Prompter(model).session("doc", PROMPT) as eager:  # (opening it was the prefill)
        before = model.net.passes
        eager.denoise(4, 1, 0)
        denoised = model.net.passes - before
    with Prompter(model).session("doc", PROMPT, speculation=Speculation(canvas=6)) as denoising:
        before = model.net.passes
        denoising.denoise(4, 1, 0)
        assert denoising.counts.prefill_passes == 1 and model.net.passes - before == 1 + denoised  # its own pass
    # after a draft, nothing is left to prefill
    _, _, scores, _, _, counts = _draft(model, Speculation(canvas=6), then_scores=True)
    assert counts.prefill_passes == 1 and scores is not None


def test_beliefs_of_a_scored_continuation_are_read_back_without_a_pass(model):
    copies = [[50, 51, 52, 53], [60, 61]]
    with Prompter(model).session("doc", PROMPT) as session:
        session.scores(copies, end_ids={1})
        before = model.net.passes
        read_back = session.beliefs(copies[0][:3])  # a copy cut short is a start of what was scored
        assert model.net.passes == before
        fresh = session.beliefs([70, 71])  # never scored: a pass of its own
        assert model.net.passes == before + 1
    with Prompter(model).session("doc", PROMPT) as alone:
        want = alone.beliefs(copies[0][:3])
        assert alone.beliefs([70, 71])[0] == pytest.approx(fresh[0], abs=1e-4)
    assert len(read_back[0]) == 3
    assert read_back[0] == pytest.approx(want[0], abs=1e-4) and read_back[1] == pytest.approx(want[1], abs=1e-4)


def test_a_draft_after_a_scored_head_is_believed_whole_without_a_pass(model):
    """A draft that goes on after a head `scores` ranked (a known name) keeps the whole answer's beliefs: the
    cut reads them back, and its `enough` is judged on the whole answer, the head's beliefs first."""
    spec = Speculation(canvas=6, decoder=False)
    with Prompter(model).session("doc", PROMPT, speculation=spec) as session:
        own, _ = session.draft(4, set())
        head = [50, 51]
        session.scores([head, [60]])
        asked = []
        rest, _ = session.draft(6, set(), head=head, enough=lambda t, lp, g: asked.append((t, lp, g)) or len(t) >= 4)
        before = model.net.passes
        believed = session.beliefs(head + rest)
        assert model.net.passes == before  # read back
    assert len(rest) == 2 and len(asked[-1][0]) == 4 and asked[-1][0][:2] == head  # judged on head + rest
    with Prompter(model).session("doc", PROMPT) as alone:
        want = alone.beliefs(head + rest)
    assert believed[0] == pytest.approx(want[0], abs=1e-4) and believed[1] == pytest.approx(want[1], abs=1e-4)
    assert asked[-1][1] == pytest.approx(want[0], abs=1e-4)
    with Prompter(model).session("doc", PROMPT, speculation=spec) as unscored:
        unscored.draft(4, set())
        went_on, _ = unscored.draft(6, set(), head=[50, 51], enough=lambda *a: True)
        assert len(went_on) == 6  # no beliefs of its head: nothing to judge it by, the draft goes to its end


def test_copies_riding_in_a_drafts_first_pass_are_scored_without_a_pass_of_their_own(model):
    copies = [[50, 51, 52], [60, 61]]
    spec = Speculation(canvas=6, decoder=False)
    with Prompter(model).session("doc", PROMPT, speculation=spec) as session:
        before = model.net.passes
        ids, _ = session.draft(6, set(), riders=copies)
        drafted = model.net.passes - before
        scores = session.scores(copies, end_ids={1})
        assert model.net.passes - before == drafted  # read back
        fresh = session.scores([[80, 81]], end_ids={1})  # not a rider: a pass of its own
        assert model.net.passes - before == drafted + 1
    with Prompter(model).session("doc", PROMPT) as alone:
        assert scores == pytest.approx(alone.scores(copies, end_ids={1}), abs=1e-4)
        assert fresh == pytest.approx(alone.scores([[80, 81]], end_ids={1}), abs=1e-4)
    with Prompter(model).session("doc", PROMPT, speculation=spec) as plain:
        assert plain.draft(6, set())[0] == ids  # riders change no answer
