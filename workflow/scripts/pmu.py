"""Entry point of rule pmu: per-core PMU metrics of every rank and launch, grouped by role; columns not provided;
the other requested metric CSVs (Memory, L2Cache...) as per-role tables (dispatchprof.stages.pmu)."""

import sys

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.stage import needed_parts_or_end, run_stage

NEEDED = needed_parts_or_end(snakemake, "pmu")  # ends the job here when a needed part is not ok: no pandas paid for

from dispatchprof.stages.pmu import pmu

run_stage(snakemake, "pmu", lambda run: pmu(run, NEEDED))
