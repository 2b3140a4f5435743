"""The shell every stage shares: the configuration and its checks, the status contract, atomic writes, the
``StageRun`` that gates, writes placeholders and the status, and the run table printed after a run.

It imports nothing above it but the node-side constants (``node.preflight.FORBIDDEN_ENV``): formats, analyses,
tools and stages build on it.
"""
