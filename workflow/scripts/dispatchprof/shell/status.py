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
from typing import Any, Callable, Iterable, Mapping

from dispatchprof.shell.atomic import write_json_atomic

SCHEMA = "dispatchprof.status/1"
STAGES = (
    "env_capture",
    "build",
    "correctness",
    "baseline",
    "timeline",
    "pmu",
    "pcsampling",
    "pipe_timeline",
    "debugclock",
    "probe",
    "report",
)
STATES = ("ok", "failed", "timeout", "invalid", "skipped", "disabled")
SOURCES = ("collected", "import")
TOOLCHAINS = ("sim", "cann", "none")
SEVERITIES = ("error", "warning")

# Worst state wins when parts of a stage are folded: failed > timeout > invalid > skipped > ok.
# "disabled" ranks below ok: a disabled part does not spoil a stage whose other parts ran.
_RANK = {"disabled": 0, "ok": 1, "skipped": 2, "invalid": 3, "timeout": 4, "failed": 5}


class StatusError(ValueError):
    """A status file that does not follow the contract (a workflow bug, not a measurement failure)."""


# What each field of a status file holds (None: JSON null). Checked before a Status is built from a file, so that a
# damaged file is a StatusError naming the field, never a TypeError from deep inside a stage.
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _labels_to_text(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "stage": (_is_str, "a string"),
    "experiment": (_is_str, "a string"),
    "state": (_is_str, "a string"),
    "reason": (_is_str, "a string"),
    "toolchain": (_is_str, "a string"),
    "node": (_optional(_is_int), "an integer or null"),
    "source": (_is_str, "a string"),
    "upstream": (_labels_to_text, "a mapping of labels to states (strings)"),
    "command": (_optional(_list_of(_is_str)), "a list of strings or null"),
    "exit_code": (_optional(_is_int), "an integer or null"),
    "started": (_optional(_is_str), "a time (string) or null"),
    "finished": (_optional(_is_str), "a time (string) or null"),
    "validations": (_list_of(lambda v: isinstance(v, dict)), "a list of validations (mappings)"),
    "artifacts": (_list_of(_is_str), "a list of paths (strings)"),
    "part": (_optional(_is_str), "a string or null"),
    "details": (lambda v: isinstance(v, dict), "a mapping"),
    "root_cause": (_optional(_labels_to_text), "a mapping of strings (stage, state, reason) or null"),
    "retry": (lambda v: isinstance(v, bool), "true or false"),
    "outputs": (lambda v: isinstance(v, dict) and all(isinstance(r, dict) for r in v.values()), "a mapping of records"),
    "inputs": (lambda v: isinstance(v, dict) and all(_is_int(t) for t in v.values()), "a mapping of paths to times"),
}
_REQUIRED = ("stage", "experiment", "state", "reason", "toolchain")
_CHOICES = {"stage": STAGES, "state": STATES, "source": SOURCES, "toolchain": TOOLCHAINS}
_VALIDATION_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "check": (_is_str, "a string"),
    "passed": (lambda v: isinstance(v, bool), "true or false"),
    "severity": (lambda v: v in SEVERITIES, f"one of {', '.join(SEVERITIES)}"),
    "detail": (_is_str, "a string"),
}


def _shown(value: Any) -> str:
    """A value as the error names it: its JSON kind and the start of its text."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "a mapping"}
    kind = "null" if value is None else kinds.get(type(value), type(value).__name__)
    text = repr(value)
    return kind if value is None else f"{kind} ({text[:60]}{'...' if len(text) > 60 else ''})"


def _check_fields(
    data: Mapping[str, Any], types: Mapping[str, tuple[Callable[[Any], bool], str]], required: Iterable[str], where: str
) -> None:
    for name in required:
        if name not in data:
            raise StatusError(f"{where}field {name!r} is missing (expected {types[name][1]})")
    for name, (fits, expected) in types.items():
        if name in data and not fits(data[name]):
            raise StatusError(f"{where}field {name!r} is {_shown(data[name])}, expected {expected}")


def check_status_fields(data: Any, path: str | Path) -> None:
    """StatusError naming ``path``, the field and what was expected, unless ``data`` (a status file's parsed JSON) is
    a status of this contract."""
    if not isinstance(data, dict):
        raise StatusError(f"{path}: holds {_shown(data)}, expected a mapping of status fields")
    if data.get("schema") != SCHEMA:
        raise StatusError(f"{path}: field 'schema' is {data.get('schema')!r}, expected {SCHEMA!r}")
    _check_fields(data, _FIELD_TYPES, _REQUIRED, f"{path}: ")
    for name, choices in _CHOICES.items():
        if name in data and data[name] not in choices:
            raise StatusError(f"{path}: field {name!r} is {data[name]!r}, expected one of {', '.join(choices)}")
    if not data["reason"]:
        raise StatusError(f"{path}: field 'reason' is empty, expected a reason a person can act on")
    for number, validation in enumerate(data.get("validations", []), 1):
        _check_fields(validation, _VALIDATION_FIELDS, ("check", "passed"), f"{path}: validation {number}: ")


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
    # The cause of this state may be gone by itself (a port in use, a busy cluster, a node's environment): the next
    # plain snakemake reruns the job (shell/disk_state.py); set by ``retryable`` when the status is written.
    retry: bool = False
    # What the job wrote (path -> {bytes, mtime_ns, sha256}, or {directory: true}) and the results/ files it read
    # (path -> mtime_ns when it started): how a later run tells a damaged or stale result (shell/disk_state.py).
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[str, int] = field(default_factory=dict)

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
    def from_dict(cls, data: Any, path: str | Path = "<dict>") -> Status:
        """The status a file's parsed JSON holds; StatusError naming the file and the field for anything else."""
        check_status_fields(data, path)
        known = {f for f in cls.__dataclass_fields__}
        fields = {k: v for k, v in data.items() if k in known}
        fields["validations"] = [
            Validation(**{k: v[k] for k in _VALIDATION_FIELDS if k in v}) for v in data.get("validations", [])
        ]
        try:
            return cls(**fields)
        except (StatusError, TypeError) as exc:  # checked above; kept so that nothing else ever escapes
            raise StatusError(f"{path}: {exc}") from exc


# What ended a collective run without measuring (tools/collective.py verdict causes, shell/stage.py hold_cluster).
TRANSIENT_CAUSES = frozenset({"infrastructure", "cluster_busy"})


def retryable(status: Status) -> bool:
    """Whether a status's cause may be gone by the next run, though nothing Snakemake sees changed: any failure of
    env capture (it records the nodes' environment: a port in use, too little disk, a node not ready, a tool not
    installed yet), and a collective stage that never got to measure (a node that did not start or become ready, a
    port taken, the cluster busy). A measurement that failed (precision, a crash, a timeout) is not: it would fail
    again until the code or the config changes, and both rerun it."""
    if status.state in ("ok", "disabled", "skipped"):
        return False
    return status.stage == "env_capture" or status.details.get("cause") in TRANSIENT_CAUSES


def write_status(path: str | Path, status: Status) -> None:
    write_json_atomic(path, status.to_dict())


def read_status(path: str | Path) -> Status:
    """The one checked way to read a status file: a Status, or StatusError naming the file, the field and what was
    expected (missing, unreadable, not UTF-8, not JSON, not a mapping, a field missing or of the wrong type or value).
    A damaged status (an edit, a truncated copy, a tool that rewrote it) must not turn into a traceback downstream."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise StatusError(f"{path}: status file missing") from exc
    except OSError as exc:
        raise StatusError(f"{path}: status file cannot be read ({exc.strerror or exc})") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StatusError(
            f"{path}: not UTF-8 text (byte {exc.start}: "
            f"{raw[exc.start : exc.start + 1]!r}); a status file is JSON in UTF-8"
        ) from exc
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise StatusError(f"{path}: not valid JSON ({exc})") from exc
    return Status.from_dict(data, path)


def read_input_status(path: str | Path) -> Status:
    """An input's status for a stage that gates or folds on it: the file's Status, or for a damaged file a stand-in
    that is `skipped` with the file as its root cause (state `unreadable`), so that every stage downstream is
    skipped and says which file to look at, instead of failing on it."""
    try:
        return read_status(path)
    except StatusError as exc:
        experiment, stage, part = place_of_status(path)
        cause = {"stage": stage if part is None else f"{stage}/{part}", "state": "unreadable", "reason": str(exc)}
        reason = f"its status file is unreadable: {exc}"
        return Status(stage, experiment, "skipped", reason, toolchain="none", part=part, root_cause=cause)


def place_of_status(path: str | Path) -> tuple[str, str, str | None]:
    """The experiment, stage and part whose status file ``path`` is:
    results/<experiment>/<stage>[/<part>...]/status.json (the part may
    be nested: timeline/nodes/nodes0-1, pipe_timeline/pipe/collect)."""
    parents = Path(path).parent.parts
    for depth in range(len(parents) - 1, 0, -1):
        if parents[depth] in STAGES:
            return parents[depth - 1], parents[depth], "/".join(parents[depth + 1 :]) or None
    raise StatusError(f"{path}: not a stage's status file (expected results/<experiment>/<stage>[/<part>]/status.json)")


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
        needs = "; and needs ".join(
            f"{_label(s)} ({s.state})" if s.root_cause else f"{_label(s)} ({s.state}: {s.reason})"
            for s in self.blocking
        )
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
        status = read_input_status(path)
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
