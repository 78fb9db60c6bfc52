"""The tokenizers' word caches stay bounded: a daemon that types for days meets far more distinct words than it
keeps, and each word kept is a long-lived block among the answers' short-lived ones (glibc's in-use blocks)."""

import random
import string

import pytest

from diffill.lsp.heap import heap_figures
from diffill.model.chat_tokenizer import ChatTokenizer
from diffill.model.runtime import EMBEDDED_DIR
from diffill.model.tokenizer import WORD_CACHE, CodeTokenizer


def _words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 14))) for _ in range(n)]


def _in_use_growth(encode, words: list[str]) -> int:
    """kB of glibc's blocks in use that encoding `words` (none seen before) leaves behind."""
    before = heap_figures()["in_use"]
    for i in range(0, len(words), 500):
        encode(" ".join(words[i : i + 500]))
    return heap_figures()["in_use"] - before


@pytest.mark.parametrize("kind", ["embedded", "chat"])
def test_encoding_new_words_keeps_at_most_the_cache_of_them(kind, gemma_checkpoint):
    if not heap_figures():
        pytest.skip("glibc's heap accounting (mallinfo2) is not here")
    tok = (
        ChatTokenizer.from_folder(gemma_checkpoint)
        if kind == "chat"
        else CodeTokenizer.from_file(EMBEDDED_DIR / "tokenizer.json")
    )
    grown = _in_use_growth(tok.encode, _words(12_000, seed=2))
    # a cached word costs about half a kB; tokenizers' own default keeps 10,000 of these (about 5 MB)
    assert grown < WORD_CACHE, f"encoding 12,000 new words kept {grown} kB"
