"""Timing of `bench gpu` on a fake clock: the median of the timed runs (warm-up runs left out), the device
synchronised around each run, and the copy bandwidth counting the bytes read and written."""

import types

import pytest
import torch

from diffill.bench import gpu_timing


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
    monkeypatch.setattr(gpu_timing, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    assert gpu_timing.timed(clock.run, reps=3, device=torch.device("cpu"), warmup=1) == pytest.approx(2.0)
    assert clock.calls == 4


def test_timed_even_reps_average_the_middle_two(monkeypatch):
    clock = Clock([0.002, 0.004])
    monkeypatch.setattr(gpu_timing, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    assert gpu_timing.timed(clock.run, reps=2, device=torch.device("cpu"), warmup=0) == pytest.approx(3.0)


def test_timed_synchronises_a_cuda_device_around_each_run(monkeypatch):
    events = []
    monkeypatch.setattr(gpu_timing.torch.cuda, "synchronize", lambda device: events.append(("sync", device.type)))
    gpu_timing.timed(lambda: events.append("run"), reps=2, device=torch.device("cuda"), warmup=1)
    s = ("sync", "cuda")
    assert events == ["run", s, "run", s, s, "run", s]


def test_sync_does_nothing_on_the_cpu(monkeypatch):
    monkeypatch.setattr(gpu_timing.torch.cuda, "synchronize", lambda device: pytest.fail("synchronised a CPU"))
    gpu_timing.sync(torch.device("cpu"))


def test_copy_bandwidth_counts_read_and_write(monkeypatch):
    copied = []

    def fake_timed(fn, reps, device, warmup=1):
        copied.append(fn())  # the copy's destination
        return 4.0  # ms

    monkeypatch.setattr(gpu_timing, "timed", fake_timed)
    nbytes = 1 << 16
    assert gpu_timing.copy_bandwidth(torch.device("cpu"), nbytes, reps=1) == pytest.approx(2 * nbytes / 4e-3)
    (dst,) = copied
    assert dst.numel() * dst.element_size() == nbytes
    assert dst.abs().sum() > 0  # random data was copied in


def test_copy_bandwidth_measures_something_on_the_cpu():
    assert gpu_timing.copy_bandwidth(torch.device("cpu"), 1 << 16, reps=2) > 0
