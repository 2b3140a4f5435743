"""The report's sections in reading order, every one built as data (report/model.py): report.html.j2 and report.md.j2
loop over this list, and render each section with the same model."""

from __future__ import annotations

from dispatchprof.report.context import ReportContext
from dispatchprof.report.model import Part
from dispatchprof.report.sections import (
    answer_section,
    boundaries_section,
    comparison_section,
    history_section,
    correctness_section,
    environment_section,
    evidence_section,
    launch_figure,
    ledger_section,
    settings_section,
)
from dispatchprof.report.stage_sections import stage_parts
from dispatchprof.report.tool_sections import artifact_section


def report_parts(c: ReportContext) -> list[Part]:
    """The report's sections in reading order."""
    head = [
        answer_section(c.answer, launch_figure(c)),
        evidence_section(c.evidence_parts),
        environment_section(c),
        correctness_section(c),
    ]
    tail = [
        comparison_section(c),
        history_section(c),
        artifact_section(c),
        settings_section(c),
        boundaries_section(c),
        ledger_section(c),
    ]
    return [*head, *stage_parts(c), *tail]
