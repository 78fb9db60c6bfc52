"""The reference `diffill bench gpu` compares our step with: transformers' DiffusionGemma decoder step in bf16.

Apart because it is the only part that needs transformers (the dev extra): importing it is deferred to the call,
and a run without it records the error instead of the figure.
"""

from __future__ import annotations

from typing import Any

import torch

from diffill.model.config import DiffusionGemmaConfig

from ..model import hf_config
from .harness import timed


def transformers_step_ms(
    config: DiffusionGemmaConfig, layers: int, canvas: int, prompt: int, reps: int, device: torch.device | str
) -> dict[str, Any]:
    """One decoder step of transformers' DiffusionGemmaForBlockDiffusion in bf16 with `layers` layers."""
    from transformers import DiffusionGemmaForBlockDiffusion

    types = list(config.layer_types[:layers])
    types[-1] = "full_attention"
    hf_cfg = hf_config(
        canvas,
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, head_dim=config.head_dim,
        global_head_dim=config.global_head_dim, num_global_key_value_heads=config.num_global_key_value_heads,
        num_experts=config.num_experts, top_k_experts=config.top_k_experts,
        moe_intermediate_size=config.moe_intermediate_size, sliding_window=config.sliding_window,
        layer_types=types, max_position_embeddings=config.max_position_embeddings,
    )  # fmt: skip
    with torch.device(device):
        hf = DiffusionGemmaForBlockDiffusion._from_config(hf_cfg, dtype=torch.bfloat16).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, config.vocab_size, (1, prompt), generator=g).to(device)
    x = torch.randint(0, config.vocab_size, (1, canvas), generator=g).to(device)
    pos = torch.arange(prompt, prompt + canvas, device=device)[None]
    with torch.inference_mode():
        out = hf(input_ids=ids, decoder_input_ids=x)
        cache, prev = out.past_key_values, out.logits
        ms = timed(
            lambda: hf(
                past_key_values=cache, decoder_input_ids=x, self_conditioning_logits=prev, decoder_position_ids=pos
            ),
            reps,
            torch.device(device),
        )
    return {"layers": layers, "step_ms": ms, "step_ms_scaled_to_all_layers": ms * config.num_hidden_layers / layers}
