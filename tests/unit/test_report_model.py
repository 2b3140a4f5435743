"""One report model, two renderers: a section added to the model is in report.html and report.md alike (its heading,
sentence, table cells and figure), through the real report templates; the templates are shells (no section text)."""

from __future__ import annotations

from pathlib import Path

from dispatchprof.report import model
from dispatchprof.report.html import render
from dispatchprof.report.markdown import spaced_tables
from dispatchprof.stages.report import TEMPLATES

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><title>a test chart</title></svg>'
SHELL = {
    "experiment": "e1",
    "toolchain": "sim",
    "kernel_name": "k",
    "nodes": 2,
    "ranks_per_node": 8,
    "mode": "collect",
    "generated": "now",
}


def added_section() -> model.Section:
    return model.Section(
        "Queue depth per rank",
        "queue-depth",
        (
            model.Paragraph(
                model.text(
                    "Rank 5 holds ",
                    model.Strong("3x"),
                    " the queue of its peers; run ",
                    model.Code("snakemake -n q"),
                    ".",
                )
            ),
            model.Table(
                ("rank", "depth (<entries>)"),
                ((("5",), ("12 | 4",)), (("6",), ("4",))),
                footnotes=(model.text("Depth: a test's column."),),
            ),
            model.Figure(
                "Queue depth per rank", path="figures/queue.svg", svg=SVG, caption="A bright row is a deep queue."
            ),
        ),
    )


def rendered(sections: list[model.Part]) -> tuple[str, str]:
    context = {**SHELL, "sections": sections}
    return render(TEMPLATES, context), spaced_tables(render(TEMPLATES, context, "report.md.j2"))


def test_a_section_added_to_the_model_is_in_both_the_html_and_the_markdown():
    html, md = rendered([model.Section("Answer", "answer", (model.Items((model.text("A line."),)),)), added_section()])
    assert "## Queue depth per rank\n" in md and '<section id="queue-depth"><h2>Queue depth per rank</h2>' in html
    assert '<a href="#queue-depth">Queue depth per rank</a>' in html  # the navigation lists it
    assert "Rank 5 holds **3x** the queue of its peers; run `snakemake -n q`." in md
    assert "Rank 5 holds <b>3x</b> the queue of its peers; run <code>snakemake -n q</code>." in html
    assert "| rank | depth (\\<entries\\>) |\n|---|---|\n| 5 | 12 \\| 4 |\n| 6 | 4 |" in md  # a "|" and a "<" escaped
    assert "<th>depth (&lt;entries&gt;)</th>" in html and "<td>12 | 4</td>" in html
    assert "Depth: a test's column." in md and "Depth: a test&#39;s column." in html
    assert "![Queue depth per rank](figures/queue.svg)\n\nA bright row is a deep queue." in md
    assert f"<figure>{SVG}<figcaption" in html and "A bright row is a deep queue." in html
    assert md.index("## Answer") < md.index("## Queue depth") and html.index('id="answer"') < html.index(
        'id="queue-depth"'
    )


def test_a_section_without_it_leaves_neither_with_its_words():
    html, md = rendered([model.Section("Answer", "answer", ())])
    for text in ("Queue depth", "Rank 5 holds", "queue.svg"):
        assert text not in html and text not in md


def test_every_text_of_the_model_is_escaped_in_the_html():
    section = model.Section("<b>x</b>", "x", (model.Paragraph(model.text('a <script> & "b"', model.Link("l", 'p"q'))),))
    html, _md = rendered([section])
    assert (
        "<h2>&lt;b&gt;x&lt;/b&gt;</h2>" in html and 'a &lt;script&gt; &amp; &#34;b&#34;<a href="p&#34;q">l</a>' in html
    )


def test_no_template_line_is_over_200_characters_and_the_report_templates_are_shells():
    for path in sorted(Path(TEMPLATES).glob("*.j2")):
        long = [n for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 200]
        assert not long, f"{path.name}: lines {long} over 200 characters"
    for name in ("report.html.j2", "report.md.j2"):
        shell = (Path(TEMPLATES) / name).read_text()
        assert len(shell.splitlines()) < 60 and "{% for part in sections %}" in shell
        assert "Answer" not in shell and "baseline" not in shell and "timeline" not in shell
