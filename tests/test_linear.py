"""Tests of randfeat.linear: exactness against scikit-learn's Ridge, streaming, the alpha path,
the sparse (LSQR/CG) path, classification, and input errors.  Deterministic algebra only: every
comparison is between two solutions of the same linear system (tolerances are round-off /
solver tolerances, not statistical)."""


import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge, RidgeClassifier
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import (
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat.linear import (
    AlphaAtGridEdgeWarning,
    RandomFeatureRidge,
    RandomFeatureRidgeClassifier,
)


def _data(seed, n=200, d=4, k=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=(d,) if k is None else (d, k))
    return X, X @ w + 0.1 * rng.normal(size=(n,) if k is None else (n, k))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("alpha_scale", ["sum", "mean"])
def test_equals_sklearn_ridge_on_explicit_features(global_random_seed, fit_intercept, k,
                                                   alpha_scale):
    """alpha_scale="sum": alphas is scikit-learn's Ridge(alpha); "mean": Ridge(n * alpha)."""
    X, y = _data(global_random_seed, k=k)
    rff = RandomFourierFeatures(64, sigma=2.0, random_state=global_random_seed).fit(X)
    Z = rff.transform(X)
    alpha = 0.2 if alpha_scale == "sum" else 1e-3
    ours = RandomFeatureRidge(clone(rff), alphas=alpha, alpha_scale=alpha_scale,
                              fit_intercept=fit_intercept, gram_dtype="float64").fit(X, y)
    sk_alpha = alpha if alpha_scale == "sum" else alpha * len(X)
    ref = Ridge(alpha=sk_alpha, fit_intercept=fit_intercept, solver="cholesky").fit(Z, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.predict(X), ref.predict(Z), rtol=1e-7, atol=1e-9)
    assert ours.features_ is not ours.get_params()["features"]  # cloned inside fit
    assert ours.n_features_out_ == 64 and ours.solver_ == "cholesky"


def test_passthrough_is_plain_ridge(global_random_seed):
    X, y = _data(global_random_seed)
    ours = RandomFeatureRidge(alphas=0.5).fit(X, y)
    ref = Ridge(alpha=0.5).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-9)


@pytest.mark.parametrize("selection", ["loo", "holdout"])
@pytest.mark.parametrize("chunk_size", [1, 7, 64])
def test_streaming_equals_single_chunk(global_random_seed, chunk_size, selection):
    X, y = _data(global_random_seed, n=150)
    f = RandomFourierFeatures(32, sigma=1.5, random_state=0)
    kw = dict(alphas=np.logspace(-6, 0, 5), random_state=global_random_seed,
              selection=selection)
    a = RandomFeatureRidge(f, chunk_size=chunk_size, **kw).fit(X, y)
    b = RandomFeatureRidge(f, chunk_size=10_000, **kw).fit(X, y)
    assert a.alpha_ == b.alpha_
    np.testing.assert_allclose(a.selection_curve_, b.selection_curve_, rtol=1e-8)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)


def test_alpha_path_validation_scores_match_explicit_refits(global_random_seed):
    """validation_scores_[j] = MSE on the held-out rows of Ridge(alpha_j) fitted on the rest, and
    the final model = Ridge(alpha_) on all rows."""
    X, y = _data(global_random_seed, n=120)
    alphas = [1e-3, 1e-1, 10.0, 100.0]
    m = RandomFeatureRidge(alphas=alphas, validation_fraction=0.25, selection="holdout",
                           random_state=global_random_seed).fit(X, y)
    rng = np.random.default_rng(global_random_seed)
    perm = rng.permutation(len(X))
    va, tr = np.sort(perm[:30]), np.sort(perm[30:])
    for a, s in zip(alphas, m.validation_scores_, strict=True):
        r = Ridge(alpha=a).fit(X[tr], y[tr])
        assert s == pytest.approx(np.mean((r.predict(X[va]) - y[va]) ** 2), rel=1e-8)
    assert m.alpha_ == alphas[int(np.argmin(m.validation_scores_))]
    np.testing.assert_allclose(m.coef_, Ridge(alpha=m.alpha_).fit(X, y).coef_, rtol=1e-8)


@pytest.mark.parametrize("selection", ["loo", "holdout"])
@pytest.mark.parametrize("solver", ["lsqr", "cg", "pcg", "dual"])
def test_sparse_path_equals_dense_path(global_random_seed, solver, selection):
    """Binning features (CSR): LSQR / CG / PCG / dual solution = streaming normal equations
    (Cholesky); with leave-one-out, the dual eigendecomposition's curve (n x n) = the
    statistics' (D x D and a pass over the rows)."""
    X, y = _data(global_random_seed, n=150, d=3)
    rb = RandomBinningFeatures(8, sigma=2.0, random_state=global_random_seed)
    kw = dict(alphas=[1e-3, 1e-2, 1e-1], alpha_scale="mean", random_state=1, tol=1e-12,
              max_iter=20_000, selection=selection)
    it = RandomFeatureRidge(rb, solver=solver, **kw).fit(X, y)
    ch = RandomFeatureRidge(rb, solver="cholesky", **kw).fit(X, y)
    assert it.solver_ == solver and ch.solver_ == ("cholesky" if selection == "holdout"
                                                   else "eigh")
    assert it.alpha_ == ch.alpha_
    np.testing.assert_allclose(it.selection_curve_, ch.selection_curve_, rtol=1e-6)
    np.testing.assert_allclose(it.coef_, ch.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(it.predict(X), ch.predict(X), rtol=1e-6, atol=1e-8)


def test_auto_solver_picks_lsqr_for_sparse_and_cholesky_for_dense():
    X, y = _data(0, n=80, d=3)
    assert RandomFeatureRidge(RandomBinningFeatures(4, random_state=0), alphas=0.1
                              ).fit(X, y).solver_ == "lsqr"
    assert RandomFeatureRidge(RandomFourierFeatures(8, random_state=0), alphas=0.1
                              ).fit(X, y).solver_ == "cholesky"


def test_sparse_input_passthrough_equals_dense_input():
    X, y = _data(3, n=90, d=5)
    X[X < 0.3] = 0.0
    a = RandomFeatureRidge(alphas=0.01, solver="lsqr", tol=1e-12).fit(sp.csr_matrix(X), y)
    b = RandomFeatureRidge(alphas=0.01).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(a.predict(sp.csr_matrix(X)), b.predict(X), rtol=1e-7)


def test_classifier_binary_separable(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(300, 2))
    X[:, 0] += np.where(rng.random(300) < 0.5, -3, 3)  # two well-separated groups
    y = np.where(X[:, 0] > 0, "pos", "neg")
    clf = RandomFeatureRidgeClassifier(RandomFourierFeatures(100, sigma=2.0, random_state=0),
                                       random_state=global_random_seed).fit(X, y)
    assert list(clf.classes_) == ["neg", "pos"]
    # least squares on +-1 targets is not max-margin: a point next to x_0 = 0 or far out can
    # land on the wrong side (1 of 300 for a few seeds in 0-99), never more than 3 (all seeds)
    assert clf.score(X, y) >= 0.99
    s = clf.decision_function(X)
    assert s.shape == (300,)
    np.testing.assert_array_equal(clf.predict(X), np.where(s > 0, "pos", "neg"))
    assert clf.coef_.shape == (1, 100)


def test_classifier_multiclass_one_vs_rest(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    centres = np.array([[0, 6], [6, 0], [-6, -6]])
    lab = rng.integers(0, 3, size=300)
    X = centres[lab] + rng.normal(size=(300, 2))
    clf = RandomFeatureRidgeClassifier(random_state=0).fit(X, lab)
    assert clf.decision_function(X).shape == (300, 3) and clf.coef_.shape == (3, 2)
    # linear one-vs-rest least squares: an outlying point can be misclassified (at worst 1 of
    # 300 over seeds 0-99; with ties in the validation error rate broken toward the largest
    # alpha, 7 of those seeds scored 0.70-0.977)
    assert clf.score(X, lab) >= 0.99
    # one-vs-rest = three ridge regressions on ±1 targets with the same alpha
    for k in range(3):
        r = RandomFeatureRidge(alphas=clf.alpha_).fit(X, np.where(lab == k, 1.0, -1.0))
        np.testing.assert_allclose(clf.coef_[k], r.coef_, rtol=1e-8, atol=1e-12)


def test_float32_input_and_readonly_not_modified():
    X, y = _data(1, n=60)
    X32 = X.astype(np.float32)
    X32.setflags(write=False)
    before = X32.copy()
    m = RandomFeatureRidge(RandomFourierFeatures(16, random_state=0), alphas=0.1).fit(X32, y)
    np.testing.assert_array_equal(X32, before)
    assert m.predict(X32).dtype == np.float64


# ----------------------------------------------------------------------------- errors
def test_errors():
    X, y = _data(0, n=30)
    with pytest.raises(ValueError, match=r"alphas must all be finite and > 0, got \[0.1, -1\]"):
        RandomFeatureRidge(alphas=[0.1, -1]).fit(X, y)
    with pytest.raises(ValueError, match="non-empty"):
        RandomFeatureRidge(alphas=[]).fit(X, y)
    with pytest.raises(InvalidParameterError, match="validation_fraction"):
        RandomFeatureRidge(validation_fraction=1.5).fit(X, y)
    with pytest.raises(InvalidParameterError, match="features"):
        RandomFeatureRidge(features=np.eye(3)).fit(X, y)
    with pytest.raises(InvalidParameterError, match="solver"):
        RandomFeatureRidge(solver="qr").fit(X, y)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RandomFeatureRidge().fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        RandomFeatureRidge().fit(X, y[:-1])
    with pytest.raises(NotFittedError):
        RandomFeatureRidge().predict(X)
    m = RandomFeatureRidge(alphas=0.1).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but RandomFeatureRidge is expecting 4"):
        m.predict(X[:, :3])
    with pytest.raises(ValueError, match="at least 2 samples.*n_samples=1"):
        RandomFeatureRidge(alphas=[0.1, 1.0], selection="holdout").fit(X[:1], y[:1])
    for sel in ("loo", "gcv", "evidence"):
        with pytest.raises(ValueError, match=f"selection='{sel}' needs at least 2 samples"):
            RandomFeatureRidge(alphas=[0.1, 1.0], selection=sel).fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        RandomFeatureRidgeClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown label type"):
        RandomFeatureRidgeClassifier().fit(X, y)


def _split_breaks_weight_equivalence(estimator):
    # With a grid of alphas, every selection counts *rows*: leave-one-out leaves one copy of a
    # repeated row out (not the row of weight k), GCV and the evidence count the rows with a
    # positive weight, the hold-out split is over rows; so the chosen alpha may differ.  With
    # one alpha (no selection) the equivalence holds and the check runs (the single-alpha
    # estimators below).
    if np.size(estimator._check_alphas()) > 1:
        reason = "the selection of alpha counts rows: repeating a row is not weighting it"
        return {"check_sample_weight_equivalence_on_dense_data": reason,
                "check_sample_weight_equivalence_on_sparse_data": reason}
    # gram_dtype="auto" with a randfeat map and alpha = 1 is float32 statistics: a row of weight
    # k (scaled by sqrt(k) in float32) and k repeated rows round differently, here ~1e-6
    # relative on the sparse data, beyond the check's 1e-7 (the dense data's check passes); the
    # float64 estimator below runs both checks
    if estimator.gram_dtype != "float64" and isinstance(estimator.features,
                                                         RandomFourierFeatures):
        return {"check_sample_weight_equivalence_on_sparse_data":
                "float32 statistics: weighting and repeating a row round differently"}
    return {}


@parametrize_with_checks([RandomFeatureRidge(random_state=0),
                          RandomFeatureRidgeClassifier(random_state=0),
                          RandomFeatureRidge(RandomFourierFeatures(200, sigma=5.0, random_state=0),
                                             random_state=0),
                          RandomFeatureRidge(alphas=1.0),
                          RandomFeatureRidgeClassifier(alphas=1.0),
                          RandomFeatureRidge(RandomFourierFeatures(200, sigma=5.0, random_state=0),
                                             alphas=1.0),
                          RandomFeatureRidge(RandomFourierFeatures(200, sigma=5.0, random_state=0),
                                             alphas=1.0, gram_dtype="float64")],
                         expected_failed_checks=_split_breaks_weight_equivalence)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_ties_choose_the_largest_alpha():
    """A constant target gives identical validation errors for every alpha: pick the largest,
    whatever the order of the grid."""
    X, _ = _data(0, n=50)
    y = np.full(50, 2.0)
    for grid in ([1e-3, 1.0, 1e-1], [1.0, 1e-3], [1e-3, 1e-1, 1.0]):
        assert RandomFeatureRidge(alphas=grid, random_state=0).fit(X, y).alpha_ == 1.0


@pytest.mark.parametrize("chunk_size", [7, 4096])
def test_float32_gram_close_to_float64(global_random_seed, chunk_size):
    """gram_dtype="float32": each chunk's ZᵀZ in single precision, accumulated in float64.  The
    Gram entries carry a relative error ~chunk_size * 6e-8 (deterministic round-off, no
    statistics): with a moderate alpha (n alpha = 0.3, far above it) the solution agrees with
    the float64 one to ~1e-4; the default ("auto") takes the float32 path at this alpha (above
    its floor, randfeat.linear._precision) and the float64 one below it."""
    X, y = _data(global_random_seed, n=300, d=5)
    f = RandomFourierFeatures(128, sigma=2.0, random_state=global_random_seed)
    kw = dict(alphas=1e-3, alpha_scale="mean", chunk_size=chunk_size)
    a = RandomFeatureRidge(f, gram_dtype="float32", **kw).fit(X, y)
    b = RandomFeatureRidge(f, gram_dtype="float64", **kw).fit(X, y)
    c = RandomFeatureRidge(f, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    assert (a.gram_dtype_, b.gram_dtype_, c.gram_dtype_) == ("float32", "float64", "float32")
    low = dict(kw, alphas=1e-7)   # below "auto"'s floor (1.2e-6 per sample): float64
    c = RandomFeatureRidge(f, **low).fit(X, y)
    np.testing.assert_array_equal(RandomFeatureRidge(f, gram_dtype="float64", **low)
                                  .fit(X, y).coef_, c.coef_)
    assert c.gram_dtype_ == "float64"
    assert not np.array_equal(a.coef_, b.coef_)  # the float32 path is actually taken
    scale = np.linalg.norm(b.coef_)
    assert np.linalg.norm(a.coef_ - b.coef_) <= 1e-3 * scale
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-3 * np.std(y))
    # the alpha path (validation) uses the same Gram precision
    kw = dict(alphas=np.logspace(-3, 0, 4), alpha_scale="mean", chunk_size=chunk_size,
              random_state=0)
    a = RandomFeatureRidgeClassifier(f, gram_dtype="float32", **kw).fit(X, y > 0)
    b = RandomFeatureRidgeClassifier(f, gram_dtype="float64", **kw).fit(X, y > 0)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("make", [
    lambda s: RandomFourierFeatures(64, sigma=2.0, features="phase", random_state=s),
    lambda s: Fastfood(64, sigma=2.0, random_state=s),
    lambda s: StructuredOrthogonalFeatures(64, sigma=2.0, random_state=s),
])
@pytest.mark.parametrize("sparse", [False, True])
def test_float32_gram_featurises_in_float32(make, sparse):
    """With gram_dtype="float32" the fit featurises float64 input in float32 (the map's single
    precision path): the model is the same bits as a fit on the float32-cast input, dense or
    sparse, and the float64-featurised fit (gram_dtype="float64") differs only by rounding."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    X64 = sp.csr_matrix(X) if sparse else X
    X32 = X64.astype(np.float32)
    if sparse and not isinstance(make(0), RandomFourierFeatures):
        X64, X32 = X64.toarray(), X32.toarray()
    kw = dict(alphas=1e-2, chunk_size=64)
    a = RandomFeatureRidge(make(0), gram_dtype="float32", **kw).fit(X64, y)
    b = RandomFeatureRidge(make(0), gram_dtype="float32", **kw).fit(X32, y)
    c = RandomFeatureRidge(make(0), gram_dtype="float64", **kw).fit(X64, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert np.linalg.norm(a.coef_ - c.coef_) <= 1e-3 * np.linalg.norm(c.coef_)
    # predict featurises in the input's precision: float64 here
    np.testing.assert_allclose(a.predict(X64), c.predict(X64), atol=1e-3 * np.std(y))


def test_float32_gram_keeps_float64_beyond_float32_range():
    """Input too large for float32 is featurised in float64 (no overflow to inf)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[0, 0] = 1e300
    y = rng.normal(size=40)
    m = RandomFeatureRidge(RandomFourierFeatures(16, sigma=1.0, random_state=0),
                           gram_dtype="float32", alphas=1.0).fit(X, y)
    assert np.all(np.isfinite(m.coef_))


@pytest.mark.parametrize("make", [
    lambda s: RandomFourierFeatures(64, sigma=1.0, features="phase", random_state=s),
    lambda s: Fastfood(64, sigma=1.0, random_state=s),
    lambda s: StructuredOrthogonalFeatures(64, sigma=1.0, random_state=s),
])
def test_float32_gram_keeps_float64_when_phases_are_large(make):
    """float32 phases ωᵀx carry an error of about |ωᵀx|·6e-8: at |x| ~ 1e5 a float32
    featurisation is wrong by several percent.  The fit bounds max‖x‖·max‖ω‖ per chunk and
    keeps float64 above 2**10, so its model matches the float64-featurised fit to float32
    product rounding; small phases still go to float32 (the same bits as float32 input)."""
    from randfeat.linear._features import F32_PHASE_LIMIT as _F32_PHASE_LIMIT
    from randfeat.linear._features import max_frequency_norm as _max_frequency_norm
    from randfeat.linear._features import phase_bound as _phase_bound
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 6))
    y = rng.normal(size=200)
    m = RandomFeatureRidge(make(0), gram_dtype="float32", alphas=1.0).fit(X, y)
    f = m.features_
    # the bound is a bound: it covers every phase of these rows, also 1e5-scaled ones
    for scale in (1.0, 1e5):
        P = np.abs(X * scale @ f.frequencies_.T if isinstance(f, RandomFourierFeatures)
                   else f._project(X * scale))
        assert P.max() <= _phase_bound(f, X * scale) * (1 + 1e-12)
    assert _phase_bound(f, X) <= _F32_PHASE_LIMIT < _phase_bound(f, 1e5 * X)
    assert m._chunk_features(X).dtype == np.float32
    assert m._chunk_features(1e5 * X).dtype == np.float64
    assert _max_frequency_norm(f) > 0
    Xb = 1e5 * X
    a = RandomFeatureRidge(make(0), gram_dtype="float32", alphas=1.0).fit(Xb, y)
    c = RandomFeatureRidge(make(0), gram_dtype="float64", alphas=1.0).fit(Xb, y)
    wrong = RandomFeatureRidge(make(0), gram_dtype="float32", alphas=1.0).fit(
        Xb.astype(np.float32), y)
    err = np.linalg.norm(a.coef_ - c.coef_) / np.linalg.norm(c.coef_)
    err32 = np.linalg.norm(wrong.coef_ - c.coef_) / np.linalg.norm(c.coef_)
    assert err < 1e-4 < 1e-2 < err32


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_repeated_rows_are_merged_exactly(monkeypatch, sparse, weighted):
    """Repeated input rows are merged before featurisation (their weight summed, their targets
    averaged): the statistics equal those of the unmerged rows to rounding, y_sq_sum_ and
    n_samples_ exactly; the fitted model too.  A degenerate hash (every row collides) is
    caught by the exact verification, so distinct rows are never merged."""
    import randfeat.linear._features as L
    import randfeat.linear._fit as F

    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, size=(40, 5)).astype(float)
    X = base[rng.integers(0, 40, size=600)]           # ~600 rows, at most 32 distinct
    y = X @ rng.normal(size=5) + 0.1 * rng.normal(size=600)
    w = rng.uniform(0.5, 2.0, size=600) if weighted else None
    Xi = sp.csr_matrix(X) if sparse else X
    Y = y[:, None]
    f = RandomFourierFeatures(64, sigma=1.5, random_state=0).fit(X)
    m = RandomFeatureRidge(f, alphas=1e-3, chunk_size=128, gram_dtype="float64")
    merged = L.merge_duplicate_rows(Xi, Y, None, w)
    assert merged is not None and len(merged[0]) <= 32
    np.testing.assert_allclose(merged[2].sum(), 600 if w is None else w.sum(), rtol=1e-14)
    a, _ = _accumulate(m, f, Xi, Y, w)
    monkeypatch.setattr(L, "MERGE_MAX_DISTINCT", 0.0)        # merging off
    b, _ = _accumulate(m, f, Xi, Y, w)
    assert L.merge_duplicate_rows(Xi, Y, None, w) is None
    for name in ("gram_", "zty_", "z_sum_", "y_sum_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.y_sq_sum_, b.y_sq_sum_, rtol=1e-14)
    assert a.n_samples_ == b.n_samples_ == 600
    np.testing.assert_allclose(a.weight_sum_, b.weight_sum_, rtol=1e-14)
    coef, icpt = a.solve(1e-3)
    np.testing.assert_allclose(a.rss(coef, icpt), b.rss(coef, icpt), rtol=1e-9)
    monkeypatch.setattr(L, "MERGE_MAX_DISTINCT", 0.9)
    p1 = RandomFeatureRidge(f, alphas=1e-3, gram_dtype="float64").fit(
        Xi, y, sample_weight=w).predict(Xi)
    monkeypatch.setattr(L, "MERGE_MAX_DISTINCT", 0.0)
    p0 = RandomFeatureRidge(f, alphas=1e-3, gram_dtype="float64").fit(
        Xi, y, sample_weight=w).predict(Xi)
    np.testing.assert_allclose(p1, p0, rtol=1e-8, atol=1e-8)
    # every row hashes alike: the exact verification splits the collided rows off again (each
    # a group of its own), so the statistics are still those of the rows
    monkeypatch.setattr(L, "MERGE_MAX_DISTINCT", 0.95)
    real = L.merge_duplicate_rows
    seen = []

    def degenerate(X_, Y_, rows_, w_):
        out = real(X_, Y_, rows_, w_, R=np.zeros((X_.shape[1], 2)))
        seen.append(out)
        return out

    monkeypatch.setattr(F, "merge_duplicate_rows", degenerate)
    c, _ = _accumulate(m, f, Xi, Y, w)
    assert seen[0] is not None and {tuple(X[i]) for i in seen[0][0]} == {tuple(r) for r in X}
    for name in ("gram_", "zty_", "z_sum_", "y_sum_", "y_sq_sum_"):
        np.testing.assert_allclose(getattr(c, name), getattr(b, name), rtol=1e-12, atol=1e-12)


def _accumulate(model, feats, X, Y, w=None):
    """The statistics of all rows of X as a fit accumulates them (its in-memory source)."""
    from randfeat.linear._fit import InMemoryRows, working_copy
    work = working_copy(model)
    work.__dict__.update(features_=feats, n_features_out_=feats._n_features_out)
    return InMemoryRows(work, X, Y, w).statistics()


def test_rows_without_repeats_are_not_merged():
    """Distinct rows (or fewer than 10 % repeats) go through unchanged."""
    import randfeat.linear._features as L

    X = np.random.default_rng(1).normal(size=(300, 4))
    assert L.merge_duplicate_rows(X, np.zeros((300, 1)), None, None) is None
    X[:20] = X[20:40]                                   # 20 repeats of 300: below 10 %
    assert L.merge_duplicate_rows(X, np.zeros((300, 1)), None, None) is None


def test_classifier_breaks_error_rate_ties_by_squared_error():
    """Separable blobs: many alphas of the grid reach 0 validation errors.  The old tie rule
    (the largest alpha) picked 1e5 and the one-vs-rest scores shrank to 0.70 training accuracy
    (this data, seed 73); the squared error on the ±1 targets now breaks the tie."""
    rng = np.random.default_rng(73)
    centres = np.array([[0, 6], [6, 0], [-6, -6]])
    lab = rng.integers(0, 3, size=300)
    X = centres[lab] + rng.normal(size=(300, 2))
    clf = RandomFeatureRidgeClassifier(random_state=0, selection="holdout").fit(X, lab)
    assert clf.score(X, lab) >= 0.99
    assert clf.alpha_ < clf.alphas_.max()
    errs = np.floor(clf.validation_scores_ * 60 + 0.5) / 60  # 60 validation rows
    assert np.all(np.abs(clf.validation_scores_ - errs) < 1e-9)  # error rates + tie-break < 1e-9
    assert np.sum(errs == errs.min()) > 1  # a real tie in the error rate


def test_gram_dtype_validated():
    X, y = _data(0, n=30)
    with pytest.raises(InvalidParameterError, match="gram_dtype"):
        RandomFeatureRidge(gram_dtype="float16").fit(X, y)


@pytest.mark.parametrize("features", ["rff", "fastfood", "passthrough"])
@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
def test_same_model_for_every_n_threads(global_random_seed, features, gram_dtype):
    """n_threads is the feature map's compiled kernels' threads only; the BLAS calls (syrk, gemm,
    potrf) have the same shapes whatever it is: the fitted model and the predictions are
    bit-identical for any thread count, and the user's feature map is left as it was."""
    from randfeat import Fastfood
    X, y = _data(global_random_seed, n=700, d=6, k=2)
    f = {"rff": RandomFourierFeatures(96, sigma=2.0, random_state=global_random_seed,
                                      n_threads=3),
         "fastfood": Fastfood(64, sigma=2.0, random_state=global_random_seed),
         "passthrough": "passthrough"}[features]
    kw = dict(alphas=np.logspace(-6, 0, 7), chunk_size=61, random_state=global_random_seed,
              gram_dtype=gram_dtype)
    fits = [RandomFeatureRidge(f, n_threads=t, **kw).fit(X, y) for t in (1, 2, 3, None)]
    for m in fits[1:]:
        assert m.alpha_ == fits[0].alpha_
        np.testing.assert_array_equal(m.selection_curve_, fits[0].selection_curve_)
        np.testing.assert_array_equal(m.coef_, fits[0].coef_)
        np.testing.assert_array_equal(m.intercept_, fits[0].intercept_)
        np.testing.assert_array_equal(m.predict(X), fits[0].predict(X))
    if features == "rff":
        assert fits[1].features_.n_threads == 3  # the working copies do not touch it
    clf = [RandomFeatureRidgeClassifier(f, n_threads=t, **kw).fit(X, y[:, 0] > 0)
           for t in (1, 2)]
    np.testing.assert_array_equal(clf[0].decision_function(X), clf[1].decision_function(X))


_BLAS_SEEN = []


class _BlasProbe:
    """Identity feature map recording (in ``_BLAS_SEEN``: clone deep-copies parameters) the
    BLAS thread counts seen while the learner runs."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        from threadpoolctl import threadpool_info
        _BLAS_SEEN.append(tuple(p["num_threads"] for p in threadpool_info()
                                if p["user_api"] == "blas"))
        return np.asarray(X)


def test_fit_and_predict_leave_the_blas_threads_alone():
    """House rule (issue 11): the learners never change the process's BLAS thread count; the
    user's threadpoolctl limit holds inside fit (every chunk, both passes of the alpha path)
    and predict.  The probe would see 1 under the former ``blas_limit(1)`` blocks."""
    from threadpoolctl import threadpool_limits
    X, y = _data(0, n=300)
    _BLAS_SEEN.clear()
    with threadpool_limits(limits=2, user_api="blas"):
        m = RandomFeatureRidge(_BlasProbe(), alphas=[1e-3, 1e-1], chunk_size=50,
                               random_state=0, n_threads=1).fit(X, y)
        m.predict(X)
    seen = list(_BLAS_SEEN)
    assert len(seen) >= 7 and all(n == 2 for s in seen for n in s), seen


def test_blas_probe_can_fail(monkeypatch):
    """The probe above sees a learner that limits BLAS around its work (the former behaviour,
    put back through the ``_transform`` seam)."""
    from threadpoolctl import threadpool_limits

    from randfeat.linear._ridge import _RandomFeatureRidgeBase
    orig = _RandomFeatureRidgeBase._transform

    def limited(self, X, feats=None):
        with threadpool_limits(limits=1, user_api="blas"):
            return orig(self, X, feats)

    monkeypatch.setattr(_RandomFeatureRidgeBase, "_transform", limited)
    X, y = _data(0, n=300)
    _BLAS_SEEN.clear()
    with threadpool_limits(limits=2, user_api="blas"):
        RandomFeatureRidge(_BlasProbe(), alphas=1e-3, chunk_size=50).fit(X, y)
    assert _BLAS_SEEN and all(n == 1 for s in _BLAS_SEEN for n in s)


def test_n_threads_validated():
    X, y = _data(0, n=30)
    for bad in (0, 1.5, "2"):
        with pytest.raises(InvalidParameterError, match="n_threads"):
            RandomFeatureRidge(n_threads=bad).fit(X, y)


# ----------------------------------------------------------------------------- RidgeStatistics
@pytest.mark.parametrize("solver", ["cholesky", "lsqr", "cg", "pcg"])
@pytest.mark.parametrize("k", [None, 2])
def test_sample_weight_equals_sklearn_ridge(global_random_seed, solver, k):
    """fit(X, y, sample_weight) = scikit-learn's Ridge(alpha).fit(Z, y, sample_weight) on the same
    features: 1e-8 for the direct solve (two Cholesky solves of one system), 1e-6 for LSQR / CG
    / PCG at tol=1e-12 (Krylov stopping error).  Zero weights drop rows exactly."""
    X, y = _data(global_random_seed, n=240, d=4, k=k)
    rng = np.random.default_rng(global_random_seed + 7)
    w = rng.uniform(0.0, 3.0, size=len(X))
    w[::9] = 0.0
    rff = RandomFourierFeatures(40, sigma=2.0, random_state=global_random_seed).fit(X)
    Z = rff.transform(X)
    tol = 1e-8 if solver == "cholesky" else 1e-6
    ours = RandomFeatureRidge(clone(rff), alphas=0.3, solver=solver, tol=1e-12,
                              max_iter=50_000, gram_dtype="float64").fit(X, y, sample_weight=w)
    ref = Ridge(alpha=0.3, solver="cholesky").fit(Z, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=tol, atol=tol)
    keep = w > 0
    dropped = RandomFeatureRidge(clone(rff), alphas=0.3, gram_dtype="float64").fit(
        X[keep], y[keep], sample_weight=w[keep])
    np.testing.assert_allclose(ours.coef_, dropped.coef_, rtol=tol, atol=tol)


@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 4.0, 2: 0.5}, None])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_class_weight_equals_sklearn_ridge_classifier(global_random_seed, class_weight,
                                                      n_classes):
    """class_weight ("balanced" or a dict) times sample_weight, as scikit-learn's
    RidgeClassifier on the same features: coefficients equal to 1e-8 (two Cholesky solves)."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(300, 3))
    lab = np.minimum(rng.geometric(0.5, size=300) - 1, n_classes - 1)  # unbalanced classes
    if isinstance(class_weight, dict) and n_classes == 2:
        class_weight = {0: 1.0, 1: 4.0}
    sw = rng.uniform(0.5, 2.0, size=300)
    rff = RandomFourierFeatures(32, sigma=1.5, random_state=global_random_seed).fit(X)
    ours = RandomFeatureRidgeClassifier(clone(rff), alphas=2.0, class_weight=class_weight,
                                        gram_dtype="float64").fit(X, lab, sample_weight=sw)
    ref = RidgeClassifier(alpha=2.0, class_weight=class_weight, solver="cholesky").fit(
        rff.transform(X), lab, sample_weight=sw)
    # (binary: scikit-learn's coef_ is (D,) or (1, D) depending on version; compare flat)
    np.testing.assert_allclose(ours.coef_.ravel(), np.ravel(ref.coef_), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.ravel(ours.intercept_), np.ravel(ref.intercept_), rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(rff.transform(X)))


def test_class_weight_changes_the_model_and_is_validated():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] + 0.8 * rng.normal(size=200) > 1.0).astype(int)  # about 1 positive in 5
    plain = RandomFeatureRidgeClassifier(alphas=1.0).fit(X, y)
    bal = RandomFeatureRidgeClassifier(alphas=1.0, class_weight="balanced").fit(X, y)
    assert bal.predict(X).mean() > plain.predict(X).mean()  # balanced predicts more positives
    with pytest.raises(ValueError, match=r"class_weight names classes that are not in y: \[7\]"):
        RandomFeatureRidgeClassifier(alphas=1.0, class_weight={0: 1.0, 7: 2.0}).fit(X, y)
    with pytest.raises(InvalidParameterError, match="class_weight"):
        RandomFeatureRidgeClassifier(class_weight="auto").fit(X, y)
    with pytest.raises(ValueError, match="zero for every sample"):
        RandomFeatureRidge(alphas=1.0).fit(X, X[:, 1], sample_weight=np.zeros(200))
    with pytest.raises(ValueError, match=r"sample_weight must be >= 0"):
        RandomFeatureRidge(alphas=1.0).fit(X, X[:, 1], sample_weight=-np.ones(200))
    perm = np.random.default_rng(0).permutation(200)
    w = np.zeros(200)
    w[perm[40:]] = 1.0  # the 40 validation rows of random_state=0 all have weight 0
    with pytest.raises(ValueError, match="validation part of the split .* only zero sample"):
        RandomFeatureRidge(alphas=[0.1, 1.0], random_state=0, selection="holdout").fit(
            X, X[:, 1], sample_weight=w)


def test_alphas_use_sklearn_scale_on_adult():
    """Issue 16: alphas=[1.0] on Adult gave a model predicting one class (the penalty was per
    sample, n * 1.0); in scikit-learn's scale it is RidgeClassifier(alpha=1.0) on the same
    features (same predictions; about 15 % test error)."""
    import os

    from randfeat.datasets import load_adult
    if not os.environ.get("RANDFEAT_DATA"):
        pytest.skip("RANDFEAT_DATA is not set (the Adult files are read from it)")
    d = load_adult()
    tr, te = ~d.is_test, d.is_test
    X = d.X.toarray()
    rff = RandomFourierFeatures(500, sigma=4.0, random_state=0).fit(X[tr])
    ours = RandomFeatureRidgeClassifier(clone(rff), alphas=[1.0]).fit(X[tr], d.y[tr])
    ref = RidgeClassifier(alpha=1.0, solver="cholesky").fit(rff.transform(X[tr]), d.y[tr])
    pred = ours.predict(X[te])
    assert np.mean(pred != ref.predict(rff.transform(X[te]))) < 1e-3
    err = np.mean(pred != d.y[te])
    assert 0.10 < err < 0.20 and len(np.unique(pred)) == 2
    # the per-sample scale is still there by name, and with alpha = 1 it is the one-class model
    mean = RandomFeatureRidgeClassifier(clone(rff), alphas=[1.0], alpha_scale="mean").fit(
        X[tr], d.y[tr])
    assert np.mean(mean.predict(X[te]) == mean.predict(X[te])[0]) > 0.99


def test_alpha_at_grid_edge_warns():
    X, y = _data(0, n=200, d=3)
    f = RandomFourierFeatures(64, sigma=2.0, random_state=0)
    with pytest.warns(AlphaAtGridEdgeWarning, match="largest of the grid"):
        RandomFeatureRidge(f, alphas=[1e-9, 1e-8, 1e-7], random_state=0).fit(X, np.zeros(200))
    with pytest.warns(AlphaAtGridEdgeWarning, match="smallest of the grid"):
        RandomFeatureRidge(f, alphas=[1e3, 1e4, 1e5], random_state=0).fit(X, y)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", AlphaAtGridEdgeWarning)
        m = RandomFeatureRidge(f, alphas=np.logspace(-6, 6, 13), random_state=0).fit(X, y)
        assert m.alphas_.min() < m.alpha_ < m.alphas_.max()
        RandomFeatureRidge(f, alphas=1.0).fit(X, y)  # no grid, no warning


def test_learners_take_every_random_state_and_the_transformers_n_threads_rule(global_random_seed):
    X, y = _data(global_random_seed, n=80, d=3)
    kw = dict(alphas=[0.1, 1.0, 10.0])
    ref = RandomFeatureRidge(random_state=global_random_seed, **kw).fit(X, y)
    for rs in (np.random.default_rng(global_random_seed), np.random.SeedSequence(3),
               np.random.PCG64(3), np.random.RandomState(3), None):
        m = RandomFeatureRidge(random_state=rs, **kw).fit(X, y)
        assert m.coef_.shape == ref.coef_.shape
        RandomFeatureRidgeClassifier(random_state=rs, **kw).fit(X, y > 0)
    same = RandomFeatureRidge(random_state=global_random_seed, **kw).fit(X, y)
    np.testing.assert_array_equal(same.coef_, ref.coef_)
    # n_threads=0: the same error type as the transformers'
    with pytest.raises(InvalidParameterError, match="n_threads") as ours:
        RandomFeatureRidge(n_threads=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="n_threads") as theirs:
        RandomFourierFeatures(8, n_threads=0).fit(X)
    assert type(ours.value) is type(theirs.value)
    with pytest.raises(TypeError):
        RandomFeatureRidge("passthrough", [1.0])  # keyword-only after features
    with pytest.raises(TypeError):
        RandomFeatureRidgeClassifier("passthrough", [1.0])


@pytest.mark.parametrize("features", ["passthrough", "identity"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
def test_weighted_fit_never_modifies_the_input(features, dtype, gram_dtype):
    """The weighted accumulation scales a chunk's features by sqrt(w) in place only when the
    chunk is the fit's own (randfeat's maps); "passthrough" and a transformer that returns its
    input hand over views of X, which stay untouched."""
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 5)).astype(dtype)
    X0 = X.copy()
    y = rng.normal(size=100)
    w = rng.uniform(0.5, 2.0, size=100)
    f = "passthrough" if features == "passthrough" else FunctionTransformer()
    RandomFeatureRidge(f, alphas=1.0, gram_dtype=gram_dtype).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(X, X0)


# ------------------------------------------------------------------- solver="pcg" (issue 17)
