"""JSON-RPC hardening over pygls: every request gets an answer, and no input can take the daemon down.

pygls 2.1 drops a request whose params do not match the LSP types without answering it (the editor waits forever),
pops up "Error in server" for every malformed message, answers nothing after `shutdown`, lets a nested object that
happens to hold a "jsonrpc" key break the whole message, and allocates whatever Content-Length a client announces
(a huge one kills the process with MemoryError). This module closes those holes without forking pygls.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .early import MAX_HEADER_LINE, MAX_MESSAGE_BYTES

log = logging.getLogger("diffill")


class BoundedReader:
    """stdin for pygls' message loop with limits: header lines are read in bounded chunks, and a body announced
    larger than MAX_MESSAGE_BYTES is not read at all (answered as a parse error; the stream resynchronises on the
    next well-formed header)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw

    def readline(self) -> bytes:
        return self.raw.readline(MAX_HEADER_LINE)

    def read(self, n: int) -> bytes:
        if n > MAX_MESSAGE_BYTES:
            log.error("refused a message of %d bytes (limit %d)", n, MAX_MESSAGE_BYTES)
            return b" "  # not JSON: reported as a parse error by the message loop
        return self.raw.read(n)


class BoundedStream:
    """The same limits over TCP (an asyncio StreamReader): a header line past the stream's limit used to raise
    ValueError out of pygls' loop, ending the session while the process stayed up serving nobody."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    async def readline(self) -> bytes:
        try:
            return await self.reader.readline()
        except ValueError:  # over the limit: asyncio dropped the line; the next header resynchronises
            log.error("dropped a header line over %d bytes", MAX_HEADER_LINE)
            return b"-\r\n"

    async def readexactly(self, n: int) -> bytes:
        if n > MAX_MESSAGE_BYTES:
            log.error("refused a message of %d bytes (limit %d)", n, MAX_MESSAGE_BYTES)
            return b" "
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:  # the client went away mid-message
            return exc.partial


def serve_tcp(server: LanguageServer, host: str, port: int) -> None:
    """pygls' start_tcp with the bounded reader: one editor session on `host`, then the process ends."""
    stop = threading.Event()
    server._stop_event = stop

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        try:
            await run_async(stop, BoundedStream(reader), server.protocol, log, server.report_server_error)
        finally:
            server.shutdown()

    async def main() -> None:
        server._server = await asyncio.start_server(session, host, port, limit=MAX_HEADER_LINE)
        async with server._server:
            await server._server.serve_forever()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        log.debug("TCP server closed")


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


class DiffillProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that structures whole messages only and answers every request it cannot run."""

    exit_code: int | None = None  # set by `exit`: 0 after `shutdown`, else 1 (pygls swallows its own SystemExit)
    answered_early: int | str | None = None  # the `initialize` lsp.early answered: pygls' answer to it is dropped

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if self.answered_early is not None and msg_id == self.answered_early:
            self.answered_early = None
            if error is not None:  # the client has its capabilities already; the server says what went wrong
                log.error("initialize, answered early, then failed: %s", getattr(error, "message", error))
            return
        super()._send_response(msg_id, result, error)

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls passes this as json's object_hook (every object, innermost first): keep objects plain here and
        # structure the whole message once in handle_message, where a failure can still be answered.
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._refuse(None, JsonRpcInvalidRequest("a JSON-RPC message must be an object"))
            return
        is_request = "method" in message and "id" in message
        if "method" in message and "params" not in message:
            message = {**message, "params": None}  # params are optional in JSON-RPC; pygls' types insist on them
        msg_id = message.get("id")
        if message.get("jsonrpc") != self.VERSION:
            if is_request or not ("method" in message or "result" in message or "error" in message):
                self._refuse(msg_id, JsonRpcInvalidRequest('"jsonrpc": "2.0" is required'))
            return
        if "id" in message and not _valid_id(msg_id):  # cattrs lets any id through; pygls then fails to answer
            if "method" in message:
                self._refuse(None, JsonRpcInvalidRequest(f"invalid id {msg_id!r}"))
            return
        try:
            structured = super().structure_message(message)
        except JsonRpcException as exc:
            log.warning("malformed %s: %s", message.get("method", "message"), exc)
            if is_request:
                self._refuse(msg_id, exc)
            return
        except Exception as exc:  # unhashable method names and the like
            log.warning("malformed message: %r", exc)
            if is_request:
                self._refuse(msg_id, JsonRpcInvalidRequest(str(exc)))
            return
        if self._shutdown and is_request:
            self._refuse(msg_id, JsonRpcInvalidRequest("the server is shutting down"))
            return
        if message.get("method") == types.EXIT:
            self.exit_code = 0 if self._shutdown else 1
        super().handle_message(structured)

    def _check_handler_result(self, future: Any) -> None:
        """Notifications run by generator handlers (didOpen, didChange, didClose: all of pygls' built-ins) are filed
        under a fresh id in `_request_futures` that nothing ever removes: one Future leaked per keystroke. The entry
        goes here, when the notification is done (the dict then only holds requests in flight, so the scan is short).
        """
        for key, pending in list(self._request_futures.items()):
            if pending is future:
                del self._request_futures[key]
                break
        super()._check_handler_result(future)

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        send_error(self, msg_id if _valid_id(msg_id) else None, error)

    # diffill keeps its own documents (lsp.documents: tree-sitter, incremental line starts). pygls' copy of each
    # text is never read, and keeping it costs a second copy of every document and, per keystroke, a re-split of
    # the whole text into lines: a big file's edits would cost their size. So pygls' built-in document sync is
    # replaced by handlers that only hand the notification to diffill's own.
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield user_handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield user_handler, (params,), None


def send_error(protocol: LanguageServerProtocol, msg_id: int | str | None, error: JsonRpcException) -> None:
    """An error response; with `"id": null` written out when the request's id is unknown, as JSON-RPC requires
    (pygls' converter would drop the null id)."""
    if msg_id is not None:
        protocol._send_response(msg_id, error=error.to_response_error())
        return
    body = {"code": error.code, "message": error.message or type(error).__name__}
    protocol._send_data({"jsonrpc": "2.0", "id": None, "error": body})


def report_error(protocol: LanguageServerProtocol, error: Exception) -> None:
    """The server's error reporter: a body that is not JSON (or not UTF-8) gets the JSON-RPC parse error reply
    (id null); everything else is logged, not popped up: a malformed message is the client's bug, not the user's."""
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        log.warning("unparseable message: %s", error)
        send_error(protocol, None, JsonRpcParseError(str(error)))
        return
    log.error("server error: %r", error)
