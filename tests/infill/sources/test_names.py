"""Known names: which names extend the word being typed, and when one replaces the draft's own word."""

import pytest
from engine_doubles import CODE, FakeModel, options
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.options import NameOptions
from diffill.infill.request import prompt_ids
from diffill.infill.sources.names import KnownNames, known_names
from diffill.model.tokenizer import CodeTokenizer

PRIOR = NameOptions().symbol_prior


def _names(text: str, offset: int, healed: str = "") -> KnownNames | None:
    return known_names(text, offset, healed, None, None, PRIOR)


def test_known_names_extending_the_typed_word(engine):
    text = "total = compute_total(a)\nx = compute_total(b) + compare(c)\ny = comp"
    healed = prompt_ids(text, len(text), len(text), engine.vocabulary, engine.options.prompt, heal=True)[1]
    known = _names(text, len(text), healed)
    assert known.healed == healed and known.prior == PRIOR
    assert known.typed == "comp" and known.names == ["compute_total", "compare"]  # the more frequent first
    assert _names(text + "ute", len(text)) is None  # the cursor inside a word
    assert _names("x = c", 5) is None  # one character says too little
    attrs = "self.count = 0\nself.name = n\nprint(self.count, other.size)\nself."
    assert _names(attrs, len(attrs)) == KnownNames("", "", ["count", "name"], PRIOR)  # what the file uses on self
    assert _names("x = y.", 6) is None  # nothing known about y
    # After `obj.` with a word begun, only names the file uses after a dot (not the file's functions); a relative
    # import's dot is no attribute.
    calls = "def read_config(path):\n    line = src.readline()\n    return f.re"
    assert _names(calls, len(calls)).names == ["readline"]
    plain = "def read_config(path):\n    line = src.readline()\n    return re"
    assert {"read_config", "readline"} <= set(_names(plain, len(plain)).names)
    rel = "import streams\nfrom .st"
    assert _names(rel, len(rel)).names == ["streams"]
    assert known_names(text, len(text), healed, None, None, None) is None  # switched off


@pytest.mark.parametrize("own_lead, expected", [(2.0, "ute_total(x)"), (20.0, "ress(x)")])
def test_a_known_name_replaces_the_drafts_word_unless_the_model_is_much_surer(own_lead, expected):
    """The draft's word (`compress`) against the file's `compute_total`: the known name wins while the model's
    own word leads by less than symbol_prior nats; the draft then continues after the chosen name."""
    tok = CodeTokenizer.train(CODE + ["total = m.compute_total(x)\ny = m.compress(x)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            drafts.append(prompt)  # the first drafts the word; a second continues after a chosen name
            return [(tok.encode("ress(x)\n") if len(drafts) == 1 else tok.encode("(x)\n"), 0.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, mix=None):
            return [0.0 if tok.decode(c).startswith("ress") else -own_lead for c in continuations]

    eng = CompletionEngine(Drafter(net), tok, options(steps=2, draft="ar", token_healing=False, copy_prior=None))
    text = "total = m.compute_total(x)\ny = m.comp\n"
    offset = text.index("comp\n") + 4
    drafts = []
    out = eng.complete(SyntaxDocument(text, "python"), offset)
    assert out is not None and out.text == expected
    assert len(drafts) == (2 if own_lead < PRIOR else 1)
    if len(drafts) == 2:  # the second draft continued from the prompt plus the name's tokens
        assert tok.decode(drafts[1][len(drafts[0]) :]) == "ute_total"
