"""Issue 29: a cache entry that cannot be written is a warning, never a failed result.

A directory in place of the entry used to turn a computed check into "fail — ERROR:
IsADirectoryError" and exit status 1 on every run (analysis), and to raise out of
paper_figures' ``cached``."""

import json
import warnings

import pytest

from analysis import repro


def _block(path):
    """A directory (with a file in it) where the entry should go: os.replace cannot overwrite."""
    path.mkdir(parents=True)
    (path / "keep").write_text("x")


def test_store_into_a_directory_warns_names_path_and_reason(tmp_path):
    cache = repro.ResultCache(tmp_path)
    key = {"a": 1}
    path = cache.path("n", key)
    _block(path)
    with pytest.warns(repro.CacheWarning) as rec:
        assert cache.store("n", key, {"v": 1}) is None
    (w,) = rec
    msg = str(w.message)
    assert f"cache entry {path} could not be written (IsADirectoryError" in msg
    assert "the result is used uncached" in msg and "Remove or fix that path" in msg
    # no temporary file left behind, the directory untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert (path / "keep").read_text() == "x"


def test_store_under_a_file_instead_of_a_folder_warns(tmp_path):
    (tmp_path / "cache").write_text("not a folder")
    cache = repro.ResultCache(tmp_path / "cache")
    with pytest.warns(repro.CacheWarning, match="could not be written"):
        assert cache.store("n", {"a": 1}, {"v": 1}) is None


def test_a_good_store_still_returns_its_path_without_warning(tmp_path):
    cache = repro.ResultCache(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = cache.store("n", {"a": 1}, {"v": 1})
    assert json.loads(path.read_text())["result"] == {"v": 1}


def test_analysis_run_with_an_unwritable_entry_passes_on_every_run(tmp_path):
    pytest.importorskip("matplotlib")
    from analysis.__main__ import main

    args = ["--smoke", "--out", str(tmp_path), "--quiet", "--only", "lemma1", "--seed", "2",
            "--jobs", "1"]
    assert main(args) == 0
    (entry,) = (tmp_path / "cache").glob("lemma1-s2-*.json")
    entry.unlink()
    _block(entry)
    for _ in range(2):  # every run: computed, warned, passed
        with pytest.warns(repro.CacheWarning) as rec:
            assert main(args) == 0
        msgs = [str(w.message) for w in rec]
        assert any(f"cache entry {entry} could not be written" in m for m in msgs), msgs
        rep = json.loads((tmp_path / "report.json").read_text())["checks"][0]
        assert rep["verdict"] == "pass" and not rep["cached"], rep["summary"]
        assert "ERROR" not in rep["summary"]


def test_paper_figures_cached_returns_the_result_when_the_entry_cannot_be_written(tmp_path):
    from paper_figures import _cache

    key = _cache.cache_key("t", {"x": 2}, 1)
    path = repro.ResultCache(tmp_path / "_cache" / "t").path("t", key)
    _block(path)
    logs = []
    with pytest.warns(repro.CacheWarning) as rec:  # unusable on read, then not writable
        r = _cache.cached(tmp_path, "t", {"x": 2}, lambda p: {"value": p["x"] * 2},
                          log=logs.append)
    assert any(f"cache entry {path} could not be written" in str(w.message) for w in rec)
    assert r["value"] == 4
    assert "NOT cached" in logs[-1] and str(path) in logs[-1]
