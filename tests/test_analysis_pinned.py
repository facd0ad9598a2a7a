"""Bounds and closed forms of analysis pinned to values computed independently: by mpmath at 30
digits from the paper's statement (not from analysis.bounds' code), by numerical integration, or
by brute force from the explicit matrices.  A bound 10x looser, or a formula off by a factor,
fails here (the checks cannot see a bound that is too loose)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from analysis import bounds, fastfood_law

mp.mp.dps = 30
ALPHAS = [0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]


def _C(a):
    """LSS 2013 Thm 4 as printed: C(alpha) = 6 alpha^4 (e^{-alpha^2} + alpha^2 / 3)."""
    a = mp.mpf(a)
    return 6 * a ** 4 * (mp.e ** (-a ** 2) + a ** 2 / 3)


@pytest.mark.parametrize("a", ALPHAS)
def test_fastfood_C_pinned(a):
    assert float(bounds.fastfood_C(a)) == pytest.approx(float(_C(a)), rel=1e-13)


def test_fastfood_C_hand_values():
    # by hand: C(1) = 6 (1/e + 1/3) = 4.2072766...; C(2) = 96 (e^-4 + 4/3) = 129.758...
    assert float(bounds.fastfood_C(1.0)) == pytest.approx(4.207276647028654, rel=1e-13)
    assert float(bounds.fastfood_C(2.0)) == pytest.approx(96 * (math.exp(-4) + 4 / 3), rel=1e-13)
    assert float(bounds.fastfood_C(0.0)) == 0.0


@pytest.mark.parametrize("a", ALPHAS)
@pytest.mark.parametrize("n", [16, 64, 1024])
def test_fastfood_thm5_and_thm4_pinned(a, n):
    am = mp.mpf(a)
    first = (1 - mp.e ** (-am ** 2)) ** 2
    thm5 = 2 * first / n + _C(a) / n                     # LSS Thm 5: (2/n)(1-e^-a^2)^2 + C/n
    thm4 = (first / 2 + _C(a)) / n                      # LSS Thm 4 (block of n = d rows) / d^2
    assert float(bounds.fastfood_thm5_var(a, n)) == pytest.approx(float(thm5), rel=1e-12)
    assert float(bounds.fastfood_thm4_var_mean(a, n)) == pytest.approx(float(thm4), rel=1e-12)


@pytest.mark.parametrize("delta,d,a", [(0.1, 16, 1.0), (0.01, 64, 0.5), (0.0025, 256, 2.0)])
def test_fastfood_thm6_threshold_pinned(delta, d, a):
    t = 2 / mp.sqrt(d) * a * mp.sqrt(mp.log(2 / mp.mpf(delta)) * mp.log(2 * d / mp.mpf(delta)))
    assert float(bounds.fastfood_thm6_threshold(delta, d, a)) == pytest.approx(float(t),
                                                                               rel=1e-12)


@pytest.mark.parametrize("D,eps", [(4, 0.5), (64, 0.1), (1000, 0.05)])
def test_hoeffding_pinned(D, eps):
    # Hoeffding 1963 Thm 2, terms in [-1, 1] (width 2): 2 exp(-2 D eps^2 / 4)
    assert float(bounds.hoeffding(D, eps, 2.0)) == pytest.approx(
        float(2 * mp.e ** (-2 * D * mp.mpf(eps) ** 2 / 4)), rel=1e-12)


@pytest.mark.parametrize("P,eps,d,alpha,diam", [(100, 0.5, 1, 1.0, 1.0), (5000, 0.2, 3, 2.0, 1.5),
                                                (1e5, 0.05, 10, 0.5, 3.0)])
def test_claim2_pinned(P, eps, d, alpha, diam):
    # RR 2007 Claim 2: 36 d P alpha diam exp(-(P eps^2/8 + ln(eps/L)) / (d + 1)), L = 1
    e = mp.mpf(eps)
    val = 36 * d * P * alpha * diam * mp.e ** (-(P * e ** 2 / 8 + mp.log(e)) / (d + 1))
    assert float(bounds.claim2_failure(P, eps, d, alpha, diam, 1.0)) == pytest.approx(
        float(val), rel=1e-12)


@pytest.mark.parametrize("r", [0.1, 0.7, 1.0, 2.5])
def test_rff_gaussian_variance_by_integration(r):
    """Var[cos(w r)] with w ~ N(0, 1), by quadrature of the Gaussian integral."""
    phi = lambda w: mp.e ** (-w ** 2 / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
    m1 = mp.quad(lambda w: mp.cos(w * r) * phi(w), [-mp.inf, mp.inf])
    m2 = mp.quad(lambda w: mp.cos(w * r) ** 2 * phi(w), [-mp.inf, mp.inf])
    assert float(bounds.var_rff_gaussian(r)) == pytest.approx(float(m2 - m1 ** 2), rel=1e-10)


@pytest.mark.parametrize("k", [0.05, 0.3, 0.5, 0.9])
def test_binning_variance_is_bernoulli(k):
    assert float(bounds.var_binning(k)) == pytest.approx(k * (1 - k), rel=1e-15)


def test_claim2_monotone_beyond_peak_exact():
    """(Replaces a flaky float comparison at the peak.)  log f(P) = c + log P - P eps^2/(8(d+1))
    is strictly decreasing for P > P* = 8(d+1)/eps^2: checked in 30-digit arithmetic on a grid
    that starts at the peak, and the float implementation agrees to 1e-12 relative."""
    for d in (1, 3, 20):
        for eps in (0.01, 0.3, 1.0):
            p_star = mp.mpf(8) * (d + 1) / mp.mpf(eps) ** 2
            grid = [p_star * (1 + mp.mpf(f)) for f in (0, 1e-6, 1e-3, 0.5, 1, 10, 99)]
            e = mp.mpf(eps)
            vals = [36 * d * p * mp.e ** (-(p * e ** 2 / 8 + mp.log(e)) / (d + 1)) for p in grid]
            assert all(b < a for a, b in zip(vals, vals[1:], strict=False))
            fl = [float(bounds.claim2_failure(float(p), eps, d, 1.0, 1.0, 1.0)) for p in grid]
            assert fl == pytest.approx([float(v) for v in vals], rel=1e-12)


# ------------------------------------------------------------ the exact Fastfood block variance
def _explicit_block_variance(v, n_fits, rng, signs=True, permute=True):
    """Brute force from the explicit matrices of LSS §3: V' = H G Pi H B / (sigma sqrt d), one
    block, sigma = 1; the sample variance (and its standard error) of (1/d) sum_i cos(V'v)_i."""
    d = v.size
    H = fastfood_law.hadamard(d)
    out = np.empty(n_fits)
    for t in range(n_fits):
        b = rng.choice([-1.0, 1.0], size=d) if signs else np.ones(d)
        p = rng.permutation(d) if permute else np.arange(d)
        g = rng.standard_normal(d)
        Vp = H @ np.diag(g) @ np.eye(d)[p] @ H @ np.diag(b) / np.sqrt(d)
        out[t] = np.cos(Vp @ v).mean()
    c = out - out.mean()
    s2 = c @ c / (n_fits - 1)
    se = math.sqrt(max((c ** 4).mean() - s2 ** 2 * (n_fits - 3) / (n_fits - 1), 0) / n_fits)
    return s2, se


@pytest.mark.parametrize("name,a,kw", [
    ("2-sparse (e_0 + e_1)", 2.0, {}), ("2-sparse (e_0 + e_1)", 2.0, dict(permute=False)),
    ("Hadamard row 5", 1.0, {}), ("Hadamard row 5", 1.0, dict(signs=False)),
    ("axis e_3", 1.5, {})])
def test_block_variance_matches_explicit_matrices(name, a, kw, global_random_seed):
    """fastfood_law's closed form against the explicit product of matrices (numpy, no
    randfeat).  |difference| <= 5 combined standard errors: false-alarm rate ~6e-7 per case."""
    d = 8
    v = fastfood_law.adversarial_directions(d)[name] * a
    rng = np.random.default_rng(global_random_seed)
    s2, se = _explicit_block_variance(v, 3000, rng, **kw)
    law, law_se = fastfood_law.block_variance(v[None], n_draws=20000, random_state=rng, **kw)
    assert abs(s2 - law[0]) <= 5 * math.hypot(se, law_se[0]), (s2, law[0], se)


def test_block_variance_limits():
    """Without B a Hadamard row makes the block one frequency (d x the i.i.d. variance); an axis
    gives u = +-1 (all c_m = 0 for m != 0): exactly the i.i.d. variance, whatever B and Pi."""
    d, a = 16, 1.3
    iid = float(bounds.var_rff_gaussian(a)) / d
    dirs = fastfood_law.adversarial_directions(d)
    var, se = fastfood_law.block_variance(dirs["Hadamard row 5"][None] * a, signs=False,
                                          n_draws=200)
    assert var[0] == pytest.approx(d * iid, rel=1e-12) and se[0] < 1e-6 * var[0]
    var, _ = fastfood_law.block_variance(dirs["axis e_3"][None] * a, n_draws=200)
    assert var[0] == pytest.approx(iid, rel=1e-12)
    assert np.allclose(fastfood_law.fwht(np.eye(d)), fastfood_law.hadamard(d))
