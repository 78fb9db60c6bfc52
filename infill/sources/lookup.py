"""The rest of a line looked up in the code around and the corpus memory alone: answers while the model loads.

Loading the model is mostly importing torch (docs/benchmarks.md, "Start-up"); the tokenizer and the corpus memory
need no torch, and neither does the cache n-gram model of the code around (model.ngram). So until the model is
ready the daemon answers from those: the typed line's last tokens are looked up, and the tokens that follow them
there are taken one at a time while they are nearly unanimous, up to the end of the line. The word being typed
is re-chosen from its start (token healing, as the model's requests do), so `retu` can become ` return`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from diffill.model.corpus_memory import FILE_NAME as MEMORY_FILE
from diffill.model.corpus_memory import CorpusMemory, built_memory
from diffill.model.embedded import EMBEDDED_DIR
from diffill.model.ngram import Belief
from diffill.model.tokenizer import CodeTokenizer

from ..context.neighbours import Neighbours
from ..context.ngram_evidence import NgramEvidence
from ..vocabulary import Vocabulary

CONTEXT_CHARS = 400  # characters before the cursor tokenized for the lookup (more than MAX_ORDER tokens' worth)
MAX_TOKENS = 24  # tokens looked up per answer: a line's rest
# A token is taken when it follows this share of the matches at least, after this many tokens of context matched:
# `diffill bench typing` ("before the model" row; docs/benchmarks.md, "Tuned constants").
MIN_SHARE = 0.9
MIN_ORDER = 4
_WORD = re.compile(r"\w*\Z")


@dataclass(frozen=True)
class Healed:
    """The lookup's context: the token ids before the word being typed, and the text after them up to the cursor
    (what the first tokens looked up must spell)."""

    context: list[int]
    typed: str


class LookupAnswers:
    """The rest of the line at a cursor from the code around (the document, the open documents, the folder's
    files: infill.context.ngram_evidence) and the corpus memory, or None where they are not sure."""

    def __init__(self, tokenizer: CodeTokenizer, memory: Callable[[], CorpusMemory | None]):
        self.tokenizer = tokenizer
        self.memory = memory  # the corpus memory once it is built, else None (never waited for)
        self.evidence = NgramEvidence(tokenizer.encode, tokenizer.vocab_size)
        self._pieces = Vocabulary(tokenizer).texts()

    def answer(self, text: str, offset: int, around: Neighbours | None) -> str | None:
        """The text to insert at `offset` of `text`, or None. Only at a line's end: the lookup has no way to
        join what follows the cursor."""
        line_end = text.find("\n", offset)
        if text[offset : line_end if line_end >= 0 else len(text)].strip():
            return None
        healed = self._healed(text, offset)
        if healed is None:
            return None
        around = around if around is not None else Neighbours([], [], None, frozenset())  # the document alone
        mixer = self.evidence.mixer(text, offset, healed.context, around, self.memory())
        if mixer is None:
            return None
        spelled = self._looked_up(mixer.belief, healed.typed)
        if not spelled.startswith(healed.typed):
            return None
        rest = spelled[len(healed.typed) :].split("\n", 1)[0].rstrip()
        return rest or None

    def _healed(self, text: str, offset: int) -> Healed | None:
        """The tokens before the cursor less those that spell the word being typed and the character before it
        (they would be split differently once the word is whole)."""
        head = text[max(0, offset - CONTEXT_CHARS) : offset]
        ids = self.tokenizer.encode(head)
        word = len(_WORD.search(head).group())
        keep, dropped = len(ids), 0
        while keep > 0 and dropped < word + 1:
            keep -= 1
            dropped += len(self._pieces[ids[keep]])
        if keep < MIN_ORDER:
            return None
        return Healed(ids[:keep], head[len(head) - dropped :] if dropped else "")

    def _looked_up(self, belief: Callable[[list[int]], Belief | None], typed: str) -> str:
        """The text of the tokens that follow the context: while `typed` is being spelled, the likeliest token
        that agrees with it; after, the likeliest while it is sure (MIN_SHARE, MIN_ORDER); up to a line break."""
        ids: list[int] = []
        spelled = ""
        while len(ids) < MAX_TOKENS:
            found = belief(ids)
            if found is None or found.order < MIN_ORDER:
                break
            probs = found.probs
            if len(spelled) < len(typed):
                agrees = np.array([_agrees(spelled + self._pieces[i], typed) for i in found.ids.tolist()], dtype=bool)
                probs = np.where(agrees, probs, 0.0)
                if probs.sum() <= 0:
                    break
                probs = probs / probs.sum()
            best = int(np.argmax(probs))
            if probs[best] < MIN_SHARE:
                break
            ids.append(int(found.ids[best]))
            spelled += self._pieces[ids[-1]]
            if "\n" in spelled[len(typed) :]:
                break
        return spelled


def embedded_lookups() -> LookupAnswers | None:
    """Lookups with the embedded model's tokenizer and corpus memory (once it is built: model.embedded prefetches
    it at start), whatever model the settings name; None when no embedded model is installed."""
    tokenizer_file = EMBEDDED_DIR / "tokenizer.json"
    if not tokenizer_file.exists():
        return None
    return LookupAnswers(CodeTokenizer.from_file(tokenizer_file), lambda: built_memory(EMBEDDED_DIR / MEMORY_FILE))


def _agrees(spelled: str, typed: str) -> bool:
    """Whether text spelled so far can still become `typed` or goes on from it."""
    return spelled.startswith(typed) or typed.startswith(spelled)
