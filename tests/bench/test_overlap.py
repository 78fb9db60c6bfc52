"""The contamination line of the quality commands, and the held-out sets they are documented on."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from diffill.bench import heldout
from diffill.bench.overlap import WARN_SHARE, report_overlap

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def test_trained_code_is_reported_with_a_warning_and_held_out_code_without():
    lines: list[str] = []
    share = report_overlap([(STDLIB / "http" / "client.py").read_text()], "", lines.append)
    assert share > WARN_SHARE and lines[0] == f"training overlap: {100 * share:.1f} %"
    assert lines[1].startswith("warning: the model trained on")
    lines.clear()
    share = report_overlap([(STDLIB / "json" / "decoder.py").read_text()], "", lines.append)
    assert share < WARN_SHARE and lines == [f"training overlap: {100 * share:.1f} %"]


def test_a_model_without_fingerprints_says_unknown(tmp_path):
    lines: list[str] = []
    assert report_overlap(["x = 1\n"], str(tmp_path), lines.append) is None
    assert lines[0].startswith("training overlap: unknown")
    assert report_overlap(["x = 1\n"], "google/diffusiongemma-26B-A4B-it", lines.append) is None


def test_held_out_sets_print_their_overlap_and_roots(tmp_path):
    """Sets fetched already are reused (no network): each gets its row, and the roots are grouped by language."""
    sets = (
        heldout.HeldOut("clean", "pypi", "clean==1", "src", "python"),
        heldout.HeldOut("trained", "pypi", "trained==1", "src", "python"),
    )
    (tmp_path / "clean" / "src").mkdir(parents=True)
    (tmp_path / "clean" / "src" / "decoder.py").write_text((STDLIB / "json" / "decoder.py").read_text())
    (tmp_path / "clean" / "src" / "notes.txt").write_text((STDLIB / "http" / "client.py").read_text())  # not Python
    (tmp_path / "trained" / "src").mkdir(parents=True)
    (tmp_path / "trained" / "src" / "client.py").write_text((STDLIB / "http" / "client.py").read_text())
    lines: list[str] = []
    roots = heldout.run(tmp_path, out=lines.append, sets=sets)
    assert roots == {"python": [str(tmp_path / "clean" / "src"), str(tmp_path / "trained" / "src")]}
    clean = next(line for line in lines if line.startswith("| clean |"))
    trained = next(line for line in lines if line.startswith("| trained |"))
    assert "| 1 | 0.0 % |" in clean and "| 1 | 100.0 % |" in trained
    assert lines[-1] == f"python: --root {tmp_path / 'clean' / 'src'} --root {tmp_path / 'trained' / 'src'}"
