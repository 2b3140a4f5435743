"""dispatchprof: the library behind the Ascend dispatch profiling workflow.

Parsers know files, analyses know tables, the report only renders. Nothing here imports Snakemake.
"""

__version__ = "0.1.0"
