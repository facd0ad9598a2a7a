"""Tests of analysis.stats on known distributions.

Seeded with ``global_random_seed``; each statistical assertion states its false-alarm rate.
"""

import numpy as np
import pytest
from scipy import stats as st

from analysis import stats


@pytest.mark.parametrize("p,n", [(0.0, 50), (0.01, 200), (0.2, 30), (0.5, 100), (0.97, 40)])
def test_clopper_pearson_coverage(global_random_seed, p, n):
    """One-sided CP limits at level 0.05 must cover p in >= 95% of binomial draws.

    Misses M over N = 20000 draws: M ~ Binomial(N, q) with q <= 0.05 (exact method); we fail if
    M > Binomial(N, 0.05).isf(1e-7) — false alarm <= 1e-7 per (p, n, side).
    """
    rng = np.random.default_rng([global_random_seed, int(p * 1000), n])
    N, level = 20000, 0.05
    k = rng.binomial(n, p, size=N)
    up = stats.clopper_pearson_upper(k, n, level)
    lo = stats.clopper_pearson_lower(k, n, level)
    lim = st.binom.isf(1e-7, N, level)
    assert np.sum(p > up) <= lim
    assert np.sum(p < lo) <= lim
    assert np.all(lo <= up)


def test_clopper_pearson_exact_values():
    # k = 0: upper limit solves (1 - U)^n = level
    assert stats.clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert stats.clopper_pearson_lower(0, 100, 0.05) == 0.0
    assert stats.clopper_pearson_upper(100, 100, 0.05) == 1.0
    # k = n: lower limit solves L^n = level
    assert stats.clopper_pearson_lower(100, 100, 0.05) == pytest.approx(0.05 ** (1 / 100))


def test_bonferroni_and_threshold():
    assert stats.bonferroni(1e-5, 10) == pytest.approx(1e-6)
    assert stats.z_threshold(0.05) == pytest.approx(1.959964, abs=1e-5)
    assert stats.z_threshold(0.05, two_sided=False) == pytest.approx(1.644854, abs=1e-5)
    with pytest.raises(ValueError, match="alpha"):
        stats.bonferroni(1.5, 3)


def test_z_test_exact_variance(global_random_seed):
    """Normal data with known variance: |z| > 5.3 has probability 1e-7 (false alarm)."""
    rng = np.random.default_rng(global_random_seed)
    x = rng.normal(0.3, 2.0, size=(5000, 4))
    z, mean, se = stats.z_test_mean(x, 0.3, exact_var=4.0)
    assert np.all(np.abs(z) < 5.3)
    assert se == pytest.approx(2.0 / np.sqrt(5000))
    # power: a 0.35 shift is 12.4 standard errors, so z_bad < -5 unless the true z > 7.4
    # (probability ~1e-13 per column)
    z_bad, _, _ = stats.z_test_mean(x, 0.65, exact_var=4.0)
    assert np.all(z_bad < -5)


def test_variance_pvalue_level_on_bernoulli_means(global_random_seed):
    """The kurtosis-corrected variance test keeps its level on skewed, light/heavy-tailed data.

    3000 data sets of R = 400 Bernoulli(0.05)-means of 4 (kurtosis far from 3). Rejections at level
    0.01 must not exceed Binomial(3000, 0.02).isf(1e-7): actual level <= 2x nominal, false alarm
    <= 1e-7. A wrong variance (x1.5) must be rejected in most data sets.
    """
    rng = np.random.default_rng(global_random_seed)
    p, m, R, N = 0.05, 4, 400, 3000
    x = rng.binomial(m, p, size=(R, N)) / m
    v0 = p * (1 - p) / m
    pv, ratio, nu = stats.variance_pvalue(x, v0)
    assert np.sum(pv < 0.01) <= st.binom.isf(1e-7, N, 0.02)
    pv_bad, _, _ = stats.variance_pvalue(x, 1.5 * v0)
    assert np.mean(pv_bad < 0.01) > 0.5
    lo, s2, hi = stats.variance_limits(x, 0.01)
    assert np.mean(lo > v0) <= st.binom.isf(1e-7, N, 0.02) / N
    assert np.mean(hi < v0) <= st.binom.isf(1e-7, N, 0.02) / N


def test_loglog_slope_exact():
    x = np.geomspace(10, 1e4, 6)
    r = stats.loglog_slope(x, 3.0 * x ** -0.5)
    assert r["slope"] == pytest.approx(-0.5)
    assert r["intercept"] == pytest.approx(np.log(3.0))
    assert r["se"] == pytest.approx(0.0, abs=1e-12)


def test_quantile_ci_coverage(global_random_seed):
    """Order-statistic CI for the 0.9-quantile of U(0,1) (true value 0.9) at level 0.05:
    misses over 2000 repetitions <= Binomial(2000, 0.05).isf(1e-7)."""
    rng = np.random.default_rng(global_random_seed)
    miss = 0
    for _ in range(2000):
        lo, est, hi = stats.quantile_ci(rng.random(200), 0.9, 0.05)
        miss += not (lo <= 0.9 <= hi)
    assert miss <= st.binom.isf(1e-7, 2000, 0.05)
