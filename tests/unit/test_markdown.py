from hypothesis import example, given, settings
from hypothesis import strategies as st

from dispatchprof.report.markdown import spaced_tables


def test_tables_get_blank_lines_so_the_next_paragraph_or_heading_is_not_a_row():
    text = "Intro:\n| a | b |\n|---|---|\n| 1 | 2 |\nShare: all samples.\n## Next\n"
    assert spaced_tables(text) == "Intro:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nShare: all samples.\n## Next\n"
    spaced = "Intro:\n\n| a |\n|---|\n\ntext\n"
    assert spaced_tables(spaced) == spaced  # already spaced: unchanged


def rendered_text(md: str) -> tuple[str, list[str]]:
    """What markdown-it (CommonMark + GFM tables and strikethrough) shows of ``md``: the text and code of its inline tokens, and the
    types of every token that is markup made from the text (raw HTML, links, images, emphasis, blocks of their own)."""
    from markdown_it import MarkdownIt

    shown, markup = [], []
    for tok in MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(md):
        if tok.type not in ("paragraph_open", "paragraph_close", "inline", "bullet_list_open", "bullet_list_close"):
            if tok.type not in ("list_item_open", "list_item_close") and not tok.type.startswith(("t", "th", "td")):
                markup.append(tok.type)
        for child in tok.children or []:
            if child.type in ("text", "code_inline"):
                shown.append(child.content)
            elif child.type != "softbreak":
                markup.append(child.type)
    return "".join(shown), markup


def flat(text: str) -> str:
    """The text as a renderer shows it: whitespace as spaces, NUL as U+FFFD (CommonMark's replacement)."""
    return "".join(" " if c.isspace() else c for c in text).replace("\x00", "\ufffd")


@example("<script>alert(5)</script>")
@example("[x](javascript:alert(1))")
@example("*a* **b** _c_ __d__")
@example("# h #")
@example("1. x")
@example("2) y")
@example("&amp; &#60;")
@example("`x` ``y``")
@example("a | b")
@example("\\\\")
@example("---")
@example("***")
@example("<http://x.y>")
@example("![i](x)")
@example("a\\n# b\\n- c")
@example("$x$")
@example("~~s~~")
@example("> q")
@example("    code")
@example("[^1]")
@example("[r]: /u")
@example("<!-- c -->")
@example("x\\\\\\n y")
@example("# h #")
@example("a ##")
@example("#")
@settings(max_examples=400, deadline=None)
@given(st.text(min_size=1))
def test_any_text_escaped_renders_as_that_text_in_a_paragraph_an_item_and_a_cell(text):
    """Issue 58: data enters report.md through md_escape; whatever it holds (HTML, links, emphasis, list or heading
    markers, entities) is shown as written, never run as markup."""
    from dispatchprof.report.markdown import markdown_cell, md_escape

    expected = flat(text).strip()
    for md, before in (
        (md_escape(text), ""),
        (f"- {md_escape(text)}", ""),
        (f"| a |\n|---|\n| {markdown_cell(md_escape(text))} |", "a"),  # the header cell's text comes first
        (f"## {md_escape(text)}", ""),
    ):
        shown, markup = rendered_text(md)
        assert not [m for m in markup if m not in ("heading_open", "heading_close") or md[0] != "#"], (md, markup)
        assert shown.strip() == before + expected, (md, shown)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1).filter(lambda t: t.strip()))
def test_any_text_as_a_code_span_renders_as_that_text(text):
    from dispatchprof.report.markdown import md_code

    shown, markup = rendered_text(f"run {md_code(text)} now")
    assert not markup, markup
    assert shown == f"run {flat(text)} now", shown
