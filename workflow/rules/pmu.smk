# pmu: per-core PMU metrics by role (msopprof kernel replay, every node and rank).

if COLLECT:

    rule pmu_collect:
        input:
            **needed_inputs("pmu_collect"),
            driver="results/{experiment}/baseline/perf_driver.py",
            env="results/{experiment}/env_capture/env.json",
            timeline_stats=ancient("results/{experiment}/timeline/stats.json"),  # kernel_name: param kernel
        output:
            raw=directory("results/{experiment}/pmu/raw"),
            run=directory("results/{experiment}/pmu/run"),
            status="results/{experiment}/pmu/collect/status.json",
        log:
            stage_log("pmu", "collect"),
        resources:
            **collective_resources("pmu"),
        params:
            config_fingerprint=rule_fingerprint("pmu_collect"),
            needed=NEEDS["pmu_collect"],
            gate=needed_states("pmu_collect"),
            kernel=timeline_kernel,
            stage="pmu",
        message:
            "{PLAN:pmu_collect/{wildcards.experiment}}"
        script:
            "../scripts/op_profiler_collect.py"

else:

    rule pmu_import:
        output:
            manifest="results/{experiment}/pmu/import/manifest.json",
            status="results/{experiment}/pmu/import/status.json",
        log:
            stage_log("pmu", "import"),
        params:
            config_fingerprint=rule_fingerprint("pmu_import"),
            input_fingerprint=input_fingerprint("pmu_dir"),
            kind="pmu_dir",
        script:
            "../scripts/import_artifacts.py"


rule pmu:
    input:
        **needed_inputs("pmu"),
        **gated_analyses("pmu"),
        previous_run=previous_analysis("pmu"),
        env="results/{experiment}/env_capture/env.json",  # npu-smi's chip name per node, when no launch names its chip
        # msprof's NPU_INFO / info.json chip of this run (collect mode: pmu_collect needs the timeline's stats anyway)
        timeline_stats=(ancient("results/{experiment}/timeline/stats.json") if COLLECT else []),
    output:
        cores=reported(
            "results/{experiment}/pmu/cores.parquet",
            "Per-rank tables",
            "per_rank",
            "pmu",
            experiment="{experiment}",
            file="PMU per rank and core",
        ),
        metrics="results/{experiment}/pmu/metrics.parquet",
        stats=reported(
            "results/{experiment}/pmu/roles.json",
            "Stages",
            "stage_stats",
            "pmu",
            experiment="{experiment}",
            file="roles",
        ),
        status="results/{experiment}/pmu/status.json",
    log:
        stage_log("pmu"),
    params:
        config_fingerprint=rule_fingerprint("pmu"),
        needed=NEEDS["pmu"],
        identity="results/{experiment}/pmu/run/identity" if COLLECT else None,
    script:
        "../scripts/pmu.py"
