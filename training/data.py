"""Training examples: FIM spans with sibling-file context, plain windows for pre-training, and batch streams
built in-process or by worker processes."""

from __future__ import annotations

import math
import random
import signal
from collections.abc import Iterator
from pathlib import Path

import torch

from diffill.infill.context.definitions import extract_chunks
from diffill.infill.context.prompt_context import format_block
from diffill.infill.context.workspace import identifiers
from diffill.infill.languages import language_for
from diffill.model.fim import build_canvas, build_prompt, sample_span
from diffill.model.tokenizer import BOS, PAD, CodeTokenizer

from .config import TrainConfig
from .corpus import iter_docs, package_of

MAX_WINDOW_MISSES = 2000  # draws of files too short for a pre-training window before `ar_batches` gives up


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
        # drawn file by file, one large and repetitive package (transformers: nearly half the files, many of them
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
    """(prompt ids padded on the left, canvas ids of length `canvas` (default cfg.canvas), split) or None if no
    span fits. The prompt is padded to prompt_len, or to prompt_len + canvas when examples may be split
    (`cfg.split_prob`): a split example's prompt goes on into the middle, whose next token starts the canvas
    (`split` True: that first canvas token is known, as the last committed token of a speculative draft)."""
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
    width = cfg.prompt_len
    split = False
    if cfg.split_prob:
        width += cfg.canvas
        committed = rng.randint(0, len(middle)) if rng.random() < cfg.split_prob else 0
        if committed:  # the encoder has read all but the last committed token, which starts the canvas
            prompt, middle, split = prompt + middle[: committed - 1], middle[committed - 1 :], True
    prompt = [PAD] * (width - len(prompt)) + prompt
    return prompt, build_canvas(middle, canvas), split


def batches(corpus: Corpus, tok: CodeTokenizer, cfg: TrainConfig, rng: random.Random) -> Iterator:
    """(prompts, canvases, split) batches of FIM examples; all of a batch share one canvas length."""
    while True:
        prompts, canvases, splits = [], [], []
        short = 0 < cfg.short_canvas < cfg.canvas and rng.random() < cfg.short_canvas_prob
        length = cfg.short_canvas if short else cfg.canvas
        while len(prompts) < cfg.batch:
            i = corpus.draw(rng)
            ex = make_example(corpus.texts[i], tok, rng, cfg, corpus, i, canvas=length)
            if ex is not None:
                prompts.append(ex[0])
                canvases.append(ex[1])
                splits.append(ex[2])
        yield torch.tensor(prompts), torch.tensor(canvases), torch.tensor(splits)


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
    """Plain windows of prompt_len + 1 tokens from random places in random files: (ids, None, None)."""
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
        yield torch.tensor(rows), None, None
