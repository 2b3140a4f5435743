# timeline: msprof system timeline on every node; the target kernel on every rank (collective).

if not COLLECT:

    rule timeline_import:
        output:
            manifest="results/{experiment}/timeline/import/manifest.json",
            status="results/{experiment}/timeline/import/status.json",
        log:
            stage_log("timeline", "import"),
        params:
            config_fingerprint=config_fingerprint("analyze", "cluster"),
            kind="timeline_dir",
            path=config["analyze"]["timeline_dir"],
        script:
            "../scripts/import_artifacts.py"


rule timeline:
    input:
        **needed_inputs("timeline"),
    output:
        status="results/{experiment}/timeline/status.json",
    log:
        stage_log("timeline"),
    params:
        config_fingerprint=config_fingerprint(
            "mode", "toolchain", "cluster", "deepep", "shape", "sim", "analyze", "kernel"
        ),
        needed=NEEDS["timeline"],
    script:
        "../scripts/stage_not_implemented.py"
