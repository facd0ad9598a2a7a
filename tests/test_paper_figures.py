"""Smoke tests of ``python -m paper_figures`` in --quick mode on tiny synthetic data (tmp_path),
plus the table verdict logic and the cache."""

import json

import numpy as np
import pytest
from _tiny_data import write_tiny_data

from paper_figures import __main__ as cli
from paper_figures import _data, _metrics, rr07_table1
from paper_figures._data import RobustPreprocessor
from paper_figures._features import derive_seed
from paper_figures._metrics import bootstrap_se, rmse, rr_error
from paper_figures._output import fmt


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    # covtype, CT slices and MSD left out: they must show up as "data missing"
    return write_tiny_data(tmp_path_factory.mktemp("data"),
                           skip=("covtype", "ct_slices", "year_prediction_msd"))


def _run(args, capsys):
    assert cli.main(args) == 0
    return capsys.readouterr()


def test_rr07_table1_quick_and_cache(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["rr07_table1", "--quick", "--data-dir", str(tiny), "--out", str(out),
            "--datasets", "cpu_act,adult,covtype_binary"]
    r1 = _run(args, capsys)
    md = (out / "rr07_table1.md").read_text()
    assert "QUICK MODE" in md and "| CPU | Fourier+LS | D=300 | 3.60 |" in md
    assert "| Adult | Binning+LS | P=30 | 15.30 |" in md
    assert "| Forest Cover | Fourier+LS | D=5000 | 11.60 | data missing |" in md
    assert "covtype.data.gz" in md
    cache = list((out / "_cache" / "rr07_table1_quick").glob("*.json"))
    assert len(cache) == 1
    stored = json.loads(cache[0].read_text())
    assert stored["key"]["params"]["seed"] == 0 and stored["key"]["randfeat_version"]
    res = stored["result"]["results"]
    assert {(r["dataset"], r["method"]) for r in res} == {
        ("cpu_act", "fourier"), ("cpu_act", "binning"), ("adult", "fourier"),
        ("adult", "binning")}
    assert all(len(r["seeds"]) == 1 and np.isfinite(r["errors"][0]) for r in res)
    assert "computed in" in r1.err
    # second run: from the cache, same table
    r2 = _run(args, capsys)
    assert "using cached result" in r2.err
    assert (out / "rr07_table1.md").read_text() == md


def test_ff13_table2_quick(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    _run(["ff13_table2", "--quick", "--data-dir", str(tiny), "--out", str(out),
          "--datasets", "wine,ct_slices"], capsys)
    md = (out / "ff13_table2.md").read_text()
    for m in ("Exact RBF", "Nyström RBF", "RKS RBF", "Fastfood FFT", "Fastfood RBF",
              "Fastfood ball-sum"):
        assert f"| Wine Quality | {m}" in md
    assert "| CT slices (axial) | RKS RBF | 49.491 | data missing |" in md
    assert "QUICK MODE" in md and "test-set SE" in md


def test_ff13_fig1_and_table1_quick(tmp_path, capsys):
    out = tmp_path / "out"
    _run(["ff13_fig1", "--quick", "--out", str(out)], capsys)
    assert (out / "ff13_fig1.png").stat().st_size > 1000
    assert "| 1024 |" in (out / "ff13_fig1.md").read_text()
    _run(["ff13_table1", "--quick", "--out", str(out)], capsys)
    md = (out / "ff13_table1.md").read_text()
    assert "| 1024 | 16384 | 0.00058 |" in md and "256x" in md


def test_rr07_fig3_quick_on_tiny_kddcup(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    _run(["rr07_fig3", "--quick", "--data-dir", str(tiny), "--out", str(out)], capsys)
    assert (out / "rr07_fig3.png").stat().st_size > 1000
    md = (out / "rr07_fig3.md").read_text()
    assert "KDDCUP99" in md and "Forest not at hand" in md


def test_rr07_fig3_without_any_classification_set(tmp_path, capsys):
    out = tmp_path / "out"
    _run(["rr07_fig3", "--quick", "--data-dir", str(tmp_path / "empty"), "--out", str(out)],
         capsys)
    assert "Not drawn" in (out / "rr07_fig3.md").read_text()


def test_verdicts(tmp_path):
    """A row better than the paper within noise is 'met', a worse one 'NOT met'; times too."""
    p = dict(rows=[dict(label="CPU", dataset="cpu_act", D=300, P=350, available=True,
                        missing="")], reps=3, quick=False, max_train=None, max_test=None,
             search_rows=1, factors=[1.0], alphas=[1.0], seed=0)

    def res(errs, secs, cpu, sigma):
        return dict(dataset="cpu_act", n=1, sigma=sigma, sigma_scores={0.5: 1, 1.0: 0.5, 2.0: 1},
                    errors=errs, fit_seconds=secs, fit_cpu_seconds=cpu, alphas=[1e-3] * 3,
                    seeds=[0, 1, 2], n_train=1, n_test=1, task="regression")

    result = dict(results=[
        dict(res([3.0, 3.2, 3.4], [1.0] * 3, [1.5] * 3, 1.0), method="fourier"),
        dict(res([6.0, 6.1, 6.2], [30.0] * 3, [10.0] * 3, 2.0), method="binning")])
    rr07_table1.render(result, p, tmp_path)
    lines = [ln for ln in (tmp_path / "rr07_table1.md").read_text().splitlines()
             if ln.startswith("| CPU")]
    fourier, binning = lines
    cells_f = [c.strip() for c in fourier.split("|")]
    cells_b = [c.strip() for c in binning.split("|")]
    assert cells_f[7] == "met" and cells_f[11] == "20x; 13x" and cells_f[12] == "met / met"
    assert cells_b[7] == "NOT met" and cells_b[11] == "6x; 18x"
    assert cells_b[12] == "NOT met / met"
    assert cells_f[6] == fmt(3.2 / 3.6, 2)
    assert "edge of the searched grid" in cells_b[-2] and "edge" not in cells_f[-2]


def test_metrics():
    assert rr_error("regression", [3.0, 4.0], [3.0, 4.0]) == 0.0
    assert rr_error("regression", [3.0, 4.0], [0.0, 0.0]) == pytest.approx(100.0)
    assert rr_error("binary", [1, -1, 1, 1], [1, 1, 1, 1]) == 25.0
    assert rmse([0.0, 0.0], [3.0, 4.0]) == pytest.approx(np.sqrt(12.5))
    assert derive_seed(0, "a", 1) == derive_seed(0, "a", 1) != derive_seed(1, "a", 1)


def test_cache_key_ignores_where_the_cache_lives():
    from paper_figures._cache import cache_key

    a = cache_key("t", {"n": 1, "cache_dir": "/a"}, 1)
    assert a == cache_key("t", {"n": 1, "cache_dir": "/b"}, 1)
    assert a != cache_key("t", {"n": 2, "cache_dir": "/a"}, 1)
    assert a != cache_key("t", {"n": 1, "cache_dir": "/a"}, 2)


def test_bootstrap_se_and_noise():
    """For the mean of n iid N(0, 1) residuals the bootstrap SE estimates 1/sqrt(n): with 1000
    resamples its relative error has sd ~ 3 % here, so 12 % is a ~4-sigma band (fixed seeds)."""
    rng = np.random.default_rng(3)
    y, pred = rng.normal(size=2000), np.zeros(2000)
    se = bootstrap_se(lambda a, b: float(np.mean(a - b)), y, pred, seed=1)
    assert se == pytest.approx(1 / np.sqrt(2000), rel=0.12)
    assert se == bootstrap_se(lambda a, b: float(np.mean(a - b)), y, pred, seed=1)
    assert _metrics.noise(0.1, 0.3) == 0.3 and _metrics.noise(float("nan"), 0.2) == 0.2
    assert _metrics.noise(0.1, None) == 0.1 and _metrics.noise(float("nan"), None) == 0.0


def test_bad_target_is_rejected(capsys):
    with pytest.raises(SystemExit):
        cli.main(["fig99"])
    assert "invalid choice" in capsys.readouterr().err


def test_robust_preprocessor():
    """Binary 0/1 columns kept, skewed non-negative columns log1p, the rest standardised — with
    training statistics only; prepare() rejects an unknown mode."""
    rng = np.random.default_rng(0)
    n = 2000
    binary = (rng.random(n) < 0.01).astype(float)          # rare indicator: kept as 0/1
    counts = rng.lognormal(0.0, 2.0, n)                      # heavy right tail: log1p
    normal = rng.normal(5.0, 2.0, n)                         # symmetric: standardised only
    negative = rng.lognormal(0.0, 2.0, n) - 1.0              # skewed but has negatives: no log
    X = np.c_[binary, counts, normal, negative]
    pp = RobustPreprocessor().fit(X)
    np.testing.assert_array_equal(pp.binary_, [True, False, False, False])
    np.testing.assert_array_equal(pp.log_, [False, True, False, False])
    Z = pp.transform(X)
    np.testing.assert_array_equal(Z[:, 0], binary)
    lc = np.log1p(counts)
    np.testing.assert_allclose(Z[:, 1], (lc - lc.mean()) / lc.std(), rtol=1e-12)
    np.testing.assert_allclose(Z[:, 2:].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, 2:].std(0), 1, rtol=1e-12)
    # test rows use the training statistics (a negative count is clipped at 0 before log1p)
    Xt = np.array([[1.0, -3.0, 5.0, 0.0]])
    zt = pp.transform(Xt)
    assert zt[0, 0] == 1.0 and zt[0, 1] == pytest.approx((0.0 - lc.mean()) / lc.std())
    assert pp.describe() == dict(n_binary_kept=1, log1p_columns=[1])
    assert np.array_equal(X[:, 1], counts)  # input not modified


def test_prepare_rejects_unknown_preprocessing(tiny):
    with pytest.raises(ValueError, match="preprocess must be one of"):
        _data.prepare("cpu_act", tiny, preprocess="whiten")


def test_refresh_recomputes_the_per_row_caches(tiny, tmp_path, capsys):
    """--refresh reaches the nested per-row caches (a doctored row is used without it and
    recomputed with it)."""
    out = tmp_path / "out"
    args = ["rr07_table1", "--quick", "--data-dir", str(tiny), "--out", str(out),
            "--datasets", "cpu_act"]
    _run(args, capsys)
    rows = list((out / "_cache" / "rr07_table1_row_quick").glob("*.json"))
    assert len(rows) == 2
    for path in rows:
        stored = json.loads(path.read_text())
        stored["result"]["errors"] = [999.0]
        path.write_text(json.dumps(stored))
    for path in (out / "_cache" / "rr07_table1_quick").glob("*.json"):
        path.unlink()  # the table-level cache: the next run assembles the rows again
    _run(args, capsys)
    assert "999.00 ±" in (out / "rr07_table1.md").read_text()
    _run(args + ["--refresh"], capsys)
    assert "999.00" not in (out / "rr07_table1.md").read_text()
    assert all(json.loads(p.read_text())["result"]["errors"] != [999.0] for p in rows)
    from paper_figures import _cache
    _run(args, capsys)  # the flag does not stick to later runs in the same process
    assert _cache.REFRESH is False


@pytest.mark.parametrize("target, png", [("liao20_double_descent", "liao20_double_descent.png"),
                                         ("yang12_nystrom_vs_rff", "yang12_nystrom_vs_rff.png")])
def test_learning_curve_figures_render(target, png, tmp_path, capsys):
    """The two figures of issue 33 regenerate end to end (the check's quick design with only 2
    maps per point, synthetic data: a rendering test, the verdict of so few maps is not judged):
    a figure and a table stating quick mode and the check's verdict."""
    out = tmp_path / "out"
    _run([target, "--quick", "--reps", "2", "--datasets", "synthetic", "--out", str(out)], capsys)
    assert (out / png).stat().st_size > 1000
    md = (out / png.replace(".png", ".md")).read_text()
    assert "**QUICK MODE**" in md and "Verdict of the check on this run" in md
