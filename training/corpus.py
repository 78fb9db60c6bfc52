"""The embedded model's code corpus: permissively licensed source, rebuilt from scratch by one command.

`diffill train corpus` gathers the CPython standard library (PSF) and the Python sources of installed
distributions whose licence is permissive (MIT, BSD, Apache-2.0, ISC, PSF); with `--languages` it also fetches
other languages from the package registries this project reaches (Debian packages, npm tarballs, and PyPI
source distributions for C, C++ and Java; see
EXTERNAL_SOURCES), deduplicated by content. Whole packages (and, for the big external trees, whole folders) are
held out for evaluation and never trained on.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import random
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import asdict, dataclass
from pathlib import Path

PERMISSIVE = ("mit", "bsd", "apache", "isc", "psf", "python software foundation", "0bsd", "zlib")
# Distributions installed with `pip install ".[dev]"` that carry real, varied Python code.
TRAIN_DISTRIBUTIONS = (
    "transformers",
    "sympy",
    "networkx",
    "numpy",
    "pip",
    "Pygments",
    "setuptools",
    "pydantic",
    "rich",
    "mpmath",
    "pytest",
    "filelock",
    "markdown-it-py",
    "fsspec",
    "cattrs",
    "anyio",
    "typer",
    "httpx2",
    "httpcore2",
    "Jinja2",
    "packaging",
    "PyYAML",
    "tokenizers",
    "platformdirs",
    "pluggy",
    "h11",
    "idna",
    "safetensors",
    "shellingham",
    "mdurl",
    "truststore",
    "iniconfig",
    "typing-inspection",
    "annotated-types",
    "MarkupSafe",
    "watchdog",
)
# Held out whole: evaluation code (`diffill eval --root` defaults to these).
HELDOUT_DISTRIBUTIONS = ("pygls", "lsprotocol", "huggingface_hub", "attrs", "click", "pytest-lsp")
HELDOUT_STDLIB = ("asyncio", "email", "json", "tomllib", "wsgiref")
SKIP_STDLIB = ("test", "idlelib", "lib2to3", "site-packages", "tkinter", "turtledemo", "ensurepip", "__pycache__")
MAX_FILE_BYTES = 400_000

# Other languages: (name, registry, package, licence, folder inside the package, extensions).
EXTERNAL_SOURCES = (
    ("golang-1.19-src", "apt", "golang-1.19-src", "BSD-3-Clause", "usr/share/go-1.19/src", (".go",)),
    ("rust-src", "apt", "rust-src", "MIT OR Apache-2.0", "usr/src/rustc-1.63.0/library", (".rs",)),
    ("neovim-runtime", "apt", "neovim-runtime", "Apache-2.0", "usr/share/nvim/runtime/lua", (".lua",)),
    ("rxjs", "npm", "rxjs@7.8.2", "Apache-2.0", "package/src", (".ts",)),
    ("zod", "npm", "zod@3", "MIT", "package/src", (".ts",)),
    ("eslint", "npm", "eslint@9", "MIT", "package/lib", (".js",)),
    ("webpack", "npm", "webpack@5", "MIT", "package/lib", (".js",)),
    ("express", "npm", "express@4", "MIT", "package", (".js",)),
    ("lodash-es", "npm", "lodash-es@4", "MIT", "package", (".js",)),
    # C, C++ and Java from PyPI source distributions (the only permissive C/Java these machines can fetch).
    ("brotli", "pypi", "brotli==1.2.1", "MIT", "c", (".c", ".h")),
    ("lz4", "pypi", "lz4==4.4.5", "BSD-3-Clause AND BSD-2-Clause", "lz4libs", (".c", ".h")),
    ("jpype1", "pypi", "JPype1==1.7.1", "Apache-2.0", ".", (".java", ".cpp", ".h")),
)
SKIP_PARTS = {"testdata", "node_modules", "vendor", "__pycache__"}


@dataclass
class Source:
    name: str
    version: str
    licence: str
    root: str
    files: int
    split: str  # "train" or "heldout"


def _licence(dist: md.Distribution) -> str:
    meta = dist.metadata
    text = meta.get("License-Expression") or ""
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
    if not text:
        text = "; ".join(classifiers) or (meta.get("License") or "")[:60]
    return " ".join(text.split())


def is_permissive(licence: str) -> bool:
    low = licence.lower()
    return bool(low) and any(p in low for p in PERMISSIVE) and "gpl" not in low


def _dist_files(dist: md.Distribution) -> list[Path]:
    out = []
    for f in dist.files or []:
        s = str(f)
        if s.endswith(".py") and "/tests/" not in s and not s.startswith(("..", "/")):
            p = Path(dist.locate_file(f))
            if p.is_file():
                out.append(p)
    return out


def _stdlib_files(include: tuple[str, ...] | None, exclude: tuple[str, ...]) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(root.rglob("*.py")):
        top = p.relative_to(root).parts[0].removesuffix(".py")
        if top in exclude or top in SKIP_STDLIB:
            continue
        if include is not None and top not in include:
            continue
        out.append(p)
    return out


def collect(heldout: bool) -> tuple[list[Source], list[Path]]:
    """The sources and files of one split."""
    sources: list[Source] = []
    files: list[Path] = []
    stdlib = _stdlib_files(HELDOUT_STDLIB, ()) if heldout else _stdlib_files(None, HELDOUT_STDLIB)
    ver = sysconfig.get_python_version()
    split = "heldout" if heldout else "train"
    sources.append(Source("cpython-stdlib", ver, "PSF-2.0", sysconfig.get_paths()["stdlib"], len(stdlib), split))
    files += stdlib
    for name in HELDOUT_DISTRIBUTIONS if heldout else TRAIN_DISTRIBUTIONS:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        lic = _licence(dist)
        if not is_permissive(lic):
            continue
        these = _dist_files(dist)
        sources.append(Source(dist.metadata["Name"], dist.version, lic, str(dist.locate_file("")), len(these), split))
        files += these
    return sources, files


def fetch_external(raw_dir: Path, name: str, registry: str, package: str) -> Path:
    """Downloads and unpacks one external source into raw_dir/name (cached: a second call reuses it)."""
    dest = raw_dir / name
    if dest.exists():
        return dest
    tmp = raw_dir / f".{name}.download"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if registry == "apt":
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True, capture_output=True)
        deb = next(tmp.glob("*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "root")], check=True)
        version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True).stdout
        (tmp / "root" / ".version").write_text(version.strip())
        deb.unlink()
        (tmp / "root").rename(dest)
    elif registry == "npm":
        out = subprocess.run(["npm", "pack", package, "--silent"], cwd=tmp, check=True, capture_output=True, text=True)
        tgz = tmp / out.stdout.strip().splitlines()[-1]
        with tarfile.open(tgz) as tf:
            tf.extractall(tmp / "root", filter="data")
        meta = json.loads((tmp / "root" / "package" / "package.json").read_text())
        (tmp / "root" / ".version").write_text(str(meta.get("version", "")))
        (tmp / "root").rename(dest)
    elif registry == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", package, "-d", ".", "-q"]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        sdist = next(tmp.glob("*.tar.gz"))
        with tarfile.open(sdist) as tf:
            tf.extractall(tmp / "unpacked", filter="data")
        (top,) = list((tmp / "unpacked").iterdir())  # an sdist holds one `name-version` folder
        top.rename(tmp / "root")
        (tmp / "root" / ".version").write_text(top.name.rsplit("-", 1)[-1])
        (tmp / "root").rename(dest)
    else:
        raise ValueError(f"unknown registry {registry}")
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


def external_files(raw_dir: Path) -> list[tuple[Source, list[Path], list[Path]]]:
    """(source, train files, held-out files) per external source; a folder in 20 is held out whole."""
    out = []
    for name, registry, package, licence, sub, exts in EXTERNAL_SOURCES:
        base = fetch_external(raw_dir, name, registry, package)
        root = base / sub
        files = sorted(
            p for p in root.rglob("*") if p.suffix in exts and p.is_file() and not SKIP_PARTS.intersection(p.parts)
        )
        train, held = [], []
        for p in files:
            folder = str(p.parent.relative_to(root))
            (held if int(hashlib.sha1(folder.encode()).hexdigest(), 16) % 20 == 0 else train).append(p)
        version_file = base / ".version"
        version = version_file.read_text().strip() if version_file.exists() else package.rsplit("@", 1)[-1]
        out.append((Source(name, version, licence, str(root), len(train), "train"), train, held))
    return out


def read_unique(files: list[Path], seen: set[str]) -> list[tuple[str, str]]:
    """(path, text) for readable UTF-8 files of sane size, dropping exact duplicates (by content hash)."""
    out = []
    for p in files:
        try:
            if p.stat().st_size > MAX_FILE_BYTES:
                continue
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not text.strip():
            continue
        digest = hashlib.sha1(text.encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        out.append((str(p), text))
    return out


def build(out_dir: Path, seed: int = 0, languages: bool = False) -> dict:
    """Writes train.jsonl and heldout.jsonl ({"path", "text"} per line) and sources.json into `out_dir`.
    With `languages`, the external sources (Go, Rust, Lua, TypeScript, JavaScript) are fetched and added."""
    out_dir.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    summary = {}
    all_sources = []
    external = external_files(out_dir / "raw") if languages else []
    # Held-out first, so that a file present in both splits stays out of training.
    for heldout in (True, False):
        sources, files = collect(heldout)
        for src, train, held in external:
            if heldout:
                sources.append(Source(src.name, src.version, src.licence, src.root, len(held), "heldout"))
                files += held
            else:
                sources.append(src)
                files += train
        docs = read_unique(files, seen)
        random.Random(seed).shuffle(docs)
        name = "heldout" if heldout else "train"
        with open(out_dir / f"{name}.jsonl", "w", encoding="utf-8") as fh:
            for path, text in docs:
                fh.write(json.dumps({"path": path, "text": text}) + "\n")
        summary[name] = {"files": len(docs), "bytes": sum(len(t.encode()) for _, t in docs)}
        all_sources += [asdict(s) for s in sources]
    (out_dir / "sources.json").write_text(json.dumps({"sources": all_sources, "summary": summary}, indent=1))
    return summary


def package_of(path: str) -> str:
    """The distribution (or 'stdlib', or the top folder) a corpus path belongs to."""
    parts = Path(path).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            rest = parts[parts.index(marker) + 1 :]
            return rest[0] if len(rest) > 1 else marker
    if "raw" in parts and parts.index("raw") + 1 < len(parts) - 1:  # `train corpus --languages` sources
        return parts[parts.index("raw") + 1]
    if "lib" in parts and any(p.startswith("python3") for p in parts):
        return "stdlib"
    return parts[0] if len(parts) > 1 else ""


def iter_docs(path: Path):
    """Documents of a .jsonl split; a .jsonl.xz or .jsonl.gz beside it is read when the plain file is absent (a
    compressed corpus is what travels to a GPU machine that cannot fetch packages)."""
    import gzip
    import lzma

    path = Path(path)
    for packed in (".jsonl.xz", ".jsonl.gz"):
        if not path.exists() and path.with_suffix(packed).exists():
            path = path.with_suffix(packed)
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def pack(src: Path, dest: Path, megabytes: float, seed: int = 0) -> dict:
    """A compressed sample of a corpus that fits `megabytes` (xz): what a GPU machine can be sent beside the
    checkout (the device tool carries 64 MiB in all). Whole folders are kept, so that training examples still
    find sibling files for their cross-file context; heldout gets a tenth of the budget."""
    import lzma

    dest.mkdir(parents=True, exist_ok=True)
    report = {}
    for split, budget in (("train", megabytes), ("heldout", megabytes / 10)):
        folders: dict[str, list[str]] = {}
        for doc in iter_docs(src / f"{split}.jsonl"):
            folders.setdefault(str(Path(doc["path"]).parent), []).append(json.dumps(doc) + "\n")
        order = sorted(folders)
        random.Random(seed).shuffle(order)
        sizes = {f: sum(len(line.encode()) for line in folders[f]) for f in order}
        total = sum(sizes.values())
        keep = budget * 1e6 * 4.0  # raw bytes; code compresses 5-8x with xz, so the first guess is too few
        best: tuple[bytes, list[str], int] | None = None  # the largest sample that fits so far
        for _ in range(6):  # each round rescales by the ratio just measured
            chosen, size = [], 0
            for f in order:
                if size + sizes[f] <= keep:
                    chosen.append(f)
                    size += sizes[f]
            blob = lzma.compress("".join(line for f in chosen for line in folders[f]).encode(), preset=6)
            if len(blob) <= budget * 1e6:
                if best is None or len(blob) > len(best[0]):
                    best = (blob, chosen, size)
                if len(blob) > 0.9 * budget * 1e6 or size == total:
                    break
            keep *= 0.97 * budget * 1e6 / max(1, len(blob))
        if best is None:
            raise ValueError(f"could not fit {split} in {budget} MB")
        blob, chosen, size = best
        (dest / f"{split}.jsonl.xz").write_bytes(blob)
        docs = sum(len(folders[f]) for f in chosen)
        report[split] = {"folders": len(chosen), "docs": docs, "raw_mb": round(size / 1e6, 1), "mb": len(blob) / 1e6}
    if (src / "sources.json").exists():
        shutil.copy(src / "sources.json", dest / "sources.json")
    return report
