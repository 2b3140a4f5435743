# env_capture: probe every node (tools, versions, topology, compile flags), then fold the nodes.

if COLLECT:

    rule env_capture_node:
        output:
            env="results/{experiment}/env_capture/node{node}/env.json",
            status="results/{experiment}/env_capture/node{node}/status.json",
        log:
            stage_log("env_capture", "node{node}"),
        resources:
            npu_node=1,
            slurm_extra=node_resources,
        params:
            config_fingerprint=rule_fingerprint("env_capture_node"),
            check_ports=lambda w: w.experiment == EXPERIMENTS[0],
        message:
            "{PLAN:env_capture_node/{wildcards.experiment}/{wildcards.node}}"
        script:
            "../scripts/env_capture_node.py"


rule env_capture:
    input:
        nodes=(
            expand("results/{{experiment}}/env_capture/node{node}/status.json", node=NODES)
            if COLLECT
            else []
        ),
    output:
        env="results/{experiment}/env_capture/env.json",
        status="results/{experiment}/env_capture/status.json",
    log:
        stage_log("env_capture"),
    script:
        "../scripts/env_capture.py"
