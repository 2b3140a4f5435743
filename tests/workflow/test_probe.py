"""The probe stage and the MindStudio Insight artifact guide on the simulated cluster (2 nodes x 8 ranks): one full
run shared by the assertions, then quick runs of the probe alone for its refusals and its analyze-mode import."""

import html as html_lib
import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import FIXTURES, assert_ended_by_fail_on, base_overlay, copy_workflow
from dispatchprof.report.artifacts import KINDS, classify

SIM = FIXTURES / "msopprof" / "simulator" / "single"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    wf = copy_workflow(tmp_path_factory.mktemp("probe") / "wf")
    overlay = base_overlay(probe={"enabled": True}, report={"insight_version": "8.1.RC1"})
    result = wf.snakemake(overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]
    return wf


def test_probe_cachemiss_counts_equal_the_events_the_stand_in_wrote(demo):
    assert demo.status("probe")["state"] == "ok"
    summary = json.loads((demo.root / "results/baseline/report/summary.json").read_text())
    probe = summary["probe"]
    truth = json.loads((demo.root / "results/baseline/probe/raw/sim_truth.json").read_text())[
        "cachemiss"
    ]  # ground truth, tests only
    assert probe["cachemiss"]["total"] == truth["total"] > 0
    assert probe["cachemiss"]["per_core"] == truth["per_core"]
    top = probe["cachemiss"]["top_pcs"]
    assert all(set(p) == {"pc", "count"} and truth["per_pc"][p["pc"]] == p["count"] for p in top)
    assert [p["count"] for p in top] == sorted(truth["per_pc"].values(), reverse=True)[: len(top)]
    assert all(set(r) == {"core", "instr", "addr", "cycles"} and isinstance(r["addr"], int) for r in probe["instr_top"])
    assert probe["label"] == "simulator, single card, local probe"
    html = (demo.root / "results/baseline/report/report.html").read_text()
    assert "simulator, single card, local probe" in html and f"<b>{truth['total']}</b>" in html
    answer = html[
        html.index('id="answer"') : html.index('id="environment"')
    ]  # the verdict's line and the evidence's sentence
    assert f"Local probe (simulator): {truth['total']} I-cache misses" in answer
    assert (
        "A local probe under msopprof simulator (simulator, single "
        f"card, local probe) counted {truth['total']} I-cache misses" in answer
    )
    assert "Pipes run in parallel: never sum them." in html and html.count("never sum them") == 1


def linked(report: Path, text: str, pattern: str) -> list[Path]:
    return [report.parent / unquote(h) for h in re.findall(pattern, text)]


def test_the_artifact_guide_lists_every_artifact_on_disk_with_a_working_link(demo):
    report = demo.root / "results/baseline/report/report.html"
    html = report.read_text()
    guide = html[html.index('id="artifact-guide"') : html.index('id="open-boundaries"')]
    assert "MindStudio Insight version this data needs: <b>8.1.RC1</b>" in guide
    assert "imported as a single file" in guide or "as a single file" in guide
    assert "Do not hand-edit a JSON to change its type" in guide
    links = linked(report, guide, r'<a href="([^"]+)"')
    assert links and all(p.exists() for p in links)
    # every file or PROF_ directory of a guide kind under the experiment's results (not the contents of a PROF_)
    on_disk = {
        p.resolve()
        for p in (demo.root / "results/baseline").rglob("*")
        if classify(p) and not any(part.startswith("PROF_") for part in p.relative_to(demo.root).parts[:-1])
    }
    assert on_disk <= {p.resolve() for p in links}
    kinds = {classify(p) for p in on_disk}
    assert {"prof_dir", "visualize_bin", "simulator_trace", "pipe_utilization", "latency_csv"} <= kinds
    for kind in kinds:
        assert KINDS[kind][1] in html_lib.unescape(guide)
    md = (demo.root / "results/baseline/report/report.md").read_text()
    md_guide = md[
        md.index("## Artifacts and where to open them") : md.index("## Open boundaries")
    ]  # other sections link too
    md_links = linked(report, md_guide, r"\]\(([^)]+)\)")
    assert {p.resolve() for p in md_links} == {p.resolve() for p in links}


def test_cautions_and_open_boundaries_say_what_is_not_known(demo):
    html = (demo.root / "results/baseline/report/report.html").read_text()
    boundaries = html[html.index('id="open-boundaries"') : html.index('id="ledger"')]
    assert "Kernel replay verified in this run by pmu, pcsampling" in boundaries
    assert "Network evidence" in boundaries and "SHMEM/URMA" in boundaries
    assert "pmu: not provided (absent or NA, never read as 0): aiv_mte3_active_bw(GB/s)" in boundaries
    assert "The probe&#39;s numbers are simulator, single card, local probe" in boundaries
    assert "PC samples x a sampling period is not stall time" in html
    assert html.index("SHMEM/URMA traffic") < html.index('id="pmu"')  # the HCCL caution sits with the timeline


def test_probe_is_disabled_by_default_and_refusals_are_explained(workflow_copy):
    result = workflow_copy.snakemake("--until", "probe", overlay=base_overlay())
    assert result.returncode == 0, result.stderr[-2000:]
    probe = workflow_copy.status("probe")
    assert probe["state"] == "disabled" and "probe.enabled is false" in probe["reason"]
    refused = workflow_copy.snakemake("-n", overlay=base_overlay(probe={"enabled": True, "soc_version": "950"}))
    assert refused.returncode != 0 and "probe.soc_version: '950' is not a SoC name" in refused.stderr
    result = workflow_copy.snakemake(
        "--until", "probe", overlay=base_overlay(probe={"enabled": True}, sim={"probe": "multi_card"})
    )
    assert_ended_by_fail_on(result, "baseline/probe is failed")
    probe = workflow_copy.status("probe")
    assert probe["state"] == "failed" and "[ERROR] Simulator only supports single-card scenarios" in probe["reason"]


def test_analyze_mode_reads_an_imported_simulator_tree_in_place(workflow_copy):
    before = {p: p.stat().st_mtime_ns for p in SIM.rglob("*")}
    result = workflow_copy.snakemake(overlay=base_overlay(mode="analyze", analyze={"probe_dir": str(SIM)}))
    assert result.returncode == 0, result.stderr[-2000:]
    probe = workflow_copy.status("probe")
    assert probe["state"] == "ok" and probe["source"] == "import" and "4 I-cache misses" in probe["reason"]
    assert {p: p.stat().st_mtime_ns for p in SIM.rglob("*")} == before
    # the report's guide shows the imported traces by absolute path (read in place), never as a link into results/
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    guide = html[html.index('id="artifact-guide"') : html.index('id="open-boundaries"')]
    traces = sorted(str(p.resolve()) for p in SIM.rglob("trace.json"))
    assert len(traces) == 3 and all(f"<code>{t}</code> (imported, read in place)" in guide for t in traces)
    assert (
        "Kernel replay not verified here" not in html
        and "PMU replay compatibility of the full kernel unresolved" in html
    )  # no PMU data at all
    missing = workflow_copy.snakemake("-n", overlay=base_overlay(mode="analyze", analyze={"probe_dir": "nowhere"}))
    assert missing.returncode != 0 and "analyze.probe_dir: nowhere does not exist" in missing.stderr
