"""Entry point of rule timeline_crosscheck: msprof-analyze compute_op_sum beside our per-rank statistics."""

import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic
from dispatchprof.shell.config import run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.tools.crosscheck import failed, run_crosscheck
from dispatchprof.shell.stage import setup_logging, skip_final_collection
from dispatchprof.shell.status import read_input_status

skip_final_collection()
setup_logging(snakemake.log[0])
cfg = recorded(run_config(snakemake.config, snakemake.wildcards.experiment), snakemake.rule)
out = {
    "tool": "msprof-analyze cluster -m compute_op_sum",
    "toolchain": "none" if cfg["mode"] == "analyze" else cfg["toolchain"],
}
timeline = read_input_status(snakemake.input.status)
root = Path(cfg["analyze"]["timeline_dir"] or "") if cfg["mode"] == "analyze" else Path(snakemake.params.raw)
if not timeline.ok:
    out.update(state="skipped", reason=f"needs timeline ({timeline.state})")
else:
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # msprof-analyze is looked for first; a user's export is read in place when msprof-analyze cannot modify
            # it, else from a copy that fits in the temporary directory (tools/crosscheck.py's module doc)
            ours = json.loads(Path(snakemake.input.stats).read_text())["per_rank"]
            out.update(
                run_crosscheck(
                    root,
                    cfg["mode"] == "analyze",
                    Path(tmp),
                    float(cfg["timeouts"]["timeline"]),
                    ours,
                    cfg["kernel"]["name"],
                )
            )
    except Exception as exc:  # a cross-check that fails is a note in the report, never a lost report
        logging.exception("the cross-check failed")
        out.update(failed(exc))
write_json_atomic(snakemake.output.json, out)
