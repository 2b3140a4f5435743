"""The report's templates are compiled once per template source and kept between report jobs."""

import tempfile

from dispatchprof.report import html


def test_compiled_templates_are_kept_and_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # jinja's per-user cache directory goes under it
    (tmp_path / "templates").mkdir()
    template = tmp_path / "templates" / "page.html.j2"
    template.write_text("<p>{{ value }}</p>\n")
    html._environment.cache_clear()  # a new environment, as a new report job has
    assert html.render(tmp_path / "templates", {"value": "<1>"}, "page.html.j2") == "<p>&lt;1&gt;</p>"
    cached = list(tmp_path.glob("_jinja2-cache-*/__jinja2_*.cache"))
    assert len(cached) == 1
    # The next job loads the compiled template instead of compiling it again.
    html._environment.cache_clear()
    cache = html._environment(tmp_path / "templates").bytecode_cache
    loaded = []
    monkeypatch.setattr(cache, "load_bytecode", lambda bucket, original=cache.load_bytecode: loaded.append(bucket.key) or original(bucket))
    assert html.render(tmp_path / "templates", {"value": 2}, "page.html.j2") == "<p>2</p>"
    assert len(loaded) == 1 and list(tmp_path.glob("_jinja2-cache-*/__jinja2_*.cache")) == cached
    # A changed template is compiled anew, never served from the cache.
    template.write_text("<b>{{ value }}</b>\n")
    html._environment.cache_clear()
    assert html.render(tmp_path / "templates", {"value": 3}, "page.html.j2") == "<b>3</b>"
    html._environment.cache_clear()


def test_no_safe_cache_directory_means_compiling_as_before(tmp_path, monkeypatch):
    def unsafe(*_args, **_kwargs):
        raise RuntimeError("Cannot determine safe temp directory.")

    monkeypatch.setattr(html.jinja2, "FileSystemBytecodeCache", unsafe)
    html._environment.cache_clear()
    (tmp_path / "page.md.j2").write_text("{{ value }}\n")
    assert html._environment(tmp_path).bytecode_cache is None
    assert html.render(tmp_path, {"value": 1}, "page.md.j2") == "1"
    html._environment.cache_clear()
