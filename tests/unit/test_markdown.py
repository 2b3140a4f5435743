from dispatchprof.report.markdown import spaced_tables


def test_tables_get_blank_lines_so_the_next_paragraph_or_heading_is_not_a_row():
    text = "Intro:\n| a | b |\n|---|---|\n| 1 | 2 |\nShare: all samples.\n## Next\n"
    assert spaced_tables(text) == "Intro:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nShare: all samples.\n## Next\n"
    spaced = "Intro:\n\n| a |\n|---|\n\ntext\n"
    assert spaced_tables(spaced) == spaced  # already spaced: unchanged
