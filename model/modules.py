"""The building blocks of the DiffusionGemma text stack, written plainly (one module, one job).

Numerics follow transformers' reference exactly where it matters for parity: RMSNorm in fp32 multiplying by w
(not 1 + w), split-half RoPE with cos/sin cast to the activation dtype, attention scaling 1.0 (q/k-norm replace
1/sqrt(d)), K=V on full layers, router softmax in fp32 over the raw residual.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from diffill.kernels.moe import combine, geglu, gelu_tanh, per_expert, sort_slots

from .cache import KVCache
from .config import FULL, SLIDING, DiffusionGemmaConfig  # noqa: F401 (re-exported)

# Not cuDNN's attention on CUDA: it builds an execution plan for every new key length, which the daemon's prompts
# and AR drafts change on every call: host time per call that a cached plan would not cost (docs/benchmarks.md,
# "Tuned constants").
CUDA_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


class RMSNorm(nn.Module):
    """y = x / rms(x) * w, computed in fp32; `with_scale=False` has no weight (used for v-norm, router, SC)."""

    def __init__(self, dim: int, eps: float = 1e-6, with_scale: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if with_scale else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.float() if self.weight is not None else None
        return F.rms_norm(x.float(), (x.shape[-1],), w, self.eps).type_as(x)


def rope_inv_freq(head_dim: int, params: dict) -> torch.Tensor:
    """Inverse frequencies for 'default' and 'proportional' RoPE (the latter leaves the tail dims unrotated)."""
    base = float(params["rope_theta"])
    partial = float(params.get("partial_rotary_factor", 1.0))
    factor = float(params.get("factor", 1.0))
    if params.get("rope_type", "default") == "proportional":
        angles = int(partial * head_dim // 2)
        rotated = 1.0 / (base ** (torch.arange(0, 2 * angles, 2, dtype=torch.int64).float() / head_dim))
        inv = torch.cat([rotated, torch.zeros(head_dim // 2 - angles)])
        return inv / factor
    if params.get("rope_type", "default") != "default":
        raise ValueError(f"unsupported rope_type {params.get('rope_type')!r}")
    dim = int(head_dim * partial)
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))


def rope_cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor, dtype: torch.dtype):
    """cos/sin of shape [B, T, 1, d] for split-half rotation."""
    freqs = positions[..., None].float() * inv_freq.to(positions.device)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype)[:, :, None, :], emb.sin().to(dtype)[:, :, None, :]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    """Self-attention with q/k/v norms. Encoder mode is causal and appends to the cache; decoder mode is
    bidirectional over [cache ; canvas] and leaves the cache untouched."""

    def __init__(self, config: DiffusionGemmaConfig, layer_idx: int):
        super().__init__()
        shape = config.layer_shape(layer_idx)
        self.layer_idx = layer_idx
        self.is_sliding = config.layer_types[layer_idx] == SLIDING
        self.window = config.sliding_window
        self.n_heads = config.num_attention_heads
        self.n_kv = shape.num_kv_heads
        self.head_dim = shape.head_dim
        h = config.hidden_size
        self.q_proj = nn.Linear(h, self.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False)
        # Full layers have no v_proj: V is the raw k_proj output (K=V).
        self.v_proj = nn.Linear(h, self.n_kv * self.head_dim, bias=False) if self.is_sliding else None
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, h, bias=False)
        self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.v_norm = RMSNorm(self.head_dim, config.rms_norm_eps, with_scale=False)
        rank = config.decoder_adapter_rank
        self.decoder_adapters = AttentionAdapters(self, h, rank) if rank else None

    def forward(self, x: torch.Tensor, cos_sin, cache: KVCache, causal: bool) -> torch.Tensor:
        b, t, _ = x.shape
        cos, sin = cos_sin
        # The decoder's adapters act in its pass only: the encoder's arithmetic is the plain model's, bit for bit.
        ad = self.decoder_adapters if not causal else None
        q = self.q_proj(x) if ad is None else self.q_proj(x) + ad.q(x)
        q = apply_rope(self.q_norm(q.view(b, t, self.n_heads, self.head_dim)), cos, sin)
        k_raw = self.k_proj(x) if ad is None else self.k_proj(x) + ad.k(x)
        k_raw = k_raw.view(b, t, self.n_kv, self.head_dim)
        if self.v_proj is None:
            v = k_raw
        else:
            v = self.v_proj(x) if ad is None or ad.v is None else self.v_proj(x) + ad.v(x)
            v = v.view(b, t, self.n_kv, self.head_dim)
        k = apply_rope(self.k_norm(k_raw), cos, sin).transpose(1, 2)
        v = self.v_norm(v).transpose(1, 2)
        q = q.transpose(1, 2)

        k, v, mask = cache.attend(self.layer_idx, k, v, causal, self.window if self.is_sliding else None)
        with sdpa_kernel(CUDA_ATTENTION) if q.is_cuda else nullcontext():
            gqa = self.n_kv != self.n_heads
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0, enable_gqa=gqa)
        out = out.transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out) if ad is None else self.o_proj(out) + ad.o(out)


class LowRank(nn.Module):
    """x -> B (A x): a rank-r update beside a frozen projection. B starts at zero, so a fresh adapter changes
    nothing until it is trained; plain parameters (no nn.Linear), so quantization leaves them as they are."""

    def __init__(self, d_in: int, d_out: int, rank: int):
        super().__init__()
        self.a = nn.Parameter(nn.init.normal_(torch.empty(rank, d_in), std=d_in**-0.5))
        self.b = nn.Parameter(nn.init.zeros_(torch.empty(d_out, rank)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.linear(x, self.a.to(x.dtype)), self.b.to(x.dtype))


class AttentionAdapters(nn.Module):
    """The decoder pass's low-rank updates of one attention layer's q/k/v/o (a full layer has no v: K=V)."""

    def __init__(self, attn: Attention, hidden: int, rank: int):
        super().__init__()
        q_out, kv_out = attn.n_heads * attn.head_dim, attn.n_kv * attn.head_dim
        self.q = LowRank(hidden, q_out, rank)
        self.k = LowRank(hidden, kv_out, rank)
        self.v = LowRank(hidden, kv_out, rank) if attn.is_sliding else None
        self.o = LowRank(q_out, hidden, rank)


class MLP(nn.Module):
    """Dense GeGLU MLP (also the shape of the self-conditioning MLP)."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(gelu_tanh(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    """Top-k router: fp32 softmax over experts, renormalised top-k weights times a per-expert scale."""

    def __init__(self, config: DiffusionGemmaConfig):
        super().__init__()
        h = config.hidden_size
        self.top_k = config.top_k_experts
        self.norm = RMSNorm(h, config.rms_norm_eps, with_scale=False)
        self.proj = nn.Linear(h, config.num_experts, bias=False)
        self.scale = nn.Parameter(torch.ones(h))
        self.per_expert_scale = nn.Parameter(torch.ones(config.num_experts))
        self.root = h**-0.5

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.norm(x) * self.scale * self.root
        probs = F.softmax(self.proj(h), dim=-1, dtype=torch.float32)
        weights, index = torch.topk(probs, k=self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights * self.per_expert_scale[index], index


class Experts(nn.Module):
    """Routed experts stored as 3-D tensors: gate_up_proj [E, 2*Ie, H] (gate rows first), down_proj [E, H, Ie]."""

    def __init__(self, config: DiffusionGemmaConfig):
        super().__init__()
        e, h, ie = config.num_experts, config.hidden_size, config.moe_intermediate_size
        self.num_experts = e
        self.gate_up_proj = nn.Parameter(nn.init.normal_(torch.empty(e, 2 * ie, h), std=0.02))
        self.down_proj = nn.Parameter(nn.init.normal_(torch.empty(e, h, ie), std=0.02))

    def forward(self, x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Tokens sorted by expert, one grouped matmul per projection, summed back in expert order."""
        slots = sort_slots(index, self.num_experts)
        xs = x[slots.token]
        # _grouped_mm has no CPU backward (torch 2.13): training takes the per-expert loop.
        if hasattr(torch, "_grouped_mm") and x.dtype in (torch.float32, torch.bfloat16) and not torch.is_grad_enabled():
            offsets = torch.cumsum(slots.counts, 0).to(torch.int32)
            hidden = geglu(torch._grouped_mm(xs, self.gate_up_proj.transpose(1, 2), offsets))
            y = torch._grouped_mm(hidden, self.down_proj.transpose(1, 2), offsets)
        else:
            ffn = lambda e, rows: F.linear(geglu(F.linear(rows, self.gate_up_proj[e])), self.down_proj[e])
            y = per_expert(xs, slots.counts.tolist(), ffn)
        return combine(x, y, weights, slots)


class Layer(nn.Module):
    """One transformer block: attention, then a dense MLP beside the routed MoE, then the layer scalar."""

    def __init__(self, config: DiffusionGemmaConfig, layer_idx: int):
        super().__init__()
        h, eps = config.hidden_size, config.rms_norm_eps
        self.self_attn = Attention(config, layer_idx)
        self.mlp = MLP(h, config.intermediate_size)
        self.router = Router(config)
        self.experts = Experts(config)
        self.input_layernorm = RMSNorm(h, eps)
        self.post_attention_layernorm = RMSNorm(h, eps)
        self.pre_feedforward_layernorm = RMSNorm(h, eps)
        self.post_feedforward_layernorm = RMSNorm(h, eps)
        self.post_feedforward_layernorm_1 = RMSNorm(h, eps)
        self.pre_feedforward_layernorm_2 = RMSNorm(h, eps)
        self.post_feedforward_layernorm_2 = RMSNorm(h, eps)
        # The decoder's scalar; the encoder has its own (DiffusionGemma.encoder_layer_scalars).
        self.register_buffer("layer_scalar", torch.ones(1))
        rank = config.decoder_adapter_rank
        # the decoder pass's low-rank update beside the dense MLP (as the attention's, none in the encoder's)
        self.decoder_mlp_adapter = LowRank(h, h, rank) if rank else None

    def forward(self, x, cos_sin, cache: KVCache, causal: bool, layer_scalar: torch.Tensor) -> torch.Tensor:
        x = x + self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos_sin, cache, causal))
        dense_in = self.pre_feedforward_layernorm(x)
        dense = self.mlp(dense_in)
        if not causal and self.decoder_mlp_adapter is not None:
            dense = dense + self.decoder_mlp_adapter(dense_in)
        dense = self.post_feedforward_layernorm_1(dense)
        flat = x.reshape(-1, x.shape[-1])
        weights, index = self.router(flat)  # the router sees the raw residual
        moe = self.experts(self.pre_feedforward_layernorm_2(flat), weights, index).reshape(x.shape)
        x = x + self.post_feedforward_layernorm(dense + self.post_feedforward_layernorm_2(moe))
        return x * layer_scalar


class SelfConditioning(MLP):
    """Adds a GeGLU MLP of the previous step's soft embeddings to the canvas embeddings, then a scale-free norm."""

    def __init__(self, config: DiffusionGemmaConfig):
        super().__init__(config.hidden_size, config.intermediate_size)
        self.pre_norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, with_scale=False)

    def forward(self, embeds: torch.Tensor, soft: torch.Tensor | None) -> torch.Tensor:
        if soft is None:  # first step: the MLP of zeros is exactly zero
            return self.post_norm(embeds)
        return self.post_norm(embeds + super().forward(self.pre_norm(soft)))


__all__ = [
    "FULL",
    "SLIDING",
    "Attention",
    "AttentionAdapters",
    "Experts",
    "Layer",
    "LowRank",
    "MLP",
    "RMSNorm",
    "Router",
    "SelfConditioning",
    "apply_rope",
    "rope_cos_sin",
    "rope_inv_freq",
]
