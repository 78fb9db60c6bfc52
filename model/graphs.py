"""The model's passes replayed as CUDA graphs: one launch from the host instead of thousands.

A pass of the 26B model is some 3,800 kernel launches; at batch 1 the GPU waits on the host between them. Here
each pass shape runs once eagerly to warm up, is captured, and from then on is replayed: the inputs (ids,
positions, the self-conditioning input) are copied into static buffers, the graph reads and writes only those and
one working cache of fixed capacity (model/static_cache.py), and its output is a static buffer too.

`PassGraphs` hangs on the net (`DiffusionGemma.graphs`): `encode` and `decode_hidden` replay a graph whenever
their cache is its working cache and the shape is one it graphs (batch 1; causal passes of up to MAX_CAUSAL
tokens: the AR token and the speculative verifications; a canvas of any length it has seen), and run eagerly
otherwise. The prompt cache keeps each document's keys and values as a snapshot and copies them into the working
cache when the document changes (model/prompt_cache.py).

Capture needs CUDA and passes without host syncs (the Triton MoE and sampler, PyTorch's fp8 GEMMs, the
scatter_add expert counts); a capture that fails turns the graphs off with a warning and the same passes run
eagerly. With `capture=False` (the CPU tests) everything runs eagerly on the same static buffers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .static_cache import StaticKVCache

if TYPE_CHECKING:
    from .diffusion_gemma import DiffusionGemma

log = logging.getLogger(__name__)
Replay = Callable[[], torch.Tensor]
MAX_CAUSAL = 16  # causal pass lengths graphed: the AR token and speculative verifications (1 + a draft)


def capture(fn: Callable[[], Any], enabled: bool, pool: Any = None) -> Callable[[], Any]:
    """`fn` as a replayable graph (warmed up on a side stream first, as PyTorch asks), or `fn` itself. Graphs of
    one `pool` share their memory: they replay one at a time and their outputs are copied out at once."""
    if not enabled:
        return fn
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        out = fn()

    def replay() -> Any:
        graph.replay()
        return out

    replay.graph = graph  # type: ignore[attr-defined] - kept alive with its output
    return replay


class PassGraphs:
    """Graphed passes over one working cache of `capacity` positions."""

    def __init__(self, net: DiffusionGemma, capacity: int, capture_graphs: bool | None = None):
        self.net = net
        self.cache = StaticKVCache(net.config, capacity, net.device, net.dtype)
        self.capture_graphs = net.device.type == "cuda" if capture_graphs is None else capture_graphs
        self.enabled = True
        self._graphs: dict[tuple[Any, ...], tuple[Replay, dict[str, torch.Tensor]]] = {}
        self._state: dict[Any, dict[str, torch.Tensor]] = {}  # the denoise steps' buffers, per canvas shape
        self._steps: dict[tuple[Any, ...], Callable[[], Any]] = {}
        self._pool = torch.cuda.graph_pool_handle() if self.capture_graphs else None

    def serves(self, cache: Any, x: torch.Tensor, causal: bool) -> bool:
        """Whether a pass over `x` [B, T] on `cache` replays a graph here."""
        if not self.enabled or cache is not self.cache or x.shape[0] != 1:
            return False
        t = x.shape[1]
        return not causal or (t <= MAX_CAUSAL and cache.length + t <= cache.capacity)

    def _graph(self, key: tuple[Any, ...], inputs: dict[str, torch.Tensor], run: Callable[[], torch.Tensor]):
        """Captures `run` over `inputs` (already holding this call's values: a causal warm-up writes the cache at
        their positions, which the replay then writes again alike) and keeps it."""
        mark = self.cache.length
        try:
            replay = capture(run, self.capture_graphs, self._pool)
        finally:  # the warm-up passes moved the cache's length: back to before them
            self.cache.truncate(mark)
        self._graphs[key] = (replay, inputs)
        return self._graphs[key]

    def encode(self, ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """As DiffusionGemma.encode on the working cache (appending `ids` [1, T]), replayed."""
        t = ids.shape[1]
        cache, net = self.cache, self.net
        if positions is None:
            positions = torch.arange(cache.length, cache.length + t, device=ids.device)[None]
        key = ("encode", t)
        entry = self._graphs.get(key)
        bufs = (
            entry[1] if entry is not None else {"ids": torch.empty_like(ids), "positions": torch.empty_like(positions)}
        )
        bufs["ids"].copy_(ids)  # (before a capture too: its warm-up passes write these very keys and values)
        bufs["positions"].copy_(positions)
        if entry is None:
            entry = self._graph(key, bufs, lambda: net._run(net.embed(bufs["ids"]), bufs["positions"], cache, True))
        out = entry[0]()
        if self.capture_graphs:
            cache.count(t)  # a replay writes on the device only (the eager pass counted itself)
        return out.clone()

    def decode_hidden(
        self, canvas: torch.Tensor, soft: torch.Tensor | None, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """As DiffusionGemma.decode_hidden on the working cache, with the self-conditioning input `soft` (the soft
        embeddings of the previous step's logits, or None), replayed."""
        c = canvas.shape[1]
        cache, net = self.cache, self.net
        if positions is None:
            positions = torch.arange(cache.length, cache.length + c, device=canvas.device)[None]
        key = ("decode", c, soft is not None)
        entry = self._graphs.get(key)
        inputs = {"canvas": canvas, "positions": positions, **({"soft": soft} if soft is not None else {})}
        bufs = entry[1] if entry is not None else {k: torch.empty_like(v) for k, v in inputs.items()}
        for k, v in inputs.items():
            bufs[k].copy_(v)
        if entry is None:

            def run() -> torch.Tensor:
                return net.eager_decode_hidden(bufs["canvas"], bufs.get("soft"), bufs["positions"], cache)

            entry = self._graph(key, bufs, run)
        return entry[0]().clone()

    def state(self, shape: Any, make: Callable[[], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """The static buffers a whole denoise step reads and writes in place (model/sampler.py `denoise_canvas`),
        one set per canvas `shape`, shared by the graphs of its first and later steps."""
        if shape not in self._state:
            self._state[shape] = make()
        return self._state[shape]

    def step(self, key: tuple[Any, ...], shape: Any, run: Callable[[], Any]) -> Any:
        """Replays `run`, a whole denoise step over `state(shape)` (captured at its first call); returns its
        outputs (static buffers, overwritten by the next replay). The capture's warm-up steps change the state:
        it is put back before the first replay."""
        replay = self._steps.get(key)
        if replay is None:
            state = self._state[shape]
            saved = {k: v.clone() for k, v in state.items()}
            mark = self.cache.length
            try:
                replay = capture(run, self.capture_graphs, self._pool)
            finally:
                for k, v in saved.items():
                    state[k].copy_(v)
                self.cache.truncate(mark)
            self._steps[key] = replay
        return replay()

    @torch.inference_mode()
    def warm(self, canvas_lengths: tuple[int, ...]) -> int:
        """Captures now what completions will replay (causal passes of 1..MAX_CAUSAL tokens, the decoder at each
        canvas length with and without self-conditioning) so that no first completion pays a capture; the working
        cache is left empty. Returns how many graphs it holds."""
        dev = self.net.device
        vocab = self.net.config.vocab_size
        self.cache.reset()
        try:
            self.encode(torch.full((1, MAX_CAUSAL), 2 % vocab, device=dev))  # a prompt for the decoder to read
            for c in sorted(set(canvas_lengths)):
                canvas = torch.full((1, c), 3 % vocab, device=dev)
                soft = torch.zeros(1, c, self.net.config.hidden_size, dtype=self.net.dtype, device=dev)
                self.decode_hidden(canvas, None)
                self.decode_hidden(canvas, soft)
            for t in range(1, MAX_CAUSAL + 1):
                self.cache.truncate(0)
                self.encode(torch.full((1, t), 2 % vocab, device=dev))
        except RuntimeError as exc:
            self.disable(exc)
        finally:
            self.cache.reset()
        return len(self._graphs)

    def held(self) -> int:
        """How many graphs are captured (passes and whole steps)."""
        return len(self._graphs) + len(self._steps)

    def disable(self, exc: Exception) -> None:
        """After a capture failed: every pass eager from now on (the working cache still serves)."""
        if self.enabled:
            log.warning("CUDA graphs off (%s: %s): the passes run eagerly", type(exc).__name__, exc)
        self.enabled = False
        self._graphs.clear()
        self._steps.clear()
        self._state.clear()


def graphable(net: DiffusionGemma) -> bool:
    """Whether the net's passes can be captured: on CUDA, with every expert layer quantized for a path that never
    syncs with the host (the Triton int4/int8 kernels, or fp8 through PyTorch's GEMMs on Hopper). Dense experts run
    one matmul per expert with the token counts read back to the host."""
    from diffill.kernels import _triton, grouped_fp8

    from .modules import Experts
    from .quant import QuantExperts

    weight = net.embed_tokens.weight
    if not weight.is_cuda:
        return False
    for module in net.modules():
        if isinstance(module, Experts):
            return False
        if isinstance(module, QuantExperts):
            scheme = module.spec.scheme
            ok = grouped_fp8.fp8_gemms_available(weight) if scheme == "fp8" else _triton.use_triton(weight)
            if not ok:
                return False
    return True
