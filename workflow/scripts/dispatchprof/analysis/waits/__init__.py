"""What the group waits for: node clocks, coupling, entry waits and the awaited rank or node of a collective kernel.

elastic_dispatch_kernel is a collective: a rank's duration is its own work plus its wait for the slowest peer, so
"longest = slowest" is wrong (docs/architecture.md, "The kernel is a collective"). This module works on launch tables
aligned by launch index (``[launch, rank]`` arrays of µs on each node's own clock):
- node clocks: ranks of one node share a host clock; each node's offset and drift against node 0 are estimated
  from a pure barrier (the ends of the synchronize_start barrier kernel, which release every rank together; else
  the target's ends, a weaker reference) and removed before any cross-node comparison;
- coupling: within a node (one clock) the barrier's ends coincide while its starts spread;
- entry waits: the barrier kernel's duration is its wait; the target's entry wait is the last corrected start
  minus the rank's own;
- the awaited: per launch who arrived last (the shortest barrier wait needs no clock at all), who ends last by
  itself, and whether the group ends far apart with nobody late (the wait is inside the kernel); each cause with its
  cost, the group time per launch its removal would save, ranked by that cost, never by how often it strikes; a
  cause is named when it costs more than ``min_cost_us`` with a CI above zero (docs/architecture.md, "The answer is a
  cost account").

The package, by concern (every name is re-exported here: import from ``dispatchprof.analysis.waits``):
- table: the launch grid, host gaps, entry waits and the binned heat map;
- clocks, coupling: node clocks and whether ranks wait for each other;
- account: the complete launches a cost account reads, the per-row maxima a what-if saving needs;
- candidate: the Candidate record and its Facts; candidates: every candidate cause, one function per kind:
  arrivals (late arrival), own_work (own work and its spikes), end_order and late_ending (late-ending ranks and
  nodes), in_kernel (the whole group waiting inside the kernel), uncoupled (longest own work of ranks that do not
  wait for each other), paces_end (a rank the others end just after, first far more often than chance: named, its
  cost not established);
- costing: what-if savings above the background, bootstrap CIs, the group's excess;
- naming: named or listed (min_cost_us, the chance test), the order by cost, what a named node covers;
- awaited: the account assembled (awaited, analyse), facts only: report/cause_text puts it in words;
- picture: a typical and the costliest launch per rank, for the report's picture of the launch.
"""

from __future__ import annotations

from dispatchprof.analysis.waits.table import (
    LaunchGrid,
    binned_grid,
    entry_wait_grid,
    entry_waits,
    grid,
    host_gaps,
    kernel_entry_waits,
    last_arrival_node,
)
from dispatchprof.analysis.waits.clocks import DRIFT_IMPLAUSIBLE_PPM, node_clocks, release_skew
from dispatchprof.analysis.waits.coupling import coupling
from dispatchprof.analysis.waits.account import Account, Maxima, account, carried
from dispatchprof.analysis.waits.candidate import Candidate
from dispatchprof.analysis.waits.candidates import candidates
from dispatchprof.analysis.waits.end_order import (
    PERSISTENT_FRACTION,
    followers,
    late_members,
    late_sets,
    persistent_late_ranks,
)
from dispatchprof.analysis.waits.own_work import lead_within_node
from dispatchprof.analysis.waits.late_ending import MAX_LATE_SET, core_candidate, persistent_candidate
from dispatchprof.analysis.waits.in_kernel import in_kernel, transient
from dispatchprof.analysis.waits.uncoupled import longest_own_work
from dispatchprof.analysis.waits.costing import backgrounds, bootstrap_mean_ci, costed, duration_excess, excess
from dispatchprof.analysis.waits.paces_end import paced_causes, pacers
from dispatchprof.analysis.waits.naming import covered, stands_out
from dispatchprof.analysis.waits.picture import launch_picture
from dispatchprof.analysis.waits.awaited import (
    CAUSE_KEYS,
    EXCESS_DEFINITION,
    EXCESS_NOT_COUPLED,
    STRAGGLER_KEYS,
    analyse,
    arrived_last,
    awaited,
    rank_offsets,
    waiting_ranks,
)

__all__ = [
    "Account",
    "CAUSE_KEYS",
    "Candidate",
    "DRIFT_IMPLAUSIBLE_PPM",
    "EXCESS_DEFINITION",
    "EXCESS_NOT_COUPLED",
    "LaunchGrid",
    "MAX_LATE_SET",
    "Maxima",
    "PERSISTENT_FRACTION",
    "STRAGGLER_KEYS",
    "account",
    "analyse",
    "arrived_last",
    "awaited",
    "backgrounds",
    "binned_grid",
    "bootstrap_mean_ci",
    "candidates",
    "carried",
    "core_candidate",
    "costed",
    "coupling",
    "covered",
    "duration_excess",
    "entry_wait_grid",
    "entry_waits",
    "excess",
    "followers",
    "grid",
    "host_gaps",
    "in_kernel",
    "kernel_entry_waits",
    "last_arrival_node",
    "late_members",
    "late_sets",
    "launch_picture",
    "lead_within_node",
    "longest_own_work",
    "node_clocks",
    "paced_causes",
    "pacers",
    "persistent_candidate",
    "persistent_late_ranks",
    "rank_offsets",
    "release_skew",
    "stands_out",
    "transient",
    "waiting_ranks",
]
