"""Tests of randfeat.kernels: exact kernels, their spectral samplers, conventions and errors.

Statistical design (THEORY.md §5).  Every statistical check uses a fixed seed derived from the
``global_random_seed`` fixture (default 42; ``RANDFEAT_TESTS_SEEDS=all`` runs 0..99) and one of
two rules:

* z-tests of a Monte Carlo mean against its exact value, failing when |z| > 5.  With the exact
  variance of cos(w'Delta) (THEORY §2.3: (1 + k(2 Delta) - 2 k(Delta)^2)/2) the statistic is
  asymptotically N(0, 1): false alarm 5.7e-7 per check.
* Kolmogorov–Smirnov tests of samples against a known law, failing when p < 1e-6 (exact false
  alarm 1e-6 per check, the KS statistic being distribution free).

A test function makes at most ~60 such checks, so its family-wise false-alarm rate is below
6e-5 per seed (Bonferroni), and below ~0.02 over the whole file for all 100 seeds.
"""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.gaussian_process.kernels import Matern
from sklearn.metrics.pairwise import rbf_kernel

from randfeat import kernels as K
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
    ShiftInvariantKernel,
    get_kernel,
)

Z_MAX = 5.0
KS_P_MIN = 1e-6


def _all_kernels(sigma=1.0):
    return [
        GaussianKernel(sigma), LaplacianKernel(sigma), CauchyKernel(sigma),
        MaternKernel(sigma, nu=0.5), MaternKernel(sigma, nu=1.5), MaternKernel(sigma, nu=2.5),
        BallSumKernel(sigma, t=1), BallSumKernel(sigma, t=2), BallSumKernel(sigma, t=3, dim=8),
    ]


KERNEL_IDS = ["gauss", "lap", "cauchy", "mat05", "mat15", "mat25", "ball1", "ball2", "ball3d8"]


def _rng(seed, *tag):
    return np.random.default_rng(np.random.SeedSequence([seed, *tag]))


# ------------------------------------------------------------------------------------------
# deterministic properties
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kern", _all_kernels(0.7), ids=KERNEL_IDS)
def test_k_at_zero_is_exactly_one(kern):
    for d in (1, 3, 8):
        assert kern.k(np.zeros(d)) == 1.0
        assert kern.k(np.zeros((4, 2, d))).shape == (4, 2)
        assert np.all(kern.k(np.zeros((4, 2, d))) == 1.0)
    X = np.random.default_rng(0).normal(size=(6, 5)) * 3
    G = kern(X)
    assert np.all(np.diag(G) == 1.0)


@pytest.mark.parametrize("kern", _all_kernels(1.3), ids=KERNEL_IDS)
def test_gram_matches_k_of_differences(kern):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 4)) * 2
    Y = rng.normal(size=(5, 4)) * 2
    G = kern(X, Y)
    assert G.shape == (7, 5) and G.dtype == np.float64
    ref = kern.k(X[:, None, :] - Y[None, :, :])
    np.testing.assert_allclose(G, ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kern(X), kern(X).T, rtol=0, atol=0)
    # symmetric in Delta, bounded by 1
    assert np.allclose(kern.k(X - X[::-1]), kern.k(X[::-1] - X), rtol=1e-14, atol=0)
    assert np.all(np.abs(G) <= 1.0)


@pytest.mark.parametrize("kern", _all_kernels(1.0), ids=KERNEL_IDS)
def test_gram_is_positive_semidefinite(kern):
    X = np.random.default_rng(2).normal(size=(40, 3)) * 1.5
    eig = np.linalg.eigvalsh(kern(X))
    assert eig.min() > -1e-10


def test_sigma_scales_delta():
    rng = np.random.default_rng(3)
    delta = rng.normal(size=(10, 3))
    for kern1, kern2 in zip(_all_kernels(1.0), _all_kernels(2.5), strict=True):
        np.testing.assert_allclose(kern2.k(delta * 2.5), kern1.k(delta), rtol=1e-12, atol=1e-15)


def test_closed_forms():
    delta = np.random.default_rng(4).normal(size=(20, 3)) * 2
    r = np.linalg.norm(delta, axis=-1)
    l1 = np.abs(delta).sum(-1)
    s = 1.7
    np.testing.assert_allclose(GaussianKernel(s).k(delta), np.exp(-r**2 / (2 * s**2)), rtol=1e-14)
    np.testing.assert_allclose(LaplacianKernel(s).k(delta), np.exp(-l1 / s), rtol=1e-14)
    np.testing.assert_allclose(CauchyKernel(s).k(delta), np.prod(1 / (1 + delta**2 / s**2), -1),
                               rtol=1e-13)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0])
def test_matern_matches_sklearn(nu, sigma):
    X = np.random.default_rng(5).normal(size=(15, 4))
    Y = np.random.default_rng(6).normal(size=(9, 4))
    np.testing.assert_allclose(MaternKernel(sigma, nu=nu)(X, Y),
                               Matern(length_scale=sigma, nu=nu)(X, Y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("gamma", [0.01, 0.5, 3.0])
def test_bandwidth_pin_gamma(gamma, global_random_seed):
    """exp(-gamma ||D||^2) <-> sigma = 1/sqrt(2 gamma) <-> w ~ N(0, 2 gamma I) (pitfall §6.1)."""
    sigma = 1 / math.sqrt(2 * gamma)
    kern = GaussianKernel(sigma)
    X = np.random.default_rng(7).normal(size=(8, 3))
    np.testing.assert_allclose(kern(X), rbf_kernel(X, gamma=gamma), rtol=1e-12)
    W = kern.sample(20_000, 3, _rng(global_random_seed, 1))
    res = stats.kstest(W.ravel(), stats.norm(scale=math.sqrt(2 * gamma)).cdf)
    assert res.pvalue > KS_P_MIN, res
    # and not N(0, gamma I): the historical factor-2 bug would be caught
    bad = stats.kstest(W.ravel(), stats.norm(scale=math.sqrt(gamma)).cdf)
    assert bad.pvalue < 1e-6


def test_ballsum_closed_forms_d1_d3():
    r = np.concatenate([[1e-12, 1e-6, 1e-3], np.linspace(0.01, 60, 400)])
    k1 = BallSumKernel(1.0, t=1).k(r[:, None])
    np.testing.assert_allclose(k1, np.sin(r) / r, rtol=1e-12, atol=1e-15)
    k3 = BallSumKernel(1.0, t=1).k(np.stack([r, 0 * r, 0 * r], -1))
    rr = r[r > 0.05]  # the closed form cancels catastrophically near 0
    ref3 = 3 * (np.sin(rr) - rr * np.cos(rr)) / rr**3
    np.testing.assert_allclose(k3[r > 0.05], ref3, rtol=1e-9, atol=1e-14)
    # near 0: 1 - r^2/10 + r^4/280
    small = r[:3]
    np.testing.assert_allclose(k3[:3], 1 - small**2 / 10 + small**4 / 280, rtol=1e-15)
    # t-th power, sigma scaling, negative lobes
    k = BallSumKernel(2.0, t=3).k(np.array([[8.0]]))
    np.testing.assert_allclose(k, (np.sin(4.0) / 4.0) ** 3, rtol=1e-13)
    assert BallSumKernel(1.0, t=1).k(np.array([4.0])) < 0


@pytest.mark.parametrize("d", [2, 5, 16, 81, 82, 128, 1024, 4096])
def test_ballsum_against_mpmath(d):
    """Every evaluation regime of the ball's characteristic function (series, Bessel form,
    log-space Bessel, ratio recurrence below the order) against 40-digit mpmath."""
    mpmath = pytest.importorskip("mpmath")
    nu = d / 2
    r = np.concatenate([[0.0, 1e-5, 0.3], np.geomspace(0.5, 20 * math.sqrt(d), 25),
                        np.linspace(1.0, 1.5 * nu, 12)])
    got = BallSumKernel(1.0).k(np.stack([r] + [0 * r] * (d - 1), -1))
    with mpmath.workdps(40):
        ref = np.array([float(mpmath.hyp0f1(nu + 1, -mpmath.mpf(x) ** 2 / 4, maxprec=20000))
                        for x in r])
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-13)


def test_ballsum_dim_handling():
    kern = BallSumKernel(1.0, t=2, dim=8)
    delta = np.array([[1.0, 2.0, 0.0]])
    padded = np.array([[1.0, 2.0, 0, 0, 0, 0, 0, 0]])
    assert kern.k(delta) == BallSumKernel(1.0, t=2).k(padded)
    with pytest.raises(ValueError, match="dim=8.*9 > 8"):
        kern.k(np.zeros(9))
    with pytest.raises(ValueError, match="dim=8"):
        kern.sample(3, 9, 0)
    with pytest.raises(ValueError, match="dim=8"):
        kern(np.zeros((2, 9)))


def test_sigma_p2_values():
    s = 0.5
    assert GaussianKernel(s).sigma_p2(7) == pytest.approx(7 / s**2)
    assert CauchyKernel(s).sigma_p2(7) == pytest.approx(14 / s**2)
    assert LaplacianKernel(s).sigma_p2(7) == np.inf
    assert MaternKernel(s, nu=0.5).sigma_p2(7) == np.inf
    assert MaternKernel(s, nu=1.5).sigma_p2(7) == pytest.approx(21 / s**2)
    assert MaternKernel(s, nu=2.5).sigma_p2(7) == pytest.approx(35 / (3 * s**2))
    assert BallSumKernel(s, t=3).sigma_p2(7) == pytest.approx(3 * 7 / 9 / s**2)
    assert BallSumKernel(s, t=3, dim=16).sigma_p2(7) == pytest.approx(3 * 7 / 18 / s**2)


@pytest.mark.parametrize("kern", [k for k in _all_kernels(0.8) if k.name != "laplacian"
                                  and getattr(k, "nu", 2) != 0.5],
                         ids=[i for i in KERNEL_IDS if i not in ("lap", "mat05")])
def test_sigma_p2_is_minus_trace_hessian(kern):
    """sigma_p^2 = -tr Hess k(0) (THEORY §1), by central differences along the axes."""
    d, h = 5, 1e-5  # Matern-3/2 has an |r|^3 term: relative error O(h)
    eye = np.eye(d) * h
    fd = float(np.sum(2 * (1 - kern.k(eye)) / h**2))
    assert fd == pytest.approx(kern.sigma_p2(d), rel=1e-4)


# ------------------------------------------------------------------------------------------
# samplers
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kern", _all_kernels(0.9), ids=KERNEL_IDS)
def test_sample_shape_dtype_and_reproducible(kern):
    W = kern.sample(50, 3, np.random.default_rng(0))
    assert W.shape == (50, 3) and W.dtype == np.float64 and W.flags.c_contiguous
    np.testing.assert_array_equal(W, kern.sample(50, 3, np.random.default_rng(0)))
    assert kern.sample(0, 3, 0).shape == (0, 3)
    if kern.isotropic:
        r = kern.sample_radius(50, 3, np.random.default_rng(0))
        assert r.shape == (50,) and r.dtype == np.float64 and np.all(r >= 0)
    else:
        with pytest.raises(ValueError, match="not isotropic"):
            kern.sample_radius(5, 3, 0)


def test_coordinate_laws_ks(global_random_seed):
    """Marginal laws of the frequencies (THEORY §1): KS at p < 1e-6, 8 checks."""
    sigma, n, d = 1.7, 4000, 3
    checks = [
        (GaussianKernel(sigma), stats.norm(scale=1 / sigma)),
        (LaplacianKernel(sigma), stats.cauchy(scale=1 / sigma)),
        (CauchyKernel(sigma), stats.laplace(scale=1 / sigma)),
        (MaternKernel(sigma, nu=0.5), stats.t(df=1, scale=1 / sigma)),
        (MaternKernel(sigma, nu=1.5), stats.t(df=3, scale=1 / sigma)),
        (MaternKernel(sigma, nu=2.5), stats.t(df=5, scale=1 / sigma)),
    ]
    for i, (kern, law) in enumerate(checks):
        W = kern.sample(n, d, _rng(global_random_seed, 10, i))
        for j in range(d):
            res = stats.kstest(W[:, j], law.cdf)
            assert res.pvalue > KS_P_MIN, (kern, j, res)


def test_radial_laws_ks(global_random_seed):
    """Radial laws: chi_d/sigma, sqrt(d F(d, 2nu))/sigma, U^(1/D)/sigma (t=1), for sample_radius
    and for the norms of sample()."""
    sigma, n = 0.6, 4000
    for d in (1, 4, 64):
        cases = [(GaussianKernel(sigma), stats.chi(d, scale=1 / sigma).cdf)]
        for nu in (0.5, 1.5, 2.5):
            f = stats.f(d, 2 * nu)
            cases.append((MaternKernel(sigma, nu=nu),
                          lambda x, f=f, d=d: f.cdf((x * sigma) ** 2 / d)))
        cases.append((BallSumKernel(sigma, t=1), lambda x, d=d: np.clip(x * sigma, 0, 1) ** d))
        for i, (kern, cdf) in enumerate(cases):
            r = kern.sample_radius(n, d, _rng(global_random_seed, 20, d, i))
            assert stats.kstest(r, cdf).pvalue > KS_P_MIN, (kern, d)
            W = kern.sample(n, d, _rng(global_random_seed, 21, d, i))
            assert stats.kstest(np.linalg.norm(W, axis=1), cdf).pvalue > KS_P_MIN, (kern, d)


def test_isotropic_directions_uniform(global_random_seed):
    """For isotropic kernels w/||w|| is uniform on the sphere: w_1/||w|| has the law of the first
    coordinate of a uniform unit vector, (1 + u)/2 ~ Beta((d-1)/2, (d-1)/2)."""
    d = 5
    law = stats.beta((d - 1) / 2, (d - 1) / 2)
    for i, kern in enumerate([MaternKernel(1.0, nu=1.5), BallSumKernel(1.0, t=2),
                              BallSumKernel(1.0, t=1, dim=d)]):
        W = kern.sample(4000, d, _rng(global_random_seed, 30, i))
        u = W[:, 0] / np.linalg.norm(W, axis=1)
        assert stats.kstest((1 + u) / 2, law.cdf).pvalue > KS_P_MIN, kern


def _cos_ztest(kern, W, deltas):
    """z-statistics of mean cos(W Delta) against k(Delta) with the exact variance."""
    kd = kern.k(deltas)
    k2 = kern.k(2 * deltas)
    var = (1 + k2 - 2 * kd**2) / 2
    est = np.cos(W @ deltas.T).mean(axis=0)
    z = (est - kd) / np.sqrt(var / W.shape[0])
    return z, est, kd


@pytest.mark.parametrize("kern", _all_kernels(1.3), ids=KERNEL_IDS)
def test_bochner_characteristic_function(kern, global_random_seed):
    """E cos(w' Delta) = k(Delta) for w from ``sample`` (P1), d = 3, ||Delta||/sigma in 0.1..4,
    8 directions x 6 radii = 48 z-tests at |z| <= 5 (family false alarm < 3e-5)."""
    d, n = 3, 20_000
    rng = _rng(global_random_seed, 40)
    dirs = rng.normal(size=(8, d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    radii = np.array([0.1, 0.5, 1.0, 2.0, 3.0, 4.0]) * kern.sigma
    deltas = (dirs[:, None, :] * radii[None, :, None]).reshape(-1, d)
    W = kern.sample(n, d, _rng(global_random_seed, 41))
    z, est, kd = _cos_ztest(kern, W, deltas)
    assert np.abs(z).max() < Z_MAX, (z, est, kd)


@pytest.mark.parametrize("D, d, t", [(8, 3, 1), (8, 3, 2), (16, 16, 3), (1, 1, 2), (2, 1, 1)])
def test_ballsum_padded_sampler(D, d, t, global_random_seed):
    """BallSum with dim=D > d: frequencies are d-coordinate marginals of the D-dim law, so
    E cos(w'Delta) = k_t^{(D)}(Delta); the radii of sample_radius have the law of ||sample||."""
    kern = BallSumKernel(0.8, t=t, dim=D)
    W = kern.sample(20_000, d, _rng(global_random_seed, 50))
    rng = _rng(global_random_seed, 51)
    deltas = rng.normal(size=(12, d))
    deltas *= (rng.uniform(0.2, 5, size=12) / np.linalg.norm(deltas, axis=1))[:, None]
    z, est, kd = _cos_ztest(kern, W, deltas)
    assert np.abs(z).max() < Z_MAX, (z, est, kd)
    r = kern.sample_radius(4000, d, _rng(global_random_seed, 52))
    r2 = np.linalg.norm(kern.sample(4000, d, _rng(global_random_seed, 53)), axis=1)
    assert stats.ks_2samp(r, r2).pvalue > KS_P_MIN


def test_sigma_p2_monte_carlo(global_random_seed):
    """Mean ||w||^2 of the samplers vs sigma_p2 (kernels whose ||w||^2 has a finite variance;
    z-test with the sample standard deviation, n = 20000, |z| < 5)."""
    d = 4
    for i, kern in enumerate([GaussianKernel(0.7), CauchyKernel(0.7), MaternKernel(0.7, nu=2.5),
                              BallSumKernel(0.7, t=3), BallSumKernel(0.7, t=2, dim=9)]):
        sq = (kern.sample(20_000, d, _rng(global_random_seed, 60, i)) ** 2).sum(1)
        if kern.name == "matern":  # ||w||^2 ~ d F(d, 5) / sigma^2: exact variance known
            f = stats.f(d, 5)
            sd = math.sqrt(f.var()) * d / kern.sigma**2
        else:
            sd = sq.std()
        z = (sq.mean() - kern.sigma_p2(d)) / (sd / math.sqrt(sq.size))
        assert abs(z) < Z_MAX, (kern, z)


# ------------------------------------------------------------------------------------------
# lookup and errors
# ------------------------------------------------------------------------------------------
def test_get_kernel_names_and_instances():
    assert get_kernel("gaussian") == GaussianKernel(1.0)
    assert get_kernel("Gaussian", sigma=2) == GaussianKernel(2.0)
    assert get_kernel("matern", 0.5, nu=2.5) == MaternKernel(0.5, nu=2.5)
    assert get_kernel("matern") == MaternKernel(1.0, nu=1.5)
    assert get_kernel("ballsum", t=2) == BallSumKernel(1.0, t=2)
    assert get_kernel("laplacian", 3.0).sigma == 3.0
    assert get_kernel("cauchy").name == "cauchy"
    inst = BallSumKernel(2.0, t=3, dim=4)
    assert get_kernel(inst) is inst
    assert set(K.KERNEL_NAMES) == {"gaussian", "laplacian", "cauchy", "matern", "ballsum",
                                   "inverse_power", "stretched_exponential"}
    assert set(K.kernel_names("fourier")) == {"gaussian", "laplacian", "cauchy", "matern",
                                              "ballsum"}
    assert set(K.kernel_names("fastfood")) == {"gaussian", "matern", "ballsum"}
    assert set(K.kernel_names("binning")) == {"laplacian", "inverse_power",
                                              "stretched_exponential"}
    assert get_kernel("rbf") == GaussianKernel(1.0)
    assert all(isinstance(k, ShiftInvariantKernel) for k in _all_kernels())
    assert repr(MaternKernel(2.0, nu=0.5)) == "MaternKernel(sigma=2.0, nu=0.5)"
    assert hash(GaussianKernel(1.0)) == hash(GaussianKernel(1))
    assert GaussianKernel(1.0).isotropic and not LaplacianKernel().isotropic


def test_errors():
    with pytest.raises(ValueError, match=r"unknown kernel 'rbff'.*gaussian.*laplacian.*cauchy"
                                         r".*matern.*ballsum"):
        get_kernel("rbff")
    with pytest.raises(TypeError, match="kernel must be a name"):
        get_kernel(3)
    with pytest.raises(TypeError, match="does not take parameters"):
        get_kernel("gaussian", nu=1.5)
    with pytest.raises(TypeError, match="cannot be applied"):
        get_kernel(GaussianKernel(), t=2)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match=f"sigma must be a positive finite.*{bad}"):
            GaussianKernel(bad)
        with pytest.raises(ValueError, match="sigma must be a positive finite"):
            get_kernel("ballsum", sigma=bad)
    with pytest.raises(TypeError, match="sigma must be"):
        GaussianKernel("1")
    for bad in (1, 2.0, 0.25, "1.5", None):
        with pytest.raises(ValueError, match=r"nu must be one of 0.5, 1.5, 2.5.*" + repr(bad)[:3]):
            MaternKernel(1.0, nu=bad)
    for bad in (0, -1, 1.5, "2", None):
        with pytest.raises(ValueError, match="t must be an integer >= 1"):
            BallSumKernel(1.0, t=bad)
    assert BallSumKernel(1.0, t=2.0).t == 2
    with pytest.raises(ValueError, match="dim must be an integer >= 1, got 0"):
        BallSumKernel(1.0, dim=0)
    kern = GaussianKernel()
    with pytest.raises(ValueError, match="X has 3 features but Y has 2"):
        kern(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        kern(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="scalar"):
        kern.k(1.0)
    with pytest.raises(ValueError, match="n must be an integer >= 0, got -1"):
        kern.sample(-1, 3, 0)
    with pytest.raises(ValueError, match="d must be an integer >= 1, got 0"):
        kern.sample(3, 0, 0)
    with pytest.raises(TypeError, match="random_state must be"):
        kern.sample(3, 2, "seed")
