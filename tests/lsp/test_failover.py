"""lsp.failover: the embedded engine answers while the server fails, the server is probed with backoff (never in
a busy loop) and answers again once a probe succeeds."""

import threading
import time

from diffill.lsp.failover import Failover
from diffill.model.vllm_server import ServerError


class Engine:
    def __init__(self, name: str, fails: bool = False):
        self.name, self.fails = name, fails

    def answer(self):
        if self.fails:
            raise ServerError("HTTP 503: warming up")
        return self.name


def test_a_failure_moves_this_answer_and_the_next_to_the_fallback_until_a_probe_succeeds():
    served, reports, probes = Engine("served", fails=True), [], []
    up = threading.Event()

    def probe():
        probes.append(time.monotonic())
        if not up.is_set():
            raise ServerError("still down")

    f = Failover(served, lambda: Engine("embedded"), probe, reports.append, backoff=(0.02, 0.05))
    assert f.answer(lambda e: e.answer()) == "embedded" and f.down == "HTTP 503: warming up"
    assert f.answer(lambda e: e.answer()) == "embedded" and reports == ["HTTP 503: warming up"]
    time.sleep(0.3)
    gaps = [b - a for a, b in zip(probes, probes[1:], strict=False)]
    assert probes and all(g >= 0.04 for g in gaps[1:])  # the last pause repeats: no busy loop
    served.fails = False
    up.set()
    deadline = time.monotonic() + 2
    while f.down is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert f.down is None and reports[-1] is None and f.answer(lambda e: e.answer()) == "served"
    assert f.switches == 1


def test_closed_it_stops_probing():
    probes = []
    f = Failover(Engine("served"), lambda: Engine("embedded"), lambda: probes.append(1) or 1 / 0, lambda r: None,
                 backoff=(0.01,))  # fmt: skip
    f.failed("down")
    time.sleep(0.1)
    f.close()
    seen = len(probes)
    time.sleep(0.1)
    assert seen > 0 and len(probes) <= seen + 1


def test_the_fallback_loads_once_and_warm_survives_a_failing_load():
    made = []
    f = Failover(Engine("served"), lambda: made.append(1) or Engine("embedded"), lambda: None, lambda r: None)
    f.warm()
    f.warm()
    assert made == [1] and f.engine().name == "served"
    broken = Failover(Engine("served"), lambda: 1 / 0, lambda: None, lambda r: None)
    broken.warm()  # logged; the served model works without it
    assert broken.engine().name == "served"
