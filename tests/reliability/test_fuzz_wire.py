"""Fuzzing `diffill serve` over raw stdio bytes: the process never dies, every request gets a JSON-RPC answer
(a result or a proper error), and every document matches the reference model of the same edits.

The random parts are seeded (FUZZ_SEED, default 0; a failure message names the seed and the step) so that any
failure replays exactly; `FUZZ_STEPS` scales the run (CI uses the defaults).
"""

from __future__ import annotations

import json
import os
import random

from reference import Reference, random_change, random_position, random_text

from diffill.bench.wire import RawClient, frame

SEED = int(os.environ.get("FUZZ_SEED", "0"))
STEPS = int(os.environ.get("FUZZ_STEPS", "400"))


def assert_alive(client: RawClient) -> None:
    assert client.alive(), client.stderr()
    assert client.status()["ready"]  # and still answering


def is_error(response: dict, *codes: int) -> bool:
    return "error" in response and (not codes or response["error"]["code"] in codes)


def stray_errors(client: RawClient, before: int) -> list[dict]:
    client.wait_for(lambda: len(client.stray) > before, timeout=5)
    return client.stray[before:]


# ----- the wire itself ------------------------------------------------------------------------------------------
def test_parse_errors_get_an_error_with_null_id(server: RawClient):
    for body in [b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe{}", b"NaN-ish"]:
        before = len(server.stray)
        server.send_raw(frame(body))
        errors = stray_errors(server, before)
        assert errors and errors[0]["id"] is None and errors[0]["error"]["code"] == -32700, (body, errors)
        assert_alive(server)


def test_non_objects_and_missing_version_are_invalid_requests(server: RawClient):
    for body in [b"[1, 2]", b"42", b'"x"', b"null"]:
        before = len(server.stray)
        server.send_raw(frame(body))
        errors = stray_errors(server, before)
        assert errors and errors[0]["id"] is None and errors[0]["error"]["code"] == -32600, (body, errors)
    server.send({"id": "v1", "method": "diffill/status"})
    assert is_error(server.expect("v1"), -32600)
    server.send({"jsonrpc": "1.0", "id": "v2", "method": "diffill/status"})
    assert is_error(server.expect("v2"), -32600)
    assert_alive(server)


def test_requests_with_wrong_types_are_answered(server: RawClient):
    """pygls dropped these without an answer (the editor waited forever) and popped up "Error in server"."""
    n_popups = sum(m["method"] == "window/showMessage" for m in server.messages)
    bad = [
        ("textDocument/inlineCompletion", {"textDocument": {"uri": 5}, "position": "x"}),
        (
            "textDocument/completion",
            {"textDocument": {"uri": "file:///a.py"}, "position": {"line": -1, "character": 0}},
        ),
        (
            "textDocument/completion",
            {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 1.5, "character": 0}},
        ),
        ("textDocument/inlineCompletion", None),
        ("textDocument/inlineCompletion", [1, 2, 3]),
        ("textDocument/completion", "params"),
    ]
    for method, params in bad:
        response = server.request(method, params, timeout=20)
        assert is_error(response, -32602, -32603) or "result" in response, (method, params, response)
    assert sum(m["method"] == "window/showMessage" for m in server.messages) == n_popups  # no popups for client bugs
    assert_alive(server)


def test_odd_ids_and_methods(server: RawClient):
    assert is_error(server.request("no/such/method", {}), -32601)
    assert is_error(server.request("$/unknown", None), -32601)
    assert server.request("diffill/status", None)["result"]["ready"]
    server.send({"jsonrpc": "2.0", "id": "p1", "method": "diffill/status"})  # params omitted: allowed by JSON-RPC
    assert "result" in server.expect("p1")
    for msg_id in ["", "x" * 10_000, 2**53, -1, 0]:
        server.send({"jsonrpc": "2.0", "id": msg_id, "method": "diffill/status", "params": None})
        assert "result" in server.expect(msg_id)
    for bad_id in [[1], {"a": 1}, True, 1.5, None]:
        before = len(server.stray)
        server.send({"jsonrpc": "2.0", "id": bad_id, "method": "diffill/status", "params": None})
        if bad_id == 1.5:  # cattrs reads 1.5 as the id 1: answered under that id or refused; either is fine
            continue
        errors = stray_errors(server, before)
        assert errors and errors[-1]["id"] is None, (bad_id, errors)
    for method in [5, None, ["x"], {"m": 1}]:
        server.send({"jsonrpc": "2.0", "id": f"m{method!r}", "method": method, "params": None})
        assert is_error(server.expect(f"m{method!r}")), method
    # Notifications never get answers, whatever they hold.
    before = len(server.stray)
    for method in ["no/such", "textDocument/didChange", "$/cancelRequest", "$/setTrace", "exitt"]:
        server.notify(method, {"junk": [1, {"jsonrpc": "2.0"}]})
    server.notify("$/cancelRequest", {"id": "never-sent"})
    assert_alive(server)
    assert server.stray[before:] == []


def test_nested_objects_that_look_like_messages(server: RawClient):
    """pygls structured every nested object holding "jsonrpc" as a message, failing the whole request."""
    response = server.request("diffill/status", {"jsonrpc": "2.0", "id": 1, "method": "x"})
    assert response["result"]["ready"]
    server.notify("workspace/didChangeConfiguration", {"settings": {"diffill": {"steps": 2}, "jsonrpc": "2.0"}})
    assert_alive(server)


def test_framing_errors(server: RawClient):
    # Headers in the wrong case, extra headers, garbage lines, a short body: the stream recovers by the next message.
    server.send_raw(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        + frame(b'{"jsonrpc":"2.0","id":"f1","method":"diffill/status"}')
    )
    assert "result" in server.expect("f1")
    server.send_raw(b"garbage line\r\nX-Other: 1\r\n")
    server.send_raw(frame(b'{"jsonrpc":"2.0","id":"f2","method":"diffill/status"}'))
    assert "result" in server.expect("f2")
    server.send_raw(b"Content-Length: 5\r\n\r\n" + b'{"jsonrpc":"2.0"}\r\n')  # body shorter than the JSON
    server.send_raw(frame(b'{"jsonrpc":"2.0","id":"f3","method":"diffill/status"}'))
    assert "result" in server.expect("f3")
    server.send_raw(b"Content-Length: 0\r\n\r\n")
    server.send_raw(b"x" * 200_000 + b"\r\n")  # an absurd header line
    server.send_raw(frame(b'{"jsonrpc":"2.0","id":"f4","method":"diffill/status"}'))
    assert "result" in server.expect("f4")
    assert_alive(server)


def test_absurd_content_length_is_refused_not_allocated(server: RawClient):
    """Content-Length: 10^14 made pygls allocate it: MemoryError killed the server."""
    before = len(server.stray)
    server.send_raw(b"Content-Length: 99999999999999\r\n\r\n")
    errors = stray_errors(server, before)
    assert errors and errors[0]["error"]["code"] == -32700
    server.send_raw(frame(b'{"jsonrpc":"2.0","id":"big1","method":"diffill/status"}'))
    assert "result" in server.expect("big1")
    assert_alive(server)


# ----- typed messages with random values --------------------------------------------------------------------------
def _junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 2 else 6)
    return [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.choice([0, -1, 1, 2**31, 2**63, -(2**70), 7]),
        lambda: rng.choice([0.5, -3.25, 1e308]),
        lambda: random_text(rng, 4),
        lambda: rng.choice(["file:///tmp/fuzz/junk.py", "untitled:1", "", "file://[bad/x.py", "\ud800"]),
        lambda: [_junk(rng, depth + 1) for _ in range(rng.randrange(3))],
        lambda: {random_text(rng, 1) or "k": _junk(rng, depth + 1) for _ in range(rng.randrange(3))},
        lambda: {"line": _junk(rng, depth + 1), "character": _junk(rng, depth + 1)},
    ][kind]()


def _mutate(rng: random.Random, value):
    """`value` with one random leaf or key replaced, removed or added."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.random()
        if roll < 0.15:
            del out[key]
        elif roll < 0.25:
            out[random_text(rng, 1) or "extra"] = _junk(rng)
        else:
            out[key] = _mutate(rng, value[key])
        return out
    return _junk(rng)


def _templates(uri: str) -> list[tuple[str, dict, bool]]:
    pos = {"line": 0, "character": 3}
    ident = {"uri": uri}
    return [
        ("textDocument/inlineCompletion", {"textDocument": ident, "position": pos, "context": {"triggerKind": 2}}, True),
        ("textDocument/completion", {"textDocument": ident, "position": pos}, True),
        ("diffill/status", {}, True),
        ("textDocument/didOpen", {"textDocument": {**ident, "languageId": "python", "version": 1, "text": "x = 1\n"}}, False),
        ("textDocument/didChange", {"textDocument": {**ident, "version": 2}, "contentChanges": [{"range": {"start": pos, "end": pos}, "text": "y"}]}, False),
        ("textDocument/didClose", {"textDocument": ident}, False),
        ("workspace/didChangeConfiguration", {"settings": {"diffill": {"steps": 2, "languages": ["python"]}}}, False),
        ("$/cancelRequest", {"id": 1}, False),
        ("$/setTrace", {"value": "off"}, False),
        ("workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}}, False),
    ]  # fmt: skip


def test_random_typed_messages(server: RawClient):
    rng = random.Random(SEED)
    uri = "file:///tmp/fuzz/junk.py"
    pending = []
    for step in range(STEPS):
        method, params, is_request = rng.choice(_templates(uri))
        mutated = _mutate(rng, params) if rng.random() < 0.85 else params
        if is_request:
            pending.append((step, method, mutated, server.start_request(method, mutated)))
        else:
            server.notify(method, mutated)
        if len(pending) > 20 or step == STEPS - 1:
            for i, m, p, msg_id in pending:
                response = server.expect(msg_id, timeout=60)
                assert "result" in response or is_error(response), f"seed {SEED} step {i}: {m} {p!r} -> {response}"
            pending.clear()
    server.notify("workspace/didChangeConfiguration", {"settings": {"diffill": {"steps": 2, "enabled": True}}})
    status = server.status()
    assert status["ready"] and status["settings"]["enabled"], status
    assert_alive(server)


# ----- documents against the reference model ----------------------------------------------------------------------
URIS = [
    "file:///tmp/fuzz/a.py",
    "file:///tmp/fuzz/b%20c.ts",
    "untitled:Untitled-1",
    "file://[bad/x.py",  # urllib cannot split this one: pygls' copy refused to open it
    "file:///tmp/fuzz/\u00e9\U0001f600.rs",
]


def _check(server: RawClient, ref: Reference, uri: str, where: str) -> None:
    got = server.document_text(uri)
    want = ref.docs.get(uri)
    if want is None:
        assert got is None, f"{where}: {uri} should be closed, server has {got!r:.200}"
    else:
        assert got is not None, f"{where}: {uri} missing on the server"
        # Over JSON, two adjacent lone surrogates read back as one astral character: compare what the wire carries.
        text = json.loads(json.dumps(want[0]))
        assert got["text"] == text, f"{where}: {uri}\nserver    {got['text']!r:.300}\nreference {text!r:.300}"
        assert got["version"] == want[1], where


def _completion_ok(response: dict, method: str) -> bool:
    if "error" in response:
        return response["error"]["code"] in (-32800, -32801)  # cancelled / content modified: fine under edits
    result = response["result"]
    return isinstance(result, dict) and isinstance(result.get("items"), list)


def test_edit_sequences_match_reference(server: RawClient):
    rng = random.Random(SEED + 1)
    ref = Reference(encoding="utf-16")
    languages = ["python", "rust", "typescript", "plaintext"]
    server.notify(
        "workspace/didChangeConfiguration", {"settings": {"steps": 2, "enabled": True, "languages": languages}}
    )
    calls = server.status()["stats"]["model_calls"]
    for uri in URIS:
        text = random_text(rng, 20)
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": rng.choice(["python", "plaintext", "rust"]), "version": 1, "text": text}})  # fmt: skip
        ref.open(uri, text)
    pending = []
    for step in range(STEPS):
        where = f"seed {SEED + 1} step {step}"
        uri = rng.choice(URIS)
        roll = rng.random()
        if roll < 0.75:
            text = ref.docs.get(uri, ("", 0))[0]
            changes = [random_change(rng, text) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": step}, "contentChanges": changes})  # fmt: skip
            ref.change(uri, changes)
        elif roll < 0.80:
            server.notify("textDocument/didChange", {"textDocument": {"uri": "file:///tmp/fuzz/never-opened.py", "version": 1}, "contentChanges": [random_change(rng, "")]})  # fmt: skip
        elif roll < 0.85:
            text = random_text(rng, 20)
            server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
            ref.open(uri, text)
        elif roll < 0.88:
            server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            ref.close(uri)
        else:
            method = rng.choice(["textDocument/inlineCompletion", "textDocument/completion"])
            pos = random_position(rng, ref.docs.get(uri, ("", 0))[0])
            params = {"textDocument": {"uri": uri}, "position": pos, "context": {"triggerKind": 1}}
            msg_id = server.start_request(method, params)
            pending.append((where, method, msg_id))
            if rng.random() < 0.3:
                server.notify("$/cancelRequest", {"id": msg_id})
        _check(server, ref, uri, where)
        if step % 50 == 0 or step == STEPS - 1:
            for where_req, method, msg_id in pending:
                response = server.expect(msg_id, timeout=60)
                assert _completion_ok(response, method), f"{where_req}: {method} -> {response}"
            pending.clear()
            for u in URIS:
                _check(server, ref, u, where)
    status = server.status()
    assert status["in_flight"] == 0
    assert status["stats"]["model_calls"] > calls  # the model really ran under these edits
    assert_alive(server)


def test_big_documents(server: RawClient):
    """A 5 MB line is served (answer or empty, in bounded time); documents over 8 MB are dropped, also when an edit
    makes them grow past the limit (they used to stay parsed)."""
    ref = Reference()
    uri = "file:///tmp/fuzz/long-line.py"
    text = "x = '" + "ab\x00é" * (5 * 1024 * 1024 // 5) + "'"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
    ref.open(uri, text)
    changes = [
        {"range": {"start": {"line": 0, "character": 10}, "end": {"line": 0, "character": 12}}, "text": "\ud800\n"}
    ]
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": changes})
    ref.change(uri, changes)
    _check(server, ref, uri, "5 MB line")
    end = {"line": 1, "character": 10**7}
    response = server.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": end, "context": {"triggerKind": 1}}, timeout=60)  # fmt: skip
    assert _completion_ok(response, "inline"), response

    huge = "#" * (8 * 1024 * 1024 + 1)
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 3, "text": huge}})  # fmt: skip
    ref.open(uri, huge)
    _check(server, ref, uri, "9 MB open")  # dropped, and the older text with it
    response = server.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": end, "context": {"triggerKind": 1}})  # fmt: skip
    assert response["result"]["items"] == []

    grow = "file:///tmp/fuzz/grows.py"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": grow, "languageId": "python", "version": 1, "text": "x = 1\n"}})  # fmt: skip
    ref.open(grow, "x = 1\n")
    piece = "y" * (3 * 1024 * 1024)
    for i in range(3):
        changes = [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": piece}]
        server.notify("textDocument/didChange", {"textDocument": {"uri": grow, "version": 2 + i}, "contentChanges": changes})  # fmt: skip
        ref.change(grow, changes)
        _check(server, ref, grow, f"growth {i}")
    assert grow not in ref.docs
    assert_alive(server)


def test_json_with_lone_surrogates_and_nul(server: RawClient):
    uri = "file:///tmp/fuzz/surrogates.py"
    ref = Reference()
    text = "a\ud800b\udc00\x00\n\U0001f600c"
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}})  # fmt: skip
    server.send_raw(frame(body))
    ref.open(uri, text)
    for line, char in [(0, 2), (0, 5), (1, 1), (1, 2), (1, 3)]:
        changes = [{"range": {"start": {"line": line, "character": char}, "end": {"line": line, "character": char}}, "text": "|"}]  # fmt: skip
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": changes})
        ref.change(uri, changes)
        _check(server, ref, uri, f"insert at {line}:{char}")
    assert_alive(server)


def test_notifications_leave_nothing_behind(server: RawClient):
    """pygls filed every didOpen/didChange/didClose under a fresh id that was never removed: a Future leaked per
    keystroke (the soak's slow RSS growth)."""
    before = server.result("diffill/debugCounts")
    uri = "file:///tmp/fuzz/leak.py"
    for _ in range(300):
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x"}})  # fmt: skip
        change = {"range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}}, "text": "y"}
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]})  # fmt: skip
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    after = server.result("diffill/debugCounts")
    assert after["request_futures"] <= before["request_futures"], (before, after)
    assert after["documents"] == before["documents"] and after["pygls_documents"] == before["pygls_documents"]


def test_side_features_never_cost_an_edit(server: RawClient):
    """Rename tracking raised IndexError on a reversed range that shrank the text, and recent-edit recording raised
    on a URI urllib cannot split: the later changes of the same notification were then skipped."""
    ref = Reference()
    for uri in ("file:///tmp/fuzz/side.py", "file://[bad/side.py"):
        server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "abc_def\nxyz\n"}})  # fmt: skip
        ref.open(uri, "abc_def\nxyz\n")
        changes = [
            {"range": {"start": {"line": 1, "character": 3}, "end": {"line": 0, "character": 0}}, "text": ""},
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "Q"},
        ]
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": changes})
        ref.change(uri, changes)
        _check(server, ref, uri, "reversed range then insert")
    assert_alive(server)
