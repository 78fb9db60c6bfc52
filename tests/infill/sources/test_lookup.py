"""Answers while the model loads: the rest of a line looked up in the code around, where it is sure, with no torch."""

import subprocess
import sys

import pytest

from diffill.infill.context.neighbours import Neighbours
from diffill.infill.sources.lookup import LookupAnswers, embedded_lookups

READERS = """import json


def read_config(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_notes(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def read_lines(path):
    with open(path, encoding="utf-8") as handle:
        return handle.readlines()


def read_words(path):
"""
LINE = '    with open(path, encoding="utf-8") as handle:'


@pytest.fixture(scope="module")
def lookups() -> LookupAnswers:
    found = embedded_lookups()
    assert found is not None  # the embedded model ships with the package
    return LookupAnswers(found.tokenizer, lambda: None)  # the code around alone: no corpus memory


def test_a_line_the_code_around_repeats_is_looked_up_from_the_word_being_typed(lookups):
    for typed in ("    with op", "    with open(pa"):
        text = READERS + typed
        assert lookups.answer(text, len(text), None) == LINE[len(typed) :]


def test_where_the_code_around_goes_on_two_ways_the_answer_stops_before_they_part(lookups):
    one, other = '    with open(path, "r") as handle:', '    with open(path, "w") as handle:'
    text = (
        f"def a(path):\n{one}\n        pass\n\n\ndef b(path):\n{other}\n        pass\n\n\ndef c(path):\n    with open("
    )
    answer = lookups.answer(text, len(text), None)
    assert answer is not None and answer.startswith("path")
    parted = one.index('"r"')
    assert one[len("    with open(") :].startswith(answer) and len("    with open(") + len(answer) <= parted + 1


def test_no_answer_inside_a_line_nor_where_nothing_matches(lookups):
    text = READERS + "    with open(path)"
    assert lookups.answer(text, len(text) - 1, None) is None  # `)` after the cursor: nothing to join it to
    fresh = "def unrelated(queue):\n    while queue.pending_items_remaining("
    assert lookups.answer(fresh, len(fresh), None) is None


def test_the_files_beside_the_document_are_looked_up_too(lookups, tmp_path):
    beside = tmp_path / "readers.py"
    beside.write_text(READERS)
    here = tmp_path / "more.py"
    text = "import json\n\n\ndef read_table(path):\n    with open(pa"
    around = Neighbours([], [(beside.resolve(), READERS), (here.resolve(), "")], here.resolve(), frozenset())
    assert lookups.answer(text, len(text), None) is None
    assert lookups.answer(text, len(text), around) == LINE[len("    with open(pa") :]


def test_the_lookups_load_no_torch():
    """They answer while torch is being imported: importing it for them would hold the first answers up."""
    code = "import sys, diffill.infill.sources.lookup; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
