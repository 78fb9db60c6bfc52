"""Shared pieces of the editor end-to-end tests: where the editors are, how the server is started (through the
recording tap), reading the LSP traffic back, and a direct stdio client that asks `diffill serve` itself.

The editors come from `bash editors/install.sh` (into .editors/, git-ignored) or from PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EDITORS_DIR = Path(os.environ.get("DIFFILL_EDITORS_DIR", ROOT / ".editors"))
TAP = Path(__file__).with_name("lsp_tap.py")
INSTALL_HINT = "install it with `bash editors/install.sh`"

# Python prompts tried in order; the tests use the first one for which the model proposes something
PROMPTS = [
    "import numpy as ",
    "def total(values):\n    result = 0\n    for value in values:\n        result += value\n    return ",
    "def add(a, b):\n    return ",
    "for i in range(",
]
# A word typed mid-line after `self.`: the completion item must start at the word (`tot`) for popups to keep it
MID_WORD = (
    "class Counter:\n    def __init__(self):\n        self.total_count = 0\n\n"
    "    def add(self, n):\n        self.total_count += n\n        return self.tot"
)
SERVER_READY_TIMEOUT = float(os.environ.get("DIFFILL_E2E_READY_TIMEOUT", "120"))


def editor_bin(name: str) -> str | None:
    """The editor binary: .editors/bin/NAME first, then PATH."""
    local = EDITORS_DIR / "bin" / name
    if local.exists() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


def require_editor(name: str, what: str) -> str:
    found = editor_bin(name)
    if not found:
        pytest.skip(f"{what} not installed (no `{name}` in {EDITORS_DIR / 'bin'} or on PATH): {INSTALL_HINT}")
    return found


def model_setting() -> str:
    """The `model` setting for the tests: "" (the embedded model) unless DIFFILL_E2E_MODEL names another."""
    return os.environ.get("DIFFILL_E2E_MODEL", "")


def require_model() -> None:
    if model_setting():
        return
    try:
        from diffill.model import runtime
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"diffill is not importable: {exc}")
    if not runtime.embedded_available():
        pytest.skip(
            f"the embedded model is not in {runtime.EMBEDDED_DIR} (set DIFFILL_E2E_MODEL=folder to use another)"
        )


def diffill_command() -> list[str]:
    """`diffill serve` from the environment running the tests (the venv's console script when there is one)."""
    script = Path(sys.executable).with_name("diffill")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "diffill.lsp.cli", "serve"]


def server_settings() -> dict:
    """initializationOptions the editors pass (steps and device fixed so every run proposes the same text)."""
    return {"model": model_setting(), "device": "cpu", "steps": 8, "threads": 1}


def tap_command(log: Path, ready: Path) -> list[str]:
    return [sys.executable, str(TAP), "--log", str(log), "--ready", str(ready), "--", *diffill_command()]


def wait_for(predicate, timeout: float, interval: float = 0.1, what: str = "condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


# ----- positions and edits -----
def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(ch) > 0xFFFF else 1


def offset_at(text: str, line: int, character: int, encoding: str = "utf-16") -> int:
    """Offset (in str characters) of an LSP position."""
    lines = text.split("\n")
    line = min(line, len(lines) - 1)
    start = sum(len(x) + 1 for x in lines[:line])
    units = 0
    for i, ch in enumerate(lines[line]):
        if units >= character:
            return start + i
        units += _units(ch, encoding)
    return start + len(lines[line])


def apply_edit(text: str, rng: dict | None, new_text: str, encoding: str, cursor: int | None = None) -> str:
    if rng is None:
        assert cursor is not None
        return text[:cursor] + new_text + text[cursor:]
    s = offset_at(text, rng["start"]["line"], rng["start"]["character"], encoding)
    e = offset_at(text, rng["end"]["line"], rng["end"]["character"], encoding)
    return text[:s] + new_text + text[e:]


# ----- the recorded traffic -----
@dataclass
class Proposal:
    method: str  # textDocument/inlineCompletion or textDocument/completion
    uri: str
    position: dict
    document: str  # the document as the server had it when the editor asked
    text: str  # what the server proposed (insertText / textEdit.newText)
    range: dict | None
    encoding: str

    @property
    def cursor(self) -> int:
        return offset_at(self.document, self.position["line"], self.position["character"], self.encoding)

    def applied(self) -> str:
        """The document after accepting the proposal."""
        return apply_edit(self.document, self.range, self.text, self.encoding, self.cursor)


class LspLog:
    """Reads a tap log: what the editor sent, what the server answered, documents replayed at each request."""

    def __init__(self, path: Path):
        self.path = path

    def entries(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line being written
        return out

    def methods(self, direction: str = "c2s") -> list[str]:
        return [e["msg"].get("method") for e in self.entries() if e["dir"] == direction and "method" in e["msg"]]

    def proposals(self, method: str | None = None, nonempty: bool = True) -> list[Proposal]:
        docs: dict[str, str] = {}
        encoding = "utf-16"
        pending: dict = {}
        found: list[Proposal] = []
        for e in self.entries():
            msg = e["msg"]
            if e["dir"] == "c2s":
                m = msg.get("method")
                p = msg.get("params") or {}
                if m == "textDocument/didOpen":
                    docs[p["textDocument"]["uri"]] = p["textDocument"]["text"]
                elif m == "textDocument/didChange":
                    uri = p["textDocument"]["uri"]
                    for ch in p["contentChanges"]:
                        docs[uri] = (
                            apply_edit(docs.get(uri, ""), ch.get("range"), ch["text"], encoding, 0)
                            if ch.get("range")
                            else ch["text"]
                        )
                elif m in ("textDocument/inlineCompletion", "textDocument/completion") and "id" in msg:
                    uri = p["textDocument"]["uri"]
                    pending[msg["id"]] = (m, uri, p["position"], docs.get(uri, ""))
            elif e["dir"] == "s2c" and "id" in msg and "method" not in msg:
                result = msg.get("result")
                if isinstance(result, dict) and "capabilities" in result:
                    encoding = result["capabilities"].get("positionEncoding") or "utf-16"
                    continue
                if msg["id"] not in pending:
                    continue
                m, uri, pos, doc = pending.pop(msg["id"])
                items = result.get("items", []) if isinstance(result, dict) else (result or [])
                if not items:
                    if not nonempty:
                        found.append(Proposal(m, uri, pos, doc, "", None, encoding))
                    continue
                item = items[0]
                if m == "textDocument/inlineCompletion":
                    text = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
                    rng = item.get("range")
                else:
                    edit = item.get("textEdit") or {}
                    text = edit.get("newText", item.get("insertText", item.get("label")))
                    rng = edit.get("range") or edit.get("replace")
                if nonempty and not text.strip():
                    continue
                found.append(Proposal(m, uri, pos, doc, text, rng, encoding))
        return [p for p in found if method is None or p.method == method]


# ----- a direct stdio client of `diffill serve` -----
def _frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class DirectClient:
    """A minimal synchronous LSP client over stdio (what an editor does, without the editor)."""

    def __init__(self, settings: dict | None = None):
        self.proc = subprocess.Popen(
            diffill_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._id = 0
        self._answers: dict = {}
        self._cv = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()
        caps = {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"inlineCompletion": {}, "completion": {"completionItem": {}}},
        }
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": None,
                "capabilities": caps,
                "initializationOptions": settings or server_settings(),
            },
        )
        self.notify("initialized", {})
        self._n = 0

    def _reader(self) -> None:
        from lsp_tap import read_message  # same framing

        while True:
            got = read_message(self.proc.stdout)
            if got is None:
                break
            msg = got[1]
            if "id" in msg and "method" not in msg:
                with self._cv:
                    self._answers[msg["id"]] = msg
                    self._cv.notify_all()

    def notify(self, method: str, params) -> None:
        self.proc.stdin.write(_frame({"jsonrpc": "2.0", "method": method, "params": params}))
        self.proc.stdin.flush()

    def request(self, method: str, params, timeout: float = 60.0):
        self._id += 1
        rid = self._id
        self.proc.stdin.write(_frame({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        self.proc.stdin.flush()
        with self._cv:
            if not self._cv.wait_for(lambda: rid in self._answers, timeout):
                raise TimeoutError(f"{method}: no answer in {timeout} s")
            msg = self._answers.pop(rid)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")

    def wait_ready(self, timeout: float = SERVER_READY_TIMEOUT) -> dict:
        def ready():
            st = self.request("diffill/status", {})
            if st.get("error") and not st.get("ready") and st.get("model") == "failed":
                raise RuntimeError(f"model failed to load: {st['error']}")
            return st if st.get("ready") else None

        return wait_for(ready, timeout, 0.2, "the model")

    def complete(
        self,
        text: str,
        line: int,
        character: int,
        language: str = "python",
        method: str = "textDocument/inlineCompletion",
    ) -> tuple[str, dict | None]:
        """(proposed text, range) for `text` at (line, character) in a fresh document."""
        self._n += 1
        uri = f"file:///diffill-e2e/direct{self._n}.py"
        self.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}
        )
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        if method == "textDocument/inlineCompletion":
            params["context"] = {"triggerKind": 1}
        result = self.request(method, params)
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        items = (result or {}).get("items", []) if isinstance(result, dict) else (result or [])
        if not items:
            return "", None
        item = items[0]
        if method == "textDocument/inlineCompletion":
            text_ = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
            return text_, item.get("range")
        edit = item.get("textEdit") or {}
        return edit.get("newText", ""), edit.get("range")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines) - 1, len(lines[-1])


def proposal_for(log: LspLog, method: str, document: str) -> Proposal:
    """The last non-empty proposal the server made for `document` (editors ask again after accepting; those
    later answers are for the new text)."""
    found = [p for p in log.proposals(method) if p.document == document]
    assert found, f"no non-empty {method} answer for {document!r}; all: {log.proposals(method)}"
    return found[-1]


def check_proposal(direct: DirectClient, proposal: Proposal) -> None:
    """The same request on the same document, asked directly, gives the same text (the server is
    deterministic): so what the editor showed and accepted is the server's proposal."""
    text, rng = direct.complete(
        proposal.document, proposal.position["line"], proposal.position["character"], method=proposal.method
    )
    assert text == proposal.text, f"direct request proposed {text!r}, the editor got {proposal.text!r}"
