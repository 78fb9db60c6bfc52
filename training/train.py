"""Training the embedded code model: next-token loss on the causal encoder plus the canvas diffusion loss.

Measured on this project's machines (../shared/reference/embedded_training.md): a small model trained only on
the diffusion objective learns nothing usable on CPU budgets, while the same network trained autoregressively
learns code quickly. DiffusionGemma's encoder is causal anyway, so every step trains both:

- AR loss: the encoder's hidden states through the tied head predict the next prompt token;
- diffusion loss: the canvas (middle, EOS, pads) has each token replaced by a uniformly random id with
  probability t ~ U(0, 1); the decoder, reading the encoder's cache, predicts the clean canvas. On half the
  steps the decoder also gets self-conditioning from a first, gradient-free pass (tempered like the sampler's).

Checkpoints are safetensors (weights, optimizer moments) plus a JSON state: resumable, never pickled.
"""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from diffill.model.config import DiffusionGemmaConfig
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.loader import load_model, save_model
from diffill.model.presets import preset
from diffill.model.tokenizer import EOS, PAD, CodeTokenizer

from .config import INIT_TRAINING, TrainConfig
from .data import Corpus, ar_batches, batch_stream, batches


# ----- model -----
def init_weights(net: DiffusionGemma, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    depth_scale = 1 / math.sqrt(2 * net.config.num_hidden_layers)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if p.ndim >= 2:
                std = 0.02 * (depth_scale if name.endswith(("o_proj.weight", "down_proj.weight", "down_proj")) else 1)
                p.copy_(torch.randn(p.shape, generator=g) * std)


def next_token_loss(
    net: DiffusionGemma, prompt: torch.Tensor, hidden: torch.Tensor, cache, canvas: torch.Tensor | None = None
) -> torch.Tensor:
    """The encoder's next-token loss over the prompt and, with a canvas, on through the middle and its EOS, as
    FIM-trained code LMs see a file: the head learns to continue into the span and to end it, which the AR draft
    (infill.engine) relies on to stop. The middle's keys/values are cut from `cache` after, so the canvas decoder
    sees the prompt only. Pads are not targets."""
    states, targets = hidden[:, :-1], prompt[:, 1:]
    if canvas is not None:
        length = cache.length
        middle_hidden = net.encode(canvas[:, :-1], cache)
        cache.truncate(length)
        states, targets = torch.cat([hidden, middle_hidden], dim=1), torch.cat([targets, canvas], dim=1)
    logits = net.head(states)
    targets = targets.masked_fill(targets == PAD, -100)
    return F.cross_entropy(logits.reshape(-1, net.config.vocab_size), targets.reshape(-1), ignore_index=-100)


def losses(
    net: DiffusionGemma,
    prompt: torch.Tensor,
    canvas: torch.Tensor | None,
    cfg: TrainConfig,
    gen: torch.Generator,
    split: torch.Tensor | None = None,
):
    """(next-token loss, canvas loss) of a batch. `split` [B] marks canvases whose first token is known (the
    last committed token of a speculative draft): it is held clean and not a target."""
    vocab = net.config.vocab_size
    if canvas is not None and cfg.distill_prob:
        targets = distilled(net, prompt, canvas, split, cfg.distill_prob, gen)  # before this step's graph
    else:
        targets = canvas
    cache = net.new_cache()
    hidden = net.encode(prompt, cache)
    ar = next_token_loss(net, prompt, hidden, cache, canvas)
    if canvas is None:  # the "ar" objective: no canvas
        return ar, torch.zeros((), device=prompt.device)
    b, c = canvas.shape

    dev = canvas.device  # random draws come from the CPU generator (reproducible on any device), then move
    t = torch.rand(b, 1, generator=gen).to(dev)
    if cfg.full_noise_prob:
        t = torch.where(torch.rand(b, 1, generator=gen).to(dev) < cfg.full_noise_prob, 1.0, t)
    noise = torch.randint(0, vocab, (b, c), generator=gen).to(dev)
    noised = torch.rand(b, c, generator=gen).to(dev) < t
    known = torch.zeros(b, c, dtype=torch.bool, device=dev)
    if split is not None:
        known[:, 0] = split.to(dev)
    noisy = torch.where(noised & ~known, noise, targets)
    prev = None
    if torch.rand((), generator=gen).item() < cfg.self_cond_prob:
        with torch.no_grad():
            temp = 0.4 + 0.4 * torch.rand((), generator=gen).item()
            prev = net.decode(noisy, cache) / temp
    logits = net.decode(noisy, cache, prev)
    # Pads after the EOS are easy and numerous: left at full weight they teach "EOS at once" (measured: the
    # first model answered ':' then EOS to everything). They count at pad_weight; the middle and EOS at 1.
    per_token = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), reduction="none")
    weights = torch.where(targets.reshape(-1) == PAD, cfg.pad_weight, 1.0).masked_fill(known.reshape(-1), 0.0)
    diff = (per_token * weights).sum() / weights.sum()
    return ar, diff


@torch.no_grad()
def distilled(
    net: DiffusionGemma,
    prompt: torch.Tensor,
    canvas: torch.Tensor,
    split: torch.Tensor | None,
    share: float,
    gen: torch.Generator,
) -> torch.Tensor:
    """`canvas` with a `share` of its rows replaced by the encoder's own greedy answer after the prompt (a split
    row keeps its known first token and continues from it), EOS then pads after the first EOS: what the
    encoder will accept from a draft. One batched encoder step per canvas position."""
    b, c = canvas.shape
    dev = canvas.device
    chosen = (torch.rand(b, generator=gen) < share).to(dev)
    if not bool(chosen.any()):
        return canvas
    was_training = net.training
    net.eval()
    cache = net.new_cache()
    last = net.encode(prompt, cache)[:, -1:]
    known = split.to(dev) if split is not None else torch.zeros(b, dtype=torch.bool, device=dev)
    out, ended = [], torch.zeros(b, dtype=torch.bool, device=dev)
    for i in range(c):
        token = net.head(last[:, -1]).argmax(-1)
        if i == 0:
            token = torch.where(known, canvas[:, 0], token)
        token = torch.where(ended, PAD, token)
        out.append(token)
        ended |= token == EOS
        if i + 1 < c:
            last = net.encode(token[:, None], cache)
    net.train(was_training)
    return torch.where(chosen[:, None], torch.stack(out, dim=1), canvas)


# ----- checkpoints (safetensors + json, never pickle) -----
def save_moments(path: Path, opt: torch.optim.Optimizer, params: dict[str, torch.nn.Parameter]) -> None:
    """The Adam moments of the named parameters that have them, as one safetensors file."""
    moments = {}
    for name, p in params.items():
        st = opt.state.get(p)
        if st:
            moments[f"{name}::exp_avg"] = st["exp_avg"].contiguous()
            moments[f"{name}::exp_avg_sq"] = st["exp_avg_sq"].contiguous()
    save_file(moments, str(path))


def load_moments(path: Path, opt: torch.optim.Optimizer, params: dict[str, torch.nn.Parameter], step: int) -> None:
    """`save_moments`' file back into `opt`'s state, at optimizer step `step`."""
    moments = load_file(str(path))
    for name, p in params.items():
        if f"{name}::exp_avg" in moments:
            opt.state[p] = {
                "step": torch.tensor(float(step)),
                "exp_avg": moments[f"{name}::exp_avg"].to(p.device),  # safetensors loads onto the CPU
                "exp_avg_sq": moments[f"{name}::exp_avg_sq"].to(p.device),
            }


def write_state(out: Path, state: dict) -> None:
    """The run's JSON state, replaced whole (a stop mid-write leaves the last one)."""
    tmp = out / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(out / "state.json")


def save_checkpoint(out: Path, net: DiffusionGemma, opt: torch.optim.Optimizer, state: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    save_model(net, out / "model")
    save_moments(out / "optimizer.safetensors", opt, dict(net.named_parameters()))
    write_state(out, state)


def load_checkpoint(out: Path, net: DiffusionGemma, opt: torch.optim.Optimizer) -> dict:
    weights = load_file(str(out / "model" / "model.safetensors"))
    own = {}
    for key, value in weights.items():
        if key.startswith("model.encoder.language_model.layers."):
            continue
        own[key.removeprefix("model.decoder.")] = value
    scalars = [
        weights[f"model.encoder.language_model.layers.{i}.layer_scalar"] for i in range(net.config.num_hidden_layers)
    ]
    own["encoder_layer_scalars"] = torch.cat(scalars)
    net.load_state_dict(own)
    state = json.loads((out / "state.json").read_text())
    load_moments(out / "optimizer.safetensors", opt, dict(net.named_parameters()), state["step"])
    return state


def lr_at(step: int, cfg: TrainConfig, time_fraction: float = 0.0) -> float:
    """Linear warm-up, then cosine decay to min_lr_frac over total_steps, or over this run's minutes when
    `anneal_by_time` (time_fraction = share of --minutes spent) brings the end sooner: a run cut by time ends
    annealed instead of at its peak rate. A resumed run with `anneal_by_time` starts its decay where the step
    schedule stands (near the peak early in total_steps) and ends it with its own minutes."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.total_steps - cfg.warmup))
    if cfg.anneal_by_time and cfg.max_minutes:
        progress = max(progress, min(1.0, time_fraction))
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def ensure_tokenizer(cfg: TrainConfig, texts: list[str]) -> CodeTokenizer:
    path = Path(cfg.tokenizer or Path(cfg.out) / "tokenizer.json")
    if not path.exists() and cfg.init and (Path(cfg.init) / "tokenizer.json").exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((Path(cfg.init) / "tokenizer.json").read_bytes())  # same ids as the weights
    if path.exists():
        return CodeTokenizer.from_file(path)
    rng = random.Random(cfg.seed)
    sample = rng.sample(texts, min(len(texts), 3000))
    tok = CodeTokenizer.train(sample, vocab_size=cfg.vocab_size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(path)
    return tok


def train(cfg: TrainConfig, model_config: dict | None = None, log=print) -> dict:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if cfg.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
    out = Path(cfg.out)
    corpus = Corpus(Path(cfg.corpus) / "train.jsonl")
    heldout = Corpus(Path(cfg.corpus) / "heldout.jsonl")
    texts = corpus.texts
    tok = ensure_tokenizer(cfg, texts)
    ckpt = out / "checkpoint"
    resuming = (ckpt / "state.json").exists()
    if resuming:
        # The checkpoint's own shape wins, so a later phase (FIM after AR) need not repeat --size.
        net = DiffusionGemma(DiffusionGemmaConfig.from_file(ckpt / "model" / "config.json")).to(cfg.device)
    elif cfg.init:
        # Continue from shipped weights (bf16 on disk, trained in fp32); the model's own config wins.
        net = load_model(Path(cfg.init), device=cfg.device, dtype=torch.float32)
        for p in net.parameters():
            p.requires_grad_(True)
        log(f"initialised from {cfg.init}")
        earlier = Path(cfg.init) / "training.json"
        if earlier.exists():  # what the starting weights had been through, for the exported card
            out.mkdir(parents=True, exist_ok=True)
            (out / INIT_TRAINING).write_bytes(earlier.read_bytes())
    else:
        shape = {**(model_config or preset(cfg.size)), "vocab_size": tok.vocab_size, "canvas_length": cfg.canvas}
        net = DiffusionGemma(DiffusionGemmaConfig(**shape)).to(cfg.device)
        init_weights(net, cfg.seed)
    net.train()
    decay = [p for n, p in net.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in net.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )
    state = {"step": 0, "tokens": 0, "seconds": 0.0, "history": [], "config": asdict(cfg)}
    if resuming:
        state = load_checkpoint(ckpt, net, opt)
        log(f"resumed at step {state['step']}")
        # The shape is the checkpoint's, so the recorded size is the one that made it, whatever this run says.
        cfg = replace(cfg, size=(state.get("config") or {}).get("size", cfg.size))
        # The state records the settings in force now (the daemon reads e.g. context_prob from it) and keeps
        # those of earlier runs beside the step they started at.
        if state.get("config") != asdict(cfg):
            state.setdefault("runs", []).append({"from_step": state["step"], "config": state.get("config")})
            state["config"] = asdict(cfg)
    seed = cfg.seed * 1000 + state["step"]  # a resumed run draws other examples and noise than its first part
    gen = torch.Generator().manual_seed(seed)
    make_batches = ar_batches if cfg.objective == "ar" else batches
    data = batch_stream(make_batches, corpus, tok, cfg, seed)
    eval_data = make_batches(heldout, tok, cfg, random.Random(12345))
    eval_batches = [next(eval_data) for _ in range(4)]
    t_start = time.time()  # start of the span not yet added to state["seconds"]
    run_start = t_start  # --minutes counts from here, across checkpoint saves
    last_save = time.time()
    ar_sum = diff_sum = 0.0
    n_sum = 0
    stop = _StopOnSignal()
    while state["step"] < cfg.total_steps:
        if cfg.max_minutes and time.time() - run_start > cfg.max_minutes * 60:
            break
        if stop.requested:
            log(f"stop requested (signal {stop.requested}): saving a checkpoint at step {state['step']}")
            break
        prompt, canvas, split = next(data)
        prompt = prompt.to(cfg.device, non_blocking=True)
        canvas = canvas.to(cfg.device, non_blocking=True) if canvas is not None else None
        for group in opt.param_groups:
            group["lr"] = lr_at(state["step"], cfg, (time.time() - run_start) / (60 * cfg.max_minutes or 1))
        # On CUDA: bf16 autocast (on CPU it measured slower, so fp32 there).
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cfg.device.startswith("cuda")):
            ar, diff = losses(net, prompt, canvas, cfg, gen, split)
        loss = cfg.ar_weight * ar + cfg.diffusion_weight * diff
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        state["step"] += 1
        state["tokens"] += int(prompt.numel() + (canvas.numel() if canvas is not None else 0))
        ar_sum += ar.item()
        diff_sum += diff.item()
        n_sum += 1
        if state["step"] % cfg.log_every == 0:
            elapsed = time.time() - t_start
            row = {
                "step": state["step"],
                "ar": ar_sum / n_sum,
                "diffusion": diff_sum / n_sum,
                "lr": opt.param_groups[0]["lr"],
                "tok_s": state["tokens"] / max(1e-9, state["seconds"] + elapsed),
            }
            ar_sum = diff_sum = 0.0
            n_sum = 0
            log(json.dumps(row))
        if time.time() - last_save > cfg.save_every_s:
            state["seconds"] += time.time() - t_start
            t_start = time.time()
            state["history"].append({"step": state["step"], **evaluate_loss(net, eval_batches, cfg)})
            log(json.dumps({"heldout": state["history"][-1]}))
            save_checkpoint(ckpt, net, opt, state)
            last_save = time.time()
    stop.restore()
    data = None  # ends the batch workers before the last evaluation
    state["seconds"] += time.time() - t_start
    state["history"].append({"step": state["step"], **evaluate_loss(net, eval_batches, cfg)})
    save_checkpoint(ckpt, net, opt, state)
    log(json.dumps({"final": state["history"][-1], "step": state["step"]}))
    return state


class _StopOnSignal:
    """SIGINT / SIGTERM end training after the current step, with a checkpoint (a second signal kills)."""

    def __init__(self) -> None:
        self.requested = 0
        self._previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            self.restore()
            raise KeyboardInterrupt
        self.requested = signum

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


@torch.no_grad()
def evaluate_loss(net: DiffusionGemma, eval_batches, cfg: TrainConfig) -> dict:
    was_training = net.training
    net.eval()
    gen = torch.Generator().manual_seed(0)
    ar_total = diff_total = 0.0
    for prompt, canvas, split in eval_batches:
        canvas = None if canvas is None else canvas.to(cfg.device)
        ar, diff = losses(net, prompt.to(cfg.device), canvas, cfg, gen, split)
        ar_total += ar.item()
        diff_total += diff.item()
    net.train(was_training)
    return {"heldout_ar": ar_total / len(eval_batches), "heldout_diffusion": diff_total / len(eval_batches)}
