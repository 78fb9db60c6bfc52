"""Model loading (diffill.lsp.loading) with a faked loader: what the user sees when a model cannot load."""

import sys
from types import SimpleNamespace

import pytest
from lsprotocol import types

from diffill.lsp.loading import ModelLoader, _describe
from diffill.lsp.settings import Settings, parse_settings


class OutOfMemoryError(RuntimeError):
    """Named like torch's: the loader recognises it by name, without importing torch."""


@pytest.mark.parametrize(
    "error, expected",
    [
        (MemoryError(), "out of memory (MemoryError)"),
        (OutOfMemoryError("CUDA out of memory"), "out of memory (OutOfMemoryError: CUDA out of memory)"),
        (ValueError("no config.json"), "no config.json"),
        (KeyError(), "KeyError"),
    ],
)
def test_describe_names_the_reason(error, expected):
    assert _describe(error) == expected


class Client:
    client_capabilities = types.ClientCapabilities()  # no progress support: none is created

    def __init__(self):
        self.shown: list[tuple[types.MessageType, str]] = []

    def show(self, message, kind=types.MessageType.Error):
        self.shown.append((kind, message))


class Host:
    def __init__(self, settings: Settings, engine=None):
        self.settings, self.engine, self.installed = settings, engine, []
        self.failover = None

    def install(self, loaded):
        self.installed.append(loaded.source)
        self.engine = object()


def _fake_load(monkeypatch, failing: set[str]):
    from diffill.model import runtime

    def load(source, device, *args, **kwargs):
        if source in failing:
            raise MemoryError()
        net = SimpleNamespace(dtype="torch.float32")
        return SimpleNamespace(source=source or "embedded", device=device, model=SimpleNamespace(net=net))

    monkeypatch.setattr(runtime, "load", load)


def _load(settings: Settings, engine=None) -> tuple[ModelLoader, Client, Host]:
    client, host = Client(), Host(settings, engine)
    loader = ModelLoader(client, host)
    loader.load()
    return loader, client, host


def test_a_loaded_model_is_installed_and_described(monkeypatch):
    _fake_load(monkeypatch, failing=set())
    loader, client, host = _load(parse_settings({"quantization": "int8", "device": "cpu"}))
    assert loader.state == "ready (embedded on cpu, float32, int8 weights)" and loader.error is None
    assert host.installed == ["embedded"] and client.shown == []


def test_a_model_that_fails_falls_back_to_the_embedded_one(monkeypatch):
    _fake_load(monkeypatch, failing={"/models/big"})
    loader, client, host = _load(parse_settings({"model": "/models/big"}))
    assert loader.state == "ready (embedded fallback)" and host.installed == ["embedded"]
    assert loader.error.startswith("out of memory")
    kinds = [kind for kind, _ in client.shown]
    assert kinds == [types.MessageType.Error, types.MessageType.Warning]
    assert "/models/big" in client.shown[0][1]


def test_a_model_that_fails_keeps_the_one_serving(monkeypatch):
    _fake_load(monkeypatch, failing={"/models/big"})
    loader, _, host = _load(parse_settings({"model": "/models/big"}), engine=object())
    assert loader.state == "ready (previous model kept)" and host.installed == []


def test_the_embedded_model_failing_leaves_the_server_up_without_a_model(monkeypatch):
    _fake_load(monkeypatch, failing={""})
    loader, client, host = _load(Settings())
    assert loader.state == "failed" and host.engine is None and len(client.shown) == 1


def test_the_collector_paused_at_launch_runs_again_once_the_load_settles(monkeypatch):
    import gc

    from diffill.lsp import gc_pause

    _fake_load(monkeypatch, failing={"/models/big"})
    gc_pause.pause()
    try:
        assert not gc.isenabled()
        _load(parse_settings({"model": "/models/big"}))  # failed, then the fallback: settled all the same
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_collector_turned_off_elsewhere_stays_off(monkeypatch):
    import gc

    from diffill.lsp import gc_pause

    _fake_load(monkeypatch, failing=set())
    gc.disable()
    try:
        gc_pause.pause()  # already off: not paused by diffill, so not resumed by it
        _load(Settings())
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


class ProgressClient(Client):
    """A client that shows progress: what it was sent, in order."""

    client_capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))

    def __init__(self):
        super().__init__()
        self.sent: list[str] = []
        self.work_done_progress = self

    def create(self, token, callback):
        self.sent.append("create")
        callback(None)  # the editor made the token

    def begin(self, token, value):
        self.sent.append(f"begin: {value.title}")

    def report(self, token, value):
        self.sent.append("report")

    def end(self, token, value):
        self.sent.append(f"end: {value.message}")


def test_a_runtime_that_cannot_import_is_a_failed_load_the_editor_was_told_of(monkeypatch):
    """The editor's progress begins before torch is imported (the import is most of the wait), and a torch that is
    missing or broken ends it as a load that failed, with the reason shown: not a loader thread that dies silently
    while requests wait for a model that never comes."""
    import diffill.model

    monkeypatch.delattr(diffill.model, "runtime", raising=False)
    monkeypatch.setitem(sys.modules, "diffill.model.runtime", None)  # `from diffill.model import runtime` fails
    client, host = ProgressClient(), Host(Settings())
    loader = ModelLoader(client, host)
    loader.load()
    assert loader.state == "failed" and loader.settled.is_set() and host.engine is None
    assert client.sent == ["create", "begin: Loading embedded model", "end: failed"]
    assert "diffill.model.runtime" in loader.error and "diffill.model.runtime" in client.shown[0][1]


def test_an_editor_that_never_makes_the_token_gets_no_progress_and_the_load_does_not_wait(monkeypatch):
    from diffill.lsp import loading

    _fake_load(monkeypatch, failing=set())
    monkeypatch.setattr(loading, "PROGRESS_TIMEOUT_S", 0.01)
    client = ProgressClient()
    client.create = lambda token, callback: client.sent.append("create")  # no answer ever comes
    host = Host(Settings())
    loader = ModelLoader(client, host)
    loader.load()
    assert loader.state.startswith("ready") and loader.settled.is_set()
    assert client.sent == ["create"]  # neither a begin nor an end for a token the editor never made


def test_a_server_not_reachable_at_load_is_waited_for_and_loaded_once_it_answers(monkeypatch):
    import time

    from vllm_stub import StubServer

    from diffill.model import runtime

    stub = StubServer()
    try:
        reachable = []

        def load(source, device, *args, **kwargs):
            if source == stub.url and not reachable:
                raise ConnectionError(f"cannot reach {stub.url}")
            net = SimpleNamespace(dtype="torch.float32")
            return SimpleNamespace(source=source or "embedded", device=device, model=SimpleNamespace(net=net))

        monkeypatch.setattr(runtime, "load", load)
        loader, client, host = _load(parse_settings({"model": stub.url}))
        assert loader.state == "ready (embedded fallback)" and host.installed == ["embedded"]
        assert stub.url in client.shown[0][1]
        reachable.append(True)  # (the stand-in answered its model list all along: the probe finds it)
        deadline = time.monotonic() + 10
        while host.installed[-1] != stub.url and time.monotonic() < deadline:
            time.sleep(0.05)
        assert host.installed == ["embedded", stub.url]
    finally:
        stub.close()
