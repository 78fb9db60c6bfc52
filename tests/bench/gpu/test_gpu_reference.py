"""transformers' reference step on the tiny config on the CPU: timed, and scaled to all the config's layers when
fewer ran."""

import pytest
import torch

from diffill.bench.gpu.harness import TINY
from diffill.bench.gpu.reference import transformers_step_ms
from diffill.model import DiffusionGemmaConfig


def test_reference_step_scales_to_all_layers():
    pytest.importorskip("transformers")
    config = DiffusionGemmaConfig(**TINY, canvas_length=8)
    ref = transformers_step_ms(config, layers=1, canvas=8, prompt=8, reps=1, device=torch.device("cpu"))
    assert set(ref) == {"layers", "step_ms", "step_ms_scaled_to_all_layers"}
    assert ref["layers"] == 1 and ref["step_ms"] > 0
    assert ref["step_ms_scaled_to_all_layers"] == pytest.approx(ref["step_ms"] * TINY["num_hidden_layers"])
