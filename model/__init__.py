"""diffill's model core: DiffusionGemma in plain PyTorch, its loader and its sampler."""

from .api import DiffusionModel
from .config import CheckpointError, DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .loader import load_model, save_model
from .sampler import SamplerConfig

__all__ = [
    "CheckpointError",
    "DiffusionGemma",
    "DiffusionGemmaConfig",
    "DiffusionModel",
    "SamplerConfig",
    "load_model",
    "save_model",
]
