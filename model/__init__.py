"""diffill's model core: DiffusionGemma in plain PyTorch, its loader and its sampler.

The names below load on first use (PEP 562), so that a module that needs only a torch-free part (the tokenizer,
the FIM layout, `Cancelled`) does not import torch: the daemon answers `initialize` before torch is loaded.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "CheckpointError": "config",
    "DiffusionGemma": "diffusion_gemma",
    "DiffusionGemmaConfig": "config",
    "DiffusionModel": "api",
    "SamplerConfig": "sampler",
    "load_model": "loader",
    "save_model": "loader",
}

__all__ = [
    "CheckpointError",
    "DiffusionGemma",
    "DiffusionGemmaConfig",
    "DiffusionModel",
    "SamplerConfig",
    "load_model",
    "save_model",
]

if TYPE_CHECKING:
    from .api import DiffusionModel
    from .config import CheckpointError, DiffusionGemmaConfig
    from .diffusion_gemma import DiffusionGemma
    from .loader import load_model, save_model
    from .sampler import SamplerConfig


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
