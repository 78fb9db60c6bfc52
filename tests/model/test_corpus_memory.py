"""The corpus memory (model.corpus_memory): where a context occurs in the training code shipped beside the model, what
follows it there, and how the mixer weighs it against the code around the cursor."""

import json
import logging
import math
import random
from collections import Counter

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from diffill.model import corpus_memory as memory_module
from diffill.model import runtime
from diffill.model.corpus_memory import KEY_ORDER, MAX_ORDER, SEPARATOR, CorpusMemory, load_memory
from diffill.model.ngram import MAX_MEMORY_WEIGHT, NgramMixer, TokenIndex
from diffill.training.corpus import iter_docs, package_of
from diffill.training.memory import DATA_SECTION, sample_corpus, save_memory

V = 12


def _memory(streams: list[list[int]], vocab: int = V) -> CorpusMemory:
    parts = []
    for s in streams:
        parts += [*s, SEPARATOR]
    return CorpusMemory(np.array(parts, dtype=np.uint16), vocab)


def _brute_force(streams: list[list[int]], context: list[int]) -> tuple[int, Counter]:
    """The longest n in KEY_ORDER..MAX_ORDER whose last-n context occurs inside one stream with a token after it."""
    context = context[-MAX_ORDER:]
    best: tuple[int, Counter] = (0, Counter())
    for n in range(KEY_ORDER, len(context) + 1):
        gram = context[-n:]
        follow = Counter(s[i + n] for s in streams for i in range(len(s) - n) if s[i : i + n] == gram)
        if not follow:
            break
        best = (n, follow)
    return best


def test_continuations_match_a_brute_force_search():
    rng = random.Random(0)
    streams = [[rng.randrange(4) for _ in range(rng.randrange(1, 300))] for _ in range(12)]
    memory = _memory(streams, vocab=4)
    for _ in range(300):
        s = rng.choice(streams)
        at = rng.randrange(len(s))
        context = s[max(0, at - rng.randrange(1, 16)) : at + 1] if rng.random() < 0.8 else [rng.randrange(4)] * 6
        n, ids, probs = memory.continuations(context)
        want_n, want = _brute_force(streams, context)
        assert n == want_n, context
        if n:
            total = sum(want.values())
            assert dict(zip(ids.tolist(), probs.tolist(), strict=True)) == pytest.approx(
                {t: c / total for t, c in want.items()}
            )


def test_no_match_shorter_than_four_tokens_nor_across_texts():
    memory = _memory([[1, 2, 3, 4, 5], [6, 7, 8, 9], [1, 2, 3, 4, 7]])
    n, ids, probs = memory.continuations([9, 1, 2, 3, 4])
    assert n == 4 and sorted(ids.tolist()) == [5, 7] and probs.tolist() == [0.5, 0.5]
    assert memory.continuations([2, 3, 4])[0] == 0  # three tokens of context are the model's business
    assert memory.continuations([6, 7, 8, 9])[0] == 0  # 6 7 8 9 ends its text: nothing follows it there
    assert memory.continuations([4, 5, 6, 7])[0] == 0  # 4 5 | 6 7 spans two texts
    assert memory.continuations([1, 2, 3, 11])[0] == 0  # never seen
    assert memory.continuations([1, 2, 3, 99])[0] == 0  # past the vocabulary: no error, no match
    assert len(_memory([])) == 0 and _memory([]).continuations([1, 2, 3, 4])[0] == 0


def test_a_memory_round_trips_through_safetensors_and_is_loaded_once(tmp_path):
    path = tmp_path / "memory.safetensors"
    assert save_memory(path, [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6]]) == 12
    first = load_memory(path, V)
    assert load_memory(path, V) is first  # once per process and file version
    assert first.continuations([1, 2, 3, 4])[1].tolist() == [5, 6]
    from safetensors.numpy import save_file

    save_file({"ids": np.arange(10, dtype=np.int64)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(ValueError, match="uint16"):
        load_memory(tmp_path / "bad.safetensors", V)
    with pytest.raises(ValueError, match="vocabulary"):
        CorpusMemory(np.zeros(4, dtype=np.uint16), 70_000)


def test_a_damaged_memory_costs_nothing_but_itself(tmp_path, caplog):
    bad = tmp_path / "memory.safetensors"
    bad.write_bytes(b"\x00garbage, not a safetensors file")
    with caplog.at_level(logging.WARNING):
        assert runtime._memory(bad, V) is None
    assert "not used" in caplog.text
    assert runtime._memory(tmp_path / "absent.safetensors", V) is None


def test_the_corpus_sample_caps_each_package_and_is_seeded(tmp_path):
    rows = [{"path": f"/x/site-packages/big/{i}.py", "text": "b" * 100} for i in range(50)]
    rows += [{"path": f"/usr/lib/python3.11/m{i}.py", "text": "s" * 100} for i in range(50)]
    rows += [{"path": "/x/site-packages/huge/t.py", "text": "h" * 300_000}]
    rows += [{"path": f"data/corpus/raw/go-src/src/f{i}.go", "text": "g" * 100} for i in range(50)]
    rows += [{"path": f"data/corpus/raw/rust-src/lib/f{i}.rs", "text": "r" * 100} for i in range(50)]
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = list(iter_docs(corpus))
    texts, per = sample_corpus(docs, chars=2_000, share=0.5)
    assert (texts, per) == sample_corpus(docs, chars=2_000, share=0.5)
    assert Counter(t[0] for t in texts) == {"b": 10, "s": 10}  # 1,000 characters each, at most
    assert per == {"big": 1_000, "stdlib": 1_000}
    others, per = sample_corpus(docs, chars=1_000, share=0.3, python=False)  # the other languages apart
    assert per == {"go-src": 300, "rust-src": 300} and {t[0] for t in others} == {"g", "r"}
    assert package_of("/x/site-packages/big/a/b.py") == "big"


def _uniform() -> torch.Tensor:
    return torch.full((V,), -math.log(V))


def test_the_memory_is_mixed_first_and_the_code_around_has_the_last_word():
    memory = _memory([[1, 2, 3, 4, 5, 6, 7]] * 3)
    alone = NgramMixer([], tail=[1, 2, 3], memory=memory, memory_weight=0.3, memory_per_order=0.1)
    p = alone.mix([4], _uniform()).exp()  # context 1 2 3 4 (order 4): 5 always
    assert float(p[5]) == pytest.approx(0.7 / V + 0.3, rel=1e-5)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-5)
    longer = alone.after([4, 5]).mix([], _uniform()).exp()  # 1 2 3 4 5 (order 5): 6, w = 0.3 + 0.1
    assert float(longer[6]) == pytest.approx(0.6 / V + 0.4, rel=1e-5)
    capped = NgramMixer([], [1, 2, 3], memory=memory, memory_weight=2.0).mix([4], _uniform()).exp()
    assert float(capped[9]) == pytest.approx((1 - MAX_MEMORY_WEIGHT) / V, rel=1e-5)  # never all of the model
    # the document continues 1 2 3 4 with 9: mixed after the memory, it outweighs it
    both = NgramMixer([TokenIndex([[3, 4, 9]] * 3, V)], [1, 2, 3], 0.7, 0.0, memory, 0.3, 0.0)
    p = both.mix([4], _uniform()).exp()
    assert int(p.argmax()) == 9 and float(p[5]) == pytest.approx(0.3 * (0.7 / V + 0.3), rel=1e-5)
    assert torch.equal(NgramMixer([], [8, 8, 8], memory=memory).mix([8], _uniform()), _uniform())  # no match


def test_train_memory_writes_the_memory_of_a_model_folder(tmp_path, capsys):
    from diffill.lsp.cli import main
    from diffill.model.tokenizer import CodeTokenizer

    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").write_bytes((runtime.EMBEDDED_DIR / "tokenizer.json").read_bytes())
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [
        {"path": f"/x/site-packages/p{i}/m.py", "text": f"def area_{i}(width, height):\n    return 0\n"}
        for i in range(9)
    ]
    rows += [{"path": "data/raw/go/m.go", "text": "func volume(depth int) int {\n\treturn depth\n}\n"}]
    (corpus / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (model / "DATA.md").write_text("# data card\n")
    for _ in range(2):  # a rebuild replaces the card's section
        assert main(["train", "memory", "--corpus", str(corpus), "--model", str(model), "--chars", "1e6"]) == 0
    assert "tokens" in capsys.readouterr().out
    card = (model / "DATA.md").read_text()
    assert card.startswith("# data card\n") and card.count(DATA_SECTION) == 1
    assert "| go |" in card and "| p3 |" in card  # what went in, package by package
    tok = CodeTokenizer.from_file(model / "tokenizer.json")
    memory = load_memory(model / memory_module.FILE_NAME, tok.vocab_size)
    n, ids, _ = memory.continuations(tok.encode("def area_3(width,"))
    assert n >= KEY_ORDER and tok.decode(ids[:1].tolist()).strip() == "height"
    n, ids, _ = memory.continuations(tok.encode("func volume(depth int"))  # and the other languages'
    assert n >= KEY_ORDER and tok.decode(ids[:1].tolist()).strip().startswith(")")


def test_a_prefetched_memory_is_the_one_the_loader_finds(tmp_path):
    """model.embedded starts the memory's index on a thread before torch loads; the loader's own load_memory call
    then gets that very memory instead of building another."""
    from diffill.model.embedded import prefetch_memory
    from diffill.model.tokenizer import CodeTokenizer

    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").write_bytes((runtime.EMBEDDED_DIR / "tokenizer.json").read_bytes())
    assert prefetch_memory(str(model)) is None  # no memory beside these weights
    save_file({"ids": np.array([5, 6, 7, 8, 9] * 20, dtype=np.uint16)}, str(model / memory_module.FILE_NAME))
    thread = prefetch_memory(str(model))
    assert thread is not None
    assert prefetch_memory(str(model)) is None  # (the loader asks again: the one build serves)
    thread.join(30)
    stamp = (str((model / memory_module.FILE_NAME).resolve()), (model / memory_module.FILE_NAME).stat().st_mtime)
    built = memory_module._LOADED[stamp]
    vocab = CodeTokenizer.from_file(model / "tokenizer.json").vocab_size
    assert load_memory(model / memory_module.FILE_NAME, vocab) is built
    assert prefetch_memory("google/diffusiongemma-26B-A4B-it") is None  # a hub id: nothing to start on this disk
    assert prefetch_memory("bad\x00name") is None and prefetch_memory("~no_such_user_here/x") is None
