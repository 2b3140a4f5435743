"""`npu-smi info` as the env capture records it: the chip names it prints (docs/formats.md §2.5).

The default table gives each NPU a row `| <NPU id>  <Name> | <Health> | ...` (e.g. `| 4     910B2      | OK  |`),
then a `| <Chip> | <Bus-Id> | ...` row; `npu-smi info -t board` prints `Chip Name : 910B2`. Only names are read.
"""

from __future__ import annotations

import re

_TABLE_ROW = re.compile(r"^\|\s*(\d+)\s+([A-Za-z0-9][A-Za-z0-9_.-]*)\s*\|\s*[A-Za-z]+\s*\|")
_KEY_VALUE = re.compile(r"^\s*Chip Name\s*:\s*(\S+)\s*$")


def npu_smi_names(text: str) -> list[str]:
    """The distinct chip names `npu-smi info` printed, in order of appearance; [] when it printed none. A row's Name
    holds a letter (910B2, Ascend950PR): process rows (`| 0   0 | <pid> | ...`) never do."""
    found: list[str] = []
    for line in text.splitlines():
        row = _TABLE_ROW.match(line)
        name = row.group(2) if row else (_KEY_VALUE.match(line).group(1) if _KEY_VALUE.match(line) else None)
        if name and re.search(r"[A-Za-z]", name) and name not in found:
            found.append(name)
    return found
