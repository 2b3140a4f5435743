"""What runs the test and the vendor's tools: the launchers and collective runs, the toolchain (sim or CANN), builds
(the DEBUG_CLOCK_ON build too), the perf driver, the profilers' command lines (msprof, msopprof, the simulator),
the preflight plan, env capture and the msprof-analyze cross-check.

It may import the shell, the node-side files, the formats and the analyses (a collective run's verdict is
analysis.correctness); no analysis, report or shell module imports it.
"""
