"""The engine end to end on a small random model: spans, the known tail pinned on the canvas, cache reuse."""

import numpy as np
import pytest
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine, EngineOptions, _is_known_tail
from diffill.model import DiffusionModel, SamplerConfig
from diffill.model.memory import CorpusMemory
from diffill.model.tokenizer import CodeTokenizer

CODE = ["def f(x):\n    return g(x)\n", "print(value)\nitems = [a, b]\nname = call(arg, other)\n"] * 30


class FakeModel:
    """A model double for the engine's choices: tests give the drafts and scores; the denoiser keeps the draft
    and the encoder is sure of every token of an answer."""

    def __init__(self, net):
        self.net, self.config = net, net.config

    def generate(self, prompt, init=None, **kw):
        return [t for t in init if t > 1]  # the draft as the answer

    def token_logprobs(self, prompt, tokens, cache=None, mix=None):
        return [0.0] * len(tokens)


@pytest.fixture(scope="module")
def engine():
    tok = CodeTokenizer.train(CODE, vocab_size=300)
    cfg = tiny_config(vocab_size=tok.vocab_size, sliding_window=16, canvas_length=12)
    net = random_net(cfg, seed=0, std=0.4)
    model = DiffusionModel(net, SamplerConfig(eos_token_ids=[1], pad_token_id=0))
    return CompletionEngine(model, tok, EngineOptions(steps=4))


@pytest.mark.parametrize(
    "tail, known",
    [
        (")", True),
        ("):", True),
        ('")', True),
        ("]:", True),
        ("", False),
        ("x)", False),
        (") + y", False),
        (")" * 9, False),
    ],
)
def test_known_tail(tail, known):
    assert _is_known_tail(tail) is known


def test_pinned_tail_is_kept_at_the_end_of_the_line(engine):
    calls = []
    real = engine.model.generate

    def spy(*args, **kwargs):
        calls.append(kwargs.get("pinned"))
        out = real(*args, **kwargs)
        calls[-1] = (kwargs.get("pinned"), out)
        return out

    engine.model.generate = spy
    try:
        text = "print(value)\nx = call(\nitems = [a]\n"
        offset = text.index("call(") + 5
        doc = SyntaxDocument(text[:offset] + "))" + text[offset:], "python")
        engine.complete(doc, offset, key="t")
    finally:
        engine.model.generate = real
    free = engine.tokenizer.decode(calls[0][1])
    if free.rstrip().endswith("))"):
        assert len(calls) == 1
    else:  # the free run did not end with "))": a second run holds it fixed, then EOS
        pins, out = calls[1]
        tail_ids = engine.tokenizer.encode("))")
        start = min(pins)
        assert out[start : start + len(tail_ids)] == tail_ids
        assert engine.tokenizer.decode(out).endswith("))")


def test_completion_offsets_and_cache_reuse(engine):
    text = "def f(x):\n    return g(x)\n\nname = call(arg"
    doc = SyntaxDocument(text, "python")
    before = engine.prompt_cache.encoded_tokens
    first = engine.complete(doc, len(text), key="doc")
    encoded_first = engine.prompt_cache.encoded_tokens - before
    doc2 = SyntaxDocument(text + ",", "python")
    engine.complete(doc2, len(text) + 1, key="doc")
    encoded_second = engine.prompt_cache.encoded_tokens - before - encoded_first
    assert 0 < encoded_second <= 3 < encoded_first
    if first is not None:
        assert first.start == len(text) and first.end >= first.start


def test_suffix_is_cut_at_a_line_boundary(engine):
    engine.options.max_suffix_tokens = 12
    try:
        suffix = "\n".join(f"v{i} = f(a)" for i in range(12)) + "\n"
        ids = engine._suffix_ids(suffix)
        text = engine.tokenizer.decode(ids)
        assert text and len(ids) <= 12 and suffix.startswith(text) and text.endswith("\n")
        assert engine._suffix_ids("x = 1\n") == engine.tokenizer.encode("x = 1\n")
    finally:
        engine.options.max_suffix_tokens = 64


def test_min_confidence_drops_answers_the_model_doubts(engine):
    texts = [f"def f(x):\n    return g(x)\n\n{head}" for head in ("name = call(arg", "items = [a", "print(", "x = ")]
    docs = [SyntaxDocument(t, "python") for t in texts]
    engine.options.min_confidence = 0.0
    assert any(engine.complete(d, len(d.text)) is not None for d in docs)
    engine.options.min_confidence = 1.0  # no token of a random model is certain
    try:
        assert all(engine.complete(d, len(d.text)) is None for d in docs)
    finally:
        engine.options.min_confidence = 0.0


def test_token_healing_takes_back_the_partial_token(engine):
    text = "def f(x):\n    return g(x)\n\nname = call(arg"
    healed_prompt, healed = engine.prompt_for(text, len(text), len(text), heal=True)
    plain, none = engine.prompt_for(text, len(text), len(text))
    assert none == "" and healed and text.endswith(healed) and "\n" not in healed
    assert healed_prompt == plain[:-1]  # the prompt ends one token earlier
    first = engine.first_token_ids(healed)
    assert first and all(engine.tokenizer.decode([i]).startswith(healed) for i in first)


def test_token_healing_takes_back_a_word_typed_in_pieces(engine):
    """`argume|` is several tokens: the word is taken back whole (at most `heal_tokens`), so the model may write
    it in its own tokens; a name typed whole after a dot or a space is one piece and stays as before."""
    tok = engine.tokenizer
    text = "def f(x):\n    return g(x)\n\nname = call(argume"
    pieces = [tok.decode([i]) for i in tok.encode("name = call(argume")]
    assert len(tok.encode("argume")) > 1  # (the test's premise: the tiny tokenizer splits the word)
    plain = engine.prompt_for(text, len(text), len(text))[0]
    try:
        for limit in (1, 2, 8):
            engine.options.heal_tokens = limit
            prompt, healed = engine.prompt_for(text, len(text), len(text), heal=True)
            taken = len(plain) - len(prompt)
            assert text.endswith(healed) and healed.endswith(pieces[-1]) and 1 <= taken <= limit
            assert healed == "".join(pieces[-taken:]) and healed.strip().isidentifier()
            assert taken == limit or healed == "argume"
        assert healed == "argume"  # the whole word, not the `(` before it
    finally:
        engine.options.heal_tokens = EngineOptions.heal_tokens


def test_healing_constraint_holds_each_token_to_the_healed_text(engine):
    """Until a draft's text covers the healed text, its next token must start with what is left of it or be a
    start of it; then anything goes. The beam's drafts all write the healed text again."""
    tok = engine.tokenizer
    healed = " argume"
    allowed = engine.healing(healed)
    first = [tok.decode([i]) for i in allowed([])]
    assert first and all(t.startswith(healed) or healed.startswith(t) for t in first)
    assert " " in first or any(len(t) > 1 for t in first)
    piece = max((i for i in allowed([]) if healed.startswith(tok.decode([i]))), key=lambda i: len(tok.decode([i])))
    rest = healed[len(tok.decode([piece])) :]
    if rest:
        assert all(tok.decode([i]).startswith(rest) or rest.startswith(tok.decode([i])) for i in allowed([piece]))
    assert allowed(tok.encode(healed + "nt")) is None
    assert engine.healing("") is None
    text = "def f(x):\n    return g(x)\n\nname = call(argume"
    prompt, healed = engine.prompt_for(text, len(text), len(text), heal=True)
    drafts = engine.model.ar_drafts(prompt, 8, engine._line_stops(), None, engine.healing(healed), k=3)
    assert drafts and all(tok.decode(ids).startswith(healed) for ids, _ in drafts)


def test_token_healing_takes_back_a_trailing_space_but_not_an_indentation(engine):
    """`return |`: the space is a token the model rarely saw end a prefix (it writes ` x`, space first), so it is
    taken back and the answer must start with it; a line's indentation (a token with its newline) stays."""
    text = "def f(x):\n    return "
    assert engine.prompt_for(text, len(text), len(text), heal=True)[1] == " "
    text = "def f(x):\n    "
    assert engine.prompt_for(text, len(text), len(text), heal=True)[1] == ""


def test_healed_answer_does_not_repeat_the_typed_text():
    """A model that writes a whole natural token (say ` argument`) after the healed prompt, then `)`: the
    completion inserts only what follows the typed ` arg`."""
    from tiny import random_net, tiny_config

    tok = CodeTokenizer.train(CODE + ["value = call(argument)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=12))
    seen = {}

    class Writer:
        def __init__(self):
            self.net, self.config = net, net.config

        def generate(self, prompt, first_allowed=None, **kw):
            seen["first_allowed"] = first_allowed
            first = max(first_allowed or [tok.encode(" arg")[-1]], key=lambda i: len(tok.decode([i])))
            return [first, *tok.encode(")")]

    eng = CompletionEngine(Writer(), tok, EngineOptions(steps=2))
    text = "value = call( arg\n"
    doc = SyntaxDocument(text, "python")
    out = eng.complete(doc, text.index("\n"))
    healed = eng.prompt_for(text, text.index("\n"), text.index("\n"), heal=True)[1]
    assert healed and " arg".endswith(healed)
    longest = max(seen["first_allowed"], key=lambda i: len(tok.decode([i])))
    assert all(tok.decode([i]).startswith(healed) or healed.startswith(tok.decode([i])) for i in seen["first_allowed"])
    assert out is not None and out.text == tok.decode([longest])[len(healed) :] + ")"
    eng.options.token_healing = False
    out = eng.complete(doc, text.index("\n"))
    assert seen["first_allowed"] is None


def test_known_names_extending_the_typed_word(engine):
    text = "total = compute_total(a)\nx = compute_total(b) + compare(c)\ny = comp"
    healed = engine.prompt_for(text, len(text), len(text), heal=True)[1]
    healed, typed, names = engine._symbols(text, len(text), healed, None)
    assert typed == "comp" and names == ["compute_total", "compare"]  # the more frequent first
    assert engine._symbols(text + "ute", len(text), "", None) is None  # the cursor inside a word
    assert engine._symbols("x = c", 5, "", None) is None  # one character says too little
    attrs = "self.count = 0\nself.name = n\nprint(self.count, other.size)\nself."
    assert engine._symbols(attrs, len(attrs), "", None) == ("", "", ["count", "name"])  # what the file uses on self
    assert engine._symbols("x = y.", 6, "", None) is None  # nothing known about y
    # After `obj.` with a word begun, only names the file uses after a dot (not the file's functions); a relative
    # import's dot is no attribute.
    calls = "def read_config(path):\n    line = src.readline()\n    return f.re"
    assert engine._symbols(calls, len(calls), "", None)[2] == ["readline"]
    plain = "def read_config(path):\n    line = src.readline()\n    return re"
    assert {"read_config", "readline"} <= set(engine._symbols(plain, len(plain), "", None)[2])
    rel = "import streams\nfrom .st"
    assert engine._symbols(rel, len(rel), "", None)[2] == ["streams"]
    engine.options.symbol_prior = -1.0
    try:
        assert engine._symbols(text, len(text), healed, None) is None  # switched off
    finally:
        engine.options.symbol_prior = EngineOptions().symbol_prior


@pytest.mark.parametrize("own_lead, expected", [(2.0, "ute_total(x)"), (20.0, "ress(x)")])
def test_a_known_name_replaces_the_drafts_word_unless_the_model_is_much_surer(own_lead, expected):
    """The draft's word (`compress`) against the file's `compute_total`: the known name wins while the model's
    own word leads by less than symbol_prior nats; the draft then continues after the chosen name."""
    tok = CodeTokenizer.train(CODE + ["total = compute_total(x)\ny = compress(x)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            drafts.append(prompt)  # the first drafts the word; a second continues after a chosen name
            return [(tok.encode("ress(x)\n") if len(drafts) == 1 else tok.encode("(x)\n"), 0.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, mix=None):
            return [0.0 if tok.decode(c).startswith("ress") else -own_lead for c in continuations]

    eng = CompletionEngine(Drafter(net), tok, EngineOptions(steps=2, draft="ar", token_healing=False, copy_prior=-1))
    text = "total = compute_total(x)\ny = comp\n"
    offset = text.index("comp\n") + 4
    drafts = []
    out = eng.complete(SyntaxDocument(text, "python"), offset)
    assert out is not None and out.text == expected
    assert len(drafts) == (2 if own_lead < EngineOptions().symbol_prior else 1)
    if len(drafts) == 2:  # the second draft continued from the prompt plus the name's tokens
        assert tok.decode(drafts[1][len(drafts[0]) :]) == "ute_total"


def test_rest_of_line_drafts_keep_the_candidate_the_model_believes_most():
    """draft_candidates: a rest-of-line span asks for k drafts and seeds the canvas with the best-scored one
    (ar_drafts returns them likeliest first); a multi-line span keeps the plain greedy draft."""
    tok = CodeTokenizer.train(CODE * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    asked = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            asked.append(k)
            if k == 1:
                return [(tok.encode("pass\n"), -1.0)]
            return [(tok.encode("total(x)\n"), -1.0), (tok.encode("other(y)\n"), -3.0)]

    options = EngineOptions(steps=2, draft="ar", draft_candidates=3, symbol_prior=-1, token_healing=False)
    eng = CompletionEngine(Drafter(net), tok, options)
    text = "def f(x):\n    return \n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("return ") + 7)
    assert out is not None and out.text == "total(x)" and asked == [3]
    text = "def f(x):\n    y = 1\n    \n"
    eng.complete(SyntaxDocument(text, "python"), text.index("    \n") + 4)
    assert asked[1:] == [1]  # greedy


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

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            asked_ends.append(end_ids)
            return [-1.0 - own_lead for _ in continuations]

        def generate(self, prompt, init=None, **kw):
            denoised.append(init)
            return [t for t in init if t > 1]

    eng = CompletionEngine(Drafter(net), tok, EngineOptions(steps=2, draft="ar", token_healing=False, symbol_prior=-1))
    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g():\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    assert out is not None and out.text == expected
    assert bool(denoised) == (expected == "Handler(x)") and out.source == ("model" if denoised else "copy")
    assert asked_ends and 1 in asked_ends[0] and tok.encode("\n")[0] in asked_ends[0]
    eng.options.copy_prior = -1.0  # off: the model's line, and no copy is scored
    asked_ends.clear()
    assert eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3).text == "Handler(x)"
    assert asked_ends == []


def test_copies_come_from_open_documents_and_the_files_beside_but_never_the_file_itself(engine, tmp_path):
    """The open documents' text wins over the disk's (unsaved edits); the edited file's own path is left out,
    and a failing source of open documents costs nothing."""
    here, beside, opened = tmp_path / "here.py", tmp_path / "beside.py", tmp_path / "opened.py"
    here.write_text("secret_truth = 1\n")
    beside.write_text("on disk\n")
    opened.write_text("stale\n")
    engine.open_documents = lambda: {str(opened): "unsaved\n", str(here): "the editor's copy of this file\n"}
    try:
        assert sorted(engine._neighbours(str(here)).texts()) == ["on disk\n", "unsaved\n"]
        assert engine._neighbours(None).texts() == ["unsaved\n", "the editor's copy of this file\n"]

        def broken():
            raise RuntimeError("boom")

        engine.open_documents = broken
        assert sorted(engine._neighbours(str(here)).texts()) == ["on disk\n", "stale\n"]  # the disk's texts only
        # the server names the workspace roots: files beside a document outside them are not read
        engine.read_roots = [(tmp_path / "elsewhere").resolve()]
        assert engine._neighbours(str(here)).texts() == []
        engine.read_roots = [tmp_path.resolve()]
        assert sorted(engine._neighbours(str(here)).texts()) == ["on disk\n", "stale\n"]
    finally:
        engine.open_documents = None
        engine.read_roots = None


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

    options = EngineOptions(steps=2, draft="ar", token_healing=False, symbol_prior=-1, min_confidence=floor)
    eng = CompletionEngine(Drafter(net), tok, options)
    text = "def f(x):\n    return \n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("return ") + 7)
    assert out is not None and out.text == tok.decode(answer[:kept])


@pytest.mark.parametrize("prior, own_lead, copied", [(12.0, 5.0, True), (12.0, 30.0, False), (None, 30.0, True)])
def test_a_new_line_copies_the_line_that_followed_the_same_line_elsewhere(prior, own_lead, copied):
    """On an empty line, the line that followed `client = make_client()` in another function is the answer
    (one line, nothing denoised) unless the model's own best line (a one-line beam) leads it by more than
    next_line_prior; with no prior the copy wins and no beam is drafted."""
    tok = CodeTokenizer.train(CODE + ["client = make_client()\nclient.connect(host)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    denoised, line_beams = [], []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            if tok.encode("\n")[0] in stop_ids:
                line_beams.append(k)
            return [(tok.encode("pass\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            return [-1.0 - own_lead for _ in continuations]

        def generate(self, prompt, init=None, **kw):
            denoised.append(init)
            return super().generate(prompt, init=init)

    options = EngineOptions(steps=2, draft="ar", draft_candidates=3, symbol_prior=-1, next_line_prior=prior)
    eng = CompletionEngine(Drafter(net), tok, options)
    text = (
        "def f():\n    client = make_client()\n    client.connect(host)\n\ndef g():\n    client = make_client()\n    \n"
    )
    offset = text.rindex("    \n") + 4
    out = eng.complete(SyntaxDocument(text, "python"), offset)
    assert line_beams == ([3] if prior is not None else [])  # the model's own best line came from the beam
    assert out is not None and (out.text == "client.connect(host)") == copied
    assert bool(denoised) != copied


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

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            return [-50.0 for _ in continuations]  # far less likely than the draft: a copy wins all the same

    eng = CompletionEngine(Drafter(net), tok, EngineOptions(steps=2, draft="ar", symbol_prior=-1, token_healing=False))
    head = "def f():\n    client = make_client()\n    client.connect(host)\n\ndef g():\n    client = make_client()\n"
    out = eng.complete(SyntaxDocument(head + "    cli\n", "python"), len(head) + 7)
    assert out is not None and out.text == "ent.connect(host)" and drafted == [] and out.source == "next line"
    out = eng.complete(SyntaxDocument(head + "    pr\n", "python"), len(head) + 6)
    assert out is not None and out.text == "ose()" and drafted and out.source == "model"  # `pr` + its own


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

    options = EngineOptions(
        steps=2, draft="ar", token_healing=False, symbol_prior=-1, min_confidence=0.6, copy_min_confidence=floor
    )
    eng = CompletionEngine(Drafter(net), tok, options)
    text = "def f():\n    logger = logging.getLogger(__name__)\n\ndef g():\n    logger = logging.get\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3)
    head = tok.encode("Logger")
    assert tok.encode("Logger(__name__)")[: len(head)] == head  # (the premise: the copy's tokens start so)
    assert out is not None and out.text == expected and out.source == "copy"
    assert judged == (["Logger(__name__)"] if floor else [])
    eng.options.min_confidence = 0.0  # nothing is cut: copies stay whole too
    assert eng.complete(SyntaxDocument(text, "python"), text.index("get\n") + 3).text == "Logger(__name__)"


@pytest.mark.parametrize(
    "gap, hedge, expected", [(0.5, 1.0, "Equal("), (3.0, 1.0, "Equal(y, 2)"), (0.5, -1.0, "Equal(y, 2)")]
)
def test_copies_the_model_finds_as_likely_give_the_start_they_share(gap, hedge, expected):
    """Two lines start like `self.assert`; when the model scores their rests within copy_hedge nats, the answer
    is what they share (`Equal(`), else the better one."""
    tok = CodeTokenizer.train(CODE + ["self.assertEqual(x, 1)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            return [(tok.encode("True(z)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            return [-2.0 if "y" in tok.decode(c) else -2.0 - gap for c in continuations]

    options = EngineOptions(steps=2, draft="ar", symbol_prior=-1, token_healing=False, copy_hedge=hedge)
    eng = CompletionEngine(Drafter(net), tok, options)
    text = "def f():\n    self.assertEqual(x, 1)\n\n\ndef g():\n    self.assertEqual(y, 2)\n\n\ndef h():\n    self.assert\n"
    out = eng.complete(SyntaxDocument(text, "python"), text.rindex("assert") + 6)
    assert out is not None and out.text == expected and out.source == "copy"


@pytest.mark.parametrize("weight", [0.2, -1.0])
def test_every_model_call_of_a_completion_gets_the_cache_of_the_code_around(tmp_path, weight):
    """The draft, the copies' scores and the doubt cut all see one mixer (model.ngram) that learned the document's
    other lines and the files beside it; ngram_weight < 0 turns it off."""
    tok = CodeTokenizer.train(CODE + ["result = compute_total(items)\n"] * 40, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    seen = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            seen.append(("draft", mix))
            return [(tok.encode("other(x)\n"), -1.0)]

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None):
            seen.append(("copies", mix))
            return [-2.0 for _ in continuations]

        def token_logprobs(self, prompt, tokens, cache=None, mix=None):
            seen.append(("doubt", mix))
            return [0.0] * len(tokens)

    (tmp_path / "beside.py").write_text("total = compute_total(numbers)\n")
    here = tmp_path / "here.py"
    options = EngineOptions(
        steps=2, draft="ar", min_confidence=0.3, symbol_prior=-1, ngram_weight=weight, token_healing=False
    )
    eng = CompletionEngine(Drafter(net), tok, options)
    text = "def f(x):\n    return g(x)\n\nvalue = compute(\n"
    eng.complete(SyntaxDocument(text, "python"), text.index("compute(") + 8, path=str(here))
    kinds = {kind for kind, _ in seen}
    assert {"draft", "doubt"} <= kinds
    mixers = {id(m) for _, m in seen}
    if weight < 0:
        assert mixers == {id(None)}
        return
    assert len(mixers) == 1
    mix = seen[0][1]
    document, beside = mix.indexes
    assert document.continuations(tok.encode("return g("))[0] > 0  # the document's lines
    assert beside.continuations(tok.encode("compute_total("))[0] > 0  # the file beside it
    assert mix.tail[-3:] == tok.encode("value = compute(")[-3:]  # the prompt's end: the typed line


@pytest.mark.parametrize("memory_weight", [0.2, -1.0])
def test_the_corpus_memory_reaches_the_model_calls_even_without_the_code_around(memory_weight):
    """A model with a corpus memory (model.memory) hands it to every model call of a completion, with the
    memory's weights, though no file is around (no path) and the cache of the code around is off."""
    tok = CodeTokenizer.train(CODE, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    seen = []

    class Drafter(FakeModel):
        def ar_drafts(self, prompt, max_tokens, stop_ids, cache=None, first_allowed=None, k=1, mix=None):
            seen.append(mix)
            return [(tok.encode("other(x)\n"), -1.0)]

        def token_logprobs(self, prompt, tokens, cache=None, mix=None):
            seen.append(mix)
            return [0.0] * len(tokens)

    memory = CorpusMemory(np.array(tok.encode("value = compute(items)\n") * 3, dtype=np.uint16), tok.vocab_size)
    options = EngineOptions(
        steps=2,
        draft="ar",
        min_confidence=0.3,
        symbol_prior=-1,
        ngram_weight=-1,
        token_healing=False,
        memory_weight=memory_weight,
        memory_per_order=0.07,
        copy_prior=-1,
    )
    eng = CompletionEngine(Drafter(net), tok, options, memory)
    text = "def f(x):\n    return g(x)\n\nvalue = compute(\n"
    eng.complete(SyntaxDocument(text, "python"), text.index("compute(") + 8)
    assert seen and len({id(m) for m in seen}) == 1
    if memory_weight < 0:
        assert seen[0] is None
        return
    mix = seen[0]
    assert mix.memory is memory and mix.indexes == []
    assert (mix.memory_weight, mix.memory_per_order) == (0.2, 0.07)
