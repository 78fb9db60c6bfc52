"""The DiffusionGemma text stack: one set of layers used twice.

- `encode`: causal pass over prompt tokens (or a committed canvas) that appends to the KV cache.
- `decode`: bidirectional pass over a canvas that reads the cache, with self-conditioning on the previous
  step's logits; returns fp32 logits after the tied head and the tanh softcap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from diffill.kernels import _triton
from diffill.kernels import sampler as kernel_sampler

from .cache import CacheHead, KVCache, TreeRows
from .config import DiffusionGemmaConfig
from .modules import Layer, RMSNorm, SelfConditioning, rope_cos_sin, rope_inv_freq
from .static_cache import StaticKVCache

if TYPE_CHECKING:
    from .graphs import PassGraphs


class DiffusionGemma(nn.Module):
    def __init__(self, config: DiffusionGemmaConfig):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, h)
        self.layers = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(h, config.rms_norm_eps)
        self.self_conditioning = SelfConditioning(config)
        self.register_buffer("encoder_layer_scalars", torch.ones(config.num_hidden_layers))
        self.reset_rope()
        self.passes = 0  # encoder and decoder passes run so far (a completion's cost counts its own)
        # positions of each new cache when it is to be a fixed-capacity one (model/static_cache.py: what CUDA
        # graphs need); None: caches that grow
        self.cache_capacity: int | None = None
        self.graphs: PassGraphs | None = None  # passes replayed as CUDA graphs on its working cache (model/graphs.py)

    def reset_rope(self, device: torch.device | str | None = None) -> None:
        """(Re)computes the RoPE inverse frequencies, e.g. after a model was built on the meta device."""
        for kind in sorted(set(self.config.layer_types)):
            types = self.config.layer_types
            head_dim = next(self.config.layer_shape(i).head_dim for i, t in enumerate(types) if t == kind)
            with torch.device(device or "cpu"):
                inv = rope_inv_freq(head_dim, self.config.rope_parameters[kind])
            self.register_buffer(f"inv_freq_{kind}", inv, persistent=False)

    # ----- helpers -----
    @property
    def dtype(self) -> torch.dtype:
        return self.embed_tokens.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.embed_tokens.weight.device

    def new_cache(self) -> KVCache | StaticKVCache:
        if self.cache_capacity is not None:
            return StaticKVCache(self.config, self.cache_capacity, self.device, self.dtype)
        return KVCache(self.config.num_hidden_layers, room=self.config.canvas_length)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        w = self.embed_tokens.weight
        return F.embedding(ids, w) * torch.tensor(self.config.hidden_size**0.5).to(w.dtype)

    def _rope(self, positions: torch.Tensor, dtype: torch.dtype) -> dict[str, tuple]:
        return {
            kind: rope_cos_sin(getattr(self, f"inv_freq_{kind}"), positions, dtype)
            for kind in set(self.config.layer_types)
        }

    def _run(self, x, positions, cache: KVCache, causal: bool) -> torch.Tensor:
        self.passes += 1  # sequential passes, for the engines' cost counts
        rope = self._rope(positions, x.dtype)
        cache.begin(positions, causal)
        for i, layer in enumerate(self.layers):
            scalar = self.encoder_layer_scalars[i : i + 1] if causal else layer.layer_scalar
            x = layer(x, rope[self.config.layer_types[i]], cache, causal, scalar)
        return self.norm(x)

    def encode_beside(
        self, ids: torch.Tensor, canvas: torch.Tensor, cache: KVCache, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One pass of two row groups: the causal pass over `ids` [1, T] that `encode` makes (appending to
        `cache`, bit for bit), and beside it the decoder's first pass over `canvas` [1, C], whose position 0 is
        ids' last token (pinned there by the caller): it sees the cache up to that token, ids before it
        included, as a decoder pass after `encode(ids[:, :-1])` would. Layer by layer the canvas reads the keys
        the causal rows have just written and nothing the causal rows compute reads the canvas, so the two are
        one pass deep. `cache` may be a TreeRows view with its `positions`: the canvas then follows the trunk's
        last token (`trunk` ids first, the branches after). Returns both groups' normed hidden states."""
        self.passes += 1
        tree = isinstance(cache, TreeRows)
        start, t = (cache.cache.length, cache.trunk) if tree else (cache.length, ids.shape[1])
        if positions is None:
            positions = torch.arange(start, start + t, device=ids.device)[None]
        canvas_positions = torch.arange(start + t - 1, start + t - 1 + canvas.shape[1], device=ids.device)[None]
        seen = CacheHead(cache, start + t - 1)
        x, y = self.embed(ids), self.self_conditioning(self.embed(canvas), None)
        rope_x, rope_y = self._rope(positions, x.dtype), self._rope(canvas_positions, y.dtype)
        cache.begin(positions, True)
        for i, layer in enumerate(self.layers):
            kind = self.config.layer_types[i]
            x = layer(x, rope_x[kind], cache, True, self.encoder_layer_scalars[i : i + 1])
            y = layer(y, rope_y[kind], seen, False, layer.layer_scalar)
        return self.norm(x), self.norm(y)

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Tied output head, fp32 logits with the final tanh softcap."""
        cap = self.config.final_logit_softcapping
        logits = F.linear(hidden, self.embed_tokens.weight).float()
        return torch.tanh(logits / cap) * cap

    # ----- the two passes -----
    def encode(self, ids: torch.Tensor, cache: KVCache, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Causal pass over `ids` [B, T] that appends their keys/values to `cache`; returns the normed hidden."""
        if self.graphs is not None and self.graphs.serves(cache, ids, causal=True):
            try:
                return self.graphs.encode(ids, positions)
            except RuntimeError as exc:  # a pass that cannot be captured: eager from now on
                self.graphs.disable(exc)
        if positions is None:
            start = cache.length
            positions = torch.arange(start, start + ids.shape[1], device=ids.device)[None]
        return self._run(self.embed(ids), positions, cache, causal=True)

    def self_conditioning_input(self, prev_logits: torch.Tensor) -> torch.Tensor:
        """Soft embeddings of the previous step's (tempered) logits: softmax(logits) @ E * sqrt(H)."""
        w = self.embed_tokens.weight
        if _triton.use_triton(prev_logits, w):  # CUDA: one Triton pass writes the probabilities in w's dtype
            soft = kernel_sampler.soft_embedding(prev_logits, 1.0, w, self.config.hidden_size**0.5)
            return soft.view(*prev_logits.shape[:-1], -1)
        probs = prev_logits.softmax(dim=-1, dtype=torch.float32).to(w.dtype)
        return (probs @ w) * torch.tensor(self.config.hidden_size**0.5).to(w.dtype)

    def decode_hidden(
        self,
        canvas: torch.Tensor,
        cache: KVCache,
        prev_logits: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        soft = None if prev_logits is None else self.self_conditioning_input(prev_logits)
        if self.graphs is not None and self.graphs.serves(cache, canvas, causal=False):
            try:
                return self.graphs.decode_hidden(canvas, soft, positions)
            except RuntimeError as exc:
                self.graphs.disable(exc)
        if positions is None:
            start = cache.length
            positions = torch.arange(start, start + canvas.shape[1], device=canvas.device)[None]
        return self.eager_decode_hidden(canvas, soft, positions, cache)

    def eager_decode_hidden(
        self, canvas: torch.Tensor, soft: torch.Tensor | None, positions: torch.Tensor, cache: KVCache
    ) -> torch.Tensor:
        """The decoder pass itself, never through the graphs (what they capture), from the self-conditioning
        input `soft` (None: none)."""
        return self._run(self.self_conditioning(self.embed(canvas), soft), positions, cache, causal=False)

    def decode(
        self,
        canvas: torch.Tensor,
        cache: KVCache,
        prev_logits: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Bidirectional pass over `canvas` [B, C] reading `cache`; returns fp32 logits [B, C, V]."""
        return self.head(self.decode_hidden(canvas, cache, prev_logits, positions))
