"""Where an answer ends (infill.doubt): the floors by where it comes from, and the cut at the model's doubt."""

import math
from types import SimpleNamespace

import pytest
from engine_doubles import CODE, FakeModel, options, twice
from tiny import random_net, tiny_config

from diffill.infill import doubt, tuning
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.options import RankOptions
from diffill.model.tokenizer import EOS, SPECIAL_TOKENS, CodeTokenizer

SPECIALS = frozenset(range(len(SPECIAL_TOKENS)))  # the FIM tokenizer's (CodeTokenizer.special_ids)


def tuned(monkeypatch, **values) -> None:
    """infill.tuning's numbers as the test says (by lower-case name), for this test only."""
    for name, value in values.items():
        monkeypatch.setattr(tuning, name.upper(), value)


def test_the_doubt_floor_depends_on_where_the_answer_comes_from(monkeypatch):
    rank = RankOptions(min_confidence=0.3)
    tuned(monkeypatch, copy_min_confidence=0.5)
    assert doubt.doubt_floor("model", True, rank) == 0.3  # the encoder judges its own line
    assert doubt.doubt_floor("model", False, rank) is None  # the denoiser cut it already
    assert doubt.doubt_floor("copy", True, rank) == 0.5
    assert doubt.doubt_floor("next line", True, rank) is None  # a copied next line stays whole
    assert doubt.doubt_floor("model", True, RankOptions()) is None  # min_confidence 0 cuts nothing
    tuned(monkeypatch, copy_min_confidence=0.0)
    assert doubt.doubt_floor("copy", True, rank) is None


def test_the_answer_floor_depends_on_where_the_answer_comes_from(monkeypatch):
    rank = RankOptions(min_confidence=0.3)
    tuned(monkeypatch, answer_confidence=0.6, copy_answer_confidence=0.4, next_line_confidence=0.1)
    assert doubt.answer_floor("model", rank) == 0.6
    assert doubt.answer_floor("copy", rank) == 0.4
    assert doubt.answer_floor("next line", rank) == 0.1
    assert doubt.answer_floor("model", RankOptions()) is None  # min_confidence 0: off
    tuned(monkeypatch, copy_answer_confidence=0.0)
    assert doubt.answer_floor("copy", rank) is None


def test_prose_raises_the_floor_of_copies_only(monkeypatch):
    rank = RankOptions(min_confidence=0.3)
    tuned(monkeypatch, answer_confidence=0.6, copy_answer_confidence=0.4, next_line_confidence=0.1)
    tuned(monkeypatch, copy_prose_confidence=0.7)
    floors = [doubt.answer_floor(s, rank, prose=True) for s in ("model", "copy", "next line")]
    assert floors == [0.6, 0.7, 0.1]  # a copied next line in a docstring is most often right: its own floor
    assert doubt.answer_floor("copy", rank) == 0.4  # in code
    assert doubt.answer_floor("copy", RankOptions(), prose=True) is None  # min_confidence 0: all off
    tuned(monkeypatch, copy_prose_confidence=0.2)
    assert doubt.answer_floor("copy", rank, prose=True) == 0.4  # never lower than in code


def test_a_copy_that_one_place_continues_needs_more_belief(monkeypatch):
    rank = RankOptions(min_confidence=0.3)
    tuned(monkeypatch, answer_confidence=0.6, copy_answer_confidence=0.4, next_line_confidence=0.1)
    tuned(monkeypatch, lone_copy_confidence=0.55)
    assert doubt.answer_floor("copy", rank, places=1) == 0.55
    assert doubt.answer_floor("copy", rank, places=2) == 0.4  # places that agree are evidence
    assert doubt.answer_floor("next line", rank, places=1) == 0.1  # its own floor
    assert doubt.answer_floor("model", rank) == 0.6
    assert doubt.answer_floor("copy", RankOptions(), places=1) is None  # min_confidence 0: all off


def _asked(decode: dict[int, str], logps: list[float], prefix: list[float] | None = None, judged=None):
    def beliefs(ids):
        if judged is not None:
            judged.append(ids)
        return logps[: len(ids)], (prefix if prefix is not None else logps)[: len(ids)]

    return SimpleNamespace(beliefs=beliefs, decode=lambda ids: "".join(decode[i] for i in ids))


def test_the_cut_judges_the_tokens_past_the_healed_text_and_stops_at_eos():
    decode = {20: " ar", 21: "g", 22: ")", EOS: ""}
    judged = []
    asked = _asked(decode, [-9.0, -0.1, -9.0, 0.0], judged=judged)
    assert doubt.cut_at_doubt(asked, [20, 21, 22, EOS, 0], " ar", 0.5, specials=SPECIALS) == [
        20,
        21,
    ]  # ` ar` is typed: `)` doubted
    assert judged == [[20, 21, 22]]  # up to EOS
    doubted = _asked(decode, [-9.0, -9.0])
    assert (
        doubt.cut_at_doubt(doubted, [20, 21], "", 0.5, specials=SPECIALS) == []
    )  # the first token is doubted: no answer
    assert doubt.cut_at_doubt(doubted, [20, 21], "", None, specials=SPECIALS) is None
    sure = _asked(decode, [0.0] * 3)
    assert doubt.cut_at_doubt(sure, [20, 21, 22], "", 0.5, specials=SPECIALS) is None


def test_all_the_tokens_together_must_be_believed():
    decode = {20: "a", 21: "b", 22: "c", 23: "d"}
    asked = _asked(decode, [-0.2, -0.2, -0.2, -0.2])  # each p = 0.82, together 0.82 ** n
    assert doubt.cut_at_doubt(asked, [20, 21, 22, 23], "", 0.5, joint=0.6, specials=SPECIALS) == [
        20,
        21,
    ]  # 0.67, then 0.55
    assert doubt.cut_at_doubt(asked, [20, 21, 22, 23], "", 0.5, joint=0.4, specials=SPECIALS) is None  # 0.45 > 0.4
    assert doubt.cut_at_doubt(asked, [20, 21, 22, 23], "", None, joint=0.9, specials=SPECIALS) == []


def test_a_last_token_counts_every_token_that_goes_on_as_its_text_does():
    """` None` may be doubted against ` NoneType` while the text surely goes on with ` None`: that start is
    shown, what follows the doubted token is not."""
    decode = {20: " None", 21: ")", 22: ":"}
    asked = _asked(decode, [-1.2, -0.01, -0.01], prefix=[-0.05, -0.01, -0.01])
    assert doubt.cut_at_doubt(asked, [20, 21, 22], "", 0.5, specials=SPECIALS) == [20]
    assert doubt.cut_at_doubt(asked, [20], "", 0.5, specials=SPECIALS) is None  # alone, the start is the whole answer
    assert doubt.cut_at_doubt(_asked(decode, [-1.2], prefix=[-1.0]), [20], "", 0.5, specials=SPECIALS) == []


def test_a_draft_ends_where_its_cut_would_end_it_whatever_follows():
    """draft_ends: a draft being written stops once the cut at doubt ends the answer before what comes next and a
    token after the cut is drafted (the filters read the character after an answer); a token whose own belief
    fails (its text goes on) ends it after itself, since more follows."""
    decode = {20: "a", 21: "b", 22: "c", 23: "(", 24: "d", EOS: ""}
    asked = SimpleNamespace(decode=lambda ids: "".join(decode[i] for i in ids))
    ends = doubt.draft_ends(asked, "", 0.5, 0.6, SPECIALS)
    sure, doubted = math.log(0.9), math.log(0.3)
    assert not ends([20], [sure], [sure])
    assert not ends([20, 21, 22, 23], [sure] * 4, [sure] * 4)  # 0.66 together
    assert ends([20, 21, 22, 23, 24], [sure] * 5, [sure] * 5)  # 0.59: the fifth is not shown, nor what follows
    # `b` goes on surely, but not as itself: it is shown, what follows is not, once a token of it is drafted
    assert not ends([20, 21], [sure, doubted], [sure, sure])
    assert ends([20, 21, 22], [sure, doubted, sure], [sure, sure, sure])
    assert ends([20, 21], [doubted, sure], [doubted, sure])  # the first token doubted: no answer at all
    assert not ends([20, EOS], [sure, 0.0], [sure, 0.0])  # up to its end
    assert ends([20, 21, EOS], [sure, doubted, 0.0], [sure, doubted, 0.0])  # (an end is never judged)
    assert doubt.draft_ends(asked, "", None, None, SPECIALS) is None  # no cut at all: drafts go on
    # the healed text is given: its tokens are not judged
    assert not doubt.draft_ends(asked, "ab", 0.5, 0.6, SPECIALS)([20, 21], [doubted, doubted], [doubted, doubted])


def test_with_known_names_a_draft_goes_on_to_the_end_of_the_typed_word():
    """Known names are judged against the draft's word, and extend a cut inside it: a draft doubted inside the
    word stops only once its text has left the word."""
    decode = {20: "ab", 21: "c", 22: "d", 23: "("}
    asked = SimpleNamespace(decode=lambda ids: "".join(decode[i] for i in ids))
    ends = doubt.draft_ends(asked, "a", 0.5, 0.6, SPECIALS, whole_word=True)
    doubted = math.log(0.3)
    assert not ends([20, 21], [0.0, doubted], [0.0, doubted])  # `abc`: doubted, still in the word
    assert not ends([20, 21, 22], [0.0, doubted, 0.0], [0.0, doubted, 0.0])
    assert ends([20, 21, 22, 23], [0.0, doubted, 0.0, 0.0], [0.0, doubted, 0.0, 0.0])  # `abcd(`: the word ended
    plain = doubt.draft_ends(asked, "a", 0.5, 0.6, SPECIALS)
    assert plain([20, 21], [0.0, doubted], [0.0, doubted])


def test_the_cut_and_a_drafts_end_apply_one_rule():
    """doubted_at is the rule of both: on a finished answer the last token's own doubt cuts nothing more."""
    sure, doubted = math.log(0.9), math.log(0.3)
    logps, prefix = [sure, doubted], [sure, sure]
    assert doubt.doubted_at(logps, prefix, 0, 0.5, None) is None  # finished: all of it shown
    assert doubt.doubted_at(logps, prefix, 0, 0.5, None, more=True) == 2  # more to come: none of it shown
    assert doubt.doubted_at([doubted, sure], [doubted, sure], 0, 0.5, None) == 0
    assert doubt.doubted_at([doubted, sure], [doubted, sure], 1, 0.5, None) is None  # judged from token 1 on
    assert doubt.doubted_at([sure] * 5, [sure] * 5, 0, None, 0.6) == 4  # 0.9 ** 5 < 0.6


@pytest.mark.parametrize(
    "doubtful, floor, kept",
    [
        (3, 0.1, 3),  # cut before the doubtful fourth token (p = e^-5 < 0.1)
        (3, 0.001, None),  # e^-5 is above this floor: whole
        (None, 0.5, None),  # sure all along (p = e^-0.1): whole
        (0, 0.1, 0),  # the first token doubted: no answer
        (3, 0.0, None),  # off
    ],
)
def test_the_models_own_line_ends_before_the_first_doubtful_token(doubtful, floor, kept, monkeypatch):
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

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            assert tokens == answer  # the answer without its end
            return twice(logps)

        def denoise(self, prompt, cache=None, init=None, min_confidence=None, **kw):
            assert min_confidence == 0.0
            return super().denoise(prompt, init=init)

    monkeypatch.setattr(tuning, "ANSWER_CONFIDENCE", 0.0)
    knobs = options(steps=2, draft="ar", token_healing=False, symbol_prior=None, min_confidence=floor)
    eng = CompletionEngine(Drafter(net), tok, knobs)
    text = "from totals import total\n\n\ndef f(x):\n    return \n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("return ") + 7)
    if kept == 0:
        assert out is None
    else:
        assert out is not None and out.text == tok.decode(answer[:kept])


_COPYING = dict(steps=2, draft="ar", token_healing=False, symbol_prior=None)  # what _copying_engine's tests share


def _copying_engine(beliefs, **knobs):
    """An engine whose model drafts `Handler(x)` far below a copy of `logger = logging.getLogger(__name__)` and
    gives the tokens it judges the log-probabilities `beliefs(tokenizer, tokens)`; and its tokenizer."""
    tok = CodeTokenizer.train(CODE + ["logger = logging.getLogger(__name__)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode("Handler(x)\n"), -30.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            return [-1.0 for _ in continuations]

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            return twice(beliefs(tok, tokens))

    return CompletionEngine(Drafter(net), tok, options(**(_COPYING | knobs))), tok


@pytest.mark.parametrize("places, expected", [(1, None), (2, "Logger(__name__)")])
def test_a_copy_one_place_continues_is_judged_harder(places, expected, monkeypatch):
    """The model gives a copied rest of line p = 0.45 whole: enough for a line that two places continue
    (copy_answer_confidence 0.35), not for one that only one place does (lone_copy_confidence 0.55)."""
    tuned(monkeypatch, copy_answer_confidence=0.35, lone_copy_confidence=0.55)
    eng, _ = _copying_engine(lambda tok, tokens: [math.log(0.45)] + [0.0] * (len(tokens) - 1), min_confidence=0.4)
    place = "    logger = logging.getLogger(__name__)\n\n"
    text = "def f():\n" + place + "def h():\n" + place * (places - 1) + "def g():\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    assert (out.text if out is not None else None) == expected


@pytest.mark.parametrize("floor, expected", [(0.35, "Logger"), (0.0, "Logger(__name__)")])
def test_a_copy_is_cut_before_the_first_token_the_model_doubts(floor, expected, monkeypatch):
    """A copied rest of line ends before its first token under copy_min_confidence (the model's own answers have
    min_confidence): the copy's right start stands when its end goes wrong. 0 keeps copies whole."""
    judged = []

    def beliefs(tok, tokens):
        judged.append(tok.decode(tokens))
        sure = len(tok.encode("Logger"))
        return [0.0] * sure + [-2.0] * (len(tokens) - sure)  # unsure from `(` on

    tuned(monkeypatch, copy_min_confidence=floor, copy_answer_confidence=floor, lone_copy_confidence=floor)
    eng, tok = _copying_engine(beliefs, min_confidence=0.6)  # the copy judged whole, by the same floor
    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g():\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    head = tok.encode("Logger")
    assert tok.encode("Logger(__name__)")[: len(head)] == head  # (the premise: the copy's tokens start so)
    assert out is not None and out.text == expected and out.source == "copy"
    assert judged == (["Logger(__name__)"] if floor else [])
    eng.options = options(min_confidence=0.0, **_COPYING)  # nothing is cut: copies stay whole too
    assert eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3).text == "Logger(__name__)"
