"""Stage timeline_rank: drill into one rank (timeline.detail_ranks, or any rank on demand).

Re-reads that rank's PROF_ for its whole call chain (every launch interval, not the parse jobs' window) and
writes its launch table as CSV for a spreadsheet, its summary and a plot.
"""

from __future__ import annotations

import json
from pathlib import Path

from dispatchprof.analysis.timeline import calls_between, kernel_regex, launch_columns, launch_summary
from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.formats.msprof import MsprofFormatError
from dispatchprof.formats.prof_dirs import read_data_path
from dispatchprof.formats.text import csv_text
from dispatchprof.formats.target_kernels import read_target_kernels
from dispatchprof.report.rank_svg import launch_svg
from dispatchprof.shell.stage import StageRun
from dispatchprof.shell.status import Status


def timeline_rank(run: StageRun) -> Status:
    """One rank's part: its launch table (CSV), summary and plot, from its whole call chain."""
    gate = run.gate({"timeline_parse": run.inputs["part_status"]})
    if not gate.open:
        return run.skipped(gate)
    rank = int(run.params["rank"])
    records = {r["rank"]: r for r in json.loads(Path(run.inputs["ranks"]).read_text())["ranks"]}
    record = records.get(rank)
    if record is None or not record["present"]:
        return run.status(
            "invalid",
            f"rank {rank} has no timeline data: {(record or {}).get('reason') or 'not in the parse output'}",
            upstream=gate.upstream,
        )
    regex = kernel_regex(run.config["kernel"]["name"])
    try:
        kernels = read_target_kernels(
            read_data_path(Path(record["prof"])), lambda name: bool(regex.match(name)), 0, with_ids=True
        )
    except MsprofFormatError as exc:
        return run.status("invalid", str(exc), upstream=gate.upstream)
    columns = launch_columns(kernels, run.params["skip"])
    summary = launch_summary(columns)
    table = {
        **{name: columns[name] for name in ("launch", "used", "start_ns", "dur_ns")},
        **{f"{name}_us": columns[f"{name}_ns"] / 1000 for name in ("dur", "gap", "interval")},
        **{name: columns[name] for name in ("stream", "task_id")},
    }
    write_text_atomic(
        run.outputs["table"],
        f"# toolchain: {run.toolchain}; rank {rank}; times of this rank's own clock\n" + csv_text(table),
    )
    used = columns["used"]
    write_text_atomic(
        run.outputs["plot"], launch_svg(rank, (columns["dur_ns"][used] / 1000).tolist(), summary["median_us"])
    )
    chain = calls_between(kernels)
    write_json_atomic(
        run.outputs["detail"],
        {
            "toolchain": run.toolchain,
            **{k: record.get(k) for k in ("rank", "node", "device", "pid", "prof", "symbol")},
            **summary,
            "calls_between": chain,
            "call_chain_scope": f"every launch interval of this rank ({kernels.context_intervals})",
        },
    )
    slowest_other = chain[0]["name"] if chain else "none"
    return run.status(
        "ok",
        f"rank {rank}: {summary['launches']} launches used, median {summary['median_us']:.1f} "
        f"us; longest other kernel between launches: {slowest_other}",
        upstream=gate.upstream,
        artifacts=[str(p) for p in run.outputs.values()],
    )
