"""A cache language model over the code around the cursor, mixed into the model's next-token probabilities.

A small model spells a long identifier it saw fifty lines above as badly as one it never saw; an n-gram model over
the document and the files beside it spells it right, because code repeats itself. The two are interpolated
(the cache n-gram models of Hellendoorn & Devanbu 2017, the interpolation of kNN-LM): where the last tokens also
occur in the code around, p = (1 - w) p_model + w p_cache, p_cache being how those occurrences continue and w
growing with the length of the context matched. The model still rules: a continuation the code around never
shows keeps (1 - w) of its probability, and where nothing matches the model is left alone.

The lookups alone (`TokenIndex`, `NgramMixer.belief` and `draft`) need no torch: they answer while the model and
torch still load (infill.sources.lookup), so torch is imported only by the functions that mix into logits.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .corpus_memory import KEY_ORDER, CorpusMemory, extend_match

if TYPE_CHECKING:
    import torch

MIN_ORDER = 2  # context tokens that must match (one token alone, `(` or `.`, says little)
MAX_ORDER = 12  # longest context compared: past this the evidence is as strong as it gets
MAX_MEMORY_WEIGHT = 0.9  # the corpus memory never speaks for all of the model


class TokenIndex:
    """The token streams of some texts with their bigrams sorted once: where a context occurs, and what follows."""

    def __init__(self, streams: Sequence[Sequence[int]], vocab_size: int):
        self.vocab = vocab_size
        parts, self.spans, at = [], [], 0
        for s in streams:
            parts += [np.asarray(s, dtype=np.int64), np.array([-1], dtype=np.int64)]  # -1: no match across texts
            self.spans.append((at, at + len(s)))
            at += len(s) + 1
        self.ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        keys = self.ids[:-1] * vocab_size + self.ids[1:]  # the bigram that ends at position i + 1
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.hidden: tuple[int, int] | None = None

    def excluding(self, stream: int) -> TokenIndex:
        """The same index with one of its streams left out of every match (the arrays are shared): a folder's
        index serves each of its files without the file being edited, whose saved copy may hold the answer."""
        view = copy.copy(self)
        view.hidden = self.spans[stream]
        return view

    def __len__(self) -> int:
        return len(self.ids)

    def continuations(self, context: Sequence[int], max_order: int = MAX_ORDER) -> tuple[int, np.ndarray]:
        """(n, ids): the longest n (MIN_ORDER..max_order) such that the last n tokens of `context` occur here with
        a token after them, and the tokens that follow those occurrences; (0, empty) when none does."""
        if len(context) < MIN_ORDER or len(self.ids) < 3:
            return 0, np.zeros(0, dtype=np.int64)
        key = context[-2] * self.vocab + context[-1]
        lo, hi = np.searchsorted(self.keys, [key, key + 1])
        last = self.order[lo:hi] + 1  # positions of the context's last token
        last = last[last + 1 < len(self.ids)]
        last = last[self.ids[last + 1] >= 0]
        if self.hidden is not None:
            last = last[(last < self.hidden[0]) | (last >= self.hidden[1])]
        if not last.size:
            return 0, np.zeros(0, dtype=np.int64)
        last, n = extend_match(self.ids, last, context, MIN_ORDER, max_order)
        return n, self.ids[last + 1]


class Belief(NamedTuple):
    """What follows a context: the next `ids` with their `probs`, the `weight` it is mixed in with, and how many
    tokens of context matched (`order`)."""

    ids: np.ndarray
    probs: np.ndarray
    weight: float
    order: int


class NgramMixer:
    """Mixes the cache's next-token distribution into the model's: `mix(tokens, logp)` for the tokens an answer
    has so far (after the prompt, whose last tokens `tail` holds) and the model's log-probabilities of the next.
    With a corpus `memory` (model.corpus_memory), its distribution is mixed in first, with its own weights: the code
    around, when it matches, has the last word."""

    def __init__(
        self,
        indexes: Sequence[TokenIndex],
        tail: Sequence[int],
        weight: float = 0.5,
        per_order: float = 0.05,
        memory: CorpusMemory | None = None,
        memory_weight: float = 0.2,
        memory_per_order: float = 0.05,
    ):
        self.indexes = [i for i in indexes if len(i)]
        self.tail = list(tail)[-MAX_ORDER:]
        self.weight = weight  # w at MIN_ORDER tokens matched
        self.per_order = per_order  # ... plus this for each further token matched (at most 0.95)
        self.memory = memory if memory is not None and len(memory) else None
        self.memory_weight = memory_weight  # w of the memory at KEY_ORDER tokens matched
        self.memory_per_order = memory_per_order  # ... plus this per further token (at most MAX_MEMORY_WEIGHT)
        self._memo: dict[tuple[int, ...], Belief | None] = {}

    def after(self, head: Sequence[int]) -> NgramMixer:
        """The same mixer for a prompt that `head` extends (its memo shared: contexts are absolute)."""
        other = copy.copy(self)
        other.tail = (self.tail + list(head))[-MAX_ORDER:]
        return other

    def _recalled(self, tokens: Sequence[int]) -> Belief | None:
        """The memory's belief after the tail and `tokens`, or None (no memory, no match)."""
        if self.memory is None:
            return None
        n, ids, probs = self.memory.continuations((self.tail + list(tokens))[-MAX_ORDER:])
        if not n:
            return None
        w = min(MAX_MEMORY_WEIGHT, self.memory_weight + self.memory_per_order * (n - KEY_ORDER))
        return Belief(ids, probs, w, n)

    def _cache(self, tokens: Sequence[int]) -> Belief | None:
        """The cache's belief after the tail and `tokens`, or None when no context matches."""
        context = tuple((self.tail + list(tokens))[-MAX_ORDER:])
        if context in self._memo:
            return self._memo[context]
        found = [index.continuations(context) for index in self.indexes]
        n = max((order for order, _ in found), default=0)
        out = None
        if n:
            follow = np.concatenate([ids for order, ids in found if order == n])
            ids, counts = np.unique(follow, return_counts=True)
            w = min(0.95, self.weight + self.per_order * (n - MIN_ORDER))
            out = Belief(ids, counts / counts.sum(), w, n)
        self._memo[context] = out
        return out

    def draft(self, tokens: Sequence[int], room: int, stop_ids: Collection[int] = ()) -> list[int]:
        """What the code around says comes next after the tail and `tokens`, token by token, while it matches
        (at most `room` tokens, up to a stop id included; the corpus memory speaks where the code around does
        not): a draft for the encoder to verify that costs no model pass (model.speculative; the lookup drafts
        of prompt lookup decoding)."""
        context, drafted = list(tokens), []
        while len(drafted) < room and not (drafted and drafted[-1] in stop_ids):
            found = self.belief(context)
            if found is None:
                break
            drafted.append(int(found.ids[int(np.argmax(found.probs))]))
            context.append(drafted[-1])
        return drafted

    def belief(self, tokens: Sequence[int]) -> Belief | None:
        """What follows the tail and `tokens`: the code around's belief where it matches, else the corpus
        memory's, else None."""
        return self._cache(tokens) or self._recalled(tokens)

    def mix(self, tokens: Sequence[int], logp: torch.Tensor) -> torch.Tensor:
        """log((1 - w) p + w p_cache) over the vocabulary, p being the model's distribution with the memory's
        mixed in the same way (`logp` itself when neither has anything)."""
        for found in (self._recalled(tokens), self._cache(tokens)):
            if found is not None:
                logp = _interpolate(logp, found.ids, found.probs, found.weight)
        return logp

    def mix_at(self, tokens: Sequence[int], logp: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """`mix(tokens, logp)[ids]`, computed at `ids` alone: scoring a given continuation needs a few
        probabilities, not the whole vocabulary's."""
        picked = logp.index_select(0, ids)
        for found in (self._recalled(tokens), self._cache(tokens)):
            if found is not None:
                picked = _interpolate_at(picked, ids, found.ids, found.probs, found.weight)
        return picked


def _interpolate(logp: torch.Tensor, ids: np.ndarray, probs: np.ndarray, w: float) -> torch.Tensor:
    """log((1 - w) exp(logp) + w q), q being `probs` on `ids` and 0 elsewhere."""
    import torch

    p = logp.exp() * (1.0 - w)
    p.index_add_(0, torch.as_tensor(ids, device=p.device), torch.as_tensor(probs * w, dtype=p.dtype))
    return p.clamp_min(1e-30).log()


def _interpolate_at(
    picked: torch.Tensor, at: torch.Tensor, ids: np.ndarray, probs: np.ndarray, w: float
) -> torch.Tensor:
    """`_interpolate` at the ids `at` alone, `picked` being the log-probabilities there."""
    import torch

    q = dict(zip(ids.tolist(), (probs * w).tolist(), strict=True))
    p = picked.exp() * (1.0 - w)
    p = p + torch.tensor([q.get(i, 0.0) for i in at.tolist()], dtype=p.dtype, device=p.device)
    return p.clamp_min(1e-30).log()


def mixed_rows(mix: NgramMixer, logits: torch.Tensor, pinned: torch.Tensor | None = None) -> torch.Tensor:
    """A canvas's logits [C, V] read left to right with the code around's evidence mixed into each position's,
    the context being the canvas read so far (each position's argmax once mixed): log-probabilities [C, V]. The
    decoder writes its positions in parallel, each blind to what the others chose, so a name it half spells is
    spelled on as the code around spells it. `pinned` [C] bool: rows left unmixed (held positions); an id the
    logits rule out (at the dtype's minimum: token healing's first token) stays out."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    floor = torch.finfo(logits.dtype).min
    out: list[int] = []
    rows: list[torch.Tensor] = []
    for k in range(logp.shape[0]):
        row = logp[k]
        if pinned is None or not bool(pinned[k]):
            row = mix.mix(out, row).masked_fill(logits[k] <= floor, floor)
        out.append(int(torch.argmax(row)))
        rows.append(row)
    return torch.stack(rows)
