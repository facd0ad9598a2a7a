"""learner_paths (analysis/checks/learner_paths.py): every solver and path of randfeat's ridge
learners against numpy's exact ridge.  The check is deterministic given the seed; each hole of
issue 27 is injected through a public seam and must make it fail, the control must pass."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
randfeat = pytest.importorskip("randfeat")

from analysis import audit as audit_mod  # noqa: E402
from analysis.checks import learner_paths as lp  # noqa: E402
from analysis.checks import validate_verdict  # noqa: E402

SMALL = dict(lp.PARAMS["smoke"])


@pytest.fixture
def one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _run(seed, params=SMALL):
    res = lp.run(params, seed)
    return res, validate_verdict(lp, lp.verdict(res), res)


def _failed(v):
    return v["verdict"] == "fail"


def test_control_passes_and_states_its_power(global_random_seed, one_thread):
    res, v = _run(global_random_seed)
    assert v["verdict"] == "pass", v["summary"]
    kinds = {e["effect"].split(" ")[0] for e in v["detectable"]}
    assert {"PCG", "relative"} <= kinds, v["detectable"]
    paths = " ".join(p["path"] for p in res["paths"])
    for name in ("cholesky", "pcg", "cg", "lsqr", "sample_weight", "alpha grid", "Classifier",
                 "merge", "solve_path (method='cholesky')", "solve_path (method='eigh')",
                 "randfeat.dask", "sigma='scale'", "sigma='median'"):
        assert name in paths, name


def test_merge_that_drops_the_merged_zty_fails(monkeypatch, global_random_seed, one_thread):
    """RidgeStatistics.merge keeping only its own Z'y: the sums and the solution are wrong."""
    real = randfeat.RidgeStatistics.merge

    def merge(self, other):
        out = real(self, other)
        out.zty_ = self.zty_.copy()
        return out

    monkeypatch.setattr(randfeat.RidgeStatistics, "merge", merge)
    res, v = _run(global_random_seed)
    assert _failed(v) and any("merge" in f for f in v["statistic"]["failed"]), v["summary"]
    assert res["sums"]["zty_"] > 1e-3


def test_dask_reduction_that_counts_a_block_twice_fails(monkeypatch, global_random_seed,
                                                         one_thread):
    pytest.importorskip("dask")
    import randfeat.dask as rdask

    real = rdask.tree_reduce

    def twice(parts, *a, **kw):
        parts = list(parts)
        return real([parts[0]] + parts, *a, **kw)

    monkeypatch.setattr(rdask, "tree_reduce", twice)
    _, v = _run(global_random_seed)
    assert _failed(v) and any("dask" in f for f in v["statistic"]["failed"]), v["summary"]


def test_pcg_stopping_at_ten_times_its_tolerance_fails(global_random_seed, one_thread):
    with lp.audit(dict(effect="PCG stopping tolerance loosened by a factor", size=10.0,
                       unit="factor")):
        _, v = _run(global_random_seed, lp.PARAMS["quick"])
    assert _failed(v) and any("pcg" in f for f in v["statistic"]["failed"]), v["summary"]


def test_sigma_scale_sqrt2_too_large_fails(monkeypatch, global_random_seed, one_thread):
    """sigma='scale' resolved sqrt(2) too large (the fitted map is the one of that sigma)."""
    real = randfeat.RandomFourierFeatures.fit

    def fit(self, X, y=None):
        out = real(self, X, y)
        if self.sigma == "scale":  # the map sigma_ sqrt(2) gives: w = g / sigma
            self.sigma_ = float(self.sigma_) * np.sqrt(2)
            self.frequencies_ = np.asarray(self.frequencies_) / np.sqrt(2)
        return out

    monkeypatch.setattr(randfeat.RandomFourierFeatures, "fit", fit)
    _, v = _run(global_random_seed)
    assert _failed(v) and any("sigma='scale'" in f for f in v["statistic"]["failed"])


def test_a_learner_with_the_wrong_penalty_scale_fails(monkeypatch, global_random_seed,
                                                      one_thread):
    """RandomFeatureRidge reading alpha_scale='mean' as 'sum' (penalty n times too small)."""
    real = randfeat.RandomFeatureRidge.fit

    def fit(self, X, y, sample_weight=None):
        scale = self.alpha_scale
        self.alpha_scale = "sum"
        try:
            return real(self, X, y, sample_weight=sample_weight)
        finally:
            self.alpha_scale = scale

    monkeypatch.setattr(randfeat.RandomFeatureRidge, "fit", fit)
    _, v = _run(global_random_seed)
    assert _failed(v)


def test_a_float32_solve_without_refinement_fails(monkeypatch, global_random_seed, one_thread):
    """gram_dtype="float32" solved by the float32 Cholesky factorisation alone (no float64
    refinement): off by ~kappa u32 from the float64 solve of its statistics, far above the
    check's 10 kappa eps sqrt(D) (the old whole-path bound, ||dG|| / pen = 0.14, let it pass)."""
    import scipy.linalg

    import randfeat.linear._solvers as solvers

    def float32_only(A, alpha, c, out, SA=None):
        M = np.tril(A) + np.tril(A, -1).T
        M[np.diag_indices_from(M)] += alpha
        f = scipy.linalg.cho_factor(M.astype(np.float32), lower=True)
        out[...] = scipy.linalg.cho_solve(f, np.asarray(c, np.float32))
        return 0

    monkeypatch.setattr(solvers, "_posv_mixed", float32_only)
    res, v = _run(global_random_seed)
    f32 = [p for p in res["paths"] if p["kind"] == "float32"][0]
    assert _failed(v) and "RandomFeatureRidge gram_dtype='float32'" in v["statistic"]["failed"], \
        v["summary"]
    assert f32["relerr"] > 100 * f32["bound"] and f32["relerr_numpy"] < f32["bound_numpy"]


def test_a_float32_gram_off_by_1e4_fails(monkeypatch, global_random_seed, one_thread):
    """Every chunk's float32 Gram added with a relative error of 1e-4 (a summation bug about 7
    times float32's rounding bound at 256 rows): caught entrywise by the statistics test, although
    the solve of those statistics is exact and the whole-path bound (0.14) would pass it."""
    import randfeat._lib._gram as _lib

    real = _lib.syrk_f32_into

    def skewed(Zs, G, buf):
        before = G.copy()
        real(Zs, G, buf)
        G[...] = before + (G - before) * (1 + 1e-4)

    monkeypatch.setattr(_lib, "syrk_f32_into", skewed)
    res, v = _run(global_random_seed)
    f32 = [p for p in res["paths"] if p["kind"] == "float32"][0]
    assert _failed(v) and "RandomFeatureRidge gram_dtype='float32'" in v["statistic"]["failed"], \
        v["summary"]
    assert f32["gram_ratio"] > 1 and f32["relerr"] <= f32["bound"]


def test_an_exception_in_a_path_is_a_failure(monkeypatch, global_random_seed, one_thread):
    def boom(self, *a, **k):
        raise RuntimeError("solve exploded")

    monkeypatch.setattr(randfeat.RidgeStatistics, "solve_path", boom)
    res, v = _run(global_random_seed)
    assert v["verdict"] == "fail" and any("solve exploded" in e for e in res["errors"])


def test_missing_dask_is_skipped_not_passed(monkeypatch, global_random_seed, one_thread):
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *a, **k):
        if name == "dask" or name.startswith("dask."):
            raise ImportError("no dask here")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    res, v = _run(global_random_seed)
    assert res["skipped"] and v["verdict"] == "vacuous"


def test_audit(one_thread):
    """The audit protocol on the quick design at seeds 0-2: every stated effect detected
    (deterministic: each statement is the run's own calibration or threshold).  Seeds 0-49:
    tests/test_analysis_learning_power.py, marker slow."""
    seeds = [0, 1, 2]
    entry = audit_mod.audit_module(lp, seeds)
    assert entry["control"]["pass"] == len(seeds)
    assert len(entry["effects"]) == 3
    for e in entry["effects"]:
        assert e["detected"] >= 0.9 * e["n"] and e["n"] == len(seeds), e


def test_plot(one_thread):
    res, v = _run(0)
    fig = lp.plot(res, v)
    assert fig is not None

