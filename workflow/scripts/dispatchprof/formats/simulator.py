"""`msopprof simulator` output (docs/formats.md §2): where it lies and what its files hold.

- Layout: ``OPPROF_*/simulator/`` (one kernel) or ``OPPROF_*/<Op>/<n>/simulator/`` (several), each with a summary
  ``trace.json``, ``visualize_data.bin`` and one directory per core (``core<i>.veccore<j>`` / ``core<i>.cubecore<j>``)
  holding ``<core>_code_exe.csv``, ``<core>_instr_exe.csv`` (a ``_<17 digits>`` suffix is kept with several kernels)
  and a per-core ``trace.json``.
- Per-core trace.json (schemaVersion 1): integer pids declared by ``process_name`` M-events (the pipe), integer tids.
- Summary trace.json (schemaVersion 2): pid = core string, tid = pipe string (``WARP_<n>`` for SIMT); X events with
  args{pc_addr, code, detail}. B/E pairs (SET_FLAG/WAIT_FLAG and any other) are intervals, matched per pid/tid as a
  stack (formats/trace_events.py); the unmatched ones are named in ``frame.attrs["unmatched"]``. Flow events are not.
- CACHEMISS events: tid/pipe ``CACHEMISS``, name = the PC as ``0x%08x``.
- CSVs have no trailing comma; ``addr`` is decimal; ``detail`` is unquoted and may hold commas (split 6 times).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dispatchprof.formats.names import OPPROF_RE
from dispatchprof.formats.text import finite_nonnegative, read_text_file
from dispatchprof.formats.trace_events import Spans, interval_spans

if TYPE_CHECKING:  # the probe's collect job only discovers runs (simulator_runs): pandas (~0.4 s) where tables are read
    import pandas as pd

CORE_DIR_RE = re.compile(r"^core\d+\.(veccore|cubecore)\d+$")
CSV_RE = re.compile(r"^(?P<core>core\d+\.(?:veccore|cubecore)\d+)_(?P<kind>code|instr)_exe(?:_\d{17})?\.csv$")
PC_RE = re.compile(r"^0x[0-9a-fA-F]+$")
INSTR_HEADER = ["instr", "addr", "pipe", "call_count", "cycles", "running_time(us)", "detail"]
CODE_HEADER = ["code", "call_count", "cycles", "running_time(us)"]
TRACE_COLUMNS = ["core", "pipe", "name", "ts_us", "dur_us", "pc", "code", "detail"]


class SimulatorFormatError(ValueError):
    """A simulator file that cannot be used; the message names the file, the place and what was expected."""


@dataclass(frozen=True)
class SimulatorRun:
    opprof: Path
    directory: Path  # the simulator/ directory
    kernel: str | None  # <Op> of the several-kernel layout
    n: int | None
    cores: dict[str, Path]  # core name -> its directory


def simulator_runs(root: Path) -> list[SimulatorRun]:
    """Every simulated kernel under ``root``: an OPPROF_ directory, or a directory holding OPPROF_ directories."""
    if not root.is_dir():
        return []
    opprofs = (
        [root]
        if OPPROF_RE.match(root.name)
        else sorted(p for p in root.iterdir() if p.is_dir() and OPPROF_RE.match(p.name))
    )
    runs = []
    for opprof in opprofs:
        candidates = [(opprof / "simulator", None, None)]
        for op in sorted(p for p in opprof.iterdir() if p.is_dir() and p.name not in ("simulator", "dump")):
            for n_dir in sorted(
                (p for p in op.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
            ):
                candidates.append((n_dir / "simulator", op.name, int(n_dir.name)))
        for sim, kernel, n in candidates:
            if sim.is_dir():
                cores = {p.name: p for p in sorted(sim.iterdir()) if p.is_dir() and CORE_DIR_RE.match(p.name)}
                runs.append(SimulatorRun(opprof, sim, kernel, n, cores))
    return runs


def core_files(core_dir: Path) -> dict[str, Path]:
    """``code`` / ``instr`` -> the core's CSV (either name form)."""
    found = {}
    for p in sorted(core_dir.iterdir()):
        m = CSV_RE.match(p.name)
        if p.is_file() and m and m.group("core") == core_dir.name:
            found[m.group("kind")] = p
    return found


def _load_json(path: Path) -> dict:
    text = read_text_file(path, SimulatorFormatError, "a UTF-8 JSON text file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SimulatorFormatError(
            f"{path}: line {exc.lineno}: not valid JSON ({exc.msg}); expected a trace.json object"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise SimulatorFormatError(f"{path}: field 'traceEvents' missing or not a list; expected a Chrome-trace object")
    return data


def _event(path: Path, index: int, event: object) -> dict:
    if not isinstance(event, dict):
        raise SimulatorFormatError(f"{path}: traceEvents[{index}] is {type(event).__name__}, expected an object")
    return event


def _args(path: Path, index: int, event: dict) -> dict:
    args = event.get("args", {})
    if not isinstance(args, dict):
        raise SimulatorFormatError(
            f"{path}: traceEvents[{index}]: field 'args' is {type(args).__name__}, expected an object"
        )
    return args


def _text(path: Path, index: int, field: str, value: object, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise SimulatorFormatError(f"{path}: traceEvents[{index}]: field '{field}' is {value!r}, expected a string")
    return value


def _miss_pc(path: Path, index: int, name: str) -> str:
    if not PC_RE.match(name):
        raise SimulatorFormatError(
            f"{path}: traceEvents[{index}]: CACHEMISS event name {name!r}, expected the PC as 0x%08x"
        )
    return name


def _table(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def _frame(rows: list[dict]) -> pd.DataFrame:
    return _table(rows, TRACE_COLUMNS).astype({"ts_us": float, "dur_us": float})


def _spans(path: Path, events: list[dict]) -> Spans:
    """X events and B/E pairs as intervals; the simulator's times are µs >= 0."""
    spans = interval_spans(events, str(path), SimulatorFormatError)
    for span in spans.spans:
        if span.ts < 0:
            raise SimulatorFormatError(
                f"{path}: traceEvents[{span.index}]: field 'ts' is {span.ts}, expected a non-negative number (µs)"
            )
    return spans


def _code_detail(path: Path, index: int, args: dict) -> dict[str, str]:
    return {
        "code": _text(path, index, "args.code", args.get("code")),
        "detail": _text(path, index, "args.detail", args.get("detail")),
    }


def read_core_trace(path: Path, core: str | None = None) -> pd.DataFrame:
    """A per-core trace.json (schemaVersion 1) as intervals: core, pipe, name, ts_us, dur_us, pc, code, detail.
    The pipe of an event is its pid's process_name; a pid without one is an error (never a guess)."""
    data = _load_json(path)
    core = core or path.parent.name
    events = [_event(path, i, e) for i, e in enumerate(data["traceEvents"])]
    pipes: dict[int, str] = {}
    for i, e in enumerate(events):
        if e.get("ph") == "M" and e.get("name") == "process_name":
            pid, name = e.get("pid"), _args(path, i, e).get("name")
            if isinstance(pid, bool) or not isinstance(pid, int) or not isinstance(name, str):
                raise SimulatorFormatError(
                    f"{path}: traceEvents[{i}]: process_name needs an integer "
                    f"'pid' and args.name, got pid={pid!r} name={name!r}"
                )
            pipes[pid] = name
    spans = _spans(path, events)
    rows = []
    for span in spans.spans:
        i, e = span.index, span.event
        pid = e.get("pid")
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise SimulatorFormatError(
                f"{path}: traceEvents[{i}]: field 'pid' is {pid!r}, expected "
                "an integer pipe id (per-core trace, schemaVersion 1)"
            )
        if pid not in pipes:
            raise SimulatorFormatError(
                f"{path}: traceEvents[{i}]: pid {pid} has no process_name "
                f"metadata event; declared pids: {sorted(pipes)}"
            )
        args = _args(path, i, e)
        name = _text(path, i, "name", e.get("name"), required=True)
        pipe = pipes[pid]
        pc = _miss_pc(path, i, name) if pipe == "CACHEMISS" else _text(path, i, "args.pc_addr", args.get("pc_addr"))
        rows.append(
            {
                "core": core,
                "pipe": pipe,
                "name": name,
                "ts_us": span.ts,
                "dur_us": span.dur,
                "pc": pc,
                **_code_detail(path, i, args),
            }
        )
    frame = _frame(rows)
    frame.attrs["pipes"] = sorted(
        set(pipes.values())
    )  # every declared lane, with events or not: a lane without events is 0
    frame.attrs["unmatched"] = spans.unmatched
    return frame


def read_summary_trace(path: Path) -> pd.DataFrame:
    """The summary trace.json (schemaVersion 2): X events and B/E pairs with pid = core string and tid = pipe string."""
    data = _load_json(path)
    spans = _spans(path, [_event(path, i, e) for i, e in enumerate(data["traceEvents"])])
    rows = []
    for span in spans.spans:
        i, e = span.index, span.event
        pid, tid = e.get("pid"), e.get("tid")
        if not isinstance(pid, str) or not isinstance(tid, str):
            raise SimulatorFormatError(
                f"{path}: traceEvents[{i}]: pid {pid!r} / tid {tid!r}, expected a "
                "core string and a pipe string (summary trace, schemaVersion 2)"
            )
        args = _args(path, i, e)
        name = _text(path, i, "name", e.get("name"), required=True)
        pc = _miss_pc(path, i, name) if tid == "CACHEMISS" else _text(path, i, "args.pc_addr", args.get("pc_addr"))
        rows.append(
            {
                "core": pid,
                "pipe": tid,
                "name": name,
                "ts_us": span.ts,
                "dur_us": span.dur,
                "pc": pc,
                **_code_detail(path, i, args),
            }
        )
    frame = _frame(rows)
    frame.attrs["unmatched"] = spans.unmatched
    return frame


def _csv_lines(path: Path, header: list[str]) -> list[tuple[int, str]]:
    text = read_text_file(path, SimulatorFormatError)
    lines = text.splitlines()
    if not lines:
        raise SimulatorFormatError(f"{path}: line 1: empty file; expected the header {','.join(header)}")
    found = lines[0].strip().split(",")
    if found != header:
        raise SimulatorFormatError(
            f"{path}: line 1: header {found}, expected {header} (the "
            "simulator's order: 'detail' last, it may hold commas)"
        )
    return [(n, line) for n, line in enumerate(lines[1:], start=2) if line.strip()]


def _int(path: Path, line: int, field: str, value: str) -> int:
    if not re.fullmatch(r"\d+", value.strip()):
        raise SimulatorFormatError(
            f"{path}: line {line}: field '{field}' is {value!r}, expected a non-negative decimal integer"
        )
    return int(value)


def _float(path: Path, line: int, field: str, value: str) -> float:
    return finite_nonnegative(path, line, field, value, SimulatorFormatError)


def read_instr_exe(path: Path) -> pd.DataFrame:
    """``<core>_instr_exe.csv``: instr, addr (decimal, also shown as pc 0x%08x), pipe, call_count, cycles,
    running_time_us, detail (everything after the sixth comma)."""
    rows = []
    for n, line in _csv_lines(path, INSTR_HEADER):
        cells = line.split(",", 6)
        if len(cells) != 7:
            raise SimulatorFormatError(
                f"{path}: line {n}: {len(cells)} fields, expected 7 "
                "(instr,addr,pipe,call_count,cycles,running_time(us),detail)"
            )
        instr, addr, pipe, count, cycles, time_us, detail = cells
        # sim_pc_to_code.cpp writes detail quoted ("dst:UB[0x200], src:GM[...]"); older files do not
        if len(detail) >= 2 and detail.startswith('"') and detail.endswith('"'):
            detail = detail[1:-1].replace('""', '"')
        address = _int(path, n, "addr", addr)
        rows.append(
            {
                "instr": instr,
                "addr": address,
                "pc": f"0x{address:08x}",
                "pipe": pipe,
                "call_count": _int(path, n, "call_count", count),
                "cycles": _int(path, n, "cycles", cycles),
                "running_time_us": _float(path, n, "running_time(us)", time_us),
                "detail": detail,
            }
        )
    return _table(rows, ["instr", "addr", "pc", "pipe", "call_count", "cycles", "running_time_us", "detail"])


def read_code_exe(path: Path) -> pd.DataFrame:
    """``<core>_code_exe.csv``: code (path:line; the last three fields are numbers, so a comma in a path survives)."""
    rows = []
    for n, line in _csv_lines(path, CODE_HEADER):
        cells = line.rsplit(",", 3)
        if len(cells) != 4:
            raise SimulatorFormatError(
                f"{path}: line {n}: {len(cells)} fields, expected 4 (code,call_count,cycles,running_time(us))"
            )
        code, count, cycles, time_us = cells
        rows.append(
            {
                "code": code,
                "call_count": _int(path, n, "call_count", count),
                "cycles": _int(path, n, "cycles", cycles),
                "running_time_us": _float(path, n, "running_time(us)", time_us),
            }
        )
    return _table(rows, ["code", "call_count", "cycles", "running_time_us"])
