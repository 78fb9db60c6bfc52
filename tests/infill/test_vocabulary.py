"""The vocabulary's ids by text, on the shipped tokenizer (whose indentation tokens run to 16 spaces)."""

from pathlib import Path

import pytest

from diffill.infill.vocabulary import Vocabulary
from diffill.model.tokenizer import CodeTokenizer

WEIGHTS = Path(__file__).resolve().parents[2] / "model" / "weights"


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary(CodeTokenizer.from_file(WEIGHTS / "tokenizer.json"))


def test_a_fresh_lines_indentation_is_written_again_no_deeper(vocab):
    """On a fresh line the indentation taken back may be written in pieces, or whole and then the code, never
    with more whitespace: the cursor's line is where the code goes."""
    texts = vocab.texts()
    indenting = {texts[i] for i in vocab.indenting("        ")}
    assert {" ", "    ", "       ", "        "} <= indenting  # pieces of it, and all of it
    assert all("        ".startswith(t) or (t.startswith("        ") and not t[8].isspace()) for t in indenting)
    deeper = {texts[i] for i in vocab.consistent_with("        ")} - indenting
    assert deeper and all(t.startswith("         ") for t in deeper)  # what healing alone would allow


def test_consistent_ids_start_with_the_text_or_are_a_start_of_it(vocab):
    texts = vocab.texts()
    ids = vocab.consistent_with("retu")
    assert ids and all(texts[i].startswith("retu") or "retu".startswith(texts[i]) for i in ids)
    assert {"r", "return"} <= {texts[i] for i in ids}
