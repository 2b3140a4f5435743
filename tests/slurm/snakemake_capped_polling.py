"""`python -m snakemake` for the SLURM tests, with the SLURM executor plugin's status-check back-off capped.

The plugin adds 10 s to its interval after every status check in which no job finished (up to 180 s), whatever the
profile's seconds-between-status-checks says: a test job of ~5 s was seen finished ~14 s after its submission, and the
pipeline test submits a dozen jobs one after another. Here the interval never exceeds the profile's
seconds-between-status-checks. Submission, status parsing and placement are the plugin's own; only how long the
Snakemake process sleeps between two checks changes. Real clusters keep the plugin's back-off (profiles/slurm).

    python tests/slurm/snakemake_capped_polling.py --profile <dir> [snakemake arguments]
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from snakemake_executor_plugin_slurm import Executor as SlurmExecutor
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor


def profile_interval_s(argv: list[str]) -> float:
    if "--profile" not in argv[:-1]:
        raise SystemExit(f"usage: {__doc__.strip().splitlines()[-1].strip()}")
    profile = Path(argv[argv.index("--profile") + 1])
    return float(yaml.safe_load((profile / "config.yaml").read_text())["seconds-between-status-checks"])


def cap_status_check_interval(cap_s: float) -> None:
    interval = RemoteExecutor.__dict__.get("next_seconds_between_status_checks")
    if not isinstance(interval, property) or interval.fset is None:
        raise SystemExit(
            "snakemake_capped_polling: RemoteExecutor.next_seconds_between_status_checks "
            "is no settable property in this version"
        )

    def capped(self: RemoteExecutor, value: float | None) -> None:
        interval.fset(self, None if value is None else min(value, cap_s))

    SlurmExecutor.next_seconds_between_status_checks = property(interval.fget, capped)


if __name__ == "__main__":
    cap_status_check_interval(profile_interval_s(sys.argv))
    from snakemake.cli import main

    sys.argv[0] = "snakemake"
    main()
