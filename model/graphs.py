"""The denoise step and the AR token as CUDA graphs: one launch from the host instead of thousands.

A step of the 26B model is some 3,800 kernel launches; at batch 1 the GPU waits on the host between them. Here
each pass runs once eagerly to warm up, is captured, and from then on is replayed: the inputs are copied into
static buffers, the graph reads and writes only those and the cache's (model/static_cache.py), and the output
is a static buffer too. One `GraphedPasses` per cache capacity serves every prompt of that bucket and keeps one
decoder graph per canvas length (first step without self-conditioning, later steps with it) and one AR graph.

Capture needs CUDA and passes without host syncs (the Triton MoE and sampler, PyTorch's grouped GEMM); on other
devices, or with `capture=False`, the same object runs the same passes on the same static buffers eagerly, which
is what the CPU tests hold to the model's own passes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .diffusion_gemma import DiffusionGemma
from .static_cache import StaticKVCache

Replay = Callable[[], torch.Tensor]


def capture(fn: Callable[[], torch.Tensor], enabled: bool) -> Replay:
    """`fn` as a replayable graph (warmed up on a side stream first, as PyTorch asks), or `fn` itself."""
    if not enabled:
        return fn
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()

    def replay() -> torch.Tensor:
        graph.replay()
        return out

    replay.graph = graph  # type: ignore[attr-defined] - kept alive with its output
    return replay


class GraphedPasses:
    """Decoder steps and AR tokens over one static cache. `cache` is prefilled by `prefill` (eager: prompts vary
    in length); then `step` and `token` replay their graphs."""

    def __init__(self, net: DiffusionGemma, capacity: int, capture_graphs: bool | None = None):
        self.net = net
        self.cache = StaticKVCache(net.config, capacity, net.device, net.dtype)
        self.capture_graphs = net.device.type == "cuda" if capture_graphs is None else capture_graphs
        self._steps: dict[tuple[int, bool], tuple[Replay, torch.Tensor, torch.Tensor]] = {}
        self._token: tuple[Replay, torch.Tensor] | None = None
        self._soft: dict[int, torch.Tensor] = {}  # per canvas length, shared by its two step graphs

    @torch.inference_mode()
    def prefill(self, ids: torch.Tensor) -> torch.Tensor:
        """The prompt [1, T] into the cache from position 0; its normed hidden states."""
        self.cache.reset()
        return self.net.encode(ids, self.cache)

    def _step_graph(self, canvas_len: int, with_soft: bool):
        key = (canvas_len, with_soft)
        if key not in self._steps:
            dev = self.net.device
            canvas = torch.zeros(1, canvas_len, dtype=torch.long, device=dev)
            offsets = torch.arange(canvas_len, device=dev)[None]
            soft = self._soft.setdefault(
                canvas_len, torch.zeros(1, canvas_len, self.net.config.hidden_size, dtype=self.net.dtype, device=dev)
            )
            net, cache = self.net, self.cache

            def run() -> torch.Tensor:
                x = net.self_conditioning(net.embed(canvas), soft if with_soft else None)
                return net.head(net._run(x, cache.filled + offsets, cache, causal=False))

            with torch.inference_mode():
                self._steps[key] = (capture(run, self.capture_graphs), canvas, soft)
        return self._steps[key]

    @torch.inference_mode()
    def step(self, canvas: torch.Tensor, soft: torch.Tensor | None = None) -> torch.Tensor:
        """fp32 logits [1, C, V] of one decoder pass over `canvas` [1, C] after the cached prompt, self-conditioned
        on `soft` [1, C, H] (the previous step's soft embeddings; None on the first step). The logits are the
        graph's own buffer: read them before the next step."""
        replay, canvas_buf, soft_buf = self._step_graph(canvas.shape[1], soft is not None)
        canvas_buf.copy_(canvas)
        if soft is not None:
            soft_buf.copy_(soft)
        return replay()

    @torch.inference_mode()
    def token(self, token: torch.Tensor) -> torch.Tensor:
        """Encodes one token [1, 1] at the cache's next position (appending it) and returns its fp32 logits [1, V]."""
        if self.cache.length >= self.cache.capacity:
            raise ValueError(f"the cache of {self.cache.capacity} positions is full")
        if self._token is None:
            dev = self.net.device
            buf = torch.zeros(1, 1, dtype=torch.long, device=dev)
            net, cache = self.net, self.cache
            zero = torch.zeros(1, 1, dtype=torch.long, device=dev)

            def run() -> torch.Tensor:
                hidden = net._run(net.embed(buf), cache.filled + zero, cache, causal=True)
                return net.head(hidden[:, -1])

            mark = cache.length
            replay = capture(run, self.capture_graphs)  # warm-up and capture write at the next slot: undone below
            cache.truncate(mark)
            self._token = (replay, buf)
        replay, buf = self._token
        buf.copy_(token)
        if self.capture_graphs:
            out = replay()
            self.cache.count(1)
            return out
        return replay()  # eager: the pass counts itself
