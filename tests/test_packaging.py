"""The user install: the wheel holds every subpackage and the embedded model, within 40 MB, and a plain install
pulls no test or GPU tools (triton only with the `gpu` extra)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"lsp": "diffill.lsp", "infill": "diffill.infill", "model": "diffill.model", "kernels": "diffill.kernels"}
PACKAGES |= {"training": "diffill.training", "bench": "diffill.bench"}
WEIGHTS = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "memory.safetensors")
WEIGHTS += ("fingerprints.safetensors",)


def test_a_plain_install_needs_no_test_or_gpu_tools():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for tool in ("triton", "transformers", "pytest", "ruff", "hypothesis"):
        assert tool not in base
    assert any(d.startswith("triton") for d in project["optional-dependencies"]["gpu"])


def test_the_wheel_holds_every_subpackage_and_the_model(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        check=True,
        cwd=tmp_path,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("diffill-*.whl")
    assert wheel.stat().st_size <= 40 * 2**20
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, package in PACKAGES.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            inside = init.relative_to(ROOT / folder).as_posix()
            assert f"{package.replace('.', '/')}/{inside}" in names, f"{init} is not in the wheel"
    for name in WEIGHTS:
        assert f"diffill/model/weights/{name}" in names
