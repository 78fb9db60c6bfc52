"""What the cache n-gram model learns from at a completion (infill.ngram_sources): the document's lines around the
cursor's and the other texts, each tokenized once."""

from pathlib import Path

import torch

from diffill.infill import ngram_sources
from diffill.infill.ngram_sources import NgramSources
from diffill.model.ngram import NgramMixer


class CountingEncoder:
    """Characters as token ids (a = 10, b = 11, ...), counting the texts it is asked to encode."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, text: str) -> list[int]:
        self.calls.append(text)
        return [ord(c) % 97 + 10 if c.isalpha() else 5 for c in text]


def _ids(text: str) -> list[int]:
    return CountingEncoder()(text)


def test_the_document_around_the_cursor_line_is_learned_but_not_the_line_itself():
    encode = CountingEncoder()
    sources = NgramSources(encode, vocab_size=64)
    text = "xyz\nabcq\nab|cd\n"
    offset = text.index("|")
    index = sources.indexes(text, offset, [], [], None)[0]
    assert index.continuations(_ids("ab"))[1].tolist() == _ids("c")  # from `abcq` above, not `ab|cd` itself
    assert index.continuations(_ids("|c"))[0] == 0
    assert encode.calls == ["xyz\nabcq\n", "\n"]


def test_typing_along_a_line_keeps_the_document_index_and_other_texts_are_tokenized_once():
    encode = CountingEncoder()
    sources = NgramSources(encode, vocab_size=64)
    other = "def compute_total(x):\n"
    text = "above\nty\nbelow\n"
    first = sources.indexes(text, text.index("ty") + 2, [other], [], None)
    typed = text.replace("ty", "typ")
    second = sources.indexes(typed, typed.index("typ") + 3, [other], [], None)
    assert second[0] is first[0] and second[1] is first[1]
    assert encode.calls.count(other) == 1
    changed = "changed\n" + typed
    third = sources.indexes(changed, changed.index("typ") + 3, [other, "more\n"], [], None)
    assert third[0] is not first[0] and third[1] is not first[1]
    assert encode.calls.count(other) == 1  # still cached: only the new text was tokenized
    assert encode.calls[-1] == "more\n"


def test_tokens_of_texts_seen_long_ago_are_dropped(monkeypatch):
    monkeypatch.setattr(ngram_sources, "MAX_CACHED_TOKENS", 10)
    encode = CountingEncoder()
    sources = NgramSources(encode, vocab_size=64)
    for text in ["aaaaaa", "bbbbbb", "aaaaaa"]:
        sources.indexes("x\n", 0, [text], [], None)
    assert encode.calls.count("aaaaaa") == 2  # evicted by "bbbbbb" (12 tokens > 10), then tokenized again
    assert list(sources._tokens) == ["aaaaaa"]  # and "bbbbbb" made way for it


def test_the_mixer_prefers_what_the_other_texts_spell():
    sources = NgramSources(_ids, vocab_size=64)
    indexes = sources.indexes("q\n", 2, ["print(compute_total)"], [], None)
    mixer = NgramMixer(indexes, _ids("compute_t"), 0.5, 0.1)
    logp = torch.full((64,), -torch.log(torch.tensor(64.0)))
    assert int(mixer.mix([], logp).argmax()) == _ids("o")[0]


def test_a_completion_tokenizes_a_bounded_amount_of_new_text_and_warm_does_the_rest(monkeypatch):
    monkeypatch.setattr(ngram_sources, "MAX_NEW_CHARS", 10)
    encode = CountingEncoder()
    sources = NgramSources(encode, vocab_size=64)
    small, large = "abcab", "xyzxyzxyzxyz"
    folder = [(Path("/p/large.py"), large), (Path("/p/small.py"), small)]
    indexes = sources.indexes("q\n", 0, [], folder, None)
    assert large not in encode.calls and small in encode.calls  # over the budget: left for later
    assert indexes[1].continuations(_ids("ab"))[1].tolist() == _ids("c")
    sources.warm([], folder)
    assert encode.calls.count(large) == 1 and encode.calls.count(small) == 1
    indexes = sources.indexes("q\n", 0, [], folder, None)
    assert indexes[1].continuations(_ids("xy"))[1].tolist() == _ids("zzzz")


def test_one_folder_index_serves_each_file_without_its_own_saved_copy():
    """Moving between the files of a folder keeps the index; each completion's matches leave its own file out
    (its saved copy may hold the very text being typed)."""
    sources = NgramSources(_ids, vocab_size=64)
    a, b = Path("/p/a.py"), Path("/p/b.py")
    folder = [(a, "abcd"), (b, "abxy")]
    in_a = sources.indexes("q\n", 0, [], folder, a)[1]
    in_b = sources.indexes("q\n", 0, [], folder, b)[1]
    assert in_a.ids is in_b.ids  # the same arrays: built once
    assert in_a.continuations(_ids("ab"))[1].tolist() == _ids("x")  # b's text only
    assert in_b.continuations(_ids("ab"))[1].tolist() == _ids("c")  # a's text only
    elsewhere = sources.indexes("q\n", 0, [], folder, Path("/q/c.py"))[1]
    assert sorted(elsewhere.continuations(_ids("ab"))[1].tolist()) == sorted(_ids("cx"))
