"""Imports flow one way: lsp -> infill -> model -> kernels, with training and bench on top.

Two checks: importing every module of a package in a fresh interpreter loads nothing above it, and no module of
a package names a package above it anywhere in its source (an import inside a function would hide a cycle from
the first check until that function runs)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each package, lowest first, with its folder; a package may import those before it, never those after.
LAYERS = [("kernels", "kernels"), ("model", "model"), ("infill", "infill"), ("lsp", "lsp"), ("training", "training")]
LAYERS.append(("bench", "bench"))
ABOVE = {name: {n for n, _ in LAYERS[i + 1 :]} for i, (name, _) in enumerate(LAYERS)}
ABOVE["training"] = {"bench"}  # the two top packages: bench may use training, not the other way


def _modules(folder: str) -> list[str]:
    """Dotted names of every module in a package folder."""
    base = ROOT / folder
    names = []
    for path in sorted(base.rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        names.append(".".join(["diffill", folder, *[p for p in parts if p != "__init__"]]))
    return names


@pytest.mark.parametrize("name,folder", LAYERS)
def test_importing_a_package_loads_nothing_above_it(name, folder):
    script = (
        "import importlib, sys\n"
        f"for m in {_modules(folder)!r}:\n"
        "    importlib.import_module(m)\n"
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules if m.startswith('diffill.')})))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(out.stdout.split())
    assert name in loaded
    assert not loaded & ABOVE[name], f"importing diffill.{name} loads {sorted(loaded & ABOVE[name])}"


def _named_packages(path: Path) -> set[str]:
    """The diffill packages a module imports (at any depth: module level or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n.split(".")[1] for n in names if n.startswith("diffill.") and n.count(".") >= 1}
    return found


@pytest.mark.parametrize("name,folder", LAYERS)
def test_no_module_names_a_package_above_its_own(name, folder):
    wrong = {
        str(p.relative_to(ROOT)): sorted(_named_packages(p) & ABOVE[name])
        for p in sorted((ROOT / folder).rglob("*.py"))
    }
    assert not {k: v for k, v in wrong.items() if v}
