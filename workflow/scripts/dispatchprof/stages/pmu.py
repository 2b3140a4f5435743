"""Stage pmu: per-core PMU metrics of every rank and launch, grouped by role; columns not provided; the other
requested metric CSVs (Memory, L2Cache...) as per-role tables.

Imported after the entry script checked the needed parts (shell.stage.needed_parts_or_end): pandas is paid for
only by a pmu job that has data to read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dispatchprof.analysis.opprof_runs import (
    PerRank,
    RankRun,
    rank_runs,
    read_each_rank,
    refused_details,
    refused_validations,
)
from dispatchprof.analysis.rank_identity import (
    Coverage,
    RankIdentityError,
    coverage_of,
    load_identities,
    refused_sentence,
)
from dispatchprof.analysis.roles import (
    REPLAY_NOTE,
    busiest,
    core_grids,
    launches_per_rank,
    longest_cores,
    metric_set_by_role,
    ordering,
    per_core,
    per_rank_roles,
    role_boundaries,
    role_statistics,
    role_statistics_by_launch,
)
from dispatchprof.shell.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.shell.config import world_ranks
from dispatchprof.formats.msopprof import (
    PMU_METRIC_CSVS,
    OpprofFormatError,
    UNKNOWN_CHIP,
    Chip,
    columns_chip,
    judge_columns,
    metric_files,
    missing_columns,
    read_metric_csv,
    requested_metric_csvs,
    run_chip,
    soc_family,
)
from dispatchprof.formats.npu_smi import npu_smi_names
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status, Validation


@dataclass
class PmuRead:
    """What the OPPROF_ runs of every rank hold: the metric tables in long form, and what is missing from them."""

    runs: list[RankRun]
    frames: list[pd.DataFrame] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)  # PipeUtilization columns this tool version does not write
    chips: set[Chip] = field(
        default_factory=set
    )  # as each launch's data names it, else unknown with its columns' writer
    traces: list[str] = field(default_factory=list)
    ranks_with_data: set[int] = field(default_factory=set)
    absent_csvs: dict[str, list[str]] = field(
        default_factory=dict
    )  # requested metric set -> "rank r launch n" without it
    other_missing: dict[str, set[str]] = field(default_factory=dict)  # the other metric sets' missing columns
    new_columns: dict[str, set[str]] = field(
        default_factory=dict
    )  # metric set -> columns no fitting writer writes (kept)
    refused: PerRank[Any] = field(default_factory=PerRank)  # ranks left out: a file of theirs could not be read


@dataclass
class RunRead:
    """One launch's metric CSVs, read: its part of PmuRead."""

    absent: list[str]  # requested metric sets without a CSV
    frames: list[pd.DataFrame] = field(default_factory=list)
    chip: Chip | None = None
    missing: set[str] = field(default_factory=set)
    other_missing: dict[str, set[str]] = field(default_factory=dict)
    new_columns: dict[str, set[str]] = field(default_factory=dict)
    trace: str | None = None


def read_run(r: RankRun, requested: list[str], named: dict[int, Chip]) -> RunRead:
    """One launch's metric CSVs. Its chip: as its dump/op_basic_info.txt names it, else as the env capture's npu-smi
    names its node's, else as the run's msprof data names it (``named``, per node), else unknown with the writer its
    columns fit. Raises OpprofFormatError or OSError."""
    files = metric_files(r.run.directory)
    # The root layout (one launch in total) has no <n> folder: launch 0.
    keys = {
        "rank": r.rank,
        "node": r.node,
        "device": r.device,
        "launch": r.run.n if r.run.n is not None else 0,
        "kernel": r.kernel,
    }
    read = RunRead([metric for metric in requested if metric not in files])
    if "PipeUtilization" not in files:
        return read
    tables = {
        metric: read_metric_csv(files[metric]) for metric in PMU_METRIC_CSVS if metric in files
    }  # requested or found in an import
    named_chip = run_chip(r.run.directory, r.run.opprof) or named.get(r.node)
    verdict = judge_columns(
        {metric: header for metric, (header, _) in tables.items()}, named_chip.family if named_chip else None
    )
    read.chip = replace(named_chip, columns=verdict.described()) if named_chip else columns_chip(verdict)
    for metric, (header, long) in tables.items():
        gone = set(missing_columns(header, long, r.basic.get("Op Type"), verdict.expected[metric]))
        if metric == "PipeUtilization":
            read.missing = gone
        else:
            read.other_missing[metric] = gone
        if verdict.new[metric]:
            read.new_columns[metric] = set(verdict.new[metric])
        read.frames.append(long.assign(metric_set=metric, **keys))
    if (r.run.directory / "trace.json").is_file():
        read.trace = str(r.run.directory / "trace.json")
    return read


def env_chips(env_json: Path | None) -> dict[int, Chip]:
    """Node -> the chip the env capture's `npu-smi info` names there (collect mode), when it names exactly one; a node
    whose NPUs name several, or none, names nothing. Analyze mode captures no environment: {}."""
    if env_json is None or not Path(env_json).is_file():
        return {}
    named = {}
    for env in json.loads(Path(env_json).read_text()).get("nodes") or []:
        probe = (env.get("probes") or {}).get("npu_smi_info") or {}
        output = Path(probe["output_file"]) if probe.get("available") and probe.get("output_file") else None
        names = npu_smi_names(output.read_text(errors="replace")) if output is not None and output.is_file() else []
        if len(names) == 1:
            named[int(env["node"])] = Chip(
                names[0], soc_family(names[0]), f"npu-smi info Name on node {env['node']} (env capture)"
            )
    return named


# formats/msprof.py prof_chips writes the timeline's chips as "<name> (NPU_INFO of the db)" and "platform_version <v>
# (info.json)"; platform_version is msprof's chip id (a number), a name only where it spells one (soc_family knows it).
_TIMELINE_CHIP = re.compile(r"^(?:(?P<db>.+) \(NPU_INFO of the db\)|platform_version (?P<info>.+) \(info\.json\))$")


def timeline_chip(stats_json: Path | str | None) -> Chip | None:
    """The chip the collected run's msprof data names (timeline stats' chips), when it names exactly one by name: the
    same run's PROF_ trees, so every launch of it. None otherwise, and in analyze mode (no such input)."""
    if not stats_json or not Path(stats_json).is_file():
        return None
    found: dict[str, str] = {}
    for said in json.loads(Path(stats_json).read_text()).get("chips") or []:
        m = _TIMELINE_CHIP.match(str(said))
        name = (m.group("db") or m.group("info")).strip() if m else ""
        if name and soc_family(name) is not None:
            found.setdefault(
                name,
                "NPU_INFO of the timeline's msprof db"
                if m.group("db")
                else "platform_version in the timeline's info.json",
            )
    if len(found) != 1:
        return None
    name, source = next(iter(found.items()))
    return Chip(name, soc_family(name), source)


def named_chips(inputs: Mapping[str, Any], nodes: int) -> dict[int, Chip]:
    """Node -> the chip the run names outside the OPPROF_ trees: the node's npu-smi, else the run's msprof data."""
    named = env_chips(inputs.get("env"))
    from_timeline = timeline_chip(inputs.get("timeline_stats"))
    return named if from_timeline is None else {node: named.get(node, from_timeline) for node in range(nodes)}


def read_pmu_runs(raw: Path, cfg: Mapping[str, Any], identity: Any, named: dict[int, Chip] | None = None) -> PmuRead:
    """Every rank's runs under ``raw``, each launch's metric CSVs read. A rank with a file that cannot be read is left
    out whole, with why (read.refused); the others go on. Raises RankIdentityError."""
    rpn = cfg["cluster"]["ranks_per_node"]
    # Every metric CSV msopprof was asked for must be there for
    # every launch: a requested metric never disappears silently.
    requested = requested_metric_csvs(cfg["pmu"]["metrics"])
    unplaced: list[str] = []
    runs = rank_runs(
        raw,
        cfg["cluster"]["nodes"],
        rpn,
        cfg["kernel"]["name"],
        load_identities(identity),
        cfg["cluster"]["infer_rank"],
        unplaced,
    )
    per_rank = read_each_rank(runs, lambda r: read_run(r, requested, named or {}), (OpprofFormatError,), unplaced)
    read = PmuRead([r for r in runs if r.rank not in per_rank.refused], refused=per_rank)
    for rank, launches in per_rank.read.items():
        for r, run_read in launches:
            launch = r.run.n if r.run.n is not None else 0
            for metric in run_read.absent:
                read.absent_csvs.setdefault(metric, []).append(f"rank {rank} launch {launch}")
            if run_read.chip is None:
                continue
            read.ranks_with_data.add(rank)
            read.chips.add(run_read.chip)
            read.missing |= run_read.missing
            read.frames += run_read.frames
            for metric, gone in run_read.other_missing.items():
                read.other_missing.setdefault(metric, set()).update(gone)
            for metric, new in run_read.new_columns.items():
                read.new_columns.setdefault(metric, set()).update(new)
            if run_read.trace:
                read.traces.append(run_read.trace)
    return read


def unequal_launches(cores: pd.DataFrame, cfg: Mapping[str, Any]) -> str | None:
    """Every rank must bring the same number of launches (pmu.launch_count when collected here): a rank with fewer
    would make per-launch and pooled statistics compare different launches. The problem, or None."""
    launches = {
        rank: len(cores[cores["rank"] == rank][["kernel", "launch"]].drop_duplicates())
        for rank in launches_per_rank(cores)
    }
    wanted = cfg["pmu"]["launch_count"] if cfg["mode"] == "collect" else max(launches.values())
    short = sorted(rank for rank, n in launches.items() if n != wanted)
    if not short:
        return None
    return (
        f"launches per rank differ: {wanted} expected"
        + (" (pmu.launch_count)" if cfg["mode"] == "collect" else " (the most any rank has)")
        + ", but "
        + ", ".join(f"rank {r} has {launches[r]}" for r in short[:8])
        + (f" and {len(short) - 8} more ranks" if len(short) > 8 else "")
        + " (msopprof profiles at most the matching launches the driver "
        "makes: pmu.iterations, after pmu.launch_skip_before_match)"
    )


def pmu(run: StageRun, parts: Mapping[str, Status]) -> Status:
    """The stage, once its needed parts are ok: read, check coverage and launches, write metrics, cores, roles.json."""
    cfg = run.config
    world = world_ranks(cfg)
    requested = requested_metric_csvs(cfg["pmu"]["metrics"])
    try:
        read = read_pmu_runs(
            run.raw_dir("pmu_dir"), cfg, run.params["identity"], named_chips(run.inputs, cfg["cluster"]["nodes"])
        )
    except (OpprofFormatError, RankIdentityError) as exc:
        return run.status("invalid", str(exc))
    frames, ranks_with_data, absent_csvs, other_missing = (
        read.frames,
        read.ranks_with_data,
        read.absent_csvs,
        read.other_missing,
    )
    covered = coverage_of(world, ranks_with_data, cfg["stats"]["min_rank_coverage"])
    outside = sorted(set(ranks_with_data) - set(covered.found))
    if outside:
        return run.status(
            "invalid",
            f"PipeUtilization data for {name_ranks(outside)}, outside the config's {world} ranks (0..{world - 1})",
        )
    left_out = refused_sentence(read.refused.refused)
    if not covered.enough:
        return run.status(
            "invalid",
            f"PipeUtilization data for {covered.sentence()}: below "
            f"stats.min_rank_coverage ({covered.min_fraction:.0%} of the ranks)" + left_out,
            details={"coverage": {**covered.as_dict(), **refused_details(read.refused)}},
            validations=refused_validations(read.refused, "metric CSVs"),
        )
    if absent_csvs:
        listing = "; ".join(
            f"{m}: {', '.join(where[:5])}{' and more' if len(where) > 5 else ''}" for m, where in absent_csvs.items()
        )
        return run.status(
            "invalid", f"pmu.metrics asks for {', '.join(requested)} but msopprof wrote no CSV for {listing}"
        )
    metrics = pd.concat(frames, ignore_index=True)
    cores = per_core(metrics[metrics["metric_set"] == "PipeUtilization"], cfg["kernel"]["roles"])
    problem = unequal_launches(cores, cfg)
    if problem:
        return run.status("invalid", problem)
    stats = role_statistics(cores)
    metric_sets = {
        m: {
            **metric_set_by_role(metrics[metrics["metric_set"] == m], cores),
            "missing_columns": sorted(other_missing[m]),
        }
        for m in other_missing
    }
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_parquet_atomic(
        run.outputs["metrics"],
        metrics[
            [
                "rank",
                "node",
                "device",
                "launch",
                "kernel",
                "metric_set",
                "block_id",
                "sub_block_id",
                "core_kind",
                "metric",
                "value",
            ]
        ],
        meta,
    )
    write_parquet_atomic(run.outputs["cores"], cores, meta)
    result = roles_result(run, read, cores, stats, metric_sets, covered, parts)
    write_json_atomic(run.outputs["stats"], result)
    validations, bad = pmu_validations(result, read.missing, covered, metrics)
    validations += refused_validations(read.refused, "metric CSVs")
    if not bad.empty:
        sets = ", ".join(sorted(bad["metric_set"].unique()))
        return run.status(
            "invalid",
            f"{sets} has ratios outside [0, 1]: not a fraction as msopprof writes it",
            validations=validations,
        )
    reason = pmu_reason(result, cores, covered) + left_out
    return run.status(
        "ok",
        reason,
        validations=validations,
        upstream={k: p.state for k, p in parts.items()},
        artifacts=[str(p) for p in run.outputs.values()],
    )


def roles_result(
    run: StageRun,
    read: PmuRead,
    cores: pd.DataFrame,
    stats: dict[str, Any],
    metric_sets: dict[str, Any],
    covered: Coverage,
    parts: Mapping[str, Status],
) -> dict[str, Any]:
    """roles.json: the role statistics (pooled and per launch), the busiest role against its peers, heatmaps, orders."""
    cfg, runs, missing, chips, traces = run.config, read.runs, read.missing, read.chips, read.traces
    by_time, by_miss = ordering(stats, "aiv_time_us_median"), ordering(stats, "aiv_icache_miss_rate_median")
    entry = parts.get("pmu_collect").details.get("entry") if "pmu_collect" in parts else "import"
    result = {
        "toolchain": run.toolchain,
        "source": run.source,
        "entry": entry,
        "chips": chip_list(chips),
        "kernel": sorted({r.kernel for r in runs}),
        "roles_assumption": (
            "kernel.roles maps AIV index (vector rows by block_id, then sub-block) "
            "to roles: a configured assumption to verify against your commit's tiling"
        ),
        "launches": sorted(int(n) for n in cores["launch"].unique()),
        "roles_pooling": "role statistics pool every rank, core and launch; roles_by_launch holds each launch alone",
        "roles": stats,
        "roles_by_launch": role_statistics_by_launch(cores),
        "metric_sets": metric_sets,
        "busiest": busiest(cores, cfg["pmu"]["busiest_min_excess"], cfg["pmu"]["busiest_alpha"]),
        "roles_check": role_boundaries(cores, cfg["kernel"]["roles"]),
        "replay_note": REPLAY_NOTE,
        "heatmaps": core_grids(cores, cfg["kernel"]["roles"]),
        "order_by_aiv_time": by_time,
        "order_by_icache_miss_rate": by_miss,
        "longest_cores": longest_cores(cores),
        "per_rank": per_rank_roles(cores),
        "missing_columns": sorted(missing),
        "new_columns": {metric: sorted(new) for metric, new in sorted(read.new_columns.items())},
        "traces": traces,
        "rank_mapping": sorted({r.how for r in runs}),
        "inferred_ranks": sorted({r.rank for r in runs if r.how.startswith("inferred")}),
        "coverage": {**covered.as_dict(), "sentence": covered.sentence(), **refused_details(read.refused)},
    }
    result["summary"] = {
        "entry": entry,
        "launches": len(result["launches"]),
        "metric_sets": sorted(metric_sets),
        "roles": {
            role: {
                k: v[k]
                for k in (
                    "cores",
                    "aiv_time_us_median",
                    "aiv_time_us_max",
                    "aiv_icache_miss_rate_median",
                    "aiv_icache_miss_rate_max",
                    "busy_us_median_low",
                    "busy_us_median_high",
                    "no_pipe_us_median",
                )
            }
            for role, v in stats.items()
        },
        "busiest": result["busiest"],
        "chips": result["chips"],
        "missing_columns": sorted(missing),
        "new_columns": result["new_columns"],
        "coverage": result["coverage"],
    }
    return result


def chip_list(chips: set[Chip]) -> list[dict[str, str | None]]:
    """Every chip the launches were profiled on, as the data names it, with where; "chip unknown" with the writer the
    columns fit where nothing names it."""
    return [c.as_dict() for c in sorted(chips, key=lambda c: (c.name, c.source))]


def pmu_validations(
    result: Mapping[str, Any], missing: set[str], covered: Coverage, metrics: pd.DataFrame
) -> tuple[list[Validation], pd.DataFrame]:
    """The stage's checks, and the ratio rows outside [0, 1] (any makes the stage invalid)."""
    metric_sets = result["metric_sets"]
    validations = [
        Validation(
            "columns provided",
            not missing,
            "warning",
            f"not provided by this tool version: {', '.join(sorted(missing))}" if missing else "all",
        ),
        Validation("every rank has PMU data", covered.complete, "warning", f"analysed {covered.sentence()}"),
    ]
    new = result["new_columns"]
    validations.append(
        Validation(
            "columns of a known writer",
            not new,
            "warning",
            (
                "new columns: "
                + "; ".join(f"{m}: {', '.join(cols)}" for m, cols in new.items())
                + " (kept in the tables)"
            )
            if new
            else "all",
        )
    )
    unknown = [c for c in result["chips"] if c["name"] == UNKNOWN_CHIP]
    if unknown:
        validations.append(
            Validation(
                "chip named by the data", False, "warning", "; ".join(f"{c['name']} ({c['source']})" for c in unknown)
            )
        )
    if result["inferred_ranks"]:
        validations.append(
            Validation(
                "rank mapping",
                False,
                "warning",
                f"{len(result['inferred_ranks'])} ranks numbered from device ids (cluster.infer_rank): inferred",
            )
        )
    for m, v in metric_sets.items():
        gone = v["missing_columns"]
        validations.append(
            Validation(
                f"{m} columns provided",
                not gone,
                "warning",
                f"not provided by this tool version: {', '.join(gone)}" if gone else "all",
            )
        )
    ratios = metrics[metrics["metric"].str.endswith(("_ratio", "_miss_rate"))]
    bad = ratios[(ratios["value"] < 0) | (ratios["value"] > 1)]
    validations.append(
        Validation(
            "ratios and miss rates within [0, 1]", bad.empty, "error", f"{int(ratios['value'].notna().sum())} values"
        )
    )
    return validations, bad


def pmu_reason(result: Mapping[str, Any], cores: pd.DataFrame, covered: Coverage) -> str:
    stats, by_time, by_miss, metric_sets = (
        result["roles"],
        result["order_by_aiv_time"],
        result["order_by_icache_miss_rate"],
        result["metric_sets"],
    )
    top, busy = stats[by_time[0]], result["busiest"]
    n_cores = len(cores[["rank", "aiv_index"]].drop_duplicates())
    reason = (
        ("PARTIAL COVERAGE " if not covered.complete else "")
        + f"{n_cores} vector cores on {covered.sentence()}, {len(result['launches'])} "
        f"{'launch' if len(result['launches']) == 1 else 'launches'} each "
        "(role statistics pooled over launches, also per launch in roles.json)"
        + (f"; also {', '.join(sorted(metric_sets))} per role" if metric_sets else "")
        + "; "
        + (
            f"busiest against its peers: rank {busy['rank']} {busy['role']} (+{100 * busy['ranked_excess_ratio']:.0f}% "
            f"busy{'' if busy['ranked_by'] == 'busy_us_high' else ' without the scalar pipe'}, "
            f"+{busy['excess_us_per_launch']:.1f} us per core and launch over the role's median); "
            if busy
            else ""
        )
        + f"longest role {by_time[0]} (median aiv_time {top['aiv_time_us_median']:.1f} us, waits included); "
        f"highest I-cache miss rate {by_miss[0]} (median "
        f"{100 * (stats[by_miss[0]]['aiv_icache_miss_rate_median'] or 0):.1f}%)"
    )
    return reason
