"""The comparison job's work between its files and its answer: each side's layers read from its runs' files (a stage
that is not ok, or a file that cannot be read, is a layer that side lacks, with the reason), and the comparison
record (schema dispatchprof.comparison/2) from today's latency comparison and the rows of every layer."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from dispatchprof.analysis import compare_layers as cl
from dispatchprof.analysis import compare_sides
from dispatchprof.analysis.compare import compare, refused_factors, unchecked_factors
from dispatchprof.shell.status import Status, StatusError, read_input_status

SCHEMA = "dispatchprof.comparison/2"
# Layer data -> (status input, file input, reader) in the rule's named inputs (rules/compare.smk, LAYER_FILES).
READERS: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "timeline": ("timeline", "timeline_stats", lambda p: json.loads(Path(p).read_text())),
    "pmu": ("pmu", "pmu_cores", pd.read_parquet),
    "pcsampling": ("pcsampling", "pcsampling_stalls", lambda p: json.loads(Path(p).read_text())),
    "debugclock": ("debugclock", "debugclock_segments", pd.read_parquet),
}


LATENCY_COLUMNS = ["scope", "rank", "iteration", "warmup", "us"]


def read_latency(path: str) -> pd.DataFrame:
    """The columns of a side's latency table the comparison reads, its scope as a category: a fifth of the time of
    the whole table with its strings (benchmarks/compare_scale.py)."""
    return pd.read_parquet(path, columns=LATENCY_COLUMNS, read_dictionary=["scope"])


def safe_status(path: str) -> Status:
    """An input's status, or for a file that is not where a stage's status lives (a recorded side copied to a
    directory of another layout) one that says it cannot be read."""
    try:
        return read_input_status(path)
    except (StatusError, OSError, ValueError) as exc:
        return Status("unknown", "unknown", "invalid", f"{path} cannot be read ({exc})", toolchain="none")


def read_layer(
    inputs: Mapping[str, str], side: str, run: str, data: str, missing: Mapping[str, str] | None = None
) -> tuple[Any, str | None]:
    """One run's table of one layer, or None and why not (``missing``: a recorded side's absent files, by input
    name, e.g. pmu_cores -> pmu/cores.parquet)."""
    status_key, file_key, reader = READERS[data]
    lacking = [f"{missing[key]} missing" for key in (status_key, file_key) if missing and key in missing]
    if lacking:
        return None, f"{run}: {', '.join(lacking)}"
    status_path = inputs.get(f"{side}_{status_key}_{run}")
    if status_path is None:
        return None, f"{run}: {data} is not run (debugclock.when: never)"
    status = safe_status(status_path)
    if not status.ok:
        return None, f"{run}: {data} is {status.state} ({status.reason})"
    try:
        return reader(inputs[f"{side}_{file_key}_{run}"]), None
    except (OSError, ValueError, KeyError) as exc:
        return None, f"{run}: {data} could not be read ({type(exc).__name__}: {exc})"


def load_side(
    label: str, side: str, runs: Sequence[str], inputs: Mapping[str, str], missing: Mapping[str, str] | None = None
) -> cl.Side:
    """Side A or B from the named inputs of its runs (one entry per repeat, tables tagged with ``_repeat``).
    ``missing``: the files a recorded side lacks (input name -> path under its directory); each makes its layer
    "not comparable: <file> missing", never an exception. A file that cannot be read likewise."""
    missing = missing or {}
    out = cl.Side(label)
    for i, run in enumerate(runs):
        for name, data, reader, into in (
            ("latency", "latency", read_latency, out.latency),
            ("baseline_stats", "baseline", lambda p: json.loads(Path(p).read_text()), out.baseline),
        ):
            path = inputs.get(f"{side}_{name}_{run}")
            if name in missing or path is None:
                out.missing.setdefault(data, f"{run}: {missing.get(name, name)} missing")
                continue
            try:
                into.append(reader(path))
            except (OSError, ValueError, KeyError) as exc:
                out.missing.setdefault(data, f"{run}: {path} could not be read ({type(exc).__name__}: {exc})")
        if f"{side}_correctness_{run}" in inputs:
            out.precision.append(safe_status(inputs[f"{side}_correctness_{run}"]).state)
        else:
            out.missing.setdefault("precision", f"{run}: {missing.get('correctness', 'correctness status')} missing")
        for data in READERS:
            table, why = read_layer(inputs, side, run, data, missing)
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


@dataclass
class ComparisonJob:
    """What the compare job has: each side's name (slug), runs, the named inputs (rules/compare.smk), each
    experiment side's merged config (None for a recorded side: its directory's config.json is read), the recorded
    sides' directories and the files they lack (input name -> path under the directory)."""

    names: Mapping[str, str]
    runs: Mapping[str, Sequence[str]]
    inputs: Mapping[str, str]
    configs: Mapping[str, Mapping[str, Any] | None]
    directories: Mapping[str, str] = field(default_factory=dict)
    missing: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    bootstrap: Mapping[str, int] = field(default_factory=lambda: {"resamples": 2000, "seed": 0})
    expect: Mapping[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def recorded_config(job: ComparisonJob, side: str) -> dict[str, Any]:
    """What a recorded side's run recorded (config.json's ``config``); without it, only the toolchain of its
    baseline status, and a note that the rest cannot be checked."""
    run = job.runs[side][0]
    lacks = job.missing.get(side, {})
    try:
        cfg = dict(json.loads(Path(job.inputs[f"{side}_config_{run}"]).read_text())["config"])
    except (KeyError, OSError, ValueError, TypeError) as exc:
        why = "config.json missing" if "config" in lacks else f"config.json cannot be read ({type(exc).__name__})"
        job.notes.append(f"{job.directories[side]}: {why}: its shape, cluster size and kernel cannot be checked")
        cfg = {}
    if "toolchain" not in cfg and f"{side}_baseline_{run}" in job.inputs:
        cfg["toolchain"] = safe_status(job.inputs[f"{side}_baseline_{run}"]).toolchain
    return cfg


def toolchain_of(cfg: Mapping[str, Any]) -> str:
    return "none" if cfg.get("mode") == "analyze" else str(cfg.get("toolchain", "unknown"))


def side_problems(job: ComparisonJob) -> list[str]:
    """Precision not ok, or no latency baseline, on a run of either side: the comparison is refused. A recorded side
    that lacks the file is a note (its layer is "not comparable"), not a refusal."""
    problems = []
    for side, names in job.runs.items():
        lacks = job.missing.get(side, {})
        for run in names:
            if "correctness" in lacks:
                job.notes.append(f"{run}: {lacks['correctness']} missing: precision is not comparable")
            else:
                correctness = safe_status(job.inputs[f"{side}_correctness_{run}"])
                if correctness.state == "disabled":
                    job.notes.append(
                        f"{run}: precision was not checked (analyze mode); the comparison assumes both sides were "
                        "correct"
                    )
                elif not correctness.ok:
                    problems.append(f"{run}: precision not ok ({correctness.state}: {correctness.reason})")
            if "baseline" in lacks:
                job.notes.append(f"{run}: {lacks['baseline']} missing: latency is not comparable")
                continue
            baseline = safe_status(job.inputs[f"{side}_baseline_{run}"])
            if not baseline.ok:
                problems.append(f"{run}: no latency baseline ({baseline.state}: {baseline.reason})")
    return problems


def factor_problems(job: ComparisonJob, configs: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The sides' configs as compared (no ``_`` keys, the effective toolchain; with a recorded side only the
    sections both record) and the refusal naming the factors that make them incomparable (analysis/compare.py,
    REFUSING)."""
    clean = {s: {k: v for k, v in cfg.items() if not k.startswith("_")} for s, cfg in configs.items()}
    for cfg in clean.values():
        cfg["toolchain"] = toolchain_of(cfg)
    if job.directories:
        shared = set(clean["a"]) & set(clean["b"])
        clean = {s: {k: v for k, v in cfg.items() if k in shared} for s, cfg in clean.items()}
    problems = []
    refused = refused_factors(clean["a"], clean["b"])
    if refused:
        problems.append(
            f"the sides differ in {', '.join(refused)}: sides of different shape, cluster size, toolchain or kernel "
            "measure different things"
        )
    unchecked = unchecked_factors(clean["a"], clean["b"])
    if unchecked:
        job.notes.append(f"not checked (one side does not record them): {', '.join(unchecked)}")
    return clean, problems


def comparison_record(job: ComparisonJob) -> dict[str, Any]:
    """comparison.json's content: refused (naming why) when precision failed, a baseline is missing or the sides
    differ in a refusing factor; else the rows of every layer both sides have."""
    configs = {s: dict(cfg) if cfg is not None else recorded_config(job, s) for s, cfg in job.configs.items()}
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "a": job.names["a"],
        "b": job.names["b"],
        "runs": {s: list(r) for s, r in job.runs.items()},
        "recorded": dict(job.directories),
        "toolchain": toolchain_of(configs["a"]),
        "generated": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    problems = side_problems(job)
    clean, refusals = factor_problems(job, configs)
    problems += refusals
    result["sides"], side_notes = compare_sides.sides(job.names, configs, job.runs, job.inputs)  # builds
    job.notes.extend(side_notes)
    for side, directory in job.directories.items():
        result["sides"][side]["recorded"] = directory
        job.notes.append(f"{side.upper()} is the recorded results directory {directory}, compared from its files")
    if problems:
        result.update(state="refused", reason="; ".join(problems), verdict="refused", rows=[], expectations=[])
        result["notes"] = job.notes
        return result
    sides = {s: load_side(s.upper(), s, names, job.inputs, job.missing.get(s)) for s, names in job.runs.items()}
    experiment = next((configs[s] for s in ("a", "b") if s not in job.directories), None)
    boot = experiment["stats"]["bootstrap"] if experiment and "stats" in experiment else job.bootstrap
    result.update(state="ok", notes=job.notes, **comparison(sides["a"], sides["b"], clean, boot, job.expect))
    result["reason"] = result["answer"]
    return result
