"""Entry point of rule timeline_parse: the PROF_ directories of a range of nodes -> ranks, coverage, launches.

One job reads several nodes (timeline.nodes_per_job) and writes every rank's launch table and summary itself:
hundreds of per-rank jobs would cost more in Snakemake's bookkeeping than the parsing does.
"""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import numpy as np
import pyarrow as pa

from dispatchprof.analysis.opprof_runs import load_identities
from dispatchprof.analysis.timeline import assign_ranks, calls_between, coverage_table, kernel_regex, launch_columns, launch_summary
from dispatchprof.atomic import write_arrow_parquet_atomic, write_json_atomic, write_text_atomic
from dispatchprof.formats.msprof import MsprofFormatError, discover, read_prof_info
from dispatchprof.formats.target_kernels import read_target_kernels
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.report.rank_svg import launch_svg
from dispatchprof.stage import StageRun, run_stage
from dispatchprof.status import Status, Validation

NO_LAUNCHES = launch_summary({"used": np.zeros(0, bool), "dur_ns": np.zeros(0, np.int64), "gap_ns": np.zeros(0)})
LAUNCH_COLUMNS = ["rank", "launch", "start_ns", "dur_ns", "gap_ns", "interval_ns", "used", "barrier_start_ns", "barrier_dur_ns"]


def launch_columns_of(tables: list[dict[str, np.ndarray]]) -> dict[str, pa.Array]:
    """Every rank's launch table as one set of columns, integer nanoseconds (gaps null where there is no
    previous used launch). pyarrow, not pandas: this job should cost its parsing, not a pandas import."""
    columns = {}
    for name in LAUNCH_COLUMNS:
        values = np.concatenate([t[name] for t in tables]) if tables else np.zeros(0, dtype=bool if name == "used" else np.int64)
        if name in ("gap_ns", "interval_ns", "barrier_start_ns", "barrier_dur_ns"):
            missing = np.isnan(values) if values.dtype.kind == "f" else values == -1
            values = pa.array(np.where(missing, 0, values).astype(np.int64), mask=missing)
        columns[name] = values if isinstance(values, pa.Array) else pa.array(values)
    return columns


def columns_of(rows: list[dict]) -> dict[str, list]:
    return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}


def body(run: StageRun) -> Status:
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg = run.config
    first, last = run.params["nodes"]
    rpn, pattern = cfg["cluster"]["ranks_per_node"], cfg["kernel"]["name"]
    regex = kernel_regex(pattern)
    barrier = kernel_regex(cfg["timeline"]["barrier_kernel"]) if cfg["timeline"]["barrier_kernel"] else None
    is_barrier = (lambda name: bool(barrier.match(name))) if barrier else None
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
            for row in coverage:
                rank = row["global_rank"]
                record = {"rank": rank, "node": node, "device": row["device"], "pid": row["pid"], "prof": row["prof_dir"], "present": row["state"] == "found"}
                if row["state"] != "found":
                    ranks.append({**record, "reason": row["detail"], "symbol": None, **NO_LAUNCHES})
                    write_text_atomic(plots / f"rank{rank}.svg", launch_svg(rank, [], None, row["detail"]))
                    continue
                kernels = read_target_kernels(infos[Path(row["prof_dir"])], lambda name: bool(regex.match(name)), context, is_barrier=is_barrier)
                columns = launch_columns(kernels, skip)
                summary = launch_summary(columns)
                tables.append({**columns, "rank": np.full(len(columns["launch"]), rank, dtype=np.int64)})
                names = kernels.symbols
                symbols.update(names)
                if not names:
                    no_match.append(rank)
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
                write_text_atomic(plots / f"rank{rank}.svg", launch_svg(rank, (columns["dur_ns"][used] / 1000).tolist(), summary["median_us"]))
    except MsprofFormatError as exc:
        return run.status("invalid", str(exc), upstream=gate.upstream)
    coverage = [row for rows in coverages for row in rows]
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_arrow_parquet_atomic(run.outputs["launches"], launch_columns_of(tables), meta)
    write_arrow_parquet_atomic(run.outputs["coverage"], columns_of(coverage), meta)
    write_json_atomic(run.outputs["ranks"], {"toolchain": run.toolchain, "source": run.source, "nodes": [first, last], "skip_launches": skip, "ranks": ranks})

    validations = []
    errors = [line for info in infos_all.values() for line in info.error_lines]
    validations.append(Validation("no [ERROR] in mindstudio_profiler_log", not errors, "error", "; ".join(errors[:3]) or "clean"))
    inferred = [a for a in assignments_all if a.how == "inferred"]
    if inferred:
        validations.append(
            Validation("rank mapping", False, "warning", f"{len(inferred)} PROF_ mapped to ranks by sorting device ids (no sidecar, rank_id -1): inferred")
        )
    dups = [r["global_rank"] for r in coverage if r["duplicates"] > 0]
    if dups:
        validations.append(Validation("one PROF_ per rank", False, "warning", f"stale or duplicate PROF_ for {name_ranks(dups)}"))
    missing = [r for r in coverage if r["state"] == "missing"]
    expected = rpn * (last - first + 1)
    found = sum(r["state"] == "found" for r in coverage)
    details = {"symbols": sorted(symbols), "expected": expected, "found": found, "mapping": sorted({a.how for a in assignments_all})}
    common = dict(upstream=gate.upstream, validations=validations, details=details, artifacts=[str(p) for p in run.outputs.values()])
    if missing:
        named = "; ".join(f"node {r['node']} local rank {r['local_rank']} (global rank {r['global_rank']}): {r['detail']}" for r in missing)
        return run.status("invalid", f"missing device data for {named}", **common)
    if no_match:
        return run.status("invalid", f"no launch of {pattern!r} on {name_ranks(no_match)}", **common)
    if errors:
        return run.status("invalid", f"msprof logged errors: {errors[0]}", **common)
    span = f"node {first}" if first == last else f"nodes {first}-{last}"
    return run.status("ok", f"{span}: {found} ranks found, kernel {', '.join(sorted(symbols))}", **common)


run_stage(snakemake, "timeline", body, part=f"nodes{snakemake.wildcards.nodes}")
