"""The trainer learns (losses fall on a small corpus), checkpoints are safetensors and resume, export loads."""

import json

import torch

from diffill.model import DiffusionModel
from diffill.model.train import TrainConfig, export, train

SMALL = dict(
    vocab_size=0,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    global_head_dim=16,
    num_global_key_value_heads=1,
    num_experts=4,
    top_k_experts=2,
    moe_intermediate_size=16,
    sliding_window=32,
    max_position_embeddings=512,
    layer_types=["sliding_attention", "full_attention"],
)

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
    cfg = TrainConfig(
        corpus=str(tmp_path / "corpus"),
        out=str(tmp_path / "run"),
        prompt_len=48,
        max_suffix=8,
        canvas=8,
        batch=4,
        lr=3e-3,
        warmup=5,
        total_steps=60,
        log_every=10,
        save_every_s=1e9,
        threads=1,
    )
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
    export(tmp_path / "run", tmp_path / "weights")
    model = DiffusionModel.from_pretrained(tmp_path / "weights", dtype="float32")
    assert (tmp_path / "weights" / "tokenizer.json").exists() and (tmp_path / "weights" / "DATA.md").exists()
    assert model.sampler.max_denoising_steps == 8
    assert len(model.generate([2, 5, 6], max_new_tokens=8, seed=0, trim=False)) == 8


def test_minutes_limit_counts_across_checkpoint_saves(tmp_path):
    make_corpus(tmp_path / "corpus")
    cfg = TrainConfig(corpus=str(tmp_path / "corpus"), out=str(tmp_path / "run"), prompt_len=48, max_suffix=8,
                      canvas=8, batch=2, warmup=2, total_steps=100_000, log_every=1000, save_every_s=0.0,
                      max_minutes=0.05, threads=1)
    state = train(cfg, SMALL, log=lambda line: None)
    assert 0 < state["step"] < 100_000 and state["seconds"] < 30
