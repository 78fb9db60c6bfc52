"""`initialize` answered before pygls and lsprotocol are imported.

Importing lsprotocol's types alone takes 0.35-0.5 s of a 2-core machine, and the editor shows nothing until the
server has answered `initialize`. So the daemon reads the first message itself, answers an `initialize` at once
with the capabilities pygls would compute (tests/lsp/test_early.py holds the two equal), then hands everything
it read to pygls as if unread. pygls handles the same message as ever (workspace, settings, the loader); its
own answer to it is dropped (`DiffillProtocol._send_response`).

Nothing here imports more than the standard library, the settings and (for `prefetch`) model.embedded: no
torch, no pygls.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, BinaryIO

log = logging.getLogger("diffill")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # larger bodies are refused (documents over 8 MB are not parsed anyway)
MAX_HEADER_LINE = 64 * 1024
MAX_HEADERS = 16  # a first message with more header lines is left to pygls' reader
CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"
ENCODINGS = ("utf-8", "utf-16", "utf-32")  # what lsp.documents converts positions from (pygls' _SUPPORTED_ENCODINGS)

# What pygls' ServerCapabilitiesBuilder makes of the features lsp.server registers, but the position encoding
# (chosen per client below). Kept equal to pygls' by tests/lsp/test_early.py.
CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": False},
    "completionProvider": {"triggerCharacters": [".", "(", " "]},
    "codeActionProvider": {"codeActionKinds": ["quickfix"]},
    "executeCommandProvider": {"commands": []},
    "inlineCompletionProvider": {},
    "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
}


def server_version() -> str:
    try:
        return version("diffill")
    except PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "0"


@dataclass
class EarlyStart:
    """What the hand-read start leaves for pygls: the bytes it read (to be read again) and the id of the request
    it answered (None when it answered nothing), with that request's initializationOptions."""

    consumed: bytes
    answered_id: int | str | None = None
    options: Any = None


class Replayed:
    """A binary stream that gives back `consumed` first, then reads on from `raw` (readline and read as
    BufferedReader has them: what lsp.protocol.BoundedReader calls)."""

    def __init__(self, consumed: bytes, raw: BinaryIO) -> None:
        self.head = io.BytesIO(consumed)
        self.raw = raw

    def readline(self, limit: int = -1) -> bytes:
        line = self.head.readline(limit)
        if line.endswith(b"\n") or (limit >= 0 and len(line) >= limit):
            return line
        return line + self.raw.readline(limit - len(line) if limit >= 0 else -1)

    def read(self, n: int = -1) -> bytes:
        data = self.head.read(n)
        if n < 0:
            return data + self.raw.read()
        if len(data) < n:
            data += self.raw.read(n - len(data))
        return data


def position_encoding(capabilities: Any) -> str:
    """The client's first preferred encoding that the server handles, else utf-16 (as pygls chooses)."""
    general = capabilities.get("general") if isinstance(capabilities, dict) else None
    wanted = general.get("positionEncodings") if isinstance(general, dict) else None
    for encoding in wanted if isinstance(wanted, list) else ():
        if encoding in ENCODINGS:
            return encoding
    return "utf-16"


def _sync(capabilities: Any) -> dict[str, Any]:
    """textDocumentSync: pygls says `false` to willSave / willSaveWaitUntil (no such handlers here) where the client
    offers them, and nothing where it does not."""
    sync = dict(CAPABILITIES["textDocumentSync"])
    path = ("textDocument", "synchronization")
    for key in path:
        capabilities = capabilities.get(key) if isinstance(capabilities, dict) else None
    for key in ("willSave", "willSaveWaitUntil"):
        if isinstance(capabilities, dict) and capabilities.get(key):
            sync[key] = False
    return sync


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The InitializeResult pygls would send for these params, as JSON."""
    client = params.get("capabilities")
    capabilities = {**CAPABILITIES, "positionEncoding": position_encoding(client), "textDocumentSync": _sync(client)}
    return {"capabilities": capabilities, "serverInfo": {"name": "diffill", "version": server_version()}}


def _read_first(raw: BinaryIO) -> tuple[bytes, dict[str, Any] | None]:
    """The bytes of the first message as read, and its body when it is a well-formed JSON object."""
    read = bytearray()
    length = None
    for _ in range(MAX_HEADERS):
        line = raw.readline(MAX_HEADER_LINE)
        read += line
        if not line.endswith(b"\n"):
            return bytes(read), None  # end of input or an overlong line: pygls' reader deals with it
        if not line.strip():
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return bytes(read), None
    else:
        return bytes(read), None
    if length is None or not 0 < length <= MAX_MESSAGE_BYTES:
        return bytes(read), None
    body = raw.read(length)
    read += body
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # (nesting deeper than Python's stack)
        return bytes(read), None
    return bytes(read), message if isinstance(message, dict) else None


def _answerable(message: dict[str, Any] | None) -> bool:
    """An `initialize` request whose answer cannot depend on more than what initialize_result reads: anything
    odd is left to pygls, which answers it (or refuses it) as before."""
    if message is None or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return False
    msg_id, params = message.get("id"), message.get("params")
    valid_id = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
    return valid_id and isinstance(params, dict) and isinstance(params.get("capabilities"), dict)


def answer_initialize(raw: BinaryIO, out: BinaryIO) -> EarlyStart:
    """Reads the first message from `raw`; when it is `initialize`, writes its answer to `out` now."""
    consumed, message = _read_first(raw)
    if not _answerable(message):
        return EarlyStart(consumed)
    assert message is not None
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(message["params"])})
    out.write(f"Content-Length: {len(body)}\r\nContent-Type: {CONTENT_TYPE}\r\n\r\n{body}".encode())
    out.flush()
    log.info("answered initialize before loading the protocol")
    return EarlyStart(consumed, message["id"], message["params"].get("initializationOptions"))


def prefetch(options: Any) -> None:
    """Starts the torch-free part of loading the model these initializationOptions name (model.embedded), so that
    it runs while the protocol and torch are imported. Settings pygls will refuse prefetch nothing."""
    from diffill.model.embedded import prefetch_memory

    from .settings import SettingsError, parse_settings

    try:
        prefetch_memory(parse_settings(options).model)
    except SettingsError:
        return
