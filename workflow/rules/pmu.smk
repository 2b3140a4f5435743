# pmu: msopprof PMU metrics per core and role (collective kernel replay).

if not COLLECT:

    rule pmu_import:
        output:
            manifest="results/{experiment}/pmu/import/manifest.json",
            status="results/{experiment}/pmu/import/status.json",
        log:
            stage_log("pmu", "import"),
        params:
            config_fingerprint=config_fingerprint("analyze", "cluster"),
            kind="pmu_dir",
            path=config["analyze"]["pmu_dir"],
        script:
            "../scripts/import_artifacts.py"


rule pmu:
    input:
        **needed_inputs("pmu"),
    output:
        status="results/{experiment}/pmu/status.json",
    log:
        stage_log("pmu"),
    params:
        config_fingerprint=config_fingerprint(
            "mode", "toolchain", "cluster", "deepep", "shape", "sim", "analyze", "kernel"
        ),
        needed=NEEDS["pmu"],
    script:
        "../scripts/stage_not_implemented.py"
