# baseline: latency baseline of the dispatch kernel and the full API call (collective).

if not COLLECT:

    rule baseline_import:
        output:
            manifest="results/{experiment}/baseline/import/manifest.json",
            status="results/{experiment}/baseline/import/status.json",
        log:
            stage_log("baseline", "import"),
        params:
            config_fingerprint=config_fingerprint("analyze", "cluster"),
            kind="latency_csv",
            path=config["analyze"]["latency_csv"],
        script:
            "../scripts/import_artifacts.py"


rule baseline:
    input:
        **needed_inputs("baseline"),
    output:
        status="results/{experiment}/baseline/status.json",
    log:
        stage_log("baseline"),
    params:
        config_fingerprint=config_fingerprint(
            "mode", "toolchain", "cluster", "deepep", "shape", "sim", "analyze"
        ),
        needed=NEEDS["baseline"],
    script:
        "../scripts/stage_not_implemented.py"
