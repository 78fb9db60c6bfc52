"""`diffill bench names`: names defined in other workspace modules, completed whole in a new file.

A user starts a new file in a project and uses what another module defines, imported three ways: `from mod import
*` then the bare name, `import mod` then `mod.name`, and `from mod import name`. Half of the name is typed; the
answer counts as whole when it writes the rest of the name and does not run on into a longer word. The cases come
from the top-level functions and classes (names of 8 characters or more) of the modules under `--root`, which is
the workspace the daemon is given; the new file is never saved, so the daemon knows the names only from the
workspace.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .overlap import report_overlap
from .wire import RawClient

DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z][A-Za-z0-9_]{7,})\b", re.M)
IMPORTS = ("star", "module", "from")
MAX_MODULE_CHARS = 200_000


@dataclass(frozen=True)
class NameCase:
    module: str  # dotted, relative to the root
    name: str
    typed: int  # characters of the name typed

    def document(self, how: str) -> str:
        """The new file's text, the cursor at its end."""
        head = self.name[: self.typed]
        if how == "star":
            return f"from {self.module} import *\n\n\nresult = {head}"
        if how == "module":
            return f"import {self.module}\n\n\nresult = {self.module}.{head}"
        return f"from {self.module} import {head}"


def name_cases(root: str, n: int, seed: int) -> list[NameCase]:
    """One name per module (a public top-level definition), in a seeded order."""
    rng = random.Random(seed)
    base = Path(root)
    modules = sorted(p for p in base.rglob("*.py") if p.name != "__init__.py" and "test" not in p.name)
    rng.shuffle(modules)
    cases = []
    for path in modules:
        if len(cases) >= n:
            break
        parts = path.relative_to(base).with_suffix("").parts
        if not all(part.isidentifier() for part in parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        names = [m for m in DEFINITION.findall(text[:MAX_MODULE_CHARS]) if not m.startswith("_")]
        if names:
            name = rng.choice(names)
            cases.append(NameCase(".".join(parts), name, max(3, len(name) // 2)))
    return cases


def whole(answer: str, case: NameCase) -> bool:
    """Whether the answer writes the rest of the name and stops there or goes on past the word."""
    rest = case.name[case.typed :]
    return answer.startswith(rest) and not answer[len(rest) : len(rest) + 1].isidentifier()


def run(
    root: str, n: int = 10, seed: int = 0, settings: dict | None = None, out: Callable[[str], None] = print
) -> dict:
    """Whole-name rates by import style; the new files open under the root, as an editor opens an unsaved file."""
    cases = name_cases(root, n, seed)
    client = RawClient()
    rows: list[dict] = []
    try:
        client.initialize(settings or {}, str(Path(root).resolve()))
        if not client.wait_ready(120)["ready"]:
            raise RuntimeError("the model did not load")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the workspace index is built beside the daemon: the probe wants it whole
            workspace = client.status()["workspace"]
            if workspace["files"] > 0 and not workspace["indexing"]:
                break
            time.sleep(0.05)
        for k, case in enumerate(cases):
            for how in IMPORTS:
                text = case.document(how)
                uri = (Path(root).resolve() / f"diffill_names_probe_{k}_{how}.py").as_uri()
                client.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
                )
                lines = text.split("\n")
                position = {"line": len(lines) - 1, "character": len(lines[-1])}
                result = client.result(
                    "textDocument/inlineCompletion",
                    {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}},
                )
                items = (result or {}).get("items") or []
                answer = items[0]["insertText"] if items else ""
                client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                rows.append({"module": case.module, "name": case.name, "how": how, "answer": answer,
                             "whole": whole(answer, case)})  # fmt: skip
    finally:
        client.shutdown()
        client.close()
    summary = {"cases": len(cases)}
    for how in IMPORTS:
        mine = [r for r in rows if r["how"] == how]
        summary[how] = sum(r["whole"] for r in mine)
    texts = [Path(root, *case.module.split(".")).with_suffix(".py").read_text(encoding="utf-8") for case in cases]
    summary["training_overlap"] = report_overlap(texts, (settings or {}).get("model", ""), out)
    out(
        f"names root={root} cases={len(cases)}: whole with `from mod import *` {summary['star']}/{len(cases)}, "
        f"`import mod` + `mod.` {summary['module']}/{len(cases)}, `from mod import` {summary['from']}/{len(cases)}"
    )
    for r in rows:
        out(f"  {r['how']:<6} {r['module']}.{r['name']}: {r['answer']!r}")
    out(json.dumps(summary))
    return summary | {"rows": rows}
