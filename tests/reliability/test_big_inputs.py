"""Big inputs never block: a document that is one line of megabytes (a minified bundle, a data literal) is
completed in bounded time, and the other documents keep getting their answers meanwhile. A completion reads its
line's window around the cursor, not the line: the filters once took minutes on such a line (on the server's one
model thread, so every other document waited behind it)."""

from __future__ import annotations

import time

import pytest

from diffill.bench.wire import RawClient

FIVE_MB = 5 * 1024 * 1024
# One line of 5 MB: a Python literal as generated code or a data dump writes it, and a minified bundle.
BIG_LINES = {
    "python": ("x = [" + ", ".join(str(i % 1000) for i in range(1_300_000)))[:FIVE_MB] + "]\n",
    "javascript": "".join(f"function f{i}(a,b){{var c=a.x{i % 13}(b);return c+b*{i % 97}}};" for i in range(110_000))[
        :FIVE_MB
    ],
}
SMALL = "import os\n\n\ndef join_all(parts):\n    path = os.path.jo"
ROUNDS = 4
OTHER_DOCUMENT_S = 1.0  # an answer in another document, asked while the big one is being served
BIG_DOCUMENT_S = 5.0  # the big document's own answer (2 busy cores)


def _open(server: RawClient, uri: str, text: str, language: str = "python") -> None:
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})  # fmt: skip


def _ask(server: RawClient, uri: str, line: int, character: int) -> int:
    position = {"line": line, "character": character}
    params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}}
    return server.start_request("textDocument/inlineCompletion", params)


@pytest.mark.parametrize("language", sorted(BIG_LINES))
def test_a_5mb_line_never_blocks_another_document(server: RawClient, tmp_path, language: str):
    big_line = BIG_LINES[language]
    big, small = (tmp_path / f"bundle-{language}").as_uri(), (tmp_path / "small.py").as_uri()
    _open(server, big, big_line, language)
    _open(server, small, SMALL)
    assert server.status()["documents"] >= 2  # (answered after both opens: they are handled)
    small_end = SMALL.rsplit("\n", 1)
    others, bigs = [], []
    for k in range(ROUNDS):
        # a keystroke in the middle of the big line, its completion, and at once one in the small document
        at = len(big_line) // 2 + 997 * k
        typed = {"range": {"start": {"line": 0, "character": at}, "end": {"line": 0, "character": at}}, "text": "7"}
        server.notify("textDocument/didChange", {"textDocument": {"uri": big, "version": 2 + k}, "contentChanges": [typed]})  # fmt: skip
        asked_big = time.perf_counter()
        big_id = _ask(server, big, 0, at + 1)
        asked_small = time.perf_counter()
        small_id = _ask(server, small, SMALL.count("\n"), len(small_end[-1]))
        answer = server.expect(small_id, timeout=10 * OTHER_DOCUMENT_S)
        others.append(server.answered_at - asked_small)
        assert isinstance(answer.get("result", {}).get("items"), list), answer
        answer = server.expect(big_id, timeout=10 * BIG_DOCUMENT_S)
        bigs.append(server.answered_at - asked_big)
        assert isinstance(answer.get("result", {}).get("items"), list), answer  # an answer or empty, no error
    assert max(others) < OTHER_DOCUMENT_S, f"the small document waited {others} s"
    assert max(bigs) < BIG_DOCUMENT_S, f"the big document's answers took {bigs} s"
    stats = server.status()["stats"]
    assert stats["errors"] == 0 and stats["model_calls"] >= ROUNDS, stats
    server.notify("textDocument/didClose", {"textDocument": {"uri": big}})
