"""Per-layer key/value cache written by the causal encoder and read (never written) by the canvas decoder.

Every layer keeps all its positions, sliding layers included, so the cache can be cut back to any length
(a prompt that shrinks when the user deletes text) and reused; readers ask for the tail they may see.

`KVCache` grows as it is written (the CPU path): in place while its storage has room, else into storage of a few
sizes (`joined`); `StaticKVCache` (model/static_cache.py) has a fixed capacity written in place, for CUDA graphs.
Both answer `attend`: the keys, values and mask one attention layer uses.
"""

from __future__ import annotations

import torch


def causal_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int | None) -> torch.Tensor:
    """[q, k] True where a query at q_pos may see the key at k_pos: not after it, and within the sliding window."""
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window is not None:
        allowed = allowed & (k_pos[None, :] > q_pos[:, None] - window)
    return allowed


# Positions a grown cache's storage is rounded up to: the allocator reuses the blocks of the sizes it frees, where
# storage a keystroke longer each time left freed blocks too small for the next (`diffill bench soak`).
BUCKET = 64


def joined(a: torch.Tensor, b: torch.Tensor, room: int = 0) -> torch.Tensor:
    """`a` then `b` along positions (dim 2), in fresh storage for `room` more positions, rounded up to BUCKET
    positions (a view of its head): a cache grown a keystroke at a time asks the allocator for the sizes it has just
    freed, not one a little larger each time."""
    n = a.shape[2] + b.shape[2]
    out = a.new_empty(*a.shape[:2], -(-(n + room) // BUCKET) * BUCKET, a.shape[3])[:, :, :n]
    out[:, :, : a.shape[2]] = a
    out[:, :, a.shape[2] :] = b
    return out


def hold_prompt(net, prompt: torch.Tensor, cache: KVCache, length: int) -> None:
    """Leaves `cache` holding exactly the first `length` tokens of `prompt` [1, T]: cut back where it holds more
    (a prompt that shrank, or a token fed again for its hidden state), the missing ones encoded in one pass.
    Every model call after a prompt establishes its cache this way: the prompt but its last token (which the
    call feeds again with what it adds), or the whole prompt (a canvas then follows it)."""
    if cache.length > length:
        cache.truncate(length)
    if cache.length < length:
        net.encode(prompt[:, cache.length : length], cache)


class KVCache:
    def __init__(self, num_layers: int, room: int = 0):
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        # Positions left free after the cached ones when the cache grows (a canvas's length): appends and canvas
        # passes write their keys and values there instead of copying the cache beside them (`_extended`).
        self.room = room
        self._grown: list[tuple[torch.Tensor, torch.Tensor, int] | None] = [None] * num_layers

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        """A pass over `positions` starts (the static cache builds its masks here; this one needs nothing)."""

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        """(keys, values, mask or None) for layer `layer`'s attention over the new k/v [B, kv, T, D]: the cached
        positions it may see, then the new ones. A causal pass appends the new ones. Sliding layers (`window`)
        see the last window-1 cached positions, as transformers' sliding cache keeps."""
        t = k.shape[2]
        keep_last = window - 1 if window is not None else None
        past_k, past_v = self.read(layer, keep_last)
        n_past = past_k.shape[2] if past_k is not None else 0
        if causal:
            self.append(layer, k, v)
            if n_past:  # what it sees is the cache's tail now
                k, v = self.keys[layer][:, :, -(n_past + t) :], self.values[layer][:, :, -(n_past + t) :]
        elif n_past and (beside := self._extended(layer, k, v)) is not None:
            k, v = beside[0][:, :, -(n_past + t) :], beside[1][:, :, -(n_past + t) :]
        elif n_past:
            k, v = joined(past_k, k), joined(past_v, v)
        mask = None
        if causal and t > 1:  # one new token sees every key kept (sliding layers keep window-1): no mask
            q_pos = torch.arange(n_past, n_past + t, device=k.device)
            mask = causal_mask(q_pos, torch.arange(n_past + t, device=k.device), window)
        return k, v, mask

    @property
    def length(self) -> int:
        """Number of encoded positions (the same for every layer once a forward has finished)."""
        k = self.keys[0]
        return 0 if k is None else k.shape[2]

    def read(self, layer: int, keep_last: int | None = None):
        k, v = self.keys[layer], self.values[layer]
        if k is None:
            return None, None
        if keep_last is not None:
            if keep_last <= 0:
                return None, None
            k, v = k[:, :, -keep_last:], v[:, :, -keep_last:]
        return k, v

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
            return
        extended = self._extended(layer, k, v, self.room)  # (leaving a canvas room after them)
        if extended is None:
            extended = joined(self.keys[layer], k, self.room), joined(self.values[layer], v, self.room)
        keys, values = self.keys[layer], self.values[layer] = extended
        self._grown[layer] = (keys, values, keys.stride(1) // keys.stride(2))

    def _extended(
        self, layer: int, k: torch.Tensor, v: torch.Tensor, spare: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The cached keys and values then `k`/`v` [B, kv, T, D], written into the free slots after the cached
        positions, no copy: only in storage this cache grew itself (`append`) and has not cut back or handed on
        since, where they fit with `spare` slots after them (no view of those slots outlives the pass it was made
        for); None elsewhere (the caller joins). An append counts what it wrote there; a canvas pass's keys are not
        kept."""
        grown = self._grown[layer]
        keys, values = self.keys[layer], self.values[layer]
        if grown is None or grown[0] is not keys or grown[1] is not values or k.shape[0] != keys.shape[0]:
            return None
        n, t = keys.shape[2], k.shape[2]
        if n + t + spare > grown[2]:
            return None
        out = []
        for cached, new in ((keys, k), (values, v)):
            size = (*cached.shape[:2], n + t, cached.shape[3])
            whole = cached.as_strided(size, cached.stride(), cached.storage_offset())
            whole[:, :, n:] = new
            out.append(whole)
        return out[0], out[1]

    def expanded(self, n: int) -> KVCache:
        """The cached positions repeated in `n` batch rows (views, no copy): a growing cache the rows extend
        (beams, continuations scored side by side)."""
        rows = KVCache(len(self.keys))
        rows.keys = [x.expand(n, *x.shape[1:]) if x is not None else None for x in self.keys]
        rows.values = [x.expand(n, *x.shape[1:]) if x is not None else None for x in self.values]
        return rows

    def adopt(self, rows: KVCache, length: int) -> None:
        """The first `length` positions of row 0 of `rows` (an `expanded` copy grown past this cache) as this
        cache's own."""
        for layer, (k, v) in enumerate(zip(rows.keys, rows.values, strict=True)):
            self.keys[layer], self.values[layer] = k[:1, :, :length].clone(), v[:1, :, :length].clone()

    def extend(self, kept: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Appends positions' keys and values, one (k, v) [1, kv, T, D] pair per layer (TreeRows.commit)."""
        for layer, (k, v) in enumerate(kept):
            self.append(layer, k, v)

    def truncate(self, length: int) -> None:
        """Forget every position at or after `length`."""
        for i, k in enumerate(self.keys):
            if k is not None and k.shape[2] > length:
                self.keys[i] = k[:, :, :length]
                self.values[i] = self.values[i][:, :, :length]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values if t is not None)


class CacheHead:
    """The first `length` positions of a cache (growing or static), read-only: what a canvas drafted beside a
    causal pass sees of it (DiffusionGemma.encode_beside), the causal rows' last position and after left out."""

    def __init__(self, cache, length: int):
        self.cache = cache
        self.length = length

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        """Nothing to build: the canvas sees all it reads."""

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        """As KVCache.attend for a canvas: the last window-1 positions before `length` (all on full layers)
        then the canvas's own, no mask."""
        if causal:
            raise ValueError("a cache's head is read by a canvas, not written")
        first = 0 if window is None else max(0, self.length - (window - 1))
        past_k = self.cache.keys[layer][:, :, first : self.length]
        past_v = self.cache.values[layer][:, :, first : self.length]
        return joined(past_k, k), joined(past_v, v), None


class TreeRows:
    """A cache's view for one causal pass over a trunk (what the cache lacks of a prompt, maybe a draft after it)
    and branches (continuations to score), all in one row: each branch sees the cache, the trunk up to `fork`
    (the prompt's end) and its own tokens before it, as if it alone followed the prompt (a tree attention mask;
    the branches share positions with what follows the fork). The cache keeps the trunk's keys and values only
    (`commit`): scoring continuations carries the prefill in its pass, or rides in a draft's."""

    def __init__(self, cache, trunk: int, branches: list[int], device: torch.device, fork: int | None = None) -> None:
        self.cache, self.trunk = cache, trunk
        self.fork = trunk if fork is None else fork
        start = cache.length
        self._starts = [trunk + sum(branches[:b]) for b in range(len(branches))]  # each branch's first index
        positions = list(range(start, start + trunk))
        positions += [start + self.fork + j for n in branches for j in range(n)]
        self.positions = torch.tensor(positions, device=device)[None]
        # -1: the trunk to the fork (all see it), -2: the trunk after it (a draft), b: branch b
        groups = [-1] * self.fork + [-2] * (trunk - self.fork) + [b for b, n in enumerate(branches) for _ in range(n)]
        group = torch.tensor(groups, device=device)
        index = torch.arange(group.shape[0], device=device)
        before = index[None, :] <= index[:, None]
        self._tree = before & ((group[None, :] == -1) | (group[None, :] == group[:, None]))
        self.branches = branches  # each branch's length
        self.kept: list[tuple[torch.Tensor, torch.Tensor]] = []
        # each layer's keys/values this pass read (the cache's, then the row's): a canvas beside the pass reads
        # the cache and the trunk from them (CacheHead)
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    def judging(self, branch: int) -> list[int]:
        """The row's indices whose states judge branch `branch`'s tokens, then what follows its last: the fork's
        last token, then each of its own."""
        start = self._starts[branch]
        return [self.fork - 1, *range(start, start + self.branches[branch])]

    def logps(self, net, hidden: torch.Tensor) -> list[torch.Tensor]:
        """Each branch's log-probability rows under `net`'s head from this pass's hidden states [T, H]: one per
        token, then the one after its last (`judging`)."""
        judging = [self.judging(b) for b in range(len(self.branches))]
        picked = hidden[torch.tensor([j for rows in judging for j in rows], device=hidden.device)]
        flat = torch.log_softmax(net.head(picked).float(), dim=-1)
        out, at = [], 0
        for rows in judging:
            out.append(flat[at : at + len(rows)])
            at += len(rows)
        return out

    def begin(self, positions: torch.Tensor, causal: bool) -> None:
        """Nothing to build: the masks come with the tree."""

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor, causal: bool, window: int | None):
        """As KVCache.attend for the whole row: every cached position (sliding layers the window's, by position)
        and the row's own by the tree; the trunk's keys/values are kept for `commit`."""
        self.kept.append((k[:, :, : self.trunk], v[:, :, : self.trunk]))
        start = self.cache.length
        q_pos = self.positions[0]
        seen = self._tree
        if window is not None:
            seen = seen & (q_pos[None, :] > q_pos[:, None] - window)
        if start:
            past = causal_mask(q_pos, torch.arange(start, device=k.device), window)
            seen = torch.cat([past, seen], dim=1)
            k = joined(self.cache.keys[layer][:, :, :start], k)
            v = joined(self.cache.values[layer][:, :, :start], v)
        self.keys.append(k)
        self.values.append(v)
        return k, v, seen

    def commit(self) -> None:
        """The trunk's keys and values appended to the cache (which then holds the prompt)."""
        self.cache.extend(self.kept)
