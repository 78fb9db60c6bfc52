"""The tokenizer's vocabulary as text, decoded once: which ids may start a text and which ids end a line.

Token healing asks for the ids that start with (or are a start of) the text taken back, at every draft step; drafts
and copies stop at the ids that end a line. Scanning the vocabulary for each would cost more than the model call.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from diffill.model.tokenizer import EOS, SPECIAL_TOKENS, CodeTokenizer

MAX_CACHED_TEXTS = 4096  # texts whose ids are kept (one a keystroke at most: the healed text)


class Vocabulary:
    """Ids by what their text is, for one tokenizer (thread-unsafe caches: one model thread asks)."""

    def __init__(self, tokenizer: CodeTokenizer) -> None:
        self.tokenizer = tokenizer
        self._texts: list[str] | None = None
        self._line_stops: frozenset[int] | None = None
        self._ids: dict[str, list[int]] = {}
        self._sorted: tuple[list[str], list[int]] | None = None

    def texts(self) -> list[str]:
        """Each id's text ("" for the special tokens)."""
        if self._texts is None:
            n = self.tokenizer.vocab_size
            self._texts = [self.tokenizer.decode([i]) if i >= len(SPECIAL_TOKENS) else "" for i in range(n)]
        return self._texts

    def starting_with(self, text: str) -> list[int]:
        """Ids whose text starts with `text`."""
        return self._cached(text, lambda t: t.startswith(text))

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

    def _by_text(self) -> tuple[list[str], list[int]]:
        """The non-special ids sorted by their text (those starting with a text are then one slice)."""
        if self._sorted is None:
            pairs = sorted((t, i) for i, t in enumerate(self.texts()) if t)
            self._sorted = ([t for t, _ in pairs], [i for _, i in pairs])
        return self._sorted

    def consistent_with(self, rest: str) -> list[int]:
        """Ids that may start a text beginning with `rest`: those that start with it, and those that are a
        (non-empty) start of it."""
        return self._cached("\0" + rest, lambda t: bool(t) and (t.startswith(rest) or rest.startswith(t)))

    def indenting(self, rest: str) -> list[int]:
        """Ids that may start a line of code indented by `rest` (whitespace): a start of it, or all of it and then
        the code (not deeper indentation)."""
        n = len(rest)
        return self._cached(
            "\1" + rest, lambda t: bool(t) and (rest.startswith(t) or (t.startswith(rest) and not t[n].isspace()))
        )

    def _cached(self, key: str, keep: Callable[[str], bool]) -> list[int]:
        """The ids whose text `keep` accepts, cached under `key`."""
        if key not in self._ids:
            if len(self._ids) > MAX_CACHED_TEXTS:
                self._ids.clear()
            self._ids[key] = [i for i, t in enumerate(self.texts()) if keep(t)]
        return self._ids[key]

    def line_stops(self) -> frozenset[int]:
        """Ids that end a line: EOS and every token with a newline in it."""
        if self._line_stops is None:
            self._line_stops = frozenset({EOS} | {i for i, t in enumerate(self.texts()) if "\n" in t})
        return self._line_stops
