"""Entry point of rule probe: parse the simulator's OPPROF_ tree (dispatchprof.stages.probe)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import needed_parts_or_end, run_stage  # noqa: E402

NEEDED = needed_parts_or_end(snakemake, "probe")  # ends the job here when a needed part is not ok (or disabled)

from dispatchprof.stages.probe import probe  # noqa: E402

run_stage(snakemake, "probe", lambda run: probe(run, NEEDED))
