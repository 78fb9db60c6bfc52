"""Ranking: a candidate's prior against the model's own answer, and where an answer is cut at doubt."""

from types import SimpleNamespace

import pytest
from engine_doubles import CODE, FakeModel, options
from tiny import random_net, tiny_config

from diffill.infill import ranking
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.options import CopyOptions, RankOptions
from diffill.model.tokenizer import EOS, CodeTokenizer


def test_the_best_candidate_counts_its_prior_and_loses_only_by_more_than_it():
    scores, priors = [-10.0, -4.0, -10.0], [8.0, 0.0, 8.0]
    assert ranking.best(scores) == 1 and ranking.best(scores, priors) == 0  # the first of equals
    assert not ranking.trails(-10.0, 8.0, -2.0) and ranking.trails(-10.0, 8.0, -1.9)
    assert ranking.within(scores, priors, 0, 0.5) == [2] and ranking.within(scores, priors, 0, 0.0) == [2]
    assert ranking.within(scores, priors, 0, -1.0) == []


def test_the_doubt_floor_depends_on_where_the_answer_comes_from():
    rank, copies = RankOptions(min_confidence=0.3), CopyOptions(copy_min_confidence=0.5)
    assert ranking.doubt_floor("model", True, rank, copies) == 0.3  # the encoder judges its own line
    assert ranking.doubt_floor("model", False, rank, copies) is None  # the denoiser cut it already
    assert ranking.doubt_floor("copy", True, rank, copies) == 0.5
    assert ranking.doubt_floor("next line", True, rank, copies) is None  # a copied next line stays whole
    assert ranking.doubt_floor("copy", True, rank, CopyOptions(copy_min_confidence=0.0)) is None
    assert ranking.doubt_floor("model", True, RankOptions(), copies) is None  # min_confidence 0 cuts nothing


def test_the_cut_keeps_a_token_past_the_healed_text_and_stops_at_eos():
    decode = {20: " ar", 21: "g", 22: ")", EOS: ""}
    judged = []

    def token_logprobs(ids):
        judged.append(ids)
        return [-9.0] * len(ids)

    asked = SimpleNamespace(token_logprobs=token_logprobs, decode=lambda ids: "".join(decode[i] for i in ids))
    assert ranking.cut_at_doubt(asked, [20, 21, 22, EOS, 0], " ar", 0.5) == [20, 21]  # ` ar` is typed: `g` stays
    assert judged == [[20, 21, 22]]  # up to EOS
    assert ranking.cut_at_doubt(asked, [20, 21], "", 0.5) == [20]
    assert ranking.cut_at_doubt(asked, [20, 21], "", None) is None
    sure = SimpleNamespace(token_logprobs=lambda ids: [0.0] * len(ids), decode=asked.decode)
    assert ranking.cut_at_doubt(sure, [20, 21, 22], "", 0.5) is None


@pytest.mark.parametrize(
    "doubtful, floor, kept",
    [
        (3, 0.1, 3),  # cut before the doubtful fourth token (p = e^-5 < 0.1)
        (3, 0.001, None),  # e^-5 is above this floor: whole
        (None, 0.5, None),  # sure all along (p = e^-0.1): whole
        (0, 0.1, 1),  # never before the first token
        (3, 0.0, None),  # off
    ],
)
def test_the_models_own_line_ends_before_the_first_doubtful_token(doubtful, floor, kept):
    """min_confidence on a rest-of-line answer of the model's own (AR drafts): the encoder's probability of each
    token decides where it ends, and the denoiser is asked for no cut of its own."""
    tok = CodeTokenizer.train(CODE * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    answer = tok.encode("total(x)")
    logps = [-0.1] * len(answer)
    if doubtful is not None:
        logps[doubtful:] = [-5.0] * (len(answer) - doubtful)
    assert len(answer) > 4

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(answer + tok.encode("\n"), -1.0)]

        def token_logprobs(self, prompt, tokens, cache=None, mix=None):
            assert tokens == answer  # the answer without its end
            return logps

        def generate(self, prompt, init=None, min_confidence=None, **kw):
            assert min_confidence == 0.0
            return super().generate(prompt, init=init)

    knobs = options(steps=2, draft="ar", token_healing=False, symbol_prior=None, min_confidence=floor)
    eng = CompletionEngine(Drafter(net), tok, knobs)
    text = "def f(x):\n    return \n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("return ") + 7)
    assert out is not None and out.text == tok.decode(answer[:kept])


@pytest.mark.parametrize("floor, expected", [(0.35, "Logger"), (0.0, "Logger(__name__)")])
def test_a_copy_is_cut_before_the_first_token_the_model_doubts(floor, expected):
    """A copied rest of line ends before its first token under copy_min_confidence (the model's own answers have
    min_confidence): the copy's right start stands when its end goes wrong. 0 keeps copies whole."""
    tok = CodeTokenizer.train(CODE + ["logger = logging.getLogger(__name__)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    judged = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode("Handler(x)\n"), -30.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            return [-1.0 for _ in continuations]

        def token_logprobs(self, prompt, tokens, cache=None, mix=None):
            judged.append(tok.decode(tokens))
            sure = len(tok.encode("Logger"))
            return [0.0] * sure + [-2.0] * (len(tokens) - sure)  # unsure from `(` on

    knobs = dict(steps=2, draft="ar", token_healing=False, symbol_prior=None, copy_min_confidence=floor)
    eng = CompletionEngine(Drafter(net), tok, options(min_confidence=0.6, **knobs))
    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g():\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    head = tok.encode("Logger")
    assert tok.encode("Logger(__name__)")[: len(head)] == head  # (the premise: the copy's tokens start so)
    assert out is not None and out.text == expected and out.source == "copy"
    assert judged == (["Logger(__name__)"] if floor else [])
    eng.options = options(min_confidence=0.0, **knobs)  # nothing is cut: copies stay whole too
    assert eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3).text == "Logger(__name__)"
