# history: this run's record in the history store (history.path) and the regression gate's verdict against the
# comparable runs before it; the report shows the verdict, fail_on: [regression] turns it into the exit status.


def collected_status(wildcards):
    part = "collect" if RUNS[wildcards.experiment]["mode"] == "collect" else "import"
    return f"results/{wildcards.experiment}/baseline/{part}/status.json"


rule history:
    input:
        collected=collected_status,
        baseline_status=status_path("baseline"),
        baseline_stats="results/{experiment}/baseline/stats.json",
        latency="results/{experiment}/baseline/latency.parquet",
        timeline_status=status_path("timeline"),
        timeline_stats="results/{experiment}/timeline/stats.json",
        pmu_status=status_path("pmu"),
        pmu_roles="results/{experiment}/pmu/roles.json",
        pmu_cores="results/{experiment}/pmu/cores.parquet",
        env="results/{experiment}/env_capture/env.json",
        build_record="results/{experiment}/build/build.json",
    output:
        verdict="results/{experiment}/history/history.json",
    log:
        stage_log("history"),
    params:
        config_fingerprint=rule_fingerprint("history"),
    script:
        "../scripts/history.py"
