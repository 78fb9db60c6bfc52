"""A checkpoint folder laid out like google/diffusiongemma-26B-A4B-it, tiny: transformers' save_pretrained (config.json
with `diffusion_gemma` and a vision config, generation_config.json, safetensors shards with the real key names and
their index), a Gemma-4-style tokenizer.json (the real special ids, byte fallback, a small vocabulary trained on some
code) and a tokenizer_config.json carrying a chat template written like Gemma 4's (a user turn trimmed, the empty
thought channel after `<|turn>model` when thinking is off)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

# Gemma 4's special ids (../shared/reference/diffusiongemma.md, section 4); the others below 107 are unused slots.
SPECIALS = {
    0: "<pad>",
    1: "<eos>",
    2: "<bos>",
    3: "<unk>",
    4: "<mask>",
    50: "<|tool_response>",
    98: "<|think|>",
    100: "<|channel>",
    101: "<channel|>",
    105: "<|turn>",
    106: "<turn|>",
}
TURN_END = 106
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- if messages[0]['role'] in ['system', 'developer'] -%}"
    "{{- '<|turn>system\\n' -}}{{- messages[0]['content'] | trim -}}{{- '<turn|>\\n' -}}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}"
    "{%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\\n<channel|>' -}}{%- endif -%}"
    "{%- endif -%}"
)
CODE = '''import os
import json


def load(path):
    """Read the settings."""
    with open(path) as fh:
        return json.load(fh)


def save(path, data):
    with open(path, "w") as fh:
        json.dump(data, fh, indent=2)


class Store:
    def __init__(self, root):
        self.root = root

    def path(self, name):
        return os.path.join(self.root, name)
'''


def gemma_tokenizer_json(vocab_size: int = 512) -> str:
    """A BPE tokenizer like Gemma's: spaces as `▁`, byte fallback for what the vocabulary lacks, the special tokens
    at Gemma 4's ids (decode(encode(text)) == text)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    names = [SPECIALS.get(i, f"<unused{i}>") for i in range(107)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=names, show_progress=False)
    tok.train_from_iterator([CODE] * 4, trainer=trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    n = len(vocab)
    vocab.update({f"<0x{b:02X}>": n + b for b in range(256)})
    spec["model"]["byte_fallback"] = True
    spec["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ],
    }
    return json.dumps(spec)


def build_gemma_style_checkpoint(out: Path, seed: int = 0, shards: bool = True, **shape) -> Path:
    """The folder (see the module docstring); returns it. `shape`: config fields other than the tiny defaults (a
    server's attention may need wider heads)."""
    from transformers import DiffusionGemmaForBlockDiffusion

    from diffill.bench.model import hf_config
    from hf_oracle import reference_generation_config

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = gemma_tokenizer_json()
    (out / "tokenizer.json").write_text(tokenizer)
    vocab = json.loads(tokenizer)["model"]["vocab"]
    tiny = dict(
        vocab_size=len(vocab), hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, global_head_dim=32, num_global_key_value_heads=1, num_experts=4,
        top_k_experts=2, moe_intermediate_size=32, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"], max_position_embeddings=4096,
    )  # fmt: skip
    config = hf_config(32, **{**tiny, **shape})
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_tokens" in name:
                p.normal_(0, 0.5)
    model.generation_config = reference_generation_config(32, eos=[1, TURN_END])
    model.save_pretrained(out, max_shard_size="200KB" if shards else "10GB")
    tokenizer_config = {
        "tokenizer_class": "GemmaTokenizer",
        "bos_token": "<bos>",
        "eos_token": "<eos>",
        "pad_token": "<pad>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
        "add_bos_token": False,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return out
