"""What the benchmarks share: the repository root, the interpreter, timing a command with its peak memory, a
fresh copy of the workflow, and the environment of the timed Snakemake runs. run.py and fixed_cost.py both import
it, so neither imports the other's module at its top (they did: an import cycle).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        stack.extend(children.get(current, []))
        try:
            with open(f"/proc/{current}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def measure(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> dict:
    """Wall time and peak whole-tree RSS of one command (sampled every 20 ms)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_bytes(proc.pid))
            done.wait(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, _ = proc.communicate()
    done.set()
    thread.join()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{out[-2000:]}")
    return {"wall_s": wall, "peak_rss_mib": peak[0] / 2**20, "output_tail": out[-300:]}


def workflow_copy(dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        ROOT,
        dest,
        ignore=shutil.ignore_patterns(
            "results", ".snakemake", ".git", "__pycache__", ".venv", "benchmarks", "tests", "build"
        ),
    )
    return dest


def slurm_client_delay(env: dict | None = None) -> float | None:
    """Seconds `scontrol show config` takes. The SLURM executor plugin runs it whenever Snakemake starts; with a
    SLURM client installed but no controller reachable it waits ~9 s, which would be billed to (b)."""
    if not shutil.which("scontrol", path=(env or os.environ).get("PATH")):
        return None
    started = time.perf_counter()
    try:
        subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=15, env=env)
    except subprocess.TimeoutExpired:
        pass
    return time.perf_counter() - started


def scontrol_stub_env(work: Path) -> tuple[dict, str | None]:
    """The environment of the timed Snakemake runs. When `scontrol show config` is slow here (a SLURM client with no
    controller answering: the executor plugin runs it at every Snakemake start, only to word a help text, and waits
    up to 10 s), the runs get a `scontrol` that fails at once, as on a machine without SLURM or with a controller that
    answers. Returns the environment and a note saying so (None when the real scontrol was quick or absent)."""
    env = dict(os.environ)
    delay = slurm_client_delay()
    if delay is None or delay < 1:
        return env, None
    stub_dir = work / "scontrol-stub"
    stub_dir.mkdir(parents=True, exist_ok=True)
    stub = stub_dir / "scontrol"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    env["PATH"] = f"{stub_dir}{os.pathsep}{env['PATH']}"
    return env, (
        f"note: `scontrol show config` took {delay:.1f} s here (a SLURM client without a reachable controller); the "
        "timed Snakemake runs use a scontrol that fails at once "
        f"({stub}), so they do not include the executor plugin's wait."
    )


def gate_rows(shapes: dict, faults: dict, row_of) -> list[dict]:
    """One row per shape and fault of a gate benchmark (``row_of(shape,
    fault)``: its counts), each printed as it ends."""
    rows = []
    for label, shape in shapes.items():
        for name, fault in faults.items():
            rows.append({"shape": label, "fault": name, **row_of(shape, fault)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def write_results(out: Path, lines: list[str], payload: dict) -> None:
    """A benchmark's table (``out``.md, printed too) and its rows (``out``.json) side by side."""
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    print("\n".join(lines))
