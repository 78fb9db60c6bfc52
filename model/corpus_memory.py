"""A token memory of the training corpus, mixed into the model's next-token probabilities like the cache of
model.ngram, with its own weight: where the last four or more tokens also occur in the memory, how they continue
there is evidence the small model saw once in training and could not keep (an infini-gram / kNN-LM datastore).

The memory ships beside the weights as one safetensors tensor (`memory.safetensors`: uint16 token ids, texts
separated by SEPARATOR). Loading sorts the positions of every 3-gram once (0.3 s for 12M tokens, once per
process); a lookup finds the occurrences of the context's last three tokens through a coarse sampled index and
extends the match backwards as model.ngram does, up to MAX_ORDER tokens; fewer than KEY_ORDER is no match.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

KEY_ORDER = 4  # tokens of context that must match: the model knows the shorter contexts well enough
SORT_ORDER = 3  # positions are sorted by the 3-gram they start (36 bits of key + 28 of position: one uint64)
MAX_ORDER = 12  # as model.ngram: past this the evidence is as strong as it gets
SEPARATOR = 0xFFFF  # between texts
ID_BITS = 12  # token ids fit in 12 bits (a vocabulary of at most 4,096: the embedded model's)
POSITION_BITS = 28  # at most 268M tokens
CHUNK = 1 << 20  # positions handled at once while sorting
COARSE = 64  # one sorted key kept in this many: the coarse index stays small beside the ids
MEMO = 2048  # contexts whose continuations are kept: typing asks for the same ones again (docs/benchmarks.md, "Tuned constants")
FILE_NAME = "memory.safetensors"


class CorpusMemory:
    """Token ids of many texts with the positions of their 3-grams sorted: `continuations(context)`."""

    def __init__(self, ids: np.ndarray, vocab_size: int):
        if vocab_size > 1 << ID_BITS:
            raise ValueError(f"a memory needs a vocabulary of at most {1 << ID_BITS} ids (this one has {vocab_size})")
        if len(ids) >= 1 << POSITION_BITS:
            raise ValueError(f"a memory holds at most {1 << POSITION_BITS} tokens (this one {len(ids)})")
        self.ids = np.ascontiguousarray(ids, dtype=np.uint16)
        self.vocab = vocab_size
        self.starts, self.coarse = self._sorted_starts()
        self._memo: OrderedDict[tuple[int, ...], tuple[int, np.ndarray, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def _sorted_starts(self) -> tuple[np.ndarray, np.ndarray]:
        """3-gram start positions sorted by 3-gram (int32), and every COARSE-th sorted key. Key and position are
        packed in one uint64 sorted in place: 8 bytes a token at the peak, 0.3 s for 12M tokens."""
        n = max(0, len(self.ids) - SORT_ORDER + 1)
        packed = np.zeros(n, dtype=np.uint64)
        broken = np.zeros(n, dtype=bool)  # a 3-gram across a separator (or an id past the vocabulary)
        for j in range(SORT_ORDER):
            part = self.ids[j : j + n]
            broken |= part >= self.vocab
            np.left_shift(packed, np.uint64(ID_BITS), out=packed)
            np.bitwise_or(packed, part, out=packed, casting="unsafe")
        np.left_shift(packed, np.uint64(POSITION_BITS), out=packed)
        for a in range(0, n, CHUNK):  # (chunks: no 8-byte temporaries of the whole length)
            packed[a : a + CHUNK] |= np.arange(a, min(n, a + CHUNK), dtype=np.uint64)
        packed[broken] = np.iinfo(np.uint64).max  # sorted to the end and dropped
        kept = n - int(broken.sum())
        del broken
        packed.sort()
        starts = np.empty(kept, dtype=np.int32)
        mask = np.uint64((1 << POSITION_BITS) - 1)
        for a in range(0, kept, CHUNK):
            starts[a : a + CHUNK] = packed[a : min(kept, a + CHUNK)] & mask
        coarse = (packed[:kept:COARSE] >> np.uint64(POSITION_BITS)).astype(np.int64)
        return starts, coarse

    def __len__(self) -> int:
        return len(self.ids)

    def _keys(self, starts: np.ndarray) -> np.ndarray:
        """The 3-gram starting at each position, as one integer."""
        key = np.zeros(len(starts), dtype=np.int64)
        for j in range(SORT_ORDER):
            key = (key << ID_BITS) | self.ids[starts + j]
        return key

    def _occurrences(self, gram: tuple[int, ...]) -> np.ndarray:
        """Start positions of `gram` (SORT_ORDER ids)."""
        key = 0
        for t in gram:
            key = (key << ID_BITS) | t
        lo_block = max(0, int(np.searchsorted(self.coarse, key, "left")) - 1)
        hi_block = int(np.searchsorted(self.coarse, key, "right"))
        lo, hi = lo_block * COARSE, min(len(self.starts), hi_block * COARSE)
        keys = self._keys(self.starts[lo:hi].astype(np.int64))
        a, b = np.searchsorted(keys, [key, key + 1])
        return self.starts[lo + a : lo + b].astype(np.int64)

    def continuations(self, context: Iterable[int]) -> tuple[int, np.ndarray, np.ndarray]:
        """(n, ids, probabilities): the longest n (KEY_ORDER..MAX_ORDER) such that the last n tokens of `context`
        occur in the memory with a token after them, and how often each token follows those occurrences;
        n = 0 when none do."""
        context = tuple(int(t) for t in context)[-MAX_ORDER:]
        with self._lock:
            if context in self._memo:
                self._memo.move_to_end(context)
                return self._memo[context]
        found = self._lookup(context)
        with self._lock:
            self._memo[context] = found
            while len(self._memo) > MEMO:
                self._memo.popitem(last=False)
        return found

    def _lookup(self, context: tuple[int, ...]) -> tuple[int, np.ndarray, np.ndarray]:
        none = (0, np.zeros(0, dtype=np.int64), np.zeros(0))
        if len(context) < KEY_ORDER or not all(0 <= t < self.vocab for t in context[-KEY_ORDER:]):
            return none
        last = self._occurrences(context[-SORT_ORDER:]) + SORT_ORDER - 1  # positions of the context's last token
        last = last[last + 1 < len(self.ids)]
        last = last[self.ids[last + 1] != SEPARATOR]
        last, n = extend_match(self.ids, last, context, SORT_ORDER, MAX_ORDER)
        if n < KEY_ORDER or not last.size:
            return none
        ids, counts = np.unique(self.ids[last + 1].astype(np.int64), return_counts=True)
        return n, ids, counts / counts.sum()


def extend_match(
    ids: np.ndarray, last: np.ndarray, context: Sequence[int], n: int, max_order: int
) -> tuple[np.ndarray, int]:
    """Positions in `ids` where the last n tokens of `context` end (`last`), narrowed to those where the most
    tokens of it match (at most max_order), and that many."""
    while n < min(max_order, len(context)) and last.size:
        back = last - n
        keep = back >= 0
        keep[keep] = ids[back[keep]] == context[-1 - n]
        if not keep.any():
            break
        last, n = last[keep], n + 1
    return last, n


_LOADED: dict[tuple[str, float], CorpusMemory] = {}
_LOAD_LOCK = threading.Lock()


def built_memory(path: str | Path) -> CorpusMemory | None:
    """The memory in `path` once `load_memory` has built it, else None at once: a build under way is not waited
    for (the answers given while the model loads go on without it)."""
    try:
        path = Path(path)
        return _LOADED.get((str(path.resolve()), path.stat().st_mtime))
    except OSError:
        return None


def load_memory(path: str | Path, vocab_size: int) -> CorpusMemory:
    """The memory in `path` (safetensors, tensor "ids"), built once per process and file version."""
    path = Path(path)
    stamp = (str(path.resolve()), path.stat().st_mtime)
    with _LOAD_LOCK:
        if stamp not in _LOADED:
            ids = load_file(str(path))["ids"]
            if ids.dtype != np.uint16 or ids.ndim != 1:
                raise ValueError(f"{path}: a memory is one uint16 tensor 'ids' (found {ids.dtype} {ids.shape})")
            _LOADED[stamp] = CorpusMemory(ids, vocab_size)
        return _LOADED[stamp]
