"""report.md holds what report.html holds: every section heading and table, its charts as files beside it.

Rendered at library level (the report stage function, no Snakemake) from the stage outputs of one simulated run with
every optional section filled: pmu.metrics [Default], DebugClock, both pipe-timeline runs, the probe, an A/B
comparison and a late rank (tests/fixtures/report_full/SOURCE.md). Every markdown table is parsed with a real
CommonMark + GFM-tables parser (markdown-it-py), so a table that a renderer would not show as one fails here.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt
from markupsafe import escape as markupsafe_escape

from conftest import FIXTURES, stage_run
from dispatchprof.report.heatmap_svg import png
from dispatchprof.shell.config import analysis_settings, load_schema
from dispatchprof.shell.stage import SCHEMA_PATH
from dispatchprof.stages.report import report

STAGES = (
    "env_capture",
    "build",
    "correctness",
    "baseline",
    "timeline",
    "pmu",
    "pcsampling",
    "pipe_timeline",
    "debugclock",
    "probe",
)
OVERLAY = {
    "cluster": {"nodes": 2, "ranks_per_node": 2},
    "pmu": {"metrics": ["Default"]},
    "debugclock": {"when": "always"},
    "pipe_timeline": {"runs": ["PipeTimeline", "InstrTimeline"]},
    "probe": {"enabled": True},
    "timeline": {"crosscheck": "off"},
}

REPORT_INPUTS = {
    "env": "env_capture/env.json",
    "build_record": "build/build.json",
    "correctness_ranks": "correctness/ranks.parquet",
    "baseline_stats": "baseline/stats.json",
    "baseline_plots": "baseline/plots",
    "timeline_stats": "timeline/stats.json",
    "pmu_stats": "pmu/roles.json",
    "pcsampling_stats": "pcsampling/stalls.json",
    "probe_stats": "probe/probe.json",
    "debugclock_stats": "debugclock/stats.json",
    "pipe_timeline_stats": "pipe_timeline/pipe_timeline.json",
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """report.html, report.md and the figures directory of the full-sections run, rendered once."""
    return render_full(tmp_path_factory.mktemp("report_full"), with_link_bound=True)


@pytest.fixture(scope="module")
def rendered_without_link_bound(tmp_path_factory):
    """The same run as its baseline stats stand in the fixture: they predate the link bound (no bandwidth)."""
    return render_full(tmp_path_factory.mktemp("report_full_no_bound"), with_link_bound=False)


def render_full(root: Path, with_link_bound: bool, tamper=None, overlay: dict | None = None) -> tuple[str, str, Path]:
    """The full-sections run rendered; ``tamper(exp_dir)`` changes its stage outputs first, ``overlay`` its config."""
    shutil.copytree(FIXTURES / "report_full" / "results", root / "results")
    exp = root / "results" / "baseline"
    plots = exp / "baseline" / "plots"  # the baseline stage's PNG plots: a tiny one stands for them
    plots.mkdir()
    for name in ("kernel_per_rank", "kernel_iteration_max"):
        (plots / f"{name}.png").write_bytes(png(np.zeros((2, 3, 3), dtype=np.uint8)))
    if with_link_bound:
        add_link_bound(exp / "baseline" / "stats.json")
    if tamper:
        tamper(exp)
    inputs = {stage: f"results/baseline/{stage}/status.json" for stage in STAGES}
    # rule report's inputs (workflow/rules/report.smk), under results/baseline/
    inputs.update({key: f"results/baseline/{path}" for key, path in REPORT_INPUTS.items()})
    inputs.update(
        timeline_ranks=["results/baseline/timeline/ranks/rank0/detail.json"],
        comparisons=["results/compare/baseline_vs_faster/comparison.json"],
    )
    outputs = {
        "html": "report/report.html",
        "markdown": "report/report.md",
        "summary": "report/summary.json",
        "figures": "report/figures",
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        run = stage_run(
            root,
            "report",
            inputs=inputs,
            outputs=outputs,
            params={"stages": list(STAGES), "invocation": ["--configfile", "config/config.yaml", "exp.yaml"]},
            overlay={**OVERLAY, **(overlay or {})},
        )
        run.params["analysis_settings"] = json.dumps(analysis_settings(run.config, load_schema(SCHEMA_PATH)))
        status = run.finish(report(run))  # its status.json written, as run_stage writes it
    assert status.state == "ok", status.reason
    out = root / "out" / "report"
    return out.joinpath("report.html").read_text(), out.joinpath("report.md").read_text(), out / "figures"


def add_link_bound(path: Path) -> None:
    """The fixture's baseline predates the link bound: a hand-built one (2 nodes x 2 ranks) goes into its stats."""
    from dispatchprof.analysis.baseline import bandwidth_summary
    from dispatchprof.analysis.linkbound import link_bound
    from dispatchprof.analysis.traffic import link_bytes

    def dests(r: int) -> dict:
        return {
            str(d): {"tokens": 10 * (d + 1), "pairs": 10 * (d + 1), "remote": True, "same_node": d // 2 == r // 2}
            for d in range(4)
            if d != r
        }

    routing = [{"global_rank": r, "available": True, "destinations": dests(r)} for r in range(4)]
    peaks = {
        "intra_node": {"peak_gbps": 100.0, "source": "test figure", "kind": "configured"},
        "inter_node": {"peak_gbps": 50.0, "source": None, "kind": "configured"},
    }
    stats = json.loads(path.read_text())
    stats["bandwidth"] = link_bound(
        link_bytes(routing, 7168, "bf16", 2), peaks, stats["scopes"]["kernel"]["per_iteration_max_us"]
    )
    assert (
        stats["bandwidth"]["efficiency"] < 1 and "warning" not in stats["bandwidth"]
    )  # the common case: no warning key
    stats["summary"]["bandwidth"] = bandwidth_summary(stats["bandwidth"])
    path.write_text(json.dumps(stats))


def test_the_links_section_shows_the_bound_in_both_formats(rendered):
    html, md, _figures = rendered
    assert (
        "## How far from the links' limit" in md
        and '<section id="links"><h2>How far from the links&#39; limit</h2>' in html
    )
    for text in (html, md):
        assert "efficiency" in text and "not a link counter" in text and "not evidence of network congestion" in text
        assert "set by inter_node (rank 3 receives)" in text and "test figure" in text
    headers = [tuple(t["header"][0]) for t in tables(md)]
    assert (
        "link class",
        "bytes per launch (all ranks)",
        "peak (per rank, one direction)",
        "busiest",
        "time at peak",
        "achieved (average over the kernel)",
        "own efficiency",
    ) in headers


LINK_FIGURES = {
    "links_bound": "Measured kernel time against each link class's bound",
    "links_node_pairs": "Bytes per launch from node to node",
}


def test_the_links_pictures_are_in_both_formats_when_the_bound_exists(rendered):
    html, md, figures = rendered
    links = md.split("## How far from the links' limit")[1].split("\n## ")[0]
    for name, alt in LINK_FIGURES.items():
        assert f"]({figures.name}/{name}.svg)" in links and f"![{alt}" in links
        assert (figures / f"{name}.svg").read_text().startswith("<svg")
    section = html.split('<section id="links">')[1].split("</section>")[0]
    assert section.count("<figure><svg") == 2
    assert (
        "Kernel time against the links&#x27; bound (us per launch) (simulated)" in section
        and "inter-node bound (sets the bound)" in section
    )
    assert "Bytes per launch, node to node (simulated)" in section and "time per node pair: not measured" in section
    pairs = re.findall(r"<title>node (\d) -&gt; node (\d): ([\d,]+) B per launch</title>", section)
    assert sorted((a, b) for a, b, _ in pairs) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]


def test_the_links_pictures_are_absent_without_the_bound(rendered_without_link_bound):
    html, md, figures = rendered_without_link_bound
    assert (
        "## How far from the links' limit" in md
        and "Not available" in md.split("## How far from the links' limit")[1].split("\n## ")[0]
    )
    for name, alt in LINK_FIGURES.items():
        assert name not in md and alt not in md and not (figures / f"{name}.svg").exists()
    section = html.split('<section id="links">')[1].split("</section>")[0]
    assert "<figure>" not in section and "<svg" not in section


def unescaped(source: str) -> str:
    """A cell's Markdown source with its backslash escapes read (report/markdown.md_escape writes them)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source)


def tables(md: str) -> list[dict]:
    """Every table markdown-it (GFM tables) finds: its header cells and its body rows' cells."""
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    found, current, part, row = [], None, None, None
    for tok in tokens:
        if tok.type == "table_open":
            current, part = {"header": [], "rows": [], "line": tok.map[0] + 1}, None
        elif tok.type in ("thead_open", "tbody_open"):
            part = tok.type[:5]
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and row is not None:  # the cell as shown: its escapes read
            row.append(unescaped(tok.content))
        elif tok.type == "tr_close":
            (current["header"] if part == "thead" else current["rows"]).append(row)
            row = None
        elif tok.type == "table_close":
            found.append(current)
    return found


def markdown_pipe_rows(md: str) -> int:
    """Lines that look like table rows in the source: every one must belong to a parsed table."""
    return sum(1 for line in md.splitlines() if line.startswith("|"))


def test_every_markdown_table_parses_with_its_header_and_rows(rendered):
    _html, md, _figures = rendered
    found = tables(md)
    assert len(found) >= 30, len(found)
    for t in found:
        assert len(t["header"]) == 1 and len(t["header"][0]) >= 2, t
        assert t["rows"], f"table at line {t['line']} has no rows: {t['header']}"
        for row in t["rows"]:
            assert len(row) == len(t["header"][0]), (t["line"], t["header"], row)
    # No line that starts like a table row is left outside a table (the joined header/separator/rows of before).
    assert sum(1 + 1 + len(t["rows"]) for t in found) == markdown_pipe_rows(md)


def test_the_metric_set_tables_of_pmu_metrics_default_are_tables(rendered):
    """Before: with trim_blocks, the header, separator and rows of each metric set were one line."""
    _html, md, _figures = rendered
    roles = json.loads((FIXTURES / "report_full/results/baseline/pmu/roles.json").read_text())
    assert len(roles["metric_sets"]) == 6  # Default = PipeUtilization and the six others
    headers = {tuple(t["header"][0]): t for t in tables(md)}
    for name, t in roles["metric_sets"].items():
        table = headers.get(("role", *t["columns"]))
        assert table is not None, name
        assert [row[0] for row in table["rows"]] == list(t["roles"]), name
    assert "||" not in md.replace("\\|", "")


def test_the_node_clock_table_and_the_correctness_gate_are_in_the_markdown(rendered):
    _html, md, _figures = rendered
    stats = json.loads((FIXTURES / "report_full/results/baseline/timeline/stats.json").read_text())
    clock = next(t for t in tables(md) if t["header"][0][:2] == ["node", "offset (us)"])
    assert [row[0] for row in clock["rows"]] == list(stats["node_clock"])
    assert clock["rows"][1][1] == f"{stats['node_clock']['1']['offset_us']:.1f}"
    assert "## Correctness gate\n\n**ok**: all 4 ranks passed" in md


class Headings(HTMLParser):
    def __init__(self):
        super().__init__()
        self.level, self.text, self.found = None, "", []

    def handle_starttag(self, tag, attrs):
        if re.fullmatch(r"h[1-4]", tag):
            self.level, self.text = int(tag[1]), ""

    def handle_data(self, data):
        if self.level:
            self.text += data

    def handle_endtag(self, tag):
        if self.level and tag == f"h{self.level}":
            self.found.append(" ".join(self.text.split()))
            self.level = None


def test_every_section_heading_of_the_html_is_a_heading_of_the_markdown(rendered):
    html, md, _figures = rendered
    parser = Headings()
    parser.feed(html)
    assert len(parser.found) >= 20, parser.found
    tokens = MarkdownIt().parse(md)
    md_headings = [tokens[i + 1].content for i, tok in enumerate(tokens) if tok.type == "heading_open"]
    for heading in parser.found:
        # the markdown heading may append the stage's state ("System timeline (msprof): ok")
        assert any(h == heading or h.startswith(heading + ":") for h in md_headings), (heading, md_headings)


def test_every_chart_is_a_file_beside_the_markdown_and_linked_from_it(rendered):
    html, md, figures = rendered
    files = sorted(p.name for p in figures.iterdir())
    links = re.findall(r"!\[[^\]]*\]\((figures/[^)]+)\)", md)
    assert sorted(Path(link).name for link in links) == files
    for expected in (
        "launch.svg",
        "entry_wait.svg",
        "causes.svg",
        "rank_offsets.svg",
        "pmu_busy.svg",
        "pmu_no_pipe.svg",
        "pcsampling_stalls_per_role.svg",
    ):
        assert expected in files
    assert any(f.startswith("debugclock_phases_") for f in files) and "debugclock_wait_us.svg" in files
    assert "baseline_kernel_per_rank.png" in files
    for name in files:
        if name.endswith(".svg"):
            assert figures.joinpath(name).read_text().lstrip().startswith(("<svg", "<?xml")), name
    # The HTML draws the same charts inline (or as data: URIs): one picture per chart file.
    assert html.count("<svg") + html.count('src="data:image/') >= len(files)
    assert not list(figures.glob(".*")), "no temporary file is left behind"


def test_the_causes_table_has_the_html_columns_and_the_cost_definition(rendered):
    """The cost account's table is the report's answer: the markdown keeps every column of the HTML's."""
    html, md, _figures = rendered
    head = re.search(r'<table id="causes"><tr>(.*?)</tr>', html)
    assert head, "the fixture's HTML has a causes table"
    columns = re.findall(r"<th>(.*?)</th>", head.group(1))
    [causes] = [t for t in tables(md) if t["header"][0][:3] == ["#", "cause", "evidence"]]
    assert causes["header"][0] == columns
    assert "Waiting caused: Scalasca's delay cost" in md and "costs are not additive" in md


def test_the_timelines_sentences_are_apart_where_a_template_line_ends(rendered):
    """The template's lines join sentences: the straggler's explanation and the longest durations each end one."""
    html, md, _figures = rendered
    assert "Longest durations:" in md
    assert not re.search(r"[^\s(]Longest durations:", md), "a sentence glued to the one before it"


def test_the_answer_is_a_verdict_read_in_30_seconds(rendered):
    """Issue 48: at most 150 words under the Answer heading (table cells and footnotes included, a command one word),
    no line over 40, the top cause with its cost within the first 60; the long sentences are the next section."""
    from dispatchprof.report.verdict import word_count

    html, md, _figures = rendered
    answer = md.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    assert word_count(answer) <= 150, answer
    assert all(word_count(line) <= 40 for line in answer.splitlines() if line.startswith("- ")), answer
    summary = json.loads((FIXTURES / "report_full/results/baseline/timeline/stats.json").read_text())["summary"]
    top = summary["causes"][0]
    first = " ".join(re.sub(r"`[^`]*`", "step", answer).split()[:60])
    assert f"rank {top['rank']}" in first and f"{top['cost_us_per_launch']:.1f} us per launch" in first
    [table] = [t for t in tables(answer) if t["header"][0][0] == "cause"]
    assert [row[0] for row in table["rows"]] == [f"rank {c['rank']}" for c in summary["causes"][:3]]
    assert (
        "## The answer's evidence" in md
        and "What the group waits for (msprof timeline)" in md.split("## The answer's evidence", 1)[1]
    )
    assert '<section id="answer">' in html and '<table class="causes">' in html


def test_the_picture_of_the_launch_is_with_the_answer_in_both_formats(rendered):
    """The Answer section holds the picture of the launch: inline in the HTML, a figure file linked in the Markdown."""
    html, md, figures = rendered
    answer_html = html[html.index('<section id="answer">') : html.index('<section id="evidence">')]
    figure = answer_html[answer_html.index("<figure>") :]
    assert "<svg" in figure and "Launch picture</figcaption>" in figure
    answer_md = md[md.index("## Answer") : md.index("## The answer's evidence")]
    assert "](figures/launch.svg)" in answer_md
    assert (
        figures.joinpath("launch.svg").read_text().count('data-cause="true"') == 2
    )  # rank 3, the cause, in each launch


INJECTED = {
    "hostname": "<script>alert(5)</script>",
    "chip": "<img src=x onerror=alert(1)>",
    "header": "['<b>rank</b>', '*iteration*', '[x](javascript:alert(2))', '&lt;', '`tick`']",
    "kernel": "<i>elastic_dispatch_kernel</i>",
}


def inject(exp: Path) -> None:
    """Data-derived text that holds HTML and Markdown, where a user's data puts it: a node's hostname (env capture),
    the chip the PMU read, a CSV header quoted in a refused import's reason."""
    env = json.loads((exp / "env_capture" / "env.json").read_text())
    env["nodes"][0]["hostname"] = INJECTED["hostname"]
    (exp / "env_capture" / "env.json").write_text(json.dumps(env))
    roles = json.loads((exp / "pmu" / "roles.json").read_text())
    roles["chips"][0]["name"] = INJECTED["chip"]
    (exp / "pmu" / "roles.json").write_text(json.dumps(roles))
    status = json.loads((exp / "pcsampling" / "status.json").read_text())
    status["reason"] += f"; line 1: no 'rank' column in the header {INJECTED['header']}"
    (exp / "pcsampling" / "status.json").write_text(json.dumps(status))


@pytest.fixture(scope="module")
def rendered_injected(tmp_path_factory):
    return render_full(
        tmp_path_factory.mktemp("report_injected"), True, inject, {"kernel": {"name": INJECTED["kernel"]}}
    )


def tokens_of(md: str) -> list:
    """Every token markdown-it (CommonMark + GFM tables) makes of the text, inline children included."""
    out = []
    for tok in MarkdownIt("commonmark").enable("table").parse(md):
        out.append(tok)
        out.extend(tok.children or [])
    return out


def test_data_with_html_reaches_report_md_as_text_never_as_html(rendered_injected):
    """Issue 58: report.md passed a chip name, a hostname and a CSV header through raw, where report.html escapes
    them: a Markdown renderer then runs the HTML. Every piece reaches the rendered Markdown as the same text."""
    html, md, _figures = rendered_injected
    raw = [t for t in tokens_of(md) if t.type in ("html_inline", "html_block")]
    assert not raw, [t.content for t in raw]
    assert not [t for t in tokens_of(md) if t.type in ("link_open", "em_open", "strong_open") and "alert" in t.info]
    text = " ".join(t.content for t in tokens_of(md) if t.type in ("text", "code_inline"))
    for name, value in INJECTED.items():
        assert value in text, (name, value)  # said as the data says it, not dropped or mangled
        assert markupsafe_escape(value) in html, name  # the HTML's own escaping, for comparison
    assert "javascript:" not in " ".join(str(t.attrs) for t in tokens_of(md) if t.type == "link_open")


def test_the_full_report_md_holds_no_raw_html(rendered):
    _html, md, _figures = rendered
    assert not [t.content for t in tokens_of(md) if t.type in ("html_inline", "html_block")]


DAMAGEABLE = {  # a report input (under results/baseline/), the stage that wrote it, and its section's anchor
    "env_capture/env.json": ("env_capture", "environment"),
    "build/build.json": ("build", "environment"),
    "correctness/ranks.parquet": ("correctness", "correctness"),
    "baseline/stats.json": ("baseline", "baseline"),
    "timeline/stats.json": ("timeline", "timeline"),
    "timeline/ranks/rank0/detail.json": ("timeline", "timeline"),
    "pmu/roles.json": ("pmu", "pmu"),
    "pcsampling/stalls.json": ("pcsampling", "pcsampling"),
    "probe/probe.json": ("probe", "probe"),
    "debugclock/stats.json": ("debugclock", "debugclock"),
    "pipe_timeline/pipe_timeline.json": ("pipe_timeline", "pipe-timeline"),
}


def outline(html: str) -> list[tuple[str, int, str]]:
    """The report's sections in order: (anchor, heading level, heading)."""
    found = re.finditer(r'<section id="([^"]+)"><h([1-4])>(.*?)</h\2>', html)
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in found]


def parts_of(sections: list[tuple[str, int, str]], anchor: str) -> set[str]:
    """The anchors of the section ``anchor`` and the sub-sections under it (until a heading as high as its own)."""
    start = next(i for i, (a, _, _) in enumerate(sections) if a == anchor)
    level = sections[start][1]
    end = next((i for i in range(start + 1, len(sections)) if sections[i][1] <= level), len(sections))
    return {a for a, _, _ in sections[start:end]}


@pytest.fixture(scope="module")
def intact_outline(rendered):
    return outline(rendered[0])


@pytest.mark.parametrize("relative", sorted(DAMAGEABLE))
def test_a_stage_file_that_cannot_be_read_is_its_sections_note_and_the_rest_renders(relative, tmp_path, intact_outline):
    """Issue 58: a truncated stats.json (or Parquet table) under results/ made the whole report a 350-byte
    placeholder ("internal error ... (a workflow bug)"). Now that stage is shown invalid with the file named, and
    every other section of the intact report is still there."""
    stage, anchor = DAMAGEABLE[relative]

    def truncate(exp: Path) -> None:
        path = exp / relative
        path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])

    html, md, _figures = render_full(tmp_path, True, truncate)  # the report's status is ok (render_full asserts it)
    named = f"results/baseline/{relative}: cannot be read ("
    why = "not a readable Parquet file" if relative.endswith(".parquet") else "not valid JSON"
    section = html[html.index(f'<section id="{anchor}">') :].split("</section>")[0]
    for text in (section, md.replace("\\", "")):
        assert named in text and why in text and "a workflow bug" not in text, relative
    shown = outline(html)
    # the damaged stage's own sub-sections (its metric sets, its phases) go with its data; nothing else does
    lost = {a for a, _, _ in intact_outline} - {a for a, _, _ in shown}
    assert lost <= parts_of(intact_outline, anchor) - {anchor}, lost
    summary = json.loads((tmp_path / "out" / "report" / "summary.json").read_text())
    assert summary["stages"][stage]["state"] == "invalid" and named in summary["stages"][stage]["reason"]
    status = json.loads((tmp_path / "out" / "status.json").read_text())
    assert status["state"] == "ok" and f"files that cannot be read: {named}" in status["reason"], status["reason"]
