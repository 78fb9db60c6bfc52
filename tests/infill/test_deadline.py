"""The latency budget (infill.deadline): passes are planned on what they cost here, and what was verified by the
deadline is the answer."""

import pytest
from engine_doubles import options

from diffill.infill.cost import Cost
from diffill.infill.deadline import RESERVE_PASSES, Deadline, PassClock
from diffill.infill.document import SyntaxDocument
from diffill.model.cancel import Cancelled


def test_the_clock_follows_what_passes_cost():
    clock = PassClock(weight=0.5)
    clock.observe(0.0, 0)
    assert clock.ms_per_pass is None
    clock.observe(40.0, 4)
    assert clock.ms_per_pass == 10.0
    clock.observe(60.0, 2)
    assert clock.ms_per_pass == 20.0  # half the old mean, half the new


def test_a_deadline_affords_the_passes_that_fit_in_the_time_left():
    now = [0.0]
    clock = PassClock(ms_per_pass=10.0)
    deadline = Deadline(100.0, clock, start=0.0, now=lambda: now[0])
    assert deadline.affords(1) and deadline.passes_left() == 9 - RESERVE_PASSES
    now[0] = 0.08  # 80 ms gone
    assert deadline.passes_left() == 0  # 15 ms left: one pass, which the reserve keeps
    assert not deadline.affords(1)
    free = Deadline(None, clock)
    assert free.affords(1000) and free.passes_left() is None
    assert Deadline(100.0, PassClock()).affords(1000)  # nothing measured yet: no basis to stop


def test_calibration_measures_a_pass(engine):
    ms = PassClock().calibrate(engine.model)
    assert ms > 0


def test_out_of_time_the_answer_is_what_was_verified(engine):
    kept, clock = engine.options, engine.pass_clock.ms_per_pass
    doc = SyntaxDocument("def f(x):\n    return g(x)\n\nname = call(arg", "python")
    try:
        engine.options = options(steps=4, draft="ar", draft_candidates=3)
        free = Cost()
        engine.complete(doc, len(doc.text), cost=free)
        engine.options = options(steps=4, draft="ar", draft_candidates=3, latency_budget_ms=50.0)
        engine.pass_clock.ms_per_pass = 20.0  # 50 ms afford no pass past the reserve
        tight = Cost()
        engine.complete(doc, len(doc.text), cost=tight)
        assert tight.passes < free.passes
    finally:
        engine.options, engine.pass_clock.ms_per_pass = kept, clock


@pytest.mark.parametrize("knobs", [{"speculative": True, "draft_candidates": 1}, {"draft_candidates": 3}])
def test_a_cancelled_request_stops_between_the_passes_of_its_draft(engine, knobs):
    """A rest of line is not denoised (the encoder wrote it), so its draft's rounds (speculative) or beam steps
    are where a newer keystroke cancels it."""
    kept = engine.options
    doc = SyntaxDocument("def f(x):\n    return g(x)\n\nname = call(arg", "python")
    asked = []

    def cancel() -> bool:
        asked.append(True)
        return len(asked) > 1  # after the draft's first pass

    try:
        engine.options = options(steps=4, draft="ar", **knobs)
        with pytest.raises(Cancelled):
            engine.complete(doc, len(doc.text), cancel=cancel)
        assert len(asked) == 2
    finally:
        engine.options = kept
