"""DiffusionGemma text-stack configuration, read from and written to Hugging Face `config.json` files.

Only the fields the text stack needs are kept; the vision tower is not part of diffill (text only).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SLIDING = "sliding_attention"
ADAPTER_KEY = "diffill_decoder_adapter_rank"
FULL = "full_attention"

DEFAULT_ROPE = {
    SLIDING: {"rope_type": "default", "rope_theta": 10_000.0},
    FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
}


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded; the message says what is wrong and where."""


@dataclass
class LayerShape:
    """Per-layer attention shape: sliding and full layers differ in head_dim and KV heads."""

    head_dim: int
    num_kv_heads: int


@dataclass
class DiffusionGemmaConfig:
    vocab_size: int = 262_144
    hidden_size: int = 2816
    intermediate_size: int = 2112
    num_hidden_layers: int = 30
    num_attention_heads: int = 16
    num_key_value_heads: int = 8
    head_dim: int = 256
    global_head_dim: int = 512
    num_global_key_value_heads: int = 2
    num_experts: int = 128
    top_k_experts: int = 8
    moe_intermediate_size: int = 704
    sliding_window: int = 1024
    max_position_embeddings: int = 262_144
    rms_norm_eps: float = 1e-6
    final_logit_softcapping: float = 30.0
    layer_types: list[str] = field(default_factory=list)
    rope_parameters: dict[str, dict[str, Any]] = field(default_factory=lambda: json.loads(json.dumps(DEFAULT_ROPE)))
    use_bidirectional_attention: str | None = None
    pad_token_id: int = 0
    eos_token_id: int | list[int] = 1
    bos_token_id: int = 2
    canvas_length: int = 256
    # Layer indices whose attention shape was given explicitly in `per_layer_config` (kept for round-trips).
    per_layer_overrides: dict[int, dict[str, int]] = field(default_factory=dict)
    # Rank of the low-rank adapters that act in the decoder's pass only (model/adapters.py; 0: none). A diffill
    # key beside the architecture's (`diffill_decoder_adapter_rank` in text_config): transformers ignores it.
    decoder_adapter_rank: int = 0

    def __post_init__(self) -> None:
        if not self.layer_types:
            types = [SLIDING if (i + 1) % 6 else FULL for i in range(self.num_hidden_layers)]
            types[-1] = FULL
            self.layer_types = types
        if len(self.layer_types) != self.num_hidden_layers:
            raise ValueError(f"layer_types has {len(self.layer_types)} entries for {self.num_hidden_layers} layers")
        for t in self.layer_types:
            if t not in (SLIDING, FULL):
                raise ValueError(f"unknown layer type {t!r}")
        if self.use_bidirectional_attention == "all":
            raise ValueError("use_bidirectional_attention='all' is not supported (diffill needs a causal encoder)")

    # ----- derived -----
    def layer_shape(self, i: int) -> LayerShape:
        """Attention shape of layer i: per_layer_config overrides, else the defaults for its layer type."""
        if self.layer_types[i] == FULL:
            shape = LayerShape(self.global_head_dim, self.num_global_key_value_heads)
        else:
            shape = LayerShape(self.head_dim, self.num_key_value_heads)
        over = self.per_layer_overrides.get(i, {})
        return LayerShape(over.get("head_dim", shape.head_dim), over.get("num_key_value_heads", shape.num_kv_heads))

    @property
    def eos_ids(self) -> list[int]:
        return list(self.eos_token_id) if isinstance(self.eos_token_id, list) else [self.eos_token_id]

    # ----- Hugging Face config.json -----
    @classmethod
    def from_hf_dict(cls, raw: dict[str, Any]) -> DiffusionGemmaConfig:
        """Reads a `diffusion_gemma` config (with `text_config`) or a bare `diffusion_gemma_text` one."""
        text = raw.get("text_config", raw)
        model_type = raw.get("model_type")
        if model_type not in (None, "diffusion_gemma", "diffusion_gemma_text"):
            raise ValueError(f"not a DiffusionGemma config: model_type={model_type!r}")
        n_layers = text["num_hidden_layers"]
        layer_types = text.get("layer_types") or []
        head_dim = text.get("head_dim", 256)
        kv = text.get("num_key_value_heads", 4)
        per_layer = {int(k): dict(v) for k, v in (text.get("per_layer_config") or {}).items() if k.isdigit()}
        # HF folds global_head_dim / num_global_key_value_heads into per_layer_config; recover the defaults.
        full_layers = [i for i, t in enumerate(layer_types) if t == FULL]
        g_head = text.get("global_head_dim")
        g_kv = text.get("num_global_key_value_heads")
        if full_layers and full_layers[0] in per_layer:
            g_head = g_head or per_layer[full_layers[0]].get("head_dim")
            g_kv = g_kv or per_layer[full_layers[0]].get("num_key_value_heads")
        rope = json.loads(json.dumps(DEFAULT_ROPE))
        for k, v in (text.get("rope_parameters") or {}).items():
            if isinstance(v, dict):
                rope[k] = dict(v)
        return cls(
            vocab_size=text["vocab_size"],
            hidden_size=text["hidden_size"],
            intermediate_size=text["intermediate_size"],
            num_hidden_layers=n_layers,
            num_attention_heads=text["num_attention_heads"],
            num_key_value_heads=kv,
            head_dim=head_dim,
            # Serialized HF configs carry the full-layer shape in per_layer_config only; absent means "as sliding".
            global_head_dim=g_head or head_dim,
            num_global_key_value_heads=g_kv or kv,
            num_experts=text["num_experts"],
            top_k_experts=text["top_k_experts"],
            moe_intermediate_size=text["moe_intermediate_size"],
            sliding_window=text.get("sliding_window", 512),
            max_position_embeddings=text.get("max_position_embeddings", 131_072),
            rms_norm_eps=text.get("rms_norm_eps", 1e-6),
            final_logit_softcapping=text.get("final_logit_softcapping") or 30.0,
            layer_types=list(layer_types),
            rope_parameters=rope,
            use_bidirectional_attention=text.get("use_bidirectional_attention"),
            pad_token_id=text.get("pad_token_id", 0) if text.get("pad_token_id") is not None else 0,
            eos_token_id=raw.get("eos_token_id", text.get("eos_token_id", 1)),
            bos_token_id=text.get("bos_token_id", 2),
            canvas_length=raw.get("canvas_length", 256),
            per_layer_overrides=per_layer,
            decoder_adapter_rank=int(text.get(ADAPTER_KEY) or 0),
        )

    def to_hf_dict(self) -> dict[str, Any]:
        """A `config.json` that transformers' DiffusionGemmaConfig and our loader both read."""
        per_layer = {str(i): dict(v) for i, v in self.per_layer_overrides.items()}
        for i, t in enumerate(self.layer_types):
            if t == FULL:
                per_layer.setdefault(
                    str(i), {"head_dim": self.global_head_dim, "num_key_value_heads": self.num_global_key_value_heads}
                )
        text = {
            "model_type": "diffusion_gemma_text",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "per_layer_config": per_layer,
            "num_experts": self.num_experts,
            "top_k_experts": self.top_k_experts,
            "moe_intermediate_size": self.moe_intermediate_size,
            "sliding_window": self.sliding_window,
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "layer_types": list(self.layer_types),
            "rope_parameters": self.rope_parameters,
            "use_bidirectional_attention": self.use_bidirectional_attention,
            "hidden_activation": "gelu_pytorch_tanh",
            "attention_bias": False,
            "tie_word_embeddings": True,
            "pad_token_id": self.pad_token_id,
            "eos_token_id": self.eos_token_id,
            "bos_token_id": self.bos_token_id,
        }
        if self.decoder_adapter_rank:
            text[ADAPTER_KEY] = self.decoder_adapter_rank
        return {
            "architectures": ["DiffusionGemmaForBlockDiffusion"],
            "model_type": "diffusion_gemma",
            "canvas_length": self.canvas_length,
            "tie_word_embeddings": True,
            "text_config": text,
        }

    @classmethod
    def from_file(cls, path: str | Path) -> DiffusionGemmaConfig:
        with open(path, encoding="utf-8") as fh:
            return cls.from_hf_dict(json.load(fh))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_hf_dict(), indent=2) + "\n", encoding="utf-8")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
