# pipe_timeline: msopprof PipeTimeline / InstrTimeline, each its own kernel-replay run on every node and rank
# (never one command, never with PipeUtilization); trace.json per core -> pipe busy and overlap per role.

if COLLECT:

    rule pipe_timeline_collect:
        input:
            **needed_inputs(
                "pipe_timeline_collect",
                own="results/{experiment}/pipe_timeline/{kind}/collect/status.json",
            ),
            driver="results/{experiment}/baseline/perf_driver.py",
            env="results/{experiment}/env_capture/env.json",
            timeline_stats=ancient("results/{experiment}/timeline/stats.json"),  # kernel_name: param kernel
        output:
            raw=directory("results/{experiment}/pipe_timeline/{kind}/raw"),
            run=directory("results/{experiment}/pipe_timeline/{kind}/run"),
            status="results/{experiment}/pipe_timeline/{kind}/collect/status.json",
        log:
            "results/{experiment}/pipe_timeline/logs/{kind}_collect.log",
        wildcard_constraints:
            kind="pipe|instr",
        resources:
            **collective_resources("pipe_timeline"),
        params:
            config_fingerprint=rule_fingerprint("pipe_timeline_collect"),
            needed=NEEDS["pipe_timeline_collect"],
            gate=needed_states("pipe_timeline_collect"),
            kernel=timeline_kernel,
            stage="pipe_timeline",
            kind=lambda wildcards: wildcards.kind,
        message:
            "{PLAN:pipe_timeline_collect/{wildcards.experiment}/{wildcards.kind}}"
        script:
            "../scripts/op_profiler_collect.py"

else:

    rule pipe_timeline_import:
        output:
            manifest="results/{experiment}/pipe_timeline/import/manifest.json",
            status="results/{experiment}/pipe_timeline/import/status.json",
        log:
            stage_log("pipe_timeline", "import"),
        params:
            config_fingerprint=rule_fingerprint("pipe_timeline_import"),
            input_fingerprint=input_fingerprint("pipe_timeline_dir"),
            kind="pipe_timeline_dir",
        script:
            "../scripts/import_artifacts.py"


rule pipe_timeline:
    input:
        **pipe_timeline_parts(),
        **gated_analyses("pipe_timeline"),
        previous_run=previous_analysis("pipe_timeline"),
    output:
        cores="results/{experiment}/pipe_timeline/cores.parquet",
        stats=reported(
            "results/{experiment}/pipe_timeline/pipe_timeline.json",
            "Stages",
            "stage_stats",
            "pipe_timeline",
            experiment="{experiment}",
            file="pipe busy time per role",
        ),
        status="results/{experiment}/pipe_timeline/status.json",
    log:
        stage_log("pipe_timeline"),
    params:
        config_fingerprint=rule_fingerprint("pipe_timeline"),
        parts=list(pipe_timeline_parts()),
    script:
        "../scripts/pipe_timeline.py"
