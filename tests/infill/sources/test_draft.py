"""The model's own answer: the canvas of a span, beam drafts for a rest of line, the known tail pinned."""

from engine_doubles import CODE, FakeModel, options
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.options import DraftOptions
from diffill.infill.request import Request
from diffill.infill.sources.draft import canvas_length, with_suffix_head
from diffill.infill.spans import Span
from diffill.model.fim import build_canvas
from diffill.model.tokenizer import CodeTokenizer


def test_a_rest_of_line_gets_the_short_canvas_and_other_spans_the_models_or_the_set_one():
    assert canvas_length(True, 32, DraftOptions(line_canvas_length=16)) == 16
    assert canvas_length(False, 32, DraftOptions(line_canvas_length=16)) == 32
    assert canvas_length(True, 12, DraftOptions(line_canvas_length=16)) == 12  # never longer than the others
    assert canvas_length(False, 32, DraftOptions(canvas_length=24)) == 24
    assert canvas_length(True, 32, DraftOptions()) == 32  # no line canvas: the same as the others


def test_pinned_tail_is_kept_at_the_end_of_the_line(engine):
    calls = []
    real = engine.model.denoise

    def spy(*args, **kwargs):
        calls.append(kwargs.get("pins"))
        out = real(*args, **kwargs)
        calls[-1] = (kwargs.get("pins"), out)
        return out

    engine.model.denoise = spy
    try:
        text = "print(value)\nx = call(\nitems = [a]\n"
        offset = text.index("call(") + 5
        doc = SyntaxDocument(text[:offset] + "))" + text[offset:], "python")
        engine.complete(doc, offset, key="t")
    finally:
        engine.model.denoise = real
    free = engine.tokenizer.decode(calls[0][1])
    if free.rstrip().endswith("))"):
        assert len(calls) == 1
    else:  # the free run did not end with "))": a second run holds it fixed, then EOS
        pins, out = calls[1]
        tail_ids = engine.tokenizer.encode("))")
        start = min(pins)
        assert out[start : start + len(tail_ids)] == tail_ids
        assert engine.tokenizer.decode(out).endswith("))")


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

    knobs = options(steps=2, draft="ar", draft_candidates=3, symbol_prior=None, token_healing=False)
    eng = CompletionEngine(Drafter(net), tok, knobs)
    text = "from totals import total\n\n\ndef f(x):\n    return \n"
    out = eng.complete(SyntaxDocument(text, "python"), text.index("return ") + 7)
    assert out is not None and out.text == "total(x)" and asked == [3]
    text = "def f(x):\n    y = 1\n    \n"
    eng.complete(SyntaxDocument(text, "python"), text.index("    \n") + 4)
    assert asked[1:] == [1]  # greedy


class PinnedDecoder:
    """A session double: its tokens are characters; a denoising writes `body` and then holds the pins."""

    def __init__(self, body: str, out_of_time: bool = False):
        self.body, self.out_of_time, self.pins = body, out_of_time, []

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def denoise(self, canvas, steps, seed, *, pins=None, min_confidence=0.0, **_):
        self.pins.append(pins)
        if self.out_of_time:
            return None
        out = [ord(c) for c in self.body][: min(pins)] + [0] * canvas
        for at, t in pins.items():
            out[at] = t
        return out[: out.index(END)]


END = 1


def block_request(head: str) -> Request:
    span = Span("block", 0, 0, multiline=True, indent="", max_lines=8)
    return Request("", 0, span, 0, [], "", frozenset({10, END}), END, frozenset({END}), suffix_head=head)


def test_a_block_body_is_denoised_again_with_the_suffix_head_pinned_where_it_ended():
    model = PinnedDecoder("x = 1\ny = 2")
    first = [ord(c) for c in "x = 1\nz"]
    got = with_suffix_head(model, block_request("\nreturn y"), first, 32, options())
    (pins,) = model.pins
    head = [ord(c) for c in "\nreturn y"]
    assert pins == {len(first) + i: t for i, t in enumerate(head)} | {len(first) + len(head): END}
    assert got == [ord(c) for c in "x = 1\ny"]  # the second answer up to the pins; the head is the buffer's


def test_no_suffix_head_no_room_no_answer_or_no_time_keep_the_answer():
    first = [ord(c) for c in "x = 1"]
    for head, ids, canvas, late in [("", first, 32, False), ("\nreturn y", first, 12, False),
                                    ("\nreturn y", [], 32, False), ("\nreturn y", first, 32, True)]:  # fmt: skip
        model = PinnedDecoder("x = 2", out_of_time=late)
        assert with_suffix_head(model, block_request(head), ids, canvas, options()) == ids
        assert len(model.pins) == (1 if late else 0)


def test_a_copy_seeds_a_rest_of_line_canvas_only_where_copies_are_on():
    from diffill.infill.options import CopyOptions
    from diffill.infill.sources.draft import copy_seed

    text = "total = f(a)\nprint(total)\ntotal = f"
    span = Span("line", len(text), len(text), multiline=False, indent="", max_lines=1)
    request = Request(text, len(text), span, len(text), [], "f", frozenset({10, END}), END, frozenset({END}))
    model = PinnedDecoder("")
    seeded = copy_seed(model, request, [], 12, CopyOptions(copy_prior=1.0))
    assert seeded.canvas[:5] == [ord(c) for c in "f(a)"] + [END] and len(seeded.canvas) == 12
    assert seeded.ids == [ord(c) for c in "f(a)"] and seeded.source == "copy" and seeded.places == 1
    assert copy_seed(model, request, [], 12, CopyOptions(copy_prior=None)) is None
    assert copy_seed(model, block_request(""), [], 12, CopyOptions(copy_prior=1.0)) is None


def test_a_fresh_line_is_seeded_with_the_line_that_followed_the_line_above_elsewhere():
    """As the encoder's plan tries them: the next line copied first, then a rest of line."""
    from diffill.infill.options import CopyOptions
    from diffill.infill.sources.draft import copy_seed

    text = "for item in items:\n    handle(item)\n\nfor item in items:\n    "
    span = Span("line", len(text), len(text), multiline=False, indent="", max_lines=1)
    request = Request(text, len(text), span, len(text), [], "", frozenset({10, END}), END, frozenset({END}))
    seeded = copy_seed(PinnedDecoder(""), request, [], 16, CopyOptions(copy_prior=1.0))
    assert seeded is not None and seeded.source == "next line" and seeded.ids == [ord(c) for c in "handle(item)"]


class LineDrafter:
    """A session double that writes `line` (characters as ids, then the line end), each token scoring -1; a
    draft after a `head` goes on where the head leaves the line."""

    def __init__(self, line: str, affords: bool = True):
        self.line, self.time, self.asked = [ord(c) for c in line] + [10], affords, []

    def affords(self, passes: int) -> bool:
        return self.time

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)

    def draft(self, max_tokens, stop, width=1, head=None, enough=None):
        self.asked.append(head)
        ids = self.line[len(head or []) :][:max_tokens]
        return ids, -float(len(ids))


def _line_request(text: str, healed: str = "") -> Request:
    span = Span("line", len(text), len(text), multiline=False, indent="", max_lines=1)
    return Request(text, len(text), span, len(text), [], healed, frozenset({10, END}), END, frozenset({END}))


def test_the_own_line_is_drafted_on_only_where_a_copy_needs_its_whole_score():
    """A draft stopped early (where it is no longer shown) scores at least what the whole line does: against a
    copy scoring below that, the rest is drafted and the whole line's score decides; against one scoring as much
    or more, what was drafted decides already (the copy wins either way)."""
    from diffill.infill.sources.draft import Draft, OwnLine, drafted

    request = _line_request("x = ")
    short = [ord(c) for c in "f(a"]
    for bar, resumed in [(-10.0, True), (-3.0, False), (-1.0, False)]:
        model = LineDrafter("f(a, b)")
        own = OwnLine(model, request, Draft(build_canvas(short, 16, END), -3.0, short), 16, 1)
        score = own.score_against(bar)
        assert model.asked == ([short] if resumed else [])
        assert score == (-3.0 - 5.0 if resumed else -3.0)  # `, b)` and the line end: five more tokens
        assert drafted(own.draft.canvas, END) == [ord(c) for c in ("f(a, b)" if resumed else "f(a")]
    whole = LineDrafter("f(a)")
    own = OwnLine(whole, request, Draft(build_canvas(short, 16, END), -3.0, None), 16, 1)
    assert own.score_against(-10.0) == -3.0 and whole.asked == []  # it went to its end: nothing to draft on
    late = LineDrafter("f(a, b)", affords=False)
    own = OwnLine(late, request, Draft(build_canvas(short, 16, END), -3.0, short), 16, 1)
    assert own.score_against(-10.0) == -3.0 and late.asked == []  # out of time: what was drafted decides


def test_the_own_lines_rest_is_written_when_the_line_an_answer_was_cut_from_is_asked_for():
    """whole_line: an answer drafted only as far as it is shown (`open_end`) is drafted on to its line's end when
    the filters ask; the score and the answer each go on only where they are the line drafted on (a known
    name may have taken the answer's word: the score is then the own draft's)."""
    from diffill.infill.sources.draft import Draft, OwnLine

    request = _line_request("x = ")
    short = [ord(c) for c in "f(a"]
    model = LineDrafter("f(a, b)")
    own = OwnLine(model, request, Draft(build_canvas(short, 16, END), -3.0, short, open_end=True), 16, 1)
    assert own.whole_line() == [ord(c) for c in "f(a, b)"] and model.asked == [short]
    assert own.draft.score == -8.0 and own.draft.short is None and not own.draft.open_end
    assert own.whole_line() == [ord(c) for c in "f(a, b)"] and len(model.asked) == 1  # written once
    named = [ord(c) for c in "g(a"]  # a name took the word: the answer is not the line the score is of
    model = LineDrafter("g(a, c)")
    own = OwnLine(model, request, Draft(build_canvas(named, 16, END), -3.0, short, open_end=True), 16, 1)
    assert own.whole_line() == [ord(c) for c in "g(a, c)"] and own.draft.score == -3.0 and own.draft.short == short
    late = LineDrafter("f(a, b)", affords=False)
    own = OwnLine(late, request, Draft(build_canvas(short, 16, END), -3.0, short, open_end=True), 16, 1)
    assert own.whole_line() == short and late.asked == []  # out of time: the line as far as it went
    whole = LineDrafter("f(a)")
    own = OwnLine(whole, request, Draft(build_canvas(short, 16, END), -3.0), 16, 1)
    assert own.whole_line() == short and whole.asked == []  # it went to its end
    healing = LineDrafter("f(ab, c)")  # out of time inside the healed text: what would follow is unconstrained
    own = OwnLine(
        healing, _line_request("x = f(ab", "f(ab"), Draft(build_canvas(short, 16, END), -3.0, short, True), 16, 1
    )
    assert own.whole_line() == short and own.score_against(-10.0) == -3.0 and healing.asked == []


def test_a_copy_the_decoder_keeps_is_judged_as_the_copy_it_is():
    """The canvas plan (no encoder drafts): a copied next line seeds the canvas; where the decoder keeps it, it is
    shown as a copied next line is (its floor, NEXT_LINE_CONFIDENCE), not as the model's own guess
    (ANSWER_CONFIDENCE); a decoder that writes something else is judged as the model."""
    import math

    from engine_doubles import CODE, FakeModel, options, twice
    from tiny import random_net, tiny_config

    from diffill.infill import tuning

    tok = CodeTokenizer.train(CODE + ["handle(item)\n"] * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    rewrite = []

    class Decoder(FakeModel):
        def denoise(self, prompt, cache=None, init=None, **kw):
            kept = [t for t in init if t > 1]
            return tok.encode("print(value)") if rewrite else kept

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            return twice([math.log(0.3) / len(tokens)] * len(tokens))  # p = 0.3 together

    assert tuning.NEXT_LINE_CONFIDENCE < 0.3 < tuning.ANSWER_CONFIDENCE
    eng = CompletionEngine(Decoder(net), tok, options(steps=2, draft="none", min_confidence=0.5, symbol_prior=None))
    text = "for item in items:\n    handle(item)\n\nfor item in items:\n    handle(\n"
    doc = SyntaxDocument(text, "python")
    out = eng.complete(doc, len(text) - 1)
    assert out is not None and out.text == "item)" and out.source == "next line"
    rewrite.append(True)
    assert eng.complete(doc, len(text) - 1) is None  # the decoder's own line, doubted


def test_the_canvas_plan_judges_a_rest_of_line_with_the_evidence_the_encoders_plan_judges_with():
    """The decoder writes the canvas plan's answer, but the cut that judges it reads the encoder's beliefs: those
    are mixed with the n-gram evidence of the code around, as the encoder's own plan mixes them (a copy kept whole
    is then believed as much in both plans). A block body has no evidence in either."""
    import math

    from engine_doubles import twice

    tok = CodeTokenizer.train(CODE + ["handle(item)\n"] * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    mixes = []

    class Decoder(FakeModel):
        def denoise(self, prompt, cache=None, init=None, **kw):
            return [t for t in init if t > 1] if init else tok.encode("item)")

        def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
            mixes.append(mix)
            return twice([math.log(0.9) / len(tokens)] * len(tokens))

    eng = CompletionEngine(Decoder(net), tok, options(steps=2, draft="none", min_confidence=0.5, symbol_prior=None))
    text = "for item in items:\n    handle(item)\n\nfor item in items:\n    handle(\n"
    out = eng.complete(SyntaxDocument(text, "python"), len(text) - 1)
    assert out is not None and out.text == "item)"
    assert mixes and all(m is not None for m in mixes)


def test_a_known_name_seeds_the_canvas_where_no_copy_does_and_keeps_the_decoders_own_cut():
    """The canvas plan with no copy: the known name the typed word goes on as most often nearby seeds the canvas
    (the healed text first), and the decoder keeps it or writes its own. Unlike a copy's canvas, a name's keeps
    the decoder's own cut (its span confidence); with no name nearby the canvas is noise."""
    from diffill.infill.options import EngineOptions

    tok = CodeTokenizer.train(CODE + ["handle_item(x)\nhandle_other(y)\n"] * 20, vocab_size=300)
    net = random_net(tiny_config(vocab_size=tok.vocab_size, canvas_length=16))
    asked = []

    class Decoder(FakeModel):
        def denoise(self, prompt, cache=None, init=None, **kw):
            asked.append((tok.decode([t for t in init if t > 1]) if init else None, kw["min_confidence"]))
            return [t for t in init if t > 1] if init else []

    o = options(steps=2, draft="none", min_confidence=0.5, copy_prior=None, symbol_prior=0.0)
    assert isinstance(o, EngineOptions) and o.rank.span_confidence > 0
    eng = CompletionEngine(Decoder(net), tok, o)
    text = "handle_item(a)\nhandle_item(b)\nhandle_other(c)\nvalue = handle_\n"
    out = eng.complete(SyntaxDocument(text, "python"), len(text) - 1)
    assert asked == [("handle_item", o.rank.span_confidence)] and out is not None and out.text == "item"
    asked.clear()
    text = "value = zq\n"
    assert eng.complete(SyntaxDocument(text, "python"), len(text) - 1) is None and asked == [
        (None, o.rank.span_confidence)
    ]
