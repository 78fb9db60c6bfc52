"""How a candidate from the code around competes with the model's own answer (infill.priors)."""

from diffill.infill.priors import best, trails, within


def test_the_best_candidate_counts_its_prior_and_loses_only_by_more_than_it():
    scores, priors = [-10.0, -4.0, -10.0], [8.0, 0.0, 8.0]
    assert best(scores) == 1 and best(scores, priors) == 0  # the first of equals
    assert not trails(-10.0, 8.0, -2.0) and trails(-10.0, 8.0, -1.9)
    assert within(scores, priors, 0, 0.5) == [2] and within(scores, priors, 0, 0.0) == [2]
    assert within(scores, priors, 0, -1.0) == []
