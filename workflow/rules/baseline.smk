# baseline: the latency of the dispatch kernel (kernel scope) and of the full API call, on every rank.
# Collect mode: generate the perf driver from the test (ast), run it on every node, then analyse.

if COLLECT:

    rule baseline_driver:
        output:
            driver="results/{experiment}/baseline/perf_driver.py",
            runtime="results/{experiment}/baseline/dispatchprof_perf_runtime.py",
            diff="results/{experiment}/baseline/perf_driver.diff",
            status="results/{experiment}/baseline/driver/status.json",
        log:
            stage_log("baseline", "driver"),
        params:
            config_fingerprint=rule_fingerprint("baseline_driver"),
            ref_sha=lambda w: REF_SHAS[w.experiment],  # the test as deepep.ref's commit has it
        script:
            "../scripts/baseline_driver.py"

    rule baseline_collect:
        input:
            **needed_inputs("baseline_collect"),
            driver="results/{experiment}/baseline/perf_driver.py",
        output:
            run=directory("results/{experiment}/baseline/run"),
            status="results/{experiment}/baseline/collect/status.json",
        log:
            stage_log("baseline", "collect"),
        resources:
            **collective_resources("baseline"),
        params:
            config_fingerprint=rule_fingerprint("baseline_collect"),
            needed=NEEDS["baseline_collect"],
        message:
            "{PLAN:baseline_collect/{wildcards.experiment}}"
        script:
            "../scripts/baseline_collect.py"

else:

    rule baseline_import:
        output:
            manifest="results/{experiment}/baseline/import/manifest.json",
            status="results/{experiment}/baseline/import/status.json",
        log:
            stage_log("baseline", "import"),
        params:
            config_fingerprint=rule_fingerprint("baseline_import"),
            input_fingerprint=input_fingerprint("latency_csv"),
            kind="latency_csv",
        script:
            "../scripts/import_artifacts.py"


rule baseline:
    input:
        **needed_inputs("baseline"),
        previous_run=previous_analysis("baseline"),
    output:
        latency=reported(
            "results/{experiment}/baseline/latency.parquet",
            "Per-rank tables",
            "baseline",
            "baseline",
            experiment="{experiment}",
            file="latency per rank and iteration",
        ),
        stats=reported(
            "results/{experiment}/baseline/stats.json",
            "Stages",
            "stage_stats",
            "baseline",
            experiment="{experiment}",
            file="statistics",
        ),
        plots=directory("results/{experiment}/baseline/plots"),
        status="results/{experiment}/baseline/status.json",
    log:
        stage_log("baseline"),
    params:
        config_fingerprint=rule_fingerprint("baseline"),
        needed=NEEDS["baseline"],
        run_dir="results/{experiment}/baseline/run" if COLLECT else None,
    script:
        "../scripts/baseline.py"
