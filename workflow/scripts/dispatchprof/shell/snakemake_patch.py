"""A patch of two private methods of Snakemake, pinned to the versions it was tested on.

results/ made read-only (or full) mid-run: the stage that could not write says so in one line and exits 1
(dispatchprof.shell.stage.UNWRITABLE); Snakemake's own cleanup then fails on the same directory, removing the
failed job's outputs (Job.cleanup, an rmtree) and the empty output directories (DAG.cleanup_workdir), with a
traceback and no end-of-run table. Patched, both say one line and the run ends through onerror (the table).

Both methods are private: another Snakemake release may rename them, change their arguments or make them
synchronous. On a version not in TESTED_VERSIONS, or when their shape is not the one patched, nothing is patched
and the caller gets one line that says so and what is lost (the workflow itself still runs).
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

# The Snakemake releases this patch was run on (tests/workflow/test_interruptions.py, results made read-only).
# Add a release here only after that test passed on it.
TESTED_VERSIONS = frozenset({"9.27.1"})
CONSEQUENCE = (
    "a results/ directory that becomes unwritable mid-run then ends with "
    "Snakemake's traceback instead of one line and the end-of-run table"
)


def installed_version() -> str:
    import snakemake

    return str(getattr(snakemake, "__version__", "unknown"))


def shape_problem(dag_cls: Any, job_cls: Any) -> str | None:
    """What the patch needs of the two methods, and what differs: None when both are as on the tested versions."""
    cleanup_workdir = getattr(dag_cls, "cleanup_workdir", None)
    cleanup = getattr(job_cls, "cleanup", None)
    if cleanup_workdir is None or cleanup is None:
        return "snakemake.dag.DAG.cleanup_workdir and snakemake.jobs.Job.cleanup must exist"
    if list(inspect.signature(cleanup_workdir).parameters) != ["self"]:
        return f"DAG.cleanup_workdir must take (self), it takes {inspect.signature(cleanup_workdir)}"
    if list(inspect.signature(cleanup).parameters) != ["self", "skip_outputs"]:
        return f"Job.cleanup must take (self, skip_outputs), it takes {inspect.signature(cleanup)}"
    if not inspect.iscoroutinefunction(cleanup):
        return "Job.cleanup must be a coroutine function (async def)"
    return None


def refusal(version: str, problem: str | None) -> str | None:
    """The line said when the patch is not applied, None when it can be."""
    if version not in TESTED_VERSIONS:
        tested = ", ".join(sorted(TESTED_VERSIONS))
        why = f"it is tested on Snakemake {tested} only"
    elif problem:
        why = f"its private methods changed: {problem}"
    else:
        return None
    return (
        f"Note: Snakemake {version} is installed; the workflow's patch of DAG.cleanup_workdir and Job.cleanup "
        f"(dispatchprof.shell.snakemake_patch) is not applied: {why}. Consequence: {CONSEQUENCE}. "
        f"(Install a tested version, or add {version} to TESTED_VERSIONS after tests/workflow/test_interruptions.py "
        f"passes on it.)"
    )


def said(exc: OSError, what: str) -> None:
    from dispatchprof.shell.stage import UNWRITABLE

    if exc.errno not in UNWRITABLE:
        raise exc
    print(f"snakemake: cannot {what} {exc.filename or ''} ({exc.strerror}): left as it is", file=sys.stderr)


def tolerate_unwritable_results() -> str | None:
    """Patch DAG.cleanup_workdir and Job.cleanup (once per process); the refusal line instead, nothing patched,
    on an untested Snakemake or methods of another shape."""
    import snakemake.api  # noqa: F401  (loaded first: snakemake.dag alone is a circular import)
    from snakemake.dag import DAG
    from snakemake.jobs import Job

    if getattr(DAG.cleanup_workdir, "dispatchprof", False):
        return None
    note = refusal(installed_version(), shape_problem(DAG, Job))
    if note:
        return note
    original_dirs, original_job = DAG.cleanup_workdir, Job.cleanup

    @functools.wraps(original_dirs)
    def cleanup_workdir(self: Any) -> None:
        try:
            original_dirs(self)
        except OSError as exc:
            said(exc, "remove the empty output directory")

    @functools.wraps(original_job)
    async def cleanup(self: Any, skip_outputs: Any) -> None:
        try:
            await original_job(self, skip_outputs)
        except OSError as exc:
            said(exc, f"remove the outputs of failed job {self}:")

    cleanup_workdir.dispatchprof = True  # type: ignore[attr-defined]
    DAG.cleanup_workdir, Job.cleanup = cleanup_workdir, cleanup
    return None
