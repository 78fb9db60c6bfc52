"""The n-gram evidence of a completion: a cache n-gram model (diffill.model.ngram) of the document around the
cursor and the texts copies come from (other open documents, the files beside it), with the model's corpus memory
(diffill.model.corpus_memory), mixed into every model call.

Tokenizing is the cost (docs/benchmarks.md, "Tuned constants"), so each text is tokenized once and kept while it is the same
(the files beside the document come back as the same strings while they do not change), and the indexes are
rebuilt only when their texts change: typing along a line leaves the text above and below it as it was. A
completion tokenizes at most MAX_NEW_CHARS of texts it has not seen (the others join at later completions), and
the server warms the cache on a thread of its own when a document opens (`warm`), so a large folder never stalls
a keystroke.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from diffill.model.corpus_memory import CorpusMemory
from diffill.model.ngram import NgramMixer, TokenIndex

from .. import tuning
from ..text import is_line_end, is_line_start, line_window
from .neighbours import WINDOW_AFTER, WINDOW_BEFORE, Neighbours

log = logging.getLogger(__name__)

MAX_CACHED_TOKENS = 4_000_000  # token ids kept for texts seen lately (int32: 16 MB)
# Characters of texts not seen before that one completion tokenizes; below: characters of a folder's files learned
# from, newest first (more scores no better). Both: docs/benchmarks.md, "Tuned constants".
MAX_NEW_CHARS = 256_000
MAX_FOLDER_CHARS = 1_000_000


class NgramEvidence:
    """Token indexes of the document around the cursor, the other open documents and the edited file's folder,
    kept between completions; `indexes` hands one completion those it learns from (thread-safe against `warm`)."""

    def __init__(self, encode: Callable[[str], list[int]], vocab_size: int):
        self.encode = encode
        self.vocab_size = vocab_size
        self._lock = threading.Lock()
        self._warming = 0  # warm-ups running (on the server's warm-up thread)
        # (kind, path) -> (its text when tokenized, the ids): an open document's or a file's latest text only, so what
        # is kept is bounded by what is open and on disk, not by every version ever typed
        self._tokens: OrderedDict[tuple[str, str], tuple[str, np.ndarray]] = OrderedDict()
        self._held = 0
        self._opened: tuple[tuple[int, ...], TokenIndex] | None = None
        self._folder: tuple[tuple, TokenIndex] | None = None
        self._document: tuple[tuple[str, str], TokenIndex] | None = None

    def _known(self, key: tuple[str, str], text: str) -> np.ndarray | None:
        """The ids kept for `key` when they are this very text's (the caller holds the lock)."""
        kept = self._tokens.get(key)
        return kept[1] if kept is not None and kept[0] == text else None

    def _ids(self, key: tuple[str, str], text: str) -> np.ndarray:
        """The token ids of `text`, the latest text of `key` (("open", path): an open document; ("file", path): a
        file on disk), tokenized once while it stays that key's text and among those seen lately (the lock guards
        the cache, not the tokenizing: a warm-up on another thread never holds a completion up)."""
        with self._lock:
            ids = self._known(key, text)
            if ids is not None:
                self._tokens.move_to_end(key)
                return ids
        ids = np.asarray(self.encode(text), dtype=np.int32)
        with self._lock:
            self._forget(key)
            self._tokens[key] = (text, ids)
            self._held += len(ids)
            while self._held > MAX_CACHED_TOKENS and len(self._tokens) > 1:
                self._forget(next(iter(self._tokens)))
        return ids

    def _forget(self, key: tuple[str, str]) -> None:
        """Drops what is kept for `key` (the caller holds the lock)."""
        kept = self._tokens.pop(key, None)
        if kept is not None:
            self._held -= len(kept[1])

    def _document_index(self, text: str, offset: int) -> TokenIndex:
        """The document's lines above and below the cursor's (its own line is the prompt's tail). Those beyond a
        long line's window (`line_window`) are out of reach: that side is left out, and stays so while typing."""
        start, end = line_window(text, offset)
        above = text[max(0, start - WINDOW_BEFORE) : start] if is_line_start(text, start) else ""
        key = (above, text[end : end + WINDOW_AFTER] if is_line_end(text, end) else "")
        if self._document is None or self._document[0] != key:
            self._document = key, TokenIndex([self.encode(part) for part in key], self.vocab_size)
        return self._document[1]

    def warm(self, opened: Sequence[tuple[str, str]], folder: Sequence[tuple[Path, str]]) -> None:
        """Tokenize and index the texts now (a document just opened: the files beside it), so that its first
        completion finds them ready."""
        with self._lock:
            self._warming += 1
        try:
            folder = _within(folder, MAX_FOLDER_CHARS)
            for key, text in [*_keyed("open", opened), *_keyed("file", folder)]:
                self._ids(key, text)
            self._opened_index(opened)
            self._folder_index(folder, None)
        finally:
            with self._lock:
                self._warming -= 1

    def _ready(self, items: Sequence[tuple[tuple[str, str], str]]) -> list[int]:
        """Which of the (key, text) `items` are tokenized, or fit this completion's budget of new text."""
        budget, ready = MAX_NEW_CHARS, []
        with self._lock:
            known = [self._known(key, text) is not None for key, text in items]
        for i, (_, text) in enumerate(items):
            if not known[i]:
                if len(text) > budget:
                    continue
                budget -= len(text)
            ready.append(i)
        return ready

    def _opened_index(self, opened: Sequence[tuple[str, str]]) -> TokenIndex:
        """The other open documents' index; what was kept of documents no longer among them goes (a document that
        is the edited one again, or closed, is tokenized anew when it comes back)."""
        items = _keyed("open", opened)
        live = {key for key, _ in items}
        with self._lock:
            for key in [k for k in self._tokens if k[0] == "open" and k not in live]:
                self._forget(key)
        items = [items[i] for i in self._ready(items)]
        key = tuple((k, hash(t)) for k, t in items)
        if self._opened is None or self._opened[0] != key:
            self._opened = key, TokenIndex([self._ids(k, t) for k, t in items], self.vocab_size)
        return self._opened[1]

    def _folder_index(
        self, folder: Sequence[tuple[Path, str]], here: Path | None, build: bool = True
    ) -> TokenIndex | None:
        """One index for all the files of a folder, the edited one's saved copy left out of its matches: the index
        stays the same while the user moves between the files of the folder. With `build` False (a warm-up is
        building it), the index only when it is built for these very files, else None."""
        folder = _within(folder, MAX_FOLDER_CHARS)
        items = [folder[i] for i in self._ready(_keyed("file", folder))] if build else folder
        key = tuple((p, hash(t)) for p, t in items)
        built = self._folder
        if built is None or built[0] != key:
            if not build:
                return None
            built = key, TokenIndex([self._ids(("file", str(p)), t) for p, t in items], self.vocab_size)
            self._folder = built
        paths = [p for p, _ in items]
        return built[1].excluding(paths.index(here)) if here in paths else built[1]

    def indexes(
        self,
        text: str,
        offset: int,
        opened: Sequence[tuple[str, str]],
        folder: Sequence[tuple[Path, str]],
        here: Path | None,
    ) -> list[TokenIndex]:
        """The indexes a completion at `offset` of `text` (saved at `here`, one of the `folder`'s files) learns
        from; `opened`: the other open documents, (path, text) each."""
        indexes = [self._document_index(text, offset)]
        if opened:
            indexes.append(self._opened_index(opened))
        if folder:
            # while a warm-up runs, a completion does not race it to tokenize the same folder: it goes without
            with self._lock:
                warming = self._warming > 0
            index = self._folder_index(folder, here, build=not warming)
            if index is not None:
                indexes.append(index)
        return indexes

    def mixer(
        self,
        text: str,
        offset: int,
        prompt: list[int],
        around: Neighbours | None,
        memory: CorpusMemory | None,
    ) -> NgramMixer | None:
        """The evidence of a completion at `offset` of `text` after `prompt`: the cache of the code around (none
        without `around`) and the corpus `memory`, or None when both are off (weights: infill.tuning)."""
        memory = memory if tuning.MEMORY_WEIGHT is not None else None
        indexes: list[TokenIndex] = []
        if tuning.NGRAM_WEIGHT is not None and around is not None:
            try:
                indexes = self.indexes(text, offset, around.opened, around.folder, around.here)
            except Exception:  # extra evidence must never cost the completion
                log.exception("n-gram cache")
        if not indexes and memory is None:
            return None
        weight = tuning.NGRAM_WEIGHT or 0.0  # (None: no index, unused)
        memory_weight = tuning.MEMORY_WEIGHT or 0.0  # (None: no memory, unused)
        return NgramMixer(
            indexes, prompt, weight, tuning.NGRAM_PER_ORDER, memory, memory_weight, tuning.MEMORY_PER_ORDER
        )


def _keyed(kind: str, pairs: Sequence[tuple[Path | str, str]]) -> list[tuple[tuple[str, str], str]]:
    """((kind, path), text) of (path, text) pairs: the token cache's keys."""
    return [((kind, str(p)), t) for p, t in pairs]


def _within(folder: Sequence[tuple[Path, str]], chars: int) -> list[tuple[Path, str]]:
    """The first files of `folder` (newest first) that fit in `chars` characters."""
    out = []
    for path, text in folder:
        if len(text) <= chars:
            out.append((path, text))
            chars -= len(text)
    return out
