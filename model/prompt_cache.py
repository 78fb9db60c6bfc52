"""Encoder KV caches kept per document, so that each keystroke only encodes the tokens it added.

The prompt is suffix-then-prefix, so typing at the cursor appends to it: the longest common prefix of the new
prompt with the cached one is kept and only the rest is encoded. Anything else (an edit above the cursor, a
changed suffix) shortens the common prefix, and the cache is cut back to it: reuse is exact because the encoder
is causal.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager

from .cache import KVCache
from .static_cache import StaticKVCache


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


WORKING_ROOM = 512  # positions a generation may add after its prompt on the working cache


class PromptCache:
    """Caches by key (a document). With a `working` cache (model/graphs.py: the one its CUDA graphs were captured
    on), every prompt that fits it runs there: the key whose keys/values it holds is its owner, the others keep
    theirs as snapshots, copied out and in when the key changes (a document switch, not a keystroke)."""

    def __init__(self, new_cache: Callable[[], KVCache], max_entries: int = 8, working: StaticKVCache | None = None):
        self._new = new_cache
        self._entries: OrderedDict[str, tuple[list[int], KVCache | StaticKVCache]] = OrderedDict()
        self.max_entries = max_entries
        self.working = working
        self._owner: str | None = None  # the key whose keys/values the working cache holds
        self.reused_tokens = 0  # counters for benchmarks and tests
        self.encoded_tokens = 0

    def _check_out(self, key: str, cache: KVCache | StaticKVCache | None) -> StaticKVCache:
        """The working cache, holding what `key` had cached (its snapshot copied in unless it holds it already)."""
        working = self.working
        assert working is not None
        if cache is working:
            return working
        owner = self._entries.get(self._owner) if self._owner is not None else None
        if owner is not None and owner[1] is working:  # the owner's keys/values go out first
            self._entries[self._owner] = (owner[0], working.snapshot())
        working.load(cache) if cache is not None else working.reset()
        self._owner = key
        return working

    @contextmanager
    def use(self, key: str, prompt: list[int]):
        """A cache holding a prefix of `prompt` for the duration of one generation."""
        ids, cache = self._entries.pop(key, ([], None))
        if self.working is not None and len(prompt) + WORKING_ROOM <= self.working.capacity:
            cache = self._check_out(key, cache)
        elif cache is None or cache is self.working:  # no cache yet, or a prompt the working cache cannot hold
            if cache is not None:
                self._owner = None
            cache = self._new()
        keep = common_prefix(ids, prompt)
        cache.truncate(keep)
        self.reused_tokens += keep
        self.encoded_tokens += len(prompt) - keep
        try:
            yield cache
        except BaseException:
            # Interrupted mid-way: keep only what is surely the prompt's (prefill runs before any cancel point).
            if cache.length >= len(prompt):
                cache.truncate(len(prompt))
                self._store(key, list(prompt), cache)
            raise
        cache.truncate(len(prompt))
        self._store(key, list(prompt), cache)

    def _store(self, key: str, prompt: list[int], cache: KVCache) -> None:
        self._entries[key] = (prompt, cache)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)
        if key == self._owner:
            self._owner = None
