"""`diffill bench heldout`: the code the documented quality figures are measured on, fetched and checked.

A figure counts only on code the model never saw. These packages are in no training split (training.corpus) and
vendored by none of its packages; each is fetched from a registry this project reaches (PyPI, Debian, npm) into
one folder, and its training overlap (bench.overlap) is printed beside the `--root` to pass to `diffill bench
typing` and `diffill eval`. The engine's settings are tuned on other code (docs/benchmarks.md, "Held-out code").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from diffill.infill.languages import language_for
from diffill.training.corpus import fetch_external

from .overlap import training_overlap


@dataclass(frozen=True)
class HeldOut:
    name: str  # its folder under the destination
    registry: str  # "pypi" (an sdist), "npm" or "apt"
    package: str
    folder: str  # the code inside the unpacked package
    language: str


HELDOUT_SETS = (
    HeldOut("flask", "pypi", "flask==3.1.2", "src/flask", "python"),
    HeldOut("werkzeug", "pypi", "werkzeug==3.1.3", "src/werkzeug", "python"),
    HeldOut("marshmallow", "pypi", "marshmallow==4.0.1", "src/marshmallow", "python"),
    HeldOut("tqdm", "pypi", "tqdm==4.67.1", "tqdm", "python"),
    HeldOut("moment", "npm", "moment@2.30.1", "package/src/lib", "javascript"),
    HeldOut("axios", "npm", "axios@1.12.2", "package/lib", "javascript"),
    HeldOut("commander", "npm", "commander@12.1.0", "package/lib", "javascript"),
    HeldOut("query-core", "npm", "@tanstack/query-core@5.90.2", "package/src", "typescript"),
    HeldOut("mobx", "npm", "mobx@6.15.0", "package/src", "typescript"),
    HeldOut("immer", "npm", "immer@10.1.3", "package/src", "typescript"),
    HeldOut("cobra", "apt", "golang-github-spf13-cobra-dev", "usr/share/gocode/src/github.com/spf13/cobra", "go"),
    HeldOut(
        "logrus", "apt", "golang-github-sirupsen-logrus-dev", "usr/share/gocode/src/github.com/sirupsen/logrus", "go"
    ),
    HeldOut("urfave-cli", "apt", "golang-github-urfave-cli-v2-dev", "usr/share/gocode/src/github.com/urfave/cli", "go"),
    HeldOut("serde-json", "apt", "librust-serde-json-dev", "usr/share/cargo/registry", "rust"),
    HeldOut("semver", "apt", "librust-semver-dev", "usr/share/cargo/registry", "rust"),
    HeldOut("itertools", "apt", "librust-itertools-dev", "usr/share/cargo/registry", "rust"),
    HeldOut("penlight", "apt", "lua-penlight", "usr/share/lua/5.1/pl", "lua"),
    HeldOut("argparse", "apt", "lua-argparse", "usr/share/lua/5.1", "lua"),
    HeldOut("luassert", "apt", "lua-luassert", "usr/share/lua/5.1/luassert", "lua"),
    HeldOut("ujson", "pypi", "ujson==5.11.0", "src/ujson", "c"),
    HeldOut("cmarkgfm", "pypi", "cmarkgfm==2024.11.20", "third_party/cmark", "c"),
)


def fetch(dest: str | Path, sets: tuple[HeldOut, ...] = HELDOUT_SETS) -> dict[HeldOut, Path]:
    """Each set's code folder under `dest` (fetched once; a second call reuses it)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return {s: fetch_external(dest, s.name, s.registry, s.package) / s.folder for s in sets}


def _texts(root: Path, language: str) -> list[str]:
    texts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and language_for(None, str(path)) == language:
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return texts


def run(
    dest: str | Path, model: str = "", out: Callable[[str], None] = print, sets: tuple[HeldOut, ...] = HELDOUT_SETS
) -> dict[str, list[str]]:
    """Fetches the sets, prints each one's training overlap and files, and the roots by language."""
    roots: dict[str, list[str]] = {}
    out("| set | language | files | training overlap | root |")
    out("|---|---|---|---|---|")
    for s, root in fetch(dest, sets).items():
        texts = _texts(root, s.language)
        share = training_overlap(texts, model)
        shown = "unknown" if share is None else f"{100 * share:.1f} %"
        out(f"| {s.name} | {s.language} | {len(texts)} | {shown} | {root} |")
        roots.setdefault(s.language, []).append(str(root))
    for language, paths in roots.items():
        out(f"{language}: " + " ".join(f"--root {p}" for p in paths))
    return roots
