"""A vLLM server serving a DiffusionGemma model (its OpenAI-compatible API), as the engine that writes the canvas.

One pooled HTTP client lives on an event loop of its own thread: a keystroke pays no TCP or TLS handshake, the
daemon's loop never waits on the network, and a request the caller cancels is closed at once, which makes vLLM
abort it (its completion route stops a request whose client disconnects). Each completion is one read-only canvas
(`vllm_xargs`, docs/server.md): vLLM denoises it with the known positions pinned and returns every position's
token and log-probability; the client keeps what it pinned (vLLM holds pins in its input canvas but returns its
own guess there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .cancel import Cancelled

API_KEY_ENV = "DIFFILL_API_KEY"  # the key when the settings give none (an environment is no settings file)
POLL_S = 0.005  # how often a waiting completion looks at its cancel check and its deadline
POOL = httpx.Limits(max_connections=16, max_keepalive_connections=8, keepalive_expiry=300.0)


class ServerError(RuntimeError):
    """The server cannot answer (unreachable, another model, an HTTP error, a timeout): the message says why, with
    the server's own words where it sent some."""


class Late(Exception):
    """The answer came after its deadline: dropped, not shown."""


@dataclass(frozen=True)
class Connection:
    """Where the server is and how to talk to it (the settings'); `api_key` is never logged or shown."""

    url: str
    api_key: str | None = None
    ca_file: str | None = None  # a CA bundle for a server whose certificate the system does not trust
    verify: bool = True  # TLS verification (off only when the user asks)
    timeout_s: float = 10.0
    model_files: str | None = None  # the served model's tokenizer and card: a folder here or a hub id (None: its names)

    @property
    def base(self) -> str:
        return self.url.strip().rstrip("/").removesuffix("/v1")

    def key(self) -> str | None:
        return self.api_key or os.environ.get(API_KEY_ENV) or None

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return f"Connection({self.base!r}, key={'set' if self.key() else 'none'}, verify={self.verify})"


@dataclass(frozen=True)
class ServedModel:
    """A model as `/v1/models` lists it: the name requests use (vLLM's `--served-model-name`, else what it loaded)
    and its root, the folder or hub id the server loaded it from (None where the server does not say)."""

    id: str
    root: str | None = None


@dataclass(frozen=True)
class CanvasRequest:
    """One canvas after `prompt`: `width` tokens in at most `steps` steps, starting from `seed_canvas` (a draft;
    None: noise) with the `pins` (canvas offset -> id) held."""

    prompt: list[int]
    width: int
    steps: int
    seed_canvas: list[int] | None = None
    pins: dict[int, int] | None = None


@dataclass(frozen=True)
class CanvasAnswer:
    tokens: list[int]  # the canvas as written, pinned positions as pinned
    logprobs: list[float]  # each position's log-probability (0.0 where pinned)
    server_ms: float  # the request's time as this client saw it (connection, server and transfer)


def completion_body(served: str, request: CanvasRequest, vocab_size: int, seed: int = 0) -> dict[str, Any]:
    """The `/v1/completions` body of a read-only canvas. A canvas with pins needs a seed canvas: noise drawn from
    `seed` where there is no draft (uniform ids: what the sampler starts from). No temperature: vLLM refuses any
    but 1 for this model."""
    xargs: dict[str, Any] = {
        "diffusion_canvas_length": request.width,
        "diffusion_max_steps": request.steps,
        "diffusion_read_only": 1,
    }
    if request.seed_canvas is not None or request.pins:
        rng = random.Random(seed)
        canvas = list(request.seed_canvas or [])[: request.width]
        canvas += [rng.randrange(vocab_size) for _ in range(request.width - len(canvas))]
        for at, token in (request.pins or {}).items():
            canvas[at] = token
        xargs["diffusion_seed_canvas"] = canvas
        if request.pins:
            xargs["diffusion_pinned"] = sorted(request.pins)
    return {
        "model": served,
        "prompt": list(request.prompt),
        "max_tokens": request.width,
        "logprobs": 1,
        "return_token_ids": True,
        "vllm_xargs": xargs,
    }


def parse_canvas(body: dict[str, Any], request: CanvasRequest, server_ms: float) -> CanvasAnswer:
    """The canvas of a completion response, the pinned positions put back as pinned."""
    try:
        choice = body["choices"][0]
        tokens = [int(t) for t in choice["token_ids"]]
        logprobs = [
            float(x) if x is not None else 0.0 for x in (choice.get("logprobs") or {}).get("token_logprobs") or []
        ]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ServerError(
            f"the server's answer is not a completion with token ids ({type(exc).__name__}: {exc})"
        ) from exc
    logprobs = (logprobs + [0.0] * len(tokens))[: len(tokens)]
    for at, token in (request.pins or {}).items():
        if at < len(tokens):
            tokens[at], logprobs[at] = token, 0.0
    return CanvasAnswer(tokens, logprobs, server_ms)


def server_message(response: httpx.Response) -> str:
    """What an HTTP error says: the server's own message (vLLM's `{"error": {"message": ...}}` or
    `{"message": ...}`), else the start of its body."""
    try:
        body = response.json()
    except (json.JSONDecodeError, ValueError):
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return f"HTTP {response.status_code}: {str(message)[:300]}"
    return f"HTTP {response.status_code}: {response.text[:300] or response.reason_phrase}"


class VllmServer:
    """The connection to one server (see the module docstring). Thread-safe: any thread may call it."""

    def __init__(self, connection: Connection, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.connection = connection
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="diffill-server", daemon=True)
        self._thread.start()
        headers = {"Authorization": f"Bearer {connection.key()}"} if connection.key() else {}
        try:
            self._client: httpx.AsyncClient = self._run(self._open(headers, transport), None, None)
        except BaseException:
            self._stop()
            raise

    async def _open(self, headers: dict[str, str], transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        c = self.connection
        return httpx.AsyncClient(
            base_url=c.base,
            headers=headers,
            verify=tls_context(c),
            timeout=httpx.Timeout(c.timeout_s),
            limits=POOL,
            transport=transport,
        )

    def _run(self, coro, cancel: Callable[[], bool] | None, deadline: float | None):
        """Runs `coro` on the client's loop and waits: raises Cancelled when `cancel()` says so and Late past
        `deadline` (time.perf_counter), closing the request either way (vLLM then aborts it)."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        while True:
            try:
                return future.result(timeout=POLL_S if cancel is not None or deadline is not None else None)
            except concurrent.futures.TimeoutError:
                if cancel is not None and cancel():
                    future.cancel()
                    raise Cancelled() from None
                if deadline is not None and time.perf_counter() > deadline:
                    future.cancel()
                    raise Late() from None

    async def _request(self, method: str, path: str, **kwargs) -> Any:
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise ServerError(f"{self.connection.base} timed out ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot reach {self.connection.base}: {exc or type(exc).__name__}") from exc
        if response.status_code >= 400:
            raise ServerError(f"{self.connection.base}{path}: {server_message(response)}")
        try:
            return response.json()
        except (json.JSONDecodeError, ValueError) as exc:
            raise ServerError(f"{self.connection.base}{path}: the answer is not JSON") from exc

    def models(self) -> list[ServedModel]:
        """The models the server serves (`/v1/models`): each one's name and, where the server gives it, its root."""
        body = self._run(self._request("GET", "/v1/models"), None, None)
        try:
            return [ServedModel(str(m["id"]), str(m["root"]) if m.get("root") else None) for m in body["data"]]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ServerError(f"{self.connection.base}/v1/models: not a model list") from exc

    def canvas(
        self,
        served: str,
        request: CanvasRequest,
        vocab_size: int,
        *,
        seed: int = 0,
        cancel: Callable[[], bool] | None = None,
        deadline: float | None = None,
    ) -> CanvasAnswer:
        """One read-only canvas (completion_body); raises Cancelled, Late or ServerError."""
        body = completion_body(served, request, vocab_size, seed)
        t0 = time.perf_counter()
        answer = self._run(self._request("POST", "/v1/completions", json=body), cancel, deadline)
        return parse_canvas(answer, request, (time.perf_counter() - t0) * 1e3)

    def close(self) -> None:
        """Closes the pooled connections and stops the client's loop."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._client.aclose(), None, time.perf_counter() + 2.0)
        except (Late, ServerError):
            pass
        self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=2.0)
        self._loop.close()


def tls_context(connection: Connection) -> ssl.SSLContext | bool:
    """Verification as asked: the system's trust store, a CA file beside it, or none at all (`verify` off)."""
    if not connection.verify:
        return False
    context = ssl.create_default_context()
    if connection.ca_file:
        try:
            context.load_verify_locations(cafile=os.path.expanduser(connection.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ServerError(f"cannot read the CA file {connection.ca_file}: {exc}") from exc
    return context
