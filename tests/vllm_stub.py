"""A stand-in for a vLLM server on 127.0.0.1, for the unit tests of the client's request building and fault paths
(the integration tests run the real vLLM: tests/lsp/test_vllm_server.py). It answers `/v1/models` and
`/v1/completions` as vLLM does, in the way a test sets (`behave`), and records what it was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def canvas_answer(body: dict[str, Any], token: int = 5, logprob: float = -0.1) -> dict[str, Any]:
    """vLLM's answer to a read-only canvas: every position `token` (its own guess, also where pinned)."""
    width = body["vllm_xargs"]["diffusion_canvas_length"]
    return {
        "choices": [
            {"index": 0, "text": "", "token_ids": [token] * width, "finish_reason": "length",
             "logprobs": {"token_logprobs": [logprob] * width, "tokens": [], "top_logprobs": []}}
        ]
    }  # fmt: skip


class StubServer:
    """`behave(body) -> (status, answer, delay_s)` decides each completion; `models` what /v1/models lists, each with
    its root from `roots` (vLLM's: the path or hub id it loaded; the name itself by default)."""

    def __init__(self, models: list[str] | None = None, roots: dict[str, str] | None = None) -> None:
        self.models = models if models is not None else ["tiny-dg"]
        self.roots = roots or {}
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.finished = 0  # completions whose answer was written whole
        self.aborted = 0  # completions whose client had gone when the answer was due
        self.behave: Callable[[dict[str, Any]], tuple[int, Any, float]] = lambda body: (200, canvas_answer(body), 0.0)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, answer: Any) -> None:
                data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                stub.headers.append(dict(self.headers))
                listed = [{"id": m, "object": "model", "root": stub.roots.get(m, m)} for m in stub.models]
                self._send(200, {"object": "list", "data": listed})

            def do_POST(self) -> None:
                stub.headers.append(dict(self.headers))
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                status, answer, delay = stub.behave(body)
                until = time.monotonic() + delay
                self.connection.settimeout(0.01)
                while time.monotonic() < until:  # a client that closes meanwhile is seen as vLLM sees it
                    try:
                        if self.connection.recv(1, 2) == b"":  # MSG_PEEK: an empty read is a closed connection
                            stub.aborted += 1
                            return
                    except TimeoutError:
                        pass
                    except OSError:
                        stub.aborted += 1
                        return
                self.connection.settimeout(None)
                self._send(status, answer)
                stub.finished += 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
