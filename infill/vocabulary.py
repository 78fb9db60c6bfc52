"""The tokenizer's vocabulary as text, decoded once: which ids may start a text and which ids end a line.

Token healing asks for the ids that start with (or are a start of) the text taken back, at every draft step; drafts
and copies stop at the ids that end a line. Scanning the vocabulary for each would cost more than the model call.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import TYPE_CHECKING

from diffill.model.prompt_format import PromptFormat, format_for
from diffill.model.tokenizer import CodeTokenizer

if TYPE_CHECKING:
    from diffill.model.chat_tokenizer import ChatTokenizer

MAX_CACHED_TEXTS = 1024  # texts whose ids are kept, one a keystroke at most (docs/benchmarks.md, "Tuned constants")


class Vocabulary:
    """Ids by what their text is, for one tokenizer (thread-unsafe caches: one model thread asks)."""

    def __init__(self, tokenizer: CodeTokenizer | ChatTokenizer) -> None:
        self.tokenizer = tokenizer
        self.format: PromptFormat = format_for(tokenizer)  # how the model is prompted, and the id its answers end with
        self.specials = tokenizer.special_ids  # the ids that are no text
        self._texts: list[str] | None = None
        self._by_exact: dict[str, list[int]] | None = None
        self._line_stops: frozenset[int] | None = None
        self._ids: dict[str, list[int]] = {}
        self._sorted: tuple[list[str], list[int]] | None = None

    def texts(self) -> list[str]:
        """Each id's text ("" for the special tokens)."""
        if self._texts is None:
            texts = self.tokenizer.decode_each(list(range(self.tokenizer.vocab_size)))
            self._texts = ["" if i in self.specials else t for i, t in enumerate(texts)]
        return self._texts

    def starting_with(self, text: str) -> list[int]:
        """Ids whose text starts with `text`."""
        if not text:
            return list(range(len(self.texts())))
        return self._cached(text, lambda: sorted(self._slice(text)))

    def extensions(self, token: int) -> list[int]:
        """Ids whose text starts with token `token`'s text (itself included): the ways the text may go on as that
        token's text does, whose probabilities together say how sure the model is of that text."""
        texts, ids = self._by_text()
        text = self.texts()[token] if 0 <= token < len(self.texts()) else ""
        if not text:
            return [token]
        lo = bisect.bisect_left(texts, text)
        hi = bisect.bisect_left(texts, text + "\U0010ffff", lo)
        return ids[lo:hi]

    def _slice(self, text: str) -> list[int]:
        """The non-special ids whose text starts with `text` (non-empty), in text order: one bisected slice."""
        texts, ids = self._by_text()
        lo = bisect.bisect_left(texts, text)
        return ids[lo : bisect.bisect_left(texts, text + "\U0010ffff", lo)]

    def _starts_of(self, text: str) -> list[int]:
        """The non-special ids whose text is a non-empty start of `text` (all of it included)."""
        if self._by_exact is None:
            self._by_exact = {}
            for i, t in enumerate(self.texts()):
                if t:
                    self._by_exact.setdefault(t, []).append(i)
        return [i for k in range(1, len(text) + 1) for i in self._by_exact.get(text[:k], ())]

    def _by_text(self) -> tuple[list[str], list[int]]:
        """The non-special ids sorted by their text (those starting with a text are then one slice)."""
        if self._sorted is None:
            pairs = sorted((t, i) for i, t in enumerate(self.texts()) if t)
            self._sorted = ([t for t, _ in pairs], [i for _, i in pairs])
        return self._sorted

    def consistent_with(self, rest: str) -> list[int]:
        """Ids that may start a text beginning with `rest`: those that start with it, and those that are a
        (non-empty) start of it."""
        return self._cached("\0" + rest, lambda: sorted(set(self._slice(rest)) | set(self._starts_of(rest))))

    def indenting(self, rest: str) -> list[int]:
        """Ids that may start a line of code indented by `rest` (whitespace): a start of it, or all of it and then
        the code (not deeper indentation)."""
        n, texts = len(rest), self.texts()

        def ids() -> list[int]:
            deeper = (i for i in self._slice(rest) if len(texts[i]) > n and not texts[i][n].isspace())
            return sorted(set(self._starts_of(rest)) | set(deeper))

        return self._cached("\1" + rest, ids)

    def _cached(self, key: str, ids: Callable[[], list[int]]) -> list[int]:
        """The ids `ids()` finds (ascending), cached under `key`: found through the texts sorted once, so a lookup
        costs the ids it finds, not the vocabulary (262,144 ids for Gemma's)."""
        if key not in self._ids:
            if len(self._ids) > MAX_CACHED_TEXTS:
                self._ids.clear()
            self._ids[key] = ids()
        return self._ids[key]

    def line_stops(self) -> frozenset[int]:
        """Ids that end a line: the answer's end id and every token with a newline in it."""
        if self._line_stops is None:
            ends = {self.format.end_id}
            self._line_stops = frozenset(ends | {i for i, t in enumerate(self.texts()) if "\n" in t})
        return self._line_stops
