"""Render report.html: one self-contained file (no network requests), readable offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2


def render(template_dir: Path, context: dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**context)
