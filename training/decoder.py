"""`diffill train decoder`: teaches the canvas decoder to draft what its own encoder writes, on a CPU budget.

Every shared weight stays frozen; only the decoder's adapters and its self-conditioning MLP train
(model.adapters.decoder_only_parameters), so the encoder's logits cannot change. The recipe
(../shared/reference/decoder_drafting.md: DFlash's anchored blocks, sequence-level distillation, an on-policy step):

1. label: cursors drawn in the training split as an editor has them (a line cut mid-way with its rest gone, or a
   fresh line with a few lines gone), prompted by the engine's own request builder, each labelled with the
   encoder's own greedy answer (model.speculative with no drafts: exactly what the verify pass accepts);
2. train: canvases laid out as the speculative rounds lay them out (right after the prompt, or after committed
   tokens with the last one pinned at position 0), noised whole; a position-weighted cross-entropy on the labels
   after one decoder pass, and again after a second pass fed the first one's draws and self-conditioning;
3. report on held-out files after each stage: tokens accepted per decoder draft (1 and 2 passes), whole answers
   accepted, and the decoder alone writing the encoder's whole answer.

Everything is resumable: labels are appended to JSONL files, training saves adapters and optimizer moments
(safetensors) with a JSON state. The result is a model folder (`<out>/model`) with the shipped weights untouched.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import random
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from diffill.infill import tuning
from diffill.infill.document import SyntaxDocument
from diffill.infill.languages import language_for
from diffill.infill.options import PromptOptions
from diffill.infill.request import build_request
from diffill.infill.vocabulary import Vocabulary
from diffill.model.adapters import attach_decoder_adapters, decoder_only_parameters
from diffill.model.config import ADAPTER_KEY
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.draws import categorical_entropy, entropy_keep, pin_logits
from diffill.model.loader import DECODER_PREFIX, load_model
from diffill.model.speculative import Speculator
from diffill.model.tokenizer import PAD, CodeTokenizer

from .config import DecoderTrainConfig
from .corpus import iter_docs
from .cursors import cut
from .train import load_moments, save_moments, write_state

MAX_FILE_CHARS = 200_000  # files longer than this are left out (the daemon's eval does the same)
LABEL_CHUNK = 64  # cursors drawn at a time for each labelling process
ENCODE_TOKENS = 16_384  # the most (padded) tokens one batched encoder pass over the anchors holds


@dataclass
class Anchor:
    """A prompt as the engine builds it and the encoder's greedy answer after it (its stop id included)."""

    prompt: list[int]
    label: list[int]
    kind: str  # "line" or "lines"
    room: int  # the most tokens the engine lets the answer have


# ----- 1. labels -----
def draw_cursor(text: str, rng: random.Random, kind: str) -> tuple[str, int] | None:
    """(document text, cursor offset) as an editor has them mid-edit (training.cursors)."""
    c = cut(text, rng, kind)
    return None if c is None else (c.before + c.after, len(c.before))


def label(net: DiffusionGemma, vocabulary: Vocabulary, text: str, path: str, offset: int) -> Anchor | None:
    """The engine's prompt at `offset` and the encoder's greedy answer to it (no n-gram evidence), or None."""
    doc = SyntaxDocument(text, language_for(None, path))
    request = build_request(doc, offset, [], vocabulary, PromptOptions())
    line = request.span.kind == "line"
    room = (tuning.LINE_CANVAS_LENGTH if line else net.config.canvas_length) - 1
    spec = Speculator(net, canvas=tuning.SPECULATIVE_CANVAS, decoder=False)
    found = spec.greedy(request.prompt, room, request.stops, net.new_cache(), request.healing.allowed)
    if not found.tokens:
        return None
    return Anchor(list(request.prompt), found.tokens, "line" if line else "lines", room)


def read_labels(path: Path) -> list[Anchor]:
    """The anchors a file holds, up to a last line a stopped run left half written (which is cut off)."""
    if not path.exists():
        return []
    have, good = [], 0
    with path.open("rb") as fh:
        for raw in fh:
            try:
                have.append(Anchor(**json.loads(raw)))
            except (ValueError, TypeError):
                break
            good += len(raw)
    with path.open("r+b") as fh:
        fh.truncate(good)
    return have


_LABELLER: tuple[DiffusionGemma, Vocabulary] | None = None  # a labelling process's own model


def _start_labeller(init: str) -> None:
    global _LABELLER
    torch.set_num_threads(1)
    vocabulary = Vocabulary(CodeTokenizer.from_file(Path(init) / "tokenizer.json"))
    _LABELLER = (load_model(Path(init), dtype=torch.float32), vocabulary)


def _label_job(job: tuple[str, str, int]) -> Anchor | None:
    return label(*_LABELLER, *job)


@contextmanager
def labeller(net: DiffusionGemma, vocabulary: Vocabulary, cfg: DecoderTrainConfig):
    """A function labelling a list of (text, path, offset) cursors in order: here with `net`, or by `cfg.workers`
    processes with a CPU thread and the init's model each (labels are an encoder's greedy answers, one pass a
    token: a GPU machine's cores write them faster than its GPU)."""
    if cfg.workers <= 0:
        yield lambda jobs: [label(net, vocabulary, *job) for job in jobs]
        return
    spawn = multiprocessing.get_context("spawn")  # a forked child of a process torch's threads ran in can hang
    with ProcessPoolExecutor(cfg.workers, mp_context=spawn, initializer=_start_labeller, initargs=(cfg.init,)) as ex:
        yield lambda jobs: list(ex.map(_label_job, jobs, chunksize=8))


def write_labels(
    label_all, corpus: Path, dest: Path, n: int, cfg, seed: int, log, deadline: float | None = None
) -> list[Anchor]:
    """`n` anchors from `corpus` (a split's JSONL) in `dest` (labelled by `label_all`: `labeller`'s), appending
    to the ones a stopped run wrote, or as many as are written by `deadline` (a perf_counter time). Cursors are
    drawn a chunk at a time; the anchors are the first the cursors give, however many processes label them."""
    have = read_labels(dest)
    if len(have) >= n:
        return have[:n]
    docs = [d for d in iter_docs(corpus) if len(d["text"]) <= MAX_FILE_CHARS]
    rng = random.Random(seed * 1_000_003 + len(have))  # a resumed run draws on from where its file ends
    t0 = time.perf_counter()
    with dest.open("a") as out:
        while len(have) < n and (deadline is None or time.perf_counter() < deadline):
            jobs = []
            while len(jobs) < min(LABEL_CHUNK * max(1, cfg.workers), n - len(have)):
                doc = docs[rng.randrange(len(docs))]
                cursor = draw_cursor(doc["text"], rng, "lines" if rng.random() < cfg.lines_share else "line")
                if cursor is not None:
                    jobs.append((cursor[0], doc["path"], cursor[1]))
            for anchor in label_all(jobs):
                if anchor is None or len(have) >= n:
                    continue
                have.append(anchor)
                out.write(json.dumps(asdict(anchor)) + "\n")
                if len(have) % 500 == 0:
                    out.flush()
                    log(f"labels {dest.name}: {len(have)}/{n} ({time.perf_counter() - t0:.0f} s)")
    return have


# ----- canvases side by side -----
class RowsCache:
    """Prompt caches of different lengths side by side for one batched decoder pass: right-padded keys/values,
    each row seeing its own positions (a sliding layer its last window-1, as KVCache keeps) and the first
    `widths[r]` canvas positions, on `device` (the rows may be kept elsewhere). Read-only, as the decoder's pass
    reads a cache."""

    def __init__(
        self,
        rows: list[list[tuple[torch.Tensor, torch.Tensor]]],
        lengths: list[int],
        widths: list[int],
        device: torch.device | str = "cpu",
    ):
        self.lengths = torch.tensor(lengths, device=device)
        self.widths = torch.tensor(widths, device=device)
        longest = max(lengths)
        self.keys, self.values = [], []
        for layer in range(len(rows[0])):
            ks, vs = [], []
            for row, n in zip(rows, lengths, strict=True):
                k, v = row[layer]
                pad = longest - n
                ks.append(F.pad(k[:, :, :n], (0, 0, 0, pad)))
                vs.append(F.pad(v[:, :, :n], (0, 0, 0, pad)))
            self.keys.append(torch.cat(ks).to(device).float())  # moved as kept (bf16), then widened
            self.values.append(torch.cat(vs).to(device).float())

    @property
    def length(self) -> int:
        return self.keys[0].shape[2]

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        if causal:
            raise ValueError("a RowsCache is read by decoder passes only")

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        at = torch.arange(self.length, device=k.device)
        seen = at[None] < self.lengths[:, None]
        if window is not None:
            seen &= at[None] >= self.lengths[:, None] - (window - 1)
        canvas = torch.arange(k.shape[2], device=k.device)[None] < self.widths[:, None]
        mask = torch.cat([seen, canvas], dim=1)[:, None, None, :]
        return torch.cat([self.keys[layer], k], dim=2), torch.cat([self.values[layer], v], dim=2), mask


SOFT_TOP = 8  # the encoder's choices kept for each answer token's distillation term (its top ids)

KV = list[tuple[torch.Tensor, torch.Tensor]]
Soft = tuple[torch.Tensor, torch.Tensor]  # per answer token: the encoder's top ids [L, K] and log-probs [L, K]


def encoded(net: DiffusionGemma, anchor: Anchor) -> tuple[KV, Soft]:
    """The encoder's keys/values of the prompt and the answer but its last token (every canvas layout's cache is
    a prefix of it), kept in bf16, and from the same pass its beliefs at each answer token (the distillation
    term's targets: what the greedy label was the argmax of)."""
    return encode_all(net, [anchor])[0]


def encode_all(net: DiffusionGemma, anchors: list[Anchor], home: torch.device | str = "cpu") -> list[tuple[KV, Soft]]:
    """`encoded` of each anchor, in batched passes of anchors of about the same length (right-padded: a causal
    pass's positions never see the pads after them), the keys/values kept on `home`, the beliefs on the CPU."""
    out: list = [None] * len(anchors)
    order = sorted(range(len(anchors)), key=lambda i: len(anchors[i].prompt) + len(anchors[i].label))
    s = 0
    with torch.no_grad():
        while s < len(order):
            longest = len(anchors[order[s]].prompt) + len(anchors[order[s]].label) - 1
            group = [order[s]]
            for i in order[s + 1 :]:
                n = len(anchors[i].prompt) + len(anchors[i].label) - 1
                if n * (len(group) + 1) > ENCODE_TOKENS:
                    break
                group.append(i)
                longest = n
            s += len(group)
            rows = [anchors[i].prompt + anchors[i].label[:-1] for i in group]
            ids = torch.tensor([r + [PAD] * (longest - len(r)) for r in rows], device=net.device)
            cache = net.new_cache()
            hidden = net.encode(ids, cache)
            for r, i in enumerate(group):
                a, n = anchors[i], len(rows[r])
                logp = torch.log_softmax(net.head(hidden[r, len(a.prompt) - 1 : n]).float(), dim=-1)
                top = logp.topk(SOFT_TOP, dim=-1)
                kv = [(k[r : r + 1, :, :n].to(home, torch.bfloat16, copy=True),
                       v[r : r + 1, :, :n].to(home, torch.bfloat16, copy=True))
                      for k, v in zip(cache.keys, cache.values, strict=True)]  # fmt: skip
                out[i] = (kv, (top.indices.cpu(), top.values.cpu()))
    return out


@dataclass
class Layout:
    """One canvas as the decoder meets it. Pinned: a speculative round's, `committed` answer tokens written, the
    token before the canvas (the prompt's last, then the last committed one) pinned at its position 0 and the cache
    holding what comes before that token. Not pinned: the decoder alone after the whole prompt (denoise_canvas)."""

    anchor: int
    committed: int
    pinned: bool = True

    def cache_length(self, a: Anchor) -> int:
        return len(a.prompt) - 1 + self.committed if self.pinned else len(a.prompt)

    def width(self, a: Anchor) -> int:
        return min(tuning.SPECULATIVE_CANVAS, a.room - self.committed + 1)

    def answer_length(self, a: Anchor) -> int:
        """The canvas positions the encoder's answer holds, its pin included."""
        return len(a.label) - self.committed + self.pinned

    def label_index(self, j: int) -> int:
        """The answer token canvas position `j` holds (past the answer: past its last index)."""
        return self.committed + j - self.pinned

    def target(self, a: Anchor, end: int) -> list[int]:
        """The canvas the encoder accepts whole: the pin, the answer's rest, the end id, pads."""
        rest = a.label[self.committed :]
        head = [(a.prompt + a.label)[len(a.prompt) - 1 + self.committed]] if self.pinned else []
        tail = [] if rest and rest[-1] == end else [end]
        width = self.width(a)
        return (head + rest + tail + [PAD] * width)[:width]


def draw_layout(i: int, a: Anchor, rng: random.Random, cfg: DecoderTrainConfig) -> Layout:
    """Canvases alone after the prompt (`alone_share`), a speculative round's first one (`first_share`), else a
    later round's."""
    draw = rng.random()
    if draw < cfg.alone_share:
        return Layout(i, 0, pinned=False)
    if len(a.label) < 2 or draw < cfg.alone_share + cfg.first_share:
        return Layout(i, 0)
    return Layout(i, rng.randint(1, len(a.label) - 1))


def batch_inputs(
    layouts: list[Layout], anchors: list[Anchor], encodings: list, end: int, gen: torch.Generator, vocab: int, cfg
):
    """(cache, noised canvas, targets, pinned mask, loss weights, answer mask, positions, soft targets) of a batch
    of layouts (`encodings`: each anchor's `encoded`): position k after the pin weighs exp(-k / gamma), pads
    pad_weight of that; the soft targets are the encoder's top ids and log-probs at the answer's tokens
    (soft_targets; None where cfg.kl_weight asks for no distillation term). All on the generator's device."""
    dev = gen.device
    rows = [anchors[lay.anchor] for lay in layouts]
    widths = [lay.width(a) for lay, a in zip(layouts, rows, strict=True)]
    lengths = [lay.cache_length(a) for lay, a in zip(layouts, rows, strict=True)]
    cache = RowsCache([encodings[lay.anchor][0] for lay in layouts], lengths, widths, dev)
    c = max(widths)
    targets = torch.full((len(rows), c), PAD)
    pinned = torch.zeros(len(rows), c, dtype=torch.bool)
    answer = torch.zeros(len(rows), c, dtype=torch.bool)  # positions the encoder's answer holds
    for r, (lay, a) in enumerate(zip(layouts, rows, strict=True)):
        t = lay.target(a, end)
        targets[r, : len(t)] = torch.tensor(t)
        pinned[r, 0] = lay.pinned
        answer[r, : min(lay.answer_length(a), len(t))] = True
    targets, pinned, answer = targets.to(dev), pinned.to(dev), answer.to(dev)
    inside = torch.arange(c, device=dev)[None] < torch.tensor(widths, device=dev)[:, None]
    k = (torch.arange(c, device=dev)[None] - pinned[:, :1].long()).clamp(min=0).float()
    weights = torch.exp(-k / cfg.gamma)
    weights = torch.where(targets == PAD, cfg.pad_weight * weights, weights) * inside * ~pinned
    noise = torch.randint(0, vocab, targets.shape, generator=gen, device=dev)
    if cfg.partial_share > 0:  # a seeded canvas (a copy, a name, a draft) as the decoder refines it
        noise = partly_noised(targets, noise, cfg.partial_share, gen)
    canvas = torch.where(pinned, targets, noise)
    positions = torch.tensor(lengths, device=dev)[:, None] + torch.arange(c, device=dev)[None]
    soft = None
    if cfg.kl_weight:
        soft = tuple(t.to(dev) for t in soft_targets(layouts, rows, [encodings[lay.anchor][1] for lay in layouts], c))
    return cache, canvas, targets, pinned, weights, answer & inside, positions, soft


def partly_noised(targets: torch.Tensor, noise: torch.Tensor, share: float, gen: torch.Generator) -> torch.Tensor:
    """`noise` where `share` of the rows keep each target token with probability 1 - t (t ~ U(0, 1) a row): the
    canvases the decoder meets seeded, which it learns to keep where they are the answer."""
    rows, dev = targets.shape[0], targets.device
    t = torch.rand(rows, 1, generator=gen, device=dev)
    seeded = torch.rand(rows, 1, generator=gen, device=dev) < share
    kept = seeded & (torch.rand(targets.shape, generator=gen, device=dev) >= t)
    return torch.where(kept, targets, noise)


def soft_targets(layouts: list[Layout], rows: list[Anchor], softs: list[Soft], width: int):
    """(ids [B, C, K], log-probs [B, C, K], mask [B, C]): the encoder's top choices at each canvas position that
    holds an answer token (the label token was their argmax), none at the pin, the end id or pads."""
    ids = torch.zeros(len(rows), width, SOFT_TOP, dtype=torch.long)
    logp = torch.zeros(len(rows), width, SOFT_TOP)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for r, (lay, a, (top_ids, top_logp)) in enumerate(zip(layouts, rows, softs, strict=True)):
        for j in range(int(lay.pinned), min(width, lay.width(a))):
            i = lay.label_index(j)
            if i >= len(a.label):
                break
            ids[r, j], logp[r, j], mask[r, j] = top_ids[i], top_logp[i], True
    return ids, logp, mask


def second_canvas(logits: torch.Tensor, canvas: torch.Tensor, pinned, gen: torch.Generator, bound: float):
    """The canvas of a draft's second pass, as denoise_canvas writes it: draws kept at the lowest-entropy
    positions while their entropies sum under the bound, noise elsewhere; pins stay."""
    probs = torch.softmax(logits.float(), dim=-1)
    sample = torch.multinomial(probs.view(-1, probs.shape[-1]), 1, generator=gen).view(canvas.shape)
    keep = entropy_keep(categorical_entropy(logits.float()), bound)
    noise = torch.randint(0, logits.shape[-1], canvas.shape, generator=gen, device=canvas.device)
    return torch.where(pinned, canvas, torch.where(keep, sample, noise))


# ----- 2. training -----
def draft_losses(net, inputs, gen: torch.Generator, bound: float, temp: float, kl_weight: float = 0.0):
    """(first pass's loss, second pass's loss, first logits, second logits) of a batch of canvases: the
    position-weighted cross-entropy on the labels plus `kl_weight` times the same-weighted cross-entropy on the
    encoder's own beliefs where the canvas holds an answer token (its top SOFT_TOP choices, renormalised; the
    inputs' soft targets, which batch_inputs builds only for a config that asks for the term)."""
    cache, canvas, targets, pinned, weights, _, positions, soft = inputs
    vocab = net.config.vocab_size
    if kl_weight:
        soft_ids, soft_logp, soft_mask = soft
        soft_p = torch.softmax(soft_logp, dim=-1)

    def loss_of(logits):
        per = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), reduction="none").view(targets.shape)
        if kl_weight:
            mine = torch.log_softmax(logits.float(), dim=-1).gather(-1, soft_ids)
            per = per + kl_weight * soft_mask * -(soft_p * mine).sum(-1)
        return (per * weights).sum() / weights.sum().clamp(min=1e-6)

    first = pin_logits(net.decode(canvas, cache, None, positions), pinned, targets)
    with torch.no_grad():
        z = first.detach() / temp
        x2 = second_canvas(z, canvas, pinned, gen, bound)
    second = pin_logits(net.decode(x2, cache, z.to(net.dtype), positions), pinned, targets)
    return loss_of(first), loss_of(second), first, second


def accepted_counts(logits: torch.Tensor, inputs) -> tuple[list[int], list[bool]]:
    """Per canvas: the draft tokens the encoder accepts (its argmax after the pin, matched against the answer
    up to the first miss, the stop included) and whether the whole answer was accepted."""
    _, _, targets, pinned, _, answer, _, _ = inputs
    draft, targets, pinned, answer = logits.argmax(-1).cpu(), targets.cpu(), pinned.cpu(), answer.cpu()
    counts, whole = [], []
    for r in range(targets.shape[0]):
        start = int(pinned[r, 0])
        n = int(answer[r].sum()) - start
        same = (draft[r, start : start + n] == targets[r, start : start + n]).long()
        taken = int(same.cumprod(0).sum()) if n else 0
        counts.append(taken)
        whole.append(taken == n)
    return counts, whole


@torch.no_grad()
def report(net, anchors: list[Anchor], encodings: list, end: int, cfg: DecoderTrainConfig, bound: float) -> dict:
    """Held-out figures: tokens accepted per decoder draft after 1 and 2 passes, for a speculative answer's first
    draft and for later ones (after committed tokens); whole answers accepted; and the decoder alone after the
    prompt (`alone_whole_2`: it writes the encoder's whole answer in 2 passes). Every canvas is noised whole
    (a partly noised one holds answer tokens: what the rounds draft from is noise)."""
    rng, gen = random.Random(1), torch.Generator(net.device).manual_seed(1)
    cfg = replace(cfg, partial_share=0.0, kl_weight=0.0)  # (its losses are not read: no distillation term)
    layouts_of = {
        "first": [Layout(i, 0) for i in range(len(anchors))],
        "later": [Layout(i, rng.randint(1, len(a.label) - 1)) for i, a in enumerate(anchors) if len(a.label) >= 2],
        "alone": [Layout(i, 0, pinned=False) for i in range(len(anchors))],
    }
    out: dict = {}
    for name, layouts in layouts_of.items():
        got = {1: [], 2: []}
        whole = {1: [], 2: []}
        for s in range(0, len(layouts), cfg.batch):
            inputs = batch_inputs(layouts[s : s + cfg.batch], anchors, encodings, end, gen, net.config.vocab_size, cfg)
            _, _, l1, l2 = draft_losses(net, inputs, gen, bound, 1.0)
            for steps, logits in ((1, l1), (2, l2)):
                counts, full = accepted_counts(logits, inputs)
                got[steps] += counts
                whole[steps] += full
        for steps in (1, 2):
            out[f"{name}_accepted_{steps}"] = round(sum(got[steps]) / max(1, len(got[steps])), 3)
            out[f"{name}_whole_{steps}"] = round(sum(whole[steps]) / max(1, len(whole[steps])), 3)
    return out


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


def kv_home(net: DiffusionGemma, anchors: list[Anchor]) -> torch.device:
    """Where the anchors' keys/values are kept: beside the network, unless it is a GPU's and they would take more
    than half its free memory (then in the CPU's, each batch's rows moved over)."""
    if net.device.type != "cuda":
        return net.device
    kv, _ = encoded(net, anchors[0])
    per_token = sum(k.nbytes + v.nbytes for k, v in kv) / kv[0][0].shape[2]
    need = per_token * sum(len(a.prompt) + len(a.label) for a in anchors)
    free, _ = torch.cuda.mem_get_info(net.device)
    return net.device if need < free / 2 else torch.device("cpu")


def batches(anchors: list[Anchor], rng: random.Random, cfg: DecoderTrainConfig) -> Iterator[list[Layout]]:
    while True:
        order = list(range(len(anchors)))
        rng.shuffle(order)
        for s in range(0, len(order) - cfg.batch + 1, cfg.batch):
            yield [draw_layout(i, anchors[i], rng, cfg) for i in order[s : s + cfg.batch]]


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
