"""The status contract shared by every stage (see DESIGN.md, "The status contract").

Every rule writes a ``status.json``; downstream rules read their inputs' status files first and
skip with the reason chain when a needed input is not ``ok``. Measurement failures are states,
not exceptions: only bugs in the workflow itself make a rule exit non-zero.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from dispatchprof.shell.atomic import write_json_atomic

SCHEMA = "dispatchprof.status/1"
STAGES = ("env_capture", "build", "correctness", "baseline", "timeline", "pmu", "pcsampling", "pipe_timeline", "debugclock", "probe", "report")
STATES = ("ok", "failed", "timeout", "invalid", "skipped", "disabled")
SOURCES = ("collected", "import")
TOOLCHAINS = ("sim", "cann", "none")
SEVERITIES = ("error", "warning")

# Worst state wins when parts of a stage are folded: failed > timeout > invalid > skipped > ok.
# "disabled" ranks below ok: a disabled part does not spoil a stage whose other parts ran.
_RANK = {"disabled": 0, "ok": 1, "skipped": 2, "invalid": 3, "timeout": 4, "failed": 5}


class StatusError(ValueError):
    """A status file that does not follow the contract (a workflow bug, not a measurement failure)."""


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class Validation:
    check: str
    passed: bool
    severity: str = "error"
    detail: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise StatusError(f"validation {self.check!r}: severity {self.severity!r} not in {SEVERITIES}")


@dataclass
class Status:
    stage: str
    experiment: str
    state: str
    reason: str
    toolchain: str
    node: int | None = None
    source: str = "collected"
    upstream: dict[str, str] = field(default_factory=dict)
    command: list[str] | None = None
    exit_code: int | None = None
    started: str | None = None
    finished: str | None = None
    validations: list[Validation] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    part: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # A skipped stage: the first failure up its chain ({stage, state, reason}), stated once however long the chain.
    root_cause: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise StatusError(f"unknown stage {self.stage!r}; expected one of {STAGES}")
        if self.state not in STATES:
            raise StatusError(f"stage {self.stage}: unknown state {self.state!r}; expected one of {STATES}")
        if self.source not in SOURCES:
            raise StatusError(f"stage {self.stage}: unknown source {self.source!r}")
        if self.toolchain not in TOOLCHAINS:
            raise StatusError(f"stage {self.stage}: unknown toolchain {self.toolchain!r}")
        if not self.reason:
            raise StatusError(f"stage {self.stage}: every status needs a reason a person can act on")

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data = {"schema": SCHEMA, **data}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | Path = "<dict>") -> Status:
        if data.get("schema") != SCHEMA:
            raise StatusError(f"{path}: field 'schema' is {data.get('schema')!r}, expected {SCHEMA!r}")
        known = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in data.items() if k in known}
        fields["validations"] = [Validation(**v) for v in data.get("validations", [])]
        try:
            return cls(**fields)
        except TypeError as exc:
            raise StatusError(f"{path}: {exc}") from exc


def write_status(path: str | Path, status: Status) -> None:
    write_json_atomic(path, status.to_dict())


def read_status(path: str | Path) -> Status:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise StatusError(f"{path}: status file missing") from exc
    except json.JSONDecodeError as exc:
        raise StatusError(f"{path}: not valid JSON ({exc})") from exc
    return Status.from_dict(data, path)


def worst_state(states: Iterable[str]) -> str:
    states = list(states)
    if not states:
        raise StatusError("cannot fold an empty list of states")
    return max(states, key=lambda s: _RANK[s])


def _label(status: Status) -> str:
    return status.stage if status.part is None else f"{status.stage}/{status.part}"


@dataclass
class Gate:
    """What a stage learns from its inputs' status files before it runs anything."""

    upstream: dict[str, str]
    blocking: list[Status]
    inputs: dict[str, Status]

    @property
    def open(self) -> bool:
        return not self.blocking

    def root_cause(self) -> dict[str, str] | None:
        """The first failure up the chain: the first blocking input's own root cause, or that input itself."""
        if not self.blocking:
            return None
        first = self.blocking[0]
        return first.root_cause or {"stage": _label(first), "state": first.state, "reason": first.reason}

    def reason(self) -> str:
        """Each blocking input with its state; a failed input's reason, and for skipped inputs the root cause
        once (never the chain nested stage by stage)."""
        needs = "; and needs ".join(f"{_label(s)} ({s.state})" if s.root_cause else f"{_label(s)} ({s.state}: {s.reason})" for s in self.blocking)
        cause = self.root_cause()
        if any(s.root_cause for s in self.blocking) and cause is not None:
            return f"needs {needs}; root cause: {cause['stage']} {cause['state']}: {cause['reason']}"
        return f"needs {needs}"


def gate(needed: Mapping[str, str | Path], optional: Mapping[str, str | Path] | None = None) -> Gate:
    """Read the status of every input; a needed input that is not ``ok`` blocks the stage.

    Keys are labels (usually stage names); values are status file paths.
    """
    upstream: dict[str, str] = {}
    inputs: dict[str, Status] = {}
    blocking: list[Status] = []
    for label, path in {**(optional or {}), **needed}.items():
        status = read_status(path)
        inputs[label] = status
        upstream[label] = status.state
        if label in needed and not status.ok:
            blocking.append(status)
    return Gate(upstream=upstream, blocking=blocking, inputs=inputs)


def fold(stage: str, experiment: str, toolchain: str, parts: Mapping[str, Status], **extra: Any) -> Status:
    """Fold the statuses of a stage's parts (per node, per rank...) into the stage status."""
    if not parts:
        raise StatusError(f"stage {stage}: no parts to fold")
    state = worst_state(p.state for p in parts.values())
    bad = {name: p for name, p in parts.items() if p.state == state and state != "ok"}
    if state == "ok":
        reason = f"all {len(parts)} parts ok ({', '.join(parts)})"
    elif state == "disabled":
        reason = next(iter(parts.values())).reason
    elif state == "skipped":
        # Skipped parts usually share one cause (the stage's first part): name it once, not per node.
        name, first = next(iter(bad.items()))
        others = f" (and {len(bad) - 1} more parts skipped)" if len(bad) > 1 else ""
        reason = f"{name}: {first.reason}{others}"
    else:
        reason = "; ".join(f"{name}: {p.reason}" for name, p in bad.items())
    sources = {p.source for p in parts.values()}
    if state == "skipped":
        extra.setdefault("root_cause", next(iter(bad.values())).root_cause)
    return Status(
        stage=stage,
        experiment=experiment,
        state=state,
        reason=reason,
        toolchain=toolchain,
        source="import" if sources == {"import"} else "collected",
        upstream={name: p.state for name, p in parts.items()},
        validations=[v for p in parts.values() for v in p.validations],
        started=min((p.started for p in parts.values() if p.started), default=None),
        finished=now_iso(),
        **extra,
    )
