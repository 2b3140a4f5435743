"""report.md: the report model (report/model.py) as Markdown, and the spacing Markdown renderers need: tables need a
blank line before and after them, or renderers fold the next paragraph or heading into the table (GitHub's among
them).

Every text of the model is plain text (report.html escapes all of it), and much of it comes from the data: a
hostname, a chip name, a CSV header in a refusal, a config value. It enters Markdown in one place, md_escape (code
spans in md_code): HTML, links, emphasis and block markers in it are said as text, never run."""

from __future__ import annotations

import re
from urllib.parse import quote

from dispatchprof.report import model

# What Markdown (CommonMark, GFM, GitHub's math) reads as markup anywhere in a line; a backslash makes each literal.
# ``_`` between two letters or digits never opens or closes emphasis and stays as written (identifiers).
INLINE_MARKUP = re.compile(r"[\\`*\[\]<>&|~$]|(?<![^\W_])_|_(?![^\W_])")
# What starts a block at the beginning of a line and INLINE_MARKUP leaves: a list item ("-", "+", "1." or "1)" before
# a space or the end), a thematic break ("---") or an ATX heading ("#" to "######" before a space or the end); the
# backslash goes before the marker's punctuation.
BLOCK_START = re.compile(r"^( {0,3}\d{1,9})([.)])(?= |$)|^( {0,3})([-+](?= |$)|-(?=-)|#(?=#{0,5}(?: |$)))")
# A heading's closing sequence: "#"s at the end of its line after a space (or alone) are not shown.
CLOSING_HASHES = re.compile(r"(?:^|(?<= ))(?=#+ *$)")


def md_escape(text: object) -> str:
    """Plain text as Markdown that renders as that text: markup characters backslash-escaped, line breaks and other
    whitespace as spaces (a line break could start a block; the HTML shows any whitespace as one space), four
    leading spaces as one (they would start a code block)."""
    flat = re.sub(r"^ {4,}", " ", "".join(" " if c.isspace() else c for c in str(text)))
    escaped = INLINE_MARKUP.sub(lambda m: "\\" + m.group(0), flat)
    escaped = CLOSING_HASHES.sub(r"\\", escaped, count=1)
    return BLOCK_START.sub(lambda m: f"{m.group(1) or m.group(3)}\\{m.group(2) or m.group(4)}", escaped, count=1)


def md_code(text: object) -> str:
    """Text as one code span: a fence of more backticks than any run inside, a space inside each end where the text
    starts or ends with a backtick or a space (CommonMark strips one there)."""
    flat = "".join(" " if c.isspace() else c for c in str(text))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat[:1] in ("`", " ") or flat[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_href(href: str) -> str:
    """A link target with what would end or break it (spaces, parentheses, angle brackets, controls) %-encoded."""
    return quote(href, safe="/:#?&=%@!$',;*+~._-")


def spaced_tables(text: str) -> str:
    """A blank line between every table (a run of lines starting with '|') and a non-blank neighbour."""
    out: list[str] = []
    for line in text.splitlines():
        if out and out[-1].strip() and out[-1].startswith("|") != line.startswith("|") and line.strip():
            out.append("")
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def markdown_cell(value: object) -> str:
    """Rendered Markdown as one table cell: a newline would end the row, and a '|' not escaped yet the cell (GFM
    splits the row before it reads code spans, so a '|' inside one is escaped too)."""
    return re.sub(r"(?<!\\)((?:\\\\)*)\|", r"\1\\|", " ".join(str(value).split("\n")))


def md_inline(piece: model.Inline) -> str:
    if isinstance(piece, str):
        return md_escape(piece)
    if isinstance(piece, (model.Strong, model.State)):
        return f"**{md_escape(piece.text)}**"
    if isinstance(piece, model.Code):
        return md_code(piece.text)
    return f"[{md_escape(piece.text)}]({md_href(piece.href)})"


def md_text(pieces: model.Text) -> str:
    return "".join(md_inline(p) for p in pieces).strip()


def md_table(table: model.Table) -> str:
    lines = [f"{md_escape(table.collapsed)}:", ""] if table.collapsed else []
    lines.append("| " + " | ".join(markdown_cell(md_escape(h)) for h in table.header) + " |")
    lines.append("|" + "---|" * len(table.header))
    lines += ["| " + " | ".join(markdown_cell(md_text(c)) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "".join(f"\n\n{md_text(n)}" for n in table.footnotes)


def md_figure(figure: model.Figure) -> str:
    """A chart as an image link to its file; a chart without a file (none was written) is left out."""
    if not figure.path:
        return ""
    caption = f"\n\n{md_escape(figure.caption)}" if figure.caption else ""
    return f"![{md_escape(figure.alt)}]({md_href(figure.path)})" + caption


def md_block(block: model.Block) -> str:
    if isinstance(block, model.Paragraph):
        return md_text(block.text)
    if isinstance(block, model.Items):
        return "\n".join(f"- {md_text(i)}" for i in block.items)
    if isinstance(block, model.Definitions):
        return "\n".join(f"- **{md_escape(t)}.** {md_text(d)}" for t, d in block.terms)
    if isinstance(block, model.Table):
        return md_table(block)
    return md_figure(block)


def markdown_section(section: model.Section) -> str:
    """One section as Markdown: its heading and its blocks, a blank line between blocks."""
    blocks = [b for b in (md_block(b) for b in section.blocks) if b]
    return "\n\n".join(["#" * section.level + " " + md_escape(section.heading), *blocks]) + "\n"
