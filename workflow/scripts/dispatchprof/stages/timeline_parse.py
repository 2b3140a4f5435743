"""The parse part of stage timeline (rule timeline_parse): the
PROF_ directories of a range of nodes -> ranks, coverage, launches.

One job reads several nodes (timeline.nodes_per_job) and writes every rank's launch table and summary itself:
hundreds of per-rank jobs would cost more in Snakemake's bookkeeping than the parsing does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa

from dispatchprof.analysis.rank_identity import (
    RankAssignment,
    RankIdentityError,
    assign_ranks,
    describe,
    load_identities,
)
from dispatchprof.analysis.timeline import (
    calls_between,
    communication_note,
    coverage_rows,
    host_api_record,
    kernel_regex,
    launch_columns,
    launch_summary,
    prof_sources,
    read_state,
)
from dispatchprof.shell.atomic import write_arrow_parquet_atomic, write_json_atomic, write_text_atomic
from dispatchprof.formats.msprof import MsprofFormatError, ProfInfo, TargetKernels, communication_ops_named, prof_chips
from dispatchprof.formats.prof_dirs import read_data_dir, resolve_rank_map
from dispatchprof.formats.prof_tree import DataDir, find_data_dirs
from dispatchprof.formats.target_kernels import read_target_kernels
from dispatchprof.formats.text import refusal
from dispatchprof.report.rank_svg import launch_svg
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation
from dispatchprof.stages.imports import problem_entries, would_block

NO_LAUNCHES = launch_summary({"used": np.zeros(0, bool), "dur_ns": np.zeros(0, np.int64), "gap_ns": np.zeros(0)})
LAUNCH_COLUMNS = [
    "rank",
    "launch",
    "start_ns",
    "dur_ns",
    "gap_ns",
    "interval_ns",
    "used",
    "barrier_start_ns",
    "barrier_dur_ns",
    "api_start_ns",
    "api_dur_ns",
]
NULLABLE = ("gap_ns", "interval_ns", "barrier_start_ns", "barrier_dur_ns", "api_start_ns", "api_dur_ns")


def launch_columns_of(tables: list[dict[str, np.ndarray]]) -> dict[str, pa.Array]:
    """Every rank's launch table as one set of columns, integer nanoseconds (gaps null where there is no
    previous used launch). pyarrow, not pandas: this job should cost its parsing, not a pandas import."""
    columns = {}
    for name in LAUNCH_COLUMNS:
        values = (
            np.concatenate([t[name] for t in tables])
            if tables
            else np.zeros(0, dtype=bool if name == "used" else np.int64)
        )
        if name in NULLABLE:
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


@dataclass
class FoundInfos:
    """A node range's data directories, read (read_node_infos): per node each directory's ProfInfo, per node the
    directories refused before a rank was known (each named, with why), analyze.rank_map resolved, and the
    directories read whose other entries cannot be (their ranks are refused, each entry named with why)."""

    per_node: dict[int, dict[Path, ProfInfo]]
    refused: dict[int, list[str]]
    named: dict[Path, int]
    unreadable: dict[Path, list[str]] = field(default_factory=dict)


def read_node_infos(
    raw: Path, nodes: range, ranks_per_node: int, rank_map: Mapping[str, int] | None = None
) -> FoundInfos:
    """Each node's data directories in whichever layout the tree has (formats.prof_tree: node<k>/PROF_*, a single
    PROF_*, torch_npu *_ascend_pt directories, a bare mindstudio_profiler_output/), read; per node the directories
    refused (unreadable, identity files that are no JSON, ranks that disagree), each with why: one such directory
    costs its own rank, never the node's other ranks; and analyze.rank_map resolved. A directory under no node<k>
    belongs to the node of its rank (named in analyze.rank_map, else recorded), else to node 0. A directory with an
    entry that cannot be read (formats/tree_walk.walk_tree: no permission, a link loop) is read for its identity and
    its ranks are then refused, naming the entries; one with a FIFO or device in it is refused unread."""
    found_infos = FoundInfos({node: {} for node in nodes}, {}, {})
    try:
        found = find_data_dirs(raw)
    except OSError as exc:
        found_infos.refused.setdefault(nodes.start, []).append(refusal(raw, exc))
        return found_infos
    found_infos.named = resolve_rank_map(raw, dict(rank_map or {}), found)
    for data in found:
        if data.node is not None and data.node not in nodes:
            continue  # another job's node: not read
        read_one(data, nodes, ranks_per_node, found_infos)
    return found_infos


def read_one(data: DataDir, nodes: range, ranks_per_node: int, found: FoundInfos) -> None:
    """One data directory of the range read into ``found`` (read_node_infos), or refused there with why."""
    bad = problem_entries(data.path)
    problems = [f"{e.path}: {e.problem}" for e in bad]
    blocking = any(map(would_block, bad))
    try:
        if blocking:
            raise MsprofFormatError(f"{data.path}: not read: {'; '.join(problems)}")
        info = read_data_dir(data)
    except (MsprofFormatError, OSError) as exc:
        if (data.node or 0) in nodes:  # the entries that cannot be read first: the likeliest cause, named with why
            said = refusal(data.path, exc)
            found.refused.setdefault(data.node or 0, []).append(
                "; ".join([*problems, said]) if problems and not blocking else said
            )
        return
    rank = found.named.get(data.path, info.rank_id)
    node = data.node if data.node is not None else (rank // ranks_per_node if rank is not None else 0)
    if node in found.per_node:
        found.per_node[node][data.path] = info
        if problems:
            found.unreadable[data.path] = problems


@dataclass(frozen=True)
class RankReader:
    """How a found rank's launches are read (the config's kernel and barrier names, context, plausibility limit)."""

    pattern: str
    is_target: Callable[[str], bool]
    is_barrier: Callable[[str], bool] | None
    context: int
    max_us: float
    host_launches: int = 0  # the host calls of the first that many launches: those the merged trace can draw (0: all)

    def read(self, info: ProfInfo, row: dict[str, Any]) -> TargetKernels | None:
        """The rank's target launches; None, with the coverage row marked, when there is nothing to analyse: a file
        unreadable or refused (row state ``refused``, naming the file and why), or what read_state tells."""
        device = row["device"] if len(info.devices) > 1 else None  # split a multi-device PROF_ by its device id
        try:
            kernels = read_target_kernels(
                info,
                self.is_target,
                self.context,
                is_barrier=self.is_barrier,
                device=device,
                skip_unended=True,
                max_us=self.max_us,
                host_launches=self.host_launches,
            )
        except (MsprofFormatError, OSError) as exc:
            row.update(state="refused", detail=f"refused: {refusal(info.path, exc)}")
            return None
        if (state := read_state(kernels, self.pattern)) is not None:
            row.update(state=state[0], detail=state[1] + (self.communication(info) if state[0] == "no_kernel" else ""))
        return kernels

    def communication(self, info: ProfInfo) -> str:
        """Why a rank with no launch may have been asked for a
        communication op (analysis.timeline.communication_note)."""
        try:
            ops = communication_ops_named(info.db, self.is_target) if info.db is not None else 0
        except MsprofFormatError:
            ops = 0  # the launches read; a table this note only counts does not refuse the rank
        return communication_note(self.pattern, ops, info.db)


def rank_reader(cfg: dict[str, Any], skip: int | None = 0) -> RankReader:
    pattern = cfg["kernel"]["name"]
    regex = kernel_regex(pattern)
    barrier = kernel_regex(cfg["timeline"]["barrier_kernel"]) if cfg["timeline"]["barrier_kernel"] else None
    is_barrier = (lambda name: bool(barrier.match(name))) if barrier else None
    return RankReader(
        pattern,
        lambda name: bool(regex.match(name)),
        is_barrier,
        cfg["timeline"]["call_chain_launches"],
        float(cfg["stats"]["max_plausible_us"]),
        # the trace draws the first trace_launches used launches, which follow the ``skip`` left out
        (skip or 0) + cfg["timeline"]["trace_launches"] if cfg["timeline"]["trace_launches"] else 0,
    )


def parse_node_range(run: StageRun, nodes: range) -> NodeRangeParse:
    """Every rank of ``nodes``: its target launches read, its launch plot written. A rank whose files are unreadable
    or refused is left out with its reason (coverage state ``refused``); the others go on. Raises RankIdentityError."""
    cfg = run.config
    rpn = cfg["cluster"]["ranks_per_node"]
    skip = run.params["skip"]
    reader = rank_reader(cfg, skip)
    plots = run.outputs["plots"]
    plots.mkdir(parents=True, exist_ok=True)
    rank_map = cfg["analyze"].get("rank_map") if cfg["mode"] == "analyze" else None
    found = read_node_infos(run.raw_dir("timeline_dir"), nodes, rpn, rank_map)
    infos = {p: i for in_node in found.per_node.values() for p, i in in_node.items()}
    sources = [s for node, in_node in found.per_node.items() for s in prof_sources(node, in_node, found.named)]
    assignments = assign_ranks(sources, rpn, load_identities(run.params["identity"]), cfg["cluster"]["infer_rank"])
    coverage = coverage_rows(nodes, rpn, assignments, infos, cfg["cluster"]["infer_rank"], found.refused)
    refuse_unreadable(coverage, found.unreadable)
    parsed = NodeRangeParse(infos, assignments, coverage)
    for row in coverage:
        rank = row["global_rank"]
        record = {
            "rank": rank,
            "node": row["node"],
            "device": row["device"],
            "pid": row["pid"],
            "prof": row["prof_dir"],
            "mapping": row["mapping"],
        }
        kernels = reader.read(infos[Path(row["prof_dir"])], row) if row["state"] == "found" else None
        if kernels is not None and kernels.schema_version:
            parsed.versions.add(kernels.schema_version)
        if kernels is None or row["state"] != "found":
            parsed.ranks.append({**record, "present": False, "reason": row["detail"], "symbol": None, **NO_LAUNCHES})
            write_text_atomic(plots / f"rank{rank}.svg", launch_svg(rank, [], None, row["detail"]))
            continue
        add_rank(parsed, record, kernels, skip)
        used = parsed.tables[-1]["used"]
        median = parsed.ranks[-1]["median_us"]
        write_text_atomic(
            plots / f"rank{rank}.svg", launch_svg(rank, (parsed.tables[-1]["dur_ns"][used] / 1000).tolist(), median)
        )
    return parsed


def refuse_unreadable(coverage: list[dict[str, Any]], unreadable: Mapping[Path, list[str]], most: int = 3) -> None:
    """The found ranks whose data directory holds entries that cannot be read, refused (coverage state ``refused``),
    the entries named with why: one unreadable file costs its own rank, as a corrupt db does, never the others."""
    for row in coverage:
        problems = unreadable.get(Path(row["prof_dir"])) if row["state"] == "found" else None
        if problems:
            more = f"; and {len(problems) - most} more" if len(problems) > most else ""
            row.update(state="refused", detail="refused: " + "; ".join(problems[:most]) + more)


def add_rank(parsed: NodeRangeParse, record: dict[str, Any], kernels: TargetKernels, skip: int) -> None:
    """A rank with launches: its launch columns and its record (summary, call chain) added to the range's."""
    columns = launch_columns(kernels, skip)
    parsed.tables.append({**columns, "rank": np.full(len(columns["launch"]), record["rank"], dtype=np.int64)})
    names = kernels.symbols
    parsed.symbols.update(names)
    parsed.ranks.append(
        {
            **record,
            "present": True,
            "symbol": ",".join(names),
            "reason": None,
            "source": kernels.source,
            **launch_summary(columns),
            "calls_between": calls_between(kernels),
            "call_chain_intervals": kernels.context_intervals,
            **host_api_record(kernels),
        }
    )


def parse_validations(
    parsed: NodeRangeParse, errors: list[str], first: int, last: int, rpn: int, infer_rank: str
) -> list[Validation]:
    """msprof's logged errors (an error), inferred or misplaced ranks and ranks without data (warnings)."""
    assignments, coverage = parsed.assignments, parsed.coverage
    validations = [
        Validation("no [ERROR] in mindstudio_profiler_log", not errors, "error", "; ".join(errors[:3]) or "clean")
    ]
    inferred = [a for a in assignments if a.inferred]
    if inferred:
        validations.append(
            Validation(
                "rank mapping",
                False,
                "warning",
                f"{len(inferred)} of {len(assignments)} sources numbered from their device id "
                f"(cluster.infer_rank: {infer_rank}; no identity sidecar, rank_id -1): inferred, not recorded",
            )
        )
    outside = [a for a in assignments if a.rank is not None and not first * rpn <= a.rank < (last + 1) * rpn]
    unknown = [a for a in assignments if a.rank is None]
    for label, found in (("rank outside its node directory", outside), ("rank not determinable", unknown)):
        if found:
            validations.append(
                Validation(
                    label,
                    False,
                    "warning",
                    "; ".join(describe(a) + (f" -> rank {a.rank}" if a.rank is not None else "") for a in found[:3]),
                )
            )
    absent = [r for r in coverage if r["state"] != "found"]
    if absent:
        named = "; ".join(
            f"rank {r['global_rank']} (node {r['node']} local rank {r['local_rank']}): {r['detail']}"
            for r in absent[:8]
        )
        validations.append(
            Validation(
                "every rank of these nodes has timeline data",
                False,
                "warning",
                named + (" ..." if len(absent) > 8 else ""),
            )
        )
    refused = [r for r in coverage if r["state"] == "refused"]
    if refused:
        validations.append(Validation("every rank's files can be read", False, "warning", refused_ranks(refused, 8)))
    return validations


def refused_ranks(rows: list[dict[str, Any]], most: int) -> str:
    """The refused ranks of coverage ``rows`` (at most ``most``), each with its reason (which names the file)."""
    named = "; ".join(f"rank {r['global_rank']} {r['detail']}" for r in rows[:most])
    return named + (f" and {len(rows) - most} more" if len(rows) > most else "")


def range_chips(infos: dict[Path, ProfInfo], refused: set[str]) -> list[str]:
    """The chip as the data says it: every PROF_'s info.json, and the NPU_INFO of one db of the range (one query a
    job), the first that reads: a refused rank's db must not cost the others theirs."""
    chips = set().union(*(prof_chips(i, False) for i in infos.values()))
    for info in infos.values():
        if info.db is not None and str(info.path) not in refused:
            try:
                return sorted(chips | prof_chips(info, True))
            except MsprofFormatError:
                continue
    return sorted(chips)


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
        run.outputs["ranks"],
        {
            "toolchain": run.toolchain,
            "source": run.source,
            "nodes": [first, last],
            "skip_launches": skip,
            "ranks": parsed.ranks,
        },
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
        "chips": range_chips(infos, {str(r["prof_dir"]) for r in coverage if r["state"] == "refused"}),
        "refused": {str(r["global_rank"]): r["detail"] for r in coverage if r["state"] == "refused"},
    }
    common = dict(
        upstream=gate.upstream,
        validations=validations,
        details=details,
        artifacts=[str(p) for p in run.outputs.values()],
    )
    if errors:
        return run.status("invalid", f"msprof logged errors: {errors[0]}", **common)
    span = f"node {first}" if first == last else f"nodes {first}-{last}"
    # Coverage is judged over every rank by the merge: one missing rank here must not throw away the rest.
    refused = [r for r in coverage if r["state"] == "refused"]
    return run.status(
        "ok",
        f"{span}: {len(found)} of {rpn * len(nodes)} ranks with data"
        + (f", kernel {', '.join(sorted(symbols))}" if symbols else "")
        + (f"; {refused_ranks(refused, 3)}" if refused else ""),
        **common,
    )
