"""The report and the A/B comparison as a user meets them: verdicts, warnings, a real browser, Snakemake's report."""

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from conftest import assert_ended_by_fail_on, base_overlay

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_ab_comparison_verdicts_and_warnings(workflow_copy):
    overlay = base_overlay(
        experiments={
            "baseline": {},
            "faster_send": {"sim": {"role_speedup": {"URMASendToken": 0.9}}},
            "same_again": {},
        },
        # Two factors changed at once (the warning) is tests/analysis/test_compare.py's: here the factors reach the
        # comparison from each experiment's merged config (faster_send's one sim.* factor, same_again's none); a shape.*
        # factor takes the same way and is checked there only
        compare=[["baseline", "faster_send"], ["baseline", "same_again"]],
        # The verdicts are statistical (bootstrap CI of the per-iteration max): 25 measured calls per side, not the
        # shorter run the other tests make
        baseline={"iterations": 30, "warmup": 5},
    )
    result = workflow_copy.snakemake("--until", "compare", overlay=overlay)
    assert result.returncode == 0, result.stderr[-3000:]

    def comparison(name):
        return json.loads((workflow_copy.root / f"results/compare/{name}/comparison.json").read_text())

    faster = comparison("baseline_vs_faster_send")
    assert faster["verdict"] == "improved" and faster["kernel"]["per_iteration_max_median"]["ci95"][1] < 0
    one_repeat = ["one repeat per side: the CI holds no run-to-run variance (config repeats: 4 or more)"]
    assert faster["factors"] == ["sim.role_speedup.URMASendToken"] and faster["warnings"] == one_repeat
    same = comparison("baseline_vs_same_again")
    assert same["verdict"] in ("unchanged", "inconclusive")
    assert (
        same["kernel"]["per_iteration_max_median"]["a"] != same["kernel"]["per_iteration_max_median"]["b"]
    )  # different noise
    assert same["factors"] == [] and same["warnings"] == one_repeat
    assert (workflow_copy.root / "results/compare/baseline_vs_faster_send/comparison.html").is_file()


def test_a_comparison_refuses_when_precision_failed_on_one_side(workflow_copy):
    overlay = base_overlay(
        experiments={"a": {}, "broken": {"sim": {"precision_fail_rank": 2}}},
        compare=[["a", "broken"]],
        timeline={"iterations": 6, "warmup": 1},
    )
    result = workflow_copy.snakemake("--until", "compare", overlay=overlay)
    assert_ended_by_fail_on(result, "broken/correctness is failed")
    data = json.loads((workflow_copy.root / "results/compare/a_vs_broken/comparison.json").read_text())
    assert data["state"] == "refused" and "broken: precision not ok" in data["reason"] and "rank 2" in data["reason"]


def test_the_report_renders_and_explains_every_stage_when_all_collection_failed(workflow_copy, tmp_path):
    overlay = base_overlay(
        toolchain="cann",
        cann={"set_env": str(tmp_path / "no_set_env.sh"), "install_root": str(tmp_path)},
        deepep={"repo": str(tmp_path / "no_repo"), "build_command": None},
    )
    result = workflow_copy.snakemake(overlay=overlay)
    assert_ended_by_fail_on(result, "baseline/env_capture is failed")
    summary = json.loads((workflow_copy.root / "results/baseline/report/summary.json").read_text())
    assert summary["toolchain"] == "cann"
    states = {s: v["state"] for s, v in summary["stages"].items()}
    # Preflight in env capture now stops this before any collective stage costs an allocation, listing the problem.
    assert (
        states["env_capture"] == "failed"
        and "no_set_env.sh does not exist (cann.set_env)" in summary["stages"]["env_capture"]["reason"]
    )
    assert (
        states["correctness"] == "skipped" and summary["stages"]["correctness"]["root_cause"]["stage"] == "env_capture"
    )
    assert states["baseline"] in ("failed", "skipped")  # its driver part fails by itself (no repository)
    assert all(states[s] == "skipped" for s in ("timeline", "pmu", "pcsampling"))
    html = (workflow_copy.root / "results/baseline/report/report.html").read_text()
    for stage, v in summary["stages"].items():
        assert (
            v["reason"][:60]
            .replace("&", "&amp;")
            .replace("'", "&#39;")
            .replace('"', "&#34;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            in html
        ), stage
    md = (workflow_copy.root / "results/baseline/report/report.md").read_text()
    assert "## Evidence ledger" in md and "| env_capture | failed |" in md and "| correctness | skipped |" in md


def test_snakemakes_own_report_zip_is_built(demo_run, tmp_path):
    workflow_copy, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    # --report only reads the results; the zip goes outside the shared run's tree
    result = workflow_copy.snakemake("--report", str(tmp_path / "report.zip"), overlay=base_overlay())
    assert result.returncode == 0, result.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "report.zip") as bundle:
        names = bundle.namelist()
        page = bundle.read("report/report.html").decode()  # Snakemake's page, at the top of the bundle
    # The categories the rules' report() marks give (workflow/rules/*.smk, captions in workflow/report/), each file
    # under its category and subcategory; Comparisons only where `compare` is configured (not in the demo).
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", page).group(1))
    assert set(categories) == {"Report", "Summary", "Stages", "Per-rank tables", "Heat maps and charts"}, list(
        categories
    )
    assert categories["Summary"] == {"baseline": ["results/baseline/report/summary.json"]}
    assert set(categories["Stages"]) == {
        "baseline",
        "timeline",
        "pmu",
        "pcsampling",
        "pipe_timeline",
        "debugclock",
        "probe",
    }
    assert "results/baseline/timeline/stats.json" in categories["Stages"]["timeline"]
    assert {"correctness", "baseline", "pmu", "timeline drill-down"} <= set(categories["Per-rank tables"])
    assert categories["Per-rank tables"]["timeline drill-down"] == [
        "results/baseline/timeline/ranks/rank0/launches.csv"
    ]
    charts = [Path(f).name for f in categories["Heat maps and charts"]["baseline"]]
    assert {"entry_wait.svg", "pmu_busy.svg", "pmu_no_pipe.svg", "baseline_kernel_per_rank.png"} <= set(charts), charts
    # Every marked file is in the bundle itself, with its content: it opens without the run's directory.
    shipped = {n.rsplit("/", 1)[-1] for n in names if "/data/raw/" in n}
    assert {"summary.json", "stats.json", "roles.json", "launches.csv", "pmu_busy.svg", "entry_wait.svg"} <= shipped
    with zipfile.ZipFile(tmp_path / "report.zip") as bundle:
        summary = json.loads(bundle.read(next(n for n in names if n.endswith("/summary.json"))))
        heatmap = bundle.read(next(n for n in names if n.endswith("/pmu_busy.svg"))).decode()
    assert summary["schema"].startswith("dispatchprof.summary/") and summary["stages"]["pmu"]["state"] == "ok"
    assert heatmap.startswith("<svg") and "AIV" in heatmap


# Chromium's own background services (clock, updates, accounts) also come through the proxy despite the
# flags; they are the browser's, not the page's. Everything else is a request the report made.
BROWSER_SERVICES = re.compile(
    r"^(?:CONNECT |GET http://|POST http://)?[\w.-]*(?:google\.com|googleapis\.com|gstatic\.com|gvt1\.com)[:/]"
)


class ProxyRecorder:
    """A listener standing in for the proxy: every request the browser makes to the network lands here."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                data = conn.recv(300)
                # a connection closed before any byte asked for nothing: the browser's preconnect to its proxy (a loaded
                # CI run saw one), no request of the page
                if data:
                    self.requests.append(data.split(b"\r\n")[0].decode(errors="replace"))
            except OSError as exc:
                self.requests.append(f"unreadable request: {exc}")
            conn.close()

    def page_requests(self) -> list[str]:
        return [r for r in self.requests if not BROWSER_SERVICES.match(r)]


@pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true",
    reason="chromium not installed (Debian package chromium); CI installs it",
)
def test_report_renders_in_a_real_browser_with_images_and_no_network(demo_run, tmp_path):
    assert CHROMIUM, "CI=true but chromium is missing: .ci/run must install it"
    workflow_copy, run = demo_run
    assert run.returncode == 0, run.stderr[-3000:]
    report = workflow_copy.root / "results/baseline/report/report.html"
    counter = ProxyRecorder()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--proxy-server=http://127.0.0.1:{counter.port}",
        "--proxy-bypass-list=<-loopback>",
    ]
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *flags, "--window-size=1280,4000", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
    )
    for section in (
        "answer",
        "evidence",
        "environment",
        "correctness",
        "baseline",
        "localisation",
        "timeline",
        "pmu",
        "pcsampling",
        "comparison",
        "open-boundaries",
        "ledger",
    ):
        assert f'id="{section}"' in dom, section
    assert dom.count('src="data:image/png;base64,') >= 3
    assert "SIMULATED DATA" in dom
    assert shot.is_file() and shot.stat().st_size > 50_000
    assert counter.page_requests() == []
    import matplotlib.image

    assert matplotlib.image.imread(shot).shape[1] == 1280
    # report.md carries the per-rank, role and stall tables the HTML has (before: the baseline scopes only)
    md = (workflow_copy.root / "results/baseline/report/report.md").read_text()
    roles = json.loads((workflow_copy.root / "results/baseline/pmu/roles.json").read_text())
    for role, v in roles["roles"].items():
        assert (
            f"| {role} | {v['cores']} | {v['aiv_time_us_median']:.1f} / "
            f"{v['aiv_time_us_max']:.1f} / {v['aiv_time_us_spread']:.1f} |" in md
        ), role
    stalls = json.loads((workflow_copy.root / "results/baseline/pcsampling/stalls.json").read_text())
    worst = max(stalls["stalls"]["not_issue"], key=stalls["stalls"]["not_issue"].get)
    assert (
        f"{100 * stalls['stalls']['not_issue'][worst]:.1f}% |" in md
        and "| hot line | share of all PC samples (Active included; mean over ranks with samples) |" in md
    )
    timeline = json.loads((workflow_copy.root / "results/baseline/timeline/stats.json").read_text())
    for rank, v in timeline["per_rank"].items():
        assert f"| {rank} | {v['node']} | {v['device']} | {v['launches']} | {v['median_us']:.1f} |" in md, rank
