"""Model shapes by name, shared by training (`diffill train run --size`) and the speed benchmarks
(`diffill bench model --preset`), so that what is timed is what is trained."""

from __future__ import annotations

from typing import Any

# The CPU-trained shape (shipped until 2026-11-30): 6.2M parameters, a 32-token step within 10 ms on one thread; the
# default of `diffill train run`, whose CPU runs cannot fill a larger model.
EMBEDDED: dict[str, Any] = dict(
    vocab_size=4096,  # set from the tokenizer; nearly 8192's bytes per token for half the head (docs/benchmarks.md, "Tuned constants")
    hidden_size=256,
    intermediate_size=256,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    global_head_dim=128,
    num_global_key_value_heads=1,
    num_experts=8,
    top_k_experts=2,
    moe_intermediate_size=128,
    sliding_window=256,
    max_position_embeddings=4096,
    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
)

PRESETS: dict[str, dict[str, Any]] = {
    "embedded": EMBEDDED,
    # Twice the experts, the same two per token: more parameters for the same active compute, so an AR draft token
    # costs what the embedded shape's does and a denoise step a little more (docs/benchmarks.md, "Tuned constants"). It needs more
    # tokens than CPU training gives, which a GPU run has (bench/train_gpu.sh). The shipped model (model/weights).
    "moe16": {**EMBEDDED, "num_experts": 16},
    # For tests and the benchmark's smoke runs only.
    "tiny": dict(
        vocab_size=1024,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        global_head_dim=32,
        num_global_key_value_heads=1,
        num_experts=4,
        top_k_experts=2,
        moe_intermediate_size=32,
        sliding_window=8,
        max_position_embeddings=4096,
        layer_types=["sliding_attention", "full_attention"],
    ),
}


def preset(name: str) -> dict[str, Any]:
    """A fresh copy of the named shape's text-config arguments (no canvas length: the caller sets it)."""
    if name not in PRESETS:
        raise ValueError(f"unknown model size {name!r} (one of {', '.join(PRESETS)})")
    shape = dict(PRESETS[name])
    shape["layer_types"] = list(shape["layer_types"])
    return shape
