# compare: controlled A/B comparisons between experiments (config compare: [[a, b], ...]). A side may also be a
# recorded results directory (a path: shell/compare_config.py): its files are inputs as they are, no rule makes them.
from dispatchprof.shell.compare_config import LAYER_FILES, recorded_inputs


def runs_of(side):
    """The runs of a side: an experiment's repeats, or a recorded side's one run (named by its slug)."""
    if side in RECORDED:
        return [side]
    return [run for run, cfg in RUNS.items() if cfg["_experiment"] == side]


# The layers compared beside latency (analysis/compare_layers.py): LAYER_FILES, each stage's status and the file its
# rows are read from (shell/compare_config.py).
def layer_files(run):
    never = RUNS[run]["debugclock"]["when"] == "never"
    return {
        name: f"results/{run}/{path}"
        for name, path in LAYER_FILES.items()
        if not (never and name.startswith("debugclock"))
    }


def recorded_files(slug):
    """(name -> path of the files a recorded side has, name -> file of those it lacks): shell/compare_config.py."""
    return recorded_inputs(RECORDED[slug])


def comparison_inputs(wildcards):
    files = {}
    for side in ("a", "b"):
        slug = getattr(wildcards, side)
        if slug in RECORDED:
            have, _ = recorded_files(slug)
            files.update({f"{side}_{name}_{slug}": path for name, path in have.items()})
            continue
        for run in runs_of(slug):
            files[f"{side}_latency_{run}"] = f"results/{run}/baseline/latency.parquet"
            files[f"{side}_baseline_{run}"] = f"results/{run}/baseline/status.json"
            files[f"{side}_correctness_{run}"] = f"results/{run}/correctness/status.json"
            if RUNS[run]["mode"] == "collect":  # which build the side ran (compare_sides)
                files[f"{side}_build_{run}"] = f"results/{run}/build/build.json"
            files.update({f"{side}_{name}_{run}": path for name, path in layer_files(run).items()})
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
        markdown="results/compare/{a}_vs_{b}/comparison.md",
        picture="results/compare/{a}_vs_{b}/moved.svg",
    log:
        "results/compare/{a}_vs_{b}/compare.log",
    params:
        a_runs=lambda w: runs_of(w.a),
        b_runs=lambda w: runs_of(w.b),
        expect=lambda w: EXPECTATIONS.get((w.a, w.b), {}),
        recorded=lambda w: {
            s: RECORDED[getattr(w, s)] for s in ("a", "b") if getattr(w, s) in RECORDED
        },
        missing=lambda w: {
            s: recorded_files(getattr(w, s))[1] for s in ("a", "b") if getattr(w, s) in RECORDED
        },
    script:
        "../scripts/compare.py"
