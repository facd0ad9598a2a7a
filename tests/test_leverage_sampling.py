"""RandomFourierFeatures(sampling="leverage"): the law of the leverage-weighted frequencies,
re-derived here from the documented construction (randfeat/_sampling.py, leverage_frequencies),
the exact unbiasedness and variance of the weighted estimator, conventions and errors.

Exact law (quadrature method, d = 1, Gaussian kernel): in u = Phi(omega sigma) the frequencies
are drawn from the piecewise-constant density q(u) = L(centre_c) / s~ on cells c (one end cell
[0, u0], equal logit steps, one end cell [1 - u0, 1]), with weight w = s~ / L(centre_c), where
L(omega) = c' (K + lambda I)^-1 c + s' (K + lambda I)^-1 s.  Then for the paired map with m
frequencies, t = z(x)'z(y) = (1/m) sum_j w_j cos(omega_j (x - y)) has
E t = integral of cos(omega(u) Delta) du = k(Delta) exactly and
Var t = (sum_c |c| (s~ / L_c) <cos^2>_c - k^2) / m, <cos^2>_c the mean of cos^2(omega(u) Delta)
over the cell (computed here by a fine midpoint rule in each cell).
"""

import math

import numpy as np
import pytest
import scipy.linalg
from scipy import special
from scipy.stats import chi2, norm

import randfeat
from randfeat._sampling import leverage_frequencies, sample_frequencies
from randfeat.kernels import GaussianKernel, LaplacianKernel


def _law_1d(X, sigma, lam):
    """Independent re-derivation of the quadrature law (cells, centre values, s~)."""
    K = GaussianKernel(sigma)(X)
    mu, U = scipy.linalg.eigh(K)
    mu = np.clip(mu, 0, None)
    s = float(np.sum(mu / (mu + lam)))
    u0 = min(max(1e-3 * s * lam / len(X), 1e-15), 0.05)
    t = np.linspace(math.log(u0 / (1 - u0)), math.log((1 - u0) / u0), 4096 - 1)
    edges = np.concatenate([[0.0], special.expit(t), [1.0]])
    centres = 0.5 * (edges[1:] + edges[:-1])
    om = special.ndtri(centres) / sigma
    A = np.linalg.inv(K + lam * np.eye(len(X)))
    C, S = np.cos(np.outer(X[:, 0], om)), np.sin(np.outer(X[:, 0], om))
    L = np.einsum("ij,ik,kj->j", C, A, C) + np.einsum("ij,ik,kj->j", S, A, S)
    width = np.diff(edges)
    return dict(edges=edges, L=L, width=width, s_quad=float(L @ width), s=s)


def _exact_moments(law, sigma, delta, fine=16):
    """E t and m Var t of the weighted estimator at lag ``delta`` (per frequency)."""
    e, L, w = law["edges"], law["L"], law["width"]
    sub = (np.arange(fine) + 0.5) / fine
    u = e[:-1, None] + sub[None, :] * w[:, None]
    om = special.ndtri(np.clip(u, 1e-300, 1 - 1e-16)) / sigma
    c1 = np.cos(om * delta).mean(axis=1)
    c2 = (np.cos(om * delta) ** 2).mean(axis=1)
    mean = float(np.sum(w * c1))
    second = float(np.sum(w * (law["s_quad"] / L) * c2))
    return mean, second - mean ** 2


def test_quadrature_law_weights_and_cells_match_the_documented_construction():
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(-1, 1, 30))[:, None]
    sigma, lam = 0.2, 1e-2
    law = _law_1d(X, sigma, lam)
    W, w, info = leverage_frequencies(GaussianKernel(sigma), 5000, X, np.random.default_rng(1),
                                      ridge=lam)
    assert info["method"] == "quadrature"
    assert info["statistical_dimension"] == pytest.approx(law["s"], rel=1e-10)
    assert info["quadrature_statistical_dimension"] == pytest.approx(law["s_quad"], rel=1e-8)
    u = norm.cdf(W[:, 0] * sigma)
    cell = np.clip(np.searchsorted(law["edges"], u, side="right") - 1, 0, 4095)
    np.testing.assert_allclose(w, law["s_quad"] / law["L"][cell], rtol=1e-6)
    # cell frequencies: chi-square on 20 groups of equal expected mass
    p = law["L"] * law["width"] / law["s_quad"]
    groups = np.minimum((np.cumsum(p) - 0.5 * p) * 20, 19.999).astype(int)
    obs = np.bincount(groups[cell], minlength=20)
    exp = np.bincount(groups, weights=p, minlength=20) * len(W)
    stat = float(np.sum((obs - exp) ** 2 / exp))
    assert stat < chi2.ppf(1 - 1e-4, 19), stat
    # the quadrature statistical dimension converges to the exact one
    assert abs(law["s_quad"] / law["s"] - 1) < 0.05


@pytest.mark.parametrize("features", ["paired", "phase"])
def test_weighted_estimator_exact_mean_and_variance(features, global_random_seed):
    """Monte Carlo over fits against the exact mean k and variance (module docstring): z-test of
    the mean with the exact variance, scaled chi-square test of the variance; Bonferroni over 3
    lags x 2 tests at 1e-4."""
    rng = np.random.default_rng(global_random_seed)
    X = np.sort(rng.uniform(-1, 1, 25))[:, None]
    sigma, lam, m, fits = 0.2, 1e-2, 16, 600
    law = _law_1d(X, sigma, lam)
    pairs = [(0, 24), (3, 5), (10, 10)]
    vals = np.empty((fits, len(pairs)))
    ss = np.random.SeedSequence(global_random_seed).spawn(fits)
    for i, s in enumerate(ss):
        f = randfeat.RandomFourierFeatures(2 * m if features == "paired" else m, sigma=sigma,
                                           features=features, sampling="leverage", ridge=lam,
                                           random_state=s, n_threads=1).fit(X)
        Z = f.transform(X)
        vals[i] = [Z[a] @ Z[b] for a, b in pairs]
    level = 1e-4 / 6
    z = norm.ppf(1 - level / 2)
    for j, (a, b) in enumerate(pairs):
        delta = float(X[a, 0] - X[b, 0])
        k = math.exp(-delta ** 2 / (2 * sigma ** 2))
        mean, var1 = _exact_moments(law, sigma, delta)
        assert mean == pytest.approx(k, abs=1e-6)  # the law is exactly unbiased
        if features == "phase":  # t = (1/m) sum 2 w cos(omega x + b) cos(omega y + b)
            var1 = _phase_second_moment(law, sigma, delta) - k * k
        v = var1 / m
        zz = (vals[:, j].mean() - k) / math.sqrt(v / fits)
        assert abs(zz) < z, (pairs[j], zz)
        if v > 1e-12:
            ratio = vals[:, j].var(ddof=1) / v
            lo, hi = chi2.ppf(level / 2, fits - 1) / (fits - 1), chi2.ppf(1 - level / 2,
                                                                             fits - 1) / (fits - 1)
            # heavier-tailed than normal: widen by the kurtosis of the weights (factor 2)
            assert lo / 2 < ratio < hi * 2, (pairs[j], ratio)


def _phase_second_moment(law, sigma, delta, fine=16):
    """E[(2 w cos(omega x + b) cos(omega y + b))^2] per frequency, b uniform:
    E_b[4 cos^2 A cos^2 B] = cos^2(omega delta) + 1/2 = 1 + cos(2 omega delta) / 2, so the
    moment is E_q[w^2 (1 + cos(2 omega delta) / 2)] = sum_c |c| (s~ / L_c) <...>_c."""
    e, w = law["edges"], law["width"]
    sub = (np.arange(fine) + 0.5) / fine
    u = e[:-1, None] + sub[None, :] * w[:, None]
    om = special.ndtri(np.clip(u, 1e-300, 1 - 1e-16)) / sigma
    c = (1 + 0.5 * np.cos(2 * om * delta)).mean(axis=1)
    return float(np.sum(w * (law["s_quad"] / law["L"]) * c))


def test_pool_method_unbiased_and_weights_mean_one(global_random_seed):
    """d = 3 (the resampled pool): E z(x)'z(y) = k and E w = 1, t-tests over fits."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(20, 3))
    fits, m = 300, 32
    vals, wm = [], []
    for s in np.random.SeedSequence(global_random_seed).spawn(fits):
        f = randfeat.RandomFourierFeatures(2 * m, sigma=1.5, sampling="leverage", ridge=1e-2,
                                           random_state=s, n_threads=1).fit(X)
        Z = f.transform(X)
        vals.append([Z[0] @ Z[1], Z[2] @ Z[7], Z[4] @ Z[4]])
        wm.append(f.frequency_weights_.mean())
    vals = np.asarray(vals)
    K = GaussianKernel(1.5)(X)
    k = [K[0, 1], K[2, 7], 1.0]
    z = norm.ppf(1 - 1e-4 / 8)
    for j in range(3):
        se = vals[:, j].std(ddof=1) / math.sqrt(fits)
        assert abs(vals[:, j].mean() - k[j]) < z * se, j
    wm = np.asarray(wm)
    assert abs(wm.mean() - 1) < z * wm.std(ddof=1) / math.sqrt(fits)


def test_missing_weights_is_caught():
    """The mutant without weights (frequencies from the leverage law, features unweighted) is
    biased: the kernel estimate then averages cos(omega Delta) under q, not under p, and the
    z-test of the mean rejects it."""
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(-1, 1, 25))[:, None]
    sigma, lam, m, fits = 0.2, 1e-2, 16, 300
    vals = []
    for s in np.random.SeedSequence(7).spawn(fits):
        f = randfeat.RandomFourierFeatures(2 * m, sigma=sigma, sampling="leverage", ridge=lam,
                                           random_state=s, n_threads=1).fit(X)
        f.frequency_weights_ = None  # the mutant: weights dropped
        Z = f.transform(X)
        vals.append(Z[3] @ Z[5])
    k = math.exp(-float(X[3, 0] - X[5, 0]) ** 2 / (2 * sigma ** 2))
    vals = np.asarray(vals)
    zz = (vals.mean() - k) / (vals.std(ddof=1) / math.sqrt(fits))
    assert abs(zz) > 6, zz


def test_attributes_dtype_reproducibility_threads():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (40, 2))
    kw = dict(sigma=0.5, sampling="leverage", ridge=1e-2, random_state=11)
    a = randfeat.RandomFourierFeatures(31, n_threads=1, **kw).fit(X)
    b = randfeat.RandomFourierFeatures(31, n_threads=2, **kw).fit(X)
    assert a.frequency_weights_.shape == (16,) and a.frequency_weights_[-1] == 1.0
    assert not a.frequency_weights_.flags.writeable
    assert a.statistical_dimension_ > 0 and a.leverage_ridge_ == pytest.approx(1e-2)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    c = randfeat.RandomFourierFeatures(31, n_threads=1, **kw).fit(X.astype(np.float32))
    Z32 = c.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32 and c.frequencies_.dtype == np.float32
    np.testing.assert_allclose(Z32, a.transform(X), atol=2e-5)
    iid = randfeat.RandomFourierFeatures(8, random_state=0).fit(X)
    assert iid.frequency_weights_ is None and iid.statistical_dimension_ is None
    import pickle

    d = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(d.transform(X), a.transform(X))
    assert not d.frequency_weights_.flags.writeable


def test_sparse_input_and_auto_ridge_and_laplacian():
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (30, 2))
    f = randfeat.RandomFourierFeatures(64, sigma=0.7, sampling="leverage", random_state=2)
    Zd = f.fit(X).transform(X)
    Zs = f.fit(sp.csr_matrix(X)).transform(sp.csr_matrix(X))
    np.testing.assert_allclose(Zs, Zd, atol=1e-12)
    assert f.leverage_ridge_ > 0
    g = randfeat.RandomFourierFeatures(64, kernel="laplacian", sigma=0.7, sampling="leverage",
                                       random_state=2).fit(X)
    assert np.isfinite(g.transform(X)).all()
    _, _, info = leverage_frequencies(LaplacianKernel(0.7), 16, X, np.random.default_rng(0))
    assert info["method"] == "quadrature"


def test_many_rows_subsample_scales_the_ridge():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 3))
    f = randfeat.RandomFourierFeatures(16, sampling="leverage", ridge=3.0,
                                       random_state=0).fit(X)
    assert f.leverage_ridge_ == pytest.approx(3.0)
    assert np.isfinite(f.transform(X[:5])).all()


def test_errors():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="ridge"):
        randfeat.RandomFourierFeatures(8, sampling="leverage", ridge=-1.0).fit(X)
    with pytest.raises(ValueError, match="ridge"):
        randfeat.RandomFourierFeatures(8, sampling="leverage", ridge="big").fit(X)
    with pytest.raises(ValueError, match="needs the training rows"):
        sample_frequencies(GaussianKernel(), 4, 2, np.random.default_rng(0), "leverage")
    with pytest.raises(ValueError, match="sampling"):
        randfeat.RandomFourierFeatures(8, sampling="levrage").fit(X)


def test_dask_fit_refused():
    da = pytest.importorskip("dask.array")
    X = da.from_array(np.random.default_rng(0).normal(size=(20, 2)), chunks=10)
    with pytest.raises(NotImplementedError, match="in-memory sample"):
        randfeat.RandomFourierFeatures(8, sampling="leverage").fit(X)
    f = randfeat.RandomFourierFeatures(8, sampling="leverage", random_state=0).fit(X[:10]
                                                                                  .compute())
    np.testing.assert_allclose(f.transform(X).compute(), f.transform(X.compute()), atol=1e-12)
