"""Entry point of rule compare: one A/B comparison in every layer both sides have; refuses when precision was not ok
on either side. comparison.json (schema dispatchprof.comparison/2), and comparison.html / .md from one model."""

import datetime
import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import jinja2

from dispatchprof.analysis import compare_sides
from dispatchprof.report.comparison_page import page, picture
from dispatchprof.report.html import html_section
from dispatchprof.report.markdown import markdown_section
from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.shell.config import run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.shell.stage import setup_logging, skip_final_collection
from dispatchprof.shell.status import read_input_status
from dispatchprof.stages.comparison import SCHEMA, comparison, load_side

skip_final_collection()
setup_logging(snakemake.log[0])
a, b = snakemake.wildcards.a, snakemake.wildcards.b
runs = {"a": snakemake.params.a_runs, "b": snakemake.params.b_runs}
configs = {side: recorded(run_config(snakemake.config, names[0]), snakemake.rule) for side, names in runs.items()}
mode = configs["a"]["mode"]
result = {
    "schema": SCHEMA,
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
    result.update(state="refused", reason="; ".join(problems), notes=notes, verdict="refused", rows=[], expectations=[])
else:
    inputs = dict(snakemake.input.items())
    sides = {side: load_side(side.upper(), side, names, inputs) for side, names in runs.items()}
    clean = {side: {k: v for k, v in cfg.items() if not k.startswith("_")} for side, cfg in configs.items()}
    boot = configs["a"]["stats"]["bootstrap"]
    result.update(state="ok", notes=notes, **comparison(sides["a"], sides["b"], clean, boot, snakemake.params.expect))
    result["reason"] = result["answer"]
write_json_atomic(snakemake.output.json, result)
svg = picture(result["rows"], result.get("changed", []))
write_text_atomic(snakemake.output.picture, svg or '<svg xmlns="http://www.w3.org/2000/svg"/>')
sections = page(result, svg, Path(snakemake.output.picture).name)
env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(snakemake.scriptdir).resolve().parent / "templates")), autoescape=True
)
html = env.get_template("comparison.html.j2").render(c=result, sections=[html_section(s) for s in sections])
write_text_atomic(snakemake.output.html, html)
head = [f"# Comparison: {a} (A) vs {b} (B)", ""]
if result["toolchain"] == "sim":
    head += ["**SIMULATED DATA: not a measurement.**", ""]
head += [f"**{result['state']}**: {result['reason']}", ""]
write_text_atomic(snakemake.output.markdown, "\n".join(head) + "\n" + "\n".join(markdown_section(s) for s in sections))
