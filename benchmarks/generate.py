"""Generate a synthetic msprof collection at a chosen scale, written through the simulated msprof's own writer
(workflow/sim/simprof) so the formats stay true: one PROF_ per rank with db (a host call in CANN_API per task, as
msprof links them), info.json.<id> (rank_id set) and, with --text, the text export. Layout: <out>/node<k>/PROF_*,
as analyze mode expects.

    python benchmarks/generate.py --nodes 2 --ranks-per-node 8 --launches 1000 --out /tmp/bench/2x8x1000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "sim"))
from simprof.prof_writer import write_prof  # noqa: E402

OTHER = ("cached_notify_combine", "notify_dispatch_layout", "dispatch_epilogue")


def events_for(rank: int, launches: int, start_ns: int) -> list[dict]:
    rng = random.Random(rank)
    events, t, task = [], start_ns, 1
    slow = 1.15 if rank == 7 else 1.0
    for _ in range(launches):
        for name in OTHER[:2]:
            dur = int(rng.uniform(5_000, 15_000))
            events.append(
                {
                    "name": name,
                    "task_type": "AI_VECTOR_CORE",
                    "stream": 1332,
                    "task_id": task % 65536,
                    "start_ns": t,
                    "dur_ns": dur,
                }
            )
            t, task = t + dur + 2_000, task + 1
        dur = int(1_000_000 * slow * rng.lognormvariate(0, 0.02))
        events.append(
            {
                "name": "elastic_dispatch_kernel",
                "task_type": "AI_VECTOR_CORE",
                "stream": 1332,
                "task_id": task % 65536,
                "start_ns": t,
                "dur_ns": dur,
                "input_shapes": "256,7168;256,6",
            }
        )
        t, task = t + dur + 3_000, task + 1
        dur = int(rng.uniform(3_000, 8_000))
        events.append(
            {
                "name": OTHER[2],
                "task_type": "AI_VECTOR_CORE",
                "stream": 1332,
                "task_id": task % 65536,
                "start_ns": t,
                "dur_ns": dur,
            }
        )
        t, task = t + dur + 50_000, task + 1
    for ev in events:  # every task launched by a host call (CANN_API "launch"), a few us before it starts
        ev["api_start_ns"] = ev["start_ns"] - int(rng.uniform(4_000, 9_000))
        ev["api_end_ns"] = ev["api_start_ns"] + int(rng.uniform(1_000, 3_000))
    return events


def generate(out: Path, nodes: int, ranks_per_node: int, launches: int, text: bool) -> None:
    for node in range(nodes):
        for local in range(ranks_per_node):
            rank = node * ranks_per_node + local
            start = 1_795_977_981_000_000_000 + node * 1_700_000
            proc = {
                "pid": 10_000 + rank,
                "hostname": f"node{node}",
                "device_id": local,
                "rank_id": rank,
                "start_ns": start,
            }
            write_prof(out / f"node{node}", proc, events_for(rank, launches, start), export=text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--ranks-per-node", type=int, default=8)
    p.add_argument("--launches", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--text", action="store_true", help="also write the text export (op_summary CSV, msprof JSON)")
    args = p.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out} exists and is not empty; refusing to mix collections", file=sys.stderr)
        return 2
    started = time.perf_counter()
    generate(args.out, args.nodes, args.ranks_per_node, args.launches, args.text)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(
        f"generated {args.nodes}x{args.ranks_per_node}x{args.launches} in "
        f"{time.perf_counter() - started:.1f} s: {size / 1e6:.0f} MB in {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
