"""Entry point of rule timeline_crosscheck: msprof-analyze compute_op_sum beside our per-rank statistics."""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic
from dispatchprof.shell.config import run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.tools.crosscheck import compare_ranks, mirror_prof_tree, run_msprof_analyze, their_ranks
from dispatchprof.formats.prof_dirs import read_data_dir
from dispatchprof.formats.prof_tree import find_data_dirs
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
    with tempfile.TemporaryDirectory() as tmp:
        # the user's export is read in place and never modified: msprof-analyze, which opens dbs read-write, gets a copy
        given = mirror_prof_tree(root, Path(tmp) / "input") if cfg["mode"] == "analyze" else root
        db, reason = run_msprof_analyze(given, Path(tmp) / "output", float(cfg["timeouts"]["timeline"]))
        if db is None:
            out.update(state="skipped" if "not installed" in reason else "failed", reason=reason)
        else:
            ours = json.loads(Path(snakemake.input.stats).read_text())["per_rank"]
            infos = [read_data_dir(d) for d in find_data_dirs(root)]
            # A PROF_ without device data (a missing rank) has no rank_id to judge by; it must not turn the mapping off.
            with_data = [i for i in infos if i.devices and i.has_kernel_tables]
            rank_ids_set = bool(with_data) and all(i.rank_id is not None for i in with_data)
            out.update(
                state="ok", reason="ran", **compare_ranks(their_ranks(db, cfg["kernel"]["name"]), ours, rank_ids_set)
            )
write_json_atomic(snakemake.output.json, out)
