# Ascend dispatch profiling: the DAG from env capture through correctness, baseline, system timeline,
# PMU and PC sampling to the report. See README.md; every config key is explained in config/README.md.


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/env_capture.smk"
include: "workflow/rules/build.smk"
include: "workflow/rules/correctness.smk"
include: "workflow/rules/baseline.smk"
include: "workflow/rules/timeline.smk"
include: "workflow/rules/pmu.smk"
include: "workflow/rules/pcsampling.smk"
include: "workflow/rules/pipe_timeline.smk"
include: "workflow/rules/debugclock.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/sweep.smk"
include: "workflow/rules/history.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/not_provided.smk"  # after the rules whose outputs it writes in analyze mode


# After every include: each rule is placed by what it declares (NPU jobs submitted, the rest local or on a CPU partition).
NPU_RULES, CANN_RULES, CPU_RULES = place_rules()
check_fingerprints()
note_lock_at_exit()
run_from_disk()


rule all:
    input:
        [f"results/{run}/report/report.html" for run in EXPERIMENTS if not RUNS[run].get("_sweep")],
        [f"results/compare/{a}_vs_{b}/comparison.json" for a, b in COMPARISONS],
        expand("results/sweep/{sweep}/sweep.json", sweep=SWEEPS),


onstart:
    RUN_STARTED.append(True)
    refuse_unwritable_results()
    record_invocation()
    # Jobs are submitted (SLURM): say where each kind goes before anything is queued.
    if not workflow.local_exec:
        sys.stderr.write(placement_note(NPU_RULES, CANN_RULES, CPU_RULES))


onsuccess:
    end_of_run()


onerror:
    end_of_run()
