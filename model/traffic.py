"""HBM bytes of one denoise step, launch by launch, from the launch parameters alone (no GPU needed).

A step over a canvas of `m` tokens after a prompt of `p` runs, per layer: the attention projections, attention over
the cached keys/values and the canvas, the shared MLP, the router, the two MoE kernels and the sum of the experts'
outputs; then the tied head, the sampler and (at the next step) the self-conditioning product. For each launch this
module counts the bytes its grid and tiles read from and write to HBM, and the least it must move (each operand
once). The cache model is the one these kernels are written for: programs are launched with the first grid axis
fastest, so programs that share a weight slab (every M block of one N tile; every block of one expert, the MoE
blocks being sorted by expert) run side by side and read it once; an operand every program re-reads (the
activations) comes from L2 after its first read when it fits in L2's share, else once more per N tile.
What the step must move: every weight it uses (the active experts, the dense layers, the embedding once),
the keys/values it attends to, and each layer's activations once. The tied embedding is read twice today (head,
then self-conditioning) and the logits go through HBM in fp32: that is the gap the fused head closes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from diffill.kernels.tiles import Tiles, moe_tiles, qlinear_tiles

from .config import SLIDING, DiffusionGemmaConfig
from .footprint import quantized_bytes
from .quant import QuantSpec

L2_BYTES = 50 * 2**20  # H100 / H200
L2_SHARE = 0.5  # of L2 an operand re-read across N tiles may hold (the rest serves the weight slabs in flight)
BF16, FP32 = 2, 4


@dataclass(frozen=True)
class Launch:
    """One kernel launch of the step: what its grid and tiles read and write, and the least it must."""

    name: str
    weight_bytes: int  # weight bytes read from HBM
    min_weight_bytes: int  # each weight it needs, once
    other_bytes: int  # activations, keys/values, outputs
    min_other_bytes: int

    @property
    def hbm_bytes(self) -> int:
        return self.weight_bytes + self.other_bytes

    @property
    def min_bytes(self) -> int:
        return self.min_weight_bytes + self.min_other_bytes


def _reread(operand: int, n_tiles: int) -> int:
    """Bytes of an operand every N tile's programs read: once when it fits in its L2 share, else per tile."""
    return operand if operand <= L2_BYTES * L2_SHARE else operand * n_tiles


def qlinear(name: str, m: int, k: int, n: int, spec: QuantSpec | None, tiles: Tiles | None = None) -> Launch:
    """x [m, k] @ W[n, k]^T, W quantized by `spec` (None: bf16), grid (cdiv(m, bm), cdiv(n, bn))."""
    t = tiles or qlinear_tiles(m)
    weights = quantized_bytes((n, k), spec) if spec is not None else n * k * BF16
    x, out = m * k * BF16, m * n * BF16
    n_tiles = math.ceil(n / t.bn)
    return Launch(name, weights, weights, _reread(x, n_tiles) + out, x + out)


def moe(
    config: DiffusionGemmaConfig, counts: Sequence[int], spec: QuantSpec, tiles: Tiles | None = None
) -> list[Launch]:
    """The gate/up and down kernels for one layer whose router sent `counts[e]` slots to expert e, and the sum of
    the slots' fp32 outputs per token."""
    h, ie = config.hidden_size, config.moe_intermediate_size
    slots = sum(counts)
    m = slots // config.top_k_experts
    tiles = tiles or moe_tiles(m)
    gate_up = quantized_bytes((2 * ie, h), spec)
    down = quantized_bytes((h, ie), spec)
    active = sum(1 for c in counts if c)
    # blocks of one expert sit side by side in the sorted order: its slab of each N tile is read once
    x, hidden, out = m * h * BF16, slots * ie * BF16, slots * h * FP32
    gathered = sum(math.ceil(c / tiles.bm) * tiles.bm for c in counts) * h * BF16  # padded rows, per N tile
    first = Launch(
        "moe gate/up",
        active * gate_up,
        active * gate_up,
        min(_reread(x, math.ceil(ie / tiles.bn)), gathered * math.ceil(ie / tiles.bn)) + hidden,
        x + hidden,
    )
    reread = _reread(hidden, math.ceil(h / tiles.bn))
    second = Launch("moe down", active * down, active * down, reread + out, hidden + m * h * BF16)
    combine = Launch("moe sum", 0, 0, out + m * h * BF16, 0)  # the slots' fp32 outputs: in-kernel, nothing
    return [first, second, combine]


def attention(config: DiffusionGemmaConfig, layer: int, m: int, p: int) -> Launch:
    """Attention of `m` canvas queries over the prompt's cached keys/values (the window's, in sliding layers) and
    the canvas's own."""
    shape = config.layer_shape(layer)
    keys = min(p, config.sliding_window) if config.layer_types[layer] == SLIDING else p
    kv = (keys + m) * shape.num_kv_heads * shape.head_dim * BF16 * 2
    q = out = m * config.num_attention_heads * shape.head_dim * BF16
    return Launch("attention", 0, 0, kv + q + out, kv + q + out)


def layer(config: DiffusionGemmaConfig, i: int, m: int, p: int, counts: Sequence[int], spec: QuantSpec) -> list[Launch]:
    """Every launch of layer `i` for a canvas of `m` tokens; norms and residuals read and write the activations."""
    h = config.hidden_size
    shape = config.layer_shape(i)
    q_out, kv_out = config.num_attention_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim
    launches = [
        qlinear("q", m, h, q_out, spec),
        qlinear("k", m, h, kv_out, spec),
        *([qlinear("v", m, h, kv_out, spec)] if config.layer_types[i] == SLIDING else []),
        attention(config, i, m, p),
        qlinear("o", m, q_out, h, spec),
        qlinear("mlp gate", m, h, config.intermediate_size, spec),
        qlinear("mlp up", m, h, config.intermediate_size, spec),
        qlinear("mlp down", m, config.intermediate_size, h, spec),
        qlinear("router", m, h, config.num_experts, None),
        *moe(config, counts, spec),
    ]
    act = m * h * BF16
    launches.append(Launch("norms and residuals", 0, 0, 8 * 2 * act, 8 * 2 * act))
    return launches


def head(config: DiffusionGemmaConfig, m: int) -> list[Launch]:
    """The tied head (fp32 logits), the sampler reading them, and the next step's self-conditioning product
    (probabilities times the embedding); the least is the embedding read once, the logits never stored."""
    embedding = config.vocab_size * config.hidden_size * BF16
    logits = m * config.vocab_size * FP32
    soft = m * config.hidden_size * BF16
    return [
        Launch("head", embedding, embedding, logits, 0),
        Launch("sampler", 0, 0, logits, 0),
        Launch("self-conditioning", embedding, 0, logits + soft, soft),
    ]


def uniform_counts(config: DiffusionGemmaConfig, m: int, seed: int) -> list[int]:
    """Slots per expert when `m` tokens each pick `top_k_experts` distinct experts uniformly (seeded)."""
    g = torch.Generator().manual_seed(seed)
    picks = torch.rand(m, config.num_experts, generator=g).argsort(dim=1)[:, : config.top_k_experts]
    return torch.bincount(picks.reshape(-1), minlength=config.num_experts).tolist()


def denoise_step(
    config: DiffusionGemmaConfig, m: int, p: int = 1000, precision: str = "int4", seed: int = 0
) -> list[Launch]:
    """Every launch of one denoise step over `m` canvas tokens after a `p`-token prompt, routing uniform."""
    spec = QuantSpec.of(precision)
    out: list[Launch] = []
    for i in range(config.num_hidden_layers):
        out += layer(config, i, m, p, uniform_counts(config, m, seed + i), spec)
    return out + head(config, m)


def summary(launches: Sequence[Launch]) -> dict[str, float]:
    """Totals (GB = 1e9 bytes) and ratios to the least the step must move."""
    hbm = sum(x.hbm_bytes for x in launches)
    least = sum(x.min_bytes for x in launches)
    moe_w = sum(x.weight_bytes for x in launches if x.name.startswith("moe"))
    moe_min = sum(x.min_weight_bytes for x in launches if x.name.startswith("moe"))
    return {
        "hbm_gb": hbm / 1e9,
        "min_gb": least / 1e9,
        "ratio": hbm / least,
        "moe_weight_gb": moe_w / 1e9,
        "moe_weight_ratio": moe_w / moe_min if moe_min else 1.0,
    }
