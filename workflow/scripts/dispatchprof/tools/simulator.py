"""`msopprof simulator`: its command line and what its log and output must show (docs/formats.md §2).

The simulator takes --timeout in minutes (1-2880) and, on expiry, kills the app and parses what it has. The
workflow's own budget (timeouts.probe, seconds) sets that --timeout; the process group is ended only
PARSE_MARGIN_S later, so the tool's partial parse is kept. Like the device side it exits 0 after any attempt:
the log's [ERROR] lines and the OPPROF_ tree are the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from dispatchprof.shell.config import MSOPPROF_OUTPUT_MAX
from dispatchprof.tools.opprofiler import ENTRIES, FAILURE_LINES

PARSE_MARGIN_S = 120
TIMEOUT_LINE = "The timeout has reached"


def tool_timeout_min(budget_s: float) -> int:
    """The simulator's --timeout (whole minutes, 1-2880) for a budget in seconds: never above the budget."""
    return int(min(2880, max(1, budget_s // 60)))


def simulator_command(
    entry: str, soc_version: str, output: Path, budget_s: float, app: Sequence[str], kernel_name: str | None = None
) -> list[str]:
    """The simulator's command line. Without --kernel-name it simulates only the first kernel the probe launches
    (docs/formats.md §2): probe.kernel_name names the kernel when the probe launches more than one."""
    if entry not in ENTRIES:
        raise ValueError(f"no usable op-profiler entry ({entry!r})")
    if len(str(output)) > MSOPPROF_OUTPUT_MAX:
        raise ValueError(
            f"--output {output} is {len(str(output))} characters; msopprof refuses more than {MSOPPROF_OUTPUT_MAX}"
        )
    named = [f"--kernel-name={kernel_name}"] if kernel_name else []
    return [
        *ENTRIES[entry],
        "simulator",
        f"--soc-version={soc_version}",
        f"--output={output}",
        f"--timeout={tool_timeout_min(budget_s)}",
        *named,
        *app,
    ]


@dataclass
class Outcome:
    state: str
    reason: str


def judge(
    log_text: str, exit_code: int | None, killed: bool, simulated_kernels: int, budget_s: float, entry: str
) -> Outcome:
    """The collect part's state from what the run left: killed by us, stopped by its own --timeout, refused
    ([ERROR] lines), no output, or ok."""
    # The device side's failure lines hold for the simulator too (docs/formats.md §2): it exits 0 after any attempt.
    errors = [line.strip() for line in log_text.splitlines() if any(marker in line for marker in FAILURE_LINES)]
    tool = f"{entry} simulator"
    if killed:
        return Outcome(
            "timeout",
            f"{tool} ran past its --timeout of {tool_timeout_min(budget_s)} min "
            f"plus {PARSE_MARGIN_S} s to parse; its process group was ended",
        )
    if TIMEOUT_LINE in log_text:
        return Outcome(
            "timeout",
            f"{tool} reached its --timeout of {tool_timeout_min(budget_s)} min and parsed a partial run"
            + (f" ({simulated_kernels} kernel(s) kept under raw/)" if simulated_kernels else "")
            + ": raise timeouts.probe or shorten the probe",
        )
    if errors:
        verb = "refused the probe" if "[ERROR]" in errors[0] else "reported a failure"
        return Outcome("failed", f"{tool} {verb}: {errors[0]}")
    if exit_code not in (0, None) and not simulated_kernels:
        return Outcome("failed", f"{tool} exited {exit_code} without output (see the log)")
    if not simulated_kernels:
        return Outcome(
            "invalid",
            f"{tool} exited {exit_code} but wrote no OPPROF_*/simulator/ "
            "directory (no kernel was simulated: did the probe launch one?)",
        )
    return Outcome(
        "ok", f"{tool} simulated {simulated_kernels} kernel(s) of the probe (simulator, single card, local probe)"
    )
