"""The GPU benchmark's script runs end to end on the CPU (tiny config, torch reference paths) and writes its
results; and its byte model of a step covers the 26B-A4B weights."""

import json

from diffill.bench.gpu import step_bytes
from diffill.lsp.cli import main
from diffill.model import DiffusionGemmaConfig
from diffill.model.quant import QuantSpec


def test_dry_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu.json"
    assert main(["bench", "gpu", "--dry-run", "--out", str(out), "--reps", "1"]) == 0
    res = json.loads(out.read_text())
    for key in ("copy_bandwidth_GBps", "step_ms", "roofline_step_ms", "step_fraction_of_roofline",
                "canvas_ms_2_steps", "tokens_per_s_3_steps", "ar_tokens_per_s", "speedup_vs_ar_2_steps",
                "transformers", "wall_s", "graphed_decoder_pass_ms", "graphed_ar_ms_per_token", "graphed_step_ms",
                "graphed_canvas_ms_16_steps"):  # fmt: skip
        assert key in res, key
    assert res["dry_run"] and res["step_ms"] > 0


def test_step_bytes_of_the_real_model():
    need = step_bytes(DiffusionGemmaConfig(), QuantSpec.of("int4"), canvas=256, prompt=512)
    assert 14e9 < need["weights"] < 16e9  # ~12.8 GB of int4 layers (all experts touched) + the embedding twice
    assert need["logits"] == 256 * 262_144 * 4 * 3


def test_profile_dry_run_tables_both_passes(tmp_path):
    out = tmp_path / "profile.txt"
    assert main(["bench", "gpu", "--dry-run", "--profile", str(out)]) == 0
    text = out.read_text()
    assert "== denoise step" in text and "== AR token" in text
    assert text.count("aten::linear") >= 2  # the layers' matmuls show in both tables


def test_kernel_table_dry_run_times_both_tile_reads_and_the_sweep(tmp_path):
    from diffill.bench.gpu import kernel_sweeps
    from diffill.kernels import tiles

    out = tmp_path / "kernels.txt"
    assert main(["bench", "gpu", "--dry-run", "--kernels", str(out)]) == 0
    rows = out.read_text().splitlines()[2:]
    reads = {(r.split()[0], r.split()[1], r.split()[2]) for r in rows if "paired=" in r}
    assert reads == {(k, str(t), f"paired={p}") for k in ("moe", "proj") for t in (1, 16, 256) for p in (True, False)}
    swept = [r for r in rows if "bm=" in r]
    assert len(swept) == sum(len(v) for v in kernel_sweeps(True).values())
    assert all(float(r.split()[-3]) > 0 for r in rows)  # each row timed
    assert {r.split()[1] for r in rows if "fp8 grouped" in r} == {"1", "16", "256"}
    assert {(r.split()[0], r.split()[1]) for r in rows if "tile-major" in r} == {
        (k, str(t)) for k in ("moe", "proj") for t in (1, 16, 256)
    }
    assert tiles.PAIRED_INT4  # the default is back after the table
    chosen = tiles.parse_table(json.loads(out.with_suffix(".json").read_text()))  # the fastest swept, to ship
    for (kernel, tokens), variants in kernel_sweeps(True).items():
        assert chosen[kernel][tokens] in variants
