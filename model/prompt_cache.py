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


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PromptCache:
    def __init__(self, new_cache: Callable[[], KVCache], max_entries: int = 8):
        self._new = new_cache
        self._entries: OrderedDict[str, tuple[list[int], KVCache]] = OrderedDict()
        self.max_entries = max_entries
        self.reused_tokens = 0  # counters for benchmarks and tests
        self.encoded_tokens = 0

    @contextmanager
    def use(self, key: str, prompt: list[int]):
        """A cache holding a prefix of `prompt` for the duration of one generation."""
        ids, cache = self._entries.pop(key, ([], None))
        if cache is None:
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
