"""The simulated cluster's event model: one dispatch launch, for every rank and AIV core at once.

Every simulated artifact (msprof tasks, dispatch_latency.csv in both measurement modes, the full-API time,
msopprof's per-core rows, PC samples) is derived from the events computed here, so the confounders of a
collective are in all of them at once. What waits on what follows docs/formats.md §3, which is
itself inferred from the call order; each rule below is a modelling assumption, named where it is made.

Per launch (times in µs on the true clock, 0 = the first call of the process group):
1. host: every rank enters dispatch() when its previous call returned; the launch reaches the device after
   a host path (jitter, plus lateness from sim.late_rank / sim.late_rank2 / sim.late_node);
2. synchronize_start barrier kernel (`cached_notify_combine`), when the session sets it: releases every rank
   at the last arrival plus a latency; the late rank has the shortest barrier task;
3. the dispatch kernel's entry barrier (`aclshmemx_barrier_all_vec`), inside the kernel: every core waits for the
   last rank's kernel start; kernel-mode latency starts after it (start tick per core);
4. roles on their cores: CalCumSum counts, sends counts and waits for every peer's (WaitDispatch);
   TokenCopyToBuffer stages and publishes; URMASendToken builds WQEs per destination and waits for the link
   (send completion); SelfCopyToken waits for the local stage (WaitAllStageDone), then copies;
5. LocalWindowCopy on every core once all of the rank's incoming tokens (and its own CalCumSum) are in; the
   kernel ends on a rank when its last core's LocalWindowCopy ends.
Per core the pipes (MTE2, MTE3, vector, scalar) are busy during work phases by role-specific fractions;
waiting phases poll (scalar-light, no other pipe busy). aiv_time covers both; pipe times may overlap.

Nothing here is a measurement. The model uses the standard library only (it runs in the test's Python).
"""

from __future__ import annotations

import contextlib
import heapq
import math
import os
import random
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

ROLES = ("TokenCopyToBuffer", "URMASendToken", "SelfCopyToken", "CalCumSum")
LWC = "LocalWindowCopy"
PIPES = ("vec", "scalar", "mte2", "mte3")

# Simulated constants (µs, bytes per µs). The link and copy rates are per AIV core.
HOST_PATH_US = 18.0  # dispatch() entry -> the first kernel reaches the device (layout/notify launches)
HOST_JITTER_MEAN_US = 3.0  # exponential
START_SKEW_MAX_US = 50.0  # ranks' first calls start this far apart
SYNC_BARRIER_LATENCY_US = 4.0  # last arrival -> release of cached_notify_combine
ENTRY_BARRIER_LATENCY_US = 2.5  # last kernel start -> release of aclshmemx_barrier_all_vec
CROSS_NODE_NOTIFY_US = 1.2  # a release reaches the other nodes' ranks this much later
LAUNCH_GAP_US = 1.5  # barrier kernel end -> dispatch kernel start on the same stream
POST_US = 9.0  # kernel end -> dispatch() returns after synchronize (epilogue, D2H)
EVENT_OVERHEAD_US = 0.8  # ACL event record around the launch (event-mode latency)
LINK_LATENCY_US = {True: 1.5, False: 4.0}  # same node / across nodes
# Link capacity (sim.link_gbps, DEEPEP_SIM_LINK_GBPS): GB/s (1e9 B/s, x 1e3 = bytes per us) of ONE rank's port of a link
# class, in one direction. Every rank has a send port and a receive port per class (intra_node: to/from its node's other
# ranks; inter_node: to/from other nodes' ranks); a send holds its sender's send port and its receiver's receive port of
# its class for bytes / capacity (sim.slow_link divides the capacity of its node pair). The defaults are the per-rank
# rates of the earlier model's independent queues on 2 x 8 (2.4 GB/s x 7 same-node destinations, 1.4 GB/s x 8 across).
LINK_CLASSES = ("intra_node", "inter_node")
DEFAULT_LINK_GBPS: Mapping[str, float] = {"intra_node": 16.8, "inter_node": 11.2}
WQE_BYTES_PER_US = 6_000.0  # WQE build (SIMT) rate of one URMA core; then the core polls for the link's completion
STAGE_BYTES_PER_US = 8_000.0  # TokenCopyToBuffer, per core
SELF_BYTES_PER_US = 4_000.0  # SelfCopyToken, per core
LWC_BYTES_PER_US = 20_000.0  # LocalWindowCopy, per core
PREPARE_US = 6.0  # simt_prepare_mapping (URMA and SelfCopy cores)
CUMSUM_COUNT_US, CUMSUM_PER_EXPERT_US, CUMSUM_POST_US = 5.0, 0.02, 4.0
COUNTS_LATENCY_US = {True: 1.0, False: 3.0}
JITTER_SIGMA = 0.02  # per core and phase, multiplicative (lognormal)
SPIKE_PROB, SPIKE_RANGE = 0.002, (1.3, 1.8)  # any rank, any launch: its own work
SPIKY_PROB, SPIKY_RANGE = 0.08, (2.0, 3.0)  # sim.spiky_rank
WARM_EXTRA, WARM_DECAY_CALLS = 1.5, 2.0  # the first calls of a process are slower (cold caches)
REPLAY_SETUP_MAX_US = 40.0  # kernel replay: each rank's tool re-issues the kernel after its own set-up
POLL_SCALAR = 0.02  # a polling core's scalar pipe share (the default of sim.poll_pipe_share)
# sim.pre_kernels: stand-ins for kernels in the host window before the barrier (docs/formats.md §3: layout/notify
# kernels exist, their names and behaviour on hardware are not known). The plain one runs on its own; the collective one
# ends on every rank only after the last rank started it, so it
# absorbs host lateness before cached_notify_combine sees it.
PRE_PLAIN = "sim_layout_kernel"
PRE_COLLECTIVE = "sim_notify_kernel"
PRE_KERNELS = {"none": (), "plain": (PRE_PLAIN,), "collective": (PRE_COLLECTIVE,), "both": (PRE_PLAIN, PRE_COLLECTIVE)}
PRE_PLAIN_US = 5.0  # + uniform 0-0.5 us
PRE_COLLECTIVE_WORK_US, PRE_COLLECTIVE_LATENCY_US = 2.0, 3.0  # own work; last start -> release
DEFAULT_POLL_SHARE: Mapping[str, float] = {"scalar": POLL_SCALAR}  # per pipe, while a core polls; unlisted pipes idle

# Pipe busy fractions of each kind of work (vec, scalar, mte2, mte3); SIMT code runs on the vector unit.
WORK_PIPES = {
    "count": (0.30, 0.45, 0.15, 0.08),
    "post": (0.25, 0.50, 0.10, 0.10),
    "stage": (0.05, 0.10, 0.80, 0.75),
    "prepare": (0.60, 0.30, 0.20, 0.05),
    "wqe": (0.50, 0.50, 0.05, 0.20),
    "copy": (0.03, 0.10, 0.85, 0.80),
}
ICACHE_MISS = {"TokenCopyToBuffer": 0.020, "URMASendToken": 0.025, "SelfCopyToken": 0.015, "CalCumSum": 0.030}
SIMT_SPLIT = {
    "buildRemoteWqeDesc": 0.40,
    "simt_nw_mj_vf": 0.25,
    "simt_write_wqe_v4": 0.35,
}  # of an URMA core's WQE work


def stand_in_tiling(num_aiv: int) -> list[str]:
    """The stand-in kernel's role per AIV index (the workflow's kernel.roles is the user's assumption; this is the
    simulated truth): TokenCopyToBuffer, URMASendToken, SelfCopyToken, then CalCumSum cores."""
    cumsum = max(1, min(16, num_aiv // 2))
    selfcopy = min(4, max(0, num_aiv - cumsum - 2))
    rest = num_aiv - cumsum - selfcopy
    stage, urma = (rest + 1) // 2, rest // 2
    return (
        ["TokenCopyToBuffer"] * stage + ["URMASendToken"] * urma + ["SelfCopyToken"] * selfcopy + ["CalCumSum"] * cumsum
    )


def _pairs(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if "=" in item)


def _poll_share(text: str) -> dict[str, float]:
    given = {k: float(v) for k, v in _pairs(text).items()}
    if set(given) - set(PIPES) or any(not 0.0 <= v <= 1.0 for v in given.values()):
        raise ValueError(
            f"DEEPEP_SIM_POLL_PIPE_SHARE={text!r}: expected pipe=share "
            f"with pipes from {', '.join(PIPES)} and shares in [0, 1]"
        )
    return given or dict(DEFAULT_POLL_SHARE)


def _link_gbps(text: str) -> dict[str, float]:
    given = {k: float(v) for k, v in _pairs(text).items()}
    if set(given) - set(LINK_CLASSES) or any(not v > 0.0 for v in given.values()):
        raise ValueError(
            f"DEEPEP_SIM_LINK_GBPS={text!r}: expected class=GB/s with "
            f"classes from {', '.join(LINK_CLASSES)} and capacities > 0"
        )
    return {**DEFAULT_LINK_GBPS, **given}


def _pre_kernels(value: str) -> str:
    if value not in PRE_KERNELS:
        raise ValueError(f"DEEPEP_SIM_PRE_KERNELS={value!r}: expected one of {', '.join(PRE_KERNELS)}")
    return value


def _opt_int(value: str | None) -> int | None:
    return int(value) if value not in (None, "", "None") else None


@dataclass(frozen=True)
class Knobs:
    """The fault knobs (workflow config `sim:`), as the workflow passes them in DEEPEP_SIM_* variables."""

    seed: int = 0
    slow_rank: int | None = None
    slow_factor: float = 1.15
    spiky_rank: int | None = None
    role_speedup: Mapping[str, float] = field(default_factory=dict)
    late_rank: int | None = None
    late_node: int | None = None
    late_us: float = 50.0
    late_prob: float = 1.0
    # A second late rank with its own lateness and probability, drawn independently of the first (two late ranks of
    # different cost and frequency: 8 us in 90% of launches against
    # 120 us in 15%). A rank late by both is late by the sum.
    late_rank2: int | None = None
    late_us2: float = 50.0
    late_prob2: float = 1.0
    slow_role: tuple[int, str, float] | None = None  # rank, role (or LocalWindowCopy), factor
    slow_link: tuple[int, int, float] | None = None  # src node, dst node, factor
    clock_offset_us: Mapping[int, float] = field(default_factory=dict)
    clock_drift_ppm: Mapping[int, float] = field(default_factory=dict)
    icache_hot_role: str | None = None
    # What a waiting core's polling loop keeps busy, per pipe (a modelling assumption: on hardware the spin loop's pipe
    # use is not known; by default 2% scalar and nothing else). Given, it replaces the default whole.
    poll_pipe_share: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_POLL_SHARE))
    pre_kernels: str = "none"  # none | plain | collective | both (PRE_KERNELS)
    # Capacity of one rank's send port and of its receive port per link class, GB/s (DEFAULT_LINK_GBPS; a class not
    # given keeps its default). Not a fault: the simulated cluster's
    # hardware, which the bandwidth bound reads under toolchain sim.
    link_gbps: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_LINK_GBPS))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Knobs:
        env = os.environ if env is None else env
        slow_role = _pairs(env.get("DEEPEP_SIM_SLOW_ROLE", ""))
        slow_link = _pairs(env.get("DEEPEP_SIM_SLOW_LINK", ""))
        return cls(
            seed=int(env.get("DEEPEP_SIM_NOISE_SEED") or 0),
            slow_rank=_opt_int(env.get("DEEPEP_SIM_SLOW_RANK")),
            slow_factor=float(env.get("DEEPEP_SIM_SLOW_FACTOR") or 1.15),
            spiky_rank=_opt_int(env.get("DEEPEP_SIM_SPIKY_RANK")),
            role_speedup={k: float(v) for k, v in _pairs(env.get("DEEPEP_SIM_ROLE_SPEEDUP", "")).items()},
            late_rank=_opt_int(env.get("DEEPEP_SIM_LATE_RANK")),
            late_node=_opt_int(env.get("DEEPEP_SIM_LATE_NODE")),
            late_us=float(env.get("DEEPEP_SIM_LATE_US") or 50.0),
            late_prob=float(env.get("DEEPEP_SIM_LATE_PROB") or 1.0),
            late_rank2=_opt_int(env.get("DEEPEP_SIM_LATE_RANK2")),
            late_us2=float(env.get("DEEPEP_SIM_LATE_US2") or 50.0),
            late_prob2=float(env.get("DEEPEP_SIM_LATE_PROB2") or 1.0),
            slow_role=(int(slow_role["rank"]), slow_role["role"], float(slow_role["factor"])) if slow_role else None,
            slow_link=(int(slow_link["src_node"]), int(slow_link["dst_node"]), float(slow_link["factor"]))
            if slow_link
            else None,
            clock_offset_us={int(k): float(v) for k, v in _pairs(env.get("DEEPEP_SIM_CLOCK_OFFSET_US", "")).items()},
            clock_drift_ppm={int(k): float(v) for k, v in _pairs(env.get("DEEPEP_SIM_CLOCK_DRIFT_PPM", "")).items()},
            icache_hot_role=env.get("DEEPEP_SIM_ICACHE_HOT_ROLE") or None,
            poll_pipe_share=_poll_share(env.get("DEEPEP_SIM_POLL_PIPE_SHARE", "")),
            pre_kernels=_pre_kernels(env.get("DEEPEP_SIM_PRE_KERNELS") or "none"),
            link_gbps=_link_gbps(env.get("DEEPEP_SIM_LINK_GBPS", "")),
        )

    def offset_us(self, node: int) -> float:
        """Node clocks disagree: by default node k's clock is k x 1823.456 µs ahead of node 0's."""
        return float(self.clock_offset_us.get(node, 1823.456 * node))

    def drift_ppm(self, node: int) -> float:
        """By default node k's clock runs 2.5 x k ppm fast against node 0's."""
        return float(self.clock_drift_ppm.get(node, 2.5 * node))


@dataclass(frozen=True)
class Cluster:
    world: int
    ranks_per_node: int
    num_aiv: int
    num_experts: int

    def node(self, rank: int) -> int:
        return rank // self.ranks_per_node


@dataclass(slots=True)
class Phase:
    name: str
    kind: str  # work | wait_peers | wait_local | wait_link
    start: float
    end: float
    work: str | None = None  # key of WORK_PIPES for work phases
    nbytes: float = 0.0  # bytes the phase moves through MTE2 (copies)

    @property
    def us(self) -> float:
        return self.end - self.start


@dataclass
class Core:
    """One AIV core of one rank in one launch: kernel start -> entry barrier -> role -> LocalWindowCopy."""

    block_id: int
    role: str
    phases: list[Phase] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.phases[0].start

    @property
    def start_tick(self) -> float:
        """Where kernel-mode latency starts: after the entry barrier."""
        return self.phases[1].start

    @property
    def end(self) -> float:
        return self.phases[-1].end

    def busy_us(self) -> float:
        return sum(p.us for p in self.phases if p.kind == "work")

    def waiting_us(self) -> float:
        """Time blocked on other ranks (entry barrier, peers' counts, incoming tokens)."""
        return sum(p.us for p in self.phases if p.kind == "wait_peers")

    def polling_us(self) -> float:
        """Every non-work phase: the core spins on a flag or a completion; no pipe but a little scalar is busy."""
        return sum(p.us for p in self.phases if p.kind != "work")

    def pipe_us(self, poll: Mapping[str, float] = DEFAULT_POLL_SHARE) -> dict[str, float]:
        """Busy time per pipe: work phases by their kind's fractions,
        polling phases by ``poll`` (sim.poll_pipe_share)."""
        busy = dict.fromkeys(PIPES, 0.0)
        for p in self.phases:
            if p.kind == "work":
                for pipe, share in zip(PIPES, WORK_PIPES[p.work or "copy"]):
                    busy[pipe] += share * p.us
            else:
                for pipe, share in poll.items():
                    busy[pipe] += share * p.us
        return busy

    def phase_us(self, name: str) -> float:
        return sum(p.us for p in self.phases if p.name == name)


@dataclass
class RankLaunch:
    rank: int
    node: int
    host_call: float  # dispatch() entered
    arrival: float  # the first kernel of this launch starts on the device
    barrier_end: float | None  # cached_notify_combine ends (synchronize_start)
    kernel_start: float  # elastic_dispatch_kernel starts on the device
    entry_release: float
    cores: list[Core]
    kernel_end: float
    api_end: float  # dispatch() + synchronize() return
    last_token: float  # the last incoming token's arrival
    awaited_sender: int  # whose tokens arrived last
    counts_ready: float
    awaited_counts: int  # whose counts arrived last (WaitDispatch)
    late_us: float = 0.0  # host lateness the knobs added
    work_factor: float = 1.0  # slow_rank, spikes, warm-up on this rank's own work
    host_arrival: float | None = None  # the launch reaches the device: its first kernel starts (None: = arrival)
    pre_tasks: list[list[Any]] = field(default_factory=list)  # sim.pre_kernels: [name, start, end] before the barrier

    @property
    def kernel_mode_us(self) -> float:
        """AKL kernel mode: max over AIV cores of end minus start tick (outer barriers excluded)."""
        return max(c.end - c.start_tick for c in self.cores)

    @property
    def event_mode_us(self) -> float:
        """AKL event mode: ACL events around the launch, entry barrier included."""
        return self.kernel_end - self.kernel_start + EVENT_OVERHEAD_US

    @property
    def task_us(self) -> float:
        """What msprof shows as the dispatch kernel's task duration."""
        return self.kernel_end - self.kernel_start

    @property
    def barrier_us(self) -> float | None:
        return None if self.barrier_end is None else self.barrier_end - self.arrival

    @property
    def api_us(self) -> float:
        return self.api_end - self.host_call


def rank_launch_to_wire(rl: RankLaunch) -> dict[str, Any]:
    """One rank's launch as JSON data, for the store: rank 0 computes a launch and sends a rank its part. Floats
    survive JSON exactly (repr round-trips), so the receiver derives the same artifacts as the sender would."""
    data = {f.name: getattr(rl, f.name) for f in fields(RankLaunch) if f.name != "cores"}
    data["cores"] = [
        [c.block_id, c.role, [[p.name, p.kind, p.start, p.end, p.work, p.nbytes] for p in c.phases]] for c in rl.cores
    ]
    return data


def rank_launch_from_wire(data: Mapping[str, Any]) -> RankLaunch:
    cores = [Core(block_id, role, [Phase(*p) for p in phases]) for block_id, role, phases in data["cores"]]
    return RankLaunch(**{**data, "cores": cores})


@dataclass
class Launch:
    call: int
    sync_start: bool
    replay: bool
    ranks: list[RankLaunch]
    sync_release: float | None
    entry_release: float
    arrivals: list[float]  # barrier arrival (sync kernel start, or the dispatch kernel's start) per rank
    struck: frozenset[str] = (
        frozenset()
    )  # the causes that acted in this launch (ids as in _account: late_rank, spikes/3, ...)
    first_collective: str = ""  # the kernel whose start is the arrival (cached_notify_combine, a pre-kernel, ...)

    def arrival_order(self) -> list[int]:
        return sorted(range(len(self.arrivals)), key=lambda r: (self.arrivals[r], r))


# The kernel library this checkout's build wrote (scripts/build.sh; the package's KERNEL_LIBRARY).
KERNEL_LIBRARY = Path(__file__).resolve().parents[1] / "build" / "libascend_deepep_kernels.so"


def library_work(path: Path | None = None) -> dict[str, float]:
    """Per role, the work factor the built library holds (kernels/elastic_dispatch.cpp's ``constexpr float
    WORK_<role>``, which scripts/build.sh writes into the library as ``work_factor <role> <x>`` lines): what a commit
    of the kernel changes under the simulator. A library without such lines, or none at all, is 1.0 for every role."""
    path = KERNEL_LIBRARY if path is None else path
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    work = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "work_factor":
            with contextlib.suppress(ValueError):
                work[parts[1]] = float(parts[2])
    return work


class CollectiveModel:
    """The event model of one process group's launches, for all ranks at once. Deterministic: the launches follow from
    the seed, the call index and the byte matrix. The stand-in computes them in rank 0's process only (which holds
    the host clocks between calls) and sends every rank its own view."""

    def __init__(
        self,
        cluster: Cluster,
        knobs: Knobs,
        without: frozenset[str] = frozenset(),
        work: Mapping[str, float] | None = None,
    ):
        """``without``: causes removed for a counterfactual run (ids as in ``cause_ids``; what removal means is in
        ``remove``'s docstring). Removing a cause never changes a random draw: every launch draws the same numbers.
        ``work``: per role, the kernel's own work factor (default: what the built library holds, library_work)."""
        self.cluster, self.knobs, self.without = cluster, knobs, frozenset(without)
        self.work = dict(library_work() if work is None else work)
        self.tiling = stand_in_tiling(cluster.num_aiv)
        if not {"TokenCopyToBuffer", "URMASendToken", "CalCumSum"} <= set(self.tiling):
            raise ValueError(
                f"elastic dispatch: num_aiv={cluster.num_aiv} leaves a "
                f"role without cores (tiling {self.tiling}); use at least 3"
            )
        rng = random.Random(f"start/{knobs.seed}")
        self.host_now = [rng.uniform(0.0, START_SKEW_MAX_US) for _ in range(cluster.world)]
        self.late_launches: dict[int, list[int]] = {}  # rank -> calls in which the knobs made it late
        self._struck: set[str] = set()

    # -- factors -------------------------------------------------------------------------------------------
    def _role_factor(self, rank: int, role: str) -> float:
        f = self.knobs.role_speedup.get(role, 1.0) * self.work.get(role, 1.0)
        if (
            self.knobs.slow_role
            and self.knobs.slow_role[0] == rank
            and self.knobs.slow_role[1] == role
            and "slow_role" not in self.without
        ):
            f *= self.knobs.slow_role[2]
        return f

    def _link_factor(self, src: int, dst: int) -> float:
        link = self.knobs.slow_link
        if (
            link
            and self.cluster.node(src) == link[0]
            and self.cluster.node(dst) == link[1]
            and "slow_link" not in self.without
        ):
            return link[2]
        return 1.0

    def _always_struck(self) -> set[str]:
        """The knobs that act in every launch (when they change a factor at all)."""
        kn, out = self.knobs, set()
        if kn.slow_rank is not None and kn.slow_factor != 1.0 and 0 <= kn.slow_rank < self.cluster.world:
            out.add("slow_rank")
        if kn.slow_role is not None and kn.slow_role[2] != 1.0 and 0 <= kn.slow_role[0] < self.cluster.world:
            out.add("slow_role")
        if kn.slow_link is not None and kn.slow_link[2] != 1.0:
            out.add("slow_link")
        return out - self.without

    def _work_factors(self, call: int, rng: random.Random, replay: bool) -> list[float]:
        """Per rank: what multiplies all of its own work in this launch (drawn in rank order).
        The first calls of a process are cold; a replayed launch is warm (the tool has run the kernel already)."""
        warm = 1.0 if replay else 1.0 + WARM_EXTRA * math.exp(-call / WARM_DECAY_CALLS)
        out, self._struck = [], self._always_struck()
        for rank in range(self.cluster.world):
            f = warm
            spike, spiky = rng.random(), rng.random()
            spike_size, spiky_size = rng.uniform(*SPIKE_RANGE), rng.uniform(*SPIKY_RANGE)
            if spike < SPIKE_PROB and f"spikes/{rank}" not in self.without:
                f *= spike_size
                self._struck.add(f"spikes/{rank}")
            if rank == self.knobs.spiky_rank and spiky < SPIKY_PROB and "spiky_rank" not in self.without:
                f *= spiky_size
                self._struck.add("spiky_rank")
            if rank == self.knobs.slow_rank and "slow_rank" not in self.without:
                f *= self.knobs.slow_factor
            out.append(f)
        return out

    # -- one launch ------------------------------------------------------------------------------------------
    def launch(self, call: int, sends: list[list[int]], sync_start: bool, host_extra_us: float = 0.0) -> Launch:
        """The live launch number ``call``; ``sends[src][dst]`` = bytes rank src sends rank dst. Advances the host
        clocks (``host_extra_us``: host time every rank spends after
        the call returns, e.g. a DebugClock build's export)."""
        cl, kn = self.cluster, self.knobs
        rng = random.Random(f"launch/{kn.seed}/{call}")
        host_call = list(self.host_now)
        arrivals, lateness, struck_late = [], [], set()
        node_draw = [rng.random() for _ in range(cl.world // cl.ranks_per_node)]  # a late node is late as a whole
        # sim.late_rank2 draws from a stream of its own: one more draw in the launch stream would shift every later draw
        # of every seed. So setting the knob, or removing it for its counterfactual, moves no other draw.
        draw2 = random.Random(f"late_rank2/{kn.seed}/{call}").random() if kn.late_rank2 is not None else 1.0
        for rank in range(cl.world):
            path = HOST_PATH_US + rng.expovariate(1.0 / HOST_JITTER_MEAN_US)
            rank_draw = rng.random()
            late = 0.0
            by_rank = rank == kn.late_rank and rank_draw < kn.late_prob and "late_rank" not in self.without
            by_node = (
                cl.node(rank) == kn.late_node
                and node_draw[cl.node(rank)] < kn.late_prob
                and "late_node" not in self.without
            )
            by_rank2 = rank == kn.late_rank2 and draw2 < kn.late_prob2 and "late_rank2" not in self.without
            if (by_rank or by_node) and kn.late_us:
                late = kn.late_us
                struck_late |= {"late_rank"} if by_rank else set()
                struck_late |= {"late_node"} if by_node else set()
            if by_rank2 and kn.late_us2:  # on top of late_rank's (or late_node's) lateness: the knobs' lateness adds
                late += kn.late_us2
                struck_late.add("late_rank2")
            if late:
                self.late_launches.setdefault(rank, []).append(call)
            lateness.append(late)
            arrivals.append(host_call[rank] + path + late)
        notify = [rng.uniform(0.0, 0.3) for _ in range(cl.world)]
        gaps = [LAUNCH_GAP_US + rng.uniform(0.0, 0.4) for _ in range(cl.world)]
        host_arrival = list(arrivals)
        arrivals, pre_tasks, first = self._pre_kernels(call, arrivals)
        first = first or ("cached_notify_combine" if sync_start else "elastic_dispatch_kernel")
        if sync_start:
            release = max(arrivals) + SYNC_BARRIER_LATENCY_US
            last_node = cl.node(max(range(cl.world), key=lambda r: arrivals[r]))
            barrier_end = [
                release + notify[r] + (CROSS_NODE_NOTIFY_US if cl.node(r) != last_node else 0.0)
                for r in range(cl.world)
            ]
            kernel_start = [barrier_end[r] + gaps[r] for r in range(cl.world)]
        else:
            release, barrier_end = None, [None] * cl.world
            kernel_start = list(arrivals)
        launch = self._kernel(call, rng, sends, kernel_start, replay=False)
        launch.sync_start, launch.sync_release, launch.arrivals = sync_start, release, arrivals
        launch.struck, launch.first_collective = launch.struck | struck_late, first
        if pre_tasks[0]:
            launch.arrivals = [
                tasks[-1][1] if tasks[-1][0] == PRE_COLLECTIVE else arrivals[r] for r, tasks in enumerate(pre_tasks)
            ]
        for rank, rl in enumerate(launch.ranks):
            rl.host_call, rl.arrival, rl.barrier_end, rl.late_us = (
                host_call[rank],
                arrivals[rank],
                barrier_end[rank],
                lateness[rank],
            )
            rl.host_arrival, rl.pre_tasks = host_arrival[rank], pre_tasks[rank]
            rl.api_end = rl.kernel_end + POST_US + rng.expovariate(1.0)
            self.host_now[rank] = rl.api_end + host_extra_us
        return launch

    def _pre_kernels(self, call: int, arrivals: list[float]) -> tuple[list[float], list[list[list[Any]]], str]:
        """sim.pre_kernels: the kernels a launch runs before the barrier kernel, per rank [name, start, end], and when
        the next kernel can start. Their noise is drawn from a stream of its own, so the knob shifts no other draw."""
        cl, names = self.cluster, PRE_KERNELS[self.knobs.pre_kernels]
        tasks: list[list[list[Any]]] = [[] for _ in range(cl.world)]
        if not names:
            return arrivals, tasks, ""
        rng = random.Random(f"pre/{self.knobs.seed}/{call}")
        t = list(arrivals)
        if PRE_PLAIN in names:
            for r in range(cl.world):
                end = t[r] + PRE_PLAIN_US + rng.uniform(0.0, 0.5)
                tasks[r].append([PRE_PLAIN, t[r], end])
                t[r] = end + LAUNCH_GAP_US + rng.uniform(0.0, 0.4)
        first = ""
        if PRE_COLLECTIVE in names:
            last = max(range(cl.world), key=lambda r: (t[r], r))
            release = t[last] + PRE_COLLECTIVE_LATENCY_US
            for r in range(cl.world):
                cross = CROSS_NODE_NOTIFY_US if cl.node(r) != cl.node(last) else 0.0
                end = max(t[r] + PRE_COLLECTIVE_WORK_US, release + rng.uniform(0.0, 0.3) + cross)
                tasks[r].append([PRE_COLLECTIVE, t[r], end])
                t[r] = end + LAUNCH_GAP_US + rng.uniform(0.0, 0.4)
            first = PRE_COLLECTIVE
        return t, tasks, first

    def replay(self, call: int, sends: list[list[int]]) -> Launch:
        """Kernel replay of launch ``call`` under msopprof on every rank. Modelling assumption: the tool re-issues the
        kernel on each rank after its own set-up, without the synchronize_start barrier and without the host path,
        so host lateness is gone and the entry barrier absorbs the tools' set-up skew instead; the kernel is warm;
        device-side knobs (slow rank, role, link, spikes) act as in the live run. The host clocks do not move."""
        rng = random.Random(f"replay/{self.knobs.seed}/{call}")
        starts = [rng.uniform(0.0, REPLAY_SETUP_MAX_US) for _ in range(self.cluster.world)]
        launch = self._kernel(call, rng, sends, starts, replay=True)
        launch.arrivals = starts
        for rl in launch.ranks:
            rl.host_call = rl.arrival = rl.kernel_start
            rl.api_end = rl.kernel_end
        return launch

    def _kernel(
        self, call: int, rng: random.Random, sends: list[list[int]], kernel_start: list[float], replay: bool
    ) -> Launch:
        cl = self.cluster
        world, tiling = cl.world, self.tiling
        factor = self._work_factors(call, rng, replay)
        entry = max(kernel_start) + ENTRY_BARRIER_LATENCY_US
        last_node = cl.node(max(range(world), key=lambda r: kernel_start[r]))
        release = [
            entry + rng.uniform(0.0, 0.3) + (CROSS_NODE_NOTIFY_US if cl.node(r) != last_node else 0.0)
            for r in range(world)
        ]
        tick = [[release[r] + rng.uniform(0.0, 0.1) for _ in tiling] for r in range(world)]
        jitter = [[math.exp(rng.gauss(0.0, JITTER_SIGMA)) for _ in tiling] for _ in range(world)]
        urma = [i for i, role in enumerate(tiling) if role == "URMASendToken"]
        stage = [i for i, role in enumerate(tiling) if role == "TokenCopyToBuffer"]
        selfc = [i for i, role in enumerate(tiling) if role == "SelfCopyToken"]
        cums = [i for i, role in enumerate(tiling) if role == "CalCumSum"]
        phases: list[list[list[Phase]]] = [
            [[Phase("entry_barrier", "wait_peers", kernel_start[r], tick[r][i])] for i in range(len(tiling))]
            for r in range(world)
        ]

        # CalCumSum: count, send counts, wait for every peer's counts (WaitDispatch), then post.
        counts_sent = []
        for r in range(world):
            f = factor[r] * self._role_factor(r, "CalCumSum")
            ends = []
            for i in cums:
                t = (CUMSUM_COUNT_US + CUMSUM_PER_EXPERT_US * cl.num_experts) * f * jitter[r][i]
                phases[r][i].append(Phase("count", "work", tick[r][i], tick[r][i] + t, "count"))
                ends.append(tick[r][i] + t)
            counts_sent.append(max(ends))
        counts_ready, awaited_counts = [], []
        for r in range(world):
            arrive = [counts_sent[p] + COUNTS_LATENCY_US[cl.node(p) == cl.node(r)] for p in range(world)]
            src = max(range(world), key=lambda p: (arrive[p], p))
            counts_ready.append(arrive[src])
            awaited_counts.append(src)
        cum_end = []
        for r in range(world):
            f = factor[r] * self._role_factor(r, "CalCumSum")
            ends = []
            for i in cums:
                wait_end = max(phases[r][i][-1].end, counts_ready[r])
                phases[r][i].append(Phase("wait_dispatch", "wait_peers", phases[r][i][-1].end, wait_end))
                t = CUMSUM_POST_US * f * jitter[r][i]
                phases[r][i].append(Phase("post", "work", wait_end, wait_end + t, "post"))
                ends.append(wait_end + t)
            cum_end.append(max(ends))

        # TokenCopyToBuffer: stage every outgoing byte, split over the stage cores; publish.
        stage_done = []
        for r in range(world):
            f = factor[r] * self._role_factor(r, "TokenCopyToBuffer")
            share = sum(sends[r]) / max(1, len(stage))
            ends = []
            for i in stage:
                t = (2.0 + share / STAGE_BYTES_PER_US) * f * jitter[r][i]
                phases[r][i].append(Phase("stage", "work", tick[r][i], tick[r][i] + t, "stage", share))
                ends.append(tick[r][i] + t)
            stage_done.append(max(ends) if ends else max(tick[r]))

        # URMASendToken: prepare the mapping, then per destination (round-robin over the URMA cores, starting with
        # the next rank) build WQEs and wait for the link; tokens arrive a link latency after the send completes.
        arrival = self._urma_sends(phases, tick, factor, jitter, urma, sends)

        # SelfCopyToken: prepare, wait for this rank's stage (WaitAllStageDone), copy the local tokens.
        for r in range(world):
            f = factor[r] * self._role_factor(r, "SelfCopyToken")
            share = sends[r][r] / max(1, len(selfc))
            ends = []
            for i in selfc:
                t = tick[r][i] + PREPARE_US * f * jitter[r][i]
                phases[r][i].append(Phase("prepare", "work", tick[r][i], t, "prepare"))
                phases[r][i].append(Phase("wait_stage", "wait_local", t, max(t, stage_done[r])))
                t = max(t, stage_done[r])
                c = (1.0 + share / SELF_BYTES_PER_US) * f * jitter[r][i]
                phases[r][i].append(Phase("self_copy", "work", t, t + c, "copy", share))
                ends.append(t + c)
            arrival[r][r] = max(ends) if ends else stage_done[r]

        # LocalWindowCopy on every core: needs every incoming token and this rank's counts (CalCumSum), then copies
        # its share of the received bytes.
        ranks = []
        for r in range(world):
            incoming = [arrival[s][r] if (sends[s][r] or s == r) else 0.0 for s in range(world)]
            awaited = max(range(world), key=lambda s: (incoming[s], s))
            last_token = incoming[awaited]
            ready = max(last_token, cum_end[r])
            f = factor[r] * self._role_factor(r, LWC)
            share = sum(sends[s][r] for s in range(world)) / len(tiling)
            cores = []
            for i, role in enumerate(tiling):
                own_end = phases[r][i][-1].end
                phases[r][i].append(Phase("lwc_wait", "wait_peers", own_end, max(own_end, ready)))
                t = max(own_end, ready)
                c = (0.5 + share / LWC_BYTES_PER_US) * f * jitter[r][i]
                phases[r][i].append(Phase("lwc_copy", "work", t, t + c, "copy", share))
                cores.append(Core(i, role, phases[r][i]))
            kernel_end = max(c.end for c in cores)
            ranks.append(
                RankLaunch(
                    rank=r,
                    node=cl.node(r),
                    host_call=0.0,
                    arrival=kernel_start[r],
                    barrier_end=None,
                    kernel_start=kernel_start[r],
                    entry_release=release[r],
                    cores=cores,
                    kernel_end=kernel_end,
                    api_end=kernel_end,
                    last_token=last_token,
                    awaited_sender=awaited,
                    counts_ready=counts_ready[r],
                    awaited_counts=awaited_counts[r],
                    work_factor=factor[r],
                )
            )
        return Launch(call, False, replay, ranks, None, entry, list(kernel_start), frozenset(self._struck))

    def _urma_sends(
        self,
        phases: list[list[list[Phase]]],
        tick: list[list[float]],
        factor: list[float],
        jitter: list[list[float]],
        urma: list[int],
        sends: list[list[int]],
    ) -> list[list[float]]:
        """Every rank's URMA sends through the link ports; returns arrival[src][dst] (the token arrivals) and appends
        each URMA core's phases. Modelling assumptions: a destination's WQEs are built (work: the sender's work
        factors), then posted, and the core polls until the link completes them (no overlap of building and transfer on
        one core). A posted send moves through its sender's send port and its receiver's receive port of its class at
        once. Each port shares its capacity equally among the sends moving through it, and a send moves at the smaller
        of its two shares (divided by slow_link's factor on its node pair; no jitter: a port never runs above its
        capacity), its rate recomputed whenever a send starts or ends on one of its ports. So a port's bytes need at
        least bytes / capacity, and the busiest port bounds the kernel
        from below (the analysis's link bound under toolchain sim)."""
        cl, world = self.cluster, self.cluster.world
        rate = {c: self.knobs.link_gbps[c] * 1e3 for c in LINK_CLASSES}  # bytes per us
        moving: dict[tuple[int, str, str], set[tuple[int, int]]] = {}  # port (rank, send|receive, class) -> its sends
        flow: dict[
            tuple[int, int], list[float]
        ] = {}  # (src, dst) -> [bytes left, bytes per us, since, version, posted]
        events: list[
            tuple[float, int, int, int, int, float]
        ] = []  # (time, 0 = may end | 1 = posted, src, dst, core, version)
        queue: dict[tuple[int, int], list[int]] = {}  # (src, core) -> its destinations still to send
        arrival = [[0.0] * world for _ in range(world)]  # arrival[src][dst]

        def ports(r: int, dst: int) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
            link = LINK_CLASSES[cl.node(dst) != cl.node(r)]
            return (r, "send", link), (dst, "receive", link)

        route = {
            (r, dst): (*ports(r, dst), self._link_factor(r, dst))
            for r in range(world)
            for dst in range(world)
            if sends[r][dst]
        }

        def build(r: int, i: int, t: float) -> None:
            dst = queue[r, i].pop(0)
            wqe = (
                (0.5 + sends[r][dst] / WQE_BYTES_PER_US)
                * factor[r]
                * self._role_factor(r, "URMASendToken")
                * jitter[r][i]
            )
            phases[r][i].append(Phase(f"send_to_{dst}", "work", t, t + wqe, "wqe"))
            heapq.heappush(events, (t + wqe, 1, r, dst, i, 0.0))

        def reshare(touched: tuple[tuple[int, str, str], ...], t: float, i_of: dict[tuple[int, int], int]) -> None:
            """The sends on the touched ports move at their new shares from t on."""
            for key in moving[touched[0]] | moving[touched[1]]:
                f, (out, into, slow) = flow[key], route[key]
                speed = min(rate[out[2]] / len(moving[out]), rate[into[2]] / len(moving[into])) / slow
                if speed == f[1]:
                    continue  # the same share: it ends when it would have
                f[0] = max(0.0, f[0] - f[1] * (t - f[2]))
                f[1], f[2], f[3] = speed, t, f[3] + 1
                heapq.heappush(events, (t + f[0] / f[1], 0, key[0], key[1], i_of[key], f[3]))

        for r in range(world):
            f = factor[r] * self._role_factor(r, "URMASendToken")
            order = [(r + k) % world for k in range(1, world)]
            for j, i in enumerate(urma):
                prep = PREPARE_US * f * jitter[r][i]
                phases[r][i].append(Phase("prepare", "work", tick[r][i], tick[r][i] + prep, "prepare"))
                queue[r, i] = order[j :: len(urma)]
                if queue[r, i]:
                    build(r, i, tick[r][i] + prep)
        core_of: dict[tuple[int, int], int] = {}
        while events:
            now, kind, r, dst, i, version = heapq.heappop(events)
            key = (r, dst)
            touched = route[key][:2] if key in route else ()
            if kind == 1 and sends[r][dst]:  # posted: it starts moving, and its ports' sends re-share
                flow[key], core_of[key] = [float(sends[r][dst]), 0.0, now, 0.0, now], i
                for p in touched:
                    moving.setdefault(p, set()).add(key)
                reshare(touched, now, core_of)
                continue
            if kind == 0 and (key not in flow or version != flow[key][3]):
                continue  # its rate changed since: a later event ends it
            posted = flow.pop(key)[4] if kind == 0 else now
            for p in touched if kind == 0 else ():
                moving[p].discard(key)
            phases[r][i].append(Phase(f"complete_{dst}", "wait_link", posted, now))
            arrival[r][dst] = now + LINK_LATENCY_US[cl.node(dst) == cl.node(r)]  # the tokens land a link latency later
            if kind == 0:
                reshare(touched, now, core_of)
            if queue[r, i]:
                build(r, i, now)
        return arrival

    # -- what a node's clock says ------------------------------------------------------------------------------
    def node_clock_ns(self, node: int, true_us: float, epoch_ns: int) -> int:
        """The time a node's host clock reports for a true time: offset plus drift (applied to what profilers write,
        never to the model)."""
        return node_clock_ns(self.knobs, node, true_us, epoch_ns)


def node_clock_ns(knobs: Knobs, node: int, true_us: float, epoch_ns: int) -> int:
    """What node ``node``'s clock reports (ns) for a true time in µs: epoch + offset + drift."""
    return epoch_ns + int(round((true_us + knobs.offset_us(node) + knobs.drift_ppm(node) * 1e-6 * true_us) * 1000))


# -- per-core views ---------------------------------------------------------------------------------------------
def pmu_cores(rl: RankLaunch, knobs: Knobs, rng: random.Random) -> list[dict[str, Any]]:
    """msopprof's per-core view of one (replayed) launch: aiv_time from the core's start to its end (the entry
    barrier and every wait included), pipe times from the phases, an I-cache miss rate per role."""
    rows = []
    for core in rl.cores:
        aiv = core.end - core.start
        pipes = core.pipe_us(knobs.poll_pipe_share)
        miss = 0.28 if core.role == knobs.icache_hot_role else ICACHE_MISS[core.role]
        moved = sum(p.nbytes for p in core.phases)
        rows.append(
            {
                "block_id": core.block_id,
                "sub_block_id": "vector0",
                "role": core.role,
                "aiv_time_us": aiv,
                **{f"{p}_ratio": pipes[p] / aiv for p in PIPES},
                "mte2_bw": round(moved / pipes["mte2"] / 1000.0, 3)
                if moved and pipes["mte2"]
                else None,  # GB/s while MTE2 is busy
                "icache_miss_rate": min(1.0, max(0.0, miss * math.exp(rng.gauss(0, 0.1)))),
            }
        )
    return rows


def timeline_phases(rl: RankLaunch, poll: Mapping[str, float] = DEFAULT_POLL_SHARE) -> list[dict[str, Any]]:
    """The phases of every core of one (replayed) launch, for the pipe/instruction timeline view: times in µs from the
    rank's kernel start, each phase with its per-pipe busy fractions (work: WORK_PIPES; waiting: polling scalar)."""
    out = []
    for core in rl.cores:
        phases = []
        for p in core.phases:
            shares = WORK_PIPES[p.work or "copy"] if p.kind == "work" else tuple(poll.get(pipe, 0.0) for pipe in PIPES)
            phases.append(
                {
                    "name": p.name,
                    "work": p.work,
                    "start": p.start - rl.kernel_start,
                    "end": p.end - rl.kernel_start,
                    "pipes": dict(zip(PIPES, shares)),
                }
            )
        out.append({"block_id": core.block_id, "role": core.role, "phases": phases})
    return out


def simt_function_us(rl: RankLaunch) -> dict[str, float]:
    """Time in each SIMT function on this rank: simt_prepare_mapping on URMA and SelfCopy cores, the WQE work of
    URMA cores split over the send-path functions (a fixed split: an assumption of the stand-in)."""
    prepare = sum(c.phase_us("prepare") for c in rl.cores)
    wqe = sum(p.us for c in rl.cores for p in c.phases if p.work == "wqe")
    return {"simt_prepare_mapping": prepare, **{name: wqe * share for name, share in SIMT_SPLIT.items()}}


# -- ground truth --------------------------------------------------------------------------------------------------
def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _role_summary(cores: list[Core]) -> dict[str, dict[str, float]]:
    # Each core's totals once (rank 0 summarises every launch of a session), each computed as before: the same floats.
    rows = []
    for c in cores:
        lwc_copy, lwc_wait, entry = c.phase_us("lwc_copy"), c.phase_us("lwc_wait"), c.phase_us("entry_barrier")
        rows.append(
            (
                c,
                c.busy_us() - lwc_copy,
                c.polling_us() - lwc_wait - entry,
                c.waiting_us() - lwc_wait - entry,
                lwc_copy,
                lwc_wait,
            )
        )
    out: dict[str, dict[str, float]] = {}
    for role in ROLES:
        mine = [row for row in rows if row[0].role == role]
        if not mine:
            continue
        out[role] = {
            "cores": len(mine),
            "busy_us_max": _r(max(row[1] for row in mine)),
            "polling_us_max": _r(max(row[2] for row in mine)),
            "waiting_us_max": _r(max(row[3] for row in mine)),
            "end_us": _r(
                max(row[0].phases[-3].end for row in mine)
            ),  # a core's phases end with lwc_wait, lwc_copy: [-3] is its role's last
        }
    out[LWC] = {
        "cores": len(cores),
        "busy_us_max": _r(max(row[4] for row in rows)),
        "polling_us_max": _r(max(row[5] for row in rows)),
        "waiting_us_max": _r(max(row[5] for row in rows)),
        "end_us": _r(max(c.end for c in cores)),
    }
    return out


def launch_truth(launch: Launch) -> dict[str, Any]:
    """One launch of sim_truth.json: arrival order, who waited for whom and how long, and per rank and role the busy,
    polling and waiting time (schema: workflow/sim/README.md)."""
    order = launch.arrival_order()
    last = order[-1]
    ranks = []
    for rl in launch.ranks:
        pre = (
            {"pre_tasks": [{"name": n, "start_us": _r(a), "end_us": _r(b)} for n, a, b in rl.pre_tasks]}
            if rl.pre_tasks
            else {}
        )
        ranks.append(
            {
                "rank": rl.rank,
                "node": rl.node,
                **pre,
                "host_call_us": _r(rl.host_call),
                "arrival_us": _r(rl.arrival),
                "late_us": _r(rl.late_us),
                "work_factor": round(rl.work_factor, 4),
                "barrier_end_us": _r(rl.barrier_end),
                "barrier_wait_us": _r(rl.barrier_us),
                "kernel_start_us": _r(rl.kernel_start),
                "entry_wait_us": _r(rl.entry_release - rl.kernel_start),
                "kernel_end_us": _r(rl.kernel_end),
                "api_end_us": _r(rl.api_end),
                "kernel_mode_us": _r(rl.kernel_mode_us),
                "event_mode_us": _r(rl.event_mode_us),
                "task_us": _r(rl.task_us),
                "api_us": _r(rl.api_us),
                "counts_awaited_rank": rl.awaited_counts,
                "last_token_us": _r(rl.last_token),
                "tokens_awaited_rank": rl.awaited_sender,
                "roles": _role_summary(rl.cores),
            }
        )
    return {
        "call": launch.call,
        "replay": launch.replay,
        "sync_start": launch.sync_start,
        "barrier": {
            "which": PRE_COLLECTIVE
            if launch.first_collective == PRE_COLLECTIVE
            else "cached_notify_combine"
            if launch.sync_start
            else "elastic_dispatch_kernel entry",
            "arrival_order": order,
            "last_rank": last,
            "release_us": None
            if launch.first_collective == PRE_COLLECTIVE
            else _r(launch.sync_release if launch.sync_start else launch.entry_release),
        },
        "ranks": ranks,
    }


def replay_truth(launch: Launch, poll: Mapping[str, float] = DEFAULT_POLL_SHARE) -> dict[str, Any]:
    """The replayed launch per core: what msopprof's rows are computed from."""
    out = launch_truth(launch)
    for entry, rl in zip(out["ranks"], launch.ranks):
        entry["cores"] = [
            {
                "block_id": c.block_id,
                "role": c.role,
                "aiv_time_us": _r(c.end - c.start),
                "busy_us": _r(c.busy_us()),
                "polling_us": _r(c.polling_us()),
                "waiting_us": _r(c.waiting_us()),
                "pipes_us": {p: _r(v) for p, v in c.pipe_us(poll).items()},
            }
            for c in rl.cores
        ]
    return out
