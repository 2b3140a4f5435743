# build: run deepep.build_command (if set) and record the hashes of the built libraries.


rule build:
    input:
        **needed_inputs("build"),
    output:
        record="results/{experiment}/build/build.json",
        status="results/{experiment}/build/status.json",
    log:
        stage_log("build"),
    resources:
        npu_node=1,  # the repository's build script needs the CANN toolkit of the NPU nodes
    params:
        config_fingerprint=rule_fingerprint("build"),
        ref_sha=lambda w: REF_SHAS[w.experiment],  # deepep.ref's commit: a moved branch rebuilds
        needed=NEEDS["build"],
    script:
        "../scripts/build.py"
