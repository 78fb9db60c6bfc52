"""A transparent stdio tap between an editor and `diffill serve`, for the editor end-to-end tests.

    python lsp_tap.py --log LOG.jsonl [--ready READY.json] -- diffill serve

Every LSP message in both directions is forwarded unchanged and also appended to LOG (one JSON object a line:
{"dir": "c2s" | "s2c", "t": seconds, "msg": {...}}), so a test can read what the editor asked and what the
server proposed. With --ready, once the editor's `initialized` went through, the tap asks the server
`diffill/status` (ids "tap-N"; those answers are not forwarded) until the model is ready, then writes the
status to READY: the tests wait for that file before they type, as a user would wait for the status bar.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

T0 = time.monotonic()


def read_message(stream) -> tuple[bytes, dict] | None:
    """One framed message: (raw bytes incl. headers, parsed body), or None at EOF."""
    headers = b""
    while not headers.endswith(b"\r\n\r\n"):
        ch = stream.read(1)
        if not ch:
            return None
        headers += ch
    length = 0
    for line in headers.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    body = b""
    while len(body) < length:
        chunk = stream.read(length - len(body))
        if not chunk:
            return None
        body += chunk
    try:
        msg = json.loads(body)
    except ValueError:
        msg = {"unparsed": body.decode("utf-8", "replace")}
    return headers + body, msg


def frame(msg: dict) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    log = open(args.log, "a", buffering=1)
    log_lock = threading.Lock()
    to_server = threading.Lock()
    to_editor = threading.Lock()
    ready = threading.Event()
    stop = threading.Event()

    def record(direction: str, msg: dict) -> None:
        with log_lock:
            log.write(json.dumps({"dir": direction, "t": round(time.monotonic() - T0, 4), "msg": msg}) + "\n")

    def send_server(raw: bytes) -> None:
        with to_server:
            child.stdin.write(raw)
            child.stdin.flush()

    def poll_status() -> None:
        n = 0
        while not ready.is_set() and not stop.is_set() and child.poll() is None:
            n += 1
            try:
                send_server(frame({"jsonrpc": "2.0", "id": f"tap-{n}", "method": "diffill/status", "params": {}}))
            except (BrokenPipeError, ValueError, OSError):
                return
            ready.wait(0.25)

    def editor_to_server() -> None:
        stdin = sys.stdin.buffer
        while True:
            got = read_message(stdin)
            if got is None:
                break
            raw, msg = got
            record("c2s", msg)
            try:
                send_server(raw)
            except (BrokenPipeError, OSError):
                break
            if msg.get("method") == "initialized" and args.ready:
                threading.Thread(target=poll_status, daemon=True).start()
        stop.set()
        try:
            child.stdin.close()
        except OSError:
            pass

    def server_to_editor() -> None:
        stdout = sys.stdout.buffer
        while True:
            got = read_message(child.stdout)
            if got is None:
                break
            raw, msg = got
            msg_id = msg.get("id")
            if isinstance(msg_id, str) and msg_id.startswith("tap-"):
                result = msg.get("result") or {}
                if result.get("ready") and not ready.is_set():
                    ready.set()
                    record("tap", {"ready": result})
                    tmp = args.ready + ".tmp"
                    with open(tmp, "w") as f:
                        json.dump(result, f)
                    os.replace(tmp, args.ready)
                continue
            record("s2c", msg)
            with to_editor:
                try:
                    stdout.write(raw)
                    stdout.flush()
                except (BrokenPipeError, OSError):
                    break

    threading.Thread(target=editor_to_server, daemon=True).start()
    out = threading.Thread(target=server_to_editor, daemon=True)
    out.start()
    out.join()
    stop.set()
    try:
        code = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        code = 1
    log.close()
    return code


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # not sys.exit: the stdin reader thread may still block in read()
