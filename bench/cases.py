"""Cases drawn from real source files for the quality benchmarks: a line cut at a random point with its rest
removed, one to three whole lines removed, or a Python function body removed whole; and the files and texts
under one root or several, in a seeded order."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from diffill.infill.document import SyntaxDocument
from diffill.training.cursors import cut

EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".c", ".java", ".lua")
SKIP_PARTS = {".git", "node_modules", "__pycache__", ".venv", "site-packages"}


@dataclass
class Case:
    path: str
    text: str  # the document as the user has it (truth removed)
    offset: int  # cursor
    truth: str
    kind: str  # "line" or "lines"
    prev_line: str  # baseline material


def source_files(roots: str | Path | list[str], rng: random.Random, limit: int = 4000) -> list[Path]:
    """Source files under one folder or several (a tuning set made of packages that live apart), seeded order."""
    files = [
        p
        for root in map(Path, [roots] if isinstance(roots, (str, Path)) else roots)
        for p in root.rglob("*")
        if p.suffix in EXTENSIONS and p.is_file() and not SKIP_PARTS.intersection(p.relative_to(root).parts)
    ]
    files.sort()
    rng.shuffle(files)
    return files[:limit]


def make_case(path: str, text: str, rng: random.Random, kind: str) -> Case | None:
    c = cut(text, rng, kind)
    if c is None:
        return None
    lines = text.split("\n")
    prev = next((lines[j] for j in range(c.line - 1, -1, -1) if lines[j].strip()), "")
    if kind == "line":
        return Case(
            path,
            c.before + c.after,
            len(c.before),
            c.truth,
            kind,
            prev[c.column :].rstrip() if len(prev) > c.column else "",
        )
    return Case(path, c.before + c.after, len(c.before), c.truth, kind, prev.strip())


MAX_BODY_LINES = 12  # bodies longer than this are left out of block cases (a completion writes a few lines)


def make_block_case(path: str, text: str, rng: random.Random) -> Case | None:
    """A Python function with its body removed (its docstring kept), the cursor on the empty line under the
    signature (or the docstring) at the body's indentation: what the user has when starting a function. The truth
    is the body that was there."""
    if not path.endswith(".py"):
        return None
    doc = SyntaxDocument(text, "python")
    bodies = []
    stack = [doc.tree.root_node] if doc.tree is not None else []
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "function_definition":
            continue
        body = node.child_by_field_name("body")
        statements = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if statements and _is_docstring(statements[0]):
            statements = statements[1:]
        if 1 <= len(statements) and statements[-1].end_point[0] - statements[0].start_point[0] < MAX_BODY_LINES:
            bodies.append(statements)
    if not bodies:
        return None
    statements = rng.choice(sorted(bodies, key=lambda b: b[0].start_byte))
    lines = text.split("\n")
    first, last = statements[0].start_point[0], statements[-1].end_point[0]
    indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
    truth = "\n".join(lines[first : last + 1])[len(indent) :].rstrip()
    before = "\n".join(lines[:first] + [indent])
    after = "\n" + "\n".join(lines[last + 1 :])
    return Case(path, before + after, len(before), truth, "block", lines[first - 1].strip() if first else "")


def _is_docstring(node) -> bool:
    return (
        node.type == "expression_statement" and node.named_child_count == 1 and node.named_children[0].type == "string"
    )


def source_texts(root: str | Path | list[str], rng: random.Random) -> Iterator[tuple[Path, str]]:
    """(path, text) of the readable source files under `root`, in `source_files`' seeded order."""
    for path in source_files(root, rng):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def draw_block_cases(root: str | list[str], n: int, rng: random.Random) -> list[Case]:
    """`n` block cases, at most one per Python file, in a seeded order."""
    cases = []
    for path, text in source_texts(root, rng):
        if len(cases) >= n:
            break
        case = make_block_case(str(path), text, rng) if len(text) <= 200_000 else None
        if case is not None:
            cases.append(case)
    return cases


def draw_cases(root: str | list[str], n: int, rng: random.Random) -> list[Case]:
    """`n` cases, one per file in a seeded order, rest-of-line and multi-line by turns; when the files run out
    another pass draws new cut points from the same files (so a small package still gives `n` cases)."""
    texts: dict[Path, str | None] = {}
    cases: list[Case] = []
    files = source_files(root, rng)
    for turn in itertools.count():
        if len(cases) >= n:
            break
        before = len(cases)
        for index, path in enumerate(files):
            if len(cases) >= n:
                break
            if path not in texts:
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = None
                texts[path] = text if text is not None and len(text) <= 200_000 else None
            if texts[path] is None:
                continue
            # Kinds alternate by file, and each pass swaps them (a file cut for the rest of a line is cut for lines
            # next), so rest-of-line cases do not all come from the same half of the files.
            case = make_case(str(path), texts[path], rng, "line" if (index + turn) % 2 == 0 else "lines")
            if case is not None:
                cases.append(case)
        if len(cases) == before:
            break
    return cases
