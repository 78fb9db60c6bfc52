"""Loads DiffusionGemma checkpoints: a local folder or a Hugging Face hub id, safetensors only.

Weights are read one tensor at a time from memory-mapped safetensors into a model built on the meta device,
so peak memory stays near the model's own size. Vision weights are skipped (diffill is text-only); any other
unknown or missing tensor is an error that names it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import nn

from .config import CheckpointError, DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .quant import QuantSpec, tile_weights, untile_weights
from .quant_io import QUANT_KEY, prepare_quantized, quantization_entry

log = logging.getLogger(__name__)

DECODER_PREFIX = "model.decoder."
ENCODER_SCALAR = re.compile(r"^model\.encoder\.language_model\.layers\.(\d+)\.layer_scalar$")
SKIPPED_PREFIXES = ("model.encoder.vision_tower.", "model.encoder.embed_vision.", "model.encoder.embed_audio.")
TIED_KEYS = ("lm_head.weight",)
HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.jinja"]  # (chat_template.jinja: the chat format)


def resolve_checkpoint(path_or_id: str | os.PathLike, patterns: list[str] | None = None) -> Path:
    """A local folder as is; otherwise a hub id downloaded (or found) in the standard Hugging Face cache: the files
    `patterns` match (default HUB_PATTERNS, weights included).

    Honours HF_HUB_OFFLINE: offline, only an already cached snapshot is used.
    """
    p = Path(path_or_id).expanduser()
    if p.is_dir():
        return p
    if p.exists():
        raise CheckpointError(f"{path_or_id}: not a checkpoint folder (a file, not a folder)")
    if str(path_or_id).startswith((".", "/", "~")):
        raise CheckpointError(f"{path_or_id}: no such folder")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - a dependency
        raise CheckpointError("huggingface_hub is needed to download models") from exc
    try:
        # snapshot_download shows a tqdm progress bar per file and reuses the local cache.
        return Path(snapshot_download(repo_id=str(path_or_id), allow_patterns=patterns or HUB_PATTERNS))
    except Exception as exc:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        hint = " (offline mode: it must already be in the Hugging Face cache)" if offline else ""
        raise CheckpointError(f"cannot get model {path_or_id!r}{hint}: {exc}") from exc


def checkpoint_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        return sorted({folder / name for name in weight_map.values()})
    single = folder / "model.safetensors"
    if single.exists():
        return [single]
    found = sorted(folder.glob("*.safetensors"))
    if not found:
        pickles = [f.name for f in folder.glob("*.bin")] + [f.name for f in folder.glob("*.pt")]
        extra = f" (found {', '.join(pickles)}: pickle files are never loaded)" if pickles else ""
        raise CheckpointError(f"{folder}: no safetensors weights{extra}")
    return found


def _open(f: Path):
    try:
        return safe_open(str(f), framework="pt", device="cpu")
    except Exception as exc:
        raise CheckpointError(f"{f}: unreadable safetensors file ({exc})") from exc


def iter_tensors(files: list[Path]) -> Iterator[tuple[str, torch.Tensor]]:
    """Yields (key, tensor) reading each tensor through its own short-lived mapping, so that the mapped pages of
    the file are released as soon as the tensor has been copied (peak memory ~ model + one tensor)."""
    for f in files:
        with _open(f) as fh:
            keys = list(fh.keys())
        for key in keys:
            with _open(f) as fh:
                try:
                    tensor = fh.get_tensor(key)
                except Exception as exc:
                    raise CheckpointError(f"{f}: cannot read tensor {key} ({exc})") from exc
            yield key, tensor
            del tensor


def _target(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    mod_name, _, attr = name.rpartition(".")
    return model.get_submodule(mod_name) if mod_name else model, attr


def expected_names(model: DiffusionGemma) -> set[str]:
    names = {n for n, _ in model.named_parameters()}
    names |= {n for n, _ in model.named_buffers() if not n.startswith("inv_freq_")}
    return names


TensorHook = Callable[[nn.Module, str, torch.Tensor], bool]

_INITS = ("normal_", "uniform_", "kaiming_uniform_", "zeros_", "ones_", "constant_", "trunc_normal_")


@contextmanager
def _no_init() -> Iterator[None]:
    """Layers built on the meta device skip their random initialisation: the checkpoint's tensors replace every
    value, and a meta-device init goes through torch's reference ops, whose first use imports torch._dynamo
    (seconds of a daemon's start-up)."""
    kept = {name: getattr(nn.init, name) for name in _INITS}
    try:
        for name in _INITS:
            setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, fn in kept.items():
            setattr(nn.init, name, fn)


def load_model(
    folder: Path,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    on_tensor: TensorHook | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DiffusionGemma:
    """Builds the model on `device` from the safetensors in `folder`.

    `on_tensor(module, attr, tensor)` may take over placing a tensor (quantization on load); it returns True
    when it did. `progress(done, total)` is called after each tensor.
    """
    config_path = folder / "config.json"
    if not config_path.exists():
        raise CheckpointError(f"{folder}: no config.json")
    try:
        config = DiffusionGemmaConfig.from_file(config_path)
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{config_path}: invalid DiffusionGemma config ({exc!r})") from exc
    files = checkpoint_files(folder)
    with torch.device("meta"), _no_init():
        model = DiffusionGemma(config)
    quantized = quantization_entry(config_path)
    if quantized is not None:  # a checkpoint saved by save_quantized: packed weights and scales
        on_tensor = prepare_quantized(model, quantized, device, chain=on_tensor)
    expected = expected_names(model)
    loaded: set[str] = set()
    unknown: list[str] = []
    skipped = 0
    encoder_scalars = torch.ones(config.num_hidden_layers)
    total = sum(_count(f) for f in files)
    done = 0
    for key, tensor in iter_tensors(files):
        done += 1
        if progress is not None:
            progress(done, total)
        if key.startswith(SKIPPED_PREFIXES):
            skipped += 1
            continue
        if key in TIED_KEYS:
            continue
        if m := ENCODER_SCALAR.match(key):
            encoder_scalars[int(m.group(1))] = tensor.float().reshape(())
            loaded.add("encoder_layer_scalars")
            continue
        name = key[len(DECODER_PREFIX) :] if key.startswith(DECODER_PREFIX) else key
        if name not in expected:
            unknown.append(key)
            continue
        dtype_here = dtype or tensor.dtype
        module, attr = _target(model, name)
        current = getattr(module, attr)
        if tuple(current.shape) != tuple(tensor.shape):
            raise CheckpointError(f"{key}: shape {tuple(tensor.shape)} but the config expects {tuple(current.shape)}")
        loaded.add(name)
        if on_tensor is not None and on_tensor(module, attr, tensor):
            continue
        # copy=True: never alias the memory-mapped file (rewriting it under a running daemon would crash it).
        value = tensor.to(device=device, dtype=dtype_here if tensor.is_floating_point() else tensor.dtype, copy=True)
        if attr in module._parameters:
            module._parameters[attr] = nn.Parameter(value, requires_grad=False)
        else:
            module._buffers[attr] = value
    if unknown:
        raise CheckpointError(f"{folder}: unknown tensors in checkpoint: {', '.join(sorted(unknown)[:20])}")
    if skipped:
        log.info("skipped %d vision tensors (diffill is text-only)", skipped)
    missing = sorted(expected - loaded - {"encoder_layer_scalars"})
    missing = [n for n in missing if _is_meta(model, n)]
    if missing:
        raise CheckpointError(f"{folder}: missing tensors: {', '.join(DECODER_PREFIX + n for n in missing[:20])}")
    model.encoder_layer_scalars = encoder_scalars.to(device=device, dtype=dtype or model.embed_tokens.weight.dtype)
    model.reset_rope(device)
    return model.eval()


def _is_meta(model: nn.Module, name: str) -> bool:
    module, attr = _target(model, name)
    value = getattr(module, attr)
    return value is not None and value.is_meta


def _count(f: Path) -> int:
    with _open(f) as fh:
        return len(list(fh.keys()))


def save_model(model: DiffusionGemma, folder: str | os.PathLike, extra_tensors: dict | None = None) -> None:
    """Saves in the Hugging Face layout (decoder prefix, encoder layer scalars), loadable by transformers too."""
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    model.config.save(out / "config.json")
    tensors = {}
    for name, value in model.state_dict().items():
        if name == "encoder_layer_scalars":
            for i, s in enumerate(value):
                tensors[f"model.encoder.language_model.layers.{i}.layer_scalar"] = s.reshape(1).clone()
            continue
        tensors[DECODER_PREFIX + name] = value.detach().contiguous().clone()
    tensors.update(extra_tensors or {})
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def save_quantized(net: nn.Module, folder: str | os.PathLike) -> Path:
    """Writes a quantized model as safetensors + config.json with its `quantization` entry (fast to reload)."""
    spec: QuantSpec | None = getattr(net, "quantization", None)
    if spec is None:
        raise ValueError("the model is not quantized (quantize_model or from_pretrained(quantization=...) first)")
    out = Path(folder)
    tiled = untile_weights(net)  # checkpoints hold the row-major layout
    try:
        save_model(net, out)
    finally:
        if tiled:
            tile_weights(net)
    raw: dict[str, Any] = json.loads((out / "config.json").read_text(encoding="utf-8"))
    raw[QUANT_KEY] = spec.as_dict()
    (out / "config.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return out
