"""Builds tiny random DiffusionGemma checkpoints with transformers (the test oracle) and runs its generate."""

from __future__ import annotations

from pathlib import Path

import torch
from tiny import TINY

CONFIGS = {
    # The shared tiny shape (tests/tiny.py) wider, with two sliding layers around a full one; the prompt in the
    # tests is longer than the window.
    "small": TINY
    | dict(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        global_head_dim=32,
        moe_intermediate_size=32,
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        canvas_length=32,
    ),
    # More layers and heads, 8 experts top-3, MQA on full layers, canvas longer than the window.
    "wide": TINY
    | dict(
        vocab_size=768,
        hidden_size=96,
        intermediate_size=128,
        num_hidden_layers=5,
        num_attention_heads=6,
        num_key_value_heads=3,
        global_head_dim=24,
        num_experts=8,
        top_k_experts=3,
        moe_intermediate_size=24,
        sliding_window=6,
        layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        canvas_length=16,
    ),
}


def build_hf_checkpoint(name: str, out: Path, seed: int = 0):
    """Saves a random tiny model (weights perturbed away from their ones/zeros init) with save_pretrained."""
    from transformers import DiffusionGemmaForBlockDiffusion

    from diffill.bench.model import hf_config

    spec = dict(CONFIGS[name])
    config = hf_config(spec.pop("canvas_length"), **spec, max_position_embeddings=4096)
    canvas = config.canvas_length
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(config).eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname or pname.endswith(("scale", "per_expert_scale")):
                p.mul_(1 + 0.2 * torch.randn_like(p))
            elif "embed_tokens" in pname:
                p.normal_(0, 0.5)
        # Encoder and decoder layer scalars are separate buffers: make them differ.
        for layer in model.model.decoder.layers:
            layer.layer_scalar.fill_(0.8 + 0.4 * torch.rand(()).item())
        for layer in model.model.encoder.language_model.layers:
            layer.layer_scalar.fill_(0.8 + 0.4 * torch.rand(()).item())
    model.generation_config = reference_generation_config(canvas, eos=[1])
    model.save_pretrained(out)
    return model


def reference_generation_config(canvas: int, eos: list[int]):
    """The reference sampler's settings (48 steps, entropy bound 0.1, temperatures 0.8 -> 0.4) for one canvas."""
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
        DiffusionGemmaGenerationConfig,
        EntropyBoundSamplerConfig,
    )

    return DiffusionGemmaGenerationConfig(
        max_new_tokens=canvas,
        max_denoising_steps=48,
        sampler_config=EntropyBoundSamplerConfig(entropy_bound=0.1),
        t_min=0.4,
        t_max=0.8,
        stability_threshold=1,
        confidence_threshold=0.005,
        eos_token_id=eos,
        pad_token_id=0,
    )


def hf_generate(model, prompt: torch.Tensor, seed: int, **kw) -> list[int]:
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(prompt.reshape(1, -1), **kw)
    return out.sequences[0, prompt.numel() :].tolist()
