"""msopprof's PipeTimeline / InstrTimeline trace.json (docs/formats.md §2), also found as the TRACE block
(0x2) of visualize_data.bin (§7).

Device form: ``{"profilingType":"op","displayTimeUnit":"ns","schemaVersion":1,"traceEvents":[...]}`` with complete
events (``ph:"X"``): ``pid`` = ``core<N>.cubecore|veccore0|veccore1``, ``tid`` = a pipe name (SCALAR, VECTOR, CUBE,
MTE1, MTE2, MTE3, FIXP), ``ts``/``dur`` in µs (cycles / aicore frequency; ``displayTimeUnit`` is only how a viewer shows
them), InstrTimeline ``args`` with ``pc_addr`` and ``code``. A pid or tid may instead be an integer declared by a
``process_name`` / ``thread_name`` metadata event (the simulator's per-core form, §6): an integer pid that no
``process_name`` declares is an error, never a guess. Begin/end pairs (``ph:"B"``/``"E"``, matched per pid/tid as a
stack: formats/trace_events.py) are intervals too; an unmatched B or E is named in ``Trace.unmatched``.
Events of other phases (metadata, instants, flows) are not intervals and are left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dispatchprof.formats.text import read_text_file
from dispatchprof.formats.trace_events import interval_spans, unmatched_warning
from dispatchprof.formats.visualize_bin import TRACE, VisualizeBinError, block_json, read_blocks

PIPES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXP")
CORE_RE = re.compile(r"^core(\d+)\.(cubecore|veccore0|veccore1)$")
COLUMNS = ["core", "core_kind", "pipe", "name", "ts_us", "dur_us", "pc_addr", "code"]


class TraceFormatError(ValueError):
    """A trace.json that cannot be used; the message names the file, the event and the field."""


@dataclass
class Trace:
    source: str  # the file (or "<visualize_data.bin>: TRACE block")
    schema_version: int | None
    events: pd.DataFrame  # COLUMNS, one row per X event or B/E pair on a core; pc_addr/code None outside InstrTimeline
    unmatched: list[str] = field(default_factory=list)  # B events never ended, E events never begun: not intervals

    @property
    def warning(self) -> str | None:
        """One sentence naming the unmatched B/E events, or None."""
        return unmatched_warning(self.source, self.unmatched)

    @property
    def has_instructions(self) -> bool:
        """InstrTimeline events carry pc_addr in their args; PipeTimeline events do not."""
        return bool(self.events["pc_addr"].notna().any()) if len(self.events) else False


def _metadata(where: str, events: list[Any], kind: str) -> dict[Any, str]:
    names: dict[Any, str] = {}
    for i, event in enumerate(events):
        if isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == kind:
            args = event.get("args")
            name = args.get("name") if isinstance(args, dict) else None
            if not isinstance(name, str):
                raise TraceFormatError(f"{where}: traceEvents[{i}]: {kind} metadata without a string args.name")
            pid, tid = event.get("pid"), event.get("tid")
            if not isinstance(pid, int | str) or (kind == "thread_name" and not isinstance(tid, int | str)):
                raise TraceFormatError(
                    f"{where}: traceEvents[{i}]: {kind} metadata with pid "
                    f"{pid!r:.40} / tid {tid!r:.40}, expected integers or strings"
                )
            key = pid if kind == "process_name" else (pid, tid)
            names[key] = name
    return names


def _row(where: str, event: dict, ts: float, dur: float, processes: dict[Any, str], threads: dict[Any, str]) -> tuple:
    """One interval (an X event, or a B event with its E's time and args) as a COLUMNS row."""
    pid = event.get("pid")
    if isinstance(pid, str) and CORE_RE.match(pid):
        core_name = pid
    elif isinstance(pid, int | str) and not isinstance(pid, bool) and pid in processes:
        core_name = processes[pid]
    else:
        raise TraceFormatError(
            f"{where}: field 'pid' is {pid!r:.40}: not core<N>.cubecore|veccore0|veccore1 "
            "and no process_name metadata event declares it"
        )
    core = CORE_RE.match(core_name)
    tid = event.get("tid")
    if not core:
        pipe = core_name  # the simulator's per-core form names its processes after pipes (SCALAR 10, ...)
    elif isinstance(tid, str):
        pipe = tid
    elif isinstance(tid, int) and (pid, tid) in threads:
        pipe = threads[(pid, tid)]
    else:
        raise TraceFormatError(
            f"{where}: field 'tid' is {tid!r:.40}, expected a pipe name "
            f"({', '.join(PIPES)}) or a tid declared by thread_name"
        )
    name = event.get("name")
    if not isinstance(name, str):
        raise TraceFormatError(f"{where}: field 'name' is {name!r:.40}, expected a string")
    args = event.get("args", {})
    if not isinstance(args, dict):
        raise TraceFormatError(f"{where}: field 'args' is {type(args).__name__}, expected an object")
    pc, code = args.get("pc_addr"), args.get("code")
    index = int(core.group(1)) if core else None
    return (
        index,
        core.group(2) if core else None,
        pipe,
        name,
        ts,
        dur,
        None if pc is None else str(pc),
        None if code is None else str(code),
    )


def parse_trace(data: Any, source: str) -> Trace:
    """The X events and B/E pairs of a decoded trace.json object, as a table of per-core pipe intervals."""
    if isinstance(data, dict):
        events = data.get("traceEvents")
        version = data.get("schemaVersion")
    else:
        raise TraceFormatError(
            f"{source}: top level is {type(data).__name__}, expected an object with traceEvents (docs/formats.md §2)"
        )
    if not isinstance(events, list):
        raise TraceFormatError(f"{source}: field 'traceEvents' is {type(events).__name__}, expected a list of events")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise TraceFormatError(f"{source}: field 'schemaVersion' is {version!r:.40}, expected an integer")
    processes = _metadata(source, events, "process_name")
    threads = _metadata(source, events, "thread_name")
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise TraceFormatError(f"{source}: traceEvents[{i}]: is {type(event).__name__}, expected an event object")
    spans = interval_spans(events, source, TraceFormatError)
    rows = [_row(f"{source}: traceEvents[{s.index}]", s.event, s.ts, s.dur, processes, threads) for s in spans.spans]
    frame = pd.DataFrame.from_records(rows, columns=COLUMNS)
    return Trace(source, version, frame, spans.unmatched)


def read_trace_json(path: Path) -> Trace:
    text = read_text_file(path, TraceFormatError, "trace.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(
            f"{path}: line {exc.lineno}: not valid JSON ({exc.msg}); truncated or damaged trace.json?"
        ) from None
    return parse_trace(data, str(path))


def read_trace_block(path: Path) -> Trace | None:
    """The TRACE block of a visualize_data.bin (the same JSON as trace.json); None when the file has none."""
    try:
        blocks = [b for b in read_blocks(path) if b.kind == TRACE]
        if not blocks:
            return None
        return parse_trace(block_json(path, blocks[0]), f"{path}: TRACE block at byte {blocks[0].offset}")
    except VisualizeBinError as exc:
        raise TraceFormatError(str(exc)) from exc


def read_run_trace(directory: Path) -> Trace | None:
    """A kernel run's trace: trace.json when present, else the TRACE block of visualize_data.bin; None = neither."""
    if (directory / "trace.json").is_file():
        return read_trace_json(directory / "trace.json")
    if (directory / "visualize_data.bin").is_file():
        return read_trace_block(directory / "visualize_data.bin")
    return None
