"""What the decoder trains against, computed once per label: the encoder's keys/values of each prompt and answer
(batched passes, kept in bf16 beside the network or in the CPU's memory) with its beliefs at each answer token,
and the cache that lays several of them side by side for one batched decoder pass."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.tokenizer import PAD

from .labels import Anchor

ENCODE_TOKENS = 16_384  # the most (padded) tokens one batched encoder pass over the anchors holds


class RowsCache:
    """Prompt caches of different lengths side by side for one batched decoder pass: right-padded keys/values,
    each row seeing its own positions (a sliding layer its last window-1, as KVCache keeps) and the first
    `widths[r]` canvas positions, on `device` (the rows may be kept elsewhere). Read-only, as the decoder's pass
    reads a cache."""

    def __init__(
        self,
        rows: list[list[tuple[torch.Tensor, torch.Tensor]]],
        lengths: list[int],
        widths: list[int],
        device: torch.device | str = "cpu",
    ):
        self.lengths = torch.tensor(lengths, device=device)
        self.widths = torch.tensor(widths, device=device)
        longest = max(lengths)
        self.keys, self.values = [], []
        for layer in range(len(rows[0])):
            ks, vs = [], []
            for row, n in zip(rows, lengths, strict=True):
                k, v = row[layer]
                pad = longest - n
                ks.append(F.pad(k[:, :, :n], (0, 0, 0, pad)))
                vs.append(F.pad(v[:, :, :n], (0, 0, 0, pad)))
            self.keys.append(torch.cat(ks).to(device).float())  # moved as kept (bf16), then widened
            self.values.append(torch.cat(vs).to(device).float())

    @property
    def length(self) -> int:
        return self.keys[0].shape[2]

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        if causal:
            raise ValueError("a RowsCache is read by decoder passes only")

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        at = torch.arange(self.length, device=k.device)
        seen = at[None] < self.lengths[:, None]
        if window is not None:
            seen &= at[None] >= self.lengths[:, None] - (window - 1)
        canvas = torch.arange(k.shape[2], device=k.device)[None] < self.widths[:, None]
        mask = torch.cat([seen, canvas], dim=1)[:, None, None, :]
        return torch.cat([self.keys[layer], k], dim=2), torch.cat([self.values[layer], v], dim=2), mask


SOFT_TOP = 8  # the encoder's choices kept for each answer token's distillation term (its top ids)

KV = list[tuple[torch.Tensor, torch.Tensor]]
Soft = tuple[torch.Tensor, torch.Tensor]  # per answer token: the encoder's top ids [L, K] and log-probs [L, K]


def encoded(net: DiffusionGemma, anchor: Anchor) -> tuple[KV, Soft]:
    """The encoder's keys/values of the prompt and the answer but its last token (every canvas layout's cache is
    a prefix of it), kept in bf16, and from the same pass its beliefs at each answer token (the distillation
    term's targets: what the greedy label was the argmax of)."""
    return encode_all(net, [anchor])[0]


def encode_all(net: DiffusionGemma, anchors: list[Anchor], home: torch.device | str = "cpu") -> list[tuple[KV, Soft]]:
    """`encoded` of each anchor, in batched passes of anchors of about the same length (right-padded: a causal
    pass's positions never see the pads after them), the keys/values kept on `home`, the beliefs on the CPU."""
    out: list = [None] * len(anchors)
    order = sorted(range(len(anchors)), key=lambda i: len(anchors[i].prompt) + len(anchors[i].label))
    s = 0
    with torch.no_grad():
        while s < len(order):
            longest = len(anchors[order[s]].prompt) + len(anchors[order[s]].label) - 1
            group = [order[s]]
            for i in order[s + 1 :]:
                n = len(anchors[i].prompt) + len(anchors[i].label) - 1
                if n * (len(group) + 1) > ENCODE_TOKENS:
                    break
                group.append(i)
                longest = n
            s += len(group)
            rows = [anchors[i].prompt + anchors[i].label[:-1] for i in group]
            ids = torch.tensor([r + [PAD] * (longest - len(r)) for r in rows], device=net.device)
            cache = net.new_cache()
            hidden = net.encode(ids, cache)
            for r, i in enumerate(group):
                a, n = anchors[i], len(rows[r])
                logp = torch.log_softmax(net.head(hidden[r, len(a.prompt) - 1 : n]).float(), dim=-1)
                top = logp.topk(SOFT_TOP, dim=-1)
                kv = [(k[r : r + 1, :, :n].to(home, torch.bfloat16, copy=True),
                       v[r : r + 1, :, :n].to(home, torch.bfloat16, copy=True))
                      for k, v in zip(cache.keys, cache.values, strict=True)]  # fmt: skip
                out[i] = (kv, (top.indices.cpu(), top.values.cpu()))
    return out


def kv_home(net: DiffusionGemma, anchors: list[Anchor]) -> torch.device:
    """Where the anchors' keys/values are kept: beside the network, unless it is a GPU's and they would take more
    than half its free memory (then in the CPU's, each batch's rows moved over)."""
    if net.device.type != "cuda":
        return net.device
    kv, _ = encoded(net, anchors[0])
    per_token = sum(k.nbytes + v.nbytes for k, v in kv) / kv[0][0].shape[2]
    need = per_token * sum(len(a.prompt) + len(a.label) for a in anchors)
    free, _ = torch.cuda.mem_get_info(net.device)
    return net.device if need < free / 2 else torch.device("cpu")
