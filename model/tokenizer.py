"""Byte-level BPE code tokenizer (HF `tokenizers`) with pad/eos/bos and fill-in-the-middle sentinels.

The same ids serve training and completion: the prompt is `<bos> [<file_sep> context]* <fim_suffix> suffix
<fim_prefix> prefix` (suffix first, so that typing only appends to the prompt) and the canvas holds the middle,
then `<eos>`, then `<pad>`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>"]
PAD, EOS, BOS, UNK, FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE, FILE_SEP = range(len(SPECIAL_TOKENS))
# Words a BPE model keeps encoded. tokenizers' default (10,000) fills over days of typing, one long-lived block per
# new word among the answers' transient ones; this many fill while the daemon warms up (`diffill bench soak`).
WORD_CACHE = 1024


def bound_word_cache(tok: Tokenizer) -> Tokenizer:
    """`tok` with its model's word cache held to WORD_CACHE words (models without one are left as they are)."""
    resize = getattr(tok.model, "_resize_cache", None)
    if resize is not None:
        resize(WORD_CACHE)
    return tok


class CodeTokenizer:
    def __init__(self, tok: Tokenizer):
        self.tok = bound_word_cache(tok)
        for i, name in enumerate(SPECIAL_TOKENS):
            if tok.token_to_id(name) != i:
                raise ValueError(f"tokenizer: special token {name} must have id {i}")

    @classmethod
    def from_file(cls, path: str | Path) -> CodeTokenizer:
        return cls(Tokenizer.from_file(str(path)))

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 8192) -> CodeTokenizer:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok)

    def save(self, path: str | Path) -> None:
        self.tok.save(str(path))

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, special tokens dropped."""
        return self.tok.decode([i for i in ids if i >= len(SPECIAL_TOKENS)], skip_special_tokens=True)

    def decode_each(self, ids: list[int]) -> list[str]:
        """The text of each id alone (a whole vocabulary in one call; "" for the special tokens)."""
        return self.tok.decode_batch([[i] if i >= len(SPECIAL_TOKENS) else [] for i in ids])

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids that are no text: pad, eos, bos, unk and the FIM sentinels."""
        return frozenset(range(len(SPECIAL_TOKENS)))
