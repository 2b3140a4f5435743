"""The report's templates are compiled once per template source and settings, and kept between report jobs."""

import tempfile

import jinja2
import jinja2.bccache

from dispatchprof.report import html

CACHED = "_jinja2-cache-*/__dispatchprof_*.cache"


def templates(root, text="<p>{{ value }}</p>\n"):
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "templates" / "page.html.j2").write_text(text)
    return root / "templates"


def render(directory, value):
    html._environment.cache_clear()  # a new environment, as a new report job has
    return html.render(directory, {"value": value}, "page.html.j2")


def test_compiled_templates_are_kept_and_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # jinja's per-user cache directory goes under it
    directory = templates(tmp_path / "a")
    assert render(directory, "<1>") == "<p>&lt;1&gt;</p>"
    cached = list(tmp_path.glob(CACHED))
    assert len(cached) == 1
    # The next job loads the compiled template instead of compiling it again.
    loaded = []
    original = html._CompiledTemplates.load_bytecode
    monkeypatch.setattr(
        html._CompiledTemplates,
        "load_bytecode",
        lambda self, bucket: loaded.append(bucket.key) or original(self, bucket),
    )
    assert render(directory, 2) == "<p>2</p>" and len(loaded) == 1
    # Another copy of the workflow shares the entry: one file per template name, wherever the workflow is.
    assert render(templates(tmp_path / "b"), 3) == "<p>3</p>" and list(tmp_path.glob(CACHED)) == cached
    # A changed template is compiled anew, never served from the cache.
    templates(tmp_path / "a", "<b>{{ value }}</b>\n")
    assert render(directory, 4) == "<b>4</b>"
    html._environment.cache_clear()


def test_other_settings_never_use_templates_compiled_under_the_old_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = templates(tmp_path, "{% if true %}\nA\n{% endif %}\nB")
    assert render(directory, 0) == "A\nB"  # trim_blocks: the newline after a block tag goes
    monkeypatch.setitem(html._SETTINGS, "trim_blocks", False)
    monkeypatch.setitem(html._SETTINGS, "lstrip_blocks", False)
    assert render(directory, 0) == "\nA\n\nB"
    assert len(list(tmp_path.glob(CACHED))) == 2
    html._environment.cache_clear()


def test_a_cache_that_cannot_be_written_or_read_costs_only_the_compiling(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    directory = templates(tmp_path)

    def disk_full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(jinja2.FileSystemBytecodeCache, "dump_bytecode", disk_full)
        assert render(directory, 1) == "<p>1</p>"
    assert render(directory, 2) == "<p>2</p>"
    for entry in tmp_path.glob(CACHED):  # jinja's magic, then what is no pickle: jinja itself would raise here
        entry.write_bytes(jinja2.bccache.bc_magic + b"\x00garbage")
    assert render(directory, 3) == "<p>3</p>"
    html._environment.cache_clear()


def test_no_safe_cache_directory_means_compiling_as_before(tmp_path, monkeypatch):
    def unsafe(*_args, **_kwargs):
        raise RuntimeError("Cannot determine safe temp directory.")

    monkeypatch.setattr(html, "_CompiledTemplates", unsafe)
    html._environment.cache_clear()
    (tmp_path / "page.md.j2").write_text("{{ value }}\n")
    assert html._environment(tmp_path).bytecode_cache is None
    assert html.render(tmp_path, {"value": 1}, "page.md.j2") == "1"
    html._environment.cache_clear()


def test_a_huge_number_is_printed_for_people_never_as_hundreds_of_digits(tmp_path):
    from dispatchprof.report.html import render

    (tmp_path / "t.md.j2").write_text(
        '{{ "%.1f"|format(big) }} us; {{ "%.1f"|format(small) }} us; {{ "%d of %d"|format(3, 4) }}'
    )
    assert render(tmp_path, {"big": 1e300, "small": 12.34}, "t.md.j2") == "1e+300 us; 12.3 us; 3 of 4"
