"""`diffill train decoder`: teaches the canvas decoder to draft what its own encoder writes, on a CPU budget.

Every shared weight stays frozen; only the decoder's adapters and its self-conditioning MLP train
(model.adapters.decoder_only_parameters), so the encoder's logits cannot change. The recipe
(../shared/reference/decoder_drafting.md: DFlash's anchored blocks, sequence-level distillation, an on-policy step):

1. label (labels.py): cursors drawn in the training split as an editor has them (a line cut mid-way with its rest
   gone, or a fresh line with a few lines gone), prompted by the engine's own request builder, each labelled with
   the encoder's own greedy answer (model.speculative with no drafts: exactly what the verify pass accepts);
2. train (encodings.py, canvases.py, losses.py): canvases laid out as the speculative rounds lay them out (right
   after the prompt, or after committed tokens with the last one pinned at position 0), noised whole; a
   position-weighted cross-entropy on the labels after one decoder pass, and again after a second pass fed the
   first one's draws and self-conditioning;
3. report (losses.py) on held-out files after each stage: tokens accepted per decoder draft (1 and 2 passes),
   whole answers accepted, and the decoder alone writing the encoder's whole answer.

This module runs the three and exports the model folder.

Everything is resumable: labels are appended to JSONL files, training saves adapters and optimizer moments
(safetensors) with a JSON state. The result is a model folder (`<out>/model`) with the shipped weights untouched.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from diffill.infill.vocabulary import Vocabulary
from diffill.model.adapters import attach_decoder_adapters, decoder_only_parameters
from diffill.model.config import ADAPTER_KEY
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.loader import DECODER_PREFIX, load_model
from diffill.model.tokenizer import CodeTokenizer

from ..config import DecoderTrainConfig
from ..train import load_moments, save_moments, write_state
from .canvases import Layout, batch_inputs, batches, draw_layout, partly_noised, second_canvas, soft_targets
from .encodings import SOFT_TOP, RowsCache, encode_all, encoded, kv_home
from .labels import Anchor, label, labeller, read_labels, write_labels
from .losses import accepted_counts, draft_losses, report

__all__ = [
    "SOFT_TOP", "Anchor", "DecoderTrainConfig", "Layout", "RowsCache", "accepted_counts", "batch_inputs",
    "draft_losses", "draw_layout", "encode_all", "encoded", "export", "label", "labeller", "partly_noised",
    "read_labels", "report", "second_canvas", "soft_targets", "train", "write_labels",
]  # fmt: skip


def _save(out: Path, net, opt, state: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    params = dict(decoder_only_parameters(net))
    save_file({n: p.detach().cpu().contiguous() for n, p in params.items()}, str(out / "adapters.safetensors"))
    save_moments(out / "optimizer.safetensors", opt, params)
    write_state(out, state)


def _resume(out: Path, net, opt) -> dict | None:
    if not (out / "state.json").exists():
        return None
    state = json.loads((out / "state.json").read_text())
    params = dict(decoder_only_parameters(net))
    with torch.no_grad():
        for n, value in load_file(str(out / "adapters.safetensors")).items():
            params[n].copy_(value)
    load_moments(out / "optimizer.safetensors", opt, params, state["step"])
    return state


def export(net: DiffusionGemma, init: Path, dest: Path, extra: dict) -> Path:
    """A model folder: the `init` folder's files, its weights untouched, with the decoder's adapters and
    self-conditioning MLP in the init's dtype, the adapters' rank in its config, and the card asking for the
    decoder's drafts (diffill_speculative)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in init.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "config.json", "generation_config.json"):
            shutil.copy2(f, dest / f.name)
    tensors = load_file(str(init / "model.safetensors"))
    dtype = tensors[DECODER_PREFIX + "embed_tokens.weight"].dtype
    for n, p in decoder_only_parameters(net):
        tensors[DECODER_PREFIX + n] = p.detach().to("cpu", dtype).contiguous()
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((init / "config.json").read_text())
    config.setdefault("text_config", config)[ADAPTER_KEY] = net.config.decoder_adapter_rank
    (dest / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    card = (
        json.loads((init / "generation_config.json").read_text()) if (init / "generation_config.json").exists() else {}
    )
    card["diffill_speculative"] = True
    (dest / "generation_config.json").write_text(json.dumps(card, indent=1) + "\n")
    (dest / "decoder_training.json").write_text(json.dumps(extra, indent=1) + "\n")
    return dest


def train(cfg: DecoderTrainConfig, log: Callable[[str], None] = print) -> dict:
    """Labels, trains (up to `minutes`, resuming a stopped run), reports, exports `<out>/model`."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out, init = Path(cfg.out), Path(cfg.init)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg), indent=1))
    net = load_model(init, dtype=torch.float32)  # on the CPU while it labels
    if net.config.decoder_adapter_rank:
        raise ValueError(f"{init} has decoder adapters already: start from the plain model")
    tokenizer = CodeTokenizer.from_file(init / "tokenizer.json")
    vocabulary = Vocabulary(tokenizer)
    end = vocabulary.format.end_id
    bound = 0.1
    corpus = Path(cfg.corpus)
    t_labels = time.perf_counter()
    deadline = t_labels + cfg.label_minutes * 60 if cfg.label_minutes else None
    with labeller(net, vocabulary, cfg) as label_all:
        train_set = write_labels(label_all, corpus / "train.jsonl", out / "labels-train.jsonl", cfg.anchors, cfg,
                                 cfg.seed, log, deadline)  # fmt: skip
        held = write_labels(label_all, corpus / "heldout.jsonl", out / "labels-heldout.jsonl", cfg.heldout_anchors,
                            cfg, cfg.seed + 1, log)  # fmt: skip
    log(f"labels: {len(train_set)} train, {len(held)} held out ({time.perf_counter() - t_labels:.0f} s)")
    dev = torch.device(cfg.device)
    if dev.type == "cuda":
        torch.set_float32_matmul_precision("high")
    net.to(dev)
    home = kv_home(net, train_set + held)
    t_enc = time.perf_counter()
    encoded_train = encode_all(net, train_set, home)  # (keys/values, the encoder's beliefs) of each anchor
    encoded_held = encode_all(net, held, home)
    log(f"encoded their caches on {dev}, kept on {home} ({time.perf_counter() - t_enc:.0f} s)")

    attach_decoder_adapters(net, cfg.rank)
    for p in net.parameters():
        p.requires_grad_(False)
    params = [p for _, p in decoder_only_parameters(net)]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    state = _resume(out, net, opt) or {"step": 0, "seconds": 0.0, "reports": []}
    if not state["reports"]:
        state["reports"].append({"step": 0, **report(net, held, encoded_held, end, cfg, bound)})
        log(f"held out before training: {state['reports'][-1]}")
    rng = random.Random(cfg.seed + state["step"])
    gen = torch.Generator(dev).manual_seed(cfg.seed + state["step"])
    stream = batches(train_set, rng, cfg)
    budget = cfg.minutes * 60
    t0, last_save, last_report = time.perf_counter() - state["seconds"], time.perf_counter(), time.perf_counter()
    net.train()
    while time.perf_counter() - t0 < budget:
        frac = (time.perf_counter() - t0) / budget
        for g in opt.param_groups:  # cosine to a tenth over the run's minutes, after 50 steps of warm-up
            g["lr"] = cfg.lr * min(1.0, (state["step"] + 1) / 50) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
        inputs = batch_inputs(next(stream), train_set, encoded_train, end, gen, net.config.vocab_size, cfg)
        # the second pass self-conditions on the first's logits as the speculator passes them (untempered) or
        # as the card's sampler does (tempered 0.4-0.8)
        temp = 1.0 if rng.random() < 0.5 else 0.4 + 0.4 * rng.random()
        l1, l2, _, _ = draft_losses(net, inputs, gen, bound, temp, cfg.kl_weight)
        loss = l1 + cfg.second_weight * l2
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        state["step"] += 1
        state["seconds"] = time.perf_counter() - t0
        if state["step"] % 50 == 0:
            log(f"step {state['step']} loss {l1.item():.3f} / {l2.item():.3f} ({state['seconds']:.0f} s)")
        if time.perf_counter() - last_report > cfg.report_every_s:
            net.eval()
            state["reports"].append({"step": state["step"], **report(net, held, encoded_held, end, cfg, bound)})
            log(f"held out at step {state['step']}: {state['reports'][-1]}")
            net.train()
            last_report = time.perf_counter()
        if time.perf_counter() - last_save > cfg.save_every_s:
            _save(out, net, opt, state)
            last_save = time.perf_counter()
    net.eval()
    if state["reports"][-1]["step"] != state["step"]:
        state["reports"].append({"step": state["step"], **report(net, held, encoded_held, end, cfg, bound)})
        log(f"held out at the end (step {state['step']}): {state['reports'][-1]}")
    _save(out, net, opt, state)
    export(net, init, out / "model", {"config": asdict(cfg), **state})
    log(f"exported {out / 'model'}")
    return state
