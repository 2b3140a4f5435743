"""report.md: the report model (report/model.py) as Markdown, and the spacing Markdown renderers need: tables need a
blank line before and after them, or renderers fold the next paragraph or heading into the table (GitHub's among
them)."""

from __future__ import annotations

from dispatchprof.report import model


def spaced_tables(text: str) -> str:
    """A blank line between every table (a run of lines starting with '|') and a non-blank neighbour."""
    out: list[str] = []
    for line in text.splitlines():
        if out and out[-1].strip() and out[-1].startswith("|") != line.startswith("|") and line.strip():
            out.append("")
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def markdown_cell(value: object) -> str:
    """A value as one Markdown table cell: a '|' would end the cell and a newline the row."""
    return " ".join(str(value).split("\n")).replace("|", "\\|")


def md_inline(piece: model.Inline) -> str:
    if isinstance(piece, str):
        return piece
    if isinstance(piece, (model.Strong, model.State)):
        return f"**{piece.text}**"
    if isinstance(piece, model.Code):
        return f"`{piece.text}`"
    return f"[{piece.text}]({piece.href})"


def md_text(pieces: model.Text) -> str:
    return "".join(md_inline(p) for p in pieces)


def md_table(table: model.Table) -> str:
    lines = [f"{table.collapsed}:", ""] if table.collapsed else []
    lines.append("| " + " | ".join(markdown_cell(h) for h in table.header) + " |")
    lines.append("|" + "---|" * len(table.header))
    lines += ["| " + " | ".join(markdown_cell(md_text(c)) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "".join(f"\n\n{md_text(n)}" for n in table.footnotes)


def md_figure(figure: model.Figure) -> str:
    """A chart as an image link to its file; a chart without a file (none was written) is left out."""
    if not figure.path:
        return ""
    return f"![{figure.alt}]({figure.path})" + (f"\n\n{figure.caption}" if figure.caption else "")


def md_block(block: model.Block) -> str:
    if isinstance(block, model.Paragraph):
        return md_text(block.text)
    if isinstance(block, model.Items):
        return "\n".join(f"- {md_text(i)}" for i in block.items)
    if isinstance(block, model.Definitions):
        return "\n".join(f"- **{t}.** {md_text(d)}" for t, d in block.terms)
    if isinstance(block, model.Table):
        return md_table(block)
    return md_figure(block)


def markdown_section(section: model.Section) -> str:
    """One section as Markdown: its heading and its blocks, a blank line between blocks."""
    blocks = [b for b in (md_block(b) for b in section.blocks) if b]
    return "\n\n".join(["#" * section.level + " " + section.heading, *blocks]) + "\n"
