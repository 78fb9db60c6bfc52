"""The code a cache n-gram model (diffill.model.ngram) learns from at a completion: the document around the cursor
and the texts copies come from (other open documents, the files beside it).

Tokenizing is the cost (about 1 MB of code a second), so each text is tokenized once and kept while it is the same
(the files beside the document come back as the same strings while they do not change), and the indexes are
rebuilt only when their texts change: typing along a line leaves the text above and below it as it was. A
completion tokenizes at most MAX_NEW_CHARS of texts it has not seen (the others join at later completions), and
the server warms the cache when a document opens (`warm`), so a large folder never stalls a keystroke.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from diffill.model.ngram import NgramMixer, TokenIndex

from .copies import WINDOW_AFTER, WINDOW_BEFORE

MAX_CACHED_TOKENS = 4_000_000  # token ids kept for texts seen lately (int32: 16 MB)
MAX_NEW_CHARS = 256_000  # characters of texts not seen before that one completion tokenizes (about 80 ms)


class NgramSources:
    def __init__(self, encode: Callable[[str], list[int]], vocab_size: int):
        self.encode = encode
        self.vocab_size = vocab_size
        self._tokens: OrderedDict[str, np.ndarray] = OrderedDict()
        self._held = 0
        self._others: tuple[tuple[int, ...], TokenIndex] | None = None
        self._document: tuple[tuple[str, str], TokenIndex] | None = None

    def _ids(self, text: str) -> np.ndarray:
        """The text's token ids, tokenized once while it stays among the texts seen lately."""
        ids = self._tokens.get(text)
        if ids is not None:
            self._tokens.move_to_end(text)
            return ids
        ids = np.asarray(self.encode(text), dtype=np.int32)
        self._tokens[text] = ids
        self._held += len(ids)
        while self._held > MAX_CACHED_TOKENS and len(self._tokens) > 1:
            _, dropped = self._tokens.popitem(last=False)
            self._held -= len(dropped)
        return ids

    def _document_index(self, text: str, offset: int) -> TokenIndex:
        """The document's lines above and below the cursor's (its own line is the prompt's tail)."""
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        end = len(text) if end < 0 else end
        key = (text[max(0, start - WINDOW_BEFORE) : start], text[end : end + WINDOW_AFTER])
        if self._document is None or self._document[0] != key:
            self._document = key, TokenIndex([self.encode(part) for part in key], self.vocab_size)
        return self._document[1]

    def warm(self, texts: Sequence[str]) -> None:
        """Tokenize `texts` now (a document just opened: the files beside it), so completions find them ready."""
        for text in texts:
            self._ids(text)

    def _others_index(self, others: Sequence[str]) -> TokenIndex:
        """One index over the other texts that are tokenized, plus those that fit this completion's budget."""
        budget = MAX_NEW_CHARS
        ready = []
        for text in others:
            if text not in self._tokens:
                if len(text) > budget:
                    continue
                budget -= len(text)
            ready.append(text)
        key = tuple(hash(t) for t in ready)
        if self._others is None or self._others[0] != key:
            self._others = key, TokenIndex([self._ids(t) for t in ready], self.vocab_size)
        return self._others[1]

    def mixer(
        self, text: str, offset: int, others: Sequence[str], tail: Sequence[int], weight: float, per_order: float
    ) -> NgramMixer:
        """A mixer for a completion at `offset` whose prompt ends with `tail`."""
        indexes = [self._document_index(text, offset)]
        if others:
            indexes.append(self._others_index(others))
        return NgramMixer(indexes, tail, weight, per_order)
