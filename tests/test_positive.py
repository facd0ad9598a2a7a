"""PositiveRandomFeatures (Choromanski et al., ICLR 2021): the three estimators' unbiasedness
and exact variances (iid and orthogonal frequencies, softmax and Gaussian kernels), the exact
law of the positive terms at large norms, the numerics (no inf/NaN: errors and warnings), and
the transformer's conventions.

The exact laws are written here, independently of randfeat (closed forms; the orthogonal
covariance through scipy.special.hyp1f1).  Statistical tests: fixed seeds, each comparison at
|z| <= Z_MAX = 6 (two-sided false-alarm rate 2e-9 per comparison), p > 1e-7 for variances.
"""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import special
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from randfeat import PositiveRandomFeatures, RandomFourierFeatures
from randfeat._base import data_sigma

Z_MAX = 6.0
ESTIMATORS = ["positive", "hyperbolic", "trigonometric"]


def _law(est, kernel, u, v):
    """(mean, per-term variance V1, covariance C of two rows of one orthogonal block) of one
    term of the estimate: a feature product times D ("positive"), or a frequency's term
    ("hyperbolic", "trigonometric"); u, v already divided by sigma."""
    d = u.size
    a, b = u @ u, v @ v
    s, t = (u + v) @ (u + v), (u - v) @ (u - v)
    SM = math.exp(u @ v)
    lam2 = math.exp(-(a + b))
    F2 = math.exp(a + b)
    if est == "positive":
        V = SM * SM * math.expm1(s)
        C = lam2 * (special.hyp1f1(d, d / 2, s / 2) - math.exp(s))
    elif est == "hyperbolic":
        V = 0.5 * lam2 * math.expm1(s) ** 2
        C = lam2 * (special.hyp1f1(d, d / 2, s / 2) - math.exp(s))
    else:
        V = 0.5 * F2 * (-math.expm1(-t)) ** 2
        C = F2 * (special.hyp1f1(d, d / 2, -t / 2) - math.exp(-t))
    mean = SM
    if kernel == "gaussian":                     # times exp(-(a + b)/2) per term
        g = math.exp(-(a + b) / 2)
        mean, V, C = mean * g, V * g * g, C * g * g
    return mean, V, C


def _pairs(d=4, seed=3):
    """Pairs with ||u + v||^2 up to ~2.5 (the mean's CLT holds at D = 1e5): random, nearly
    opposite (SM small), equal, one small."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=d)
    x *= 0.55 / np.linalg.norm(x)
    y = rng.normal(size=d)
    y *= 0.7 / np.linalg.norm(y)
    return [(x, y), (x, -0.9 * x + 0.05 * y), (x, x.copy()), (0.3 * y, x)]


def _estimates(est, kernel, sigma, D, pairs, seed, sampling="iid"):
    """The (per-term) products of the map's own features: (n_pairs, n_terms)."""
    X = np.vstack([np.vstack([x, y]) for x, y in pairs])
    m = PositiveRandomFeatures(D, kernel=kernel, sigma=sigma, estimator=est, sampling=sampling,
                               random_state=seed, n_threads=1)
    Z = m.fit_transform(X)
    prod = Z[0::2] * Z[1::2]
    if est == "positive":
        return D * prod
    h = D // 2
    return h * (prod[:, :h] + prod[:, h:])        # one term per frequency


@pytest.mark.parametrize("est", ESTIMATORS)
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_unbiased_with_exact_variance(est, kernel, global_random_seed):
    sigma = 1.3
    pairs = _pairs()
    t = _estimates(est, kernel, sigma, 200_000, pairs, global_random_seed)
    for i, (x, y) in enumerate(pairs):
        mean, V, _ = _law(est, kernel, x / sigma, y / sigma)
        if V == 0:                                   # trigonometric at x = y: exact
            np.testing.assert_allclose(t[i], mean, rtol=1e-12)
            continue
        z = (t[i].mean() - mean) / math.sqrt(V / t.shape[1])
        assert abs(z) < Z_MAX, (est, kernel, i, t[i].mean(), mean, z)


@pytest.mark.parametrize("est", ESTIMATORS)
def test_term_variance_is_exact(est, global_random_seed):
    from analysis import stats

    pairs = _pairs()[:2]
    t = _estimates(est, "softmax", 1.0, 400_000, pairs, global_random_seed + 1000)
    for i, (x, y) in enumerate(pairs):
        _, V, _ = _law(est, "softmax", x, y)
        p, ratio, _ = stats.variance_pvalue(t[i], V)
        assert p > 1e-7, (est, i, ratio, p)


@pytest.mark.parametrize("est", ESTIMATORS)
def test_orthogonal_exact_variance(est, global_random_seed):
    """Blocks of d = 4 orthogonal frequencies: the block means are independent replicates with
    variance (d V1 + d (d - 1) C) / d^2 (C from 1F1, independent of the library)."""
    from analysis import stats

    pairs = _pairs()[:2]
    d, n_blocks = 4, 60_000
    m = d * n_blocks
    t = _estimates(est, "softmax", 1.0, m if est == "positive" else 2 * m, pairs,
                   global_random_seed, "orthogonal")
    blocks = t.reshape(len(pairs), n_blocks, d).mean(axis=2)
    for i, (x, y) in enumerate(pairs):
        mean, V, C = _law(est, "softmax", x, y)
        Vb = (d * V + d * (d - 1) * C) / d**2
        assert C < 0 and Vb < V / d
        z = (blocks[i].mean() - mean) / math.sqrt(Vb / n_blocks)
        assert abs(z) < Z_MAX, (est, i, z)
        p, ratio, _ = stats.variance_pvalue(blocks[i], Vb)
        assert p > 1e-7, (est, i, ratio, p)


def test_positive_terms_are_lognormal_at_large_norms(global_random_seed):
    """Where the variance explodes (||u + v||^2 = 9 to 36: relative variance e^9 .. e^36 per
    term) the sample mean says little, but the law of one term is exactly lognormal:
    log t_j = w_j'(u + v) - (||u||^2 + ||v||^2)/2 ~ N(-(||u||^2 + ||v||^2)/2, ||u + v||^2).
    Its mean (z-test) and variance (chi-square, normal data) are checked."""
    from scipy.stats import chi2

    rng = np.random.default_rng(5)
    d = 6
    x = rng.normal(size=d)
    x /= np.linalg.norm(x)
    pairs = [(1.5 * x, 1.5 * x), (3.0 * x, 3.0 * x), (2.0 * x, -1.0 * x + 0.5 * rng.normal(size=d))]
    X = np.vstack([np.vstack(p) for p in pairs])
    D = 100_000
    Z = PositiveRandomFeatures(D, random_state=global_random_seed).fit_transform(X)
    for i, (a, b) in enumerate(pairs):
        logt = np.log(D) + np.log(Z[2 * i]) + np.log(Z[2 * i + 1])
        mu, s = -(a @ a + b @ b) / 2, (a + b) @ (a + b)
        z = (logt.mean() - mu) / math.sqrt(s / D)
        assert abs(z) < Z_MAX, (i, z)
        stat = (D - 1) * logt.var(ddof=1) / s
        assert 1e-7 < chi2.cdf(stat, D - 1) < 1 - 1e-7, (i, stat / (D - 1))


@pytest.mark.parametrize("est", ["hyperbolic", "trigonometric"])
def test_odd_width_unbiased(est, global_random_seed):
    """D = 3: one paired frequency and one unpaired column; the mean over R independent fits
    against the kernel, z-score with the exact variance [4 V_pair + V_single] / D^2."""
    x, y = _pairs()[0]
    X = np.vstack([x, y])
    R = 1000
    ss = np.random.SeedSequence(global_random_seed).spawn(R)
    e = np.array([(lambda Z: Z[0] @ Z[1])(PositiveRandomFeatures(
        3, estimator=est, random_state=s, n_threads=1).fit_transform(X)) for s in ss])
    mean, V, _ = _law(est, "softmax", x, y)
    u, v = x, y
    if est == "hyperbolic":
        Vpair = 4 * V                                  # a cosh pair = 2 Lambda cosh
        Vsingle = _law("positive", "softmax", u, v)[1]
    else:
        Vpair = 4 * V
        F2, t = math.exp(u @ u + v @ v), (u - v) @ (u - v)
        Vsingle = F2 * (1 + math.exp(-2 * t) / 2 - math.exp(-t))  # phase-shifted RFF column
    Ve = (Vpair + Vsingle) / 9
    z = (e.mean() - mean) / math.sqrt(Ve / R)
    assert abs(z) < Z_MAX, z


# ----------------------------------------------------------------------- the formulas
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
@pytest.mark.parametrize("D", [8, 9])
def test_features_formula(kernel, D, global_dtype):
    X = (0.4 * np.random.default_rng(0).normal(size=(6, 5))).astype(global_dtype)
    sigma = 0.8
    q = (X.astype(np.float64) ** 2).sum(1) / sigma**2
    c = 0.5 if kernel == "softmax" else 1.0
    tol = dict(rtol=3e-6, atol=0) if global_dtype == np.float32 else dict(rtol=1e-12, atol=0)
    for est in ESTIMATORS:
        m = PositiveRandomFeatures(D, kernel=kernel, sigma=sigma, estimator=est,
                                   random_state=1).fit(X)
        P = X.astype(np.float64) @ m.frequencies_.astype(np.float64).T
        if est == "positive":
            want = np.exp(P - c * q[:, None]) / math.sqrt(D)
        elif est == "hyperbolic":
            h = D // 2
            want = np.hstack([np.exp(P - c * q[:, None]), np.exp(-P[:, :h] - c * q[:, None])])
            want /= math.sqrt(D)
        else:
            h = D // 2
            F = np.exp((0.5 if kernel == "softmax" else 0.0) * q)[:, None] * math.sqrt(2 / D)
            cols = [np.cos(P[:, :h]), np.sin(P[:, :h])]
            if D % 2:
                cols.append(np.cos(P[:, h:] + float(m.offsets_[0])))
            want = F * np.hstack(cols)
        Z = m.transform(X)
        assert Z.dtype == global_dtype and Z.shape == (6, D)
        np.testing.assert_allclose(Z, want, **tol)
        if est != "trigonometric":
            assert (Z > 0).all()


@pytest.mark.parametrize("D", [64, 63])
def test_trigonometric_gaussian_is_rff(D):
    """For the Gaussian kernel the trigonometric estimator is the paired random Fourier
    feature map: the same frequencies for the same seed, the same features."""
    X = np.random.default_rng(0).normal(size=(10, 4))
    a = PositiveRandomFeatures(D, kernel="gaussian", estimator="trigonometric", sigma=1.7,
                               random_state=3).fit(X)
    b = RandomFourierFeatures(D, sigma=1.7, random_state=3).fit(X)
    np.testing.assert_array_equal(a.frequencies_, b.frequencies_)
    np.testing.assert_allclose(a.transform(X), b.transform(X), rtol=1e-12, atol=1e-14)


def test_sigma_rules():
    X = np.random.default_rng(0).normal(size=(50, 4))
    for rule in ("scale", "median"):
        a = PositiveRandomFeatures(16, kernel="gaussian", sigma=rule, random_state=0).fit(X)
        assert a.sigma_ == pytest.approx(data_sigma(rule, X))
        b = PositiveRandomFeatures(16, kernel="gaussian", sigma=a.sigma_, random_state=0).fit(X)
        np.testing.assert_array_equal(a.transform(X), b.transform(X))
    assert PositiveRandomFeatures(4).fit(X).sigma_ == 1.0


# ----------------------------------------------------------------------- numerics
def test_large_norms_are_exact_in_the_log_domain():
    """||u|| = 30: the features are ~e^-450, formed as one exp of the float64 exponent."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 5))
    X *= 30 / np.linalg.norm(X, axis=1, keepdims=True)
    m = PositiveRandomFeatures(50, estimator="hyperbolic", random_state=0).fit(X)
    P = X @ m.frequencies_.T
    want = np.exp(np.hstack([P, -P]) - 450.0 - 0.5 * math.log(50))
    np.testing.assert_allclose(m.transform(X), want, rtol=1e-12)
    assert (want > 0).all() and want.max() < 1e-150


def test_overflow_is_an_error_not_inf():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 400)).astype(np.float32)
    m = PositiveRandomFeatures(20, random_state=0).fit(X)
    w = m.frequencies_[:1]                              # exponent ||w||^2 / 2 ~ 200 > 88.7
    with pytest.raises(ValueError, match=r"exceed the range of float32 \(largest exponent "
                                         r"[0-9.]+ > log\(max\) = 88.72.*float64"):
        m.transform(w)
    Z64 = PositiveRandomFeatures(20, random_state=0).fit(X.astype(np.float64)).transform(
        w.astype(np.float64))
    assert np.isfinite(Z64).all() and Z64.max() > 1e60
    t = PositiveRandomFeatures(20, estimator="trigonometric", random_state=0).fit(X)
    with pytest.raises(ValueError, match="trigonometric factor.*float32"):
        t.transform(np.full((1, 400), 1.0, dtype=np.float32))     # ||u||^2 / 2 = 200


def test_underflow_warns_and_rows_are_zero():
    X = np.zeros((2, 3))
    X[1, 0] = 45.0                                     # exponent ~ -1012 +- 45 w
    m = PositiveRandomFeatures(30, random_state=0).fit(X)
    with pytest.warns(RuntimeWarning, match=r"every feature of 1 rows of X underflowed to 0"):
        Z = m.transform(X)
    assert (Z[1] == 0).all() and (Z[0] > 0).all() and np.isfinite(Z).all()


def test_same_bits_for_any_thread_count(global_dtype):
    X = (0.3 * np.random.default_rng(0).normal(size=(600, 16))).astype(global_dtype)
    for est in ESTIMATORS:
        outs = [PositiveRandomFeatures(4096, estimator=est, random_state=1,
                                       n_threads=nt).fit_transform(X) for nt in (1, 2, 3)]
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])


def test_float32_close_to_float64():
    X = 0.4 * np.random.default_rng(0).normal(size=(9, 6))
    for est in ESTIMATORS:
        a = PositiveRandomFeatures(40, estimator=est, random_state=5).fit(X)
        b = PositiveRandomFeatures(40, estimator=est, random_state=5).fit(X.astype(np.float32))
        np.testing.assert_array_equal(b.frequencies_, a.frequencies_.astype(np.float32))
        np.testing.assert_allclose(b.transform(X.astype(np.float32)), a.transform(X),
                                   rtol=5e-6, atol=1e-7)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input(fmt, global_dtype):
    rng = np.random.default_rng(0)
    X = (0.5 * rng.normal(size=(30, 12)) * (rng.random((30, 12)) < 0.3)).astype(global_dtype)
    tol = 1e-5 if global_dtype == np.float32 else 1e-12
    for est in ESTIMATORS:
        m = PositiveRandomFeatures(64, estimator=est, kernel="gaussian", random_state=0).fit(X)
        Zs = m.transform(getattr(sp, f"{fmt}_matrix")(X))
        assert Zs.dtype == global_dtype
        np.testing.assert_allclose(Zs, m.transform(X), rtol=tol, atol=tol)


# ----------------------------------------------------------------------- conventions
def test_errors_are_clear():
    X = np.random.default_rng(0).normal(size=(5, 3))
    for bad in ({"kernel": "laplacian"}, {"estimator": "relu"}, {"sampling": "qmc_sobol"},
                {"sigma": -1.0}, {"n_components": 0}):
        with pytest.raises(InvalidParameterError, match=next(iter(bad))):
            PositiveRandomFeatures(**bad).fit(X)
    m = PositiveRandomFeatures(8, random_state=0).fit(X)
    with pytest.raises(ValueError, match="3 features"):
        m.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="infinity"):
        m.transform(np.array([[np.inf, 0, 0]]))
    m.set_params(estimator="hyperbolic")
    with pytest.raises(NotFittedError, match=r"parameters changed after fit \(estimator="):
        m.transform(X)
    m.set_params(estimator="positive", n_threads=2000)
    with pytest.raises(ValueError, match="n_threads must be between 1 and 1024"):
        m.transform(X)
    m.set_params(n_threads=1)
    m.transform(X)
    m.frequencies_ = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"frequencies_ must be a float array of shape \(8, 3\)"):
        m.transform(X)
    t = PositiveRandomFeatures(7, estimator="trigonometric", random_state=0).fit(X)
    assert t.offsets_.shape == (1,) and t.frequencies_.shape == (4, 3)
    t.offsets_ = None
    with pytest.raises(ValueError, match="offsets_ must be an array of shape"):
        t.transform(X)
    assert PositiveRandomFeatures(8, estimator="trigonometric").fit(X).offsets_ is None


def test_input_not_modified_read_only_pickle_names():
    X = np.random.default_rng(0).normal(size=(5, 3))
    X0 = X.copy()
    m = PositiveRandomFeatures(9, estimator="trigonometric", random_state=0).fit(X)
    Z = m.transform(X)
    np.testing.assert_array_equal(X, X0)
    for a in (m.frequencies_, m.offsets_):
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 1.0
    m2 = pickle.loads(pickle.dumps(m))
    assert not m2.frequencies_.flags.writeable and not m2.offsets_.flags.writeable
    np.testing.assert_array_equal(m2.transform(X), Z)
    assert list(m.get_feature_names_out())[:2] == ["positiverandomfeatures0",
                                                   "positiverandomfeatures1"]
