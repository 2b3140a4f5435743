# sweep: rank the points of each configured sweep (config sweep:, dispatchprof.shell.sweep); each point is an
# experiment of RUNS measured by the stages of sweep.<name>.stages (the baseline, optionally the timeline).
from dataclasses import asdict

from dispatchprof.shell.config import run_base
from dispatchprof.shell.sweep import expand as expand_sweeps

# sweep name -> its points, refused ones with their reason (the runs of the others are in RUNS)
SWEEP_POINTS = expand_sweeps(config, run_base(config), with_runs=False)[0] if SWEEPS else {}


def sweep_stages(run):
    return (
        RUNS[run]["_sweep"] and config["sweep"][RUNS[run]["_sweep"]].get("stages") or ["baseline"]
    )


def sweep_collect_paths(run):
    """The last collective stage of a point's run that its sweep needs: the next point's run waits for it."""
    return [f"results/{run}/{stage}/collect/status.json" for stage in sweep_stages(run)]


def sweep_runs(sweep):
    """point name -> its runs, in execution order (refused points have none)."""
    points = {}
    for run, cfg in RUNS.items():
        if cfg.get("_sweep") == sweep:
            points.setdefault(cfg["_experiment"], []).append(run)
    return points


def sweep_inputs(wildcards):
    files = {}
    for runs in sweep_runs(wildcards.sweep).values():
        for run in runs:
            files[f"latency_{run}"] = f"results/{run}/baseline/latency.parquet"
            files[f"baseline_{run}"] = f"results/{run}/baseline/status.json"
            files[f"baseline_stats_{run}"] = f"results/{run}/baseline/stats.json"
            files[f"correctness_{run}"] = f"results/{run}/correctness/status.json"
            if "timeline" in sweep_stages(run):
                files[f"timeline_{run}"] = f"results/{run}/timeline/status.json"
                files[f"timeline_stats_{run}"] = f"results/{run}/timeline/stats.json"
    return files


rule sweep:
    input:
        unpack(sweep_inputs),
    output:
        json="results/sweep/{sweep}/sweep.json",
        markdown="results/sweep/{sweep}/sweep.md",
        html="results/sweep/{sweep}/sweep.html",
    log:
        "results/sweep/{sweep}/sweep.log",
    params:
        runs=lambda w: sweep_runs(w.sweep),
        points=lambda w: [
            {k: v for k, v in asdict(p).items() if k != "runs"} for p in SWEEP_POINTS[w.sweep]
        ],
        bootstrap=config["stats"]["bootstrap"],
        toolchain=config["toolchain"],
        mode=config["mode"],
    script:
        "../scripts/sweep.py"
