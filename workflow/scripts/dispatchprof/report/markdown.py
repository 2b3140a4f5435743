"""report.md: tables need a blank line before and after them, or Markdown renderers fold the next paragraph or
heading into the table (GitHub's among them). The template stays readable; this spaces what it renders."""

from __future__ import annotations


def spaced_tables(text: str) -> str:
    """A blank line between every table (a run of lines starting with '|') and a non-blank neighbour."""
    out: list[str] = []
    for line in text.splitlines():
        if out and out[-1].strip() and out[-1].startswith("|") != line.startswith("|") and line.strip():
            out.append("")
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
