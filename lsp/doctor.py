"""`diffill doctor`: what a bug report needs, and a check that each part loads."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version

from diffill.model.server_url import is_server_url


def _ver(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _memory() -> str:
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh)
        total = int(info["MemTotal"].split()[0]) // 1024
        avail = int(info["MemAvailable"].split()[0]) // 1024
        return f"{avail} MiB available of {total} MiB"
    except (OSError, KeyError, ValueError):
        return "unknown"


def report(model: str = "", served_files: str | None = None) -> Iterator[str]:
    import torch

    from diffill.infill.languages import check_all
    from diffill.model import runtime
    from diffill.model.prompt_format import format_for

    yield f"diffill {_ver('diffill')} on Python {sys.version.split()[0]} ({platform.platform()})"
    for pkg in (
        "torch",
        "pygls",
        "lsprotocol",
        "tree-sitter",
        "tokenizers",
        "safetensors",
        "huggingface_hub",
        "triton",
    ):
        yield f"  {pkg}: {_ver(pkg)}"
    cuda = torch.cuda.is_available()
    yield f"device: {'cuda ' + torch.cuda.get_device_name(0) if cuda else 'cpu'}; {os.cpu_count()} cores"
    yield f"memory: {_memory()}"
    yield "grammars:"
    for name, status in check_all().items():
        yield f"  {name}: {'ok' if status is True else status}"
    yield f"embedded model: {'present' if runtime.embedded_available() else 'MISSING'} ({runtime.EMBEDDED_DIR})"
    if is_server_url(model):
        yield from _server(model, served_files)
        return
    folder = yield from _footprint(model)
    if folder is not None and not any(folder.glob("*.safetensors")):
        yield f"model {model}: config only (no weights), not loaded"
        return
    try:
        loaded = runtime.load(model, "cpu")
        n = sum(p.numel() for p in loaded.model.net.parameters())
        cfg = loaded.model.config
        yield (
            f"model {loaded.source}: {n / 1e6:.1f}M parameters, {cfg.num_hidden_layers} layers, "
            f"{cfg.num_experts} experts top-{cfg.top_k_experts}, canvas {cfg.canvas_length}, "
            f"vocab {cfg.vocab_size}: loads ok"
        )
        yield f"prompt format: {format_for(loaded.tokenizer).name}"
        memory = f"{len(loaded.memory):,} tokens" if loaded.memory is not None else "none"
        yield f"corpus memory: {memory}"
    except Exception as exc:
        yield f"model {model or 'embedded'}: FAILED to load: {exc}"


def _server(url: str, served_files: str | None = None) -> Iterator[str]:
    """A server `model`: reachable, which model, where its files were read, and a test canvas with every diffusion
    knob diffill sends (a seed canvas, pins, steps, read-only) and its latency. The key comes from DIFFILL_API_KEY."""
    import time

    from diffill.model import runtime
    from diffill.model.prompt_format import format_for
    from diffill.model.vllm_server import CanvasRequest, Connection

    t0 = time.perf_counter()
    try:
        loaded = runtime.load(url, connection=Connection(url, model_files=served_files))
    except Exception as exc:
        yield f"server {url}: FAILED: {exc}"
        return
    model = loaded.model
    try:
        yield f"server {loaded.source}: reachable, serves {model.served} ({(time.perf_counter() - t0) * 1e3:.0f} ms)"
        cfg = model.config
        yield f"  its tokenizer and card: {model.files.folder} (from {model.files.how}, {model.files.name!r})"
        yield f"  its files: vocab {cfg.vocab_size}, canvas {cfg.canvas_length}; prompt format: {format_for(loaded.tokenizer).name}"
        prompt = loaded.tokenizer.encode("def add(a, b):\n    return")
        width = min(16, cfg.canvas_length)
        pins = {width - 2: min(model.eos_ids)}  # an answer's end, held
        request = CanvasRequest(prompt, width, 4, seed_canvas=[prompt[-1]] * width, pins=pins)
        times = []
        for _ in range(3):  # the first may compile the shape on the server
            answer = model.server.canvas(model.served, request, model.token_ids)
            times.append(answer.server_ms)
        yield (
            f"  diffusion knobs accepted (canvas {width}, seed canvas, pins, 4 steps, read-only): test completion "
            f"{times[0]:.0f} ms first, {min(times[1:]):.0f} ms after"
        )
    except Exception as exc:
        yield f"  test completion FAILED: {exc}"
    finally:
        model.close()


def _footprint(model: str) -> Iterator[str]:
    """Expected weight memory per precision from the model's config.json alone; returns the model's folder."""
    from pathlib import Path

    from diffill.model import runtime
    from diffill.model.config import DiffusionGemmaConfig
    from diffill.model.footprint import footprint_lines
    from diffill.model.loader import resolve_checkpoint

    try:
        local = Path(model).expanduser()
        if not model:
            folder = runtime.EMBEDDED_DIR
        elif (local / "config.json").exists():
            folder = local
        else:
            folder = resolve_checkpoint(model)
        config = DiffusionGemmaConfig.from_file(folder / "config.json")
    except Exception as exc:
        yield f"weights per precision: unavailable ({exc})"
        return None
    yield f"weights per precision (from {folder / 'config.json'}):"
    yield from footprint_lines(config)
    return folder
