"""Unit tests of the server's small parts: settings validation, typed-ahead cache, cancel tokens."""

import threading

import pytest

from diffill.lsp.cache import TypedAheadCache
from diffill.lsp.scheduler import Scheduler
from diffill.lsp.settings import Settings, SettingsError, parse_settings


def test_settings_defaults_and_camel_case():
    s = parse_settings({"steps": 4, "canvasLength": 16})
    assert s.steps == 4 and s.canvas_length == 16
    assert parse_settings(None) == Settings()
    assert parse_settings({"diffill": {"languages": ["python", "go"]}}).languages == ("python", "go")
    assert parse_settings({"minConfidence": 0.3}).min_confidence == 0.3
    assert parse_settings({"minConfidence": 1}).min_confidence == 1.0
    assert Settings().min_confidence == -1.0  # the model card's own
    assert parse_settings({"draftCandidates": 3}).draft_candidates == 3
    assert Settings().draft_candidates == 0  # the model card's own


def test_user_settings_override_the_models_card():
    """The engine runs with the card's draft, cut-off and beam width unless the user set their own."""
    from types import SimpleNamespace

    from diffill.lsp.server import DiffillServer

    card = SimpleNamespace(
        draft="ar", min_confidence=0.2, span_min_confidence=0.3, draft_candidates=6, trained_with_context=False
    )
    own = DiffillServer._engine_options(SimpleNamespace(settings=Settings(), loaded=card))
    assert (own.draft, own.min_confidence, own.draft_candidates, own.context_tokens) == ("ar", 0.2, 6, 0)
    user = parse_settings({"draftCandidates": 1, "minConfidence": 0.5, "steps": 2})
    mine = DiffillServer._engine_options(SimpleNamespace(settings=user, loaded=card))
    assert (mine.draft, mine.min_confidence, mine.draft_candidates, mine.steps) == ("ar", 0.5, 1, 2)
    assert own.span_min_confidence == mine.span_min_confidence == 0.3  # the card's, for multi-line answers


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
        ([1, 2], "must be an object"),
    ],
)
def test_invalid_settings_are_named(raw, fragment):
    with pytest.raises(SettingsError, match=fragment):
        parse_settings(raw)


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
    assert a.cancelled and not b.cancelled
    s.cancel("doc")
    assert b.cancelled
    c = s.start("doc")
    s.finish("doc", c)
    assert s.in_flight() == 0 and not c.cancelled
    s.shutdown()


def test_opening_a_document_warms_its_sources_on_the_model_thread(tmp_path, caplog):
    """didOpen queues the tokenizing of the files beside the document on the warm-up thread (never the model's: a
    completion must not queue behind it); a failure there is logged and costs nothing."""
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from diffill.lsp.server import DiffillServer

    threads, paths = [], []

    class Engine:
        def warm_sources(self, path):
            threads.append(threading.current_thread().name)
            paths.append(path)
            if path.endswith("bad.py"):
                raise RuntimeError("boom")

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffill-warm") as executor:
        server = SimpleNamespace(engine=Engine(), warm_executor=executor, warming=set())
        DiffillServer._warm_sources(server, (tmp_path / "a.py").as_uri())
        DiffillServer._warm_sources(server, (tmp_path / "bad.py").as_uri())
        DiffillServer._warm_sources(SimpleNamespace(engine=None, warm_executor=None), (tmp_path / "c.py").as_uri())
    assert paths == [str(tmp_path / "a.py"), str(tmp_path / "bad.py")]
    assert server.warming == set()  # each warm-up leaves the count for diffill/status, failed or not
    assert all(name.startswith("diffill-warm") for name in threads)
    assert "warming the n-gram sources" in caplog.text
