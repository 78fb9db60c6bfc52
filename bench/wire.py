"""A bare JSON-RPC client over the stdio of a real `diffill serve` process, writing the framing itself.

Used by `diffill bench soak` and the reliability tests: pytest-lsp only sends well-formed, typed messages, while
fuzzing needs to write arbitrary bytes and still read the answers, so this client frames messages by hand and
reads the server's output on a thread. Standard library only.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "diffill.lsp.cli", "serve"]


def frame(body: bytes | str) -> bytes:
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


class RawClient:
    """One server process; `request` waits for the matching response, notifications are kept in `messages`."""

    def __init__(self, argv: list[str] | None = None, env: dict[str, str] | None = None, cwd: str | None = None):
        # The daemon as an editor starts it: not with Triton's interpreter, which a test session may have turned on
        # for its kernel tests (it would run the sampler's kernels on the CPU, slowly, and grow the server by them).
        inherited = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        full_env = {**inherited, "DIFFILL_TEST_HOOKS": "1", **(env or {})}
        self.proc = subprocess.Popen(
            argv or SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
        )
        self.pid = self.proc.pid
        self._ids = itertools.count(1)
        self._responses: dict[Any, dict] = {}
        self._arrivals: dict[Any, float] = {}  # when each of `_responses` was read (time.perf_counter)
        self.answered_at = 0.0  # when the response `expect` returned last was read
        self._cond = threading.Condition()
        self.messages: list[dict] = []  # notifications and requests from the server
        self.arrived: list[float] = []  # when each of `messages` was read (time.perf_counter)
        self.stray: list[dict] = []  # responses with a null id (parse errors, invalid requests)
        self.stderr_tail: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err.start()

    # ----- wire -----
    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_raw(frame(json.dumps(message)))

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = out.read(length or 0)
            msg = json.loads(body)
            with self._cond:
                if "method" in msg:
                    self.messages.append(msg)
                    self.arrived.append(time.perf_counter())
                    if "id" in msg:  # a request from the server: answer it like an editor would
                        self._reply(msg)
                elif isinstance(msg.get("id"), (int, str)):
                    self._responses[msg["id"]] = msg  # kept until `expect` takes it, even if it is not asked yet
                    self._arrivals[msg["id"]] = time.perf_counter()
                else:
                    self.stray.append(msg)
                self._cond.notify_all()

    def _reply(self, msg: dict) -> None:
        result: Any = None
        if msg["method"] == "workspace/configuration":
            result = [None for _ in msg.get("params", {}).get("items", [])]
        try:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        except (BrokenPipeError, ValueError):
            pass

    def _drain_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        for line in err:
            self.stderr_tail.append(line)
            del self.stderr_tail[:-200]

    # ----- requests -----
    def start_request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        msg_id = next(self._ids) if msg_id is None else msg_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def expect(self, msg_id: Any, timeout: float = 30.0) -> dict:
        """The response to `msg_id`; raises TimeoutError if none comes (the failure fuzzing looks for). When it was
        read is then `answered_at`: a latency needs no other request to be waited for first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(
                        f"no response to {msg_id!r} (server {'dead' if self.proc.poll() is not None else 'alive'})\n{self.stderr()}"
                    )
                self._cond.wait(min(left, 0.2))
            self.answered_at = self._arrivals.pop(msg_id)
            return self._responses.pop(msg_id)

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict:
        return self.expect(self.start_request(method, params), timeout)

    def result(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        response = self.request(method, params, timeout)
        assert "error" not in response, response
        return response["result"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.2))
        return True

    # ----- session -----
    def initialize(self, options: Any = None, root: str | None = None, capabilities: dict | None = None) -> dict:
        caps = capabilities if capabilities is not None else {"window": {"workDoneProgress": True}}
        params = {"processId": os.getpid(), "capabilities": caps, "initializationOptions": options}
        if root is not None:
            params["rootUri"] = Path(root).as_uri()
            params["workspaceFolders"] = [{"uri": Path(root).as_uri(), "name": "root"}]
        result = self.result("initialize", params)
        self.notify("initialized", {})
        return result

    def status(self) -> dict:
        return self.result("diffill/status", None)

    def wait_ready(self, timeout: float = 60.0, poll: float = 0.05) -> dict:
        """diffill/status, asked every `poll` seconds until the model is ready or failed (or `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if status["ready"] or status["model"] == "failed" or time.monotonic() > deadline:
                return status
            time.sleep(poll)

    def document_text(self, uri: str) -> dict | None:
        return self.result("diffill/documentText", {"uri": uri})

    def shutdown(self, timeout: float = 20.0) -> int:
        """shutdown + exit, then the exit code (raises if the process does not end)."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit")
            except (BrokenPipeError, OSError, TimeoutError):
                pass
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return b"".join(self.stderr_tail[-40:]).decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except Exception:
                pass


def proc_figures(pid: int) -> dict[str, int]:
    """RSS (kB) with its anonymous (heap, arenas, tensors) and file-backed (code and weights paged in) parts, threads
    and open file descriptors of a live process, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "Threads"):
            fields[key] = int(value.split()[0])
    return {
        "rss_kb": fields["VmRSS"],
        "rss_anon_kb": fields["RssAnon"],
        "rss_file_kb": fields["RssFile"],
        "threads": fields["Threads"],
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }
