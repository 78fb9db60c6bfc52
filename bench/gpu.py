"""`diffill bench gpu`: the full-size 26B-A4B text stack at int4 on one GPU, random weights, in one run.

Reports ms per denoise step on a 256-token canvas (decoder pass + fused sampler step + fused self-conditioning
input), ms per canvas at 16/32/48 steps and tokens/s, against (a) the HBM roofline of a step from a copy-bandwidth
measurement made in the same run, (b) autoregressive decoding of the same int4 backbone at batch 1 (one token per
forward), (c) transformers' reference step in bf16 (`ref_layers` layers; fewer than 30 are scaled to 30 and the
report says so). Nothing is downloaded or installed. `dry_run` runs every part on a tiny config on the CPU
(the torch reference paths) so that the script itself is tested without a GPU.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from diffill.kernels import tiles
from diffill.kernels.grouped_fp8 import fp8_grouped_moe
from diffill.kernels.moe import fused_moe_triton
from diffill.kernels.qlinear import qlinear_triton
from diffill.kernels.sampler import sampler_step, soft_embedding
from diffill.kernels.tiles import Tiles, table_json
from diffill.model.cache import KVCache
from diffill.model.config import DiffusionGemmaConfig
from diffill.model.diffusion_gemma import DiffusionGemma
from diffill.model.draws import entropy_keep
from diffill.model.footprint import quantized_bytes, weight_footprint
from diffill.model.quant import QuantExperts, QuantLinear, QuantSpec, tile_weights, untile_weights
from diffill.model.random_weights import fill_quantized, random_quantized_model
from diffill.model.sampler import SamplerConfig, denoise_canvas

from .model import hf_config

TINY = dict(
    vocab_size=1024, hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=32, global_head_dim=64, num_global_key_value_heads=1, num_experts=8,
    top_k_experts=2, moe_intermediate_size=64, sliding_window=64,
)  # fmt: skip


DRY_RUN_SIZES: dict[str, Any] = dict(canvas=32, prompt=16, steps=(2, 3), ar_tokens=2)


# ----- timing -----
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], reps: int, device: torch.device, warmup: int = 1) -> float:
    """Median milliseconds of `fn` over `reps` runs after `warmup` runs (synchronised around each run)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def copy_bandwidth(device: torch.device, nbytes: int, reps: int) -> float:
    """Bytes/s of a device-to-device copy (read + write counted), the practical HBM roofline."""
    src = torch.empty(nbytes // 2, dtype=torch.float16, device=device).normal_()
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src), reps, device, warmup=2)
    return 2 * nbytes / (ms / 1e3)


# ----- one denoising step with the fused sampler -----
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

    def step(self, x: torch.Tensor, prev: tuple[torch.Tensor, float, torch.Tensor] | None, temp: float, seed: int):
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


def step_bytes(config: DiffusionGemmaConfig, spec: QuantSpec, canvas: int, prompt: int) -> dict[str, float]:
    """Bytes one denoise step must move at least: the weights of every expert the canvas touches (almost all
    of them at 256 tokens x top-8 of 128), the rest of the layers, the embedding twice (head and self-conditioning
    input), the fp32 logits written once and read twice (sampler, soft embedding), and the cached keys/values."""
    embed = config.vocab_size * config.hidden_size * 2
    e, h, ie = config.num_experts, config.hidden_size, config.moe_intermediate_size
    experts = config.num_hidden_layers * (quantized_bytes((e, 2 * ie, h), spec) + quantized_bytes((e, h, ie), spec))
    touched = 1 - (1 - config.top_k_experts / e) ** canvas  # expected share of experts used per layer
    layers = weight_footprint(config, spec).total_bytes - embed - experts * (1 - touched)
    logits = canvas * config.vocab_size * 4 * 3
    kv = 0
    for i in range(config.num_hidden_layers):
        shape = config.layer_shape(i)
        keys = prompt if config.layer_types[i] == "full_attention" else min(prompt, config.sliding_window - 1)
        kv += 2 * keys * shape.num_kv_heads * shape.head_dim * 2
    weights = layers + 2 * embed
    return {"weights": weights, "logits": logits, "kv": kv, "total": weights + logits + kv}


# ----- (c) transformers' reference step -----
def transformers_step_ms(
    config: DiffusionGemmaConfig, layers: int, canvas: int, prompt: int, reps: int, device
) -> dict:
    """One decoder step of transformers' DiffusionGemmaForBlockDiffusion in bf16 with `layers` layers."""
    from transformers import DiffusionGemmaForBlockDiffusion

    types = list(config.layer_types[:layers])
    types[-1] = "full_attention"
    hf_cfg = hf_config(
        canvas,
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, head_dim=config.head_dim,
        global_head_dim=config.global_head_dim, num_global_key_value_heads=config.num_global_key_value_heads,
        num_experts=config.num_experts, top_k_experts=config.top_k_experts,
        moe_intermediate_size=config.moe_intermediate_size, sliding_window=config.sliding_window,
        layer_types=types, max_position_embeddings=config.max_position_embeddings,
    )  # fmt: skip
    with torch.device(device):
        hf = DiffusionGemmaForBlockDiffusion._from_config(hf_cfg, dtype=torch.bfloat16).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, config.vocab_size, (1, prompt), generator=g).to(device)
    x = torch.randint(0, config.vocab_size, (1, canvas), generator=g).to(device)
    pos = torch.arange(prompt, prompt + canvas, device=device)[None]
    with torch.inference_mode():
        out = hf(input_ids=ids, decoder_input_ids=x)
        cache, prev = out.past_key_values, out.logits
        ms = timed(
            lambda: hf(
                past_key_values=cache, decoder_input_ids=x, self_conditioning_logits=prev, decoder_position_ids=pos
            ),
            reps,
            torch.device(device),
        )
    return {"layers": layers, "step_ms": ms, "step_ms_scaled_to_all_layers": ms * config.num_hidden_layers / layers}


def _target(dry_run: bool, **config_kw) -> tuple[torch.device, DiffusionGemmaConfig, torch.dtype]:
    """Where a measurement runs: the GPU with the full 26B-A4B config in bf16, or (dry run) the CPU with the tiny
    config in fp32, which checks the script without a GPU."""
    if dry_run:
        return torch.device("cpu"), DiffusionGemmaConfig(**TINY, **config_kw), torch.float32
    if not torch.cuda.is_available():
        raise RuntimeError("bench gpu needs a CUDA device (use --dry-run to check the script on the CPU)")
    return torch.device("cuda"), DiffusionGemmaConfig(**config_kw), torch.bfloat16


def _inputs(config: DiffusionGemmaConfig, prompt: int, canvas: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The same random prompt ids [1, prompt] and canvas ids [1, canvas] for every measurement."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, config.vocab_size, (1, prompt), generator=g).to(device)
    x0 = torch.randint(0, config.vocab_size, (1, canvas), generator=g).to(device)
    return ids, x0


# ----- the run -----
def run(
    out_path: str | Path,
    dry_run: bool = False,
    canvas: int = 256,
    prompt: int = 512,
    steps: tuple[int, ...] = (16, 32, 48),
    ar_tokens: int = 32,
    reps: int = 10,
    ref_layers: int = 30,
    scheme: str = "int4",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Runs every measurement and writes them as JSON to `out_path`; returns them."""
    device, config, dtype = _target(dry_run, canvas_length=canvas)
    copy_bytes = 1 << (20 if dry_run else 30)
    if dry_run:
        reps, ref_layers = 1, min(ref_layers, config.num_hidden_layers)
    spec = QuantSpec.of(scheme)
    t_start = time.perf_counter()
    res: dict[str, Any] = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else platform.processor() or "cpu",
                           "dry_run": dry_run, "scheme": scheme, "canvas": canvas, "prompt": prompt,
                           "torch": torch.__version__}  # fmt: skip
    bw = copy_bandwidth(device, copy_bytes, reps)
    res["copy_bandwidth_GBps"] = bw / 1e9
    log(f"copy bandwidth: {bw / 1e9:.1f} GB/s")

    res.update(_measure_ours(config, spec, device, dtype, canvas, prompt, steps, ar_tokens, reps, bw, log, t_start))
    _write(out_path, res)  # kept if the reference step below runs out of time
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the int4 model is gone: room for the bf16 reference
    # (c) transformers, bf16 (ref_layers 0: not measured, e.g. a second run that compares weight formats)
    try:
        if ref_layers <= 0:
            raise RuntimeError("not asked for (--ref-layers 0)")
        res["transformers"] = transformers_step_ms(config, ref_layers, canvas, prompt, max(1, reps // 2), device)
        res["step_speedup_vs_transformers"] = res["transformers"]["step_ms_scaled_to_all_layers"] / res["step_ms"]
    except Exception as exc:  # missing transformers (dev extra), or out of memory
        res["transformers"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    res["wall_s"] = time.perf_counter() - t_start
    _write(out_path, res)
    for line in summary(res):
        log(line)
    log(f"results written to {out_path}")
    return res


def _write(out_path: str | Path, res: dict[str, Any] | str) -> None:
    """The results file (its folder made): JSON for a dict, else the text as it is."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(res if isinstance(res, str) else json.dumps(res, indent=2) + "\n", encoding="utf-8")


def _measure_ours(config, spec, device, dtype, canvas, prompt, steps, ar_tokens, reps, bw, log, t_start) -> dict:
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
    ids, x0 = _inputs(config, prompt, canvas, device)
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

        def decoder_pass():
            return net.head(net._run(net.self_conditioning(net.embed(x0), None), positions, cache, False))

        put("decoder_pass_ms", timed(decoder_pass, reps, device))
        commit = timed(lambda: net.encode(x0, _fork(cache)), max(1, reps // 3), device)
        put("commit_ms", commit)
        for n in steps:
            ms = timed(lambda n=n: den.canvas(x0, n), 1 if n > 16 or device.type == "cpu" else 2, device)
            put(f"canvas_ms_{n}_steps", ms + commit)
            put(f"tokens_per_s_{n}_steps", canvas / ((ms + commit) / 1e3))
        # (a) roofline
        need = step_bytes(config, spec, canvas, prompt)
        put("step_bytes", need)
        put("roofline_step_ms", need["total"] / bw * 1e3)
        put("step_fraction_of_roofline", res["roofline_step_ms"] / res["step_ms"])
        # (b) autoregressive decoding, batch 1, one token per forward
        ar_cache = _fork(cache)
        tok = ids[:, -1:]

        def ar_tokens_fn():
            t = tok
            for _ in range(ar_tokens):
                t = net.head(net.encode(t, ar_cache)[:, -1:]).argmax(-1)
            return t

        ms = timed(ar_tokens_fn, 1, device)
        put("ar_ms_per_token", ms / ar_tokens)
        put("ar_tokens_per_s", 1e3 / res["ar_ms_per_token"])
        for n in steps:
            put(f"speedup_vs_ar_{n}_steps", res[f"tokens_per_s_{n}_steps"] / res["ar_tokens_per_s"])
        _measure_graphed(net, ids, x0, ar_tokens, reps, device, put)
    return res


def _measure_graphed(net, ids, x0, ar_tokens, reps, device, put) -> None:
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

        def ar_tokens_fn():
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


def _fork(cache: KVCache) -> KVCache:
    """A copy of the prompt cache that a commit or AR decoding may extend without touching the original."""
    import copy

    return copy.deepcopy(cache)


def summary(res: dict[str, Any]) -> list[str]:
    lines = [
        f"device {res['device']}, {res['scheme']} weights {res['weight_GB']:.2f} GB, canvas {res['canvas']}, "
        f"prompt {res['prompt']}",
        f"denoise step: {res['step_ms']:.2f} ms (roofline {res['roofline_step_ms']:.2f} ms at "
        f"{res['copy_bandwidth_GBps']:.0f} GB/s: {100 * res['step_fraction_of_roofline']:.0f} %)",
    ]
    for key in sorted(k for k in res if k.startswith("canvas_ms_")):
        n = key.split("_")[2]
        lines.append(
            f"canvas at {n} steps: {res[key]:.1f} ms, {res[f'tokens_per_s_{n}_steps']:.0f} tok/s "
            f"({res[f'speedup_vs_ar_{n}_steps']:.1f}x AR)"
        )
    lines.append(f"AR batch 1: {res['ar_ms_per_token']:.2f} ms/token, {res['ar_tokens_per_s']:.0f} tok/s")
    if "graphed_decoder_pass_ms" in res:
        lines.append(
            f"as CUDA graphs: decoder pass {res['graphed_decoder_pass_ms']:.2f} ms (eager "
            f"{res['decoder_pass_ms']:.2f}), self-conditioned {res['graphed_self_conditioned_pass_ms']:.2f} ms, "
            f"AR {res['graphed_ar_ms_per_token']:.2f} ms/token"
            + (
                f"; whole denoise step {res['graphed_step_ms']:.2f} ms (eager {res['step_ms']:.2f}), 16 steps "
                f"{res['graphed_canvas_ms_16_steps']:.1f} ms"
                if "graphed_step_ms" in res
                else ""
            )
        )
    elif "graphed_error" in res:
        lines.append(f"CUDA graphs: not measured ({res['graphed_error']})")
    ref = res["transformers"]
    if "error" in ref:
        lines.append(f"transformers: not measured ({ref['error']})")
    else:
        scaled = "" if ref["layers"] == 30 else f" ({ref['layers']} layers, scaled to all)"
        lines.append(
            f"transformers bf16 step: {ref['step_ms_scaled_to_all_layers']:.2f} ms{scaled}; "
            f"ours {res['step_speedup_vs_transformers']:.2f}x faster"
        )
    return lines


def profile_tables(out_path: str | Path, dry_run: bool = False, canvas: int = 256, prompt: int = 512) -> str:
    """Where a step's time goes: torch profiler tables (by device time and by host time, kernel launches counted)
    of one denoise step and one AR token of the same int4 stack, written to `out_path` and returned."""
    from torch.profiler import ProfilerActivity, profile

    device, config, dtype = _target(dry_run, canvas_length=canvas)
    torch.manual_seed(0)
    net = random_quantized_model(config, QuantSpec.of("int4"), device, dtype)
    ids, x0 = _inputs(config, prompt, canvas, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    parts = []
    with torch.inference_mode():
        cache = net.new_cache()
        net.encode(ids, cache)
        den = Denoiser(net, cache, torch.arange(prompt, prompt + canvas, device=device)[None], fused_soft=True)
        _, prev = den.step(x0, None, 0.8, 0)
        ar_cache = _fork(cache)
        tok = ids[:, -1:]
        for name, fn in (
            ("denoise step", lambda: den.step(x0, prev, 0.7, 1)),
            ("AR token", lambda: net.head(net.encode(tok, ar_cache)[:, -1:]).argmax(-1)),
        ):
            fn()  # compiled and warm
            _sync(device)
            with profile(activities=activities) as prof:
                fn()
                _sync(device)
            events = prof.key_averages()
            launches = sum(
                e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx")
            )
            parts.append(f"== {name}: {launches} kernel launches\n")
            parts.append(events.table(sort_by=sort, row_limit=30, max_name_column_width=70))
            parts.append(events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=70))
    text = "\n".join(parts)
    _write(out_path, text)
    return text


def kernel_sweeps(dry_run: bool) -> dict[tuple[str, int], list]:
    """Launch shapes `kernel_table` times per (kernel, tokens): output tiles, warps (Triton's default stages)."""

    if dry_run:
        return {("moe", 16): [Tiles(16, 32), Tiles(32, 64), Tiles(16, 32, split_k=2)],
                ("proj", 16): [Tiles(16, 32), Tiles(1, 32)]}  # fmt: skip
    few = [Tiles(16, bn, w) for bn in (16, 32, 64, 128) for w in (2, 4)]
    split = [Tiles(16, bn, 4, split_k=s) for bn in (32, 64) for s in (2, 4)]  # the MoE's down projection split
    gemv = [Tiles(1, bn, w) for bn in (32, 64, 128, 256) for w in (2, 4)]  # qlinear's matrix-vector kernel
    moe_many = [Tiles(bm, bn, w) for bm in (16, 32, 64) for bn in (32, 64, 128) for w in (4, 8)]
    proj_many = [Tiles(bm, bn, w) for bm in (32, 64, 128) for bn in (64, 128) for w in (4, 8)]
    return {("moe", 1): few + split, ("moe", 16): few + split, ("moe", 256): moe_many,
            ("proj", 1): few + gemv, ("proj", 16): few, ("proj", 256): proj_many}  # fmt: skip


def kernel_table(out_path: str | Path, dry_run: bool = False) -> str:
    """The quantized kernels alone at the 26B-A4B's shapes (one MoE layer, one attention projection) for 1, 16 and
    256 tokens: each way of reading int4 tiles (kernels/tiles.py PAIRED_INT4), the weights tile-major
    (DIFFILL_TILE_MAJOR), the fp8 experts through PyTorch's
    grouped GEMM (kernels/grouped_fp8.py), then the launch shapes of `kernel_sweeps`, as packed bytes moved per
    second against the copy bandwidth: one device call compares the variants and says which tiles to ship.
    Written to `out_path` and returned; the fastest shape per (kernel, tokens) goes to `out_path` with the suffix
    .json, a kernels/tiles.json to ship (or to point DIFFILL_TILES at)."""

    device, config, dtype = _target(dry_run)
    reps = 1 if dry_run else 20
    spec = QuantSpec.of("int4")
    bw = copy_bandwidth(device, 1 << (20 if dry_run else 30), reps)
    e, h = config.num_experts, config.hidden_size
    experts = QuantExperts(e, h, config.moe_intermediate_size, spec, device=device)
    proj = QuantLinear(h, config.num_attention_heads * config.head_dim, spec, device=device)
    for module in (experts, proj):
        fill_quantized(module, spec, device)
    expert_bytes = sum(b.nbytes for b in experts.buffers()) / e
    proj_bytes = sum(b.nbytes for b in proj.buffers())
    lines = [f"copy bandwidth {bw / 1e9:.0f} GB/s; int4; {e} experts top-{config.top_k_experts}, hidden {h}",
             f"{'kernel':<6} {'tokens':>6} {'variant':<24} {'ms':>9} {'GB/s':>7} {'% copy':>7}"]  # fmt: skip
    g = torch.Generator().manual_seed(0)
    inputs = {}
    for tokens in (1, 16, 256):
        x = torch.randn(tokens, h, generator=g).to(device, dtype)
        weights, index = torch.rand(tokens, e, generator=g).softmax(-1).topk(config.top_k_experts, dim=-1)
        inputs[tokens] = (x, weights.to(device), index.to(device), index.unique().numel() * expert_bytes)

    def row(name: str, tokens: int, variant: str, fn: Callable[[], object], moved: float) -> float | None:
        try:
            ms = timed(fn, reps, device, warmup=2)
        except Exception as exc:  # a launch shape the compiler refuses (shared memory, registers)
            lines.append(f"{name:<6} {tokens:>6} {variant:<24} failed: {type(exc).__name__}")
            return None
        rate = moved / (ms / 1e3)
        lines.append(f"{name:<6} {tokens:>6} {variant:<24} {ms:>9.4f} {rate / 1e9:>7.0f} {100 * rate / bw:>6.1f}%")
        return ms

    default = tiles.PAIRED_INT4
    use_kernels = device.type == "cuda"  # the dry run checks the table on the CPU's torch paths
    with torch.inference_mode():
        try:
            for tokens, (x, weights, index, moe_bytes) in inputs.items():
                for flag in (True, False):
                    tiles.PAIRED_INT4 = flag
                    row("moe", tokens, f"paired={flag}", functools.partial(experts, x, weights, index), moe_bytes)
                    row("proj", tokens, f"paired={flag}", functools.partial(proj, x), proj_bytes)
        finally:
            tiles.PAIRED_INT4 = default
        for module in (experts, proj):  # the same weights tile-major (model.quant.tile_weights)
            tile_weights(module)
        for tokens, (x, weights, index, moe_bytes) in inputs.items():
            row("moe", tokens, "tile-major", functools.partial(experts, x, weights, index), moe_bytes)
            row("proj", tokens, "tile-major", functools.partial(proj, x), proj_bytes)
        for module in (experts, proj):
            untile_weights(module)
        fp8 = QuantExperts(e, h, config.moe_intermediate_size, QuantSpec.of("fp8"), device=device)
        fill_quantized(fp8, fp8.spec, device)
        fp8_bytes = sum(b.nbytes for b in fp8.buffers()) / e
        for tokens, (x, weights, index, _) in inputs.items():
            moved = index.unique().numel() * fp8_bytes
            row(
                "moe", tokens, "fp8 grouped", functools.partial(fp8_grouped_moe, x, weights, index, fp8.packed()), moved
            )
        del fp8
        packed = experts.packed()
        best: dict[str, dict[int, tuple[float, Tiles]]] = {}
        for (name, tokens), variants in kernel_sweeps(dry_run).items():
            x, weights, index, moe_bytes = inputs[tokens]
            for t in variants:
                label = f"bm={t.bm} bn={t.bn} warps={t.warps}" + (f" split={t.split_k}" if t.split_k > 1 else "")
                if name == "moe":
                    fn = functools.partial(fused_moe_triton, x, weights, index, packed, t)
                    cpu = functools.partial(experts, x, weights, index)
                    ms = row(name, tokens, label, fn if use_kernels else cpu, moe_bytes)
                else:
                    fn = functools.partial(qlinear_triton, x, proj.qweight, proj.scales, "int4", t)
                    ms = row(name, tokens, label, fn if use_kernels else functools.partial(proj, x), proj_bytes)
                if ms is not None and ms < best.setdefault(name, {}).get(tokens, (float("inf"), t))[0]:
                    best[name][tokens] = (ms, t)
    text = "\n".join(lines) + "\n"
    _write(out_path, text)
    chosen = {name: {tokens: t for tokens, (_, t) in rows.items()} for name, rows in best.items()}
    _write(Path(out_path).with_suffix(".json"), table_json(chosen) + "\n")
    return text


def main(
    dry_run: bool,
    out: str,
    ref_layers: int = 30,
    reps: int = 10,
    profile: str | None = None,
    kernels: str | None = None,
    scheme: str = "int4",
) -> int:
    """Entry point of `diffill bench gpu` (and bench/gpu.sh)."""
    if kernels:
        print(kernel_table(kernels, dry_run), end="")
        return 0
    if profile:
        print(profile_tables(profile, dry_run, **({"canvas": 32, "prompt": 16} if dry_run else {})))
        return 0
    sizes = DRY_RUN_SIZES if dry_run else {}
    run(out, dry_run=dry_run, ref_layers=ref_layers, reps=reps, scheme=scheme, **sizes)
    return 0
