"""The byte model of one denoise step and the roofline arithmetic of `diffill bench gpu`.

Apart from the measurements so that what a GPU run is judged against (the bytes a step must move, the time that
takes at the measured copy bandwidth, a launch's bytes per second) is plain arithmetic on a config, testable on
any machine without building a model.
"""

from __future__ import annotations

from diffill.model.config import DiffusionGemmaConfig
from diffill.model.footprint import quantized_bytes, weight_footprint
from diffill.model.quant import QuantSpec

EMBED_BYTES = 2  # the embedding (and the tied head) stays bf16
LOGIT_BYTES = 4  # fp32 logits
KV_BYTES = 2  # bf16 keys and values


def experts_touched(config: DiffusionGemmaConfig, canvas: int) -> float:
    """Expected share of a layer's experts that `canvas` tokens route to, each token picking top-k of them."""
    return 1 - (1 - config.top_k_experts / config.num_experts) ** canvas


def expert_bytes(config: DiffusionGemmaConfig, spec: QuantSpec) -> int:
    """Packed bytes of every layer's experts (gate/up and down projections) stored in `spec`."""
    e, h, ie = config.num_experts, config.hidden_size, config.moe_intermediate_size
    return config.num_hidden_layers * (quantized_bytes((e, 2 * ie, h), spec) + quantized_bytes((e, h, ie), spec))


def kv_bytes(config: DiffusionGemmaConfig, prompt: int) -> int:
    """Bytes of the cached keys and values a step reads: the whole prompt in full-attention layers, at most the
    window (less the query's own slot) in sliding ones."""
    kv = 0
    for i in range(config.num_hidden_layers):
        shape = config.layer_shape(i)
        keys = prompt if config.layer_types[i] == "full_attention" else min(prompt, config.sliding_window - 1)
        kv += 2 * keys * shape.num_kv_heads * shape.head_dim * KV_BYTES
    return kv


def step_bytes(config: DiffusionGemmaConfig, spec: QuantSpec, canvas: int, prompt: int) -> dict[str, float]:
    """Bytes one denoise step must move at least: the weights of every expert the canvas touches (almost all
    of them at 256 tokens x top-8 of 128), the rest of the layers, the embedding twice (head and self-conditioning
    input), the fp32 logits written once and read twice (sampler, soft embedding), and the cached keys/values."""
    embed = config.vocab_size * config.hidden_size * EMBED_BYTES
    experts = expert_bytes(config, spec)
    touched = experts_touched(config, canvas)
    layers = weight_footprint(config, spec).total_bytes - embed - experts * (1 - touched)
    logits = canvas * config.vocab_size * LOGIT_BYTES * 3
    kv = kv_bytes(config, prompt)
    weights = layers + 2 * embed
    return {"weights": weights, "logits": logits, "kv": kv, "total": weights + logits + kv}


def bytes_per_s(nbytes: float, ms: float) -> float:
    """The rate of moving `nbytes` in `ms` milliseconds."""
    return nbytes / (ms / 1e3)


def roofline_ms(nbytes: float, bandwidth: float) -> float:
    """Milliseconds that moving `nbytes` takes at `bandwidth` bytes/s: the least a step can take."""
    return nbytes / bandwidth * 1e3
