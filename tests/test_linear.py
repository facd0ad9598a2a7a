"""Tests of randfeat.linear: exactness against scikit-learn's Ridge, streaming, the alpha path,
the sparse (LSQR/CG) path, classification, and input errors.  Deterministic algebra only: every
comparison is between two solutions of the same linear system (tolerances are round-off /
solver tolerances, not statistical)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomBinningFeatures, RandomFourierFeatures
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier


def _data(seed, n=200, d=4, k=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=(d,) if k is None else (d, k))
    return X, X @ w + 0.1 * rng.normal(size=(n,) if k is None else (n, k))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("k", [None, 3])
def test_equals_sklearn_ridge_on_explicit_features(global_random_seed, fit_intercept, k):
    X, y = _data(global_random_seed, k=k)
    rff = RandomFourierFeatures(64, sigma=2.0, random_state=global_random_seed).fit(X)
    Z = rff.transform(X)
    alpha = 1e-3
    ours = RandomFeatureRidge(clone(rff), alphas=alpha, fit_intercept=fit_intercept).fit(X, y)
    ref = Ridge(alpha=alpha * len(X), fit_intercept=fit_intercept, solver="cholesky").fit(Z, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.predict(X), ref.predict(Z), rtol=1e-7, atol=1e-9)
    assert ours.features_ is not ours.get_params()["features"]  # cloned inside fit
    assert ours.n_features_out_ == 64 and ours.solver_ == "cholesky"


def test_passthrough_is_plain_ridge(global_random_seed):
    X, y = _data(global_random_seed)
    ours = RandomFeatureRidge(alphas=0.01).fit(X, y)
    ref = Ridge(alpha=0.01 * len(X)).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-9)


@pytest.mark.parametrize("chunk_size", [1, 7, 64])
def test_streaming_equals_single_chunk(global_random_seed, chunk_size):
    X, y = _data(global_random_seed, n=150)
    f = RandomFourierFeatures(32, sigma=1.5, random_state=0)
    kw = dict(alphas=np.logspace(-6, 0, 5), random_state=global_random_seed)
    a = RandomFeatureRidge(f, chunk_size=chunk_size, **kw).fit(X, y)
    b = RandomFeatureRidge(f, chunk_size=10_000, **kw).fit(X, y)
    assert a.alpha_ == b.alpha_
    np.testing.assert_allclose(a.validation_scores_, b.validation_scores_, rtol=1e-8)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)


def test_alpha_path_validation_scores_match_explicit_refits(global_random_seed):
    """validation_scores_[j] = MSE on the held-out rows of Ridge(alpha_j) fitted on the rest, and
    the final model = Ridge(alpha_) on all rows."""
    X, y = _data(global_random_seed, n=120)
    alphas = [1e-5, 1e-3, 1e-1, 1.0]
    m = RandomFeatureRidge(alphas=alphas, validation_fraction=0.25,
                           random_state=global_random_seed).fit(X, y)
    rng = np.random.default_rng(global_random_seed)
    perm = rng.permutation(len(X))
    va, tr = np.sort(perm[:30]), np.sort(perm[30:])
    for a, s in zip(alphas, m.validation_scores_, strict=True):
        r = Ridge(alpha=a * len(tr)).fit(X[tr], y[tr])
        assert s == pytest.approx(np.mean((r.predict(X[va]) - y[va]) ** 2), rel=1e-8)
    assert m.alpha_ == alphas[int(np.argmin(m.validation_scores_))]
    np.testing.assert_allclose(m.coef_, Ridge(alpha=m.alpha_ * len(X)).fit(X, y).coef_,
                               rtol=1e-8)


@pytest.mark.parametrize("solver", ["lsqr", "cg"])
def test_sparse_path_equals_dense_path(global_random_seed, solver):
    """Binning features (CSR): LSQR / CG solution = streaming normal equations (Cholesky)."""
    X, y = _data(global_random_seed, n=150, d=3)
    rb = RandomBinningFeatures(8, sigma=2.0, random_state=global_random_seed)
    kw = dict(alphas=[1e-3, 1e-2, 1e-1], random_state=1, tol=1e-12, max_iter=20_000)
    it = RandomFeatureRidge(rb, solver=solver, **kw).fit(X, y)
    ch = RandomFeatureRidge(rb, solver="cholesky", **kw).fit(X, y)
    assert it.solver_ == solver and ch.solver_ == "cholesky"
    assert it.alpha_ == ch.alpha_
    np.testing.assert_allclose(it.validation_scores_, ch.validation_scores_, rtol=1e-6)
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
    # linear one-vs-rest least squares: an outlying point can be misclassified (1 of 300 for
    # one seed in 0-99)
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
    with pytest.raises(ValueError, match=r"alphas must all be finite and > 0 .* got \[0.1, -1\]"):
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
    with pytest.raises(ValueError, match="at least 2 samples"):
        RandomFeatureRidge(alphas=[0.1, 1.0]).fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        RandomFeatureRidgeClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown label type"):
        RandomFeatureRidgeClassifier().fit(X, y)


@parametrize_with_checks([RandomFeatureRidge(random_state=0),
                          RandomFeatureRidgeClassifier(random_state=0),
                          RandomFeatureRidge(RandomFourierFeatures(200, sigma=5.0, random_state=0),
                                             random_state=0)])
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
    the float64 one to ~1e-4, and the default path is the float64 one."""
    X, y = _data(global_random_seed, n=300, d=5)
    f = RandomFourierFeatures(128, sigma=2.0, random_state=global_random_seed)
    kw = dict(alphas=1e-3, chunk_size=chunk_size)
    a = RandomFeatureRidge(f, gram_dtype="float32", **kw).fit(X, y)
    b = RandomFeatureRidge(f, gram_dtype="float64", **kw).fit(X, y)
    c = RandomFeatureRidge(f, **kw).fit(X, y)
    np.testing.assert_array_equal(b.coef_, c.coef_)
    assert not np.array_equal(a.coef_, b.coef_)  # the float32 path is actually taken
    scale = np.linalg.norm(b.coef_)
    assert np.linalg.norm(a.coef_ - b.coef_) <= 1e-3 * scale
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-3 * np.std(y))
    # the alpha path (validation) uses the same Gram precision
    kw = dict(alphas=np.logspace(-3, 0, 4), chunk_size=chunk_size, random_state=0)
    a = RandomFeatureRidgeClassifier(f, gram_dtype="float32", **kw).fit(X, y > 0)
    b = RandomFeatureRidgeClassifier(f, **kw).fit(X, y > 0)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-3)


def test_gram_dtype_validated():
    X, y = _data(0, n=30)
    with pytest.raises(InvalidParameterError, match="gram_dtype"):
        RandomFeatureRidge(gram_dtype="float16").fit(X, y)


@pytest.mark.parametrize("features", ["rff", "fastfood", "passthrough"])
@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
def test_same_model_for_every_n_threads(global_random_seed, features, gram_dtype):
    """n_threads spreads chunks and alphas over threads (BLAS single-threaded in each) and sums
    the chunk statistics in chunk order: the fitted model and the predictions are bit-identical
    for any thread count, and the user's feature map is left as it was."""
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
        np.testing.assert_array_equal(m.validation_scores_, fits[0].validation_scores_)
        np.testing.assert_array_equal(m.coef_, fits[0].coef_)
        np.testing.assert_array_equal(m.intercept_, fits[0].intercept_)
        np.testing.assert_array_equal(m.predict(X), fits[0].predict(X))
    if features == "rff":
        assert fits[1].features_.n_threads == 3  # the worker copies do not touch it
    clf = [RandomFeatureRidgeClassifier(f, n_threads=t, **kw).fit(X, y[:, 0] > 0)
           for t in (1, 2)]
    np.testing.assert_array_equal(clf[0].decision_function(X), clf[1].decision_function(X))


def test_n_threads_validated():
    X, y = _data(0, n=30)
    for bad in (0, 1.5, "2"):
        with pytest.raises(InvalidParameterError, match="n_threads"):
            RandomFeatureRidge(n_threads=bad).fit(X, y)
