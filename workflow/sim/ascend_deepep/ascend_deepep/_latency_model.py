"""The stand-in's latency model: what one dispatch kernel launch would take on one rank.

Composed from the kernel's AIV roles (shared/formats/deepep.md §4) so a change to one role moves the
end-to-end latency: CalCumSum, then TokenCopyToBuffer, then the slower of URMASendToken (remote bytes)
and SelfCopyToken (local bytes). Multiplicative jitter, rare tail spikes and a warm-up transient on top.
Knobs (environment): DEEPEP_SIM_SLOW_RANK + DEEPEP_SIM_SLOW_FACTOR (consistently slower),
DEEPEP_SIM_SPIKY_RANK (occasionally much slower), DEEPEP_SIM_ROLE_SPEEDUP ("Role=0.9,Other=1.1"),
DEEPEP_SIM_NOISE_SEED. All numbers are simulated.
"""

from __future__ import annotations

import math
import os
import random

# Simulated throughputs in bytes per microsecond and fixed costs in microseconds.
REMOTE_BYTES_PER_US = 25_000.0
LOCAL_BYTES_PER_US = 90_000.0
STAGE_BYTES_PER_US = 120_000.0
JITTER_SIGMA = 0.02
SPIKE_PROB, SPIKE_RANGE = 0.002, (1.3, 1.8)
SPIKY_PROB, SPIKY_RANGE = 0.08, (2.0, 3.0)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value not in ("", "None") else None


def role_speedups() -> dict[str, float]:
    spec = os.environ.get("DEEPEP_SIM_ROLE_SPEEDUP", "")
    return {k: float(v) for k, v in (item.split("=") for item in spec.split(",") if item)}


def role_times_us(remote_bytes: int, local_bytes: int, num_experts: int) -> dict[str, float]:
    speed = role_speedups()
    times = {
        "CalCumSum": 6.0 + 0.02 * num_experts,
        "TokenCopyToBuffer": 4.0 + (remote_bytes + local_bytes) / STAGE_BYTES_PER_US,
        "URMASendToken": 8.0 + remote_bytes / REMOTE_BYTES_PER_US,
        "SelfCopyToken": 3.0 + local_bytes / LOCAL_BYTES_PER_US,
    }
    return {role: t * speed.get(role, 1.0) for role, t in times.items()}


def kernel_us(rank: int, call: int, warmup: int, remote_bytes: int, local_bytes: int, num_experts: int) -> float:
    roles = role_times_us(remote_bytes, local_bytes, num_experts)
    base = roles["CalCumSum"] + roles["TokenCopyToBuffer"] + max(roles["URMASendToken"], roles["SelfCopyToken"])
    seed = _env_int("DEEPEP_SIM_NOISE_SEED") or 0
    rng = random.Random(f"{seed}/{rank}/{call}")
    t = base * math.exp(rng.gauss(0.0, JITTER_SIGMA))
    if rng.random() < SPIKE_PROB:
        t *= rng.uniform(*SPIKE_RANGE)
    if rank == _env_int("DEEPEP_SIM_SPIKY_RANK") and rng.random() < SPIKY_PROB:
        t *= rng.uniform(*SPIKY_RANGE)
    if rank == _env_int("DEEPEP_SIM_SLOW_RANK"):
        t *= float(os.environ.get("DEEPEP_SIM_SLOW_FACTOR", "1.15"))
    if call < warmup:
        t *= 1.0 + 1.5 * math.exp(-call / 2.0)
    return t
