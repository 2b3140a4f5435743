"""Writers of the simulated profilers' output formats (used by workflow/sim/bin and by benchmarks/).

Part of the simulated world: it imports nothing from the workflow's library.
"""
