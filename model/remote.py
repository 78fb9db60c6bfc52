"""A model a server runs (model.vllm_server), as the engine meets it: the session operations of model.session on
the same ids, each denoising one request to the server.

What a server does not offer is not asked of it: the card says the decoder writes (no encoder drafts, so no
continuation scores), a session's beliefs of its own answer are the log-probabilities the server returned for
its canvas, and a rename's slots score alike (every use is renamed). The tokenizer and the card come from the
served model's files (model.remote.served_files: a folder here or a hub id), so prompts are built,
healed and filtered here exactly as for a local model.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from .card import ModelCard
from .config import DiffusionGemmaConfig
from .loader import CheckpointError, resolve_checkpoint
from .sampler import before_unsure, ended, trim_after_eos
from .session import Budget, DraftCounts, Healing, Tokenizer
from .vllm_server import CanvasAnswer, CanvasRequest, Connection, Late, ServedModel, ServerError, VllmServer

SERVED_FILES = ["*.json", "tokenizer*", "*.model", "*.jinja"]  # a served model's files diffill reads (no weights)
NETWORK_MS = 100.0  # what the network may add to the latency budget before an answer is dropped (a LAN, a region)
MAX_STEPS = 48  # steps of a request that asks for "as many as fit": the reference sampler's maximum

T = TypeVar("T")
log = logging.getLogger("diffill")


class RemoteModel:
    """The served model: its name on the server, its config and card (from its files) and the connection."""

    def __init__(
        self,
        server: VllmServer,
        served: str,
        config: DiffusionGemmaConfig,
        card: ModelCard,
        token_ids: int,
        files: ServedFiles | None = None,
    ) -> None:
        self.server = server
        self.served = served
        self.files = files  # where its tokenizer and card were read
        self.config = config
        self.token_ids = token_ids  # the tokenizer's ids (the config's vocabulary may be padded past them)
        self.card = dataclasses.replace(card, draft="", speculative=False)  # the server's decoder writes
        self.requests = 0  # completions sent: the engine's pass count for this model
        self.server_ms = 0.0  # their time as this client saw it (connection, server, transfer), summed
        self.eos_ids = set(card.sampler.eos_token_ids) if card.sampler is not None else set(config.eos_ids)
        self._bos = config.bos_token_id if config.bos_token_id is not None else 0  # a prompt any server takes

    def warm_graphs(self, canvas_lengths) -> int:
        """Before the first completion, one pinned canvas of each length the completions ask for (and the probe's
        one token): a server may build each request shape once (vLLM's CPU build compiles it, 1-8 s), which the
        user's first keystrokes then do not wait for. Returns how many shapes answered; a failure is logged (the
        first completion then reports it)."""
        bos, warmed = self._bos, 0
        for width in sorted({1, *canvas_lengths}):
            pins = {0: bos} if width > 1 else None
            try:
                self.server.canvas(self.served, CanvasRequest([bos], width, 1, pins=pins), self.token_ids)
                warmed += 1
            except ServerError as exc:
                log.warning("warming the server's canvas of %d tokens: %s", width, exc)
                break
        return warmed

    def time_passes(self) -> float | None:
        """No local passes to time (the deadline counts the request's time instead)."""
        return None

    def probe(self) -> float:
        """One tiny canvas (one token, one step): whether the server completes again after a failure (its model
        list may answer while its engine does not); its milliseconds, or ServerError."""
        return self.server.canvas(self.served, CanvasRequest([self._bos], 1, 1), self.token_ids).server_ms

    def prompter(self) -> RemotePrompter:
        return RemotePrompter(self)

    def close(self) -> None:
        self.server.close()


class RemotePrompter:
    """Sessions on the served model; the server keeps the prompt cache (vLLM's prefix caching)."""

    prompt_cache = None

    def __init__(self, model: RemoteModel) -> None:
        self.model = model

    @property
    def passes(self) -> int:
        return self.model.requests

    @contextmanager
    def session(self, key: str, prompt: list[int], **given) -> Iterator[RemoteSession]:
        yield RemoteSession(self.model, prompt, **given)

    def forget(self, key: str) -> None:
        """Nothing kept here per document."""


class RemoteSession:
    """The served model bound to one prompt (model.session.PromptSession's operations; the module docstring says
    which ones a server answers differently)."""

    def __init__(
        self,
        model: RemoteModel,
        prompt: list[int],
        *,
        healing: Healing | None = None,
        budget: Budget | None = None,
        cancel: Callable[[], bool] | None = None,
        tokenizer: Tokenizer | None = None,
        **_local_only,  # n-gram evidence, speculation, extensions: for a local encoder
    ) -> None:
        self.model = model
        self.prompt = prompt
        self.healing = healing or Healing()
        self.budget = budget
        self.cancel = cancel
        self.tokenizer = tokenizer
        self.counts = DraftCounts()
        self._written: tuple[list[int], list[float]] = ([], [])  # the last canvas's answer and its log-probabilities

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def affords(self, passes: int) -> bool:
        return self.budget is None or self.budget.affords(passes)

    def draft(self, *args, **kwargs):  # (not a ServerError: nothing is wrong with the server)
        raise NotImplementedError("a served model writes on its canvas only (no encoder drafts)")

    def scores(self, *args, **kwargs):
        raise NotImplementedError("a served model scores no given continuations")

    def beliefs(self, ids: list[int]) -> tuple[list[float], list[float]]:
        """The log-probabilities the server gave the last canvas's tokens where `ids` are what it wrote (0.0, sure,
        past that: the server judged nothing else)."""
        written, logprobs = self._written
        n = 0
        while n < min(len(ids), len(written)) and ids[n] == written[n]:
            n += 1
        known = logprobs[:n] + [0.0] * (len(ids) - n)
        return known, list(known)

    def denoise(
        self,
        canvas: int,
        steps: int,
        seed: int,
        *,
        canvases: int = 1,
        init: list[int] | None = None,
        pins: dict[int, int] | None = None,
        min_confidence: float = 0.0,
    ) -> list[int] | None:
        """One read-only canvas of `canvas` tokens from the server (a server writes one canvas a request:
        `canvases` is not asked), its pins kept, cut before its first token under `min_confidence`, up to the
        end id; None when it came later than the time left plus NETWORK_MS (dropped, not shown)."""
        answer = self._canvas(CanvasRequest(self.prompt, canvas, steps or MAX_STEPS, init, pins), seed)
        if answer is None:
            return None
        m = self.model
        # the local answer's cuts (DiffusionModel._answer); pinned positions came back sure (log-probability 0)
        confidence = [math.exp(lp) for lp in answer.logprobs]
        tokens = before_unsure(answer.tokens, confidence, min_confidence)
        tokens = trim_after_eos(tokens, m.eos_ids, m.config.pad_token_id)
        logprobs = answer.logprobs[: len(tokens)]
        first = self.healing.first_ids
        if first is not None and tokens and tokens[0] not in set(first):
            tokens, logprobs = [], []  # the server cannot be held to the healed text: an answer that leaves it
        self._written = (tokens, logprobs)
        return tokens

    def rewrite(self, init: list[int], steps: int, seed: int) -> tuple[list[int], list[float]] | None:
        """The server's rewrite of the canvas `init` (seeded with it) and each token's probability, up to the end
        id; None when it did not end on the canvas or came too late (PromptSession.rewrite)."""
        answer = self._canvas(CanvasRequest(self.prompt, len(init), steps or MAX_STEPS, init, None), seed)
        if answer is None:
            return None
        return ended(answer.tokens, [math.exp(lp) for lp in answer.logprobs], self.model.eos_ids)

    def _canvas(self, request: CanvasRequest, seed: int) -> CanvasAnswer | None:
        """The server's answer to one canvas, or None when it came later than the time left plus NETWORK_MS."""
        left = self.budget.left_ms() if self.budget is not None else math.inf
        deadline = None if math.isinf(left) else time.perf_counter() + (max(0.0, left) + NETWORK_MS) / 1e3
        m = self.model
        m.requests += 1
        t0 = time.perf_counter()
        try:
            return m.server.canvas(m.served, request, m.token_ids, seed=seed, cancel=self.cancel, deadline=deadline)
        except Late:
            return None
        finally:  # a late or cancelled request's time is the server's too
            m.server_ms += (time.perf_counter() - t0) * 1e3

    def slot_scores(self, canvas: list[int], slots: list[tuple[int, int]], seed: int) -> list[float]:
        """Every slot alike: a served model scores no given canvas, so a rename renames every use."""
        return [0.0] * len(slots)


def connect(connection: Connection, tokenizer_of: Callable[[Path], T]) -> tuple[RemoteModel, T]:
    """The server's model (the first it serves) with its config and card from the served model's files, and its
    tokenizer (`tokenizer_of` the folder of those files)."""
    server = VllmServer(connection)
    try:
        served = server.models()
        if not served:
            raise ServerError(f"{connection.base} serves no model")
        files = served_files(served[0], connection.model_files)
        tokenizer = tokenizer_of(files.folder)
        config = DiffusionGemmaConfig.from_file(files.folder / "config.json")
        card = ModelCard.read(files.folder)
        model = RemoteModel(server, served[0].id, config, card, tokenizer.vocab_size, files)
        return model, tokenizer
    except BaseException:
        server.close()
        raise


@dataclasses.dataclass(frozen=True)
class ServedFiles:
    """Where the served model's tokenizer, config and card were read: the folder, and the name it came from and
    how (`how`: "the servedModelFiles setting", "its served name" or "its root")."""

    folder: Path
    name: str
    how: str


def served_files(served: ServedModel, setting: str | None = None) -> ServedFiles:
    """The served model's own files (never the weights): under the servedModelFiles setting where it is given,
    else under the name it is served as, else under its root (what the server loaded: a team's server may serve
    `/models/dg` as `dg`), each a folder here (a server on this machine) or a hub id."""
    if setting:
        tries = [(setting, "the servedModelFiles setting")]
    else:
        tries = [(served.id, "its served name")]
        if served.root and served.root != served.id:
            tries.append((served.root, "its root"))
    failures = []
    for name, how in tries:
        try:
            folder = resolve_checkpoint(name, patterns=SERVED_FILES)
        except CheckpointError as exc:
            failures.append(f"{how} {name!r}: {exc}")
            continue
        if (folder / "config.json").exists():
            return ServedFiles(folder, name, how)
        failures.append(f"{how} {name!r}: no config.json in {folder}")
    hint = "" if setting else "; set servedModelFiles to a folder here or a hub id with its tokenizer and config"
    raise CheckpointError(f"the server's model {served.id!r}: {'; '.join(failures)}{hint}")
