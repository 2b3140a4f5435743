# compare: controlled A/B comparisons between experiments (config compare: [[a, b], ...]).


def runs_of(experiment):
    return [run for run, cfg in RUNS.items() if cfg["_experiment"] == experiment]


def comparison_inputs(wildcards):
    files = {}
    for side in ("a", "b"):
        for run in runs_of(getattr(wildcards, side)):
            files[f"{side}_latency_{run}"] = f"results/{run}/baseline/latency.parquet"
            files[f"{side}_baseline_{run}"] = f"results/{run}/baseline/status.json"
            files[f"{side}_correctness_{run}"] = f"results/{run}/correctness/status.json"
            if RUNS[run]["mode"] == "collect":  # which build the side ran (compare_sides)
                files[f"{side}_build_{run}"] = f"results/{run}/build/build.json"
    return files


def comparisons_of(run):
    """The comparison outputs the report of ``run`` shows (it is side A or B of them)."""
    name = RUNS[run]["_experiment"]
    return [f"results/compare/{a}_vs_{b}/comparison.json" for a, b in COMPARISONS if name in (a, b)]


rule compare:
    input:
        unpack(comparison_inputs),
    output:
        json=reported(
            "results/compare/{a}_vs_{b}/comparison.json",
            "Comparisons",
            "compare",
            "{a} vs {b}",
            file="comparison.json",
        ),
        html=reported(
            "results/compare/{a}_vs_{b}/comparison.html",
            "Comparisons",
            "compare",
            "{a} vs {b}",
            file="comparison.html",
        ),
    log:
        "results/compare/{a}_vs_{b}/compare.log",
    params:
        a_runs=lambda w: runs_of(w.a),
        b_runs=lambda w: runs_of(w.b),
    script:
        "../scripts/compare.py"
