"""AdditiveChi2Sampler and SkewedChi2Sampler: scikit-learn parity, the additive map's exact
(deterministic) error, the skewed map's Monte Carlo law, conventions."""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import kernel_approximation as ska
from sklearn.exceptions import NotFittedError

from analysis.stats import variance_pvalue
from randfeat import AdditiveChi2Sampler, SkewedChi2Sampler

Z_MAX = 5.0
#: level of the variance test (scaled chi-square with the sample kurtosis, analysis.stats)
P_VAR = 1e-7


def _hist(n=40, d=6, seed=0, zeros=0.3):
    X = np.random.default_rng(seed).random((n, d))
    X[X < zeros] = 0.0
    return X


# ----------------------------------------------------------------------------- additive
@pytest.mark.parametrize("steps, interval", [(1, None), (2, None), (3, None), (5, 0.3),
                                             (2, 1.7)])
def test_additive_same_as_sklearn(steps, interval, global_dtype):
    X = _hist().astype(global_dtype)
    ours = AdditiveChi2Sampler(sample_steps=steps, sample_interval=interval)
    ref = ska.AdditiveChi2Sampler(sample_steps=steps, sample_interval=interval)
    Z, R = ours.fit_transform(X), ref.fit_transform(X)
    assert Z.dtype == R.dtype == global_dtype
    tol = 4 * np.finfo(global_dtype).eps
    np.testing.assert_allclose(Z, R, rtol=tol, atol=tol)
    for conv in (sp.csr_matrix, sp.csc_matrix, sp.csr_array):
        S = ours.transform(conv(X))
        assert sp.issparse(S) and S.format == "csr"
        assert isinstance(S, sp.sparray) == (conv is sp.csr_array)
        np.testing.assert_array_equal(S.toarray(), Z)
        np.testing.assert_allclose(S.toarray(), ref.transform(conv(X)).toarray(), rtol=tol,
                                   atol=tol)


def _poisson_side(lam, n, L, M=60):
    """sum_m sech(lam/2 + pi m / L) - 2 L sum_{j >= n} sech(pi j L) cos(j L lam)."""
    m = np.arange(-M, M + 1)
    alias = np.sum(1 / np.cosh(lam[..., None] / 2 + np.pi * m / L), axis=-1)
    j = np.arange(n, n + int(60 / L) + 60)
    trunc = 2 * L * np.sum(1 / np.cosh(np.pi * j * L) * np.cos(j * L * lam[..., None]), axis=-1)
    return alias - trunc


@pytest.mark.parametrize("steps, interval", [(1, 0.8), (2, 0.5), (3, 0.4), (4, 1.3)])
def test_additive_exact_error_is_poisson_summation(steps, interval):
    """k-hat(a, b) / sqrt(ab) from the features equals the aliased, truncated spectrum
    (Poisson summation, computed independently), and its error against 2ab/(a + b) is that
    formula's error -- deterministic, to round-off."""
    a = np.geomspace(1e-3, 1.0, 25)
    A, B = np.meshgrid(a, a, indexing="ij")
    Z = AdditiveChi2Sampler(sample_steps=steps, sample_interval=interval).fit_transform(
        a[:, None])
    khat = Z @ Z.T
    lam = np.log(A / B)
    pred = np.sqrt(A * B) * _poisson_side(lam, steps, interval)
    np.testing.assert_allclose(khat, pred, rtol=1e-11, atol=1e-14)
    exact = 2 * A * B / (A + B)
    np.testing.assert_allclose(khat - exact, pred - exact, atol=1e-13)


def test_additive_conventions():
    X = _hist(300, 8)
    est = AdditiveChi2Sampler(sample_steps=3, n_threads=1)
    Z = est.transform(X)                        # stateless: works unfitted, as in sklearn
    for nt in (2, None, -1):
        np.testing.assert_array_equal(est.set_params(n_threads=nt).transform(X), Z)
    est.fit(X)
    with pytest.raises(ValueError, match="X has 7 features"):
        est.transform(X[:, :7])
    bad = X.copy()
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.transform(bad)
    bad[0, 1] = -0.5
    with pytest.raises(ValueError, match="Negative values in data passed to X"):
        est.transform(bad)
    with pytest.raises(ValueError, match="sample_interval"):
        AdditiveChi2Sampler(sample_steps=4).transform(X)
    with pytest.raises(ValueError, match="'sample_interval' parameter"):
        AdditiveChi2Sampler(sample_interval=0.0).fit(X)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.transform(X), Z)
    assert est.get_feature_names_out()[:2].tolist() == ["additivechi2sampler_x0_sqrt",
                                                        "additivechi2sampler_x1_sqrt"]


# ----------------------------------------------------------------------------- skewed
def test_skewed_same_as_sklearn_for_the_same_frequencies(global_dtype):
    X = _hist().astype(global_dtype)
    ours = SkewedChi2Sampler(50, skewedness=0.3, random_state=0).fit(X)
    ref = ska.SkewedChi2Sampler(skewedness=0.3, n_components=50).fit(X)
    ref.random_weights_ = np.array(ours.random_weights_)
    ref.random_offset_ = np.array(ours.random_offset_)
    Z = ours.transform(X)
    assert Z.dtype == global_dtype
    tol = 2e-5 if global_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(Z, ref.transform(X), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.transform(sp.csr_matrix(X)), Z, rtol=tol, atol=tol)
    assert ours.random_weights_.shape == (6, 50) and ours.frequencies_.shape == (50, 6)


def test_skewed_domain_errors():
    X = _hist()
    est = SkewedChi2Sampler(8, skewedness=0.5, random_state=0).fit(X)
    bad = X.copy()
    bad[3, 2] = -0.5
    with pytest.raises(ValueError, match="X may not contain entries smaller than -skewedness"):
        est.transform(bad)
    with pytest.raises(ValueError, match="smaller than -skewedness"):
        est.transform(sp.csr_matrix(bad))
    neg = SkewedChi2Sampler(8, skewedness=-0.5, random_state=0).fit(X + 1)
    neg.transform(X + 1)                                    # dense: x > 0.5 is fine
    with pytest.raises(ValueError, match="implicit zeros"):
        neg.transform(sp.csr_matrix(X + 1))
    est.set_params(skewedness=1.0)
    with pytest.raises(NotFittedError, match="parameters changed"):
        est.transform(X)


def test_skewed_threads_pickle():
    X = _hist(500, 20)
    est = SkewedChi2Sampler(301, random_state=0, n_threads=1).fit(X)
    Z = est.transform(X)
    for nt in (2, None):
        np.testing.assert_array_equal(est.set_params(n_threads=nt).transform(X), Z)
    est2 = pickle.loads(pickle.dumps(est))
    assert not est2.frequencies_.flags.writeable
    np.testing.assert_array_equal(est2.transform(X), Z)


def test_skewed_monte_carlo(global_random_seed):
    """Unbiased for prod_k sech((u_k - v_k)/2), u = log(x + c), with the phase map's exact
    variance (1 + k2/2 - k^2)/D, k2 = prod_k sech(u_k - v_k): R = 4000 fits of D = 4, on a
    near pair, a far pair and a pair with an entry near -c (adversarial: log(x + c) = -9)."""
    c = 0.2
    x = np.array([0.1, 0.5, 0.3])
    pairs = [(x, x + 0.05), (x, np.array([2.0, 0.01, 1.5])),
             (np.array([-c + 1.2e-5, 0.4, 0.2]), np.array([0.3, 0.4, 0.25]))]
    XY = np.vstack([v for p in pairs for v in p])
    D, R = 4, 4000
    seeds = np.random.SeedSequence([global_random_seed, 5]).spawn(R)
    est = np.empty((R, len(pairs)))
    for r, s in enumerate(seeds):
        Z = SkewedChi2Sampler(D, skewedness=c, random_state=s, n_threads=1).fit_transform(XY)
        est[r] = np.sum(Z[0::2] * Z[1::2], axis=1)
    for j, (a, b) in enumerate(pairs):
        dl = np.log(a + c) - np.log(b + c)
        k = np.prod(1 / np.cosh(dl / 2))
        k2 = np.prod(1 / np.cosh(dl))
        var = (1 + k2 / 2 - k * k) / D
        z = (est[:, j].mean() - k) / math.sqrt(var / R)
        s2 = est[:, j].var(ddof=1)
        p_var = variance_pvalue(est[:, j], var)[0]
        assert abs(z) < Z_MAX, (j, z)
        assert p_var > P_VAR, (j, s2 / var, p_var)
