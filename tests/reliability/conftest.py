import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="module")
def server():
    """A real `diffill serve` (2 denoising steps, the embedded model loaded), one per test module; it must still be
    up at the end, and end cleanly on `shutdown`."""
    from diffill.bench.wire import RawClient

    client = RawClient()
    client.initialize({"steps": 2})
    assert client.wait_ready()["ready"]
    yield client
    assert client.alive(), client.stderr()
    assert client.shutdown() == 0
    client.close()
