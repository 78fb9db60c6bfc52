"""The shared setup of `bench gpu`: the dry run's target is the tiny config on the CPU in fp32, a real run needs
CUDA, the inputs are the same every time and in range, and the results file is JSON (or the text) in a made
folder."""

import json

import pytest
import torch

from diffill.bench import gpu_setup
from diffill.bench.gpu_setup import TINY, inputs, target, write


def test_dry_run_target_is_the_tiny_config_on_the_cpu():
    device, config, dtype = target(True, canvas_length=32)
    assert device.type == "cpu" and dtype == torch.float32
    assert config.canvas_length == 32
    assert {k: getattr(config, k) for k in TINY} == TINY


def test_a_real_run_needs_cuda(monkeypatch):
    monkeypatch.setattr(gpu_setup.torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="--dry-run"):
        target(False)


def test_inputs_are_the_same_each_time_and_in_range():
    _, config, _ = target(True)
    ids, x0 = inputs(config, prompt=50, canvas=20, device=torch.device("cpu"))
    assert ids.shape == (1, 50) and x0.shape == (1, 20)
    assert ids.min() >= 3 and ids.max() < config.vocab_size  # no pad/eos/bos in the prompt
    assert x0.min() >= 0 and x0.max() < config.vocab_size
    again = inputs(config, prompt=50, canvas=20, device=torch.device("cpu"))
    assert torch.equal(ids, again[0]) and torch.equal(x0, again[1])


def test_write_json_or_text_into_a_new_folder(tmp_path):
    res = {"step_ms": 1.5, "step_bytes": {"total": 3}, "dry_run": True}
    out = tmp_path / "a" / "b" / "gpu.json"
    write(out, res)
    text = out.read_text(encoding="utf-8")
    assert json.loads(text) == res and text.endswith("}\n")
    write(tmp_path / "c" / "t.txt", "table\nrows")
    assert (tmp_path / "c" / "t.txt").read_text(encoding="utf-8") == "table\nrows"
