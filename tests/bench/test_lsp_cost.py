"""`diffill bench lsp` reads the daemon's summed cost from diffill/status (pygls hands it as namedtuples)."""

from collections import namedtuple

from diffill.bench.lsp import answer_cost

Cost = namedtuple("Cost", "answers passes drafts accepted lookups looked_up ms stage_passes")
Ms = namedtuple("Ms", "prompt answer")
Passes = namedtuple("Passes", "answer")
Status = namedtuple("Status", "cost")


def test_the_cost_per_answer_comes_from_the_status_sums():
    status = Status(
        Cost(
            answers=4,
            passes=30,
            drafts=8,
            accepted=12,
            lookups=6,
            looked_up=18,
            ms=Ms(prompt=40.0, answer=400.0),
            stage_passes=Passes(answer=26),
        )
    )
    assert answer_cost(status) == {
        "passes": 7.5,
        "drafts": 2.0,
        "accepted_per_draft": 1.5,
        "lookups": 1.5,
        "accepted_per_lookup": 3.0,
        "prompt_ms": 10.0,
        "answer_ms": 100.0,
        "answer_passes": 6.5,
    }
    empty = answer_cost(
        Status(Cost(answers=0, passes=0, drafts=0, accepted=0, lookups=0, looked_up=0, ms=None, stage_passes=None))
    )
    assert empty == {
        "passes": 0.0,
        "drafts": 0.0,
        "accepted_per_draft": 0.0,
        "lookups": 0.0,
        "accepted_per_lookup": 0.0,
    }
