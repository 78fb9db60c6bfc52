"""`diffill bench cost`: one layer of each kind built at the given widths, timed apart and scaled to the depth."""

import json

import pytest
import torch

from diffill.bench import cost
from diffill.bench.gpu.harness import TINY
from diffill.model.config import DiffusionGemmaConfig

SHAPE = {**TINY, "num_hidden_layers": 12}  # the real layout's rule: every sixth layer full -> 10 sliding, 2 full


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    out = tmp_path_factory.mktemp("cost") / "cost.json"
    return cost.run(prompt=24, follow_up=4, canvases=(8, 16), steps=(2, 5), reps=1, shape=SHAPE, out_path=str(out)), out


def test_depth_is_the_real_configs_layer_kinds(figures):
    res, _ = figures
    kinds = DiffusionGemmaConfig(**SHAPE).layer_types
    assert res["depth"] == {"sliding_attention": kinds.count("sliding_attention"), "full_attention": 2}
    assert res["layers"] == 12


def test_scaled_figures_add_the_missing_layers(figures):
    res, _ = figures
    for key in ("prefill", "follow_up_prefill", "step_canvas_8", "step_canvas_16"):
        part = res[key]
        assert part["rest_ms"] < part["measured_ms"] < part["scaled_ms"]


def test_a_completion_is_the_follow_up_prefill_and_its_steps(figures):
    res, out = figures
    for width in (8, 16):
        for n in (2, 5):
            expect = res["follow_up_prefill"]["scaled_ms"] + n * res[f"step_canvas_{width}"]["scaled_ms"]
            assert res[f"completion_ms_canvas_{width}_{n}_steps"] == pytest.approx(expect)
    assert json.loads(out.read_text())["prompt"] == 24


def test_layer_clock_splits_time_by_layer_kind():
    class Slow(torch.nn.Module):
        def __init__(self, n: int):
            super().__init__()
            self.n = n

        def forward(self, x):
            for _ in range(self.n):
                x = x @ x
            return x

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Slow(1), Slow(40)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    net = Net()
    clock = cost.LayerClock(net, ["a", "b"])
    x = torch.eye(64)
    res = clock.scaled_ms(lambda: net(x), {"a": 1, "b": 0}, reps=3)
    assert res["scaled_ms"] < res["measured_ms"]  # the heavy kind counted zero times
    assert clock.spent[1] > clock.spent[0]
