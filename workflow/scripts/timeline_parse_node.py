"""Entry point of rule timeline_parse_node: one node's PROF_ directories -> ranks, coverage, launches."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import pandas as pd

from dispatchprof.analysis.opprof_runs import load_identities
from dispatchprof.analysis.timeline import assign_ranks, calls_between, coverage_table, launches
from dispatchprof.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.formats.msprof import MsprofFormatError, discover, read_prof_info, read_prof_kernels
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.stage import StageRun, run_stage
from dispatchprof.status import Status, Validation


def body(run: StageRun) -> Status:
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg, node = run.config, run.node
    rpn, pattern = cfg["cluster"]["ranks_per_node"], cfg["kernel"]["name"]
    raw = run.raw_dir("timeline_dir") / f"node{node}"
    launch_dir = run.outputs["launches"]
    launch_dir.mkdir(parents=True, exist_ok=True)
    try:
        infos = {p: read_prof_info(p) for p in discover(raw)}
        assignments = assign_ranks(node, rpn, list(infos.values()), load_identities(run.params["identity"]))
        coverage = coverage_table(node, rpn, assignments, infos)
        frames, no_match, symbols = [], [], set()
        for row in coverage[coverage["state"] == "found"].itertuples():
            info = infos[Path(row.prof_dir)]
            kernels = read_prof_kernels(info).assign(rank=row.global_rank, node=node)
            frames.append(kernels)
            hit, names = launches(kernels, pattern)
            symbols.update(names)
            if hit.empty:
                no_match.append(row.global_rank)
            write_json_atomic(
                launch_dir / f"rank{row.global_rank}.json",
                {
                    "rank": row.global_rank,
                    "node": node,
                    "device": None if pd.isna(row.device) else int(row.device),
                    "pid": None if pd.isna(row.pid) else int(row.pid),
                    "prof": row.prof_dir,
                    "symbol": ",".join(names) or None,
                    "present": True,
                    "reason": None if names else f"no kernel matching kernel.name {pattern!r}",
                    "source": str(kernels["source"].iloc[0]) if len(kernels) else None,
                    "launches": hit[["launch", "start_ns", "dur_ns", "task_id", "stream"]].astype("object").to_dict("records"),
                    "calls_between": calls_between(kernels, hit, pattern),
                },
            )
    except MsprofFormatError as exc:
        return run.status("invalid", str(exc), upstream=gate.upstream)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_parquet_atomic(run.outputs["kernels"], table, meta)
    write_parquet_atomic(run.outputs["coverage"], coverage, meta)

    validations = []
    errors = [line for info in infos.values() for line in info.error_lines]
    validations.append(Validation("no [ERROR] in mindstudio_profiler_log", not errors, "error", "; ".join(errors[:3]) or "clean"))
    inferred = [a for a in assignments if a.how == "inferred"]
    if inferred:
        validations.append(
            Validation("rank mapping", False, "warning", f"{len(inferred)} PROF_ mapped to ranks by sorting device ids (no sidecar, rank_id -1): inferred")
        )
    dups = coverage[coverage["duplicates"] > 0]
    if len(dups):
        validations.append(Validation("one PROF_ per rank", False, "warning", f"stale or duplicate PROF_ for {name_ranks(dups['global_rank'])}"))
    missing = coverage[coverage["state"] == "missing"]
    details = {"symbols": sorted(symbols), "expected": rpn, "found": int((coverage["state"] == "found").sum()), "mapping": sorted({a.how for a in assignments})}
    common = dict(upstream=gate.upstream, validations=validations, details=details, artifacts=[str(p) for p in run.outputs.values()])
    if len(missing):
        named = "; ".join(f"node {node} local rank {r.local_rank} (global rank {r.global_rank}): {r.detail}" for r in missing.itertuples())
        return run.status("invalid", f"missing device data for {named}", **common)
    if no_match:
        return run.status("invalid", f"no launch of {pattern!r} on {name_ranks(no_match)}", **common)
    if errors:
        return run.status("invalid", f"msprof logged errors: {errors[0]}", **common)
    return run.status("ok", f"node {node}: {rpn} ranks found, kernel {', '.join(sorted(symbols))}", **common)


run_stage(snakemake, "timeline", body, part=f"node{snakemake.wildcards.node}")
