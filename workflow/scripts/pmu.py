"""Entry point of rule pmu: per-core PMU metrics of every rank, grouped by role; columns not provided."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.stage import needed_parts_or_end  # noqa: E402

NEEDED = needed_parts_or_end(snakemake, "pmu")  # ends the job here when a needed part is not ok

import pandas as pd

from dispatchprof.analysis.opprof_runs import rank_runs
from dispatchprof.analysis.rank_identity import RankIdentityError, load_identities
from dispatchprof.analysis.roles import REPLAY_NOTE, busiest, core_grids, longest_cores, ordering, per_core, per_rank_roles, role_boundaries, role_statistics
from dispatchprof.atomic import write_json_atomic, write_parquet_atomic
from dispatchprof.config import world_ranks
from dispatchprof.formats.msopprof import OpprofFormatError, header_set, metric_files, missing_columns, read_metric_csv
from dispatchprof.formats.ranklog import name_ranks
from dispatchprof.stage import StageRun, run_stage
from dispatchprof.status import Status, Validation


def body(run: StageRun) -> Status:
    cfg = run.config
    parts = NEEDED
    world, rpn = world_ranks(cfg), cfg["cluster"]["ranks_per_node"]
    frames, missing, chips, traces, ranks_with_data = [], set(), set(), [], set()
    try:
        identities = load_identities(run.params["identity"])
        runs = rank_runs(run.raw_dir("pmu_dir"), cfg["cluster"]["nodes"], rpn, cfg["kernel"]["name"], identities, cfg["cluster"]["infer_rank"])
        for r in runs:
            files = metric_files(r.run.directory)
            if "PipeUtilization" not in files:
                continue
            ranks_with_data.add(r.rank)
            header, long = read_metric_csv(files["PipeUtilization"])
            chips.add(header_set(header)[0])
            missing.update(missing_columns(header, long, r.basic.get("Op Type")))
            frames.append(long.assign(rank=r.rank, node=r.node, device=r.device, launch=r.run.n or 0, kernel=r.kernel))
            if (r.run.directory / "trace.json").is_file():
                traces.append(str(r.run.directory / "trace.json"))
    except (OpprofFormatError, RankIdentityError) as exc:
        return run.status("invalid", str(exc))
    ranks = sorted(ranks_with_data)
    if len(ranks) != world:
        absent = sorted(set(range(world)) - set(ranks))
        return run.status(
            "invalid", f"PipeUtilization data for {len(ranks)} ranks but the config has {world}" + (f"; missing {name_ranks(absent)}" if absent else "")
        )
    metrics = pd.concat(frames, ignore_index=True)
    cores = per_core(metrics, cfg["kernel"]["roles"])
    stats = role_statistics(cores)
    meta = {"dispatchprof.toolchain": run.toolchain, "dispatchprof.source": run.source}
    write_parquet_atomic(
        run.outputs["metrics"], metrics[["rank", "node", "device", "launch", "kernel", "block_id", "sub_block_id", "core_kind", "metric", "value"]], meta
    )
    write_parquet_atomic(run.outputs["cores"], cores, meta)
    by_time, by_miss = ordering(stats, "aiv_time_us_median"), ordering(stats, "aiv_icache_miss_rate_median")
    entry = parts.get("pmu_collect").details.get("entry") if "pmu_collect" in parts else "import"
    result = {
        "toolchain": run.toolchain,
        "source": run.source,
        "entry": entry,
        "chips": sorted(chips),
        "kernel": sorted({r.kernel for r in runs}),
        "roles_assumption": "kernel.roles maps AIV index (vector rows by block_id, then sub-block) to roles: a configured assumption to verify against your commit's tiling",
        "roles": stats,
        "busiest": busiest(cores, cfg["pmu"]["busiest_min_excess"]),
        "roles_check": role_boundaries(cores, cfg["kernel"]["roles"]),
        "replay_note": REPLAY_NOTE,
        "heatmaps": core_grids(cores, cfg["kernel"]["roles"]),
        "order_by_aiv_time": by_time,
        "order_by_icache_miss_rate": by_miss,
        "longest_cores": longest_cores(cores),
        "per_rank": per_rank_roles(cores),
        "missing_columns": sorted(missing),
        "traces": traces,
        "rank_mapping": sorted({r.how for r in runs}),
    }
    result["summary"] = {
        "entry": entry,
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
        "missing_columns": sorted(missing),
    }
    write_json_atomic(run.outputs["stats"], result)
    validations = [
        Validation("columns provided", not missing, "warning", f"not provided by this tool version: {', '.join(sorted(missing))}" if missing else "all")
    ]
    ratios = metrics[metrics["metric"].str.endswith(("_ratio", "_miss_rate"))]["value"].dropna()
    validations.append(Validation("ratios and miss rates within [0, 1]", bool(((ratios >= 0) & (ratios <= 1)).all()), "error", f"{len(ratios)} values"))
    if not validations[-1].passed:
        return run.status("invalid", "PipeUtilization has ratios outside [0, 1]: not a fraction as msopprof writes it", validations=validations)
    top, busy = stats[by_time[0]], result["busiest"]
    reason = (
        f"{len(cores)} vector cores on {world} ranks; "
        + (f"busiest against its peers: rank {busy['rank']} {busy['role']} (+{busy['excess_us']:.1f} us busy over the role's median); " if busy else "")
        + f"longest role {by_time[0]} (median aiv_time {top['aiv_time_us_median']:.1f} us, waits included); "
        f"highest I-cache miss rate {by_miss[0]} (median {100 * (stats[by_miss[0]]['aiv_icache_miss_rate_median'] or 0):.1f}%)"
    )
    return run.status("ok", reason, validations=validations, upstream={k: p.state for k, p in parts.items()}, artifacts=[str(p) for p in run.outputs.values()])


run_stage(snakemake, "pmu", body)
