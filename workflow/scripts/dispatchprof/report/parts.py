"""The report's parts in reading order: the sections built as data, and the template pairs still standing among
them (model.Included). report.html.j2 and report.md.j2 loop over this list."""

from __future__ import annotations

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import Included, Part
from dispatchprof.report.sections import (
    answer_section,
    boundaries_section,
    comparison_section,
    correctness_section,
    environment_section,
    evidence_section,
    ledger_section,
    settings_section,
)
from dispatchprof.report.stage_sections import stage_parts


def report_parts(c: ReportContext) -> list[Part]:
    """The report's sections in reading order."""
    head = [answer_section(c.answer), evidence_section(c.evidence_parts), environment_section(c), correctness_section(c)]
    tail = [comparison_section(c), *insight_parts(), settings_section(c), boundaries_section(c), ledger_section(c)]
    return [*head, *stage_parts(c), *tail]


def insight_parts() -> list[Part]:
    return [Included("_insight")]
