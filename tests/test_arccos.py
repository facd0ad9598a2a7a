"""ArcCosineFeatures and ArcCosineKernel (Cho & Saul 2009): the exact kernel against an
independent quadrature, the features' unbiasedness and exact variance, and the transformer's
conventions (dtypes, sparse input, threads, errors, pickling, set_output).

Statistical tests: fixed seeds (``global_random_seed``), each comparison at |z| <= Z_MAX = 6
(two-sided false-alarm rate 2e-9 per comparison, < 1e-6 per test), so every seed 0-99 passes.
"""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from randfeat import ArcCosineFeatures
from randfeat.kernels import ArcCosineKernel

Z_MAX = 6.0


def _k_quad(n, x, y):
    r"""k_n(x, y) by quadrature, independent of the closed form: with w projected on the plane
    of x and y (a 2-D standard normal, radius r, angle a), k_n = 2 E[Theta Theta (w'x)^n
    (w'y)^n] = (2^n n! / pi) ||x||^n ||y||^n \int_{theta - pi/2}^{pi/2} cos^n a cos^n(a - theta)
    da, since E r^{2n} = 2^n n! and both projections are positive on that arc."""
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        return 0.0
    c = np.clip(x @ y / (nx * ny), -1, 1)
    th = math.acos(c)
    val = integrate.quad(lambda a: math.cos(a) ** n * math.cos(a - th) ** n, th - math.pi / 2,
                         math.pi / 2, epsabs=1e-14, epsrel=1e-12)[0]
    return 2 ** n * math.factorial(n) / math.pi * nx ** n * ny ** n * val


def _pairs():
    """Random and adversarial pairs: near-parallel, antiparallel, orthogonal, different norms,
    equal."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=4)
    u = x / np.linalg.norm(x)
    v = rng.normal(size=4)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    out = [(x, rng.normal(size=4)), (x, 0.2 * rng.normal(size=4))]
    for th, ry in ((1e-3, 3.0), (math.pi / 2, 1.0), (math.pi - 1e-2, 0.5)):
        out.append((x, ry * np.linalg.norm(x) * (math.cos(th) * u + math.sin(th) * v)))
    out += [(x, -2.0 * x), (x, x.copy())]                       # antiparallel, equal
    return out


# ----------------------------------------------------------------------- the exact kernel
@pytest.mark.parametrize("order", [0, 1, 2])
def test_kernel_matches_quadrature(order):
    kern = ArcCosineKernel(order)
    for x, y in _pairs():
        got = kern(x[None], y[None])[0, 0]
        want = _k_quad(order, x, y)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_kernel_diagonal_symmetry_zero_rows(order):
    X = np.random.default_rng(0).normal(size=(6, 3))
    X[2] = 0.0
    kern = ArcCosineKernel(order)
    K = kern(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-13, atol=0)
    want = [1.0, 1.0, 3.0][order] * np.linalg.norm(X, axis=1) ** (2 * order)
    want[2] = 0.0
    np.testing.assert_allclose(np.diag(K), want, rtol=1e-12)
    np.testing.assert_allclose(kern.diag(X), want, rtol=1e-12)
    assert (K[2] == 0).all() and (K[:, 2] == 0).all()
    # positive semi-definite
    assert np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()


def test_kernel_bad_input():
    with pytest.raises(ValueError, match="order must be 0, 1 or 2, got 3"):
        ArcCosineKernel(3)
    with pytest.raises(ValueError, match="order must be 0, 1 or 2"):
        ArcCosineKernel(True)
    kern = ArcCosineKernel(1)
    with pytest.raises(ValueError, match="X has 3 features but Y has 2"):
        kern(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN or infinity"):
        kern(np.array([[np.nan, 1.0]]))
    with pytest.raises(TypeError, match="real array"):
        kern(np.array([["a", "b"]]))
    assert repr(kern) == "ArcCosineKernel(order=1)" and kern == ArcCosineKernel(1)


# ----------------------------------------------------------------------- the features' law
def _terms(order, X, D, seed, sampling="iid"):
    """Per-feature unbiased terms t_j = D z_j(x) z_j(y) for the pairs (X[2i], X[2i+1])."""
    Z = ArcCosineFeatures(D, order=order, sampling=sampling, random_state=seed,
                          n_threads=1).fit_transform(X)
    return D * Z[0::2] * Z[1::2]                                   # (n_pairs, D)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_features_unbiased_with_the_exact_variance(order, global_random_seed):
    """Mean of D = 200,000 terms against k_n, z-score with the exact variance
    (2 k_{2n} - k_n^2) / D: the variance formula and the mean are tested at once (a wrong
    variance formula would give a wrong z, a wrong map a wrong mean)."""
    pairs = _pairs()
    X = np.vstack([np.vstack([x, y]) for x, y in pairs])
    D = 200_000
    t = _terms(order, X, D, global_random_seed)
    for i, (x, y) in enumerate(pairs):
        k = _k_quad(order, x, y)
        V = 2 * _k_quad(2 * order, x, y) - k * k
        mean = t[i].mean()
        if i == len(pairs) - 2:                      # antiparallel: every term is exactly 0
            assert mean == 0.0 and k == pytest.approx(0.0, abs=1e-12)
            continue
        z = (mean - k) / math.sqrt(V / D)
        assert abs(z) < Z_MAX, (order, i, mean, k, z)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_term_variance_is_exact(order, global_random_seed):
    """The sample variance of the per-feature terms against 2 k_{2n} - k_n^2 (scaled
    chi-square law with the sample kurtosis, analysis.stats.variance_pvalue, p > 1e-7)."""
    from analysis import stats

    pairs = _pairs()[:5]
    X = np.vstack([np.vstack([x, y]) for x, y in pairs])
    t = _terms(order, X, 400_000, global_random_seed + 1000)
    for i, (x, y) in enumerate(pairs):
        k = _k_quad(order, x, y)
        V = 2 * _k_quad(2 * order, x, y) - k * k
        p, ratio, _ = stats.variance_pvalue(t[i], V)
        assert p > 1e-7, (order, i, ratio, p)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_orthogonal_features_unbiased(order, global_random_seed):
    """Orthogonal blocks (d = 4 rows each, independent) keep the mean k_n: the block means are
    independent replicates, tested with their own sample variance."""
    pairs = _pairs()
    X = np.vstack([np.vstack([x, y]) for x, y in pairs])
    d, n_blocks = X.shape[1], 50_000
    t = _terms(order, X, d * n_blocks, global_random_seed, "orthogonal")
    blocks = t.reshape(len(pairs), n_blocks, d).mean(axis=2)
    for i, (x, y) in enumerate(pairs):
        k = _k_quad(order, x, y)
        se = blocks[i].std(ddof=1) / math.sqrt(n_blocks)
        if se == 0:
            assert blocks[i].mean() == pytest.approx(k, abs=1e-12)
            continue
        assert abs(blocks[i].mean() - k) / se < Z_MAX, (order, i)


def test_orthogonal_rows_are_orthogonal_blocks():
    est = ArcCosineFeatures(10, sampling="orthogonal", random_state=0).fit(np.ones((2, 4)))
    W = est.frequencies_
    G = W[:4] @ W[:4].T
    np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-12)


def test_features_formula_and_heaviside_at_zero():
    X = np.random.default_rng(1).normal(size=(7, 5))
    X[3] = 0.0
    for order in (0, 1, 2):
        est = ArcCosineFeatures(33, order=order, random_state=3).fit(X)
        P = X @ est.frequencies_.T
        want = math.sqrt(2 / 33) * (P > 0) * np.where(P > 0, P, 0) ** order
        np.testing.assert_allclose(est.transform(X), want, rtol=1e-13, atol=1e-15)
        assert (est.transform(X)[3] == 0).all()                 # Theta(0) = 0


# ----------------------------------------------------------------------- conventions
def test_float32_kept_and_frequencies_shared():
    X = np.random.default_rng(0).normal(size=(9, 6))
    e64 = ArcCosineFeatures(40, order=2, random_state=5).fit(X)
    e32 = ArcCosineFeatures(40, order=2, random_state=5).fit(X.astype(np.float32))
    Z32 = e32.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32 and e32.frequencies_.dtype == np.float32
    np.testing.assert_array_equal(e32.frequencies_, e64.frequencies_.astype(np.float32))
    np.testing.assert_allclose(Z32, e64.transform(X), rtol=2e-5, atol=1e-5)


def test_same_bits_for_any_thread_count():
    X = np.random.default_rng(0).normal(size=(700, 20))
    outs = [ArcCosineFeatures(8000, order=o, random_state=1, n_threads=nt).fit_transform(X)
            for o in (1, 2) for nt in (1, 2, 3)]
    for a, b in ((0, 1), (0, 2), (3, 4), (3, 5)):
        np.testing.assert_array_equal(outs[a], outs[b])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input(fmt, global_dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 12)) * (rng.random((30, 12)) < 0.3)
    X = X.astype(global_dtype)
    est = ArcCosineFeatures(64, order=1, random_state=0).fit(X)
    Zs = est.transform(getattr(sp, f"{fmt}_matrix")(X))
    assert Zs.dtype == global_dtype
    tol = 1e-5 if global_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(Zs, est.transform(X), rtol=tol, atol=tol)


def test_errors_are_clear():
    X = np.random.default_rng(0).normal(size=(5, 3))
    with pytest.raises(InvalidParameterError, match="order"):
        ArcCosineFeatures(order=3).fit(X)
    with pytest.raises(InvalidParameterError, match="sampling"):
        ArcCosineFeatures(sampling="qmc_sobol").fit(X)
    est = ArcCosineFeatures(8, random_state=0).fit(X)
    with pytest.raises(ValueError, match="3 features"):
        est.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        est.transform(np.array([[np.nan, 0, 0]]))
    with pytest.raises(NotFittedError):
        ArcCosineFeatures().transform(X)
    est.set_params(order=2)
    with pytest.raises(NotFittedError, match=r"parameters changed after fit \(order=2"):
        est.transform(X)
    # overflow of the square in float32: a clear error, not inf
    big = np.full((1, 3), 1e20, dtype=np.float32)
    e2 = ArcCosineFeatures(8, order=2, random_state=0).fit(big)
    with pytest.raises(ValueError, match="overflow.*float64"):
        e2.transform(big)
    est.set_params(order=1, n_threads=2000)
    with pytest.raises(ValueError, match="n_threads must be between 1 and 1024"):
        est.transform(X)


def test_input_not_modified_and_fitted_arrays_read_only():
    X = np.random.default_rng(0).normal(size=(5, 3))
    X0 = X.copy()
    est = ArcCosineFeatures(8, random_state=0).fit(X)
    est.transform(X)
    np.testing.assert_array_equal(X, X0)
    with pytest.raises(ValueError, match="read-only"):
        est.frequencies_[0, 0] = 1.0
    est2 = pickle.loads(pickle.dumps(est))
    assert not est2.frequencies_.flags.writeable
    np.testing.assert_array_equal(est2.transform(X), est.transform(X))
    est.frequencies_ = np.zeros((7, 3))
    with pytest.raises(ValueError, match=r"frequencies_ must be a float array of shape \(8, 3\)"):
        est.transform(X)


def test_feature_names():
    est = ArcCosineFeatures(3, random_state=0).fit(np.ones((2, 4)))
    assert list(est.get_feature_names_out()) == [f"arccosinefeatures{i}" for i in range(3)]


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(4, 3)), columns=["a", "b", "c"])
    est = ArcCosineFeatures(5, random_state=0).set_output(transform="pandas").fit(X)
    out = est.transform(X)
    assert list(out.columns) == [f"arccosinefeatures{i}" for i in range(5)]
    assert list(est.get_feature_names_out()) == list(out.columns)
