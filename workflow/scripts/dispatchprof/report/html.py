"""Render report.html: one self-contained file (no network requests), readable offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import base64
import functools
import hashlib
import pickle
import re

import jinja2
import jinja2.bccache
from markupsafe import Markup
from markupsafe import escape as markupsafe_escape

from dispatchprof.report import model
from dispatchprof.report.markdown import markdown_cell, markdown_section, md_code, md_escape


def png_data_uri(data: bytes) -> str:
    """PNG bytes as a data: URI, so the report stays one file with no external request."""
    return "data:image/png;base64," + base64.b64encode(data).decode()


def embed_png(path: Path) -> str | None:
    """A PNG file as a data: URI; None where the stage drew no such plot."""
    return png_data_uri(path.read_bytes()) if path.is_file() else None


def embed_svg(path: Path) -> str:
    """An SVG file as a data: URI for an <img> (the page's policy allows data: images only)."""
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode()


# Everything that is compiled into a template besides its source: a cached template is used only where all of it is
# the same (the cache files are named after it).
_SETTINGS = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "autoescape": (("html", "html.j2"), False, False),
    "jinja": jinja2.__version__,
}


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between report jobs in jinja's per-user directory (mode 0700 under the temp directory,
    written atomically). Compiling the report's templates was ~0.4 s of every report job.
    - An entry is used only for the same template source (jinja's checksum), Python (its magic) and _SETTINGS (the
      file name); anything else compiles the template anew and replaces the entry.
    - One entry per template name, wherever the workflow is: copies of it share the entries, and the directory stays
      at a dozen files.
    - A cache that cannot be read or written costs only the compiling: the report never fails for it."""

    def __init__(self) -> None:
        key = hashlib.sha1(repr(sorted(_SETTINGS.items())).encode()).hexdigest()[:12]
        super().__init__(pattern=f"__dispatchprof_{key}_%s.cache")

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return hashlib.sha1(name.encode()).hexdigest()

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _compiled_templates_cache() -> jinja2.BytecodeCache | None:
    """None where jinja finds no safe directory (not ours, or not 0700): the templates are compiled, as before."""
    try:
        return _CompiledTemplates()
    except (RuntimeError, OSError):
        return None


# Beyond this magnitude a number is printed in 4 significant digits, whatever the template's fixed-point spec
# ("%.1f" of 1e300 is 301 digits). No real value of the report comes near it: latencies above
# stats.max_plausible_us are refused before any statistic.
HUMAN_LIMIT = 1e9
_FIXED = re.compile(r"%(\.\d+)?f")


def human_format(spec: str, *args: Any, **kwargs: Any) -> str:
    """Jinja's ``format`` filter, with fixed-point conversions turned into ``%.4g`` when an argument is huge."""
    if not kwargs and any(
        isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a) >= HUMAN_LIMIT for a in args
    ):
        spec = _FIXED.sub("%.4g", spec)
    return jinja2.filters.do_format(spec, *args, **kwargs)


@functools.cache
def _environment(template_dir: Path) -> jinja2.Environment:
    """One environment per template directory: the HTML and Markdown reports share their compiled includes."""
    extensions, for_string, default = _SETTINGS["autoescape"]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        bytecode_cache=_compiled_templates_cache(),
        autoescape=jinja2.select_autoescape(list(extensions), default_for_string=for_string, default=default),
        undefined=jinja2.StrictUndefined,
        trim_blocks=_SETTINGS["trim_blocks"],
        lstrip_blocks=_SETTINGS["lstrip_blocks"],
    )
    env.filters["format"] = human_format
    env.filters["cell"] = markdown_cell  # filters are looked up when rendering, not compiled in: no cache key
    env.filters["html_section"] = html_section
    env.filters["markdown_section"] = markdown_section
    env.filters["md"] = md_escape  # report.md.j2's fields: data enters Markdown through md_escape only
    env.filters["md_code"] = md_code
    return env


def render(template_dir: Path, context: dict[str, Any], template: str = "report.html.j2") -> str:
    return _environment(Path(template_dir)).get_template(template).render(**context)


# --- the report model (report/model.py) as HTML


def escape(value: str) -> str:
    """Text for an element or an attribute, escaped as the templates' autoescape did (&, <, >, ' and ")."""
    return str(markupsafe_escape(value))


def html_inline(piece: model.Inline) -> str:
    if isinstance(piece, str):
        return escape(piece)
    if isinstance(piece, model.Strong):
        return f"<b>{escape(piece.text)}</b>"
    if isinstance(piece, model.Code):
        return f"<code>{escape(piece.text)}</code>"
    if isinstance(piece, model.State):
        return f'<span class="state {escape(piece.text)}">{escape(piece.text)}</span>'
    return f'<a href="{escape(piece.href)}">{escape(piece.text)}</a>'


def html_text(pieces: model.Text) -> str:
    return "".join(html_inline(p) for p in pieces)


def _css(css: str) -> str:
    return f' class="{escape(css)}"' if css else ""


def html_table(table: model.Table) -> str:
    anchor = f' id="{escape(table.anchor)}"' if table.anchor else ""
    head = "".join(f"<th>{escape(h)}</th>" for h in table.header)
    rows = "\n".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    out = f"<table{anchor}{_css(table.css)}><tr>{head}</tr>\n{rows}\n</table>"
    out += "".join(f'\n<p class="muted">{html_text(n)}</p>' for n in table.footnotes)
    return f"<details><summary>{escape(table.collapsed)}</summary>{out}</details>" if table.collapsed else out


def html_figure(figure: model.Figure) -> str:
    picture = (
        figure.svg
        if figure.svg
        else f'<img alt="{escape(figure.alt)}" src="{escape(figure.src or "")}" style="max-width:100%">'
    )
    caption = figure.caption or figure.alt
    return f'<figure>{picture}<figcaption class="muted">{escape(caption)}</figcaption></figure>'


def html_block(block: model.Block) -> str:
    if isinstance(block, model.Paragraph):
        tone = {"muted": "muted", "warning": "coverage-warning"}.get(block.tone, "")
        return f"<p{_css(tone)}>{html_text(block.text)}</p>"
    if isinstance(block, model.Items):
        return f"<ul{_css(block.css)}>" + "".join(f"<li>{html_text(i)}</li>" for i in block.items) + "</ul>"
    if isinstance(block, model.Definitions):
        terms = "".join(f"<dt>{escape(t)}</dt><dd>{html_text(d)}</dd>" for t, d in block.terms)
        return f"<dl{_css(block.css)}>{terms}</dl>"
    if isinstance(block, model.Table):
        return html_table(block)
    return html_figure(block)


def html_section(section: model.Section) -> Markup:
    """One section as HTML: its anchor, heading and blocks."""
    level = section.level
    body = "\n".join(html_block(b) for b in section.blocks)
    return Markup(
        f'<section id="{escape(section.anchor)}"><h{level}>{escape(section.heading)}</h{level}>\n{body}\n</section>'
    )
