"""Entry point of rule timeline_parse: the PROF_ directories of a range of nodes -> ranks, coverage, launches.

One job reads several nodes (timeline.nodes_per_job) and writes every rank's launch table and summary itself:
hundreds of per-rank jobs would cost more in Snakemake's bookkeeping than the parsing does.
"""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import numpy as np
import pandas as pd

from dispatchprof.analysis.opprof_runs import load_identities
from dispatchprof.analysis.timeline import assign_ranks, calls_between, coverage_table, kernel_regex, launch_columns, launch_summary
from dispatchprof.atomic import write_json_atomic, write_parquet_atomic, write_text_atomic
from dispatchprof.formats.msprof import MsprofFormatError, discover, read_prof_info, read_target_kernels
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.report.rank_svg import launch_svg
from dispatchprof.stage import StageRun, run_stage
from dispatchprof.status import Status, Validation

NO_LAUNCHES = launch_summary({"used": np.zeros(0, bool), "dur_ns": np.zeros(0, np.int64), "gap_ns": np.zeros(0)})
LAUNCH_COLUMNS = ["rank", "launch", "start_ns", "dur_ns", "gap_ns", "interval_ns", "used"]


def launch_frame(tables: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Every rank's launch table as one frame, integer nanoseconds (gaps nullable: the first used launch has none)."""
    if not tables:
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c in ("gap_ns", "interval_ns") else "bool" if c == "used" else "int64") for c in LAUNCH_COLUMNS})
    merged = {c: np.concatenate([t[c] for t in tables]) for c in LAUNCH_COLUMNS}
    for column in ("gap_ns", "interval_ns"):
        merged[column] = pd.array(merged[column], dtype="Int64")
    return pd.DataFrame(merged)


def body(run: StageRun) -> Status:
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg = run.config
    first, last = run.params["nodes"]
    rpn, pattern = cfg["cluster"]["ranks_per_node"], cfg["kernel"]["name"]
    regex = kernel_regex(pattern)
    identities = load_identities(run.params["identity"])
    skip, context = run.params["skip"], cfg["timeline"]["call_chain_launches"]
    plots = run.outputs["plots"]
    plots.mkdir(parents=True, exist_ok=True)
    coverages, tables, ranks, infos_all, assignments_all = [], [], [], {}, []
    no_match, symbols = [], set()
    try:
        for node in range(first, last + 1):
            infos = {p: read_prof_info(p) for p in discover(run.raw_dir("timeline_dir") / f"node{node}")}
            assignments = assign_ranks(node, rpn, list(infos.values()), identities)
            coverage = coverage_table(node, rpn, assignments, infos)
            infos_all.update(infos)
            assignments_all += assignments
            coverages.append(coverage)
            for row in coverage.itertuples():
                record = {
                    "rank": row.global_rank,
                    "node": node,
                    "device": None if pd.isna(row.device) else int(row.device),
                    "pid": None if pd.isna(row.pid) else int(row.pid),
                    "prof": row.prof_dir,
                    "present": row.state == "found",
                }
                if row.state != "found":
                    ranks.append({**record, "reason": row.detail, "symbol": None, **NO_LAUNCHES})
                    write_text_atomic(plots / f"rank{row.global_rank}.svg", launch_svg(row.global_rank, [], None, row.detail))
                    continue
                kernels = read_target_kernels(infos[Path(row.prof_dir)], lambda name: bool(regex.match(name)), context)
                columns = launch_columns(kernels, skip)
                summary = launch_summary(columns)
                tables.append({**columns, "rank": np.full(len(columns["launch"]), row.global_rank, dtype=np.int64)})
                names = kernels.symbols
                symbols.update(names)
                if not names:
                    no_match.append(row.global_rank)
                ranks.append(
                    {
                        **record,
                        "symbol": ",".join(names) or None,
                        "reason": None if names else f"no kernel matching kernel.name {pattern!r}",
                        "source": kernels.source,
                        **summary,
                        "calls_between": calls_between(kernels),
                        "call_chain_intervals": kernels.context_intervals,
                    }
                )
                used = columns["used"]
                write_text_atomic(plots / f"rank{row.global_rank}.svg", launch_svg(row.global_rank, (columns["dur_ns"][used] / 1000).tolist(), summary["median_us"], record.get("reason")))
    except MsprofFormatError as exc:
        return run.status("invalid", str(exc), upstream=gate.upstream)
    coverage = pd.concat(coverages, ignore_index=True)
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_parquet_atomic(run.outputs["launches"], launch_frame(tables), meta)
    write_parquet_atomic(run.outputs["coverage"], coverage, meta)
    write_json_atomic(run.outputs["ranks"], {"toolchain": run.toolchain, "source": run.source, "nodes": [first, last], "skip_launches": skip, "ranks": ranks})

    validations = []
    errors = [line for info in infos_all.values() for line in info.error_lines]
    validations.append(Validation("no [ERROR] in mindstudio_profiler_log", not errors, "error", "; ".join(errors[:3]) or "clean"))
    inferred = [a for a in assignments_all if a.how == "inferred"]
    if inferred:
        validations.append(
            Validation("rank mapping", False, "warning", f"{len(inferred)} PROF_ mapped to ranks by sorting device ids (no sidecar, rank_id -1): inferred")
        )
    dups = coverage[coverage["duplicates"] > 0]
    if len(dups):
        validations.append(Validation("one PROF_ per rank", False, "warning", f"stale or duplicate PROF_ for {name_ranks(dups['global_rank'])}"))
    missing = coverage[coverage["state"] == "missing"]
    expected = rpn * (last - first + 1)
    found = int((coverage["state"] == "found").sum())
    details = {"symbols": sorted(symbols), "expected": expected, "found": found, "mapping": sorted({a.how for a in assignments_all})}
    common = dict(upstream=gate.upstream, validations=validations, details=details, artifacts=[str(p) for p in run.outputs.values()])
    if len(missing):
        named = "; ".join(f"node {r.node} local rank {r.local_rank} (global rank {r.global_rank}): {r.detail}" for r in missing.itertuples())
        return run.status("invalid", f"missing device data for {named}", **common)
    if no_match:
        return run.status("invalid", f"no launch of {pattern!r} on {name_ranks(no_match)}", **common)
    if errors:
        return run.status("invalid", f"msprof logged errors: {errors[0]}", **common)
    span = f"node {first}" if first == last else f"nodes {first}-{last}"
    return run.status("ok", f"{span}: {found} ranks found, kernel {', '.join(sorted(symbols))}", **common)


run_stage(snakemake, "timeline", body, part=f"nodes{snakemake.wildcards.nodes}")
