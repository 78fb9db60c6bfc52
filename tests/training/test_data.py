"""Corpus, tokenizer and fill-in-the-middle layout of the embedded model's training."""

import random
from pathlib import Path

import pytest

from diffill.model.fim import build_canvas, build_prompt, sample_span
from diffill.model.tokenizer import BOS, EOS, FIM_PREFIX, FIM_SUFFIX, PAD, SPECIAL_TOKENS, CodeTokenizer
from diffill.training import corpus

CODE = [
    "import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n        yield os.path.join(root, name)\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    'func main() {\n\tfmt.Println("hi")\n}\n',
]


@pytest.mark.parametrize(
    "licence, ok",
    [
        ("MIT", True),
        ("BSD-3-Clause", True),
        ("Apache Software License", True),
        ("PSF-2.0", True),
        ("GPL-3.0-or-later", False),
        ("LGPL", False),
        ("", False),
        ("Proprietary", False),
    ],
)
def test_licence_filter(licence, ok):
    assert corpus.is_permissive(licence) is ok


def test_read_unique_drops_duplicates_and_binary(tmp_path):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("x = 1\n")
    b.write_text("x = 1\n")
    c.write_bytes(b"\xff\xfe\x00binary")
    docs = corpus.read_unique([a, b, c], set())
    assert [p for p, _ in docs] == [str(a)]


def test_external_split_holds_out_whole_folders(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    for i in range(60):
        f = raw / "fake" / "src" / f"pkg{i}" / "m.go"
        f.parent.mkdir(parents=True)
        f.write_text(f"package pkg{i}\n")
    (raw / "fake" / ".version").write_text("1.0")
    monkeypatch.setattr(corpus, "EXTERNAL_SOURCES", (("fake", "apt", "fake", "MIT", "src", (".go",)),))
    [(src, train, held)] = corpus.external_files(raw)  # cached folder: nothing is fetched
    assert src.version == "1.0" and src.licence == "MIT"
    assert len(train) + len(held) == 60 and held and train
    assert not {p.parent for p in train} & {p.parent for p in held}


def test_pypi_sdist_source_is_unpacked_with_its_version(tmp_path, monkeypatch):
    """The `pypi` registry: `pip download` of an sdist (faked here: no network in tests), unpacked safely."""
    import io
    import subprocess
    import tarfile

    calls = []

    def fake_run(cmd, cwd=None, **kw):
        calls.append(cmd)
        with tarfile.open(Path(cwd) / "brotli-1.2.1.tar.gz", "w:gz") as tf:
            for name, body in (("brotli-1.2.1/c/enc/encode.c", b"int f(void) { return 1; }\n"),
                               ("brotli-1.2.1/python/x.py", b"x = 1\n")):  # fmt: skip
                info = tarfile.TarInfo(name)
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(corpus.subprocess, "run", fake_run)
    dest = corpus.fetch_external(tmp_path, "brotli", "pypi", "brotli==1.2.1")
    assert "--no-binary" in calls[0] and "brotli==1.2.1" in calls[0]
    assert (dest / "c" / "enc" / "encode.c").read_text().startswith("int f")
    assert (dest / ".version").read_text() == "1.2.1"
    assert corpus.fetch_external(tmp_path, "brotli", "pypi", "brotli==1.2.1") == dest and len(calls) == 1  # cached


def test_tokenizer_special_ids_and_round_trip():
    tok = CodeTokenizer.train(CODE * 30, vocab_size=400)
    for i, name in enumerate(SPECIAL_TOKENS):
        assert tok.tok.token_to_id(name) == i
    for text in CODE + ["naïve 日本 😀\r\n\t"]:
        assert tok.decode(tok.encode(text)) == text
    assert tok.decode([BOS, *tok.encode("x"), EOS, PAD]) == "x"


def test_prompt_is_suffix_then_prefix_within_budget():
    prefix, suffix = list(range(100, 154)), list(range(200, 300))
    p = build_prompt(prefix, suffix, budget=50, max_suffix=10, block=8)  # 17 too many: 24 dropped
    assert len(p) <= 50
    assert p[0] == BOS and p[1] == FIM_SUFFIX and p[2:12] == suffix[:10] and p[12] == FIM_PREFIX
    assert p[13:] == prefix[-len(p) + 13 :]  # the prefix's tail ends the prompt
    assert len(p) > 50 - 8  # the head is dropped in whole blocks of 8 tokens
    # Typing appends: the next keystrokes' prompts extend this one until a whole block must go.
    for extra in range(1, 4):
        longer = build_prompt(prefix + list(range(900, 900 + extra)), suffix, budget=50, max_suffix=10, block=8)
        assert longer[: len(p)] == p
    short = build_prompt([7, 8], suffix, budget=50, max_suffix=10)
    assert short[13:] == [7, 8]


def test_canvas_is_middle_eos_then_pad():
    assert build_canvas([5, 6], 5) == [5, 6, EOS, PAD, PAD]
    assert build_canvas([5, 6, 7, 8, 9, 10], 4) == [5, 6, 7, 8]


def test_spans_are_drawn_like_edits():
    rng = random.Random(0)
    text = "\n".join(CODE)
    kinds = set()
    for _ in range(300):
        span = sample_span(text, rng)
        if span is None:
            continue
        kinds.add(span.kind)
        middle = text[span.start : span.end]
        assert middle
        if span.kind == "line":
            assert "\n" not in middle and (span.end == len(text) or text[span.end] == "\n")
        else:
            assert span.start == 0 or text[span.start - 1] == "\n"
    assert kinds == {"line", "lines", "block"}


def test_examples_carry_sibling_definitions(tmp_path):
    import json

    from diffill.model.tokenizer import FILE_SEP
    from diffill.training.config import TrainConfig
    from diffill.training.data import Corpus, make_example

    lib = "def parse_header(line):\n    return line.split(':', 1)\n\n\ndef other():\n    pass\n"
    main = "from lib import parse_header\n\n\ndef run(lines):\n    for line in lines:\n        key, value = parse_header(line)\n        print(key)\n"
    with open(tmp_path / "train.jsonl", "w") as fh:
        for name, text in (("pkg/lib.py", lib), ("pkg/main.py", main), ("other/x.py", "y = 1\n")):
            fh.write(json.dumps({"path": name, "text": text}) + "\n")
    corpus = Corpus(tmp_path / "train.jsonl")
    blocks = corpus.context_for(1, "key, value = parse_header(line)", random.Random(0), 400)
    assert blocks == ["# lib.py\ndef parse_header(line):"]
    assert corpus.context_for(2, "y", random.Random(0), 400) == []  # no sibling files
    tok = CodeTokenizer.train([lib, main] * 20, vocab_size=300)
    cfg = TrainConfig(prompt_len=96, max_suffix=16, canvas=16, context_prob=1.0, context_tokens=64)
    rng = random.Random(1)
    examples = [make_example(main, tok, rng, cfg, corpus, 1) for _ in range(30)]
    with_context = [p for p, *_ in filter(None, examples) if FILE_SEP in p]
    assert with_context and all(len(p) == 96 for p, *_ in filter(None, examples))
    assert "parse_header" in tok.decode(with_context[0])


def test_compressed_corpus_is_read_when_plain_is_absent(tmp_path):
    import gzip
    import json

    with gzip.open(tmp_path / "train.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"path": "a.py", "text": "x = 1\n"}) + "\n")
    assert [d["text"] for d in corpus.iter_docs(tmp_path / "train.jsonl")] == ["x = 1\n"]


def test_pack_fits_the_budget_with_whole_folders(tmp_path):
    """`diffill train pack`: an xz sample no larger than asked (the GPU machine's carry limit), made of whole
    folders (a file's siblings come with it, for the cross-file context of its examples)."""
    import json

    rng = random.Random(0)
    src = tmp_path / "src"
    src.mkdir()
    for split in ("train", "heldout"):
        rows = []
        for d in range(20):
            for f in range(2):  # letters drawn at random: about 5 bits a byte whatever the compressor
                text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz \n") for _ in range(20_000))
                rows.append(json.dumps({"path": f"pkg{d}/m{f}.py", "text": text}) + "\n")
        (src / f"{split}.jsonl").write_text("".join(rows))
    (src / "sources.json").write_text("{}")
    report = corpus.pack(src, tmp_path / "out", megabytes=0.2)
    assert (tmp_path / "out" / "train.jsonl.xz").stat().st_size <= 0.2e6
    assert (tmp_path / "out" / "heldout.jsonl.xz").stat().st_size <= 0.02e6
    assert (tmp_path / "out" / "sources.json").exists()
    paths = [d["path"] for d in corpus.iter_docs(tmp_path / "out" / "train.jsonl")]
    folders = {p.split("/")[0] for p in paths}
    assert 0 < len(folders) < 20 and len(paths) == 2 * len(folders) == report["train"]["docs"]
    assert report["train"]["mb"] > 0.8 * 0.2  # the budget is used, not a token sample


def test_batches_mix_the_short_line_canvas_with_the_full_one(tmp_path):
    import json

    import torch

    from diffill.training.config import TrainConfig
    from diffill.training.data import Corpus, batches

    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40))
    with open(tmp_path / "train.jsonl", "w") as fh:
        fh.write(json.dumps({"path": "a.py", "text": text}) + "\n")
    tok = CodeTokenizer.train([text] * 5, vocab_size=300)
    cfg = TrainConfig(
        prompt_len=64, max_suffix=16, canvas=32, short_canvas=16, short_canvas_prob=0.5, batch=2, context_prob=0
    )
    data = batches(Corpus(tmp_path / "train.jsonl"), tok, cfg, random.Random(0))
    shapes = {tuple(next(data)[1].shape) for _ in range(20)}
    assert shapes == {(2, 16), (2, 32)}
    cfg.short_canvas = 0
    data = batches(Corpus(tmp_path / "train.jsonl"), tok, cfg, random.Random(0))
    assert all(isinstance(b[1], torch.Tensor) and b[1].shape == (2, 32) for b in (next(data) for _ in range(5)))


def test_packages_are_drawn_by_the_square_root_of_their_size(tmp_path):
    import collections
    import json

    from diffill.training.corpus import package_of
    from diffill.training.data import Corpus

    assert package_of("/x/lib/python3.11/site-packages/sympy/core/add.py") == "sympy"
    assert package_of("/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py") == "stdlib"
    assert package_of("data/raw/golang-1.19-src/usr/share/go-1.19/src/fmt/print.go") == "golang-1.19-src"
    with open(tmp_path / "train.jsonl", "w") as fh:
        for pkg, n in (("big", 100), ("small", 4)):
            for i in range(n):
                fh.write(json.dumps({"path": f"/v/site-packages/{pkg}/m{i}.py", "text": "x = 1\n"}) + "\n")
    corpus = Corpus(tmp_path / "train.jsonl")
    rng = random.Random(0)
    counts = collections.Counter(package_of(corpus.paths[corpus.draw(rng)]) for _ in range(4000))
    share = counts["small"] / 4000  # sqrt weights: 2 / (10 + 2); drawn file by file it would be 4 / 104
    assert 0.13 < share < 0.21
