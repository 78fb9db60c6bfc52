"""`bench gpu --profile`: kernel launches counted from the profiler's events, and the dry run's tables of both
passes written and returned."""

import re
from types import SimpleNamespace as Event

from diffill.bench.gpu.profile import kernel_launches, profile_tables


def test_kernel_launches_count_only_the_launch_calls():
    events = [Event(key="cudaLaunchKernel", count=3), Event(key="aten::mm", count=10),
              Event(key="cuLaunchKernelEx", count=2), Event(key="cuLaunchKernel", count=1),
              Event(key="cudaMemcpyAsync", count=4), Event(key="cudaLaunchHostFunc", count=5)]  # fmt: skip
    # (cudaLaunchHostFunc runs a host callback: no kernel)
    assert kernel_launches(events) == 6
    assert kernel_launches([]) == 0


def test_profile_dry_run_tables_both_passes(tmp_path):
    out = tmp_path / "profile.txt"
    text = profile_tables(out, dry_run=True, canvas=32, prompt=16)
    assert out.read_text() == text
    # no CUDA on a dry run: nothing launched
    assert re.findall(r"^== (.+): (\d+) kernel launches$", text, re.M) == [("denoise step", "0"), ("AR token", "0")]
    assert text.count("aten::linear") >= 2  # the layers' matmuls show in both passes' tables
    assert text.count("Self CPU time total:") == 4  # two tables per pass (by total time, by self time), each footed
