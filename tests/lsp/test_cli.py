"""The command line, run as a user would."""

import subprocess
import sys

import pytest


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diffill.lsp.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_bench_model_prints_both_implementations_and_ratio(dtype):
    res = run_cli(
        "bench", "model", "--preset", "tiny", "--prompt", "16", "--canvas", "8", "--steps", "2", "--reps", "1",
        "--dtype", dtype,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"dtype={dtype}" in res.stdout
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines() if line.split()}
    for what in ("step", "prefill", "canvas"):
        ours, theirs, ratio = rows[what][1:4]
        assert float(ours) > 0 and float(theirs) > 0
        assert abs(float(ratio.rstrip("x")) - float(theirs) / float(ours)) < 0.02


def test_help_lists_commands():
    res = run_cli("--help")
    assert res.returncode == 0 and "bench" in res.stdout


def _tiny_model_folder(tmp_path):
    from tiny import tiny_config

    from diffill.model import DiffusionGemma, save_model
    from diffill.model.tokenizer import CodeTokenizer

    tok = CodeTokenizer.train(["def f(x):\n    return x + 1\n", "import os\nprint(os.getcwd())\n"] * 20, 300)
    cfg = tiny_config(vocab_size=tok.vocab_size, sliding_window=8)
    folder = tmp_path / "m"
    save_model(DiffusionGemma(cfg), folder)
    tok.save(folder / "tokenizer.json")
    return folder


def test_doctor_reports_grammars_and_model(tmp_path):
    folder = _tiny_model_folder(tmp_path)
    res = run_cli("doctor", "--model", str(folder))
    assert res.returncode == 0, res.stderr
    for lang in ("python", "javascript", "typescript", "tsx", "go", "rust", "c", "cpp", "java", "lua"):
        assert f"  {lang}: ok" in res.stdout
    assert "loads ok" in res.stdout and "canvas 8" in res.stdout
    assert "corpus memory: none" in res.stdout and "prompt format: diffill FIM" in res.stdout
    from diffill.model.corpus_memory import FILE_NAME
    from diffill.training.memory import save_memory

    save_memory(folder / FILE_NAME, [list(range(10, 30))] * 100)
    assert "corpus memory: 2,100 tokens" in run_cli("doctor", "--model", str(folder)).stdout


def test_a_checkpoint_laid_out_like_googles_completes_and_says_its_prompt_format(gemma_checkpoint, tmp_path):
    doctor = run_cli("doctor", "--model", str(gemma_checkpoint))
    assert doctor.returncode == 0 and "loads ok" in doctor.stdout, doctor.stdout + doctor.stderr
    assert "prompt format: DiffusionGemma chat" in doctor.stdout
    source = tmp_path / "t.py"
    source.write_text("import os\n\n\ndef here():\n    return os.getc\n")
    res = run_cli("complete", str(source), "5", "18", "--model", str(gemma_checkpoint), "--steps", "2")
    answered = res.returncode == 0 and res.stdout.strip()
    assert answered or (res.returncode == 1 and res.stderr == "(no completion)\n"), res.stderr  # never an error


def test_doctor_reports_a_broken_model(tmp_path):
    res = run_cli("doctor", "--model", str(tmp_path))
    assert res.returncode == 0
    assert "FAILED to load" in res.stdout


def test_complete_runs_the_engine(tmp_path):
    folder = _tiny_model_folder(tmp_path)
    src = tmp_path / "a.py"
    src.write_text("import os\n\ndef f(x):\n    return \n")
    res = run_cli("complete", str(src), "4", "12", "--model", str(folder), "--steps", "2")
    # A random model may have nothing valid to say; either way the command ends cleanly and says so.
    assert "Traceback" not in res.stderr, res.stderr
    assert (res.returncode == 0 and res.stdout.strip()) or (res.returncode == 1 and "(no completion)" in res.stderr)


def test_complete_copies_from_the_files_beside(tmp_path):
    """`diffill complete` gives the engine the file's path, as an editor does: the embedded model finishes the
    line the way a file beside it does (alone it proposes `th):`)."""
    (tmp_path / "setup.py").write_text('def setup():\n    with open(config_path, encoding="utf-8") as handle:\n')
    src = tmp_path / "build.py"
    src.write_text("def build():\n    with open(config_pa\n")
    res = run_cli("complete", str(src), "2", "24")
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip("\n") == 'th, encoding="utf-8") as handle:'


def test_complete_says_what_is_wrong_without_a_traceback(tmp_path):
    code = tmp_path / "a.py"
    code.write_text("import os\nos.pa")
    cases = [
        ((str(tmp_path / "missing.py"), "1", "1"), "cannot read"),
        ((str(code), "9", "1"), "has no line 9"),
        ((str(code), "1", "1", "--model", str(tmp_path / "no-such-model")), "no such folder"),
        ((str(code), "1", "1", "--model", str(code)), "not a checkpoint folder"),
    ]
    for args, message in cases:
        res = run_cli("complete", *args)
        assert res.returncode == 2 and message in res.stderr, res.stderr
        assert "Traceback" not in res.stderr


def test_doctor_checks_a_server_url_with_a_test_completion(gemma_checkpoint):
    from vllm_stub import StubServer

    stub = StubServer(models=[str(gemma_checkpoint)])
    try:
        res = run_cli("doctor", "--model", stub.url)
        assert f"server {stub.url}: reachable, serves {gemma_checkpoint}" in res.stdout, res.stdout + res.stderr
        assert "diffusion knobs accepted" in res.stdout and "prompt format: DiffusionGemma chat" in res.stdout
        assert f"its tokenizer and card: {gemma_checkpoint} (from its served name" in res.stdout
        stub.models = ["dg"]  # served under a name that is no folder here: the setting says where its files are
        stub.roots = {"dg": "/models/dg"}
        res = run_cli("doctor", "--model", stub.url, "--served-model-files", str(gemma_checkpoint))
        assert "(from the servedModelFiles setting" in res.stdout and "serves dg" in res.stdout, res.stdout
        stub.models, stub.roots = [str(gemma_checkpoint)], {}
        sent = stub.bodies[-1]["vllm_xargs"]
        assert {"diffusion_seed_canvas", "diffusion_pinned", "diffusion_read_only"} <= set(sent)
        stub.behave = lambda body: (400, {"error": {"message": "diffusion_pinned needs a seed canvas"}}, 0.0)
        res = run_cli("doctor", "--model", stub.url)
        assert "test completion FAILED" in res.stdout and "needs a seed canvas" in res.stdout
    finally:
        stub.close()
    res = run_cli("doctor", "--model", stub.url)  # nothing listens there now
    assert f"server {stub.url}: FAILED: cannot reach" in res.stdout, res.stdout
