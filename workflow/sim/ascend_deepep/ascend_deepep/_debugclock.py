"""The stand-in's DEBUG_CLOCK_ON build: DebugClock ticks of every AIV core, derived from the event model's phases.

Writes what the real DEBUG build writes (docs/formats.md §3), per launch:
- legacy (19c40e9): ``dispatch_clock_rank_<r>.csv`` (``rank,aiv_id,time_<k>_cycles``; slot i = tick[i+1] - tick[i];
  -1 = missing), the latest snapshot only (overwritten every launch);
- AKL semantic trace: ``rank<R>-pid<P>-launch<L>/{trace.bin,capture.json}`` (L counts this process's launches);
  ``AKL_TRACE_KEEP_LAST=1`` keeps only the newest capture per rank and process.
Where: ``AKL_TRACE_DIR`` (AKL traces), else ``DISPATCH_CLOCK_DIR``, else ``./clock_results``. Which:
``DEEPEP_SIM_DEBUGCLOCK_FORMAT`` legacy|akl|both. Fault knob
``DEEPEP_SIM_DEBUGCLOCK`` ok|missing|corrupt|overwrite (missing:
nothing written; corrupt: a truncated trace.bin and a CSV row short of one field; overwrite: the legacy build's clocks
overwrite tpSendCountsOut, docs/formats.md §3, so every rank's precision check fails while the clocks are fine).

Tick index -> marker per role follows docs/formats.md §3 (inferred there). Where the model has one phase for several
markers, the markers sit at fixed fractions of it (a stand-in assumption). Overhead: each marker costs MARK_US on
the core (kernel scope); the per-launch flush and export cost EXPORT_US after the kernel's end tick (API scope only).
Standard library only; nothing here imports the workflow's parsers.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

from ascend_deepep._collective import RankLaunch

DEVICE_CLOCK_HZ = 1_000_000_000
MARK_US = 0.03  # one DebugClock marker: GetSystemCycle + a store
EXPORT_US = 35.0  # per launch: D2H of the clock buffer + file export on the host
MAGIC = 0x414B4C5452433031
RECORDER_CAPACITY = 256
FORMATS = ("legacy", "akl", "both")

ROLE_MARKERS = {  # ticks 2..5 per role (docs/formats.md §3); TokenCopyToBuffer's tick 3 is overwritten by copy_complete
    "TokenCopyToBuffer": ("buffers_ready", "copy_complete", "returned", "stage_published"),
    "URMASendToken": ("ids_ready", "mapping_ready", "queues_ready", "send_complete"),
    "SelfCopyToken": ("ids_ready", "mapping_ready", "copy_complete", "returned"),
    "CalCumSum": ("counts_sent", "dispatch_ready", "recv_counts_ready", "experts_written"),
}
AKL_EXTRA = {"TokenCopyToBuffer": ("mapping_ready",), "URMASendToken": ("iteration",)}


def path_hash(parts: tuple[str, ...]) -> int:
    """FNV-1a-32 over each part's UTF-8 bytes plus a NUL (akl semantic.path_hash)."""
    h = 2166136261
    for part in parts:
        for byte in part.encode() + b"\x00":
            h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def event_paths() -> list[tuple[str, ...]]:
    paths = [("dispatch", "Init", "entry"), ("dispatch", "Process", "entry")]
    for role, names in ROLE_MARKERS.items():
        paths += [("dispatch", "Process", role, n) for n in dict.fromkeys(names + AKL_EXTRA.get(role, ()))]
    return paths + [
        ("dispatch", "Process", "LocalWindowCopy", "begin"),
        ("dispatch", "Process", "LocalWindowCopy", "end"),
    ]


def write_event_map(path: Path) -> None:
    """What scripts/build.sh stores at ascend_deepep/lib/event_map.json in a DEBUG build."""
    path.parent.mkdir(parents=True, exist_ok=True)
    events = {str(path_hash(p)): list(p) for p in event_paths()}
    path.write_text(json.dumps({"schema": "akl.event-map.v1", "events": events, "source_sha256": []}, indent=1))


def enabled(repo: Path) -> bool:
    """Whether this stand-in was built with DEBUG_CLOCK_ON (its build flags say so)."""
    flags = repo / "build" / "device_compile_flags.txt"
    return flags.is_file() and "-DDEBUG_CLOCK_ON" in flags.read_text().split()


def core_markers(core: Any) -> list[tuple[tuple[str, ...], float]]:
    """(path, true µs) of every marker of one core, in time order: Init, Process, the role's, LocalWindowCopy."""
    role_phases = [p for p in core.phases[1:] if not p.name.startswith("lwc_")]
    t0 = core.start_tick
    first_end = role_phases[0].end if role_phases else t0
    t1 = t0 + min(0.3, (first_end - t0) / 4)
    end = role_phases[-1].end if role_phases else t1
    span = max(0.0, end - t1)
    names = ROLE_MARKERS[core.role]
    extra: list[tuple[str, float]] = []
    if core.role == "CalCumSum":
        count, wait, post = role_phases[:3]
        ticks = [count.end, wait.end, post.start + 0.6 * post.us, post.end]
    elif core.role == "TokenCopyToBuffer":
        ticks = [t1 + 0.05 * span, t1 + 0.9 * span, t1 + 0.95 * span, end]
        extra = [("mapping_ready", t1 + 0.1 * span)]
    elif core.role == "URMASendToken":
        prep = role_phases[0].end
        queues = prep + min(0.2, (end - prep) / 10)
        ticks = [t1 + 0.2 * (prep - t1), prep, queues, end]
        extra = [("iteration", max(queues, p.start)) for p in role_phases if p.name.startswith("send_to_")]
    else:  # SelfCopyToken: prepare, wait for the local stage, copy
        prep, copy_end = role_phases[0].end, role_phases[-1].end
        ticks = [t1 + 0.2 * (prep - t1), prep, copy_end, copy_end]
    lwc = [p for p in core.phases if p.name.startswith("lwc_")]
    begin = lwc[0].start + min(0.2, (core.end - lwc[0].start) / 10)  # the core's own PipeBarrier<PIPE_ALL>
    marks = [(("dispatch", "Init", "entry"), t0), (("dispatch", "Process", "entry"), t1)]
    marks += [(("dispatch", "Process", core.role, n), t) for n, t in zip(names, ticks)]
    marks += [(("dispatch", "Process", core.role, n), t) for n, t in extra]
    marks += [
        (("dispatch", "Process", "LocalWindowCopy", "begin"), begin),
        (("dispatch", "Process", "LocalWindowCopy", "end"), core.end),
    ]
    # Each marker costs MARK_US on the core: later markers move by the cost of the earlier ones.
    ordered = sorted(marks, key=lambda m: m[1])
    return [(path, t + i * MARK_US) for i, (path, t) in enumerate(ordered)]


class DebugClockWriter:
    """Per rank process: writes the DebugClock outputs of every launch of a DEBUG_CLOCK_ON stand-in."""

    def __init__(self, rank: int, repo: Path):
        env = os.environ
        self.rank, self.pid = rank, os.getpid()
        self.on = enabled(repo)
        self.format = env.get("DEEPEP_SIM_DEBUGCLOCK_FORMAT") or "legacy"
        if self.format not in FORMATS:
            raise RuntimeError(f"DEEPEP_SIM_DEBUGCLOCK_FORMAT={self.format!r}: expected one of {', '.join(FORMATS)}")
        self.fault = env.get("DEEPEP_SIM_DEBUGCLOCK") or "ok"
        self.keep_last = env.get("AKL_TRACE_KEEP_LAST") == "1"  # the code acts only on "1" (docs/formats.md §3)
        base = env.get("DISPATCH_CLOCK_DIR") or "clock_results"
        self.legacy_dir = Path(base)
        self.akl_dir = Path(env.get("AKL_TRACE_DIR") or base)
        self.launches = 0
        # A per-device cycle counter origin: ticks of two devices are not comparable (no global clock).
        self.origin = 10_000_000_000 + 7_919_000 * rank

    @property
    def overwrites_results(self) -> bool:
        """Fault knob overwrite: the legacy DEBUG build's clock buffer is tpSendCountsOut, so results are wrong."""
        return self.on and self.fault == "overwrite" and self.format in ("legacy", "both")

    @property
    def marker_overhead_us(self) -> float:
        """What the markers add to a core's kernel-scope time (the longest core has the most markers)."""
        return MARK_US * 10 if self.on else 0.0

    def record(self, mine: RankLaunch) -> None:
        if not self.on:
            return
        launch = self.launches
        self.launches += 1
        if self.fault == "missing":
            return
        cores = [(core.block_id, core_markers(core)) for core in mine.cores]
        if self.format in ("legacy", "both"):
            self._legacy(cores)
        if self.format in ("akl", "both"):
            self._akl(launch, cores)

    def _cycles(self, us: float) -> int:
        return self.origin + int(round(us * DEVICE_CLOCK_HZ / 1e6))

    def _legacy(self, cores: list[tuple[int, list[tuple[tuple[str, ...], float]]]]) -> None:
        lines = ["rank,aiv_id," + ",".join(f"time_{k}_cycles" for k in range(7))]
        for block, marks in cores:
            tick = [
                self._cycles(t)
                for path, t in marks
                if path[-1] != "iteration" and path[-2:] != ("TokenCopyToBuffer", "mapping_ready")
            ]
            slots = [tick[i + 1] - tick[i] if i + 1 < len(tick) else -1 for i in range(7)]
            lines.append(",".join(map(str, [self.rank, block, *slots])))
        if self.fault == "corrupt":
            lines[-1] = lines[-1].rsplit(",", 1)[0]
        self.legacy_dir.mkdir(parents=True, exist_ok=True)
        path = self.legacy_dir / f"dispatch_clock_rank_{self.rank}.csv"
        tmp = path.with_suffix(f".{self.pid}.tmp")
        tmp.write_text("\n".join(lines) + "\n")
        os.replace(tmp, path)  # the latest snapshot, published to the same path

    def _akl(self, launch: int, cores: list[tuple[int, list[tuple[tuple[str, ...], float]]]]) -> None:
        count = max(len(m) for _, m in cores)
        cap = max(2, count + count % 2)
        out = bytearray()
        for block, marks in cores:
            head = [MAGIC, 1, len(marks), 0, block, 0, 0, 1]
            body = [v for path, t in marks for v in (path_hash(path), self._cycles(t))] + [0] * (2 * (cap - len(marks)))
            out += struct.pack(f"<{8 + 2 * cap}Q", *head, *body)
        if self.fault == "corrupt":
            out = out[:-8]
        directory = self.akl_dir / f"rank{self.rank}-pid{self.pid}-launch{launch}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "trace.bin").write_bytes(bytes(out))
        meta = {
            "schema": "akl.semantic.v1",
            "capacity": cap,
            "recorder_capacity": RECORDER_CAPACITY,
            "blocks": len(cores),
            "rank": self.rank,
        }
        meta.update(device=int(os.environ.get("LOCAL_RANK", self.rank)), alignment="unverified")
        (directory / "capture.json").write_text(json.dumps(meta))
        if self.keep_last and launch > 0:
            old = self.akl_dir / f"rank{self.rank}-pid{self.pid}-launch{launch - 1}"
            shutil.rmtree(old, ignore_errors=True)
