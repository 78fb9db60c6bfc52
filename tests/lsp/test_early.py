"""`initialize` answered by hand before pygls loads (lsp.early): the same answer pygls gives, once, and nothing
lost of what was read to find it."""

import io
import json
import subprocess
import sys

import pytest
from lsprotocol import types

from diffill.bench.wire import RawClient, frame
from diffill.lsp import early
from diffill.lsp.server import server

GENERAL = types.GeneralClientCapabilities
CLIENTS = [
    types.ClientCapabilities(),
    types.ClientCapabilities(general=GENERAL()),
    types.ClientCapabilities(general=GENERAL(position_encodings=["utf-32", "utf-8"])),
    types.ClientCapabilities(general=GENERAL(position_encodings=["utf-8"])),
    types.ClientCapabilities(general=GENERAL(position_encodings=["latin-1"])),
    types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(will_save=True, will_save_wait_until=True)
        ),
        workspace=types.WorkspaceClientCapabilities(
            file_operations=types.FileOperationClientCapabilities(did_create=True, will_rename=True)
        ),
    ),
]


def pygls_answer(params: types.InitializeParams) -> dict:
    """What pygls' own `initialize` handler returns for these params (its generator run without the user handler,
    which sets up the session and adds nothing to the answer)."""
    run = server.protocol.lsp_initialize(params)
    next(run)
    with pytest.raises(StopIteration) as done:
        run.send(None)
    return json.loads(json.dumps(done.value.value, default=server.protocol._serialize_message))  # as sent


@pytest.mark.parametrize("capabilities", CLIENTS)
def test_the_early_answer_is_the_one_pygls_computes(capabilities: types.ClientCapabilities):
    params = types.InitializeParams(capabilities=capabilities, process_id=None)
    as_sent = json.loads(json.dumps(server.protocol._converter.unstructure(params)))
    assert early.initialize_result(as_sent) == pygls_answer(params)


def test_replayed_gives_back_what_was_read_then_reads_on():
    stream = early.Replayed(b"Content-Length: 2\r\n\r\n{}par", io.BytesIO(b"tial line\nrest"))
    assert stream.readline(64) == b"Content-Length: 2\r\n"
    assert stream.readline(64) == b"\r\n"
    assert stream.read(2) == b"{}"
    assert stream.readline(64) == b"partial line\n"  # a line split between the two
    assert stream.readline(2) == b"re"  # the limit holds across both
    assert stream.read(10) == b"st"
    assert stream.read(1) == b""


def initialize_message(msg_id=7, **params) -> bytes:
    body = {"processId": None, "capabilities": {}, **params}
    return frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": body}))


def read_framed(data: bytes) -> list[dict]:
    out, rest = [], data
    while rest:
        head, _, rest = rest.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
        out.append(json.loads(rest[:length]))
        rest = rest[length:]
    return out


def test_an_initialize_is_answered_and_what_follows_is_left_unread():
    first = initialize_message(initializationOptions={"steps": 2})
    after = frame(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    raw, out = io.BytesIO(first + after), io.BytesIO()
    start = early.answer_initialize(raw, out)
    assert start.consumed == first and start.answered_id == 7 and start.options == {"steps": 2}
    assert raw.read() == after
    (answer,) = read_framed(out.getvalue())
    assert answer["id"] == 7 and answer["result"]["capabilities"]["positionEncoding"] == "utf-16"
    assert answer["result"]["serverInfo"]["name"] == "diffill"


@pytest.mark.parametrize(
    "first",
    [
        frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})),  # not initialize
        frame(json.dumps({"jsonrpc": "1.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})),
        frame(json.dumps({"jsonrpc": "2.0", "id": True, "method": "initialize", "params": {"capabilities": {}}})),
        frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 3}})),
        frame(b"{not json"),
        frame(b'{"a": ' * 100_000),  # deeper than Python's stack
        frame(b"[1, 2]"),
        b"Content-Length: 99999999999\r\n\r\n",  # over the limit: the bounded reader refuses it later
        b"Content-Length: x\r\n\r\n{}",
        b"no header at all",
        b"",
    ],
)
def test_anything_else_first_is_left_to_pygls(first: bytes):
    raw, out = io.BytesIO(first + b"MORE"), io.BytesIO()
    start = early.answer_initialize(raw, out)
    assert out.getvalue() == b"" and start.answered_id is None
    assert start.consumed + raw.read() == first + b"MORE"  # nothing lost


def test_early_start_loads_neither_the_protocol_nor_torch():
    code = (
        "import io, sys; from diffill.lsp import early; "
        "early.answer_initialize(io.BytesIO(sys.argv[1].encode()), io.BytesIO()); early.prefetch(None); "
        "loaded = [m for m in ('torch', 'lsprotocol', 'pygls') if m in sys.modules]; print(loaded); "
        "sys.exit(1 if loaded else 0)"
    )
    message = initialize_message().decode()
    assert subprocess.run([sys.executable, "-c", code, message], check=False).returncode == 0


def test_the_daemon_answers_initialize_once_and_serves_on():
    client = RawClient()
    try:
        result = client.initialize({"steps": 2}, capabilities={"general": {"positionEncodings": ["utf-32"]}})
        assert result["capabilities"]["positionEncoding"] == "utf-32"
        status = client.status()  # pygls is serving: it read the initialize again and set the workspace up
        assert status["position_encoding"] == "utf-32" and status["settings"]["steps"] == 2
        assert 1 not in client._responses  # pygls' own answer to the initialize was dropped
        assert client.shutdown() == 0
    finally:
        client.close()
