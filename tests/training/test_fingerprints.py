"""Training fingerprints: the share of a text that the training corpus holds, and the file the embedded model ships."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from diffill.model.embedded import EMBEDDED_DIR
from diffill.training import fingerprints as fp
from diffill.training.card import set_section


def _module(seed: int, lines: int = 80) -> str:
    """A text of distinct code lines (no two modules share a line)."""
    body = "".join(f"    value_{seed}_{i} = compute_{i % 7}(value_{seed}_{i - 1}, {i * seed})\n" for i in range(lines))
    return f"def build_{seed}(value_{seed}_0):\n{body}    return value_{seed}_{lines - 1}\n"


def test_training_text_reads_whole_and_other_text_reads_none():
    prints = fp.fingerprint([_module(s) for s in range(5)])
    assert fp.overlap(prints, [_module(2)])[0] == 1.0
    assert fp.overlap(prints, [_module(9)])[0] == 0.0
    reindented = _module(3).replace("    ", "\t").replace(", ", " ,  ")  # spacing is not what makes code new
    assert fp.overlap(prints, [reindented])[0] == 0.0  # ", " -> " ,  " splits tokens differently: not the same lines
    assert fp.overlap(prints, [_module(3).replace("    ", "\t")])[0] == 1.0
    half = "\n".join(_module(4, 400).splitlines()[:200] + _module(11, 400).splitlines()[200:])
    prints = fp.fingerprint([_module(4, 400)])
    share, windows = fp.overlap(prints, [half])
    assert 0.3 < share < 0.7 and windows > 0


def test_a_window_in_many_training_files_is_boilerplate():
    header = "# Licensed under the Apache License, Version 2.0 (the License);\n" * 1 + "".join(
        f"# licence line {i} says what may be done with this file\n" for i in range(30)
    )
    many = [header + _module(s) for s in range(fp.COMMON_FILES + 1)]
    prints = fp.fingerprint(many)
    assert fp.overlap(prints, [header])[0] == 0.0  # in every file: not a fingerprint
    assert fp.overlap(prints, [_module(0)])[0] == 1.0
    assert fp.overlap(fp.fingerprint(many[: fp.COMMON_FILES]), [header])[0] == 1.0


def test_build_writes_the_file_and_one_section_of_the_data_card(tmp_path):
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"path": f"p{s}.py", "text": _module(s)}) + "\n" for s in range(4)))
    card = tmp_path / "DATA.md"
    card.write_text("# data\n\n## Corpus memory\n\n| p | MIT | 9 |\n")
    out = tmp_path / fp.FILE_NAME
    for _ in range(2):
        files, count = fp.build_fingerprints(corpus, out)
    assert files == 4 and count == len(fp.load_fingerprints(out)) > 0
    assert np.all(np.diff(fp.load_fingerprints(out).astype(np.float64)) > 0)  # sorted, distinct
    text = card.read_text()
    assert text.count(fp.DATA_SECTION) == 1 and "| p | MIT | 9 |" in text and f"{count:,} hashes" in text
    set_section(card, "## Corpus memory", "new memory")
    assert "| p | MIT | 9 |" not in card.read_text() and fp.DATA_SECTION in card.read_text()


def test_the_embedded_model_ships_the_fingerprints_of_its_training_split():
    """Built with the hashing of this module: a module of the standard library's training part reads as trained on,
    the held-out ones do not, but for the one that pip vendors (a change of the hashing without a rebuild fails here)."""
    shipped = load_file(str(EMBEDDED_DIR / fp.FILE_NAME))["hashes"]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    trained = [(stdlib / name).read_text(encoding="utf-8") for name in ("http/client.py", "unittest/case.py")]
    assert fp.overlap(shipped, trained)[0] > 0.9
    # a held-out module is in the training split all the same where pip vendors it (tomllib as tomli)
    vendored = [p.read_text(encoding="utf-8") for p in sorted((stdlib / "tomllib").glob("*.py"))]
    assert fp.overlap(shipped, vendored)[0] > 0.5
    clean = [
        p.read_text(encoding="utf-8") for name in ("asyncio", "email", "json") for p in (stdlib / name).rglob("*.py")
    ]
    share, windows = fp.overlap(shipped, clean)
    assert share < 0.01 and windows > 500
