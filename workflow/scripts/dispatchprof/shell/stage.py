"""The imperative shell every stage script shares: logging, the input gate, placeholders, the status.

A stage script builds a ``StageRun`` from the snakemake object, asks the gate whether its needed
inputs are ok, does its work, and returns a Status. ``StageRun.finish`` then creates every declared
output that the work did not (a placeholder that says why), and writes the status last. Only a bug
raises; a failed measurement is a state.
"""

from __future__ import annotations

import atexit
import gc
import logging
import errno
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from dispatchprof.shell.intermediates import IntermediateUnreadable
from dispatchprof.shell.config import SOURCE_OF_MODE, collection_config, load_schema, run_config
from dispatchprof.shell.config_reads import recorded
from dispatchprof.shell import cluster_lock, disk_state, lifeline
from dispatchprof.shell.atomic import write_arrow_parquet_atomic, write_json_atomic, write_text_atomic
from dispatchprof.shell.status import (
    Gate,
    Status,
    Validation,
    fold,
    gate,
    now_iso,
    read_input_status,
    retryable,
    write_status,
)

log = logging.getLogger("dispatchprof")


def skip_final_collection() -> None:
    """At exit, the interpreter's last garbage collections walk every object still alive: ~0.2 s for Snakemake's own
    process (pandas, SQLAlchemy, pydantic and the DAG), 15-50 ms for a job with numpy, pyarrow or pandas, paid at the
    end of every run and every job for memory the OS takes back anyway. gc.freeze() at exit moves those objects out
    of the collector's sight. Every atexit handler still runs, and objects freed by reference counting are still
    finalized (files closed); only reference cycles alive at exit stay uncollected, whose finalizers Python does
    not promise to run at exit either."""
    atexit.register(gc.freeze)


def setup_logging(log_path: str | Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers, force=True
    )


def write_placeholder(path: Path, status: Status) -> None:
    """A declared output the stage could not produce: a valid file of its kind that says why."""
    note = f"placeholder: stage {status.stage} is {status.state}: {status.reason}"
    meta = {
        "placeholder": True,
        "stage": status.stage,
        "state": status.state,
        "reason": status.reason,
        "toolchain": status.toolchain,
    }
    if path.suffix == ".json":
        write_json_atomic(path, meta)
    elif path.suffix == ".parquet":
        write_arrow_parquet_atomic(
            path, {"placeholder": []}, {"dispatchprof.placeholder": note, "dispatchprof.toolchain": status.toolchain}
        )
    elif path.suffix in (".html", ".htm"):
        write_text_atomic(path, f"<!doctype html><meta charset=utf-8><title>{status.stage}</title><p>{note}</p>\n")
    elif path.suffix == "" and not path.exists():
        path.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path / "PLACEHOLDER.txt", note + "\n")
    else:
        write_text_atomic(path, note + "\n")


RETRY_NOTE = " (its cause may be gone by itself: the next plain snakemake runs it again)"


def finish_outputs(
    outputs: Mapping[str, Path], status_path: Path, status: Status, inputs: Mapping[str, int] | None = None
) -> Status:
    """Every declared output the work did not write becomes a placeholder that says why; the status is written last,
    with what the job wrote and read (``inputs``: disk_state.record_inputs when it started) and whether its cause may
    be gone by the next run (shell/disk_state.py reads them)."""
    for path in outputs.values():
        if not path.exists():
            write_placeholder(path, status)
    status.outputs = disk_state.record_outputs(outputs.values())
    status.inputs = dict(inputs or {})
    status.retry = retryable(status)
    if status.retry and not status.reason.endswith(RETRY_NOTE):
        status.reason += RETRY_NOTE
    write_status(status_path, status)
    log.info("%s%s: %s (%s)", status.stage, f"/{status.part}" if status.part else "", status.state, status.reason)
    return status


SCHEMA_PATH = Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml"
# The jobs of the collection phase: they see only collection keys (collection_config).
COLLECTION_STAGES = ("env_capture", "build", "correctness")
COLLECTION_PARTS = ("collect", "driver", "import")


@dataclass
class StageRun:
    stage: str
    experiment: str
    toolchain: str
    status_path: Path
    outputs: dict[str, Path]
    inputs: dict[str, Any]
    config: Mapping[str, Any]
    params: Mapping[str, Any]
    node: int | None = None
    part: str | None = None
    source: str = "collected"
    started: str = field(default_factory=now_iso)
    cluster: dict[str, Any] | None = None  # the cluster lock this job holds (hold_cluster), as its status records it
    read: dict[str, int] = field(default_factory=dict)  # the results/ files it takes, when it started (disk_state)

    @classmethod
    def from_snakemake(cls, smk: Any, stage: str, part: str | None = None) -> StageRun:
        skip_final_collection()
        setup_logging(smk.log[0] if smk.log else None)
        outputs = {name: Path(path) for name, path in smk.output.items()}
        node = smk.wildcards.get("node") if hasattr(smk.wildcards, "get") else None
        config = run_config(smk.config, smk.wildcards.experiment)
        if stage in COLLECTION_STAGES or (part or "").startswith(COLLECTION_PARTS):
            config = collection_config(config, load_schema(SCHEMA_PATH))
        toolchain = "none" if config["mode"] == "analyze" else config["toolchain"]
        source = SOURCE_OF_MODE[config["mode"]]
        config = recorded(config, smk.rule)  # the reads of the stage itself (RULE_KEYS check, test_phases.py)
        return cls(
            stage=stage,
            experiment=smk.wildcards.experiment,
            toolchain=toolchain,
            status_path=outputs["status"],
            outputs={k: v for k, v in outputs.items() if k != "status"},
            inputs=dict(smk.input.items()),
            config=config,
            params=dict(smk.params.items()),
            node=int(node) if node is not None else None,
            part=part,
            source=source,
            read=disk_state.record_inputs(list(smk.input)),
        )

    @property
    def timeout(self) -> float:
        """This stage's budget in seconds (config timeouts.<stage>)."""
        return float(self.config["timeouts"][self.stage])

    def raw_dir(self, kind: str) -> Path:
        """Where the stage's raw profiler output is: collected under results/, or imported in place."""
        if self.config["mode"] == "analyze":
            return Path(self.config["analyze"][kind] or "")
        return Path("results") / self.experiment / self.stage / "raw"

    def gate(self, needed: Mapping[str, str | Path], optional: Mapping[str, str | Path] | None = None) -> Gate:
        return gate(needed, optional)

    def hold_cluster(self) -> Status | None:
        """A collective job, once its gate is open: wait for the cluster (shell/cluster_lock.py) and hold it until the
        job ends. The wait is no part of the stage's budget: ``started`` is when the cluster became this job's. A wait
        that runs out is a `failed` status naming the holder (retryable: the next plain snakemake runs it again), returned for
        the body to return; None when the cluster is held."""
        where = cluster_lock.scope(self.config, Path.cwd())
        holder = cluster_lock.Holder.here(self.experiment, f"{self.stage}/{self.part}" if self.part else self.stage)
        try:
            taken = cluster_lock.take(where, holder, float(self.config["cluster_lock"]["wait"]), log.warning)
        except cluster_lock.Busy as exc:
            return self.status("failed", str(exc), details={"cause": "cluster_busy", "cluster_lock": where.describe()})
        if taken.waited_s >= 1:
            log.warning("the cluster is this job's after %.0f s of waiting", taken.waited_s)
        self.started, self.cluster = now_iso(), taken.record()
        return None

    def status(self, state: str, reason: str, **fields: Any) -> Status:
        if self.cluster is not None:
            fields["details"] = {**fields.get("details", {}), "cluster_lock": self.cluster}
        if self.params.get("on_demand"):  # outside `all`: refreshed when what it was made from changes (disk_state)
            fields["details"] = {**fields.get("details", {}), "on_demand": True}
        return Status(
            stage=self.stage,
            experiment=self.experiment,
            state=state,
            reason=reason,
            toolchain=self.toolchain,
            node=self.node,
            source=fields.pop("source", self.source),
            part=self.part,
            started=self.started,
            finished=now_iso(),
            **fields,
        )

    def skipped(self, g: Gate) -> Status:
        return self.status("skipped", g.reason(), upstream=g.upstream, root_cause=g.root_cause())

    def finish(self, status: Status) -> Status:
        return finish_outputs(self.outputs, self.status_path, status, self.read)


RAISE_ENV = "DISPATCHPROF_RAISE"  # "1": an unexpected exception in a stage's body is raised (tests, debugging)


def raise_internal_errors() -> bool:
    return os.environ.get(RAISE_ENV, "") not in ("", "0")


def internal_error(exc: BaseException) -> str:
    """One sentence for an exception nothing expected: "internal error in <reader> on <file>: <last line>". The reader
    is the innermost library function of the traceback (formats first), the file the nearest path it was reading."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    library = [f for f, _ in frames if f"{os.sep}dispatchprof{os.sep}" in f.f_code.co_filename]
    readers = (
        [f for f in library if f"{os.sep}formats{os.sep}" in f.f_code.co_filename] or library or [f for f, _ in frames]
    )
    where = readers[-1]
    module = Path(where.f_code.co_filename).stem
    reader = f"{module}.{where.f_code.co_name}"
    path = next(
        (
            v
            for f in reversed(readers)
            for k, v in f.f_locals.items()
            if k in ("path", "prof", "directory", "root") and isinstance(v, (str, Path))
        ),
        None,
    )
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return f"internal error in {reader} on {path if path is not None else 'an unknown file'}: {last}"


# The errors of a results directory that cannot take a write (permissions, a read-only or full filesystem).
UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


def run_stage(smk: Any, stage: str, body: Callable[[StageRun], Status], part: str | None = None) -> Status:
    """Entry point of a stage script: build the run, call the body, write outputs and status. An exception the body
    did not expect (a reader's bug on a user's file) makes the part `invalid` with "internal error in <reader> on
    <file>: <last line>" and the traceback in the job's log, so the run goes on and the report renders; with
    DISPATCHPROF_RAISE=1 (the test suite sets it) it is raised instead. A results directory that cannot take the
    status, Ctrl-C and a cancellation (SIGTERM, or Snakemake gone: shell/lifeline.py) end the job with one line and
    no status: Snakemake marks it incomplete, and the next plain `snakemake` runs it again."""
    name = f"{stage}{'/' + part if part else ''}"
    try:
        lifeline.install(name)
        run = StageRun.from_snakemake(smk, stage, part)  # in the try: Ctrl-C may come while Snakemake's params load
        return run.finish(damaged(run) or guarded(run, body))
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        # results/ became unwritable (read-only, full): no status can say so; one line and a non-zero exit instead.
        print(
            f"{name}: cannot write {exc.filename or 'an output'}: {exc.strerror}; the run cannot record this stage",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        # Ctrl-C reaches every process of the group: the launchers have ended their process groups on the way out
        # (their finally blocks); one line instead of a traceback, and the interrupt's exit code. Snakemake marks the
        # job incomplete; the next `snakemake` reruns it (profiles/default sets rerun-incomplete).
        print(f"{name}: interrupted (Ctrl-C); the next snakemake reruns this job", file=sys.stderr)
        raise SystemExit(130) from None
    except lifeline.Cancelled as exc:
        # Not a measurement: no status (a `timeout` here would stand for good), and a non-zero exit.
        print(
            f"{name}: cancelled ({exc}); its tools were stopped and the next snakemake reruns this job", file=sys.stderr
        )
        raise SystemExit(143) from None


def damaged(run: StageRun) -> Status | None:
    """`invalid` naming every input that is not what its job wrote (truncated, edited, gone), before the body reads
    any: an input error, never a reader's crash. The report instead notes such a file in its section and renders
    the rest."""
    problems = [] if run.stage == "report" else disk_state.damaged_inputs(run.read)
    if not problems:
        return None
    return run.status("invalid", "an input is not what its job wrote: " + "; ".join(problems))


def guarded(run: StageRun, body: Callable[[StageRun], Status]) -> Status:
    try:
        return body(run)
    except IntermediateUnreadable as exc:  # a file of the run damaged since its job wrote it: an input error, named
        return run.status("invalid", str(exc))
    except Exception as exc:
        if raise_internal_errors() or (isinstance(exc, OSError) and exc.errno in UNWRITABLE):
            raise  # an unwritable results directory is no workflow bug: run_stage ends the job with one line
        log.exception(
            "%s%s: unexpected exception (a workflow bug: please report it with this log)",
            run.stage,
            f"/{run.part}" if run.part else "",
        )
        return run.status(
            "invalid", internal_error(exc) + " (a workflow bug: the traceback is in this job's log; please report it)"
        )


def needed_parts_or_end(smk: Any, stage: str) -> dict[str, Status]:
    """Called before a stage script imports its analysis (pandas, matplotlib): the statuses of the parts the
    stage needs, when all are ok. Otherwise it writes the folded status and placeholders and ends the job here:
    a skipped stage then costs a bare Python start, not ~0.5-1 s of imports (most stages of a failed run, and
    every stage without data in analyze mode, are skipped)."""
    parts = {label: read_input_status(smk.input[label]) for label in smk.params["needed"]}
    if not all(p.ok for p in parts.values()):
        run = StageRun.from_snakemake(smk, stage)
        run.finish(fold(stage, run.experiment, run.toolchain, parts))
        sys.exit(0)
    return parts


def failed_validations(validations: list[Validation]) -> list[Validation]:
    return [v for v in validations if not v.passed and v.severity == "error"]
