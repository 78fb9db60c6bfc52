"""The command line, run as a user would."""

import subprocess
import sys


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diffill.lsp.cli", *args], capture_output=True, text=True, timeout=300)


def test_bench_model_prints_both_implementations_and_ratio():
    res = run_cli(
        "bench", "model", "--preset", "tiny", "--prompt", "16", "--canvas", "8", "--steps", "2", "--reps", "1"
    )
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines() if line.split()}
    for what in ("step", "prefill", "canvas"):
        ours, theirs, ratio = rows[what][1:4]
        assert float(ours) > 0 and float(theirs) > 0
        assert abs(float(ratio.rstrip("x")) - float(theirs) / float(ours)) < 0.02


def test_help_lists_commands():
    res = run_cli("--help")
    assert res.returncode == 0 and "bench" in res.stdout
