"""Entry point of the *_import rules (analyze mode): check the user's artifacts and record a manifest."""

import sys
from pathlib import Path

sys.path.insert(0, snakemake.scriptdir)

from dispatchprof.shell.atomic import write_json_atomic  # noqa: E402
from dispatchprof.shell.config import world_ranks  # noqa: E402
from dispatchprof.stages.imports import checked_import, file_count, manifest  # noqa: E402
from dispatchprof.shell.stage import StageRun, run_stage  # noqa: E402
from dispatchprof.shell.status import Status  # noqa: E402


def body(run: StageRun) -> Status:
    kind = run.params["kind"]
    path = run.config["analyze"][kind]
    state, reason, details = checked_import(kind, path, run.config["cluster"]["nodes"], world_ranks(run.config))
    entries = manifest(Path(path), checksums=run.config["analyze"]["checksums"]) if path and Path(path).exists() else []
    write_json_atomic(
        run.outputs["manifest"],
        {"toolchain": "none", "source": "import", "kind": kind, "root": path, "files": entries, **details},
    )
    if entries:
        reason += f"; {file_count(entries)}"
    return run.status(state, reason, source="import", details=details, artifacts=[str(run.outputs["manifest"])])


run_stage(snakemake, snakemake.rule.removesuffix("_import"), body, part="import")
