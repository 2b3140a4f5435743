import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import ROOT, free_port
from dispatchprof.tools.launch import LocalLauncher, NodeSpec, run_command

PY = sys.executable


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state


def spec(tmp_path: Path, node: int, code: str, port: int) -> NodeSpec:
    script = tmp_path / f"node{node}.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PORT=str(port), OUT=str(tmp_path), NODE=str(node))
    return NodeSpec(node=node, argv=[PY, str(script)], env=env, cwd=tmp_path, log_path=tmp_path / f"node{node}.log")


NODE0_SERVES = """
    import os, socket, time
    time.sleep(0.5)  # node 0 is slow to come up: the others must wait for it
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(os.environ["PORT"]))); s.listen()
    open(os.path.join(os.environ["OUT"], "node0.up"), "w").write(str(time.time()))
    time.sleep(1.0)
"""
NODE_CHECKS_PORT = """
    import os, socket, time
    c = socket.socket()
    ok = c.connect_ex(("127.0.0.1", int(os.environ["PORT"]))) == 0
    open(os.path.join(os.environ["OUT"], f"node{os.environ['NODE']}.saw"), "w").write(f"{ok} {time.time()}")
"""


def test_nodes_after_0_start_only_once_node_0_answers_on_its_port(tmp_path):
    port = free_port()
    specs = [
        spec(tmp_path, 1, NODE_CHECKS_PORT, port),
        spec(tmp_path, 0, NODE0_SERVES, port),
        spec(tmp_path, 2, NODE_CHECKS_PORT, port),
    ]
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=10).run(specs, timeout_s=30)
    assert result.problem is None and result.all_exited_zero
    assert result.order == [0, 1, 2]
    up = float((tmp_path / "node0.up").read_text())
    for node in (1, 2):
        saw, when = (tmp_path / f"node{node}.saw").read_text().split()
        assert saw == "True" and float(when) >= up


def test_timeout_kills_the_whole_process_group_including_grandchildren(tmp_path):
    port = free_port()
    hang = """
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        open(os.path.join(os.environ["OUT"], f"pids{os.environ['NODE']}"), "w").write(f"{os.getpid()} {child.pid}")
        if os.environ["NODE"] == "0":
            import socket
            s = socket.socket(); s.bind(("127.0.0.1", int(os.environ["PORT"]))); s.listen()
        time.sleep(300)
    """
    specs = [spec(tmp_path, 0, hang, port), spec(tmp_path, 1, hang, port)]
    started = time.monotonic()
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=10).run(specs, timeout_s=2)
    assert time.monotonic() - started < 20
    assert result.timed_out and "exceeded its 2 s budget" in result.problem
    pids = [int(p) for n in (0, 1) for p in (tmp_path / f"pids{n}").read_text().split()]
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids), [p for p in pids if alive(p)]
    assert all(n.killed for n in result.nodes)


def test_a_failing_node_stops_the_others_after_the_grace_period(tmp_path):
    port = free_port()
    specs = [
        spec(tmp_path, 0, NODE0_SERVES.replace("time.sleep(1.0)", "time.sleep(300)"), port),
        spec(tmp_path, 1, "import sys; sys.exit(3)", port),
    ]
    started = time.monotonic()
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=10, fail_grace_s=0.5).run(specs, timeout_s=60)
    assert time.monotonic() - started < 15
    assert not result.timed_out
    assert "node 1 exited with code 3" in result.problem
    assert result.nodes[1].exit_code == 3 and result.nodes[0].killed


def test_node_0_that_never_opens_its_port_leaves_the_others_unstarted(tmp_path):
    port = free_port()
    specs = [spec(tmp_path, 0, "import time; time.sleep(300)", port), spec(tmp_path, 1, NODE_CHECKS_PORT, port)]
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=1).run(specs, timeout_s=30)
    assert "did not open 127.0.0.1" in result.problem
    assert not result.nodes[1].ran and not (tmp_path / "node1.saw").exists()


def test_a_port_already_in_use_is_refused_before_anything_starts(tmp_path):
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        specs = [spec(tmp_path, 0, NODE0_SERVES, port), spec(tmp_path, 1, NODE_CHECKS_PORT, port)]
        result = LocalLauncher("127.0.0.1", port, ready_timeout_s=1).run(specs, timeout_s=10)
    assert "already answers" in result.problem
    assert not any(n.ran for n in result.nodes)


def test_run_command_timeout_ends_the_group_and_keeps_the_output():
    result = run_command(["bash", "-c", "echo started; sleep 300 & wait"], timeout_s=1)
    assert result.timed_out and "started" in result.output


def test_run_command_reports_a_missing_program_instead_of_raising():
    result = run_command(["/nonexistent/msopprof", "--help"], timeout_s=5)
    assert not result.ok and "FileNotFoundError" in result.error


def start_launcher_with_one_node(tmp_path):
    """A launcher process running one node that starts a grandchild; returns it once the node wrote both pids."""
    port = free_port()
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import sys, os, json
            sys.path.insert(0, {str(ROOT / "workflow" / "scripts")!r})
            from pathlib import Path
            from dispatchprof.tools.launch import LocalLauncher, NodeSpec
            code = "import os,subprocess,time; c=subprocess.Popen(['sleep','300']); open(os.environ['OUT']+'/pids'+os.environ['NODE'],'w').write(f'{{os.getpid()}} {{c.pid}}'); time.sleep(300)"
            specs = [NodeSpec(0, [sys.executable, '-c', code], dict(os.environ, OUT={str(tmp_path)!r}, NODE='0'), Path('.'), Path({str(tmp_path)!r}) / 'n0.log')]
            result = LocalLauncher('127.0.0.1', {port}, 5).run(specs, 300)
            print(json.dumps({{"problem": result.problem, "timed_out": result.timed_out}}))
            """
        )
    )
    proc = subprocess.Popen([PY, str(driver)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "pids0").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)
    return proc, [int(p) for p in (tmp_path / "pids0").read_text().split()]


def wait_gone(pids, timeout_s):
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def test_sigterm_to_the_launcher_ends_every_node_and_is_no_result(tmp_path):
    proc, pids = start_launcher_with_one_node(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and out == ""  # a cancelled run returns no outcome (no `timeout` to record)
    assert "Cancelled: received SIGTERM" in err
    assert wait_gone(pids, 2) == []


def test_sigkill_to_the_launcher_still_ends_every_node_through_the_reaper(tmp_path):
    proc, pids = start_launcher_with_one_node(tmp_path)
    proc.kill()  # nothing of the launcher runs any more: its finally blocks cannot end the node's group
    proc.communicate(timeout=30)
    assert wait_gone(pids, 10) == []


def test_a_node_that_cannot_start_is_a_problem_not_a_crash(tmp_path):
    port = free_port()
    missing_dir = NodeSpec(0, [PY, "-c", "pass"], dict(os.environ), tmp_path / "nope", tmp_path / "n0.log")
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=1).run([missing_dir], timeout_s=10)
    assert "working directory" in result.problem and "does not exist" in result.problem
    missing_program = NodeSpec(0, ["/nonexistent/python3"], dict(os.environ), tmp_path, tmp_path / "n0.log")
    result = LocalLauncher("127.0.0.1", port, ready_timeout_s=1).run([missing_program], timeout_s=10)
    assert "could not start '/nonexistent/python3'" in result.problem and not result.all_exited_zero


def test_auto_ports_differ_per_run_and_per_key_under_the_local_launcher():
    from dispatchprof.tools.collective import LAUNCHER_PORTS, run_ports

    config = {"launcher": "local", "cluster": {"master_port": "auto", "shmem_port": "auto"}}
    picks = [run_ports(config) for _ in range(5)]
    assert all(p["master_port"] != p["shmem_port"] for p in picks)
    assert len({p["master_port"] for p in picks}) > 1  # picked per run, not a fixed default
    assert all(p["master_port"] not in LAUNCHER_PORTS.values() for p in picks)
    assert run_ports({**config, "launcher": "slurm"}) == LAUNCHER_PORTS  # node 0 is elsewhere: the launcher's ports
    assert (
        run_ports({"launcher": "local", "cluster": {"master_port": 4000, "shmem_port": "auto"}})["master_port"] == 4000
    )


def test_a_held_readiness_port_is_reported_as_not_run(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        specs = [
            NodeSpec(n, [sys.executable, "-c", "pass"], dict(os.environ), tmp_path, tmp_path / f"node{n}.log")
            for n in range(2)
        ]
        outcome = LocalLauncher("127.0.0.1", port, 5).run(specs, 10)
    assert outcome.not_run and "already answers" in outcome.problem and not outcome.order
