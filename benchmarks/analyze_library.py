"""Library-level timeline analysis of a collection (what benchmarks/run.py times as (a)): the same calls as the
workflow's parse and merge jobs: every rank's db read (target launches and the call-chain window), per-rank
launch table and statistics, call chain, straggler. Streams rank by rank: only the launch durations of each rank
are kept, never every kernel of every rank at once.

The nodes are parsed in --jobs groups side by side (default 2), as the workflow runs one parse job per node
group on its 2 cores; the straggler is found over all of them in this process, as the merge job does. The time
saved is parallelism, not a faster read: --jobs 1 reads every rank in this process.

    python benchmarks/analyze_library.py <collection> <nodes> <ranks_per_node> [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as workflow/scripts/timeline_parse.py: no BLAS thread pool
import numpy as np  # noqa: E402

from dispatchprof.analysis.rank_identity import assign_ranks  # noqa: E402
from dispatchprof.analysis.timeline import (
    calls_between,
    kernel_regex,
    launch_columns,
    launch_summary,
    longest_duration,
    prof_sources,
)  # noqa: E402
from dispatchprof.formats.msprof import discover, read_prof_info  # noqa: E402
from dispatchprof.formats.target_kernels import read_target_kernels  # noqa: E402


class NodeGroup(NamedTuple):
    """What one parse job hands the merge: each rank's used launch durations (us) and summary, call-chain entries."""

    durations: dict[int, np.ndarray]
    per_rank: dict[int, dict]
    chains: int


def parse_nodes(
    root: Path, nodes: range, ranks_per_node: int, pattern: str, call_chain_launches: int, barrier: str | None
) -> NodeGroup:
    regex = kernel_regex(pattern)
    barrier_regex = kernel_regex(barrier) if barrier else None
    is_barrier = (lambda name: bool(barrier_regex.match(name))) if barrier_regex else None
    durations: dict[int, np.ndarray] = {}
    per_rank, chains = {}, 0
    for node in nodes:
        infos = {p: read_prof_info(p) for p in discover(root / f"node{node}")}
        for assignment in assign_ranks(prof_sources(node, infos), ranks_per_node, {}):
            info = infos[assignment.source.path]
            device = assignment.source.device if len(info.devices) > 1 else None
            kernels = read_target_kernels(
                info,
                lambda name: bool(regex.match(name)),
                call_chain_launches,
                is_barrier=is_barrier,
                device=device,
                skip_unended=True,
            )
            columns = launch_columns(kernels, 0)
            durations[assignment.rank] = columns["dur_ns"][columns["used"]] / 1000
            per_rank[assignment.rank] = launch_summary(columns)
            chains += len(calls_between(kernels))
    return NodeGroup(durations, per_rank, chains)


def node_groups(nodes: int, jobs: int) -> list[range]:
    """Contiguous node ranges, as the workflow's timeline.nodes_per_job splits them."""
    size = -(-nodes // max(jobs, 1))
    return [range(first, min(first + size, nodes)) for first in range(0, nodes, size)]


def analyse(
    root: Path,
    nodes: int,
    ranks_per_node: int,
    pattern: str = "elastic_dispatch_kernel",
    call_chain_launches: int = 200,
    jobs: int = 2,
    barrier: str | None = "cached_notify_combine",
) -> dict:
    """Defaults are the config's: kernel.name, timeline.call_chain_launches and timeline.barrier_kernel (whose
    launches the parse job reads too, for the node clocks and who arrived last)."""
    groups = node_groups(nodes, jobs)
    args = [(root, g, ranks_per_node, pattern, call_chain_launches, barrier) for g in groups]
    if len(groups) > 1:
        # fork: the workers start with numpy and the library imported, as a parse job would after its imports.
        with ProcessPoolExecutor(len(groups), mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(parse_nodes, *zip(*args)))
    else:
        parts = [parse_nodes(*a) for a in args]
    durations = {rank: d for part in parts for rank, d in part.durations.items()}
    per_rank = {rank: s for part in parts for rank, s in part.per_rank.items()}
    ranks = sorted(durations)
    longest = max(len(d) for d in durations.values())
    wide = np.column_stack(
        [np.pad(durations[r], (0, longest - len(durations[r])), constant_values=np.nan) for r in ranks]
    )
    strag = longest_duration(ranks, wide)
    chains = sum(part.chains for part in parts)
    return {
        "ranks": len(per_rank),
        "straggler": strag["rank"],
        "fraction": strag["fraction"],
        "call_chain_entries": chains,
        "jobs": len(groups),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", type=Path)
    parser.add_argument("nodes", type=int)
    parser.add_argument("ranks_per_node", type=int)
    parser.add_argument(
        "--jobs", type=int, default=2, help="node groups parsed side by side (default 2, the workflow's two parse jobs)"
    )
    cli = parser.parse_args()
    print(json.dumps(analyse(cli.collection, cli.nodes, cli.ranks_per_node, jobs=cli.jobs)))
