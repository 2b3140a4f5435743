# debugclock: per-role phase evidence from the repository's DebugClock points (a DEBUG_CLOCK_ON build in its own
# worktree), the fallback when kernel replay (PMU) is not ok; or imported from analyze.debugclock_dir.


def debugclock_resources():
    """collective_resources, with a SLURM runtime for every command of the stage: the DEBUG build and each OFF
    and ON run have timeouts.debugclock each."""
    import math

    resources = collective_resources("debugclock")
    resources["runtime"] = lambda w: math.ceil(
        RUNS[w.experiment]["timeouts"]["debugclock"]
        * (1 + 2 * RUNS[w.experiment]["debugclock"]["runs"])
        / 60
    ) + (RUNS[w.experiment]["slurm"]["runtime_margin_min"])
    return resources


if COLLECT:

    rule debugclock_collect:
        input:
            **needed_inputs("debugclock_collect"),
            pmu=analysis_input(  # optional: decides debugclock.when: fallback
                "results/{experiment}/pmu/status.json", status_path("debugclock_collect")
            ),
            pmu_collect="results/{experiment}/pmu/collect/status.json",
            after=ancient("results/{experiment}/pcsampling/status.json"),  # order only: one collective run at a time
            pcsampling_collect="results/{experiment}/pcsampling/collect/status.json",
            driver="results/{experiment}/baseline/perf_driver.py",
            build_record="results/{experiment}/build/build.json",
        output:
            raw=directory("results/{experiment}/debugclock/raw"),
            run=directory("results/{experiment}/debugclock/run"),
            status="results/{experiment}/debugclock/collect/status.json",
        log:
            stage_log("debugclock", "collect"),
        resources:
            **debugclock_resources(),
        params:
            config_fingerprint=rule_fingerprint("debugclock_collect"),
            needed=NEEDS["debugclock_collect"],
            gate=gate_states("baseline", "pmu"),
        script:
            "../scripts/debugclock_collect.py"


rule debugclock:
    input:
        **needed_inputs("debugclock"),
        **gated_analyses("debugclock"),
        previous_run=previous_analysis("debugclock"),
    output:
        stats=reported(
            "results/{experiment}/debugclock/stats.json",
            "Stages",
            "stage_stats",
            "debugclock",
            experiment="{experiment}",
            file="phases per role",
        ),
        segments="results/{experiment}/debugclock/segments.parquet",
        per_rank=reported(
            "results/{experiment}/debugclock/slots.parquet",
            "Per-rank tables",
            "per_rank",
            "debugclock",
            experiment="{experiment}",
            file="slots per rank and core",
        ),
        status="results/{experiment}/debugclock/status.json",
    log:
        stage_log("debugclock"),
    params:
        config_fingerprint=rule_fingerprint("debugclock"),
        input_fingerprint=input_fingerprint("debugclock_dir") if not COLLECT else "",
        needed=NEEDS["debugclock"],
        run_dir="results/{experiment}/debugclock/run" if COLLECT else None,
    script:
        "../scripts/debugclock.py"
