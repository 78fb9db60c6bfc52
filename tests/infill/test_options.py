"""Engine options: flat knobs routed to their stage, the card's values under the caller's, explicit "off"."""

import dataclasses

import pytest

from diffill.infill import tuning
from diffill.infill.options import (
    KNOB_STAGE,
    STAGES,
    DraftOptions,
    EngineOptions,
    PromptOptions,
    RankOptions,
)
from diffill.model.card import ModelCard

CARD = ModelCard(
    draft="ar",
    min_confidence=0.2,
    span_min_confidence=0.3,
    draft_candidates=6,
    trained_with_context=True,
    speculative=True,
)


def test_every_knob_has_one_stage():
    names = [f.name for group in STAGES.values() for f in dataclasses.fields(group)]
    assert len(names) == len(set(names)) == len(KNOB_STAGE)
    assert set(STAGES) == {f.name for f in dataclasses.fields(EngineOptions)}


def test_knobs_are_routed_to_their_stage():
    o = EngineOptions.from_card(
        None, steps=3, max_prompt_tokens=128, copy_prior=None, symbol_prior=2.0, min_confidence=0.4
    )
    assert (o.drafts.steps, o.prompt.max_prompt_tokens, o.rank.min_confidence) == (3, 128, 0.4)
    assert (o.copies.copy_prior, o.names.symbol_prior) == (None, 2.0)
    assert o.prompt.token_healing == EngineOptions().prompt.token_healing  # untouched knobs keep defaults
    with pytest.raises(TypeError, match="nonsense"):
        EngineOptions.from_card(None, nonsense=1)


def test_the_engine_has_few_knobs_and_the_tuned_numbers_are_no_knob():
    """Every leaf is a user setting, a card key or an experiment's flag: at most 16; the numbers no one sets are
    infill.tuning's and no stage takes them (but for two defaults: the line canvas, which `diffill eval` varies,
    and the context budget of models whose card says they were trained with context)."""
    assert len(KNOB_STAGE) <= 16
    tuned = {name.lower() for name in vars(tuning) if name.isupper()} - {"line_canvas_length", "context_tokens"}
    assert len(tuned) > 10 and not tuned & set(KNOB_STAGE)


def test_the_card_gives_its_values_and_the_callers_knobs_win():
    own = EngineOptions.from_card(CARD)
    assert (own.drafts.draft, own.drafts.draft_candidates, own.rank.min_confidence) == ("ar", 6, 0.2)
    assert own.rank.span_min_confidence == 0.3 and own.prompt.context_tokens > 0 and own.drafts.ar
    assert own.drafts.line_canvas_length is not None  # rest-of-line spans get a short canvas
    assert own.drafts.decoder_drafts and not EngineOptions.from_card(CARD, decoder_drafts=False).drafts.decoder_drafts
    assert own.drafts.speculative and not EngineOptions.from_card(CARD, speculative=False).drafts.speculative


def test_the_beam_runs_only_under_a_generous_latency_budget():
    drafts = EngineOptions.from_card(CARD).drafts
    assert drafts.draft_candidates == 6
    assert drafts.beam_width(None) == 6 and drafts.beam_width(tuning.BEAM_FROM_BUDGET_MS) == 6
    assert drafts.beam_width(tuning.BEAM_FROM_BUDGET_MS - 1) == 1 and drafts.beam_width(100) == 1
    mine = EngineOptions.from_card(CARD, min_confidence=0.5, draft_candidates=1, context_tokens=0)
    assert (mine.rank.min_confidence, mine.drafts.draft_candidates, mine.prompt.context_tokens) == (0.5, 1, 0)
    assert mine.rank.span_min_confidence == 0.3
    untrained = dataclasses.replace(CARD, trained_with_context=False)
    assert EngineOptions.from_card(untrained).prompt.context_tokens == 0  # context shifts the prompt of the others


def test_off_and_the_models_own_are_said_with_none():
    assert DraftOptions().canvas_length is None and DraftOptions().line_canvas_length is None
    with pytest.raises(ValueError, match="canvas_length"):
        DraftOptions(canvas_length=0)  # 0 once meant "the model's own": now an error, not a silent code
    assert RankOptions(min_confidence=0.2).span_confidence == 0.2
    assert RankOptions(min_confidence=0.2, span_min_confidence=0.5).span_confidence == 0.5
    assert not DraftOptions(draft="none").ar and PromptOptions().token_healing
