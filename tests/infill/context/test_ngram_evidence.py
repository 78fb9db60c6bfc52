"""What the cache n-gram model learns from at a completion (infill.context.ngram_evidence): the document's lines
around the cursor's and the other texts, each tokenized once; and every model call of a completion gets it."""

from pathlib import Path

import numpy as np
import torch
from engine_doubles import CODE, FakeModel, options, twice
from tiny import random_net, tiny_config

from diffill.infill import tuning
from diffill.infill.context import ngram_evidence
from diffill.infill.context.ngram_evidence import NgramEvidence
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.model.corpus_memory import CorpusMemory
from diffill.model.ngram import NgramMixer
from diffill.model.tokenizer import CodeTokenizer


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
    sources = NgramEvidence(encode, vocab_size=64)
    text = "xyz\nabcq\nab|cd\n"
    offset = text.index("|")
    index = sources.indexes(text, offset, [], [], None)[0]
    assert index.continuations(_ids("ab"))[1].tolist() == _ids("c")  # from `abcq` above, not `ab|cd` itself
    assert index.continuations(_ids("|c"))[0] == 0
    assert encode.calls == ["xyz\nabcq\n", "\n"]


def test_typing_along_a_line_keeps_the_document_index_and_other_texts_are_tokenized_once():
    encode = CountingEncoder()
    sources = NgramEvidence(encode, vocab_size=64)
    other = "def compute_total(x):\n"
    text = "above\nty\nbelow\n"
    first = sources.indexes(text, text.index("ty") + 2, [("/o.py", other)], [], None)
    typed = text.replace("ty", "typ")
    second = sources.indexes(typed, typed.index("typ") + 3, [("/o.py", other)], [], None)
    assert second[0] is first[0] and second[1] is first[1]
    assert encode.calls.count(other) == 1
    changed = "changed\n" + typed
    third = sources.indexes(changed, changed.index("typ") + 3, [("/o.py", other), ("/m.py", "more\n")], [], None)
    assert third[0] is not first[0] and third[1] is not first[1]
    assert encode.calls.count(other) == 1  # still cached: only the new text was tokenized
    assert encode.calls[-1] == "more\n"


def test_tokens_of_files_seen_long_ago_are_dropped(monkeypatch):
    monkeypatch.setattr(ngram_evidence, "MAX_CACHED_TOKENS", 10)
    encode = CountingEncoder()
    sources = NgramEvidence(encode, vocab_size=64)
    for path, text in [("/a.py", "aaaaaa"), ("/b.py", "bbbbbb"), ("/a.py", "aaaaaa")]:
        sources.indexes("x\n", 0, [], [(Path(path), text)], None)
    assert encode.calls.count("aaaaaa") == 2  # evicted by "bbbbbb" (12 tokens > 10), then tokenized again
    assert list(sources._tokens) == [("file", "/a.py")]  # and "bbbbbb" made way for it


def test_only_the_latest_text_of_each_open_document_is_kept():
    """Typing in another open document does not pile up its versions, and a document no longer among the other
    open ones (closed, or the edited one now) is dropped: what is kept is bounded by what is open."""
    encode = CountingEncoder()
    sources = NgramEvidence(encode, vocab_size=64)
    for n in range(1, 30):
        sources.indexes("x\n", 0, [("/o.py", "ab" * n), ("/p.py", "cd")], [], None)
    assert sorted(sources._tokens) == [("open", "/o.py"), ("open", "/p.py")]
    assert sources._tokens[("open", "/o.py")][0] == "ab" * 29 and encode.calls.count("cd") == 1
    assert sources._held == 2 * 29 + 2
    sources.indexes("x\n", 0, [("/p.py", "cd")], [], None)
    assert sorted(sources._tokens) == [("open", "/p.py")] and sources._held == 2


def test_the_mixer_prefers_what_the_other_texts_spell():
    sources = NgramEvidence(_ids, vocab_size=64)
    indexes = sources.indexes("q\n", 2, [("/o.py", "print(compute_total)")], [], None)
    mixer = NgramMixer(indexes, _ids("compute_t"), 0.5, 0.1)
    logp = torch.full((64,), -torch.log(torch.tensor(64.0)))
    assert int(mixer.mix([], logp).argmax()) == _ids("o")[0]


def test_a_completion_tokenizes_a_bounded_amount_of_new_text_and_warm_does_the_rest(monkeypatch):
    monkeypatch.setattr(ngram_evidence, "MAX_NEW_CHARS", 10)
    encode = CountingEncoder()
    sources = NgramEvidence(encode, vocab_size=64)
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
    sources = NgramEvidence(_ids, vocab_size=64)
    a, b = Path("/p/a.py"), Path("/p/b.py")
    folder = [(a, "abcd"), (b, "abxy")]
    in_a = sources.indexes("q\n", 0, [], folder, a)[1]
    in_b = sources.indexes("q\n", 0, [], folder, b)[1]
    assert in_a.ids is in_b.ids  # the same arrays: built once
    assert in_a.continuations(_ids("ab"))[1].tolist() == _ids("x")  # b's text only
    assert in_b.continuations(_ids("ab"))[1].tolist() == _ids("c")  # a's text only
    elsewhere = sources.indexes("q\n", 0, [], folder, Path("/q/c.py"))[1]
    assert sorted(elsewhere.continuations(_ids("ab"))[1].tolist()) == sorted(_ids("cx"))


def _mixers_seen(tmp_path, monkeypatch, weight):
    """The mixers each model call of a completion beside a file got, with tuning.NGRAM_WEIGHT = `weight`, and the
    tokenizer."""
    monkeypatch.setattr(tuning, "NGRAM_WEIGHT", weight)
    tok = CodeTokenizer.train(CODE + ["result = compute_total(items)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    seen = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            seen.append(("draft", mix))
            return [(tok.encode("other(x)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            seen.append(("copies", mix))
            return [-2.0 for _ in continuations]

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            seen.append(("doubt", mix))
            return twice([0.0] * len(tokens))

    (tmp_path / "beside.py").write_text("total = compute_total(numbers)\n")
    here = tmp_path / "here.py"
    knobs = options(steps=2, draft="ar", min_confidence=0.3, symbol_prior=None, token_healing=False)
    eng = CompletionEngine(Drafter(net), tok, knobs)
    text = "def f(x):\n    return g(x)\n\nvalue = compute(\n"
    eng.complete(SyntaxDocument(text, "python"), text.index("compute(") + 8, path=str(here))
    assert {"draft", "doubt"} <= {kind for kind, _ in seen}
    return [m for _, m in seen], tok


def test_every_model_call_of_a_completion_gets_the_cache_of_the_code_around(tmp_path, monkeypatch):
    """The draft, the copies' scores and the doubt cut all see one mixer (model.ngram) that learned the document's
    other lines and the files beside it."""
    mixers, tok = _mixers_seen(tmp_path, monkeypatch, 0.2)
    assert len({id(m) for m in mixers}) == 1
    mix = mixers[0]
    document, beside = mix.indexes
    assert document.continuations(tok.encode("return g("))[0] > 0  # the document's lines
    assert beside.continuations(tok.encode("compute_total("))[0] > 0  # the file beside it
    assert mix.tail[-3:] == tok.encode("value = compute(")[-3:]  # the prompt's end: the typed line


def test_without_the_weight_no_call_gets_a_cache_of_the_code_around(tmp_path, monkeypatch):
    mixers, _ = _mixers_seen(tmp_path, monkeypatch, None)
    assert mixers and all(m is None for m in mixers)  # (the tiny model has no corpus memory)


def _memory_mixers(monkeypatch, memory_weight):
    """The mixers each model call of a completion got, a model with a corpus memory (model.corpus_memory) and the
    memory's weight `memory_weight`, no file around (no path) and the cache of the code around off; the memory."""
    tuned = {"NGRAM_WEIGHT": None, "MEMORY_WEIGHT": memory_weight, "MEMORY_PER_ORDER": 0.07}
    for name, value in tuned.items():
        monkeypatch.setattr(tuning, name, value)
    tok = CodeTokenizer.train(CODE, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    seen = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            seen.append(mix)
            return [(tok.encode("other(x)\n"), -1.0)]

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            seen.append(mix)
            return twice([0.0] * len(tokens))

    memory = CorpusMemory(np.array(tok.encode("value = compute(items)\n") * 3, dtype=np.uint16), tok.vocab_size)
    knobs = options(steps=2, draft="ar", min_confidence=0.3, symbol_prior=None, token_healing=False, copy_prior=None)
    eng = CompletionEngine(Drafter(net), tok, knobs, memory)
    text = "def f(x):\n    return g(x)\n\nvalue = compute(\n"
    eng.complete(SyntaxDocument(text, "python"), text.index("compute(") + 8)
    assert seen and len({id(m) for m in seen}) == 1
    return seen, memory


def test_the_corpus_memory_reaches_the_model_calls_even_without_the_code_around(monkeypatch):
    seen, memory = _memory_mixers(monkeypatch, 0.2)
    mix = seen[0]
    assert mix.memory is memory and mix.indexes == []
    assert (mix.memory_weight, mix.memory_per_order) == (0.2, 0.07)


def test_without_the_memory_weight_no_call_gets_the_memory(monkeypatch):
    seen, _ = _memory_mixers(monkeypatch, None)
    assert seen[0] is None


def test_the_lines_beyond_a_long_lines_window_are_out_of_reach():
    """A line longer than its window (`infill.text.line_window`) leaves that side of the document out: the index
    costs the window, and stays the same while typing along the line."""
    encode = CountingEncoder()
    sources = NgramEvidence(encode, vocab_size=64)
    text = "above\n" + "ab" * 10_000 + "\nbelow\n"
    sources.indexes(text, 6 + 10_000, [], [], None)
    sources.indexes(text, 6 + 10_001, [], [], None)
    assert encode.calls == ["", ""]  # both sides beyond reach; tokenized once
    sources.indexes(text, 6 + 50, [], [], None)  # the line's start within reach: the line above counts
    assert encode.calls[2:] == ["above\n", ""]
