"""Tests of randfeat.linear.RidgeStatistics: the streaming, mergeable sufficient statistics
(accumulation by chunks and float32 panels, merge associativity, the solve against scikit-learn's
Ridge, pickling, errors).  Deterministic algebra only (round-off tolerances)."""



import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import Ridge

from randfeat import (
    RandomFourierFeatures,
)
from randfeat.linear import (
    RandomFeatureRidge,
    RidgeStatistics,
)


def _data(seed, n=200, d=4, k=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=(d,) if k is None else (d, k))
    return X, X @ w + 0.1 * rng.normal(size=(n,) if k is None else (n, k))


def _parts(Z, Y, w, cuts):
    """RidgeStatistics of consecutive row blocks of (Z, Y, w) cut at ``cuts``."""
    edges = [0, *cuts, len(Z)]
    return [RidgeStatistics().partial_fit(Z[a:b], Y[a:b], None if w is None else w[a:b])
            for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _fields(st):
    return [st.gram_, st.zty_, st.z_sum_, st.y_sum_, st.y_sq_sum_,
            np.array([st.weight_sum_, st.n_samples_])]


def _assert_same(a, b):
    for x, y in zip(_fields(a), _fields(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("weighted", [False, True])
def test_ridge_statistics_merge_is_exactly_associative_on_exact_sums(weighted):
    """Small integers and square integer weights (the Gram is formed from sqrt(w) z): every
    float64 product and sum is exact, so any tree of merges must
    give exactly the statistics of one pass (a term dropped or doubled by merge shows here)."""
    rng = np.random.default_rng(0)
    Z = rng.integers(-3, 4, size=(90, 6)).astype(float)
    Y = rng.integers(-5, 6, size=(90, 2)).astype(float)
    w = rng.integers(0, 4, size=90).astype(float) ** 2 if weighted else None
    whole = RidgeStatistics().partial_fit(Z, Y, w)
    a, b, c = _parts(Z, Y, w, [20, 55])
    left, right = a.merge(b).merge(c), a.merge(b.merge(c))
    _assert_same(left, whole)
    _assert_same(right, whole)
    _assert_same(c.merge(a).merge(b), whole)  # commutative too
    acc = RidgeStatistics()  # in place, starting from empty statistics
    for p in (a, b, c):
        acc += p
    _assert_same(acc, whole)
    _assert_same(a + b + c, whole)
    assert whole.n_samples_ == 90 and whole.weight_sum_ == (90 if w is None else w.sum())
    # merge leaves its operands alone
    _assert_same(a, _parts(Z, Y, w, [20, 55])[0])


def test_ridge_statistics_merge_associative_to_rounding(global_random_seed):
    """Float data: a tree of merges equals the one-pass statistics to float64 summation error
    (relative 1e-12 here: at most ~n * 2^-53 for n = 300 rows) and the solutions agree."""
    rng = np.random.default_rng(global_random_seed)
    Z, Y = rng.normal(size=(300, 8)), rng.normal(size=(300, 3))
    w = rng.uniform(0, 2, size=300)
    whole = RidgeStatistics().partial_fit(Z, Y, w)
    p = _parts(Z, Y, w, [37, 150, 151, 299])
    for st in (((p[0] + p[1]) + (p[2] + p[3])) + p[4], p[0] + (p[1] + (p[2] + (p[3] + p[4])))):
        for x, y in zip(_fields(st), _fields(whole), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * np.abs(y).max())
        np.testing.assert_allclose(st.solve(0.5)[0], whole.solve(0.5)[0], rtol=1e-10)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k", [None, 3])
def test_ridge_statistics_solve_equals_sklearn_ridge(global_random_seed, fit_intercept,
                                                     weighted, k):
    """solve(alpha) is scikit-learn's Ridge(alpha) (summed, weighted squared errors + alpha
    ||w||^2) on the same rows, streamed in blocks: equal to 1e-8 (round-off of two Cholesky
    solves of the same well-conditioned system)."""
    X, y = _data(global_random_seed, n=250, d=7, k=k)
    rng = np.random.default_rng(global_random_seed + 1)
    w = rng.uniform(0.1, 3.0, size=len(X)) if weighted else None
    st = RidgeStatistics()
    for a in range(0, len(X), 60):
        st.partial_fit(X[a:a + 60], y[a:a + 60], None if w is None else w[a:a + 60])
    for alpha in (1e-3, 1.0, 50.0):
        coef, intercept = st.solve(alpha, fit_intercept=fit_intercept)
        ref = Ridge(alpha=alpha, fit_intercept=fit_intercept, solver="cholesky").fit(
            X, y, sample_weight=w)
        np.testing.assert_allclose(coef, np.reshape(ref.coef_, coef.shape), rtol=1e-8,
                                   atol=1e-10)
        ref_b = np.broadcast_to(ref.intercept_, intercept.shape)  # 0.0 without an intercept
        np.testing.assert_allclose(intercept, ref_b, rtol=1e-8, atol=1e-10)
        Y2 = y.reshape(len(y), -1)
        resid = Y2 - (X @ coef.T + intercept)
        ww = np.ones(len(X)) if w is None else w
        np.testing.assert_allclose(st.rss(coef, intercept), ww @ resid ** 2, rtol=1e-8)


def test_ridge_statistics_path_methods_and_threads(global_random_seed):
    """The alpha path: one Cholesky per alpha = one eigendecomposition for all (to 1e-8), and
    solve(alpha) is the path's solution for that alpha; alpha = 0 with more features than rows
    (singular A) falls back to the eigen-solution instead of failing."""
    rng = np.random.default_rng(global_random_seed)
    Z, y = rng.normal(size=(200, 20)), rng.normal(size=200)
    st = RidgeStatistics().partial_fit(Z, y)
    alphas = np.logspace(-4, 2, 7)
    Wc, bc = st.solve_path(alphas)
    We, be = st.solve_path(alphas, method="eigh")
    np.testing.assert_allclose(Wc, We, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(bc, be, rtol=1e-8, atol=1e-12)
    assert Wc.shape == (7, 1, 20) and bc.shape == (7, 1)
    for j, a in enumerate(alphas):
        np.testing.assert_array_equal(st.solve(a)[0], Wc[j])
    wide = RidgeStatistics().partial_fit(Z[:5], y[:5])
    coef, intercept = wide.solve(0.0)
    assert np.all(np.isfinite(coef))
    np.testing.assert_allclose(Z[:5] @ coef[0] + intercept[0], y[:5], atol=1e-8)  # interpolates


@pytest.mark.parametrize("D, n, panel", [(1, 5, 512), (7, 0, 3), (37, 50, 8), (64, 9, 64),
                                         (300, 40, 128), (600, 33, 512)])
def test_float32_gram_panels(D, n, panel):
    """syrk_f32_into: the chunk's lower-triangle ZᵀZ by float32 panels (ssyrk + sgemm) added to
    a float64 Gram; the upper triangle is never written, and the result is the float64 product
    to float32 rounding (each entry a float32 sum of n products)."""
    from randfeat._lib import _gram
    rng = np.random.default_rng(D + n)
    Z = rng.normal(size=(n, D)).astype(np.float32)
    G = np.zeros((D, D), order="F")
    G[np.tril_indices(D)] = 1.0
    ws = np.full((D, panel), np.nan, dtype=np.float32, order="F")
    _gram.syrk_f32_into(Z, G, ws)
    Z64 = Z.astype(np.float64)
    ref = np.tril(Z64.T @ Z64 + 1.0)
    bound = np.tril(np.abs(Z64).T @ np.abs(Z64)) * max(n, 1) * 2.0 ** -24 + 1e-15
    assert np.all(np.abs(G - ref) <= bound)
    assert not np.triu(G, 1).any()
    with pytest.raises(ValueError, match="syrk_f32_into"):
        _gram.syrk_f32_into(Z, np.zeros((D + 1, D + 1), order="F"), ws)


def test_ridge_statistics_is_what_fit_accumulates(global_random_seed):
    """RandomFeatureRidge.fit accumulates its chunks in one RidgeStatistics, in row order: the
    same chunks streamed by hand through partial_fit give bit-identically the fitted model."""
    X, y = _data(global_random_seed, n=333, d=5)
    f = RandomFourierFeatures(48, sigma=2.0, random_state=global_random_seed).fit(X)
    m = RandomFeatureRidge(clone(f), alphas=1e-3, chunk_size=50, n_threads=2,
                           gram_dtype="float64").fit(X, y)
    st = RidgeStatistics()
    for a in range(0, len(X), 50):
        st.partial_fit(f.transform(X[a:a + 50]), y[a:a + 50])
    coef, _ = st.solve(1e-3)
    np.testing.assert_array_equal(coef[0], m.coef_)


def test_ridge_statistics_pickles_and_copies():
    import pickle
    rng = np.random.default_rng(0)
    st = RidgeStatistics(gram_dtype="float32").partial_fit(rng.normal(size=(20, 4)),
                                                           rng.normal(size=20))
    back = pickle.loads(pickle.dumps(st))
    _assert_same(back, st)
    assert back.gram_dtype == "float32" and "n_samples_=20" in repr(back)
    cp = st.copy()
    cp.partial_fit(np.ones((1, 4)), [1.0])
    assert st.n_samples_ == 20 and cp.n_samples_ == 21
    empty = RidgeStatistics()
    _assert_same(empty.merge(st), st)
    _assert_same(st.merge(empty), st)
    assert empty.n_features is None and st.n_features == 4 and st.n_targets == 1
    # sparse rows give the statistics of the dense ones
    Z = rng.normal(size=(30, 5))
    Z[Z < 0.5] = 0.0
    w = rng.uniform(0, 1, 30)
    a = RidgeStatistics().partial_fit(sp.csr_matrix(Z), Z[:, 0], w)
    b = RidgeStatistics().partial_fit(Z, Z[:, 0], w)
    for x, y in zip(_fields(a), _fields(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_ridge_statistics_errors():
    rng = np.random.default_rng(0)
    Z, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    st = RidgeStatistics().partial_fit(Z, y)
    with pytest.raises(ValueError, match=r"Z has 10 rows but y has 9"):
        RidgeStatistics().partial_fit(Z, y[:9])
    with pytest.raises(ValueError, match="2-D array"):
        RidgeStatistics().partial_fit(Z[0], y[:1])
    bad = Z.copy()
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match="Z contains NaN or infinity"):
        RidgeStatistics().partial_fit(bad, y)
    with pytest.raises(ValueError, match="y contains NaN"):
        RidgeStatistics().partial_fit(Z, np.r_[y[:9], np.nan])
    with pytest.raises(ValueError, match=r"sample_weight must be >= 0"):
        RidgeStatistics().partial_fit(Z, y, -np.ones(10))
    with pytest.raises(ValueError, match=r"sample_weight must be a scalar or of shape \(10,\)"):
        RidgeStatistics().partial_fit(Z, y, np.ones(9))
    with pytest.raises(ValueError, match="D=3 features and K=1 targets, got D=4, K=1"):
        st.partial_fit(rng.normal(size=(2, 4)), [1.0, 2.0])
    with pytest.raises(ValueError, match="cannot be combined"):
        st.merge(RidgeStatistics().partial_fit(Z, np.c_[y, y]))
    with pytest.raises(TypeError, match="must be a RidgeStatistics"):
        st.merge({"gram_": 1})
    with pytest.raises(ValueError, match="no samples"):
        RidgeStatistics().solve(1.0)
    with pytest.raises(ValueError, match="only zero weights"):
        RidgeStatistics().partial_fit(Z, y, np.zeros(10)).solve(1.0)
    with pytest.raises(ValueError, match="alpha must be finite and >= 0"):
        st.solve(-1.0)
    with pytest.raises(ValueError, match="one number"):
        st.solve([1.0, 2.0])
    with pytest.raises(ValueError, match="method"):
        st.solve_path([1.0], method="qr")
    with pytest.raises(ValueError, match="gram_dtype"):
        RidgeStatistics(gram_dtype="float16")
    before = Z.copy()
    RidgeStatistics().partial_fit(Z, y, np.ones(10))
    np.testing.assert_array_equal(Z, before)  # inputs are never modified


# ----------------------------------------------------------------------------- issue 16
@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
@pytest.mark.parametrize("zdtype", [np.float64, np.float32])
def test_weighted_update_in_place_is_the_same_bits(gram_dtype, zdtype):
    """With ``scratch=True`` the weighted chunk is scaled in place instead of copied: the same
    statistics, bit for bit; without it the caller's Z is left as it was."""
    from randfeat.linear import RidgeStatistics

    rng = np.random.default_rng(2)
    Z = rng.normal(size=(300, 40)).astype(zdtype)
    Y = rng.normal(size=(300, 2))
    w = rng.uniform(0.1, 3.0, size=300)
    a, b = RidgeStatistics(gram_dtype), RidgeStatistics(gram_dtype)
    Z0 = Z.copy()
    a._update(Z, Y, w)
    np.testing.assert_array_equal(Z, Z0)
    b._update(Z.copy(), Y, w, scratch=True)
    for name in ("gram_", "zty_", "z_sum_", "y_sum_", "y_sq_sum_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


