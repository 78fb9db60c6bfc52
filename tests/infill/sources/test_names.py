"""Known names: which names extend the word being typed, and when one replaces the draft's own word."""

from pathlib import Path

import pytest
from engine_doubles import CODE, FakeModel, options
from tiny import random_net, tiny_config

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.options import NameOptions
from diffill.infill.request import prompt_ids
from diffill.infill.sources.names import KnownNames, known_names, whole_name
from diffill.model.tokenizer import CodeTokenizer

PRIOR = NameOptions().symbol_prior
WEIGHTS = Path(__file__).resolve().parents[3] / "model" / "weights"


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

        def continuation_logprobs(self, prompt, continuations, cache=None, end_ids=None, mix=None, logps_out=None):
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


class _Texts:
    """What whole_name asks of the prompted model: its tokenizer's encode and decode."""

    def __init__(self, tok: CodeTokenizer):
        self.encode, self.decode = tok.encode, tok.decode


@pytest.mark.parametrize(
    "answer, cut, names, shown",
    [
        # the model doubted a name it never saw spelled: the definition is the evidence, the name is shown whole
        (" convert_psi_to_kilopascal(psi)", " convert_psi_to", ["convert_psi_to_kilopascal"], " convert_psi_to_kilopascal"),
        # a cut inside the typed word's own tokens goes on too
        (" convert_psi_to_kilopascal(psi)", " conv", ["convert_psi_to_kilopascal"], " convert_psi_to_kilopascal"),
        # two known names go on as the answer does: as far as they agree
        (" convert_psi_to_kilopascal(psi)", " convert_psi_", ["convert_psi_to_kilopascal", "convert_psi_to_bar"], " convert_psi_to_"),
        # ... and not at all when the cut already reaches that far
        (" convert_psi_to_kilopascal(psi)", " convert_psi_to_", ["convert_psi_to_kilopascal", "convert_psi_to_bar"], " convert_psi_to_"),
        # the answer's word is no known name: the cut stands
        (" convert_psi_to_pascal(psi)", " convert_psi_", ["convert_psi_to_kilopascal"], " convert_psi_"),
        # a cut past the word is left alone
        (" convert_psi_to_kilopascal(psi)", " convert_psi_to_kilopascal(", ["convert_psi_to_kilopascal"], " convert_psi_to_kilopascal("),
    ],
)  # fmt: skip
def test_a_cut_inside_a_known_name_goes_on_to_its_end(answer, cut, names, shown):
    tok = CodeTokenizer.from_file(WEIGHTS / "tokenizer.json")
    known = KnownNames(" convert_psi_", "convert_psi_", names, PRIOR)
    out = whole_name(_Texts(tok), tok.encode(answer), tok.encode(cut), known)
    assert tok.decode(out) == shown


def test_no_cut_or_no_known_names_leave_the_answer_as_it_is():
    tok = CodeTokenizer.from_file(WEIGHTS / "tokenizer.json")
    ids, cut = tok.encode(" convert_psi_to_kilopascal"), tok.encode(" convert_psi_")
    known = KnownNames(" convert_psi_", "convert_psi_", ["convert_psi_to_kilopascal"], PRIOR)
    assert whole_name(_Texts(tok), ids, None, known) is None  # the model believed it all
    assert whole_name(_Texts(tok), ids, cut, None) == cut


def test_workspace_names_come_from_the_module_the_code_names(tmp_path):
    """`units.convert_psi_` and `from units import *` say which module the name is from: another module's
    `convert_psi_to_bar` is no candidate there (it would make the whole name ambiguous), but stays one for a bare
    name in a file that imports neither."""
    from diffill.infill.context.workspace import WorkspaceIndex

    (tmp_path / "units.py").write_text("def convert_psi_to_kilopascal(psi):\n    return psi * 6.9\n")
    (tmp_path / "gauges.py").write_text("def convert_psi_to_bar(psi):\n    return psi / 14.5\n")
    index = WorkspaceIndex([tmp_path])
    index.scan()
    new = str(tmp_path / "main.py")
    for text in (
        "import units\n\n\nx = units.convert_psi_",
        "from units import *\n\n\nx = convert_psi_",
        "from units import convert_psi_",
        "from units import (\n    convert_kilopascal_to_psi,\n    convert_psi_",
    ):
        assert known_names(text, len(text), "", index, new, PRIOR).names == ["convert_psi_to_kilopascal"], text
    bare = "import os\n\n\nx = convert_psi_"
    assert sorted(known_names(bare, len(bare), "", index, new, PRIOR).names) == [
        "convert_psi_to_bar",
        "convert_psi_to_kilopascal",
    ]
    dotted = "import tools.units\n\n\nx = tools.units.convert_psi_"  # the module is the last name before the dot
    assert known_names(dotted, len(dotted), "", index, new, PRIOR).names == ["convert_psi_to_kilopascal"]
    other = "import gauges\n\n\nx = gauges.convert_psi_"
    assert known_names(other, len(other), "", index, new, PRIOR).names == ["convert_psi_to_bar"]
