"""The shared harness of `bench gpu`: the dry run's target is the tiny config on the CPU in fp32, a real run needs
CUDA, the inputs are the same every time and in range, the results file is JSON (or the text) in a made folder;
on a fake clock, a timing is the median of the timed runs (warm-up runs left out), the device synchronised
around each run, and the copy bandwidth counts the bytes read and written."""

import json
import types

import pytest
import torch

from diffill.bench.gpu import harness
from diffill.bench.gpu.harness import TINY, inputs, target, write


def test_dry_run_target_is_the_tiny_config_on_the_cpu():
    device, config, dtype = target(True, canvas_length=32)
    assert device.type == "cpu" and dtype == torch.float32
    assert config.canvas_length == 32
    assert {k: getattr(config, k) for k in TINY} == TINY


def test_a_real_run_needs_cuda(monkeypatch):
    monkeypatch.setattr(harness.torch.cuda, "is_available", lambda: False)
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


class Clock:
    """perf_counter that moves only when the timed function says how long it took."""

    def __init__(self, durations_s):
        self.now = 0.0
        self.durations = list(durations_s)
        self.calls = 0

    def perf_counter(self):
        return self.now

    def run(self):
        self.calls += 1
        self.now += self.durations.pop(0)


def test_timed_is_the_median_of_the_runs_after_warmup(monkeypatch):
    clock = Clock([0.100, 0.005, 0.001, 0.002])  # the 100 ms warm-up must not count (mean 2.67, median 2)
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    assert harness.timed(clock.run, reps=3, device=torch.device("cpu"), warmup=1) == pytest.approx(2.0)
    assert clock.calls == 4


def test_timed_even_reps_average_the_middle_two(monkeypatch):
    clock = Clock([0.002, 0.004])
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    assert harness.timed(clock.run, reps=2, device=torch.device("cpu"), warmup=0) == pytest.approx(3.0)


def test_timed_synchronises_a_cuda_device_around_each_run(monkeypatch):
    events = []
    monkeypatch.setattr(harness.torch.cuda, "synchronize", lambda device: events.append(("sync", device.type)))
    harness.timed(lambda: events.append("run"), reps=2, device=torch.device("cuda"), warmup=1)
    s = ("sync", "cuda")
    assert events == ["run", s, "run", s, s, "run", s]


def test_sync_does_nothing_on_the_cpu(monkeypatch):
    monkeypatch.setattr(harness.torch.cuda, "synchronize", lambda device: pytest.fail("synchronised a CPU"))
    harness.sync(torch.device("cpu"))


def test_copy_bandwidth_counts_read_and_write(monkeypatch):
    copied = []

    def fake_timed(fn, reps, device, warmup=1):
        copied.append(fn())  # the copy's destination
        return 4.0  # ms

    monkeypatch.setattr(harness, "timed", fake_timed)
    nbytes = 1 << 16
    assert harness.copy_bandwidth(torch.device("cpu"), nbytes, reps=1) == pytest.approx(2 * nbytes / 4e-3)
    (dst,) = copied
    assert dst.numel() * dst.element_size() == nbytes
    assert dst.abs().sum() > 0  # random data was copied in


def test_copy_bandwidth_measures_something_on_the_cpu():
    assert harness.copy_bandwidth(torch.device("cpu"), 1 << 16, reps=2) > 0
