"""Entry point of rule compare: one A/B comparison; refuses when precision was not ok on either side."""

import datetime
import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import jinja2
import pandas as pd

from dispatchprof.analysis import compare_sides
from dispatchprof.analysis.compare import compare
from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.shell.config import run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.shell.stage import setup_logging, skip_final_collection
from dispatchprof.shell.status import read_input_status

skip_final_collection()
setup_logging(snakemake.log[0])
a, b = snakemake.wildcards.a, snakemake.wildcards.b
runs = {"a": snakemake.params.a_runs, "b": snakemake.params.b_runs}
configs = {side: recorded(run_config(snakemake.config, names[0]), snakemake.rule) for side, names in runs.items()}
mode = configs["a"]["mode"]
result = {
    "schema": "dispatchprof.comparison/1",
    "a": a,
    "b": b,
    "runs": runs,
    "toolchain": "none" if mode == "analyze" else configs["a"]["toolchain"],
    "generated": datetime.datetime.now().isoformat(timespec="seconds"),
}
problems, notes = [], []
for side, names in runs.items():
    for run in names:
        correctness = read_input_status(snakemake.input[f"{side}_correctness_{run}"])
        baseline = read_input_status(snakemake.input[f"{side}_baseline_{run}"])
        if correctness.state == "disabled":
            notes.append(
                f"{run}: precision was not checked (analyze mode); the comparison assumes both sides were correct"
            )
        elif not correctness.ok:
            problems.append(f"{run}: precision not ok ({correctness.state}: {correctness.reason})")
        if not baseline.ok:
            problems.append(f"{run}: no latency baseline ({baseline.state}: {baseline.reason})")
result["sides"], side_notes = compare_sides.sides({"a": a, "b": b}, configs, runs, snakemake.input)  # builds
notes += side_notes
if problems:
    result.update(state="refused", reason="; ".join(problems), notes=notes)
else:
    tables = {
        side: [pd.read_parquet(snakemake.input[f"{side}_latency_{run}"]) for run in names]
        for side, names in runs.items()
    }
    boot = configs["a"]["stats"]["bootstrap"]
    clean = {side: {k: v for k, v in cfg.items() if not k.startswith("_")} for side, cfg in configs.items()}
    result.update(
        state="ok",
        notes=notes,
        **compare(tables["a"], tables["b"], clean["a"], clean["b"], boot["resamples"], boot["seed"]),
    )
    med = result["kernel"]["per_iteration_max_median"]
    result["reason"] = (
        f"{result['verdict']}: per-iteration-max median {med['a']:.1f} -> {med['b']:.1f} us "
        f"(B - A {med['difference']:+.1f} us, 95% CI [{med['ci95'][0]:+.1f}, {med['ci95'][1]:+.1f}], "
        f"hierarchical bootstrap over {med['repeats'][0]} / {med['repeats'][1]} repeats)"
    )
write_json_atomic(snakemake.output.json, result)
env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(snakemake.scriptdir).resolve().parent / "templates")), autoescape=True
)
write_text_atomic(snakemake.output.html, env.get_template("comparison.html.j2").render(c=result))
