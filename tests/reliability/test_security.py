"""Security: safetensors only (never pickle), TCP bound to loopback, no file outside the workspace roots read,
bounded message and document sizes, settings that are validated data and nothing else."""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffill.bench.wire import RawClient, frame
from diffill.lsp import protocol
from diffill.lsp.settings import UNSET, Settings, SettingsError, parse_settings
from diffill.model.loader import CheckpointError, checkpoint_files
from diffill.model.runtime import EMBEDDED_DIR

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ["lsp", "infill", "model", "kernels"]  # the packages `pip install diffill` ships


# ----- never pickle -----------------------------------------------------------------------------------------------
UNSAFE = re.compile(
    r"torch\.load\s*\(|pickle\.loads?\s*\(|^\s*import\s+(c?pickle|dill|joblib|cloudpickle|marshal)\b|"
    r"^\s*from\s+(c?pickle|dill|joblib|cloudpickle|marshal)\s+import|weights_only\s*=\s*False|"
    r"allow_pickle\s*=\s*True|use_safetensors\s*=\s*False|marshal\.loads?\s*\(|torch\.jit\.load\s*\(",
    re.MULTILINE,
)


def test_no_code_path_unpickles():
    hits = []
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            for m in UNSAFE.finditer(path.read_text(encoding="utf-8")):
                line = path.read_text(encoding="utf-8").count("\n", 0, m.start()) + 1
                hits.append(f"{path.relative_to(REPO)}:{line}: {m.group().strip()}")
    assert not hits, "pickle-capable loading in shipped code:\n" + "\n".join(hits)


class _Payload:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


def test_pickle_only_checkpoint_is_refused(tmp_path):
    from diffill.model import runtime

    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (folder / name).write_bytes((EMBEDDED_DIR / name).read_bytes())
    for name in ("pytorch_model.bin", "model.pt"):
        (folder / name).write_bytes(pickle.dumps(_Payload(tmp_path / "PICKLE-RAN")))
    with pytest.raises(CheckpointError, match="pickle files are never loaded"):
        checkpoint_files(folder)
    with pytest.raises(CheckpointError, match="pytorch_model.bin"):
        runtime.load(str(folder), "cpu")
    assert not (tmp_path / "PICKLE-RAN").exists()


# ----- TCP on loopback only ---------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listeners(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} write them) listening on `port`."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            addr, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                out.append(addr)
    return out


def _outward_address() -> str | None:
    """This machine's address on its default route, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 1))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_tcp_listens_on_loopback_only():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "diffill.lsp.cli", "serve", "--tcp", str(port)], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not _listeners(port) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.1)
        assert _listeners(port) == ["0100007F"], _listeners(port)  # 127.0.0.1, and nothing else (no 0.0.0.0, no ::)
        outward = _outward_address()
        if outward is not None:
            with pytest.raises(OSError):
                socket.create_connection((outward, port), timeout=2).close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.settimeout(30)

            def until(marker: bytes) -> bytes:
                data = b""
                while marker not in data:
                    chunk = conn.recv(65536)
                    assert chunk, data
                    data += chunk
                return data

            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
            conn.sendall(frame(json.dumps(body)))
            until(b'"serverInfo"')
            # Limits hold over TCP too: an over-long header line used to end the session (the process stayed up).
            conn.sendall(b"X" * 300_000 + b"\r\n" + b"Content-Length: 99999999999999\r\n\r\n")
            conn.sendall(frame(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "diffill/status"})))
            until(b'"position_encoding"')
        proc.wait(timeout=15)  # one editor session per TCP server: it ends with its client
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# ----- nothing outside the workspace roots is read ----------------------------------------------------------------
# Every Python process the daemon starts (the workspace scan runs in one of its own) imports this sitecustomize.
AUDIT_HOOK = """
import os, sys
log_fd = os.open(os.environ["DIFFILL_AUDIT_LOG"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        os.write(log_fd, os.fsencode(args[0]) + b"\\n")
    elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
        os.write(log_fd, b"LIST " + os.fsencode(args[0]) + b"\\n")
sys.addaudithook(hook)
"""


def test_no_file_outside_the_workspace_is_read(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "inside.py").write_text("def inside():\n    return 1\n")
    for name in ("opened.py", "changed.py", "completed.py", "watched.py", "linked.py"):
        (outside / name).write_text(f"SECRET = {name!r}\n")
    (root / "link.py").symlink_to(outside / "linked.py")
    (root / "linkdir").symlink_to(outside)
    log, audit = tmp_path / "opens.log", tmp_path / "audit"
    audit.mkdir()
    (audit / "sitecustomize.py").write_text(AUDIT_HOOK)
    path = os.pathsep.join(filter(None, [str(audit), os.environ.get("PYTHONPATH")]))
    client = RawClient(env={"PYTHONPATH": path, "DIFFILL_AUDIT_LOG": str(log)})
    try:
        client.initialize({"steps": 2}, root=str(root))
        assert client.wait_ready()["ready"]
        uri = (outside / "opened.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}})  # fmt: skip
        change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "y"}
        client.notify("textDocument/didChange", {"textDocument": {"uri": (outside / "changed.py").as_uri(), "version": 2}, "contentChanges": [change]})  # fmt: skip
        for target in (uri, (outside / "completed.py").as_uri()):
            params = {"textDocument": {"uri": target}, "position": {"line": 0, "character": 1}, "context": {"triggerKind": 1}}  # fmt: skip
            assert "result" in client.request("textDocument/inlineCompletion", params, timeout=60)
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": (outside / "watched.py").as_uri(), "type": 2}]})  # fmt: skip
        client.notify("textDocument/didSave", {"textDocument": {"uri": (outside / "watched.py").as_uri()}})
        (root / "new.py").write_text("def added():\n    pass\n")  # a real file event inside the root
        time.sleep(1.5)  # let a workspace index scan and debounce
        assert client.status()["ready"]
        assert client.shutdown() == 0
    finally:
        client.close()
    opened = log.read_text(errors="replace").splitlines()
    assert any(line.endswith(".py") for line in opened), "the audit hook saw no opens at all"
    assert any(line.endswith(str(root / "inside.py")) for line in opened), "the workspace itself was never read"
    leaked = [line for line in opened if str(outside) in line or "/linkdir" in line or line.endswith("/link.py")]
    assert not leaked, f"read outside the workspace: {leaked}"


# ----- sizes ------------------------------------------------------------------------------------------------------
def test_message_and_header_limits():
    big = protocol.MAX_MESSAGE_BYTES + 1
    raw = io.BytesIO(b"x" * (protocol.MAX_HEADER_LINE * 3) + b"\r\nrest")
    reader = protocol.BoundedReader(raw)
    assert len(reader.readline()) == protocol.MAX_HEADER_LINE  # a long line comes in bounded pieces
    assert reader.read(big) == b" "  # refused without reading (nor allocating) it
    assert raw.tell() == protocol.MAX_HEADER_LINE


# ----- settings are data ------------------------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["model", "device", "steps", "canvasLength", "languages", "enabled", "threads", "quantization", "maxPromptTokens", "latencyBudgetMs", "minConfidence", "precision", "__class__", "__init__", "diffill"])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(raw=st.dictionaries(keys, json_values, max_size=5) | json_values)
def test_settings_are_validated_data(raw):
    try:
        s = parse_settings(raw)
    except SettingsError:
        return
    assert isinstance(s, Settings)
    for name, value in s.as_dict().items():
        assert isinstance(value, (str, int, float, bool, list)) or (value is None and name in UNSET), (name, value)
        if isinstance(value, float):
            assert math.isfinite(value), (name, value)
        if isinstance(value, list):
            assert all(isinstance(v, str) for v in value)


def test_settings_code_has_no_dynamic_execution():
    source = (REPO / "lsp" / "settings.py").read_text()
    for word in ("eval(", "exec(", "compile(", "__import__", "import_module", "subprocess", "os.system", "getattr("):
        assert word not in source, word
