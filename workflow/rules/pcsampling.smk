# pcsampling: PC-sampling stall reasons of the SIMT code (its own msopprof run).

if COLLECT:

    rule pcsampling_collect:
        input:
            **needed_inputs("pcsampling_collect"),
            driver="results/{experiment}/baseline/perf_driver.py",
            env="results/{experiment}/env_capture/env.json",
            timeline_stats=ancient("results/{experiment}/timeline/stats.json"),  # kernel_name: param kernel
        output:
            raw=directory("results/{experiment}/pcsampling/raw"),
            run=directory("results/{experiment}/pcsampling/run"),
            status="results/{experiment}/pcsampling/collect/status.json",
        log:
            stage_log("pcsampling", "collect"),
        resources:
            **collective_resources("pcsampling"),
        params:
            config_fingerprint=rule_fingerprint("pcsampling_collect"),
            needed=NEEDS["pcsampling_collect"],
            gate=needed_states("pcsampling_collect"),
            kernel=timeline_kernel,
            stage="pcsampling",
        message:
            "{PLAN:pcsampling_collect/{wildcards.experiment}}"
        script:
            "../scripts/op_profiler_collect.py"

else:

    rule pcsampling_import:
        output:
            manifest="results/{experiment}/pcsampling/import/manifest.json",
            status="results/{experiment}/pcsampling/import/status.json",
        log:
            stage_log("pcsampling", "import"),
        params:
            config_fingerprint=rule_fingerprint("pcsampling_import"),
            input_fingerprint=input_fingerprint("pcsampling_dir"),
            kind="pcsampling_dir",
        script:
            "../scripts/import_artifacts.py"


rule pcsampling:
    input:
        **needed_inputs("pcsampling"),
        **gated_analyses("pcsampling"),
        previous_run=previous_analysis("pcsampling"),
    output:
        stats=reported(
            "results/{experiment}/pcsampling/stalls.json",
            "Stages",
            "stage_stats",
            "pcsampling",
            experiment="{experiment}",
            file="stalls and hot lines",
        ),
        status="results/{experiment}/pcsampling/status.json",
    log:
        stage_log("pcsampling"),
    params:
        config_fingerprint=rule_fingerprint("pcsampling"),
        needed=NEEDS["pcsampling"],
        identity="results/{experiment}/pcsampling/run/identity" if COLLECT else None,
    script:
        "../scripts/pcsampling.py"
