"""Library-level timeline analysis of a collection in one process (what benchmarks/run.py times as (a)):
the same calls as the workflow's parse and merge jobs: every rank's db read (target launches and the
call-chain window), per-rank launch table and statistics, call chain, straggler. Streams rank by rank:
only the launch durations of each rank are kept, never every kernel of every rank at once.

    python benchmarks/analyze_library.py <collection> <nodes> <ranks_per_node>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
import numpy as np  # noqa: E402

from dispatchprof.analysis.rank_identity import assign_ranks  # noqa: E402
from dispatchprof.analysis.timeline import calls_between, kernel_regex, launch_columns, launch_summary, longest_duration, prof_sources  # noqa: E402
from dispatchprof.formats.msprof import discover, read_prof_info  # noqa: E402
from dispatchprof.formats.target_kernels import read_target_kernels  # noqa: E402


def analyse(root: Path, nodes: int, ranks_per_node: int, pattern: str = "elastic_dispatch_kernel", call_chain_launches: int = 200) -> dict:
    regex = kernel_regex(pattern)
    durations: dict[int, np.ndarray] = {}
    per_rank, chains = {}, 0
    for node in range(nodes):
        infos = {p: read_prof_info(p) for p in discover(root / f"node{node}")}
        for assignment in assign_ranks(prof_sources(node, infos), ranks_per_node, {}):
            info = infos[assignment.source.path]
            device = assignment.source.device if len(info.devices) > 1 else None
            kernels = read_target_kernels(info, lambda name: bool(regex.match(name)), call_chain_launches, device=device)
            columns = launch_columns(kernels, 0)
            durations[assignment.rank] = columns["dur_ns"][columns["used"]] / 1000
            per_rank[assignment.rank] = launch_summary(columns)
            chains += len(calls_between(kernels))
    ranks = sorted(durations)
    longest = max(len(d) for d in durations.values())
    wide = np.column_stack([np.pad(durations[r], (0, longest - len(durations[r])), constant_values=np.nan) for r in ranks])
    strag = longest_duration(ranks, wide)
    return {"ranks": len(per_rank), "straggler": strag["rank"], "fraction": strag["fraction"], "call_chain_entries": chains}


if __name__ == "__main__":
    print(json.dumps(analyse(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
