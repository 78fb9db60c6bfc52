"""Fixtures of the editor end-to-end tests (tests/editors): a direct client of `diffill serve` and the prompt.

Each test skips with its reason when its editor is not installed (`bash editors/install.sh`) or when there is
no model to serve (the embedded weights, or DIFFILL_E2E_MODEL=folder).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from editor_support import PROMPTS, DirectClient, end_position, require_model  # noqa: E402


@pytest.fixture(scope="session")
def direct():
    """`diffill serve` driven directly over stdio, model loaded."""
    require_model()
    client = DirectClient()
    try:
        client.wait_ready()
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def prompt(direct) -> str:
    """The first of PROMPTS (Python) for which the server proposes something non-empty at the end."""
    tried = []
    for p in PROMPTS:
        doc = p + "\n"
        line, col = end_position(p)
        text, _ = direct.complete(doc, line, col)
        tried.append((p, text))
        if text.strip():
            return p
    status = direct.request("diffill/status", {})
    pytest.fail(f"the model proposed nothing for any prompt: {tried}; server status: {status}")
