"""The report as data: sections of headings, sentences, tables, figures and notes, built once and rendered twice
(report/render.py: HTML and Markdown), so report.html and report.md cannot say different things.

Text is a run of inline pieces: plain strings, ``Strong`` (bold), ``Code`` (a command, path or name) and ``Link``.
A builder writes what a section says; only the renderers know HTML or Markdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Strong:
    """Words the reader must not miss (bold)."""

    text: str


@dataclass(frozen=True)
class Code:
    """A command, path, file or identifier, shown as code (in the Answer a command counts as one word)."""

    text: str


@dataclass(frozen=True)
class Link:
    """A file of the run, linked relative to the report's directory."""

    text: str
    href: str


@dataclass(frozen=True)
class State:
    """A stage's state (ok, failed, skipped...), marked so the reader sees it first."""

    text: str


Inline = str | Strong | Code | Link | State
Text = tuple[Inline, ...]


def text(*pieces: Inline | None) -> Text:
    """A run of inline pieces; None and empty strings are left out (a builder's optional clause)."""
    return tuple(p for p in pieces if p is not None and p != "")


@dataclass(frozen=True)
class Paragraph:
    """Sentences. ``tone``: "" (plain), "muted" (a definition or qualification), "warning" (a coverage gap)."""

    text: Text
    tone: str = ""


@dataclass(frozen=True)
class Items:
    """A list of sentences (bullets); ``css`` classes the HTML list."""

    items: tuple[Text, ...]
    css: str = ""


@dataclass(frozen=True)
class Table:
    """A table: its header, its rows of cells (each a Text), and footnotes that qualify its numbers.
    ``collapsed``: the HTML folds the table under this summary, the Markdown writes it as the line before it."""

    header: tuple[str, ...]
    rows: tuple[tuple[Text, ...], ...]
    footnotes: tuple[Text, ...] = ()
    collapsed: str | None = None
    anchor: str | None = None
    css: str = ""


@dataclass(frozen=True)
class Figure:
    """A chart: ``svg`` (inline SVG markup) or ``src`` (a data: URI) for the HTML, ``path`` (a file beside report.md,
    relative to it) for the Markdown. ``alt`` names it; ``caption`` says how to read it."""

    alt: str
    path: str | None = None
    svg: str | None = None
    src: str | None = None
    caption: str = ""


@dataclass(frozen=True)
class Definitions:
    """Terms, each with its sentences (the answer's evidence: a question, then everything that qualifies it)."""

    terms: tuple[tuple[str, Text], ...]
    css: str = ""


Block = Paragraph | Items | Definitions | Table | Figure


@dataclass(frozen=True)
class Section:
    """One heading of the report and what stands under it: ``level`` 2 is a section, 3 a stage's part inside one."""

    heading: str
    anchor: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)
    level: int = 2


Part = Section  # a part of the report: one section (a stage's part may be several)


HUGE = 1e9  # beyond this magnitude a number is printed in 4 significant digits ("%.1f" of 1e300 is 301 digits)


def num(value: float | int | None, spec: str = ".1f", missing: str = "n/a") -> str:
    """A number as the report prints it: ``spec`` (a format spec), ``missing`` for None, 4 significant digits when
    huge (no real value comes near: latencies above stats.max_plausible_us are refused before any statistic)."""
    if value is None:
        return missing
    if not isinstance(value, bool) and abs(value) >= HUGE and spec.endswith("f"):
        spec = ".4g"
    return format(value, spec)


def state_line(stage: dict, *more: Inline) -> Paragraph:
    """A stage's state and reason (its status as a dict), first under its heading."""
    return Paragraph(text(State(stage["state"]), ": ", stage["reason"], *more))


def plain(t: Text) -> str:
    """A Text's words without markup (for counting and for tests)."""
    return "".join(p if isinstance(p, str) else p.text for p in t)
