"""The comparison job's work between its files and its answer: each side's layers read from its runs' files (a stage
that is not ok, or a file that cannot be read, is a layer that side lacks, with the reason), and the comparison
record (schema dispatchprof.comparison/2) from today's latency comparison and the rows of every layer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from dispatchprof.analysis import compare_layers as cl
from dispatchprof.analysis.compare import compare
from dispatchprof.shell.status import read_input_status

SCHEMA = "dispatchprof.comparison/2"
# Layer data -> (status input, file input, reader) in the rule's named inputs (rules/compare.smk, LAYER_FILES).
READERS: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "timeline": ("timeline", "timeline_stats", lambda p: json.loads(Path(p).read_text())),
    "pmu": ("pmu", "pmu_cores", pd.read_parquet),
    "pcsampling": ("pcsampling", "pcsampling_stalls", lambda p: json.loads(Path(p).read_text())),
    "debugclock": ("debugclock", "debugclock_segments", pd.read_parquet),
}


def read_layer(inputs: Mapping[str, str], side: str, run: str, data: str) -> tuple[Any, str | None]:
    """One run's table of one layer, or None and why not."""
    status_key, file_key, reader = READERS[data]
    status_path = inputs.get(f"{side}_{status_key}_{run}")
    if status_path is None:
        return None, f"{run}: {data} is not run (debugclock.when: never)"
    status = read_input_status(status_path)
    if not status.ok:
        return None, f"{run}: {data} is {status.state} ({status.reason})"
    try:
        return reader(inputs[f"{side}_{file_key}_{run}"]), None
    except (OSError, ValueError, KeyError) as exc:
        return None, f"{run}: {data} could not be read ({type(exc).__name__}: {exc})"


def load_side(label: str, side: str, runs: Sequence[str], inputs: Mapping[str, str]) -> cl.Side:
    """Side A or B from the named inputs of its runs (one entry per repeat, tables tagged with ``_repeat``)."""
    out = cl.Side(label)
    for i, run in enumerate(runs):
        out.latency.append(pd.read_parquet(inputs[f"{side}_latency_{run}"]))
        out.baseline.append(json.loads(Path(inputs[f"{side}_baseline_stats_{run}"]).read_text()))
        out.precision.append(read_input_status(inputs[f"{side}_correctness_{run}"]).state)
        for data in READERS:
            table, why = read_layer(inputs, side, run, data)
            if why:
                out.missing.setdefault(data, why)
            elif isinstance(table, pd.DataFrame):
                getattr(out, data).append(table.assign(_repeat=i))
            else:
                getattr(out, data).append(table)
    return out


def comparison(
    a: cl.Side,
    b: cl.Side,
    configs: Mapping[str, Mapping[str, Any]],
    bootstrap: Mapping[str, int],
    expect: Mapping[str, str],
) -> dict[str, Any]:
    """The comparison's record: today's latency detail, the rows of every layer, the answer line, the margin and
    the expectations."""
    a, b, ranks_note = cl.common_ranks(a, b)
    latency = compare(a.latency, b.latency, configs["a"], configs["b"], bootstrap["resamples"], bootstrap["seed"])
    rows = cl.all_rows(a, b, latency)
    keyed = cl.by_key(rows)
    margin = cl.margin_block(rows, latency)
    kernel = keyed.get("latency.kernel.median")
    warnings = list(latency["warnings"])
    if not margin.get("run_to_run_variance", True):
        warnings.append("one repeat per side: the CI holds no run-to-run variance (config repeats: 4 or more)")
    changed = cl.costliest_first(rows)
    return {
        **latency,
        "verdict": kernel.verdict if kernel else "not comparable",
        "answer": cl.answer_line(rows),
        "changed": [r.key for r in changed],
        "rows": [r.to_json() for r in rows],
        "margin": margin,
        "expectations": cl.expectations(expect, rows),
        "warnings": warnings,
        "ranks": ranks_note,
        "rule": (
            "each row: improved / regressed when its difference survives Holm's correction at "
            f"{cl.ALPHA} over every tested row, unchanged when its 95% CI lies inside its equivalence margin "
            f"(max({100 * cl.MARGIN_FLOOR:.0f}% of A, the spread between units)), else inconclusive; latency CIs "
            "from a hierarchical bootstrap (repeats, then iterations within each repeat; seeded), PMU and DebugClock "
            "with launches as units, PC sampling with ranks; the verdict is the kernel median's"
        ),
    }
