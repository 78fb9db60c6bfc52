"""`diffill train decoder` (training/decoder/): canvases laid out as the speculative rounds lay them out, batched
rows that see what one row alone sees, labels that are the encoder's greedy answers, and a run that resumes and
exports a folder whose encoder is the init's, bit for bit."""

from __future__ import annotations

import json

import torch
from test_train import SOURCE, make_corpus
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.options import PromptOptions
from diffill.infill.request import build_request
from diffill.infill.vocabulary import Vocabulary
from diffill.model.loader import load_model, save_model
from diffill.model.speculative import Speculator
from diffill.model.tokenizer import PAD, CodeTokenizer
from diffill.training.config import DecoderTrainConfig
from diffill.training.decoder import Anchor, Layout, RowsCache, encoded, label, read_labels, train

END = 1


def test_layouts_are_the_canvases_the_speculative_rounds_and_the_decoder_alone_read():
    a = Anchor(prompt=[2, 5, 6], label=[7, 8, 9, END], kind="line", room=15)
    first, later, alone = Layout(0, 0), Layout(0, 2), Layout(0, 0, pinned=False)
    # the first draft: the prompt's last token pinned, the cache before it
    assert first.cache_length(a) == 2 and first.width(a) == 16
    assert first.target(a, END) == [6, 7, 8, 9, END] + [PAD] * 11
    # after two committed tokens: the second pinned, the cache holding the prompt and the first
    assert later.cache_length(a) == 4 and later.width(a) == 14
    assert later.target(a, END) == [8, 9, END] + [PAD] * 11
    # alone: the whole prompt in the cache, the answer then its end id (added where a newline token stopped it)
    assert alone.cache_length(a) == 3 and alone.target(a, END)[:5] == [7, 8, 9, END, PAD]
    stopped = Anchor(prompt=[2, 5, 6], label=[7, 8], kind="line", room=15)
    assert alone.target(stopped, END)[:4] == [7, 8, END, PAD]
    assert first.answer_length(a) == 5 and later.answer_length(a) == 3 and alone.answer_length(a) == 4


def test_rows_side_by_side_see_what_each_row_sees_alone():
    net = random_net(tiny_config(sliding_window=4))  # a window shorter than the prompts: its cut is tested too
    anchors = [Anchor([2, *range(10, 19)], [30, 31, END], "line", 15), Anchor([2, 40, 41, 42], [50, END], "line", 15)]
    kv = [encoded(net, a)[0] for a in anchors]
    lengths, widths = [9, 3], [6, 4]
    canvas = torch.tensor([[60, 61, 62, 63, 64, 65], [70, 71, 72, 73, 0, 0]])
    positions = torch.tensor(lengths)[:, None] + torch.arange(6)[None]
    with torch.no_grad():
        both = net.decode(canvas, RowsCache(kv, lengths, widths), None, positions)
        for r, a in enumerate(anchors):
            cache = net.new_cache()
            net.encode(torch.tensor([(a.prompt + a.label)[: lengths[r]]]), cache)
            cache.keys = [k.bfloat16().float() for k in cache.keys]  # as `encoded` keeps them
            cache.values = [v.bfloat16().float() for v in cache.values]
            alone = net.decode(canvas[r : r + 1, : widths[r]], cache)
            assert torch.allclose(both[r, : widths[r]], alone[0], atol=1e-4)


def _folder(tmp_path):
    """A plain tiny model folder with a tokenizer trained on the corpus's code."""
    tok = CodeTokenizer.train([SOURCE] * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, sliding_window=32, canvas_length=16), std=0.1)
    save_model(net, tmp_path / "init")
    tok.save(tmp_path / "init" / "tokenizer.json")
    (tmp_path / "init" / "generation_config.json").write_text(json.dumps({"max_denoising_steps": 4}))
    return tmp_path / "init"


def test_labels_resume_and_the_export_keeps_the_encoder(tmp_path):
    torch.manual_seed(0)
    make_corpus(tmp_path / "corpus")
    init = _folder(tmp_path)
    cfg = DecoderTrainConfig(corpus=str(tmp_path / "corpus"), init=str(init), out=str(tmp_path / "run"), rank=4,
                             anchors=6, heldout_anchors=4, batch=2, minutes=0.01, threads=1)  # fmt: skip
    logs: list[str] = []
    state = train(cfg, log=logs.append)
    labels = read_labels(tmp_path / "run" / "labels-train.jsonl")
    assert len(labels) == 6 and state["step"] > 0
    # a label is the encoder's greedy answer to the engine's own prompt (what a verify pass accepts)
    plain = load_model(init, dtype=torch.float32)
    vocabulary = Vocabulary(CodeTokenizer.from_file(init / "tokenizer.json"))
    text, offset = SOURCE, SOURCE.index("sorted(") + 3
    request = build_request(SyntaxDocument(text, "python"), offset, [], vocabulary, PromptOptions())
    want = Speculator(plain, decoder=False).greedy(request.prompt, 15, request.stops, None, request.healing.allowed)
    got = label(plain, vocabulary, text, "f.py", offset)
    assert got.prompt == request.prompt and got.label == want.tokens and got.room == 15 and got.kind == "line"
    a = labels[0]
    # the reports: before training and at the end, with every figure
    assert [r["step"] for r in state["reports"]] == [0, state["step"]]
    assert {"first_accepted_1", "later_accepted_2", "alone_whole_2"} <= set(state["reports"][-1])
    # a half-written label line (a stopped run) is cut off; the run resumes from its checkpoint
    with open(tmp_path / "run" / "labels-train.jsonl", "a") as fh:
        fh.write('{"prompt": [2, 3')
    cfg.anchors, cfg.minutes = 8, 0.02
    again = train(cfg, log=logs.append)
    assert len(read_labels(tmp_path / "run" / "labels-train.jsonl")) == 8 and again["step"] > state["step"]
    # the export: the init's weights and an encoder bit for bit the init's; the card asks for the decoder's drafts
    out = load_model(tmp_path / "run" / "model", dtype=torch.float32)
    assert out.config.decoder_adapter_rank == 4
    ids = torch.tensor([a.prompt])
    assert torch.equal(out.head(out.encode(ids, out.new_cache())), plain.head(plain.encode(ids, plain.new_cache())))
    card = json.loads((tmp_path / "run" / "model" / "generation_config.json").read_text())
    assert card["diffill_speculative"] is True and card["max_denoising_steps"] == 4
    assert (tmp_path / "run" / "model" / "tokenizer.json").exists()


def test_the_distillation_targets_are_the_encoders_beliefs_at_the_answer_tokens_each_canvas_holds():
    """`encoded` keeps, from its one pass, the encoder's top choices at each answer token (a greedy label is
    their argmax); each layout's canvas positions get those of the answer token they hold, none at the pin or
    past the answer; the term adds to the labels' loss only with a weight."""
    from diffill.training.decoder import batch_inputs, draft_losses, soft_targets

    torch.manual_seed(0)
    net = random_net(tiny_config(canvas_length=16))
    prompt = [2, 11, 12, 13, 14]
    ids, greedy = torch.tensor([prompt]), []
    with torch.no_grad():
        for _ in range(4):  # the encoder's greedy answer, token by token
            greedy.append(int(net.head(net.encode(ids, net.new_cache())[0, -1]).argmax()))
            ids = torch.tensor([prompt + greedy])
    a = Anchor(prompt, greedy, "line", 15)
    kv, (top_ids, top_logp) = encoded(net, a)
    assert top_ids[:, 0].tolist() == greedy and bool((top_logp[:, :-1] >= top_logp[:, 1:]).all())
    layouts = [Layout(0, 0), Layout(0, 2), Layout(0, 0, pinned=False)]
    s_ids, _, mask = soft_targets(layouts, [a] * 3, [(top_ids, top_logp)] * 3, 16)
    assert mask[0].tolist() == [False, True, True, True, True] + [False] * 11  # the pin, then the 4 answer tokens
    assert s_ids[0, 1:5, 0].tolist() == greedy and s_ids[1, 1:3, 0].tolist() == greedy[2:]
    assert mask[1].sum() == 2 and mask[2].tolist()[:5] == [True] * 4 + [False]
    assert s_ids[2, :4, 0].tolist() == greedy
    inputs = batch_inputs(layouts, [a], [(kv, (top_ids, top_logp))], END, torch.Generator().manual_seed(0),
                          net.config.vocab_size, DecoderTrainConfig(kl_weight=0.5))  # fmt: skip
    unasked = batch_inputs(layouts, [a], [(kv, (top_ids, top_logp))], END, torch.Generator().manual_seed(0),
                           net.config.vocab_size, DecoderTrainConfig())  # fmt: skip
    assert unasked[-1] is None  # no term asked for: no soft targets built
    with torch.no_grad():
        plain = draft_losses(net, inputs, torch.Generator().manual_seed(1), 0.1, 1.0)[0]
        distilled = draft_losses(net, inputs, torch.Generator().manual_seed(1), 0.1, 1.0, kl_weight=0.5)[0]
    assert distilled > plain


def test_partly_noised_canvases_keep_answer_tokens_only_in_their_share_of_rows():
    from diffill.training.decoder import partly_noised

    targets = torch.arange(100, 100 + 64 * 16).view(64, 16)  # no noise id equals a target (noise < 100)
    noise = torch.randint(0, 100, targets.shape, generator=torch.Generator().manual_seed(0))
    none = partly_noised(targets, noise, 0.0, torch.Generator().manual_seed(1))
    assert torch.equal(none, noise)
    every = partly_noised(targets, noise, 1.0, torch.Generator().manual_seed(1))
    kept = every == targets
    assert bool(((every == noise) | kept).all()) and 0.3 < kept.float().mean() < 0.7  # 1 - t, t ~ U(0, 1)
    half = partly_noised(targets, noise, 0.5, torch.Generator().manual_seed(1))
    seeded_rows = (half == targets).any(dim=1).float().mean()
    assert 0.25 < seeded_rows < 0.75


def test_the_reports_canvases_are_noised_whole_whatever_share_training_seeds(monkeypatch):
    """A partly noised canvas holds answer tokens; the rounds draft from noise, so the report never seeds one."""
    from diffill.training import decoder

    torch.manual_seed(0)
    net = random_net(tiny_config(canvas_length=16))
    anchors = [Anchor([2, 11, 12, 13], [20, 21, 22, END], "line", 15), Anchor([2, 14, 15], [23, END], "line", 15)]
    kv = [encoded(net, a) for a in anchors]
    shares, built = [], decoder.batch_inputs

    def recorded(layouts, anchors, kv, end, gen, vocab, cfg):
        shares.append(cfg.partial_share)
        return built(layouts, anchors, kv, end, gen, vocab, cfg)

    monkeypatch.setattr(decoder.losses, "batch_inputs", recorded)
    plain = decoder.report(net, anchors, kv, END, DecoderTrainConfig(batch=2), 0.1)
    seeded = decoder.report(net, anchors, kv, END, DecoderTrainConfig(batch=2, partial_share=1.0), 0.1)
    assert plain == seeded and shares and set(shares) == {0.0}


def test_each_train_decoder_flag_sets_its_config_field(monkeypatch):
    """`diffill train decoder` builds its config from the flags by name: every flag reaches its field."""
    from diffill.lsp import cli
    from diffill.training import decoder

    seen = []
    monkeypatch.setattr(decoder, "train", lambda cfg, log: seen.append(cfg))
    flags = {"--rank": "8", "--anchors": "9", "--heldout-anchors": "7", "--batch": "4", "--lr": "0.01",
             "--minutes": "3", "--alone-share": "0.4", "--first-share": "0.3", "--kl-weight": "0.5",
             "--partial-share": "0.2", "--threads": "1", "--corpus": "c", "--init": "i", "--out": "o",
             "--device": "meta", "--workers": "3", "--label-minutes": "1.5"}  # fmt: skip
    cli.main(["train", "decoder", *[x for kv in flags.items() for x in kv]])
    (cfg,) = seen
    for flag, value in flags.items():
        got = getattr(cfg, flag[2:].replace("-", "_"))
        assert got == type(got)(value), flag
    assert cfg.gamma == DecoderTrainConfig().gamma  # a field no flag sets keeps its default


def test_labelling_processes_write_the_anchors_this_process_writes(tmp_path):
    """`--workers`: the cursors are drawn here and labelled by processes loading the init's model each; the
    anchors are the same, in the same order, as labelling here gives; a deadline stops the labelling early."""
    from diffill.training.decoder import labeller, write_labels

    make_corpus(tmp_path / "corpus")
    init = _folder(tmp_path)
    net = load_model(init, dtype=torch.float32)
    vocabulary = Vocabulary(CodeTokenizer.from_file(init / "tokenizer.json"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each labelling process runs (a greedy label must not hang on a reduction's order)
    try:
        got = {}
        for workers in (0, 2):
            cfg = DecoderTrainConfig(init=str(init), workers=workers)
            with labeller(net, vocabulary, cfg) as label_all:
                got[workers] = write_labels(label_all, tmp_path / "corpus" / "train.jsonl",
                                            tmp_path / f"labels-{workers}.jsonl", 10, cfg, 0, lambda line: None)  # fmt: skip
        with labeller(net, vocabulary, cfg) as label_all:
            late = write_labels(label_all, tmp_path / "corpus" / "train.jsonl", tmp_path / "late.jsonl", 10, cfg,
                                0, lambda line: None, deadline=0.0)  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    assert len(got[0]) == 10 and got[2] == got[0] and len({tuple(a.prompt) for a in got[0]}) > 1
    assert (tmp_path / "labels-2.jsonl").read_text() == (tmp_path / "labels-0.jsonl").read_text()
    assert late == [] and read_labels(tmp_path / "late.jsonl") == []


def test_batched_encoding_keeps_what_each_anchor_encoded_alone_keeps(monkeypatch):
    """`encode_all` pads anchors of about the same length into one causal pass: each keeps the keys/values and
    beliefs it has alone (the pads after it unseen), whatever group it falls in."""
    from diffill.training import decoder

    torch.manual_seed(0)
    net = random_net(tiny_config(sliding_window=4))
    anchors = [Anchor([2, *range(10, 10 + n)], [30, 31, 32, END][:m], "line", 15)
               for n, m in ((9, 3), (3, 2), (6, 1), (12, 4), (4, 2))]  # fmt: skip
    alone = [decoder.encoded(net, a) for a in anchors]
    sizes, encode = [], net.encode
    monkeypatch.setattr(net, "encode", lambda ids, cache: sizes.append(ids.shape[0]) or encode(ids, cache))
    monkeypatch.setattr(decoder.encodings, "ENCODE_TOKENS", 24)  # groups of two or three rows
    both = decoder.encode_all(net, anchors)
    assert max(sizes) > 1 and sum(sizes) == len(anchors)
    for a, (kv, (ids, logp)), (kv1, (ids1, logp1)) in zip(anchors, both, alone, strict=True):
        assert len(kv) == len(kv1) and ids.shape == (len(a.label), decoder.SOFT_TOP)
        for (k, v), (k1, v1) in zip(kv, kv1, strict=True):
            assert k.shape == k1.shape == (1, k.shape[1], len(a.prompt) + len(a.label) - 1, k.shape[3])
            assert torch.allclose(k.float(), k1.float(), atol=2e-2) and torch.allclose(v.float(), v1.float(), atol=2e-2)
        assert torch.equal(ids, ids1) and torch.allclose(logp, logp1, atol=1e-4)


def test_the_gpu_decoder_training_script_runs_unattended_and_leaves_a_loadable_model(tmp_path):
    """bench/train_decoder_gpu.sh (the decoder's training at a larger scale on a GPU) on CPU at a tiny scale, as on the
    GPU machine: labelling processes, training, the reports, and the model folder back as a tar in parts."""
    import os
    import subprocess
    import sys
    import tarfile
    from pathlib import Path

    make_corpus(tmp_path / "corpus")
    init = _folder(tmp_path)
    script = Path(__file__).resolve().parents[2] / "bench" / "train_decoder_gpu.sh"
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), CORPUS=str(tmp_path / "corpus"), INIT=str(init), RUN=str(tmp_path / "run"))
    env.update(DEVICE="cpu", WORKERS="2", ANCHORS="8", HELD="4", BATCH="2", RANK="4", SPLIT_MB="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(["bash", str(script), "0.02"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "held out at the end" in (out / "decoder.log").read_text()
    state = json.loads((out / "state.json").read_text())
    assert state["step"] > 0 and {"first_accepted_1", "alone_whole_2"} <= set(state["reports"][-1])
    assert len(read_labels(tmp_path / "run" / "labels-train.jsonl")) == 8
    parts = sorted(out.glob("model.tar.part-*"))
    assert parts and all(p.stat().st_size <= 2**20 for p in parts)
    (tmp_path / "whole.tar").write_bytes(b"".join(p.read_bytes() for p in parts))
    with tarfile.open(tmp_path / "whole.tar") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    back = load_model(tmp_path / "back" / "model", dtype=torch.float32)
    plain = load_model(init, dtype=torch.float32)
    ids = torch.tensor([[2, 5, 6, 7]])
    assert back.config.decoder_adapter_rank == 4
    assert torch.equal(back.head(back.encode(ids, back.new_cache())), plain.head(plain.encode(ids, plain.new_cache())))
