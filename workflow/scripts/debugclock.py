"""Entry point of rule debugclock: parse the DebugClock files (collected, or analyze.debugclock_dir), per-role phase
statistics, the busiest slot against its peers, wait versus work,
and the ON/OFF overhead (dispatchprof.stages.debugclock)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import needed_parts_or_end, run_stage

# Collected: ends the job here when the collect part is not ok. Analyze mode needs no part.
NEEDED = needed_parts_or_end(snakemake, "debugclock") if snakemake.params["needed"] else {}

from dispatchprof.stages.debugclock import debugclock

run_stage(snakemake, "debugclock", lambda run: debugclock(run, NEEDED))
