"""Launch shapes as data (kernels/tiles.py): a swept table picks each kernel's tiles by token bucket."""

import json

import pytest

from diffill.kernels import tiles
from diffill.kernels.tiles import Tiles, parse_table, table_json, tiles_for

SWEPT = {"moe": {"1": {"bm": 16, "bn": 32, "warps": 2}, "256": {"bm": 32, "bn": 128, "warps": 8, "stages": 4}},
         "proj": {"16": {"bm": 16, "bn": 64}}}  # fmt: skip


def test_a_token_count_takes_the_smallest_bucket_that_holds_it():
    table = parse_table(SWEPT)
    assert tiles_for("moe", 1, table) == Tiles(16, 32, 2)
    assert tiles_for("moe", 2, table) == tiles_for("moe", 256, table) == Tiles(32, 128, 8, 4)
    assert tiles_for("moe", 4096, table) == Tiles(32, 128, 8, 4)  # past the last bucket: the last
    assert tiles_for("proj", 300, table) == Tiles(16, 64)


def test_kernels_the_table_leaves_out_keep_the_heuristics():
    table = parse_table({"moe": SWEPT["moe"]})
    assert tiles_for("proj", 64, table) == tiles_for("proj", 64, {}) == Tiles(64, 64)


def test_the_json_form_round_trips():
    table = parse_table(SWEPT)
    assert parse_table(json.loads(table_json(table))) == table


@pytest.mark.parametrize(
    "bad", [[1, 2], {"moe": [1]}, {"moe": {"x": {"bm": 16, "bn": 64}}}, {"moe": {"1": {"bm": 16}}}]
)
def test_malformed_tables_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        parse_table(bad)


def test_diffill_tiles_points_at_another_table(tmp_path, monkeypatch):
    path = tmp_path / "tiles.json"
    path.write_text(json.dumps(SWEPT))
    monkeypatch.setenv("DIFFILL_TILES", str(path))
    tiles.shipped_table.cache_clear()
    try:
        assert tiles.moe_tiles(200) == Tiles(32, 128, 8, 4)
        assert tiles.qlinear_tiles(8) == Tiles(16, 64)
    finally:
        monkeypatch.delenv("DIFFILL_TILES")
        tiles.shipped_table.cache_clear()
