"""dispatchprof: the library behind the Ascend dispatch profiling workflow.

Parsers know files, analyses know tables, the report only renders. Nothing here imports Snakemake.
"""

import sys

__version__ = "0.1.0"


def _interrupted(kind, value, tb, _default=sys.excepthook):
    """Ctrl-C reaches every process of Snakemake's group, wherever each is: a stage script still importing, or
    between its imports and run_stage (which says the same for its body), ends with one line, not a traceback.
    Python then ends the process by SIGINT as it would have; Snakemake marks the job incomplete and the next
    `snakemake` reruns it (profiles/default sets rerun-incomplete). Other exceptions keep their traceback."""
    if not issubclass(kind, KeyboardInterrupt):
        return _default(kind, value, tb)
    script = sys.argv[0].rpartition("/")[2].removesuffix(".py").rpartition(".")[2] if sys.argv and sys.argv[0] else ""
    print(f"{script or 'dispatchprof'}: interrupted (Ctrl-C); the next snakemake reruns this job", file=sys.stderr)


sys.excepthook = _interrupted  # imported first by every entry script (sys.path, then dispatchprof.*)
