"""`diffill bench gpu --dry-run` end to end on the CPU (tiny config, torch reference paths): every figure written,
positive, and consistent with the others (the roofline share is the step's bytes at the copy bandwidth over the
measured step), the report logged; `main` dispatching to the table it is asked for; and the names other code
imports from bench.gpu still there."""

import contextlib
import io
import json

import pytest

from diffill.bench import gpu
from diffill.bench.gpu import harness, kernels, ours, profile, reference, report, roofline
from diffill.bench.gpu.harness import TINY
from diffill.lsp.cli import main as cli_main

SIZES = gpu.DRY_RUN_SIZES  # canvas 32, prompt 16, steps (2, 3), 2 AR tokens


PROMPT = 24  # tokens: not the dry run's default, so the flag is seen to reach the run


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """(results read back from the file, the lines printed) of one `diffill bench gpu --dry-run`."""
    out = tmp_path_factory.mktemp("gpu") / "gpu.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli_main(["bench", "gpu", "--dry-run", "--out", str(out), "--reps", "1", "--prompt", str(PROMPT)]) == 0
    return json.loads(out.read_text()), printed.getvalue().splitlines(), out


def test_dry_run_writes_every_figure(dry_run):
    res, _, _ = dry_run
    assert res["dry_run"] is True and res["scheme"] == "int4"
    assert (res["canvas"], res["prompt"]) == (SIZES["canvas"], PROMPT)  # the prompt a model's own (bench prompts)
    assert sorted(k for k in res if k.startswith("canvas_ms_")) == [f"canvas_ms_{n}_steps" for n in SIZES["steps"]]
    for key in ("copy_bandwidth_GBps", "weight_GB", "prefill_ms", "step_ms", "decoder_pass_ms", "commit_ms",
                "roofline_step_ms", "ar_ms_per_token", "ar_tokens_per_s", "wall_s", "graphed_decoder_pass_ms",
                "graphed_self_conditioned_pass_ms", "graphed_ar_ms_per_token", "graphed_step_ms",
                "graphed_canvas_ms_16_steps"):  # fmt: skip
        assert res[key] > 0, key
    for n in SIZES["steps"]:
        assert res[f"tokens_per_s_{n}_steps"] > 0 and res[f"speedup_vs_ar_{n}_steps"] > 0
    assert 0 < res["step_fraction_of_roofline"] <= 1
    assert "graphed_error" not in res


def test_dry_run_figures_follow_from_each_other(dry_run):
    res, _, _ = dry_run
    c = SIZES["canvas"]
    for n in SIZES["steps"]:
        assert res[f"tokens_per_s_{n}_steps"] == pytest.approx(c / (res[f"canvas_ms_{n}_steps"] / 1e3))
        assert res[f"speedup_vs_ar_{n}_steps"] == pytest.approx(res[f"tokens_per_s_{n}_steps"] / res["ar_tokens_per_s"])
    assert res["ar_tokens_per_s"] == pytest.approx(1e3 / res["ar_ms_per_token"])
    assert res["step_ms"] == min(res["step_ms_probs_then_matmul"], res["step_ms_fused_soft_embedding"])
    need = res["step_bytes"]
    assert need["logits"] == c * TINY["vocab_size"] * 4 * 3
    # prompt 16 under the 64-token window: layer 0 slides (2 KV heads of 32), layer 1 is full (1 of 64), bf16
    assert need["kv"] == PROMPT * (2 * 2 * 32 * 2 + 2 * 1 * 64 * 2)
    assert need["total"] == pytest.approx(need["weights"] + need["logits"] + need["kv"])
    roofline_ms = need["total"] / (res["copy_bandwidth_GBps"] * 1e9) * 1e3
    assert res["roofline_step_ms"] == pytest.approx(roofline_ms)
    assert res["step_fraction_of_roofline"] == pytest.approx(roofline_ms / res["step_ms"])


def test_dry_run_measures_transformers_on_all_its_layers(dry_run):
    pytest.importorskip("transformers")
    res, _, _ = dry_run
    ref = res["transformers"]
    assert ref["layers"] == TINY["num_hidden_layers"]  # --ref-layers 30 capped at the tiny config's 2
    assert ref["step_ms"] > 0 and ref["step_ms_scaled_to_all_layers"] == pytest.approx(ref["step_ms"])
    assert res["step_speedup_vs_transformers"] == pytest.approx(ref["step_ms_scaled_to_all_layers"] / res["step_ms"])


def test_dry_run_logs_figures_then_the_report(dry_run):
    res, lines, out = dry_run
    assert lines[0] == f"copy bandwidth: {res['copy_bandwidth_GBps']:.1f} GB/s"
    assert f"  step_ms: {res['step_ms']:.3f}" in lines
    lines_of_report = report.summary(res)
    assert lines[-len(lines_of_report) - 1 : -1] == lines_of_report
    assert lines[-1] == f"results written to {out}"
    share = 100 * res["step_bytes"]["total"] / (res["copy_bandwidth_GBps"] * 1e9) * 1e3 / res["step_ms"]
    assert lines_of_report[1].endswith(f"GB/s: {share:.0f} %)")


def test_ref_layers_zero_records_why_not_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "measure_ours", lambda *a: {"step_ms": 1.0})  # only the reference part is checked
    monkeypatch.setattr(gpu, "summary", lambda res: [])
    res = gpu.run(tmp_path / "g.json", dry_run=True, ref_layers=0, log=lambda line: None, **SIZES)
    assert res["transformers"] == {"error": "RuntimeError: not asked for (--ref-layers 0)"}
    assert "step_speedup_vs_transformers" not in res
    assert json.loads((tmp_path / "g.json").read_text()) == res


def test_main_dispatches(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(gpu, "kernel_table", lambda *a: calls.append(("kernels", a)) or "K\n")
    monkeypatch.setattr(gpu, "profile_tables", lambda *a, **kw: calls.append(("profile", a, kw)) or "P")
    monkeypatch.setattr(gpu, "run", lambda *a, **kw: calls.append(("run", a, kw)))
    assert gpu.main(True, "o.json", kernels="k.txt") == 0
    assert gpu.main(True, "o.json", profile="p.txt") == 0
    assert gpu.main(False, "o.json", profile="p.txt") == 0
    assert gpu.main(True, "o.json", ref_layers=4, reps=2) == 0
    assert gpu.main(False, "o.json", ref_layers=6, reps=3, scheme="fp8") == 0
    assert gpu.main(False, "o.json", ref_layers=6, reps=3, prompt=490) == 0
    assert calls == [
        ("kernels", ("k.txt", True)),
        ("profile", ("p.txt", True), {"canvas": 32, "prompt": 16}),
        ("profile", ("p.txt", False), {}),
        ("run", ("o.json",), {"dry_run": True, "ref_layers": 4, "reps": 2, "scheme": "int4", "canvas": 32,
                              "prompt": 16, "steps": (2, 3), "ar_tokens": 2}),
        ("run", ("o.json",), {"dry_run": False, "ref_layers": 6, "reps": 3, "scheme": "fp8"}),
        ("run", ("o.json",), {"dry_run": False, "ref_layers": 6, "reps": 3, "scheme": "int4", "prompt": 490}),
    ]  # fmt: skip
    assert capsys.readouterr().out == "K\nP\nP\n"


def test_the_parts_stay_importable_from_bench_gpu():
    assert gpu.step_bytes is roofline.step_bytes
    assert (gpu.timed, gpu.copy_bandwidth) == (harness.timed, harness.copy_bandwidth)
    assert gpu.Denoiser is ours.Denoiser
    assert gpu.transformers_step_ms is reference.transformers_step_ms
    assert gpu.summary is report.summary
    assert gpu.profile_tables is profile.profile_tables
    assert (gpu.kernel_sweeps, gpu.kernel_table) == (kernels.kernel_sweeps, kernels.kernel_table)
    assert all(hasattr(gpu, name) for name in gpu.__all__)
