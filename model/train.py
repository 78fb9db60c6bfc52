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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from .config import DiffusionGemmaConfig
from .corpus import iter_docs, package_of
from .diffusion_gemma import DiffusionGemma
from .fim import build_canvas, build_prompt, sample_span
from .loader import load_model, save_model
from .memory import DATA_SECTION as MEMORY_SECTION
from .memory import FILE_NAME as MEMORY_FILE
from .presets import preset
from .tokenizer import BOS, PAD, CodeTokenizer

INIT_TRAINING = "init_training.json"  # a run's copy of the training.json of the weights it started from
MAX_WINDOW_MISSES = 2000  # draws of files too short for a pre-training window before `ar_batches` gives up


@dataclass
class TrainConfig:
    corpus: str = "data/corpus"
    out: str = "runs/embedded"
    tokenizer: str = ""  # defaults to <out>/tokenizer.json, trained on first use
    prompt_len: int = 384
    max_suffix: int = 64
    canvas: int = 32
    # The daemon decodes rest-of-line spans on a shorter canvas (line_canvas_length): the bidirectional decoder
    # must see that length in training too, or its EOS/pad layout is one it never learnt.
    short_canvas: int = 16
    short_canvas_prob: float = 0.5
    batch: int = 8
    lr: float = 2e-3
    min_lr_frac: float = 0.1
    warmup: int = 200
    total_steps: int = 20_000
    weight_decay: float = 0.01
    ar_weight: float = 1.0
    diffusion_weight: float = 1.0
    self_cond_prob: float = 0.5
    pad_weight: float = 0.1
    context_prob: float = 0.5  # share of examples whose prompt carries sibling files' definitions
    context_tokens: int = 96
    # "ar": next-token loss only, on plain windows of code (no FIM layout, no padding, no canvas): the fast way
    # to teach a fresh network code before the diffusion phase ("fim"), as measured in embedded_training.md.
    objective: str = "fim"
    vocab_size: int = 4096  # of a tokenizer trained by this run
    save_every_s: float = 600.0
    log_every: int = 20
    max_minutes: float = 0.0  # 0 = until total_steps
    anneal_by_time: bool = False  # the cosine ends with max_minutes when that comes first (see lr_at)
    init: str = ""  # a model folder (e.g. model/weights) to start from when there is no checkpoint yet
    size: str = "embedded"  # the shape of a fresh model (model/presets.py); a checkpoint or --init keeps its own
    threads: int = 0
    # Processes building batches beside the training loop: FIM examples cost ~5 ms each on one core (sibling files
    # parsed for context), which starves a GPU; on 2 CPU cores the model needs both, so 0 (in-process) there.
    workers: int = 0
    seed: int = 0
    device: str = "cpu"


# ----- data -----
class Corpus:
    """Documents with their paths, grouped by folder so that examples can carry cross-file context from the
    files beside them (definitions the middle uses), as the workspace index supplies at completion time."""

    def __init__(self, path: Path, max_chunk_cache: int = 4096):
        docs = list(iter_docs(path))
        self.paths = [d["path"] for d in docs]
        self.texts = [d["text"] for d in docs]
        self.by_dir: dict[str, list[int]] = {}
        for i, p in enumerate(self.paths):
            self.by_dir.setdefault(str(Path(p).parent), []).append(i)
        # Files are drawn package by package, a package's weight growing with the square root of its file count:
        # drawn file by file, one large and repetitive package (transformers: 43 % of the files, many of them
        # near-copies of each other) dominated training and the held-out loss stalled far above the train loss.
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(self.paths):
            groups.setdefault(package_of(p), []).append(i)
        self.groups = list(groups.values())
        self.group_weights = [math.sqrt(len(g)) for g in self.groups]
        self._chunks: dict[int, list] = {}
        self.max_chunk_cache = max_chunk_cache

    def draw(self, rng: random.Random) -> int:
        """A document index: a package (weight sqrt(files)), then a file of it."""
        group = rng.choices(self.groups, weights=self.group_weights)[0]
        return group[rng.randrange(len(group))]

    def chunks(self, i: int) -> list:
        from diffill.infill.chunks import extract_chunks
        from diffill.infill.languages import language_for

        if i not in self._chunks:
            if len(self._chunks) >= self.max_chunk_cache:
                self._chunks.pop(next(iter(self._chunks)))
            try:
                found = extract_chunks(self.texts[i], language_for(None, self.paths[i]), self.paths[i])
            except Exception:  # a grammar problem must not stop training
                found = []
            self._chunks[i] = [c for c in found if c.kind == "definition"]
        return self._chunks[i]

    def context_for(self, i: int, used_text: str, rng: random.Random, max_chars: int) -> list[str]:
        """Blocks of sibling files' definitions, the ones named in `used_text` first."""
        from diffill.infill.context import format_block
        from diffill.infill.workspace import identifiers

        siblings = [j for j in self.by_dir.get(str(Path(self.paths[i]).parent), []) if j != i]
        if not siblings:
            return []
        rng.shuffle(siblings)
        wanted = set(identifiers(used_text))
        root = Path(self.paths[i]).parent
        blocks, used = [], 0
        for j in siblings[:4]:
            chunks = self.chunks(j)
            named = [c for c in chunks if c.name.lower() in wanted]
            pick = named[:4] or rng.sample(chunks, min(2, len(chunks)))
            if not pick:
                continue
            block = format_block(self.paths[j], [c.text for c in sorted(pick, key=lambda c: c.line)], root)
            if used + len(block) > max_chars:
                continue
            blocks.append(block)
            used += len(block)
        return blocks


def make_example(
    text: str,
    tok: CodeTokenizer,
    rng: random.Random,
    cfg: TrainConfig,
    corpus: Corpus | None = None,
    index: int = -1,
    canvas: int = 0,
):
    """(prompt ids padded on the left to prompt_len, canvas ids of length `canvas` (default cfg.canvas)) or None
    if no span fits."""
    canvas = canvas or cfg.canvas
    span = sample_span(text, rng)
    if span is None:
        return None
    pre_text = text[max(0, span.start - cfg.prompt_len * 8) : span.start]
    suf_text = text[span.end : span.end + cfg.max_suffix * 8]
    middle_text = text[span.start : span.end]
    middle = tok.encode(middle_text)
    if not middle or len(middle) >= canvas:
        return None
    context = []
    if corpus is not None and cfg.context_prob and rng.random() < cfg.context_prob:
        blocks = corpus.context_for(index, pre_text[-2000:] + middle_text, rng, cfg.context_tokens * 3)
        context = [tok.encode(b) for b in blocks]
    prompt = build_prompt(tok.encode(pre_text), tok.encode(suf_text), cfg.prompt_len, cfg.max_suffix, context)
    prompt = [PAD] * (cfg.prompt_len - len(prompt)) + prompt
    return prompt, build_canvas(middle, canvas)


def batches(corpus: Corpus, tok: CodeTokenizer, cfg: TrainConfig, rng: random.Random) -> Iterator:
    while True:
        prompts, canvases = [], []
        short = 0 < cfg.short_canvas < cfg.canvas and rng.random() < cfg.short_canvas_prob
        length = cfg.short_canvas if short else cfg.canvas
        while len(prompts) < cfg.batch:
            i = corpus.draw(rng)
            ex = make_example(corpus.texts[i], tok, rng, cfg, corpus, i, canvas=length)
            if ex is not None:
                prompts.append(ex[0])
                canvases.append(ex[1])
        yield torch.tensor(prompts), torch.tensor(canvases)


class _BatchSource(torch.utils.data.IterableDataset):
    """One endless stream of batches per worker process, each worker seeded apart (worker 0 as in-process)."""

    def __init__(self, make_batches, corpus: Corpus, tok: CodeTokenizer, cfg: TrainConfig, seed: int):
        self.make_batches, self.corpus, self.tok, self.cfg, self.seed = make_batches, corpus, tok, cfg, seed

    def __iter__(self) -> Iterator:
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        return self.make_batches(self.corpus, self.tok, self.cfg, random.Random(self.seed + 1_000_003 * worker))


def _quiet_worker(_: int) -> None:
    """Ctrl-C (sent to the whole process group) is left to the training loop, which saves a checkpoint and shuts
    the workers down. SIGTERM keeps its default: Python's exit terminates daemonic workers with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def batch_stream(make_batches, corpus: Corpus, tok: CodeTokenizer, cfg: TrainConfig, seed: int) -> Iterator:
    """`make_batches`' stream, built by `cfg.workers` processes when asked (torch's DataLoader: prefetching,
    pinned memory for CUDA, workers ended with the stream)."""
    source = _BatchSource(make_batches, corpus, tok, cfg, seed)
    if cfg.workers <= 0:
        return iter(source)
    loader = torch.utils.data.DataLoader(
        source,
        batch_size=None,
        num_workers=cfg.workers,
        prefetch_factor=4,
        pin_memory=cfg.device.startswith("cuda"),
        worker_init_fn=_quiet_worker,
    )
    return iter(loader)


def ar_batches(corpus: Corpus, tok: CodeTokenizer, cfg: TrainConfig, rng: random.Random) -> Iterator:
    """Plain windows of prompt_len + 1 tokens from random places in random files: (ids, None)."""
    need = cfg.prompt_len + 1
    while True:
        rows: list[list[int]] = []
        misses = 0
        while len(rows) < cfg.batch:
            if misses > MAX_WINDOW_MISSES:  # (else a corpus of short files would loop here for ever)
                raise ValueError(f"no window of {need} tokens in {misses} draws: lower --prompt-len or add files")
            text = corpus.texts[corpus.draw(rng)]
            start = rng.randrange(max(1, len(text) - need * 3))
            if start:
                nl = text.find("\n", start)
                start = nl + 1 if 0 <= nl < len(text) - 1 else start
            ids = tok.encode(text[start : start + need * 6])
            if start == 0:  # a file's start carries BOS, as in the FIM prompts
                ids = [BOS, *ids]
            if len(ids) >= need:
                rows.append(ids[:need])
            else:
                misses += 1
        yield torch.tensor(rows), None


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
    net: DiffusionGemma, prompt: torch.Tensor, canvas: torch.Tensor | None, cfg: TrainConfig, gen: torch.Generator
):
    vocab = net.config.vocab_size
    cache = net.new_cache()
    hidden = net.encode(prompt, cache)
    ar = next_token_loss(net, prompt, hidden, cache, canvas)
    if canvas is None:  # the "ar" objective: no canvas
        return ar, torch.zeros((), device=prompt.device)
    b, c = canvas.shape

    dev = canvas.device  # random draws come from the CPU generator (reproducible on any device), then move
    t = torch.rand(b, 1, generator=gen).to(dev)
    noise = torch.randint(0, vocab, (b, c), generator=gen).to(dev)
    noisy = torch.where(torch.rand(b, c, generator=gen).to(dev) < t, noise, canvas)
    prev = None
    if torch.rand((), generator=gen).item() < cfg.self_cond_prob:
        with torch.no_grad():
            temp = 0.4 + 0.4 * torch.rand((), generator=gen).item()
            prev = net.decode(noisy, cache) / temp
    logits = net.decode(noisy, cache, prev)
    # Pads after the EOS are easy and numerous: left at full weight they teach "EOS at once" (measured: the
    # first model answered ':' then EOS to everything). They count at pad_weight; the middle and EOS at 1.
    per_token = F.cross_entropy(logits.reshape(-1, vocab), canvas.reshape(-1), reduction="none")
    weights = torch.where(canvas.reshape(-1) == PAD, cfg.pad_weight, 1.0)
    diff = (per_token * weights).sum() / weights.sum()
    return ar, diff


# ----- checkpoints (safetensors + json, never pickle) -----
def save_checkpoint(out: Path, net: DiffusionGemma, opt: torch.optim.Optimizer, state: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    save_model(net, out / "model")
    names = {id(p): n for n, p in net.named_parameters()}
    moments = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                moments[f"{names[id(p)]}::exp_avg"] = st["exp_avg"].contiguous()
                moments[f"{names[id(p)]}::exp_avg_sq"] = st["exp_avg_sq"].contiguous()
    save_file(moments, str(out / "optimizer.safetensors"))
    tmp = out / "state.json.tmp"
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(out / "state.json")


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
    moments = load_file(str(out / "optimizer.safetensors"))
    for name, p in net.named_parameters():
        if f"{name}::exp_avg" in moments:
            opt.state[p] = {
                "step": torch.tensor(float(state["step"])),
                "exp_avg": moments[f"{name}::exp_avg"].to(p.device),  # safetensors loads onto the CPU
                "exp_avg_sq": moments[f"{name}::exp_avg_sq"].to(p.device),
            }
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
        prompt, canvas = next(data)
        prompt = prompt.to(cfg.device, non_blocking=True)
        canvas = canvas.to(cfg.device, non_blocking=True) if canvas is not None else None
        for group in opt.param_groups:
            group["lr"] = lr_at(state["step"], cfg, (time.time() - run_start) / (60 * cfg.max_minutes or 1))
        # On CUDA: bf16 autocast (on CPU it measured slower, so fp32 there).
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cfg.device.startswith("cuda")):
            ar, diff = losses(net, prompt, canvas, cfg, gen)
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
    for prompt, canvas in eval_batches:
        ar, diff = losses(net, prompt.to(cfg.device), None if canvas is None else canvas.to(cfg.device), cfg, gen)
        ar_total += ar.item()
        diff_total += diff.item()
    net.train(was_training)
    return {"heldout_ar": ar_total / len(eval_batches), "heldout_diffusion": diff_total / len(eval_batches)}


def _training_line(state: dict) -> str:
    """A run's steps, tokens, minutes and corpus, for the data card."""
    return (
        f"{state.get('step', 0)} steps, {state.get('tokens', 0) / 1e6:.1f}M tokens, "
        f"{state.get('seconds', 0) / 60:.0f} minutes on {state.get('config', {}).get('corpus', '?')}"
    )


def write_data_card(corpus_dir: Path, state: dict, dest: Path, earlier: dict | None = None) -> None:
    """model/weights/DATA.md: every source of the training corpus with its version and licence. `earlier`: the
    training.json of the weights the run started from (`--init`)."""
    info = json.loads((corpus_dir / "sources.json").read_text())
    history = f"Training: {_training_line(state)}"
    if earlier:
        history += f", on top of {_training_line(earlier)}"
    lines = [
        "# The embedded model's training data",
        "",
        "Rebuilt from scratch with `diffill train corpus` (offline: the CPython standard library and the Python",
        "sources of permissively licensed distributions installed with diffill's dev extra; with `--languages`,",
        "Debian source packages and npm packages of the other languages), deduplicated by content. Whole packages",
        "(and one folder in 20 of the other languages' sources) are held out for evaluation and never trained on.",
        "",
        history + ".",
        "",
        "| split | source | version | licence | files |",
        "|---|---|---|---|---|",
    ]
    for src in info["sources"]:
        lines.append(f"| {src['split']} | {src['name']} | {src['version']} | {src['licence']} | {src['files']} |")
    summary = info.get("summary", {})
    lines += [
        "",
        "After deduplication: "
        + ", ".join(f"{k} {v['files']} files ({v['bytes'] / 1e6:.1f} MB)" for k, v in summary.items()),
        "",
    ]
    card = dest / "DATA.md"
    kept = ""  # the corpus memory's section (`diffill train memory`) stays while its file does
    if card.exists() and (dest / MEMORY_FILE).exists():
        old = card.read_text(encoding="utf-8")
        kept = old[old.index(MEMORY_SECTION) :] if MEMORY_SECTION in old else ""
    card.write_text("\n".join(lines) + ("\n" + kept if kept else ""), encoding="utf-8")


def export(run_dir: Path, dest: Path, dtype: torch.dtype = torch.bfloat16, sampler: dict | None = None) -> None:
    """Copies a run's weights (in `dtype`), config, tokenizer and generation config into a model folder."""
    from .api import DiffusionModel

    model = DiffusionModel.from_pretrained(run_dir / "checkpoint" / "model", dtype=dtype)
    dest.mkdir(parents=True, exist_ok=True)
    save_model(model.net, dest)
    (dest / "tokenizer.json").write_bytes((run_dir / "tokenizer.json").read_bytes())
    gen = {
        "max_denoising_steps": 8,
        "sampler_config": {"entropy_bound": 0.1},
        "t_min": 0.4,
        "t_max": 0.8,
        "stability_threshold": 1,
        "confidence_threshold": 0.005,
        "eos_token_id": [1],
        "pad_token_id": 0,
    }
    gen.update(sampler or {})
    (dest / "generation_config.json").write_text(json.dumps(gen, indent=1) + "\n")
    state = json.loads((run_dir / "checkpoint" / "state.json").read_text())
    earlier_file = run_dir / INIT_TRAINING
    earlier = json.loads(earlier_file.read_text()) if earlier_file.exists() else None
    write_data_card(Path(state["config"]["corpus"]), state, dest, earlier)
    kept = {k: state[k] for k in ("step", "tokens", "seconds", "history", "config", "runs") if k in state}
    if earlier:
        kept["init"] = earlier
    (dest / "training.json").write_text(json.dumps(kept, indent=1) + "\n")
