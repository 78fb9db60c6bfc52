"""Where the models live and how the daemon loads one: the embedded default ships inside the package."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from .api import DiffusionModel
from .card import ModelCard
from .chat_tokenizer import ChatTokenizer
from .config import DiffusionGemmaConfig
from .corpus_memory import FILE_NAME as MEMORY_FILE
from .corpus_memory import CorpusMemory, load_memory
from .embedded import EMBEDDED_DIR, embedded_available
from .graphs import PassGraphs, graphable
from .loader import CheckpointError, resolve_checkpoint
from .prompt_cache import WORKING_ROOM
from .quant_io import quantization_entry
from .remote import RemoteModel, connect
from .sampler import SamplerConfig
from .server_url import is_server_url
from .static_cache import capacity_for
from .tokenizer import CodeTokenizer
from .vllm_server import Connection

log = logging.getLogger(__name__)


def pick_device(requested: str) -> str:
    if requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def pick_dtype(device: str, requested: str = "auto") -> torch.dtype:
    """bf16 on GPUs, fp32 on CPUs. `requested`: auto, float32 or bfloat16.

    bf16 on a CPU with native support (AVX512-BF16, AMX) makes a denoise step faster, but in the daemon its memory
    grew with every request (oneDNN's per-shape caches: prompts change length every time), so the CPU default
    stays fp32 and bf16 is a setting (`precision: bfloat16`; docs/benchmarks.md, "Tuned constants")."""
    if requested in ("float32", "fp32"):
        return torch.float32
    if requested in ("bfloat16", "bf16"):
        return torch.bfloat16
    return torch.float32 if device == "cpu" else torch.bfloat16


def pick_threads(requested: int | None, n_params: int) -> int:
    """`requested`, or (None) what fits: small models run fastest on one thread beside an editor (no OpenMP
    wake-ups across shared cores)."""
    if requested is not None:
        return requested
    cores = os.cpu_count() or 1
    if n_params < 50_000_000 or cores <= 2:
        return 1
    return min(cores // 2, 8)


RANDOM_SOURCE = "random:"  # a model source of random weights, for speed benchmarks (_random_model)
GRAPHED_PROMPT_TOKENS = 1024  # prompts up to this run on the CUDA graphs' working cache (longer ones eagerly)
QUANTIZE_FROM_PARAMS = 1_000_000_000  # smaller models gain nothing from quantized weights, and lose accuracy
MEMORY_HEADROOM = 1.2  # weights times this (activations, the cache, the allocator's slack) must fit the free memory


def pick_quantization(
    requested: str | None, device: str, config: DiffusionGemmaConfig | None, free_bytes: int | None = None,
    hopper: bool | None = None,
) -> str | None:  # fmt: skip
    """The weight format `requested` means here: a scheme, None (as stored), or for "auto" the device's best fit.
    On CUDA, a model of a billion parameters or more: fp8 on Hopper (PyTorch's grouped GEMM, kernels/grouped_fp8.py)
    if it fits the free memory, else int4 (the Triton kernels, a quarter of bf16); on other GPUs bf16 if it fits,
    else int4. Anything else (CPUs, MPS, the embedded model, a checkpoint without a config) stays as stored."""
    if requested != "auto":
        return None if requested in (None, "none") else requested
    if not str(device).startswith("cuda") or config is None:
        return None
    from .footprint import DENSE_BYTES, weight_footprint

    if weight_footprint(config, "bf16").total_bytes < QUANTIZE_FROM_PARAMS * DENSE_BYTES:
        return None
    if free_bytes is None or hopper is None:
        index = torch.device(device).index or 0
        free_bytes = torch.cuda.mem_get_info(index)[0] if free_bytes is None else free_bytes
        hopper = torch.cuda.get_device_capability(index) >= (9, 0) if hopper is None else hopper

    def fits(precision: str) -> bool:
        return weight_footprint(config, precision).total_bytes * MEMORY_HEADROOM <= free_bytes

    if hopper:
        return "fp8" if fits("fp8") else "int4"
    return None if fits("bf16") else "int4"


@dataclass
class LoadedModel:
    model: DiffusionModel | RemoteModel
    tokenizer: CodeTokenizer | ChatTokenizer
    source: str  # "embedded" or the path / hub id
    device: str
    memory: CorpusMemory | None = None  # code of the training corpus beside the weights (model.corpus_memory)

    @property
    def card(self) -> ModelCard:
        """What the checkpoint asks of diffill (model.card), read once when it loaded."""
        return self.model.card


def load(
    source: str = "",
    device: str = "auto",
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    quantization: str | None = None,
    dtype: str = "auto",
    connection: Connection | None = None,
) -> LoadedModel:
    """Loads the embedded model (source "") or a folder / hub id, or connects to a server (a URL; `connection`:
    how, else the URL alone). The folder's tokenizer says how completions are prompted (`load_tokenizer`):
    diffill's FIM sentinels or Gemma's chat template. `quantization`: see DiffusionModel.from_pretrained."""
    if is_server_url(source):
        return _served(connection or Connection(source))
    dev = pick_device(device)
    if source.startswith(RANDOM_SOURCE):
        return _random_model(source, dev, threads, dtype)
    if not source:
        if not embedded_available():
            raise CheckpointError(f"the embedded model is missing from {EMBEDDED_DIR} (broken install?)")
        folder = EMBEDDED_DIR
    else:
        folder = resolve_checkpoint(source)
    tokenizer = load_tokenizer(folder)  # before the weights: a checkpoint diffill cannot prompt fails at once
    quantization = pick_quantization(quantization, dev, _stored_config(folder))
    model = DiffusionModel.from_pretrained(
        folder, device=dev, dtype=pick_dtype(dev, dtype), progress=progress, quantization=quantization
    )
    _for_serving(model)
    if tokenizer.vocab_size > model.config.vocab_size:
        raise CheckpointError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size} ids, the model {model.config.vocab_size}"
        )
    if dev == "cpu":
        torch.set_num_threads(pick_threads(threads, sum(p.numel() for p in model.net.parameters())))
    # The corpus memory is ids of diffill's own tokenizer: a checkpoint with another tokenizer has none to use.
    memory = _memory(folder / MEMORY_FILE, tokenizer.vocab_size) if isinstance(tokenizer, CodeTokenizer) else None
    return LoadedModel(model, tokenizer, source or "embedded", dev, memory)


def _served(connection: Connection) -> LoadedModel:
    """The model a server serves (model.remote), prompted by its own tokenizer."""
    model, tokenizer = connect(connection, load_tokenizer)
    return LoadedModel(model, tokenizer, connection.base, "server")


def load_tokenizer(folder: Path) -> CodeTokenizer | ChatTokenizer:
    """A checkpoint's tokenizer, which says how the model is prompted (model.prompt_format): diffill's code
    tokenizer (FIM sentinels at ids 0-7), else a chat tokenizer with Gemma's turns and its chat template."""
    tok_path = folder / "tokenizer.json"
    if not tok_path.exists():
        raise CheckpointError(f"{folder}: no tokenizer.json")
    try:
        return CodeTokenizer.from_file(tok_path)
    except ValueError as code_error:
        try:
            return ChatTokenizer.from_folder(folder)
        except Exception as exc:
            raise CheckpointError(
                f"{tok_path}: neither a diffill code tokenizer ({code_error}) nor a Gemma chat tokenizer ({exc})"
            ) from exc


def _random_model(source: str, device: str, threads: int | None, dtype: str) -> LoadedModel:
    """`random:<scheme>[:<preset>]`: random weights of the 26B-A4B's shape (or a model/presets.py shape) in bf16,
    int8, int4 or fp8, made on the device, with the embedded tokenizer: the daemon end to end at the real model's
    speed with nothing to download (`diffill bench lsp --settings '{"model": "random:int4"}'` on a GPU)."""
    from .presets import PRESETS
    from .random_weights import random_quantized_model

    scheme, _, preset = source.removeprefix(RANDOM_SOURCE).partition(":")
    if scheme not in ("bf16", "int8", "int4", "fp8") or (preset and preset not in PRESETS):
        raise CheckpointError(
            f"{source}: a random model is random:<bf16|int8|int4|fp8>[:<{'|'.join(PRESETS)}>] (default: the 26B-A4B)"
        )
    tokenizer = CodeTokenizer.from_file(EMBEDDED_DIR / "tokenizer.json")
    shape = dict(PRESETS[preset]) if preset else {}
    config = DiffusionGemmaConfig(**{**shape, "vocab_size": max(shape.get("vocab_size", 0), tokenizer.vocab_size)})
    net = random_quantized_model(config, None if scheme == "bf16" else scheme, device, pick_dtype(device, dtype))
    if device == "cpu":
        torch.set_num_threads(pick_threads(threads, sum(p.numel() for p in net.parameters())))
    model = DiffusionModel(net, SamplerConfig(eos_token_ids=config.eos_ids, pad_token_id=config.pad_token_id))
    return LoadedModel(_for_serving(model), tokenizer, source, device)


def _for_serving(model: DiffusionModel) -> DiffusionModel:
    """The daemon's way to run a loaded model: the fast sampler (a Triton pass on CUDA, inverse-CDF draws on the
    CPU) and, on CUDA where every pass can be captured, its passes replayed as graphs (DIFFILL_NO_GRAPHS=1: not)."""
    model.sampler = replace(model.sampler, fast=True)
    if os.environ.get("DIFFILL_NO_GRAPHS", "") != "1" and graphable(model.net):
        model.net.graphs = PassGraphs(model.net, capacity_for(GRAPHED_PROMPT_TOKENS + WORKING_ROOM))
    return model


def _stored_config(folder: Path) -> DiffusionGemmaConfig | None:
    """The folder's config when its weights are stored unquantized (a quantized checkpoint loads as it is)."""
    path = folder / "config.json"
    if not path.exists() or quantization_entry(path) is not None:
        return None
    try:
        return DiffusionGemmaConfig.from_file(path)
    except (ValueError, TypeError, KeyError):
        return None


def _memory(path: Path, vocab_size: int) -> CorpusMemory | None:
    """The corpus memory beside a model's weights, or None (none there, or unreadable: the model works without)."""
    if not path.exists():
        return None
    try:
        return load_memory(path, vocab_size)
    except Exception as exc:  # a damaged memory must not cost the model
        log.warning("corpus memory %s not used: %s", path, exc)
        return None
