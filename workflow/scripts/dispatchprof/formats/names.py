"""The directory names the profilers write (docs/formats.md §1, docs/formats.md §2): one rule for every reader.

A module of its own, with nothing but the patterns: the import jobs and the report's artifact guide match names
without importing the parsers (numpy, ~0.1 s of every such job)."""

import re

PROF_RE = re.compile(r"^PROF_\d{1,10}_\d{1,20}_[A-Za-z0-9]{5,20}$")  # msprof's output directory
OPPROF_RE = re.compile(r"^OPPROF_\d{14}_[A-Z]{16}$")  # msopprof's output directory
