"""Entry point of rule compare: one A/B comparison in every layer both sides have; refuses when precision was not ok
on either side. comparison.json (schema dispatchprof.comparison/2), and comparison.html / .md from one model."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

import jinja2

from dispatchprof.report.comparison_page import page, picture
from dispatchprof.report.html import html_section
from dispatchprof.report.markdown import markdown_section
from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.shell.config import run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.shell.stage import setup_logging, skip_final_collection
from dispatchprof.stages.comparison import ComparisonJob, comparison_record

skip_final_collection()
setup_logging(snakemake.log[0])
a, b = snakemake.wildcards.a, snakemake.wildcards.b
runs = {"a": snakemake.params.a_runs, "b": snakemake.params.b_runs}
directories = dict(snakemake.params.recorded)  # side -> recorded results directory (compared from its files)
job = ComparisonJob(
    names={"a": a, "b": b},
    runs=runs,
    inputs=dict(snakemake.input.items()),
    # an experiment's merged config; a recorded side's is what its directory recorded (config.json)
    configs={
        s: None if s in directories else recorded(run_config(snakemake.config, names[0]), snakemake.rule)
        for s, names in runs.items()
    },
    directories=directories,
    missing={side: dict(files) for side, files in snakemake.params.missing.items()},
    bootstrap=snakemake.config["stats"]["bootstrap"],
    expect=snakemake.params.expect,
)
result = comparison_record(job)
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
