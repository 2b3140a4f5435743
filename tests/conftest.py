"""Shared test helpers: the library on sys.path, a throw-away copy of the workflow, snakemake runs."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml

# A reader's unexpected exception is raised, not folded into an `invalid` stage (shell/stage.py run_stage), so that a
# bug still fails a test; the snakemake runs of the workflow tests inherit it. Tests of the folding itself unset it.
os.environ["DISPATCHPROF_RAISE"] = "1"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WorkflowCopy:
    """A copy of the repository in a temporary directory, run with the current Python's snakemake."""

    def __init__(self, root: Path):
        self.root = root

    def overlay(self, data: dict, name: str = "overlay.yaml") -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(data))
        return path

    def snakemake(
        self, *args: str, overlay: dict | None = None, timeout: float = 600, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]  # before --configfile, which takes every
        if overlay is not None:  # word after it as a file: a target there would be read as a config file
            cmd += ["--configfile", "config/config.yaml", str(self.overlay(overlay))]
        return subprocess.run(
            cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout, env=without_slurm_probe(env)
        )

    def status(self, stage: str, experiment: str = "baseline") -> dict:
        import json

        return json.loads((self.root / "results" / experiment / stage / "status.json").read_text())


_TEST_NUMBER = __import__("itertools").count()


@pytest.fixture(scope="session")
def cluster_lock_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cluster-lock")


@pytest.fixture(autouse=True)
def simulated_cluster_of_the_tests(cluster_lock_dir: Path) -> Iterator[None]:
    """A stage body called in this process (no Snakemake) takes the cluster lock as a job would: in a directory of
    the test's own (the job's reaper, which the test process keeps, holds a copy of every lock taken before it
    started), let go after the test, since a test process outlives its jobs (a job's lock lasts until the job process
    ends). Snakemake runs of the workflow tests lock their own copy's directory."""
    from dispatchprof.shell import cluster_lock

    saved, cluster_lock.SIM_DIR = cluster_lock.SIM_DIR, cluster_lock_dir / f"test{next(_TEST_NUMBER)}"
    yield
    cluster_lock.SIM_DIR = saved
    while (held := cluster_lock.held()) is not None:
        held.release()


@pytest.fixture
def cluster_held() -> None:
    """For a test that runs a collective itself (tools.collective.run_test) without a stage: the lock its stage would
    hold (dispatchprof.shell.cluster_lock)."""
    from dispatchprof.shell import cluster_lock

    scope = cluster_lock.Scope(cluster_lock.SIM_DIR, (cluster_lock.SIM_HOST,), "a test's simulated cluster")
    cluster_lock.take(scope, cluster_lock.Holder.here("test", "collective"), 60, lambda _: None)


def without_slurm_probe(env: dict | None = None) -> dict:
    """The environment of a local Snakemake run (--cores, no executor plugin in use), with `scontrol` answering
    "no controller" at once. The SLURM executor plugin runs `scontrol show config` whenever Snakemake starts, only
    to word a help text; with a SLURM client installed but no controller answering (this machine after the SLURM
    test stopped its daemons) that takes ~9 s, up to the plugin's 10 s timeout, on every run. The SLURM tests
    run the real scontrol."""
    env = dict(os.environ if env is None else env)
    if shutil.which("scontrol", path=env.get("PATH")):
        stub_dir = Path(os.environ.get("PYTEST_SCONTROL_STUB_DIR") or _write_scontrol_stub())
        env["PATH"] = f"{stub_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def _write_scontrol_stub() -> Path:
    import tempfile

    stub_dir = Path(tempfile.mkdtemp(prefix="scontrol-stub-"))
    stub = stub_dir / "scontrol"
    stub.write_text(
        "#!/bin/sh\necho 'scontrol stub (tests/conftest.py): no SLURM controller for local runs' >&2\nexit 1\n"
    )
    stub.chmod(0o755)
    os.environ["PYTEST_SCONTROL_STUB_DIR"] = str(stub_dir)
    return stub_dir


def copy_workflow(dest: Path) -> WorkflowCopy:
    """A clean copy of the workflow, as a fresh clone would be (no results, no Snakemake state)."""
    ignore = shutil.ignore_patterns(
        "results", ".snakemake", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "build", ".venv"
    )
    shutil.copytree(ROOT, dest, ignore=ignore)
    return WorkflowCopy(dest)


@pytest.fixture
def workflow_copy(tmp_path: Path) -> WorkflowCopy:
    return copy_workflow(tmp_path / "wf")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[WorkflowCopy, subprocess.CompletedProcess]:
    """One run of the default demo (2 nodes x 8 ranks, every stage, no fault), shared by the tests that only read
    its results: each whole run costs ~40 s on 2 cores. A test that reruns, changes or deletes anything takes its
    own workflow_copy."""
    copy = copy_workflow(tmp_path_factory.mktemp("demo") / "wf")
    return copy, copy.snakemake(overlay=base_overlay(full_length=True))


# Fewer calls per rank than the defaults (baseline 110, timeline 205, DebugClock 20): a whole simulated run costs ~0.15
# s per call on 2 cores, and the tests check what each stage does, not its statistics at full length. The shared demo
# run keeps the defaults (it is the README's run); a test that needs more calls says so in its own overlay. The
# msprof-analyze cross-check (timeline.crosscheck: auto, ~9 s beside every timeline with msprof-analyze
# installed) runs in the demo run, which checks it; other tests leave it off unless their overlay says otherwise.
SHORT_RUN = {
    "baseline": {"iterations": 14, "warmup": 4},
    "timeline": {"iterations": 9, "warmup": 2, "crosscheck": "off"},
    "debugclock": {"iterations": 8, "warmup": 2},
}


def base_overlay(fixed_ports: bool = False, full_length: bool = False, **sections: dict) -> dict:
    """A test's config overlay. Ports stay `auto` (a free pair per run under launcher local), as a user's do;
    launchers slurm and ssh would use the launcher's fixed ports, so their tests pass free ones explicitly.
    Calls per rank and the cross-check are SHORT_RUN's unless
    ``full_length`` or the test's own sections say otherwise."""
    import copy

    cluster: dict = {"ready_timeout": 30, "fail_grace": 3}
    if fixed_ports:
        cluster.update(master_port=free_port(), shmem_port=free_port())
    overlay: dict = {"cluster": cluster, **({} if full_length else copy.deepcopy(SHORT_RUN))}
    for key, value in sections.items():
        overlay.setdefault(key, {}).update(value) if isinstance(value, dict) else overlay.__setitem__(key, value)
    return overlay


FAIL_ON_LINE = re.compile(r"^fail_on \[[a-z, ]*\]: (.+?); exit status 1 ", re.M)


def assert_ended_by_fail_on(result: subprocess.CompletedProcess, *stages: str) -> None:
    """The run went through (no job error, no traceback) and stages ended in a fail_on state (by default failed,
    timeout or invalid): Snakemake exits 1 after the report and the end-of-run table, naming each such stage, e.g.
    ``assert_ended_by_fail_on(result, "baseline/pmu is timeout")``. Every stage given must be named; others may be."""
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    said = FAIL_ON_LINE.search(out)
    assert said, out[-3000:]
    named = said.group(1).split(", ")
    assert set(stages) <= set(named), (named, stages)
    assert "Error in rule" not in out and "Traceback" not in out, out[-3000:]


def require(available: bool, what: str) -> None:
    """Skip a test whose prerequisite is missing, except under CI=true, where the prerequisite is part of the
    contract (.ci/run installs it) and its absence fails the test."""
    if available:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {what} is missing")
    pytest.skip(f"{what} is missing")


# Tests that share state run on one pytest-xdist worker (README's test command runs with -n 2 --dist loadgroup):
# the shared demo run is made once, and the tests that start services (SLURM daemons, sshd, both installed with
# apt-get under one dpkg lock) never run at the same time. A module-scoped fixture is made once per worker that runs
# one of its tests: the whole-run fixtures of test_debugclock.py (collected), test_pipe_timeline.py (both) and
# test_probe.py (demo), ~30-50 s each, keep their tests on one worker so that they are made once.
XDIST_GROUPS = {"demo_run": "demo", "collected": "debugclock_run", "both": "pipe_timeline_runs", "demo": "probe_run"}
SERVICE_FILES = ("test_slurm.py", "test_ssh.py")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "xdist_group(name): run on the same pytest-xdist worker as the group's other tests"
    )
    if (
        config.getoption("dist", default=None) == "loadgroup"
        and not hasattr(config, "workerinput")
        and int(pytest.__version__.split(".")[0]) >= 9
    ):
        # pytest 9 keeps node ids where pytest-xdist 3.8 appends the group: groups would be silently ignored
        raise pytest.UsageError(
            "--dist loadgroup needs pytest < 9 with this pytest-xdist "
            f"(pytest {pytest.__version__}; requirements-dev.txt pins it)"
        )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SERVICE_FILES:
            item.add_marker(pytest.mark.xdist_group("services"))
            continue
        for fixture, group in XDIST_GROUPS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
    # Longest first, so the two workers end together: the services group (~4 min on one worker, its files last in
    # name order) used to start last and run alone at the end; the hundreds of short tests now fill the gaps.
    items.sort(
        key=lambda item: 0 if item.path.name in SERVICE_FILES else 1 if item.path.parent.name == "workflow" else 2
    )


@pytest.hookimpl(trylast=True)  # after xdist's hook: its group suffix must be on the ids of grouped tests
def pytest_collection_finish(session: pytest.Session) -> None:
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items if any(item.iter_markers("xdist_group")) and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup did not group {len(lost)} tests (e.g. {lost[0]}): this pytest-xdist cannot mark groups "
            "with this pytest (requirements-dev.txt pins a pair that "
            "can); the SLURM and sshd tests would run at the same time"
        )


# the timeline merge's outputs (workflow/rules/timeline.smk, rule timeline), for the stage tests
TIMELINE_MERGE_OUTPUTS = {
    "coverage": "coverage.parquet",
    "stats": "stats.json",
    "trace": "trace.json",
    "replay": "replay_without_top_cause.json",
}


def stage_run(
    tmp_path: Path,
    stage: str,
    inputs: dict | None = None,
    outputs: dict | None = None,
    params: dict | None = None,
    overlay: dict | None = None,
    **fields,
):
    """A StageRun as a stage's entry script would build it, without Snakemake: the default config (schema defaults
    filled) with ``overlay`` merged on, outputs under ``tmp_path`` (``status`` included), for the stages' unit tests."""
    from dispatchprof.shell.config import deep_merge, fill_defaults, load_schema, run_config
    from dispatchprof.shell.stage import SCHEMA_PATH, StageRun

    config = deep_merge(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), overlay or {})
    fill_defaults(config, load_schema(SCHEMA_PATH))
    config = run_config(config, config["experiment"])
    outs = {name: tmp_path / "out" / path for name, path in (outputs or {}).items()}
    for path in outs.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    return StageRun(
        stage=stage,
        experiment=config["experiment"],
        toolchain="none" if config["mode"] == "analyze" else config["toolchain"],
        status_path=tmp_path / "out" / "status.json",
        outputs=outs,
        inputs=dict(inputs or {}),
        config=config,
        params=dict(params or {}),
        source="import" if config["mode"] == "analyze" else "collected",
        **fields,
    )


def write_part_status(path: Path, stage: str, state: str, reason: str = "a test's part", **fields) -> Path:
    """A part's status.json, as its own job would write it."""
    from dispatchprof.shell.status import Status, write_status

    path.parent.mkdir(parents=True, exist_ok=True)
    write_status(
        path, Status(stage=stage, experiment="baseline", state=state, reason=reason, toolchain="sim", **fields)
    )
    return path


def git(repo: Path, *args: str) -> str:
    """git in ``repo`` with a throwaway identity (tests that make commits); its stdout, stripped."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def latency_table(rng, centre: float, ranks: int = 4, n: int = 30):
    """A tidy latency table (baseline/latency.parquet's columns) of one node: both scopes, the api scope 60 us above
    the kernel's, normal noise of 3 us, the first 3 iterations warm-up."""
    import pandas as pd

    rows = [
        ("e", scope, r, 0, i, i < 3, centre + (60 if scope == "api" else 0) + rng.normal(0, 3))
        for scope in ("kernel", "api")
        for r in range(ranks)
        for i in range(n)
    ]
    return pd.DataFrame(rows, columns=["experiment", "scope", "rank", "node", "iteration", "warmup", "us"])
