"""Our own int4 (or fp8) stack measured by `diffill bench gpu`: the denoise step as the GPU runs it, timed eagerly
and replayed as CUDA graphs, with the canvas, roofline and autoregressive figures derived from it.

Apart from the run's driver (the package's __init__) and the reference step (reference.py) so that what "our step"
is (the `Denoiser`) and how its figures are derived sit in one place.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import torch

from diffill.kernels.sampler import sampler_step, soft_embedding
from diffill.model.cache import KVCache
from diffill.model.config import DiffusionGemmaConfig
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.draws import entropy_keep
from diffill.model.footprint import weight_footprint
from diffill.model.quant import QuantSpec
from diffill.model.random_weights import random_quantized_model
from diffill.model.sampler import SamplerConfig, denoise_canvas

from .harness import inputs, timed
from .roofline import roofline_ms, step_bytes

Prev = tuple[torch.Tensor, float, torch.Tensor]  # the previous step's (logits, temperature, logsumexp)
Put = Callable[[str, Any], None]


class Denoiser:
    """The decoder step as the GPU runs it: fused self-conditioning input from the previous logits, decoder
    pass, head, then one fused sampler pass (sample, argmax, entropy, lse) and the entropy-bounded renoise."""

    def __init__(
        self,
        net: DiffusionGemma,
        cache: KVCache,
        positions: torch.Tensor,
        entropy_bound: float = 0.1,
        fused_soft: bool = False,
    ):
        self.net = net
        self.fused_soft = fused_soft
        self.cache = cache
        self.positions = positions
        self.bound = entropy_bound
        self.scale = net.config.hidden_size**0.5

    def step(self, x: torch.Tensor, prev: Prev | None, temp: float, seed: int) -> tuple[torch.Tensor, Prev]:
        net = self.net
        soft = None
        if prev is not None:
            logits, t_prev, lse = prev
            w = net.embed_tokens.weight
            soft = soft_embedding(logits, t_prev, w, self.scale, lse, self.fused_soft).view(*x.shape, -1)
        hidden = net._run(net.self_conditioning(net.embed(x), soft), self.positions, self.cache, causal=False)
        logits = net.head(hidden)
        st = sampler_step(logits, temp, seed)
        keep = entropy_keep(st.entropy.view(x.shape), self.bound)
        return torch.where(keep, st.sample.view(x.shape), st.noise.view(x.shape)), (logits, temp, st.lse)

    def canvas(self, x: torch.Tensor, steps: int, t_min: float = 0.4, t_max: float = 0.8) -> torch.Tensor:
        prev = None
        for n in range(steps, 0, -1):
            x, prev = self.step(x, prev, t_min + (t_max - t_min) * n / steps, seed=n)
        return x


def fork(cache: KVCache) -> KVCache:
    """A copy of the prompt cache that a commit or AR decoding may extend without touching the original."""
    return copy.deepcopy(cache)


def measure_ours(
    config: DiffusionGemmaConfig,
    spec: QuantSpec,
    device: torch.device,
    dtype: torch.dtype,
    canvas: int,
    prompt: int,
    steps: tuple[int, ...],
    ar_tokens: int,
    reps: int,
    bw: float,
    log: Callable[[str], None],
    t_start: float,
) -> dict[str, Any]:
    """Step, canvas, roofline and AR figures of our int4 stack (its memory is freed on return)."""
    res: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        """Records a figure and logs it at once: a run stopped by its time limit still shows what it measured."""
        res[key] = value
        log(f"  {key}: {value:.3f}" if isinstance(value, float) else f"  {key}: {value}")

    torch.manual_seed(0)
    net = random_quantized_model(config, spec, device, dtype)
    res["weight_GB"] = weight_footprint(config, spec).total_bytes / 1e9
    if device.type == "cuda":
        res["gpu_mem_allocated_GB"] = torch.cuda.memory_allocated() / 1e9
    log(f"model built: {res['weight_GB']:.2f} GB of {spec.scheme} weights ({time.perf_counter() - t_start:.0f} s)")
    ids, x0 = inputs(config, prompt, canvas, device)
    with torch.inference_mode():
        cache = net.new_cache()
        put("prefill_ms", timed(lambda: net.encode(ids, net.new_cache()), max(1, reps // 3), device))
        net.encode(ids, cache)
        positions = torch.arange(prompt, prompt + canvas, device=device)[None]
        den = Denoiser(net, cache, positions)
        _, prev = den.step(x0, None, 0.8, 0)
        put("step_ms_probs_then_matmul", timed(lambda: den.step(x0, prev, 0.7, 1), reps, device))
        den.fused_soft = True
        put("step_ms_fused_soft_embedding", timed(lambda: den.step(x0, prev, 0.7, 1), reps, device))
        den.fused_soft = res["step_ms_fused_soft_embedding"] < res["step_ms_probs_then_matmul"]
        put("soft_embedding", "fused kernel" if den.fused_soft else "probs kernel + matmul")
        put("step_ms", min(res["step_ms_fused_soft_embedding"], res["step_ms_probs_then_matmul"]))

        def decoder_pass() -> torch.Tensor:
            return net.head(net._run(net.self_conditioning(net.embed(x0), None), positions, cache, False))

        put("decoder_pass_ms", timed(decoder_pass, reps, device))
        commit = timed(lambda: net.encode(x0, fork(cache)), max(1, reps // 3), device)
        put("commit_ms", commit)
        for n in steps:
            ms = timed(lambda n=n: den.canvas(x0, n), 1 if n > 16 or device.type == "cpu" else 2, device)
            put(f"canvas_ms_{n}_steps", ms + commit)
            put(f"tokens_per_s_{n}_steps", canvas / ((ms + commit) / 1e3))
        # (a) roofline
        need = step_bytes(config, spec, canvas, prompt)
        put("step_bytes", need)
        put("roofline_step_ms", roofline_ms(need["total"], bw))
        put("step_fraction_of_roofline", res["roofline_step_ms"] / res["step_ms"])
        # (b) autoregressive decoding, batch 1, one token per forward
        ar_cache = fork(cache)
        tok = ids[:, -1:]

        def ar_tokens_fn() -> torch.Tensor:
            t = tok
            for _ in range(ar_tokens):
                t = net.head(net.encode(t, ar_cache)[:, -1:]).argmax(-1)
            return t

        ms = timed(ar_tokens_fn, 1, device)
        put("ar_ms_per_token", ms / ar_tokens)
        put("ar_tokens_per_s", 1e3 / res["ar_ms_per_token"])
        for n in steps:
            put(f"speedup_vs_ar_{n}_steps", res[f"tokens_per_s_{n}_steps"] / res["ar_tokens_per_s"])
        measure_graphed(net, ids, x0, ar_tokens, reps, device, put)
    return res


def measure_graphed(
    net: DiffusionGemma,
    ids: torch.Tensor,
    x0: torch.Tensor,
    ar_tokens: int,
    reps: int,
    device: torch.device,
    put: Put,
) -> None:
    """The decoder pass and the AR token replayed as CUDA graphs (model/graphs.py; eager on a CPU dry run), through
    the net's own encode/decode as the engine calls them."""
    from diffill.model.graphs import PassGraphs
    from diffill.model.static_cache import capacity_for

    prompt = ids.shape[1]
    try:
        net.graphs = graphs = PassGraphs(net, capacity_for(prompt + max(x0.shape[1], ar_tokens)))
        cache = graphs.cache
        cache.reset()
        net.encode(ids, cache)  # the prompt (longer than a graphed causal pass: eager)
        put("graphed_decoder_pass_ms", timed(lambda: net.decode(x0, cache), reps, device))
        prev = net.decode(x0, cache)
        put("graphed_self_conditioned_pass_ms", timed(lambda: net.decode(x0, cache, prev), reps, device))

        def ar_tokens_fn() -> torch.Tensor:
            cache.truncate(prompt)
            t = ids[:, -1:]
            for _ in range(ar_tokens):
                t = net.head(net.encode(t, cache)[:, -1:]).argmax(-1)
            return t

        put("graphed_ar_ms_per_token", timed(ar_tokens_fn, 1, device) / ar_tokens)
        cache.truncate(prompt)
        c = x0.shape[1]
        positions = torch.arange(prompt, prompt + c, device=device)[None]
        cfg = SamplerConfig(max_denoising_steps=16, stability_threshold=None, confidence_threshold=None, fast=True)
        gen = torch.Generator(device=device).manual_seed(0)
        canvas_ms = timed(lambda: denoise_canvas(net, cache, positions, cfg, gen, c), 2, device)
        put("graphed_step_ms", canvas_ms / cfg.max_denoising_steps)  # whole steps: pass, head, sampler, renoise
        put("graphed_canvas_ms_16_steps", canvas_ms)
        if not graphs.enabled:
            put("graphed_error", "a capture failed: these ran eagerly")
    except Exception as exc:  # the run goes on without
        put("graphed_error", f"{type(exc).__name__}: {exc}"[:300])
    finally:
        net.graphs = None
