"""Entry point of rule sweep: one sweep's points ranked (dispatchprof.stages.sweep): sweep.json (schema
dispatchprof.sweep/1), sweep.md and sweep.html. Reads its params, not the config: the points, the bootstrap."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic, write_text_atomic
from dispatchprof.shell.stage import setup_logging, skip_final_collection
from dispatchprof.shell.sweep import Point
from dispatchprof.stages.sweep import html_page, markdown, sweep_record

skip_final_collection()
setup_logging(snakemake.log[0])
points = [Point(**p) for p in snakemake.params.points]
inputs = dict(snakemake.input.items())
record = sweep_record(snakemake.wildcards.sweep, points, snakemake.params.runs, inputs, snakemake.params.bootstrap)
record["toolchain"] = "none" if snakemake.params.mode == "analyze" else snakemake.params.toolchain
simulated = record["toolchain"] == "sim"
write_json_atomic(snakemake.output.json, record)
write_text_atomic(snakemake.output.markdown, markdown(record, simulated))
write_text_atomic(snakemake.output.html, html_page(record, simulated))
