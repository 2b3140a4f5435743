"""For each knob, the simulated cluster's artifacts and its ground truth agree: msprof task durations, the latency
CSV (both measurement modes), the full-API times and msopprof's per-core rows are computed from the same events
that sim_truth.json records. The stand-in runs as the workflow runs it (perf driver generated from the test, under
the stand-in msprof / msopprof, node 0 first), on a small 2-node x 2-rank cluster; the library's own parsers read
the artifacts, the truth file is read only here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import pytest

from conftest import ROOT, free_port
from dispatchprof.formats.latency_csv import parse_api_csv, parse_latency_csv
from dispatchprof.formats.msopprof import discover as discover_opprof
from dispatchprof.formats.msopprof import kernel_runs, metric_files, read_metric_csv
from dispatchprof.formats.msprof import discover as discover_prof
from dispatchprof.formats.msprof import read_db_target, read_prof_info
from dispatchprof.formats.msprof_tables import read_db
from dispatchprof.tools.driver import patch_test
from dispatchprof.tools.toolchain import SIM_ENV, Toolchain

SIM = ROOT / "workflow" / "sim"
REPO = SIM / "ascend_deepep"
NODES, RPN, ITERATIONS, WARMUP = 2, 2, 14, 2
SHAPE = [
    "--num-tokens",
    "64",
    "--num-max-tokens-per-rank",
    "64",
    "--hidden",
    "1024",
    "--num-topk",
    "3",
    "--num-experts",
    "16",
    "--num-aiv",
    "16",
]


def driver(tmp: Path, rpn: int = RPN) -> Path:
    loop = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    template = loop.from_string((ROOT / "workflow/templates/perf_loop.py.j2").read_text())
    test = REPO / "test/test_v2_elastic_dispatch_precision.py"
    patched = patch_test(test.read_text(), str(test), "buffer.dispatch", lambda v: template.render(**v), rpn)
    (tmp / "perf_driver.py").write_text(patched.source)
    shutil.copyfile(ROOT / "workflow/templates/dispatchprof_perf_runtime.py", tmp / "dispatchprof_perf_runtime.py")
    return tmp / "perf_driver.py"


def run_cluster(
    tmp: Path,
    knobs: dict,
    profiler: str | None = None,
    extra_env: dict | None = None,
    rpn: int = RPN,
    iterations: int = ITERATIONS,
    expect_ok: bool = True,
    opprof_args: tuple[str, ...] = ("--aic-metrics=PipeUtilization",),
) -> Path:
    """Both nodes of the stand-in cluster; returns the driver's output directory."""
    tmp.mkdir(parents=True, exist_ok=True)
    script = driver(tmp, rpn)
    sim_env = {
        SIM_ENV[k]: (",".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else str(v))
        for k, v in knobs.items()
    }
    chain = Toolchain("sim", REPO, SIM / "Ascend", bin_dir=SIM / "bin", sim_env=sim_env)
    port = free_port()
    out = tmp / "out"
    procs = []
    for node in range(NODES):
        env = chain.env(
            extra={
                "WORLD_SIZE": str(NODES),
                "RANK": str(node),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "DISPATCHPROF_OUT": str(out),
                "DISPATCHPROF_ITERATIONS": str(iterations),
                "DISPATCHPROF_WARMUP": str(WARMUP),
                "DISPATCHPROF_NUM_EXPERTS": "16",
                "DISPATCHPROF_RANKS_PER_NODE": str(rpn),
                "DISPATCHPROF_TOPK_KEY": "topk_idx",
                "AKL_LATENCY_CLOCK_HZ": "1000000000",
                **chain.driver_env(),
                **(extra_env or {}),
            }
        )
        argv = [
            sys.executable,
            str(script),
            "--ep-size",
            str(rpn),
            *SHAPE,
            "--log-dir",
            str(tmp / "logs"),
            "--run-tag",
            "t",
        ]
        if profiler == "msprof":
            argv = ["msprof", f"--output={tmp / 'prof' / f'node{node}'}", "--task-time=on", *argv]
        elif profiler == "msopprof":
            argv = [
                "msopprof",
                "--kernel-name=elastic_dispatch_kernel",
                *opprof_args,
                f"--output={tmp / 'opprof' / f'node{node}'}",
                *argv,
            ]
        log = open(tmp / f"node{node}.log", "w")
        procs.append(
            subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )
        if node == 0:
            time.sleep(0.5)  # node 0 serves the store
    try:
        codes = [p.wait(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert (codes == [0, 0]) == expect_ok, "".join((tmp / f"node{n}.log").read_text()[-2000:] for n in range(NODES))
    return out


def truth_of(out: Path) -> dict:
    truth = json.loads((out / "latency" / "sim_truth.json").read_text())
    assert truth["schema"] == "dispatchprof.sim_truth/2" and truth["toolchain"] == "sim"
    return truth


def column(truth: dict, key: str) -> dict[tuple[int, int], float]:
    """(rank, iteration) -> value of every launch of the session."""
    return {(r["rank"], i): r[key] for i, launch in enumerate(truth["launches"]) for r in launch["ranks"]}


def assert_csv_matches(out: Path, truth: dict, key: str) -> None:
    table = parse_latency_csv(out / "latency" / "dispatch_latency.csv")
    frame = table.frame
    expected = column(truth, key)
    assert len(frame) == len(expected) == NODES * RPN * ITERATIONS
    for rank, iteration, us in zip(frame["rank"], frame["iteration"], frame["us"]):
        assert us == pytest.approx(expected[(rank, iteration)], abs=0.002)
    api = parse_api_csv_all(out)
    for (rank, iteration), us in api.items():
        assert us == pytest.approx(column(truth, "api_us")[(rank, iteration)], abs=0.002)


def parse_api_csv_all(out: Path) -> dict[tuple[int, int], float]:
    rows = {}
    for path in sorted((out / "api").glob("rank*.csv")):
        frame = parse_api_csv(path)
        rows.update({(r, i): us for r, i, us in zip(frame["rank"], frame["iteration"], frame["us"])})
    assert len(rows) == NODES * RPN * ITERATIONS
    return rows


def msprof_tasks(tmp: Path) -> dict[int, dict[str, list]]:
    """Per global rank: the start and duration (ns, that node's clock) of each kernel name, in launch order."""
    tasks: dict[int, dict[str, list]] = {}
    for node in range(NODES):
        for prof in discover_prof(tmp / "prof" / f"node{node}"):
            info = read_prof_info(prof)
            frame = read_db(info.db)
            tasks[info.rank_id] = {name: list(zip(g["start_ns"], g["dur_ns"])) for name, g in frame.groupby("name")}
    assert sorted(tasks) == list(range(NODES * RPN))
    return tasks


KNOBS = {
    "plain": {},
    "late_rank": {"late_rank": 1, "late_us": 120},
    "late_node": {"late_node": 1, "late_us": 90, "late_prob": 0.5},
    # two late ranks through DEEPEP_SIM_LATE_RANK2/_US2 as the
    # workflow maps them: the 120 us one arrives last every time
    "late_rank2": {"late_rank": 1, "late_us": 8, "late_rank2": 2, "late_us2": 120},
    "slow_rank": {"slow_rank": 2, "slow_factor": 1.3},
    # A slow core slows its WQE building, not the wire. Rank 3's send to rank 0 is the first of its core's loop, rank
    # 1's the second, after a cross-node one: rank 3's is last once (factor - 2) x WQE time > the same-node
    # wire time, i.e. a factor above 4.5 at 6000 B/us of WQEs against 2400 B/us of wire; x6 it is.
    "slow_sender": {"slow_role": {"rank": 3, "role": "URMASendToken", "factor": 6.0}},
    "slow_receiver": {"slow_role": {"rank": 0, "role": "LocalWindowCopy", "factor": 4.0}},
    "slow_link": {"slow_link": {"src_node": 1, "dst_node": 0, "factor": 2.5}},
    "spiky_rank": {"spiky_rank": 0},
    "role_speedup": {"role_speedup": {"URMASendToken": 0.5}},
}


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_msprof_tasks_latency_csv_and_api_times_are_the_truths_events(tmp_path, name):
    knobs = {**KNOBS[name], "clock_offset_us": {"1": 2500.0}, "clock_drift_ppm": {"1": 40.0}, "noise_seed": 11}
    out = run_cluster(tmp_path, knobs, profiler="msprof")
    truth = truth_of(out)
    assert_csv_matches(out, truth, "kernel_mode_us")
    tasks = msprof_tasks(tmp_path)
    epoch = truth["run"]["epoch_ns"]
    for i, launch in enumerate(truth["launches"]):
        for r in launch["ranks"]:
            node = r["node"]
            clock = truth["clocks"][str(node)]
            rate = 1 + clock["drift_ppm"] * 1e-6  # a drifting clock stretches durations too
            start_ns, dur_ns = tasks[r["rank"]]["elastic_dispatch_kernel"][i]
            assert dur_ns / 1000 == pytest.approx(r["task_us"] * rate, abs=0.002)
            # what the node's clock says = true time + offset + drift
            true_start = r["kernel_start_us"]
            assert (start_ns - epoch) / 1000 == pytest.approx(
                true_start + clock["offset_us"] + clock["drift_ppm"] * 1e-6 * true_start, abs=0.01
            )
            barrier_start, barrier_dur = tasks[r["rank"]]["cached_notify_combine"][i]
            assert barrier_dur / 1000 == pytest.approx(r["barrier_wait_us"] * rate, abs=0.002)
    # each knob's fingerprint in the truth, so that the agreement above is about a case that shows something
    causes = {c["knob"]: c for c in truth["root_causes"]}
    if name == "late_rank":
        assert causes["late_rank"]["ranks"] == [1]
        assert all(launch["barrier"]["last_rank"] == 1 for launch in truth["launches"][WARMUP:])
    if name == "late_rank2":
        assert (
            causes["late_rank2"]["ranks"] == [2]
            and truth["knobs"]["late_rank2"] == 2
            and truth["knobs"]["late_us2"] == 120.0
        )
        assert all(launch["barrier"]["last_rank"] == 2 for launch in truth["launches"][WARMUP:])
    if name == "late_node":
        late = [launch for launch in truth["launches"] if launch["barrier"]["last_rank"] in (2, 3)]
        assert 0.2 < causes["late_node"]["fraction"] < 0.9 and late
    if name == "slow_sender":
        assert all(
            r["tokens_awaited_rank"] == 3
            for launch in truth["launches"][WARMUP:]
            for r in launch["ranks"]
            if r["node"] == 0
        )
    if name == "slow_link":
        # node 0's ranks wait for node 1's tokens, not in every launch: a same-node send queued on a core behind a
        # cross-node one that shares a receive port (two senders into rank 2) can land later still
        awaited = [
            r["tokens_awaited_rank"] in (2, 3)
            for launch in truth["launches"][WARMUP:]
            for r in launch["ranks"]
            if r["node"] == 0
        ]
        assert sum(awaited) >= 0.8 * len(awaited)


def test_the_event_measurement_mode_writes_the_truths_event_latencies(tmp_path):
    out = run_cluster(tmp_path, {"late_rank": 2, "late_us": 80}, extra_env={"AKL_LATENCY_MODE": "event"})
    truth = truth_of(out)
    assert parse_latency_csv(out / "latency" / "dispatch_latency.csv").measurement == "event"
    assert_csv_matches(out, truth, "event_mode_us")
    kernel, event = column(truth, "kernel_mode_us"), column(truth, "event_mode_us")
    assert all(event[k] > kernel[k] for k in kernel)  # the entry barrier is inside the event scope


def test_kernel_mode_latency_is_ticks_over_the_configured_clock(tmp_path):
    # A2/A3's 50 MHz on a 950 (1 GHz counter): every kernel-mode sample reads 20x the truth, as on the device.
    out = run_cluster(tmp_path, {}, extra_env={"AKL_LATENCY_CLOCK_HZ": "50000000"})
    table = parse_latency_csv(out / "latency" / "dispatch_latency.csv")
    assert table.clock_hz == "50000000"
    expected = column(truth_of(out), "kernel_mode_us")
    for rank, iteration, us in zip(table.frame["rank"], table.frame["iteration"], table.frame["us"]):
        assert us == pytest.approx(20 * expected[(rank, iteration)], abs=0.05)


def test_kernel_mode_without_the_clock_fails_every_rank_before_launch(tmp_path):
    run_cluster(tmp_path, {}, extra_env={"AKL_LATENCY_CLOCK_HZ": ""}, expect_ok=False)
    logs = "".join((tmp_path / f"node{n}.log").read_text() for n in range(NODES))
    assert "AKL_LATENCY_CLOCK_HZ=''" in logs
    assert not (tmp_path / "out" / "latency" / "dispatch_latency.csv").exists()


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_pmu_rows_are_the_replayed_launch_of_the_truth(tmp_path, name):
    out = run_cluster(
        tmp_path, {**KNOBS[name], "noise_seed": 5, "icache_hot_role": "SelfCopyToken"}, profiler="msopprof"
    )
    truth = truth_of(out)
    assert len(truth["replays"]) == 1 and truth["replays"][0]["replay"]
    replay = {r["rank"]: r for r in truth["replays"][0]["ranks"]}
    seen = 0
    for node in range(NODES):
        for opprof in discover_opprof(tmp_path / "opprof" / f"node{node}"):
            for run in kernel_runs(opprof):
                rank = node * RPN + run.device
                _, frame = read_metric_csv(metric_files(run.directory)["PipeUtilization"])
                values = frame.pivot(index="block_id", columns="metric", values="value")
                for core in replay[rank]["cores"]:
                    row = values.loc[core["block_id"]]
                    assert row["aiv_time(us)"] == pytest.approx(core["aiv_time_us"], abs=0.002)
                    for pipe, column in (
                        ("vec", "aiv_vec_time(us)"),
                        ("scalar", "aiv_scalar_time(us)"),
                        ("mte2", "aiv_mte2_time(us)"),
                    ):
                        assert row[column] == pytest.approx(core["pipes_us"][pipe], abs=0.002)
                    assert core["busy_us"] + core["polling_us"] == pytest.approx(core["aiv_time_us"], abs=0.01)
                    assert (row["aiv_icache_miss_rate"] > 0.1) == (core["role"] == "SelfCopyToken")
                seen += 1
    assert seen == NODES * RPN
    # Under replay the host lateness is gone (the tools' set-up skew only).
    assert max(r["arrival_us"] for r in replay.values()) < 50.0
    if name == "slow_sender":
        assert all(r["tokens_awaited_rank"] == 3 for r in replay.values() if r["node"] == 0)


def test_every_launch_is_written_in_its_own_folder_with_every_requested_metric_csv(tmp_path):
    # Before: the stand-in wrote PipeUtilization only, whatever --aic-metrics asked for.
    out = run_cluster(
        tmp_path,
        {"noise_seed": 5},
        profiler="msopprof",
        opprof_args=("--launch-count=3", "--aic-metrics=PipeUtilization,memory,L2Cache"),
    )
    replays = truth_of(out)["replays"]
    assert len(replays) == 3  # three replayed launches, each profiled
    fixtures = ROOT / "tests" / "fixtures" / "msopprof"
    launches: dict[int, list[int]] = {}
    for node in range(NODES):
        for opprof in discover_opprof(tmp_path / "opprof" / f"node{node}"):
            for run in kernel_runs(opprof):
                rank = node * RPN + run.device
                launches.setdefault(rank, []).append(run.n)
                files = metric_files(run.directory)
                assert {"PipeUtilization", "Memory", "L2Cache"} <= set(files)
                for metric in (
                    "Memory",
                    "L2Cache",
                ):  # the documented 950 header (the fixtures are written from the doc)
                    header, frame = read_metric_csv(files[metric])
                    assert header == (fixtures / f"{metric}_950.csv").read_text().splitlines()[0].rstrip(",").split(",")
                    assert frame[frame["metric"] == "aiv_time(us)"]["value"].notna().all()
                _, pipe = read_metric_csv(files["PipeUtilization"])
                times = pipe[pipe["metric"] == "aiv_time(us)"].sort_values("block_id")["value"].tolist()
                truth = next(r for r in replays[run.n]["ranks"] if r["rank"] == rank)
                assert times == pytest.approx(
                    [c["aiv_time_us"] for c in sorted(truth["cores"], key=lambda c: c["block_id"])], abs=0.002
                )
    assert {rank: sorted(ns) for rank, ns in launches.items()} == {rank: [0, 1, 2] for rank in range(NODES * RPN)}


def test_under_replay_a_slow_counting_rank_is_awaited_and_host_lateness_is_gone(tmp_path):
    out = run_cluster(
        tmp_path,
        {"slow_role": {"rank": 1, "role": "CalCumSum", "factor": 30.0}, "late_rank": 3, "late_us": 400},
        profiler="msopprof",
    )
    truth = truth_of(out)
    live = truth["launches"][0]["ranks"]
    replay = truth["replays"][0]["ranks"]
    assert live[3]["late_us"] == 400.0 and truth["launches"][0]["barrier"]["last_rank"] == 3
    assert max(r["arrival_us"] for r in replay) < 50.0 and all(r["late_us"] == 0.0 for r in replay)
    assert all(r["counts_awaited_rank"] == 1 for r in replay)


def test_kernels_before_the_barrier_are_msprof_tasks_of_the_truth(tmp_path):
    knobs = {"pre_kernels": "both", "late_rank": 1, "late_us": 120, "clock_drift_ppm": {"1": 40.0}, "noise_seed": 5}
    out = run_cluster(tmp_path, knobs, profiler="msprof")
    truth = truth_of(out)
    tasks = msprof_tasks(tmp_path)
    for i, launch in enumerate(truth["launches"]):
        assert (
            launch["barrier"]["which"] == "sim_notify_kernel"
            and launch["last_arrival"]["kernel"] == "sim_notify_kernel"
        )
        for r in launch["ranks"]:
            rate = 1 + truth["clocks"][str(r["node"])]["drift_ppm"] * 1e-6
            for pre in r["pre_tasks"]:
                _, dur_ns = tasks[r["rank"]][pre["name"]][i]
                assert dur_ns / 1000 == pytest.approx((pre["end_us"] - pre["start_us"]) * rate, abs=0.002)
            # stream order: layout, notify, then the barrier kernel
            layout, notify = (tasks[r["rank"]][name][i][0] for name in ("sim_layout_kernel", "sim_notify_kernel"))
            assert layout < notify < tasks[r["rank"]]["cached_notify_combine"][i][0]
    # the late rank waits least in the collective stand-in, and is the truth's last arrival there
    assert all(launch["last_arrival"]["rank"] == 1 for launch in truth["launches"][WARMUP:])


def test_each_launch_call_in_cann_api_is_the_truths_host_path(tmp_path):
    """The db's host call of each dispatch kernel launch (CANN_API, linked by connectionId): the second of the launch's
    two calls (barrier kernel, dispatch kernel), which share its host path from dispatch() entry plus the lateness to
    the launch reaching the device, on the node's clock; so it starts before its kernel, and a late rank's late."""
    knobs = {"late_rank": 1, "late_us": 120, "clock_offset_us": {"1": 2500.0}, "clock_drift_ppm": {"1": 40.0}}
    out = run_cluster(tmp_path, {**knobs, "noise_seed": 11}, profiler="msprof")
    truth = truth_of(out)
    epoch = truth["run"]["epoch_ns"]
    calls = {}
    for node in range(NODES):
        for prof in discover_prof(tmp_path / "prof" / f"node{node}"):
            info = read_prof_info(prof)
            calls[info.rank_id] = read_db_target(info.db, lambda name: name == "elastic_dispatch_kernel", 0)
    for i, launch in enumerate(truth["launches"]):
        for r in launch["ranks"]:
            clock = truth["clocks"][str(r["node"])]
            kernels = calls[r["rank"]]
            assert kernels.host is not None and kernels.host.name[i] == "launch"
            issued = r["host_call_us"] + r["late_us"]
            expected = (issued + (r["arrival_us"] - issued) / 2, r["arrival_us"])
            got = (int(kernels.host.start_ns[i]), int(kernels.host.start_ns[i] + kernels.host.dur_ns[i]))
            for ns, true_us in zip(got, expected):
                on_clock = true_us + clock["offset_us"] + clock["drift_ppm"] * 1e-6 * true_us
                assert (ns - epoch) / 1000 == pytest.approx(on_clock, abs=0.01)
            assert got[1] <= kernels.start_ns[i]
            assert (r["late_us"] >= 120) == (r["rank"] == 1)


def test_the_truths_per_launch_events_and_costs_add_up(tmp_path):
    out = run_cluster(
        tmp_path,
        {
            "late_rank": 2,
            "late_us": 80,
            "slow_role": {"rank": 0, "role": "SelfCopyToken", "factor": 1.5},
            "noise_seed": 4,
        },
    )
    truth = truth_of(out)
    launches = truth["launches"]
    assert truth["measured_calls"] == [launch["call"] for launch in launches[WARMUP:]]
    for before, launch in zip(launches, launches[1:]):
        ends = {r["rank"]: r["kernel_end_us"] for r in launch["ranks"]}
        assert launch["period_us"] == pytest.approx(
            max(ends.values()) - max(r["kernel_end_us"] for r in before["ranks"]), abs=0.002
        )
        assert launch["timed_us"] == pytest.approx(max(r["kernel_mode_us"] for r in launch["ranks"]), abs=0.001)
        assert (
            launch["last_end"]["rank"] == max(ends, key=ends.get)
            and launch["last_arrival"]["rank"] == launch["barrier"]["last_rank"]
        )
    # a cause's cost per launch is the mean of its per-launch savings over the measured launches
    for cause in truth["causes"]:
        per = [launch["costs"].get(cause["cause"], {}) for launch in launches[WARMUP:]]
        assert cause["cost_us_per_launch"] == pytest.approx(
            sum(p.get("period_us") or 0.0 for p in per) / len(per), abs=1e-5
        )
        assert cause["cost_timed_us_per_launch"] == pytest.approx(
            sum(p.get("timed_us", 0.0) for p in per) / len(per), abs=1e-5
        )
    assert truth["root_causes"][0]["cause"] == "late_rank" and truth["root_causes"][0]["cost_us_per_launch"] > 20.0
    # SelfCopyToken x1.5 is off the critical path here: listed, with nothing saved, and no root cause
    idle = next(c for c in truth["causes"] if c["cause"] == "slow_role")
    assert idle["cost_us_per_launch"] == 0.0 and "slow_role" not in [c["cause"] for c in truth["root_causes"]]
