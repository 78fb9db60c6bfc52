"""Copies the model judges (infill.sources.copies): when the model lets a copied line be the answer."""

import pytest
from engine_doubles import CODE, FakeModel, options
from tiny import random_net, tiny_config

from diffill.infill import tuning
from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.model.tokenizer import CodeTokenizer


@pytest.mark.parametrize("own_lead, expected", [(5.0, "Logger(__name__)"), (30.0, "Handler(x)")])
def test_a_line_copied_from_the_file_wins_unless_the_model_is_much_surer_of_its_own(own_lead, expected):
    """`logger = logging.get` starts like a line above: its rest is the answer (no denoising) unless the model's
    own line leads the copy by more than copy_prior (+ the whole-line bonus); the copy is scored to its line end."""
    tok = CodeTokenizer.train(CODE + ["logger = logging.getLogger(__name__)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    denoised, asked_ends = [], []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode("Handler(x)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            asked_ends.append(end_ids)
            return [-1.0 - own_lead for _ in continuations]

        def denoise(self, prompt, cache=None, init=None, **kw):
            denoised.append(init)
            return [t for t in init if t > 1]

    eng = CompletionEngine(Drafter(net), tok, options(steps=2, draft="ar", token_healing=False, symbol_prior=None))
    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g(x):\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    assert out is not None and out.text == expected
    assert out.source == ("model" if expected == "Handler(x)" else "copy")
    assert not denoised  # a rest of line is the encoder's draft as verified, or the copy: neither is denoised
    assert asked_ends and 1 in asked_ends[0] and tok.encode("\n")[0] in asked_ends[0]
    # off: the model's line, and no copy is scored
    eng.options = options(steps=2, draft="ar", token_healing=False, symbol_prior=None, copy_prior=None)
    asked_ends.clear()
    assert eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3).text == "Handler(x)"
    assert asked_ends == []


def test_copies_are_not_scored_when_the_time_left_does_not_afford_it():
    """Under a deadline that cannot pay for scoring the copies and cutting the winner, the model's own line is
    the answer (a copy that would have won is not looked at)."""
    tok = CodeTokenizer.train(CODE + ["logger = logging.getLogger(__name__)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    scored = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None, **kw):
            return [(tok.encode("Handler(x)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            scored.append(continuations)
            return [-1.0 for _ in continuations]

    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g(x):\n    logger = logging.get\n"
    offset = text.index("get\n") + 3
    for budget, want in ((None, "Logger(__name__)"), (60.0, "Handler(x)")):
        knobs = options(steps=2, draft="ar", token_healing=False, symbol_prior=None, latency_budget_ms=budget)
        eng = CompletionEngine(Drafter(net), tok, knobs)
        eng.pass_clock.ms_per_pass = 20.0  # 60 ms affords a pass and the reserve, not a copy's two
        scored.clear()
        out = eng.complete(SyntaxDocument(text, "python"), offset)
        assert out is not None and out.text == want and bool(scored) == (budget is None)


@pytest.mark.parametrize("own_lead", [5.0, 30.0])
def test_a_new_line_copies_the_line_that_followed_the_same_line_elsewhere(own_lead):
    """On an empty line, the line that followed `client = make_client()` in another function is the answer
    (one line, nothing drafted, nothing denoised) however much less the model scores it: the model's own line
    does not contest it."""
    tok = CodeTokenizer.train(CODE + ["client = make_client()\nclient.connect(host)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    denoised, line_beams = [], []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            if tok.encode("\n")[0] in stop_ids:
                line_beams.append(k)
            return [(tok.encode("    pass\n"), -1.0)]  # the line's indentation written again (token healing)

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            return [-1.0 - own_lead for _ in continuations]

        def denoise(self, prompt, cache=None, init=None, **kw):
            denoised.append(init)
            return super().denoise(prompt, init=init)

    knobs = options(steps=2, draft="ar", draft_candidates=3, symbol_prior=None)
    eng = CompletionEngine(Drafter(net), tok, knobs)
    text = "def f():\n    client = make_client()\n    client.connect(host)\n\ndef g(host):\n    client = make_client()\n    \n"
    offset = text.rindex("    \n") + 4
    out = eng.complete(SyntaxDocument(text, "python"), offset)
    assert line_beams == [] and denoised == []
    assert out is not None and out.text == "client.connect(host)" and out.source == "next line"


def test_mid_line_the_line_that_followed_the_line_above_elsewhere_is_finished():
    """`cli|` under `client = make_client()`: the line that followed it in another function starts with the typed
    text, so its rest is the answer (no draft, nothing denoised); typed text it does not start with gets none."""
    tok = CodeTokenizer.train(CODE + ["client = make_client()\nclient.connect(host)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    drafted = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            drafted.append(k)
            return [(tok.encode("ose()\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            return [-50.0 for _ in continuations]  # far less likely than the draft: a copy wins all the same

    eng = CompletionEngine(Drafter(net), tok, options(steps=2, draft="ar", symbol_prior=None, token_healing=False))
    head = "from prose import prose\n\n\ndef f():\n    client = make_client()\n    client.connect(host)\n\n\ndef g(host):\n"
    head += "    client = make_client()\n"
    out = eng.complete(SyntaxDocument(head + "    cli\n", "python"), len(head) + 7)
    assert out is not None and out.text == "ent.connect(host)" and drafted == [] and out.source == "next line"
    out = eng.complete(SyntaxDocument(head + "    pr\n", "python"), len(head) + 6)
    assert out is not None and out.text == "ose()" and drafted and out.source == "model"  # `pr` + its own


@pytest.mark.parametrize(
    "gap, hedge, expected", [(0.5, 1.0, "Equal("), (3.0, 1.0, "Equal(y, 2)"), (0.5, None, "Equal(y, 2)")]
)
def test_copies_the_model_finds_as_likely_give_the_start_they_share(gap, hedge, expected, monkeypatch):
    """Two lines start like `self.assert`; when the model scores their rests within COPY_HEDGE nats, the answer
    is what they share (`Equal(`), else the better one."""
    monkeypatch.setattr(tuning, "COPY_HEDGE", hedge)
    tok = CodeTokenizer.train(CODE + ["self.assertEqual(x, 1)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode("True(z)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
            return [-2.0 if "y" in tok.decode(c) else -2.0 - gap for c in continuations]

    eng = CompletionEngine(Drafter(net), tok, options(steps=2, draft="ar", symbol_prior=None, token_healing=False))
    text = "def f():\n    self.assertEqual(x, 1)\n\n\ndef g():\n    self.assertEqual(y, 2)\n\n\ndef h(y):\n    self.assert\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.rindex("assert") + 6)
    assert out is not None and out.text == expected and out.source == "copy"
