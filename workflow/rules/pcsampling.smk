# pcsampling: msopprof PC sampling of the SIMT code (collective kernel replay).

if not COLLECT:

    rule pcsampling_import:
        output:
            manifest="results/{experiment}/pcsampling/import/manifest.json",
            status="results/{experiment}/pcsampling/import/status.json",
        log:
            stage_log("pcsampling", "import"),
        params:
            config_fingerprint=config_fingerprint("analyze", "cluster"),
            kind="pcsampling_dir",
            path=config["analyze"]["pcsampling_dir"],
        script:
            "../scripts/import_artifacts.py"


rule pcsampling:
    input:
        **needed_inputs("pcsampling"),
    output:
        status="results/{experiment}/pcsampling/status.json",
    log:
        stage_log("pcsampling"),
    params:
        config_fingerprint=config_fingerprint(
            "mode", "toolchain", "cluster", "deepep", "shape", "sim", "analyze", "kernel"
        ),
        needed=NEEDS["pcsampling"],
    script:
        "../scripts/stage_not_implemented.py"
