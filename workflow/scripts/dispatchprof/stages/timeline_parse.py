"""The parse part of stage timeline (rule timeline_parse): the PROF_ directories of a range of nodes -> ranks, coverage, launches.

One job reads several nodes (timeline.nodes_per_job) and writes every rank's launch table and summary itself:
hundreds of per-rank jobs would cost more in Snakemake's bookkeeping than the parsing does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from dispatchprof.analysis.rank_identity import RankAssignment, RankIdentityError, assign_ranks, describe, load_identities
from dispatchprof.analysis.timeline import calls_between, coverage_rows, kernel_regex, launch_columns, launch_summary, prof_sources, read_state
from dispatchprof.shell.atomic import write_arrow_parquet_atomic, write_json_atomic, write_text_atomic
from dispatchprof.formats.msprof import MsprofFormatError, ProfInfo, discover, prof_chips, read_prof_info
from dispatchprof.formats.target_kernels import read_target_kernels
from dispatchprof.report.rank_svg import launch_svg
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation

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


@dataclass
class NodeRangeParse:
    """What the PROF_ directories of a node range hold: per rank its launch columns and record, the coverage rows."""

    infos: dict[Path, ProfInfo]
    assignments: list[RankAssignment]
    coverage: list[dict[str, Any]]
    tables: list[dict[str, np.ndarray]] = field(default_factory=list)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    symbols: set[str] = field(default_factory=set)
    versions: set[str] = field(default_factory=set)


def parse_node_range(run: StageRun, nodes: range) -> NodeRangeParse:
    """Every rank of ``nodes``: its target launches read, its launch plot written. Raises MsprofFormatError or
    RankIdentityError."""
    cfg = run.config
    rpn, pattern = cfg["cluster"]["ranks_per_node"], cfg["kernel"]["name"]
    regex = kernel_regex(pattern)
    barrier = kernel_regex(cfg["timeline"]["barrier_kernel"]) if cfg["timeline"]["barrier_kernel"] else None
    is_barrier = (lambda name: bool(barrier.match(name))) if barrier else None
    skip, context = run.params["skip"], cfg["timeline"]["call_chain_launches"]
    max_us = float(cfg["stats"]["max_plausible_us"])
    plots = run.outputs["plots"]
    plots.mkdir(parents=True, exist_ok=True)
    per_node = {node: {p: read_prof_info(p) for p in discover(run.raw_dir("timeline_dir") / f"node{node}")} for node in nodes}
    infos = {p: i for found in per_node.values() for p, i in found.items()}
    sources = [s for node, found in per_node.items() for s in prof_sources(node, found)]
    assignments = assign_ranks(sources, rpn, load_identities(run.params["identity"]), cfg["cluster"]["infer_rank"])
    coverage = coverage_rows(nodes, rpn, assignments, infos, cfg["cluster"]["infer_rank"])
    parsed = NodeRangeParse(infos, assignments, coverage)
    tables, ranks, symbols, versions = parsed.tables, parsed.ranks, parsed.symbols, parsed.versions
    for row in coverage:
        rank = row["global_rank"]
        record = {"rank": rank, "node": row["node"], "device": row["device"], "pid": row["pid"], "prof": row["prof_dir"], "mapping": row["mapping"]}
        if row["state"] == "found":
            info = infos[Path(row["prof_dir"])]
            device = row["device"] if len(info.devices) > 1 else None  # split a multi-device PROF_ by its device id
            kernels = read_target_kernels(
                info, lambda name: bool(regex.match(name)), context, is_barrier=is_barrier, device=device, skip_unended=True, max_us=max_us
            )
            if kernels.schema_version:
                versions.add(kernels.schema_version)
            if (state := read_state(kernels, pattern)) is not None:
                row.update(state=state[0], detail=state[1])
        if row["state"] != "found":
            ranks.append({**record, "present": False, "reason": row["detail"], "symbol": None, **NO_LAUNCHES})
            write_text_atomic(plots / f"rank{rank}.svg", launch_svg(rank, [], None, row["detail"]))
            continue
        columns = launch_columns(kernels, skip)
        summary = launch_summary(columns)
        tables.append({**columns, "rank": np.full(len(columns["launch"]), rank, dtype=np.int64)})
        names = kernels.symbols
        symbols.update(names)
        ranks.append(
            {
                **record,
                "present": True,
                "symbol": ",".join(names),
                "reason": None,
                "source": kernels.source,
                **summary,
                "calls_between": calls_between(kernels),
                "call_chain_intervals": kernels.context_intervals,
            }
        )
        used = columns["used"]
        write_text_atomic(plots / f"rank{rank}.svg", launch_svg(rank, (columns["dur_ns"][used] / 1000).tolist(), summary["median_us"]))
    return parsed


def parse_validations(parsed: NodeRangeParse, errors: list[str], first: int, last: int, rpn: int, infer_rank: str) -> list[Validation]:
    """msprof's logged errors (an error), inferred or misplaced ranks and ranks without data (warnings)."""
    assignments, coverage = parsed.assignments, parsed.coverage
    validations = [Validation("no [ERROR] in mindstudio_profiler_log", not errors, "error", "; ".join(errors[:3]) or "clean")]
    inferred = [a for a in assignments if a.inferred]
    if inferred:
        validations.append(
            Validation(
                "rank mapping",
                False,
                "warning",
                f"{len(inferred)} of {len(assignments)} sources numbered from their device id (cluster.infer_rank: {infer_rank}; "
                "no identity sidecar, rank_id -1): inferred, not recorded",
            )
        )
    outside = [a for a in assignments if a.rank is not None and not first * rpn <= a.rank < (last + 1) * rpn]
    unknown = [a for a in assignments if a.rank is None]
    for label, found in (("rank outside its node directory", outside), ("rank not determinable", unknown)):
        if found:
            validations.append(
                Validation(label, False, "warning", "; ".join(describe(a) + (f" -> rank {a.rank}" if a.rank is not None else "") for a in found[:3]))
            )
    absent = [r for r in coverage if r["state"] != "found"]
    if absent:
        named = "; ".join(f"rank {r['global_rank']} (node {r['node']} local rank {r['local_rank']}): {r['detail']}" for r in absent[:8])
        validations.append(Validation("every rank of these nodes has timeline data", False, "warning", named + (" ..." if len(absent) > 8 else "")))
    return validations


def timeline_parse(run: StageRun) -> Status:
    """One node range's part: every rank's launches and summary, its launch plot, the coverage rows."""
    gate = run.gate({k: run.inputs[k] for k in run.params["needed"]})
    if not gate.open:
        return run.skipped(gate)
    cfg = run.config
    first, last = run.params["nodes"]
    rpn = cfg["cluster"]["ranks_per_node"]
    skip = run.params["skip"]
    nodes = range(first, last + 1)
    try:
        parsed = parse_node_range(run, nodes)
    except (MsprofFormatError, RankIdentityError) as exc:
        return run.status("invalid", str(exc), upstream=gate.upstream)
    coverage, infos, assignments, symbols = parsed.coverage, parsed.infos, parsed.assignments, parsed.symbols
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_arrow_parquet_atomic(run.outputs["launches"], launch_columns_of(parsed.tables), meta)
    write_arrow_parquet_atomic(run.outputs["coverage"], columns_of(coverage), meta)
    write_json_atomic(
        run.outputs["ranks"], {"toolchain": run.toolchain, "source": run.source, "nodes": [first, last], "skip_launches": skip, "ranks": parsed.ranks}
    )
    errors = [line for info in infos.values() for line in info.error_lines]
    validations = parse_validations(parsed, errors, first, last, rpn, cfg["cluster"]["infer_rank"])
    found = sorted(r["global_rank"] for r in coverage if r["state"] == "found")
    details = {
        "symbols": sorted(symbols),
        "expected": rpn * len(nodes),
        "found": len(found),
        "mapping": sorted({a.how for a in assignments}),
        "schema_versions": sorted(parsed.versions),  # of the dbs read
        "devices_from": sorted({i.devices_from for i in infos.values()}),
        # the chip as the data says it: every PROF_'s info.json, the NPU_INFO of the range's first db (one query a job)
        "chips": sorted(set().union(*(prof_chips(i, n == 0) for n, i in enumerate(sorted(infos.values(), key=lambda i: i.db is None))))),
    }
    common = dict(upstream=gate.upstream, validations=validations, details=details, artifacts=[str(p) for p in run.outputs.values()])
    if errors:
        return run.status("invalid", f"msprof logged errors: {errors[0]}", **common)
    span = f"node {first}" if first == last else f"nodes {first}-{last}"
    # Coverage is judged over every rank by the merge: one missing rank here must not throw away the rest.
    return run.status(
        "ok", f"{span}: {len(found)} of {rpn * len(nodes)} ranks with data" + (f", kernel {', '.join(sorted(symbols))}" if symbols else ""), **common
    )
