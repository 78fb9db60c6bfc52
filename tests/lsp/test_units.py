"""Unit tests of the server's small parts: settings validation, typed-ahead cache, cancel tokens, warm-up."""

import sys
import threading

import pytest

from diffill.lsp.cache import TypedAheadCache
from diffill.lsp.scheduler import Scheduler
from diffill.lsp.settings import Settings, SettingsError, parse_settings


def test_settings_defaults_and_camel_case():
    s = parse_settings({"steps": 4, "canvasLength": 16})
    assert s.steps == 4 and s.canvas_length == 16
    assert parse_settings(None) == Settings()
    assert parse_settings({"diffill": None}) == parse_settings({"diffill": {}}) == parse_settings({}) == Settings()
    assert parse_settings({"diffill": {"languages": ["python", "go"]}}).languages == ("python", "go")
    assert parse_settings({"minConfidence": 0.3}).min_confidence == 0.3
    assert parse_settings({"minConfidence": 1}).min_confidence == 1.0
    assert parse_settings({"draftCandidates": 3}).draft_candidates == 3
    unset = ("canvasLength", "threads", "minConfidence", "draftCandidates")  # null: the model's own, or automatic
    assert parse_settings({key: None for key in unset}) == Settings()
    assert (Settings().canvas_length, Settings().threads, Settings().min_confidence) == (None, None, None)
    for key, old_code in zip(unset, (0, 0, -1, 0), strict=True):  # the codes that once meant "not set" are errors
        with pytest.raises(SettingsError, match=f"{key}: .*or null for"):
            parse_settings({key: old_code})
    with pytest.raises(SettingsError, match="steps"):
        parse_settings({"steps": None})  # a setting with no "not set" has no null either


def test_user_settings_override_the_models_card():
    """The engine runs with the card's draft, cut-off and beam width unless the user set their own."""
    from types import SimpleNamespace

    from diffill.lsp.session import Session
    from diffill.model.card import ModelCard

    card = SimpleNamespace(card=ModelCard(draft="ar", min_confidence=0.2, span_min_confidence=0.3, draft_candidates=6))
    own = Session._engine_options(SimpleNamespace(settings=Settings(), loaded=card))
    assert (own.drafts.draft, own.rank.min_confidence, own.drafts.draft_candidates) == ("ar", 0.2, 6)
    assert own.prompt.context_tokens == 0
    user = parse_settings({"draftCandidates": 1, "minConfidence": 0.5, "steps": 2})
    mine = Session._engine_options(SimpleNamespace(settings=user, loaded=card))
    assert (mine.drafts.draft, mine.rank.min_confidence, mine.drafts.draft_candidates) == ("ar", 0.5, 1)
    assert mine.drafts.steps == 2
    assert own.rank.span_min_confidence == mine.rank.span_min_confidence == 0.3  # the card's, for multi-line answers


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"steps": 0}, "steps"),
        ({"steps": "8"}, "steps"),
        ({"steps": True}, "steps"),
        ({"device": "tpu"}, "device"),
        ({"quantization": "int3"}, "quantization"),
        ({"precision": "fp16"}, "precision"),
        ({"languages": ["cobol"]}, "cobol"),
        ({"enabled": "yes"}, "enabled"),
        ({"minConfidence": 1.5}, "minConfidence"),
        ({"draftCandidates": 17}, "draftCandidates"),
        ({"draftCandidates": 2.5}, "draftCandidates"),
        ({"minConfidence": "high"}, "minConfidence"),
        ({"wat": 1}, "wat: unknown setting"),
        ({"requestTimeoutMs": 50}, "requestTimeoutMs"),
        ({"tlsVerify": "no"}, "tlsVerify"),
        ({"apiKey": 3}, "apiKey"),
        ([1, 2], "must be an object"),
    ],
)
def test_invalid_settings_are_named(raw, fragment):
    with pytest.raises(SettingsError, match=fragment):
        parse_settings(raw)


def test_a_servers_settings_and_its_key_kept_out_of_sight():
    s = parse_settings({"model": "https://gpu:8000", "apiKey": "sk-secret", "caFile": "~/ca.pem", "tlsVerify": False})
    assert s.api_key == "sk-secret" and s.ca_file == "~/ca.pem" and not s.tls_verify
    assert s.as_dict()["api_key"] == "(set)" and "sk-secret" not in repr(s)
    assert parse_settings({"apiKey": ""}).api_key is None  # empty: not set (the environment's key then)


def test_every_setting_that_reaches_a_servers_connection_reloads_the_model():
    """A changed key, CA file, timeout or served-model files must reach the connection: the model loads again."""
    from dataclasses import fields, replace

    from diffill.lsp.session import RELOAD_ON
    from diffill.lsp.settings import Settings, connection

    base = Settings(model="https://gpu:8000")
    changed = {
        "api_key": "k",
        "ca_file": "/ca.pem",
        "tls_verify": False,
        "request_timeout_ms": 99,
        "served_model_files": "/m",
    }
    reaching = [
        f.name
        for f in fields(Settings)
        if f.name in changed and connection(replace(base, **{f.name: changed[f.name]})) != connection(base)
    ]
    assert sorted(reaching) == sorted(changed) and set(reaching) <= set(RELOAD_ON)


def test_invalid_settings_keep_nothing_partial():
    base = parse_settings({"steps": 6})
    with pytest.raises(SettingsError):
        parse_settings({"steps": 3, "device": "tpu"}, base)
    assert base.steps == 6


def test_typed_ahead_cache():
    c = TypedAheadCache()
    text = "x = foo(\ny"
    c.remember("u", text, 8, "a, b)", 8)
    assert c.lookup("u", "x = foo(a\ny", 9) == (", b)", 9)
    assert c.lookup("u", "x = foo(a, \ny", 11) == ("b)", 11)
    assert c.lookup("u", "x = foo(z\ny", 9) is None  # typed something else
    assert c.lookup("u", "x = foo(a\nZ", 9) is None  # text after the cursor changed
    assert c.lookup("u", "x = foo(a, b)\ny", 13) is None  # typed it all: nothing left
    assert c.lookup("other", "x = foo(a\ny", 9) is None
    c.forget("u")
    assert c.lookup("u", "x = foo(a\ny", 9) is None


def test_typed_ahead_cache_with_replaced_tail():
    c = TypedAheadCache()
    c.remember("u", "print()\n", 6, '"hi")', 7)  # replaces the ")" after the cursor
    assert c.lookup("u", 'print(")\n', 7) == ('hi")', 8)


def test_scheduler_cancels_older_generation():
    s = Scheduler()
    a = s.start("doc")
    b = s.start("doc")
    assert a() and not b()  # the token is what the sampler calls between steps
    s.cancel("doc")
    assert b()
    c = s.start("doc")
    s.finish("doc", c)
    assert s.in_flight() == 0 and not c()
    s.shutdown()


def test_opening_a_document_warms_its_sources_on_the_model_thread(tmp_path, caplog):
    """didOpen queues the tokenizing of the files beside the document on the warm-up thread (never the model's: a
    completion must not queue behind it); a failure there is logged and costs nothing."""
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from diffill.lsp.session import Session

    threads, paths = [], []

    class Engine:
        def warm_sources(self, path):
            threads.append(threading.current_thread().name)
            paths.append(path)
            if path.endswith("bad.py"):
                raise RuntimeError("boom")

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffill-warm") as executor:
        session = SimpleNamespace(engine=Engine(), warm_executor=executor, warming=set())
        Session._warm_sources(session, (tmp_path / "a.py").as_uri())
        Session._warm_sources(session, (tmp_path / "bad.py").as_uri())
        Session._warm_sources(SimpleNamespace(engine=None, warm_executor=None), (tmp_path / "c.py").as_uri())
    assert paths == [str(tmp_path / "a.py"), str(tmp_path / "bad.py")]
    assert session.warming == set()  # each warm-up leaves the count for diffill/status, failed or not
    assert all(name.startswith("diffill-warm") for name in threads)
    assert "warming the n-gram sources" in caplog.text


def test_the_workspace_index_covers_existing_folders_and_reaches_the_engine(tmp_path):
    """Only folders that exist are indexed; an engine already serving gets the index and may read its roots."""
    import time
    from types import SimpleNamespace

    from diffill.lsp.session import Session

    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    session = Session(SimpleNamespace())
    session.start_workspace_index(["", str(tmp_path / "missing")])
    assert session.workspace_index is None
    session.engine = SimpleNamespace(workspace=None, read_roots=[])
    session.start_workspace_index([str(tmp_path), str(tmp_path / "missing")])
    index = session.workspace_index
    assert index is not None and index.roots == [tmp_path.resolve()]
    assert session.engine.workspace is index and session.engine.read_roots == [tmp_path.resolve()]
    deadline = time.monotonic() + 10
    while any(t.name == "diffill-index" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert index.file_count() == 1
    index.stop()
    session.scheduler.shutdown()


def test_closing_a_big_document_hands_its_memory_back(monkeypatch):
    from types import SimpleNamespace

    from lsprotocol import types

    from diffill.lsp import session as session_module
    from diffill.lsp.documents import BIG_DOCUMENT_BYTES
    from diffill.lsp.heap import release_freed_memory
    from diffill.lsp.session import Session

    release_freed_memory()  # harmless anywhere (a no-op without glibc)
    calls = []
    monkeypatch.setattr(session_module, "release_freed_memory", lambda: calls.append(1))
    s = Session(SimpleNamespace())
    for name, size in (("small", 100), ("big", BIG_DOCUMENT_BYTES)):
        uri = f"file:///tmp/mem/{name}.txt"
        s.open_document(types.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text="x" * size))
        s.close_document(uri)
        assert uri not in s.docs
    assert calls == [1]  # the big one only
    s.scheduler.shutdown()


def test_typed_ahead_cache_keeps_only_the_text_around_the_cursor():
    """Two copies of the whole text per answer, and a comparison of all of it at each keystroke, were the cost of a
    big document: the cache keeps MATCHED_CHARS each way and the lengths."""
    from diffill.lsp.cache import MATCHED_CHARS

    c = TypedAheadCache()
    big = "y = 1\n" * 200_000
    text = big + "x = foo(\n" + big
    at = len(big) + 8
    c.remember("u", text, at, "a, b)", at)
    kept = c._by_uri["u"]
    assert len(kept.before) == len(kept.after) == MATCHED_CHARS
    typed = text[:at] + "a" + text[at:]
    assert c.lookup("u", typed, at + 1) == (", b)", at + 1)
    assert c.lookup("u", "#" + typed, at + 2) is None  # an edit before the cursor: the cursor is elsewhere
    assert c.lookup("u", typed[: at + 1] + typed[at + 2 :], at + 1) is None  # the text after it changed


def test_a_request_superseded_while_it_queues_for_the_model_thread_never_starts():
    """One model thread serves every document: a request that a newer one for its document replaced while it
    queued (behind a slow one elsewhere) is dropped before it starts, instead of costing its prompt and its model
    calls before its first denoising step notices."""
    import asyncio
    from types import SimpleNamespace

    from lsprotocol import types

    from diffill.lsp.session import Session

    release, calls = threading.Event(), []

    class Engine:
        def answer(self, doc, offset, **_):
            calls.append(doc.text)
            if doc.text.startswith("slow"):
                release.wait(10)

        def warm_sources(self, path):
            pass

    session = Session(SimpleNamespace())
    session.engine = Engine()
    uris = {name: f"file:///tmp/queue/{name}.py" for name in ("slow", "other")}
    for name, uri in uris.items():
        session.open_document(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=f"{name} = 1\n"))

    async def run():
        slow = asyncio.ensure_future(session.complete(uris["slow"], 0, 4, "utf-16"))
        await asyncio.sleep(0.1)  # on the model thread
        superseded = asyncio.ensure_future(session.complete(uris["other"], 0, 5, "utf-16"))
        await asyncio.sleep(0.1)
        newer = asyncio.ensure_future(session.complete(uris["other"], 0, 5, "utf-16"))
        await asyncio.sleep(0.1)
        release.set()
        return await asyncio.gather(slow, superseded, newer)

    assert asyncio.run(run()) == [None, None, None]
    assert calls == ["slow = 1\n", "other = 1\n"]  # the superseded one never ran
    assert session.stats["cancelled"] == 1
    session.scheduler.shutdown()
    session.warm_executor.shutdown()


def test_the_heap_keeps_few_arenas_and_fixed_thresholds(monkeypatch):
    """glibc is asked for at most MALLOC_ARENAS arenas and fixed mmap and trim thresholds; without a glibc the
    tuning and the trim do nothing."""
    from types import SimpleNamespace

    from diffill.lsp import heap

    calls = []
    libc = SimpleNamespace(mallopt=lambda p, v: calls.append((p, v)))
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    heap.tune_heap()
    assert calls == [
        (heap.M_ARENA_MAX, heap.MALLOC_ARENAS),
        (heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD),
        (heap.M_TRIM_THRESHOLD, heap.BUSY_TRIM_THRESHOLD),
    ]
    monkeypatch.setattr(heap, "_libc", lambda: None)
    heap.tune_heap()
    heap.release_freed_memory()
    heap.release_idle_memory()
    assert len(calls) == 3


_FREED_IN_A_THREAD = """
import ctypes, json, threading
from pathlib import Path
from diffill.lsp import heap

def anonymous_kb():
    return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("RssAnon"))

heap.tune_heap()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
figures = {}

def work():  # a model thread's burst: 40 MiB of blocks written, then freed into its arena's top
    blocks = [0] * 400
    for i in range(len(blocks)):
        blocks[i] = libc.malloc(100 << 10)
        ctypes.memset(blocks[i], 1, 100 << 10)
    for block in blocks:
        libc.free(block)
    figures["freed"] = anonymous_kb()
    heap.release_freed_memory()
    figures["trimmed"] = anonymous_kb()
    heap.release_idle_memory()
    figures["released"] = anonymous_kb()

thread = threading.Thread(target=work)
thread.start()
thread.join()
print(json.dumps(figures))
"""


def test_the_heap_hands_back_the_top_of_the_calling_threads_arena_when_idle():
    """What a thread other than the main one frees lies in its own arena's top, which `malloc_trim`
    (release_freed_memory, the trim while typing) leaves where the thresholds are fixed: release_idle_memory, called
    on that thread, hands it back too."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-c", _FREED_IN_A_THREAD], capture_output=True, text=True, timeout=60)
    figures = json.loads(done.stdout)
    assert figures["freed"] - figures["trimmed"] < 10 << 10, figures
    assert figures["trimmed"] - figures["released"] >= 30 << 10, figures


def test_the_heap_figures_count_what_glibc_holds(monkeypatch):
    """heap_figures reads glibc's own accounting: a block malloc'd shows in it until it is freed (a block this big
    is mmapped apart, so the figure is exact); without a glibc the figures are empty."""
    import ctypes

    from diffill.lsp import heap

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    before = heap.heap_figures()
    block = libc.malloc(64 << 20)
    held = heap.heap_figures()
    libc.free(block)
    after = heap.heap_figures()
    assert set(before) == {"in_use", "held_free", "mapped"}
    assert held["mapped"] - before["mapped"] >= 64 << 10
    assert after["mapped"] == before["mapped"]
    monkeypatch.setattr(heap, "_libc", lambda: None)
    assert heap.heap_figures() == {}


def test_the_scheduler_says_how_long_the_completions_have_been_quiet():
    import time

    from diffill.lsp.scheduler import Scheduler

    s = Scheduler()
    try:
        told = []
        s.on_busy.append(told.append)
        token = s.start("file:///a.py")
        s.start("file:///b.py")
        assert s.quiet_for() == 0.0 and told == [True]  # busy from the first generation on
        s.finish("file:///a.py", token)
        assert told == [True]
        s.cancel("file:///b.py")
        assert told == [True, False]  # idle once the last one is done
        time.sleep(0.05)
        assert 0.04 <= s.quiet_for() < 5
    finally:
        s.shutdown()


def test_the_freed_heap_is_handed_back_once_per_idle_spell_on_the_model_thread():
    """IdleTrim: after the last generation ends and the model stays idle for its time, the trim runs once, on the
    model thread; not while a generation runs, and again only after the next one ends."""
    import time

    from diffill.lsp.heap import IdleTrim

    s = Scheduler()
    trims: list[str] = []
    trimmed = threading.Event()

    def trim() -> None:
        trims.append(threading.current_thread().name)
        trimmed.set()

    try:
        s.on_busy.append(IdleTrim(s.quiet_for, s.executor.submit, idle_s=0.2, trim=trim).told)
        token = s.start("file:///a.py")
        time.sleep(0.4)
        assert trims == []  # busy all along
        s.finish("file:///a.py", token)
        assert trimmed.wait(5)
        assert trims[0].startswith("diffill-model")
        time.sleep(0.5)
        assert len(trims) == 1  # once per idle spell
        trimmed.clear()
        s.finish("file:///b.py", s.start("file:///b.py"))
        again = time.monotonic()
        s.finish("file:///b.py", s.start("file:///b.py"))  # a second end restarts the spell's clock
        assert trimmed.wait(5) and time.monotonic() - again >= 0.2
        time.sleep(0.3)
        assert len(trims) == 2
    finally:
        s.shutdown()


@pytest.mark.asyncio
async def test_a_request_while_the_model_loads_gets_the_rest_of_the_line_the_document_repeats():
    """Before the model is there, the code around answers where it is sure (infill.sources.lookup), at once."""
    from types import SimpleNamespace

    from lsprotocol import types

    from diffill.lsp.session import Session

    line = "    parser.add_argument('--verbose', action='store_true', help='say more')"
    text = "\n".join(["def a(parser):", line, "", "def b(parser):", line, "", "def c(parser):", "    parser.add_arg"])
    s = Session(SimpleNamespace())
    try:
        uri = "file:///tmp/lookup-test/cli.py"
        s.open_document(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        got = await s.complete(uri, 7, len("    parser.add_arg"), "utf-16")
        assert s.engine is None and s.loader.state == "not loaded"
        assert got is not None and got[1].source == "lookup"
        assert got[1].text == line[len("    parser.add_arg") :] and got[1].start == got[1].end == len(text)
        assert s.stats["before_model"] == 1
    finally:
        s.scheduler.shutdown()


def test_no_handler_runs_in_pygls_pool_which_reads_stdin():
    """pygls' pool has one thread (lsp/server.py) and reads stdin with it: a handler run there would stall the reads
    behind it. Every handler is a coroutine or runs on the event loop."""
    from pygls.feature_manager import is_thread_function

    from diffill.lsp.server import server

    fm = server.protocol.fm
    handlers = {**fm.builtin_features, **fm.features, **fm.commands}
    assert "textDocument/inlineCompletion" in handlers
    assert [name for name, handler in handlers.items() if is_thread_function(handler)] == []
    assert server.thread_pool._max_workers == 1
