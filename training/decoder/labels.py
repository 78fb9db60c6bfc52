"""Labels for `diffill train decoder`: cursors drawn in a training split as an editor has them, each with the
engine's prompt and the encoder's own greedy answer (what the verify pass accepts), appended to a JSONL file so
that a stopped run resumes; written here or by labelling processes."""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from diffill.infill import tuning
from diffill.infill.document import SyntaxDocument
from diffill.infill.languages import language_for
from diffill.infill.options import PromptOptions
from diffill.infill.request import build_request
from diffill.infill.vocabulary import Vocabulary
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.loader import load_model
from diffill.model.speculative import Speculator
from diffill.model.tokenizer import CodeTokenizer

from ..config import DecoderTrainConfig
from ..corpus import iter_docs
from ..cursors import cut

MAX_FILE_CHARS = 200_000  # files longer than this are left out (the daemon's eval does the same)
LABEL_CHUNK = 64  # cursors drawn at a time for each labelling process


@dataclass
class Anchor:
    """A prompt as the engine builds it and the encoder's greedy answer after it (its stop id included)."""

    prompt: list[int]
    label: list[int]
    kind: str  # "line" or "lines"
    room: int  # the most tokens the engine lets the answer have


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
