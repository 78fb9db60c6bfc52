"""The tokenizer's vocabulary as text, decoded once: which ids may start a text and which ids end a line.

Token healing asks for the ids that start with (or are a start of) the text taken back, at every draft step; drafts
and copies stop at the ids that end a line. Scanning the vocabulary for each would cost more than the model call.
"""

from __future__ import annotations

from collections.abc import Callable

from diffill.model.tokenizer import EOS, SPECIAL_TOKENS, CodeTokenizer

MAX_CACHED_TEXTS = 4096  # texts whose ids are kept (one a keystroke at most: the healed text)


class Vocabulary:
    """Ids by what their text is, for one tokenizer (thread-unsafe caches: one model thread asks)."""

    def __init__(self, tokenizer: CodeTokenizer) -> None:
        self.tokenizer = tokenizer
        self._texts: list[str] | None = None
        self._newline_ids: set[int] | None = None
        self._ids: dict[str, list[int]] = {}

    def texts(self) -> list[str]:
        """Each id's text ("" for the special tokens)."""
        if self._texts is None:
            n = self.tokenizer.vocab_size
            self._texts = [self.tokenizer.decode([i]) if i >= len(SPECIAL_TOKENS) else "" for i in range(n)]
        return self._texts

    def starting_with(self, text: str) -> list[int]:
        """Ids whose text starts with `text`."""
        return self._cached(text, lambda t: t.startswith(text))

    def consistent_with(self, rest: str) -> list[int]:
        """Ids that may start a text beginning with `rest`: those that start with it, and those that are a
        (non-empty) start of it."""
        return self._cached("\0" + rest, lambda t: bool(t) and (t.startswith(rest) or rest.startswith(t)))

    def _cached(self, key: str, keep: Callable[[str], bool]) -> list[int]:
        """The ids whose text `keep` accepts, cached under `key`."""
        if key not in self._ids:
            if len(self._ids) > MAX_CACHED_TEXTS:
                self._ids.clear()
            self._ids[key] = [i for i, t in enumerate(self.texts()) if keep(t)]
        return self._ids[key]

    def line_stops(self) -> set[int]:
        """Ids that end a line: EOS and every token with a newline in it."""
        if self._newline_ids is None:
            self._newline_ids = {i for i, t in enumerate(self.texts()) if "\n" in t}
        return {EOS} | self._newline_ids
