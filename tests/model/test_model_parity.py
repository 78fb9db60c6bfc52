"""Our DiffusionGemma against transformers' on random tiny checkpoints saved with save_pretrained."""

import pytest
import torch

from diffill.model import DiffusionModel
from hf_oracle import CONFIGS, hf_generate

NAMES = list(CONFIGS)
TOL = 1e-4


def prompt_for(vocab: int, length: int = 20, seed: int = 7) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.tensor([2]), torch.randint(3, vocab, (length - 1,), generator=g)])


@pytest.fixture(scope="module")
def pairs(hf_checkpoints):
    return {name: (DiffusionModel.from_pretrained(folder), hf) for name, (folder, hf) in hf_checkpoints.items()}


@pytest.mark.parametrize("name", NAMES)
def test_prompt_is_longer_than_sliding_window(pairs, name):
    ours, _ = pairs[name]
    assert prompt_for(ours.config.vocab_size).numel() > ours.config.sliding_window


@pytest.mark.parametrize("name", NAMES)
def test_encoder_and_canvas_logits_match(pairs, name):
    ours, hf = pairs[name]
    prompt = prompt_for(ours.config.vocab_size)
    canvas = torch.randint(
        0, ours.config.vocab_size, (ours.config.canvas_length,), generator=torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        ref = hf(input_ids=prompt[None], decoder_input_ids=canvas[None])
        pos = torch.arange(prompt.numel(), prompt.numel() + canvas.numel())[None]
        ref_sc = hf(
            past_key_values=ref.past_key_values,
            decoder_input_ids=canvas[None],
            self_conditioning_logits=ref.logits,
            decoder_position_ids=pos,
        )
    enc = ours.encode(prompt)
    assert enc.shape == ref.encoder_last_hidden_state[0].shape
    assert (enc - ref.encoder_last_hidden_state[0]).abs().max().item() < TOL
    logits = ours.denoise_logits(prompt, canvas)
    assert logits.dtype == torch.float32
    assert (logits - ref.logits[0]).abs().max().item() < TOL
    # The logits are not trivially flat: a wrong layer would show.
    assert logits.std().item() > 0.05
    sc = ours.denoise_logits(prompt, canvas, prev_logits=ref.logits[0])
    assert (sc - ref_sc.logits[0]).abs().max().item() < TOL
    assert (sc - logits).abs().max().item() > 1e-3  # self-conditioning changes the answer


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [0, 42])
def test_generate_one_canvas_token_identical(pairs, name, seed):
    ours, hf = pairs[name]
    prompt = prompt_for(ours.config.vocab_size)
    c = ours.config.canvas_length
    expected = hf_generate(hf, prompt, seed, max_new_tokens=c)
    got = ours.generate(prompt, max_new_tokens=c, seed=seed, trim=False)
    assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_generate_two_canvases_token_identical(pairs, name):
    ours, hf = pairs[name]
    prompt = prompt_for(ours.config.vocab_size)
    c = ours.config.canvas_length
    expected = hf_generate(hf, prompt, 5, max_new_tokens=2 * c, eos_token_id=None)
    assert len(expected) == 2 * c
    saved = ours.sampler.eos_token_ids
    ours.sampler.eos_token_ids = []
    try:
        got = ours.generate(prompt, max_new_tokens=2 * c, seed=5, trim=False)
    finally:
        ours.sampler.eos_token_ids = saved
    assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_generate_fixed_steps_token_identical(pairs, name):
    ours, hf = pairs[name]
    prompt = prompt_for(ours.config.vocab_size)
    c = ours.config.canvas_length
    expected = hf_generate(
        hf, prompt, 11, max_new_tokens=c, max_denoising_steps=8, stability_threshold=None, confidence_threshold=None
    )
    steps = []
    got = ours.generate(
        prompt,
        max_new_tokens=c,
        seed=11,
        steps=8,
        stability_threshold=None,
        confidence_threshold=None,
        trim=False,
        on_draft=lambda draft, n: steps.append(n),
    )
    assert got == expected
    assert steps == list(range(1, 9))
