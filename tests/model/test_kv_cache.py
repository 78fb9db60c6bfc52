"""The growing cache's storage (model/cache.py): the same keys and values as concatenating, written in place while
its storage has room, else in fresh storage of a few sizes (`joined`, BUCKET-rounded, so the allocator reuses the
blocks it frees); a view read before an append is never written, and a canvas pass writes its keys into the room
after the cache's own positions only where no view of those slots was given out."""

import torch

from diffill.model.cache import BUCKET, KVCache, joined


def test_joined_is_concatenation_in_rounded_storage():
    for n, t in ((0, 1), (5, 3), (BUCKET - 1, 1), (BUCKET, 1), (130, 17)):
        a, b = torch.randn(2, 3, n, 4), torch.randn(2, 3, t, 4)
        out = joined(a, b)
        assert torch.equal(out, torch.cat([a, b], dim=2))
        rounded = -(-(n + t) // BUCKET) * BUCKET
        assert out.untyped_storage().nbytes() == 2 * 3 * rounded * 4 * out.element_size()


def test_a_cache_grown_a_token_at_a_time_uses_few_storages_and_never_writes_a_view_read():
    cache = KVCache(num_layers=1)
    sizes, storages, read = set(), set(), []
    for i in range(200):
        k = torch.full((1, 2, 1, 4), float(i))
        cache.append(0, k, k.clone())
        keys, _ = cache.read(0)
        sizes.add(keys.untyped_storage().nbytes() if i else 0)  # (the first append keeps the tensor it is given)
        storages.add(keys.untyped_storage().data_ptr() if i else 0)
        read.append(keys)  # (kept: no storage is freed and its address taken again)
    assert len(sizes - {0}) == -(-200 // BUCKET)
    assert len(storages - {0}) == -(-200 // BUCKET)  # written in place until a storage is full
    for i, keys in enumerate(read):  # each view still holds what was cached when it was read
        assert torch.equal(keys[0, 0, :, 0], torch.arange(i + 1, dtype=keys.dtype))
    cache.truncate(10)
    assert cache.length == 10 and torch.equal(cache.read(0)[0][0, 0, :, 0], torch.arange(10.0))


def _grown(room: int, n: int) -> KVCache:
    """A one-layer cache grown to `n` positions (position p's keys all p, its values all -p)."""
    cache = KVCache(num_layers=1, room=room)
    for i in range(n):
        k = torch.full((1, 2, 1, 4), float(i))
        cache.append(0, k, -k)
    return cache


def test_a_canvas_is_written_into_the_room_after_the_cache_with_what_joining_gives():
    canvas_k, canvas_v = torch.randn(1, 2, 8, 4), torch.randn(1, 2, 8, 4)
    for window in (None, 5):
        cache = _grown(8, BUCKET - 4)  # 4 slots left by the rounding alone: the room holds the canvas
        past_k, past_v = cache.read(0, None if window is None else window - 1)
        got = cache.attend(0, canvas_k, canvas_v, causal=False, window=window)
        assert torch.equal(got[0], torch.cat([past_k, canvas_k], dim=2)) and got[2] is None
        assert torch.equal(got[1], torch.cat([past_v, canvas_v], dim=2))
        assert got[0].untyped_storage().data_ptr() == cache.keys[0].untyped_storage().data_ptr()  # no copy
        assert cache.length == BUCKET - 4 and torch.equal(cache.read(0)[0][0, 0, :, 0], torch.arange(BUCKET - 4.0))


def test_a_cache_cut_back_or_handed_on_joins_into_fresh_storage():
    canvas = torch.randn(1, 2, 4, 4)
    cache = _grown(8, 20)
    rows = cache.expanded(1)  # handed on: the rows read the cache's storage
    cache.truncate(12)
    kept = cache.read(0)[0]
    got, _, _ = cache.attend(0, canvas, canvas, causal=False, window=None)
    assert got.untyped_storage().data_ptr() != kept.untyped_storage().data_ptr()  # slots 12.. are the rows'
    assert torch.equal(rows.keys[0][0, 0, :, 0], torch.arange(20.0))
    got, _, _ = rows.attend(0, canvas, canvas, causal=False, window=None)  # the rows never write the cache's
    assert torch.equal(cache.expanded(1).keys[0][0, 0, :, 0], torch.arange(12.0))
    assert torch.equal(rows.keys[0][0, 0, :, 0], torch.arange(20.0))
    too_long = torch.randn(1, 2, 5, 4)  # more than the storage holds: joined
    grown = _grown(0, BUCKET - 4)
    got, _, _ = grown.attend(0, too_long, too_long, causal=False, window=None)
    assert got.untyped_storage().data_ptr() != grown.keys[0].untyped_storage().data_ptr()
