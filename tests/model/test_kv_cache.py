"""The growing cache's storage (model/cache.py `joined`): the same keys and values as concatenating, in storage of
a few sizes (BUCKET-rounded, so the allocator reuses the blocks it frees), and fresh storage each time (a view read
before an append is never written)."""

import torch

from diffill.model.cache import BUCKET, KVCache, joined


def test_joined_is_concatenation_in_rounded_storage():
    for n, t in ((0, 1), (5, 3), (BUCKET - 1, 1), (BUCKET, 1), (130, 17)):
        a, b = torch.randn(2, 3, n, 4), torch.randn(2, 3, t, 4)
        out = joined(a, b)
        assert torch.equal(out, torch.cat([a, b], dim=2))
        rounded = -(-(n + t) // BUCKET) * BUCKET
        assert out.untyped_storage().nbytes() == 2 * 3 * rounded * 4 * out.element_size()


def test_a_cache_grown_a_token_at_a_time_uses_few_storage_sizes_and_never_writes_a_view_read():
    cache = KVCache(num_layers=1)
    sizes, read = set(), []
    for i in range(200):
        k = torch.full((1, 2, 1, 4), float(i))
        cache.append(0, k, k.clone())
        keys, _ = cache.read(0)
        sizes.add(keys.untyped_storage().nbytes() if i else 0)  # (the first append keeps the tensor it is given)
        read.append(keys)
    assert len(sizes - {0}) == -(-200 // BUCKET)
    for i, keys in enumerate(read):  # each view still holds what was cached when it was read
        assert torch.equal(keys[0, 0, :, 0], torch.arange(i + 1, dtype=keys.dtype))
    cache.truncate(10)
    assert cache.length == 10 and torch.equal(cache.read(0)[0][0, 0, :, 0], torch.arange(10.0))
