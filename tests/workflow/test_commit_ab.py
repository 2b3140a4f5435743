"""A commit A/B on the simulator (issue 59 item 1): two commits of a copy of the stand-in's repository, the second
reducing URMASendToken's work (kernels/elastic_dispatch.cpp's WORK_URMASendToken), two experiments that differ only
in deepep.ref. Each side builds its own commit in its own worktree and proves its runs imported that build; the
comparison names both shas. The truth is the events (sim_truth.json's per-role busy time), never the constant."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from statistics import median

import pytest

from conftest import ROOT, base_overlay, git

STAND_IN = ROOT / "workflow" / "sim" / "ascend_deepep"


def two_commits(repo: Path) -> tuple[str, str]:
    """A copy of the stand-in as a git repository: commit 1 as shipped (tag base), commit 2 with less URMASendToken
    work (branch less-send-work); the working tree is left at commit 2 plus an uncommitted edit neither side has."""
    shutil.copytree(STAND_IN, repo, ignore=shutil.ignore_patterns("build", "__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "the stand-in as shipped")
    git(repo, "tag", "base")
    source = repo / "kernels" / "elastic_dispatch.cpp"
    text = source.read_text()
    assert "constexpr float WORK_URMASendToken = 1.0f;" in text
    source.write_text(text.replace("WORK_URMASendToken = 1.0f", "WORK_URMASendToken = 0.6f"))
    git(repo, "commit", "-q", "-am", "less unrolling in the send path")
    git(repo, "branch", "less-send-work")
    source.write_text(text.replace("WORK_URMASendToken = 1.0f", "WORK_URMASendToken = 3.0f"))  # never built
    return git(repo, "rev-parse", "base"), git(repo, "rev-parse", "less-send-work")


@pytest.fixture(scope="module")
def commit_ab(tmp_path_factory):
    from conftest import copy_workflow

    root = tmp_path_factory.mktemp("commit_ab")
    repo = root / "ascend_deepep"
    shas = two_commits(repo)
    wf = copy_workflow(root / "wf")
    overlay = base_overlay(
        deepep={"repo": str(repo)},
        experiments={"base": {"deepep": {"ref": "base"}}, "less": {"deepep": {"ref": "less-send-work"}}},
        compare=[["base", "less"]],
        baseline={"iterations": 30, "warmup": 5},  # the verdict is statistical: 25 measured calls per side
    )
    result = wf.snakemake("--until", "compare", overlay=overlay, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    wf.ab_overlay = overlay
    return wf, repo, shas


def read(wf, path: str) -> dict:
    return json.loads((wf.root / path).read_text())


def test_each_side_built_its_own_commit_in_its_own_worktree(commit_ab):
    wf, repo, (sha_a, sha_b) = commit_ab
    for experiment, ref, sha, work in (("base", "base", sha_a, "1.0f"), ("less", "less-send-work", sha_b, "0.6f")):
        record = read(wf, f"results/{experiment}/build/build.json")
        assert (record["ref"], record["sha"]) == (ref, sha)
        tree = Path(record["tree"])
        assert tree == (wf.root / "results" / experiment / "build" / "tree").resolve()
        assert git(tree, "rev-parse", "HEAD") == sha
        assert f"WORK_URMASendToken = {work};" in (tree / "kernels" / "elastic_dispatch.cpp").read_text()
        assert record["libraries"] and all(lib["sha256"] for lib in record["libraries"])
        assert read(wf, f"results/{experiment}/build/status.json")["state"] == "ok"
    assert not (repo / "build").exists()  # deepep.repo's own working tree was never built in
    a, b = (read(wf, f"results/{e}/build/build.json")["libraries"] for e in ("base", "less"))
    assert {x["path"]: x["sha256"] for x in a} != {x["path"]: x["sha256"] for x in b}


def test_every_run_proved_it_imported_its_own_build(commit_ab):
    wf, _, (sha_a, sha_b) = commit_ab
    for experiment, sha in (("base", sha_a), ("less", sha_b)):
        status = read(wf, f"results/{experiment}/baseline/collect/status.json")
        assert status["state"] == "ok"
        own = status["details"]["own_build"]
        assert own["ok"] and own["sha"] == sha, own
        record = read(wf, f"results/{experiment}/build/build.json")
        library = next(x for x in record["libraries"] if x["path"].endswith("libascend_deepep_kernels.so"))
        assert library["sha256"] in own["detail"]
        logs = "".join(
            p.read_text(errors="replace")
            for p in (wf.root / "results" / experiment / "baseline" / "run").rglob("*.log")
        )
        assert f"libascend_deepep_kernels.so sha256 {library['sha256']}" in logs


def test_the_comparison_names_both_shas_and_latency_improved_as_the_events_say(commit_ab):
    wf, _, (sha_a, sha_b) = commit_ab
    comparison = read(wf, "results/compare/base_vs_less/comparison.json")
    sides = comparison["sides"]
    assert (sides["a"]["sha"], sides["b"]["sha"]) == (sha_a, sha_b) and sha_a != sha_b
    assert (sides["a"]["ref"], sides["b"]["ref"]) == ("base", "less-send-work")
    for side, experiment in (("a", "base"), ("b", "less")):
        record = read(wf, f"results/{experiment}/build/build.json")
        assert sides[side]["library_sha256"] == {x["path"]: x["sha256"] for x in record["libraries"]}
    stat = sides["diff_stat"]
    assert (stat["files_changed"], stat["insertions"], stat["deletions"]) == (1, 1, 1)
    assert stat["files"][0]["path"] == "kernels/elastic_dispatch.cpp"
    assert comparison["state"] == "ok" and comparison["factors"] == ["deepep.ref"]

    # what happened, from the events: the URMA cores of B did less work, the other roles' as much
    def busy(experiment, role):
        truth = read(wf, f"results/{experiment}/baseline/run/latency/sim_truth.json")
        return median(r["roles"][role]["busy_us_max"] for launch in truth["launches"] for r in launch["ranks"])

    assert busy("less", "URMASendToken") < 0.8 * busy("base", "URMASendToken")
    assert busy("less", "CalCumSum") == pytest.approx(busy("base", "CalCumSum"), rel=0.05)
    assert comparison["verdict"] == "improved", comparison.get("reason")


def test_a_branch_that_moved_rebuilds_its_side_and_only_its_side(commit_ab):
    wf, repo, (_, sha_b) = commit_ab
    planned = wf.snakemake("-n", "--until", "compare", overlay=wf.ab_overlay)
    assert planned.returncode == 0 and re.search(r"^total\s+0$", planned.stdout, re.M), planned.stdout[-2000:]
    git(repo, "commit", "-q", "-am", "a third commit")  # the working tree's edit
    git(repo, "branch", "-f", "less-send-work", "HEAD")
    try:
        planned = wf.snakemake("-n", "--until", "compare", overlay=wf.ab_overlay)
    finally:
        git(repo, "branch", "-f", "less-send-work", sha_b)
    out = planned.stdout + planned.stderr
    assert planned.returncode == 0, out[-2000:]
    assert re.search(r"^build\s+1$", out, re.M) and "output: results/less/build/build.json," in out, out[-3000:]
    assert re.search(r"^baseline_driver\s+1$", out, re.M)  # the test as the new commit has it


def test_a_ref_that_does_not_resolve_is_refused_by_the_dry_run_naming_it(tmp_path):
    from conftest import copy_workflow

    repo = tmp_path / "ascend_deepep"
    two_commits(repo)
    wf = copy_workflow(tmp_path / "wf")
    overlay = base_overlay(
        deepep={"repo": str(repo)},
        experiments={"base": {"deepep": {"ref": "base"}}, "typo": {"deepep": {"ref": "less-send-wrok"}}},
        compare=[["base", "typo"]],
    )
    result = wf.snakemake("-n", overlay=overlay)
    assert result.returncode != 0
    assert f"deepep.ref 'less-send-wrok' does not name a commit of deepep.repo {repo}" in result.stderr
    assert "Traceback" not in result.stderr and "Building DAG" not in result.stdout + result.stderr
    assert not (wf.root / "results").exists()
    good = wf.snakemake("-n", overlay={**overlay, "experiments": {"base": {"deepep": {"ref": "base"}}}, "compare": []})
    assert good.returncode == 0, good.stderr[-2000:]


def test_a_run_that_loaded_another_library_than_its_build_is_invalid(tmp_path):
    from conftest import copy_workflow

    repo = tmp_path / "ascend_deepep"
    two_commits(repo)
    wf = copy_workflow(tmp_path / "wf")
    overlay = base_overlay(deepep={"repo": str(repo), "ref": "base"})
    result = wf.snakemake("--until", "baseline_collect", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    record = read(wf, "results/baseline/build/build.json")
    library = Path(record["tree"]) / "build" / "libascend_deepep_kernels.so"
    library.write_text(library.read_text() + "work_factor URMASendToken 0.5\n")  # not the build the record names
    result = wf.snakemake("-R", "baseline_collect", "--until", "baseline_collect", overlay=overlay)
    status = read(wf, "results/baseline/baseline/collect/status.json")
    assert status["state"] == "invalid" and status["details"]["cause"] == "build", status["reason"]
    assert "loaded a library other than deepep.ref 'base'" in status["reason"]
    assert "build/libascend_deepep_kernels.so" in status["reason"] and not status["details"]["own_build"]["ok"]
