"""Model loading (diffill.lsp.loading) with a faked loader: what the user sees when a model cannot load."""

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

    from diffill.lsp import collector

    _fake_load(monkeypatch, failing={"/models/big"})
    collector.pause()
    try:
        assert not gc.isenabled()
        _load(parse_settings({"model": "/models/big"}))  # failed, then the fallback: settled all the same
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_collector_turned_off_elsewhere_stays_off(monkeypatch):
    import gc

    from diffill.lsp import collector

    _fake_load(monkeypatch, failing=set())
    gc.disable()
    try:
        collector.pause()  # already off: not paused by diffill, so not resumed by it
        _load(Settings())
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
