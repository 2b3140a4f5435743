"""Library-level timeline analysis of a collection in one process (what benchmarks/run.py times as (a)):
parse every rank's db, find the target kernel's launches, per-rank statistics, straggler. Streams rank by rank:
only the launch durations of each rank are kept, never every kernel of every rank at once.

    python benchmarks/analyze_library.py <collection> <nodes> <ranks_per_node>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
import numpy as np  # noqa: E402

from dispatchprof.analysis.timeline import assign_ranks, kernel_regex, launches, straggler  # noqa: E402
from dispatchprof.formats.msprof import discover, read_db, read_prof_info, read_prof_kernels  # noqa: E402


def analyse(root: Path, nodes: int, ranks_per_node: int, pattern: str = "elastic_dispatch_kernel") -> dict:
    regex = kernel_regex(pattern)
    durations: dict[int, dict[int, float]] = {}
    per_rank = {}
    for node in range(nodes):
        infos = [read_prof_info(p) for p in discover(root / f"node{node}")]
        for assignment, info in zip(assign_ranks(node, ranks_per_node, infos, {}), infos):
            # Read only the target kernel's rows: the name filter runs on STRING_IDS, the row filter in SQLite.
            kernels = read_db(info.db, lambda name: bool(regex.match(name))) if info.db else read_prof_kernels(info)
            hit, _ = launches(kernels, pattern)
            us = hit["dur_ns"].to_numpy() / 1000
            durations[assignment.rank] = dict(zip(hit["launch"].tolist(), us.tolist()))
            per_rank[assignment.rank] = {"launches": len(us), "median_us": float(np.median(us)), "p95_us": float(np.percentile(us, 95))}
    strag = straggler(durations)
    return {"ranks": len(per_rank), "straggler": strag["rank"], "fraction": strag["fraction_slowest"]}


if __name__ == "__main__":
    print(json.dumps(analyse(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
