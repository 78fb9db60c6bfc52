"""The short soak (CI form of `diffill bench soak`): no memory, thread or descriptor growth after warm-up, no
error answers, documents still equal to the client's, a clean exit. The full run is `diffill bench soak`."""

from __future__ import annotations

import os

from diffill.bench.soak import run

REQUESTS = int(os.environ.get("SOAK_REQUESTS", "300"))


def test_short_soak():
    lines: list[str] = []
    report = run(requests=REQUESTS, seed=0, steps=2, out=lines.append)
    print("\n".join(lines))
    assert report.errors == 0 and report.answered + report.cancelled == REQUESTS
    assert report.documents_consistent
    first, last = report.window_digests
    assert first == last  # the last window replayed the first: same documents, edits and requests
    assert report.rss_growth < 0.10, lines
    assert report.end["threads"] <= report.warm["threads"] + 2, lines  # pygls' pool may start a thread or two
    assert report.end["fds"] <= report.warm["fds"], lines
    counts, end = report.warm_counts, report.end_counts
    for key in ("documents", "request_futures", "result_types", "scheduler_tokens", "typed_ahead", "prompt_cache"):
        assert end[key] <= max(counts[key], 8), (key, counts[key], end[key])
    assert end["gc_objects"] < counts["gc_objects"] * 1.05 + 2000, (counts["gc_objects"], end["gc_objects"])
    # glibc's blocks in use: no leak
    assert end["heap_in_use_kb"] < counts["heap_in_use_kb"] * 1.05 + 4096, (counts, end)
    assert report.exit_code == 0
    assert len(report.latency_series_ms) == len(report.rss_series_kb) == len(report.busy_rss_series_kb) == 10
    assert all(0 < p50 <= p95 for p50, p95 in report.latency_series_ms)
    assert report.allocation_growth == []  # not traced unless asked
    assert any(line.startswith("object types grown after warm-up: ") for line in lines)


def test_a_traced_soak_names_the_sites_that_grew():
    """`--allocations`: the server traces its allocations from the first request; the report lists the sites whose
    live memory grew most, each the line that allocated and the calls that led there ("a <- b <- c")."""
    lines: list[str] = []
    report = run(requests=40, seed=1, steps=1, out=lines.append, allocations=True)
    assert report.errors == 0 and report.allocation_growth
    assert all(":" in a["site"] and a["kib"] > 0 for a in report.allocation_growth[:3]), report.allocation_growth
    assert any(" <- " in a["site"] for a in report.allocation_growth), report.allocation_growth
    assert sum(line.startswith("  grown at ") for line in lines) == len(report.allocation_growth)
