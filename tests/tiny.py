"""Tiny random DiffusionGemma models for tests: one config builder and one random model, shared."""

import torch

from diffill.model import DiffusionGemma, DiffusionGemmaConfig, DiffusionModel, SamplerConfig

TINY = dict(
    vocab_size=300,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    global_head_dim=16,
    num_global_key_value_heads=1,
    num_experts=4,
    top_k_experts=2,
    moe_intermediate_size=16,
    sliding_window=4,
    canvas_length=8,
)


def tiny_config(**overrides) -> DiffusionGemmaConfig:
    return DiffusionGemmaConfig(**{**TINY, **overrides})


def random_net(config: DiffusionGemmaConfig, seed: int = 0, std: float = 0.3) -> DiffusionGemma:
    """Weights drawn wide enough that the logits are far from flat (a wrong layer shows in the output)."""
    torch.manual_seed(seed)
    net = DiffusionGemma(config).eval()
    for p in net.parameters():
        torch.nn.init.normal_(p, 0, std)
    return net


def random_model(config: DiffusionGemmaConfig, seed: int = 0, std: float = 0.3, eos: list[int] | None = None):
    eos_ids = [1] if eos is None else eos
    return DiffusionModel(random_net(config, seed, std), SamplerConfig(eos_token_ids=eos_ids, pad_token_id=0))
