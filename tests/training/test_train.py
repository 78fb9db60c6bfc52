"""The trainer learns (losses fall on a small corpus), checkpoints are safetensors and resume, export loads."""

import json
from pathlib import Path

import pytest
import torch
from tiny import TINY

from diffill.model import DiffusionModel
from diffill.training.config import TrainConfig
from diffill.training.export import export
from diffill.training.train import train

# The tiny shape of the other tests with a vocabulary set by the trained tokenizer and room for 48-token prompts.
SMALL = {**TINY, "vocab_size": 0, "intermediate_size": 64, "sliding_window": 32, "max_position_embeddings": 512,
         "layer_types": ["sliding_attention", "full_attention"]}  # fmt: skip
SMALL.pop("canvas_length")


def small_run(tmp_path, out: str, **overrides) -> TrainConfig:
    """A training configuration small enough for a test: 48-token prompts, 8-token canvases, one thread."""
    base = dict(corpus=str(tmp_path / "corpus"), out=str(tmp_path / out), prompt_len=48, max_suffix=8, canvas=8,
                batch=2, warmup=2, log_every=1000, save_every_s=1e9, threads=1)  # fmt: skip
    return TrainConfig(**{**base, **overrides})


SOURCE = """import os


def walk(root):
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isdir(path):
            yield from walk(path)
        else:
            yield path


class Counter:
    def __init__(self):
        self.count = 0

    def add(self, n):
        self.count += n
        return self.count
"""


def make_corpus(folder):
    folder.mkdir()
    for split in ("train", "heldout"):
        with open(folder / f"{split}.jsonl", "w") as fh:
            for i in range(6):
                fh.write(json.dumps({"path": f"f{i}.py", "text": SOURCE.replace("walk", f"walk{i}")}) + "\n")
    (folder / "sources.json").write_text(json.dumps({"sources": [], "summary": {}}))


def test_losses_fall_resume_and_export(tmp_path):
    torch.manual_seed(0)
    make_corpus(tmp_path / "corpus")
    cfg = small_run(tmp_path, "run", batch=4, lr=3e-3, warmup=5, total_steps=60, log_every=10)
    logs = []
    state = train(cfg, SMALL, log=logs.append)
    rows = [json.loads(line) for line in logs if line.startswith('{"step"')]
    assert rows[-1]["ar"] < rows[0]["ar"] - 1.0
    assert rows[-1]["diffusion"] < rows[0]["diffusion"] - 1.0
    assert state["step"] == 60
    ckpt = tmp_path / "run" / "checkpoint"
    assert (ckpt / "optimizer.safetensors").exists() and not list(ckpt.rglob("*.pt"))
    # Resume: the step count continues from the checkpoint, with the optimizer state.
    cfg.total_steps = 70
    logs2 = []
    state2 = train(cfg, SMALL, log=logs2.append)
    assert any("resumed at step 60" in line for line in logs2)
    assert state2["step"] == 70
    # The state says what the latest run used (the daemon reads it) and keeps the earlier settings.
    assert state2["config"]["total_steps"] == 70
    assert state2["runs"] == [{"from_step": 60, "config": {**state2["config"], "total_steps": 60}}]
    card = {
        "diffill_min_confidence": 0.25,
        "diffill_span_min_confidence": 0.5,
        "diffill_draft_margin": 0.6,
        "diffill_draft_candidates": 3,
        "diffill_speculative": True,
    }
    export(tmp_path / "run", tmp_path / "weights", sampler=card)
    model = DiffusionModel.from_pretrained(tmp_path / "weights", dtype="float32")
    assert model.sampler.draft_margin == 0.6  # the card's keep-the-draft margin reaches the sampler
    assert (tmp_path / "weights" / "tokenizer.json").exists() and (tmp_path / "weights" / "DATA.md").exists()
    assert model.sampler.max_denoising_steps == 8
    assert len(model.generate([2, 5, 6], max_new_tokens=8, seed=0, trim=False)) == 8
    from diffill.model import runtime

    assert runtime.load(str(tmp_path / "weights"), "cpu").memory is None  # no memory beside these weights
    from diffill.model.corpus_memory import FILE_NAME
    from diffill.training.memory import save_memory

    save_memory(tmp_path / "weights" / FILE_NAME, [[5, 6, 7, 8, 9]] * 2)
    data_card = tmp_path / "weights" / "DATA.md"
    data_card.write_text(data_card.read_text() + "\n## Corpus memory\n\n| p3 | MIT | 9 |\n")
    export(tmp_path / "run", tmp_path / "weights", sampler=card)  # a new export keeps the memory's section
    assert data_card.read_text().count("## Corpus memory") == 1 and "| p3 | MIT | 9 |" in data_card.read_text()
    loaded = runtime.load(str(tmp_path / "weights"), "cpu")
    assert (loaded.card.min_confidence, loaded.card.span_min_confidence, loaded.card.draft_candidates) == (0.25, 0.5, 3)
    assert loaded.memory is not None and loaded.memory.continuations([5, 6, 7, 8])[1].tolist() == [9]
    from diffill.infill.options import EngineOptions

    options = EngineOptions.from_card(loaded.card, steps=2)  # what the daemon, eval and complete run with
    assert (options.rank.min_confidence, options.rank.span_min_confidence) == (0.25, 0.5)
    assert (options.drafts.draft_candidates, options.drafts.steps) == (3, 2)
    assert loaded.card.speculative and options.drafts.decoder_drafts
    assert json.loads((tmp_path / "weights" / "training.json").read_text())["config"]["total_steps"] == 70


def test_minutes_limit_counts_across_checkpoint_saves(tmp_path):
    make_corpus(tmp_path / "corpus")
    cfg = small_run(tmp_path, "run", total_steps=100_000, save_every_s=0.0, max_minutes=0.05)
    state = train(cfg, SMALL, log=lambda line: None)
    assert 0 < state["step"] < 100_000 and state["seconds"] < 30


def test_training_can_start_from_exported_weights(tmp_path):
    make_corpus(tmp_path / "corpus")
    base = small_run(tmp_path, "a", total_steps=20)
    train(base, SMALL, log=lambda line: None)
    export(tmp_path / "a", tmp_path / "w")
    start = DiffusionModel.from_pretrained(tmp_path / "w", dtype="float32").net.embed_tokens.weight.clone()
    logs = []
    cont = small_run(tmp_path, "b", init=str(tmp_path / "w"), total_steps=3)
    train(cont, SMALL, log=logs.append)
    assert any("initialised from" in line for line in logs)
    after = DiffusionModel.from_pretrained(tmp_path / "b" / "checkpoint" / "model").net.embed_tokens.weight
    # Three Adam steps at lr <= 3e-3 move each weight by about 0.01 at most; a fresh init is far further away.
    assert (after - start).abs().max() < 0.02
    from diffill.model import DiffusionGemma
    from diffill.training.train import init_weights

    fresh = DiffusionGemma(DiffusionModel.from_pretrained(tmp_path / "w").config)
    init_weights(fresh, 123)
    assert (fresh.embed_tokens.weight - start).abs().max() > 0.05
    assert (tmp_path / "b" / "tokenizer.json").read_bytes() == (tmp_path / "w" / "tokenizer.json").read_bytes()
    # The exported card tells what the starting weights had been through, not only the last run's steps.
    export(tmp_path / "b", tmp_path / "w2")
    record = json.loads((tmp_path / "w2" / "training.json").read_text())
    assert record["step"] == 3 and record["init"]["step"] == 20
    assert "Training: 3 steps" in (card := (tmp_path / "w2" / "DATA.md").read_text()) and "on top of 20 steps" in card


@pytest.mark.parametrize("workers", [0, 1])
def test_a_signal_stops_training_with_a_checkpoint(tmp_path, workers):
    """SIGTERM to the trainer, or Ctrl-C (SIGINT to the whole process group, batch workers too) during `diffill
    train run`: the current step ends, a checkpoint is written, the workers end with it and the run exits."""
    import os
    import signal
    import subprocess
    import sys
    import time

    make_corpus(tmp_path / "corpus")
    here, tmp = str(Path(__file__).parent), str(tmp_path)
    script = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "from test_train import SMALL, small_run\n"
        "from diffill.training.train import train\n"
        "from pathlib import Path\n"
        f"cfg = small_run(Path({tmp!r}), 'run', total_steps=1_000_000, workers={workers})\n"
        "train(cfg, SMALL, log=lambda l: print(l, flush=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    time.sleep(8)
    if workers:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    else:
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "stop requested" in out
    state = json.loads((tmp_path / "run" / "checkpoint" / "state.json").read_text())
    assert 0 < state["step"] < 1_000_000


def test_ar_objective_pretrains_on_plain_windows(tmp_path):
    """`--objective ar`: next-token loss only on windows of code (no canvas); a later FIM run resumes from it."""
    import random

    from diffill.model.tokenizer import CodeTokenizer
    from diffill.training.data import Corpus, ar_batches

    make_corpus(tmp_path / "corpus")
    tok = CodeTokenizer.train([SOURCE] * 20, vocab_size=300)
    batch, canvas, _ = next(ar_batches(Corpus(tmp_path / "corpus" / "train.jsonl"), tok,
                                    small_run(tmp_path, "x", prompt_len=32, batch=3), random.Random(0)))  # fmt: skip
    assert canvas is None and batch.shape == (3, 33) and (batch != 0).all()  # no padding
    logs = []
    cfg = small_run(tmp_path, "run", objective="ar", batch=4, lr=3e-3, warmup=5, total_steps=40, log_every=10)
    state = train(cfg, SMALL, log=logs.append)
    rows = [json.loads(line) for line in logs if line.startswith('{"step"')]
    assert rows[-1]["ar"] < rows[0]["ar"] - 1.0 and all(r["diffusion"] == 0 for r in rows)
    assert state["step"] == 40
    cfg.objective, cfg.total_steps = "fim", 45
    state = train(cfg, SMALL, log=logs.append)
    assert state["step"] == 45 and state["runs"][-1]["config"]["objective"] == "ar"


def test_ar_loss_runs_through_the_middle_and_leaves_the_cache_at_the_prompt():
    """The encoder's next-token loss continues from the prompt into the middle and its EOS (so the AR draft
    learns where a span ends); pads are not targets; the decoder's cache holds the prompt only."""
    import torch.nn.functional as F
    from tiny import random_net, tiny_config

    from diffill.model.fim import EOS, PAD
    from diffill.training.train import next_token_loss

    net = random_net(tiny_config(sliding_window=64), seed=3)
    prompt = torch.tensor([[PAD, PAD, 5, 6, 7, 8, 9, 10]])
    canvas = torch.tensor([[11, 12, EOS, PAD]])
    cache = net.new_cache()
    hidden = net.encode(prompt, cache)
    loss = next_token_loss(net, prompt, hidden, cache, canvas)
    assert cache.length == prompt.shape[1]

    whole = torch.cat([prompt, canvas[:, :-1]], dim=1)  # one causal pass over prompt + middle: the same loss
    logits = net.head(net.encode(whole, net.new_cache()))[0]
    targets = torch.cat([prompt[0, 1:], canvas[0]])
    keep = targets != PAD
    expected = F.cross_entropy(logits[keep], targets[keep])
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-5)
    assert int(keep.sum()) == 6 + 3  # 5..10 from the prompt, then 11, 12 and EOS


@pytest.mark.parametrize("workers", [0, 1])
def test_pretraining_on_files_too_short_for_a_window_fails_clearly(tmp_path, workers):
    """`--objective ar` wants windows of prompt_len + 1 tokens: a corpus with no file that long is an error, not a
    loop that never ends (nor a hang on batch workers left running)."""
    make_corpus(tmp_path / "corpus")
    cfg = small_run(tmp_path, "run", objective="ar", prompt_len=4096, total_steps=2, workers=workers)
    with pytest.raises(ValueError, match="no window of 4097 tokens"):
        train(cfg, SMALL, log=lambda line: None)


def test_the_gpu_training_script_runs_unattended_and_leaves_loadable_weights(tmp_path):
    """bench/train_gpu.sh (the unattended GPU training run) on CPU at a tiny scale, as on the GPU machine: the corpus
    a packed (xz) sample, pre-training, then FIM, then an export with the shipped card that comes back as a tar in
    parts no larger than asked (the device tool returns files of at most 16 MiB)."""
    import os
    import subprocess
    import sys
    import tarfile

    from diffill.training.corpus import iter_docs, pack

    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "heldout"):
        rows = [{"path": f"p{i}/f{i}.py", "text": SOURCE.replace("walk", f"walk{i}") * 40} for i in range(6)]
        (raw / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (raw / "sources.json").write_text(json.dumps({"sources": [], "summary": {}}))
    corpus = tmp_path / "corpus"
    report = pack(raw, corpus, megabytes=1.0)
    assert report["train"]["docs"] == 6 and not (corpus / "train.jsonl").exists()
    assert sorted(d["path"] for d in iter_docs(corpus / "train.jsonl")) == [f"p{i}/f{i}.py" for i in range(6)]
    script = Path(__file__).resolve().parents[2] / "bench" / "train_gpu.sh"
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), CORPUS=str(corpus), RUN=str(tmp_path / "run"), DEVICE="cpu", SPLIT_MB="8")
    env.update(BATCH="2", WORKERS="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", str(script), "0.02"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "heldout_ar" in (out / "train.log").read_text()
    parts = sorted(out.glob("weights.tar.part-*"))
    assert len(parts) >= 2 and all(p.stat().st_size <= 8 * 2**20 for p in parts) and not (out / "weights").exists()
    (tmp_path / "whole.tar").write_bytes(b"".join(p.read_bytes() for p in parts))
    with tarfile.open(tmp_path / "whole.tar") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    weights = tmp_path / "back" / "weights"
    from diffill.model import runtime

    loaded = runtime.load(str(weights), "cpu")
    assert (loaded.card.min_confidence, loaded.card.span_min_confidence, loaded.card.draft_candidates) == (0.5, 0.37, 6)
    record = json.loads((weights / "training.json").read_text())
    assert record["config"]["objective"] == "fim" and record["runs"][0]["config"]["objective"] == "ar"
    shape = json.loads((weights / "config.json").read_text())["text_config"]
    assert (shape["num_experts"], shape["top_k_experts"], shape["hidden_size"]) == (16, 2, 256)  # moe16


def test_size_shapes_a_fresh_model_and_a_resumed_run_keeps_the_checkpoints_shape(tmp_path):
    from diffill.model.presets import PRESETS, preset
    from diffill.training.cli import MODEL_SIZES

    assert set(MODEL_SIZES) == set(PRESETS)  # the command line offers exactly the shapes there are
    with pytest.raises(ValueError, match="unknown model size"):
        preset("huge")
    make_corpus(tmp_path / "corpus")
    train(small_run(tmp_path, "run", total_steps=2, size="tiny", vocab_size=300), log=lambda line: None)
    saved = json.loads((tmp_path / "run" / "checkpoint" / "model" / "config.json").read_text())["text_config"]
    assert (saved["hidden_size"], saved["num_experts"]) == (PRESETS["tiny"]["hidden_size"], 4)
    # The FIM phase after pre-training names no size (or another): the checkpoint's shape is kept.
    logs = []
    state = train(small_run(tmp_path, "run", total_steps=4, size="moe16", vocab_size=300), log=logs.append)
    assert state["step"] == 4 and any("resumed at step 2" in line for line in logs)
    again = json.loads((tmp_path / "run" / "checkpoint" / "model" / "config.json").read_text())["text_config"]
    assert again["num_experts"] == 4
    assert state["config"]["size"] == "tiny"  # the recorded size is the checkpoint's, not this run's flag


def test_worker_processes_build_the_batches(tmp_path):
    """A GPU run builds batches in worker processes: each worker draws its own examples, and training runs on them
    and stops cleanly (workers ended) at the step limit."""
    from diffill.training.data import Corpus, batch_stream, batches
    from diffill.training.train import ensure_tokenizer

    make_corpus(tmp_path / "corpus")
    cfg = small_run(tmp_path, "run", total_steps=4, workers=2, vocab_size=300)
    corpus = Corpus(tmp_path / "corpus" / "train.jsonl")
    tok = ensure_tokenizer(cfg, corpus.texts)
    stream = batch_stream(batches, corpus, tok, cfg, seed=7)
    first, second = next(stream), next(stream)  # one from each worker, in turn
    assert first[0].shape == (2, 48) and not torch.equal(first[0], second[0])
    in_process = next(batch_stream(batches, corpus, tok, small_run(tmp_path, "run", vocab_size=300), seed=7))
    assert torch.equal(in_process[0], first[0])  # worker 0 draws what the in-process stream draws
    del stream
    # A stream left open when Python exits must not hold the exit up (its workers are ended with SIGTERM).
    script = (
        "from pathlib import Path\n"
        "from diffill.training.config import TrainConfig\n"
        "from diffill.training.data import Corpus, batch_stream, batches\n"
        "from diffill.training.train import ensure_tokenizer\n"
        f"cfg = TrainConfig(corpus={cfg.corpus!r}, out={cfg.out!r}, prompt_len=48, max_suffix=8, canvas=8, batch=2,"
        " workers=2)\n"
        "corpus = Corpus(Path(cfg.corpus) / 'train.jsonl')\n"
        "stream = batch_stream(batches, corpus, ensure_tokenizer(cfg, corpus.texts), cfg, seed=1)\n"
        "next(stream)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    state = train(cfg, SMALL, log=lambda line: None)
    assert state["step"] == 4 and all(torch.isfinite(torch.tensor(h["heldout_ar"])) for h in state["history"])


def test_anneal_by_time_ends_a_time_cut_run_at_the_floor():
    """With --anneal-by-time the cosine follows the run's minutes when they end before total_steps; without it (and
    without --minutes) the schedule is the step-based one."""
    from diffill.training.train import lr_at

    steps = TrainConfig(lr=1e-3, warmup=10, total_steps=10_000, min_lr_frac=0.1)
    timed = TrainConfig(lr=1e-3, warmup=10, total_steps=10_000, min_lr_frac=0.1, max_minutes=5, anneal_by_time=True)
    assert lr_at(100, timed, 0.0) == pytest.approx(lr_at(100, steps))
    assert lr_at(100, timed, 1.0) == pytest.approx(1e-4)
    assert lr_at(100, steps, 1.0) == pytest.approx(lr_at(100, steps, 0.0))
    assert lr_at(100, steps, 1.0) > 9e-4
    assert lr_at(100, timed, 0.5) < lr_at(100, timed, 0.25) < lr_at(100, timed, 0.0)
    assert lr_at(5, timed, 0.9) == pytest.approx(6e-4)  # warm-up first, whatever the clock says
