"""A checkpoint's card (model.card): read once, its sampler and diffill's keys, bad keys left at their defaults."""

import json

import pytest

from diffill.infill.options import EngineOptions, RankOptions
from diffill.model.card import ModelCard


def write(folder, generation=None, training=None):
    if generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(generation))
    if training is not None:
        (folder / "training.json").write_text(json.dumps(training))
    return folder


def test_the_card_gives_the_sampler_and_diffills_keys(tmp_path):
    card = ModelCard.read(
        write(
            tmp_path,
            {
                "max_denoising_steps": 12,
                "eos_token_id": [1, 106],
                "diffill_draft": "ar",
                "diffill_min_confidence": 0.4,
                "diffill_draft_candidates": 40,
                "diffill_span_min_confidence": 0.3,
                "diffill_speculative": True,
                "diffill_draft_margin": 0.6,
                "diffill_rewrite_min_confidence": 0.75,
            },
            {"config": {"context_prob": 0.5}},
        )
    )
    assert (card.sampler.max_denoising_steps, card.sampler.eos_token_ids, card.sampler.draft_margin) == (
        12,
        [1, 106],
        0.6,
    )
    assert (card.draft, card.min_confidence, card.span_min_confidence, card.speculative) == ("ar", 0.4, 0.3, True)
    assert card.draft_candidates == 16 and card.trained_with_context  # a beam wider than 16 is held at 16
    assert card.rewrite_min_confidence == 0.75
    assert EngineOptions.from_card(card).rank.rewrite_min_confidence == 0.75
    assert EngineOptions.from_card(ModelCard()).rank.rewrite_min_confidence == RankOptions().rewrite_min_confidence


def test_a_folder_without_a_card_has_the_defaults(tmp_path):
    assert ModelCard.read(tmp_path) == ModelCard()


def test_diffill_keys_of_the_wrong_type_are_left_at_their_defaults(tmp_path, caplog):
    card = ModelCard.read(write(tmp_path, {"max_denoising_steps": 9, "diffill_min_confidence": "high"}))
    assert card.sampler.max_denoising_steps == 9 and card.min_confidence == 0.0 and card.draft == ""
    assert "diffill keys are ignored" in caplog.text
    assert not ModelCard.read(write(tmp_path, {"diffill_speculative": "yes"})).speculative  # only true is true


def test_a_card_that_is_no_json_object_is_an_error(tmp_path):
    (tmp_path / "generation_config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        ModelCard.read(tmp_path)
    (tmp_path / "generation_config.json").write_text("{not json")
    with pytest.raises(ValueError):
        ModelCard.read(tmp_path)
