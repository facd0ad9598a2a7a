"""Statistical helpers for the Monte Carlo checks (THEORY.md §5).

Every function returns plain numbers / arrays; nothing here draws random numbers.

False alarms
------------
Each check states a *family* false-alarm rate ``alpha`` (probability that the check fails although
every claim it tests is true).  Inside a check the ``m`` individual comparisons share it by
Bonferroni: each comparison is run at level ``alpha / m`` (:func:`bonferroni`).  Two-sided z-tests
then use the threshold :func:`z_threshold`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats as _st

__all__ = [
    "bonferroni",
    "z_threshold",
    "z_test_mean",
    "clopper_pearson",
    "clopper_pearson_upper",
    "clopper_pearson_lower",
    "sup_tail_detectable",
    "variance_test",
    "variance_ratio_interval",
    "loglog_slope",
    "loglog_crossing",
    "quantile_ci",
    "POWER",
    "z_power",
    "mean_detectable",
    "bisect_smallest",
    "binomial_needed_count",
]

#: The detection probability at which the checks compute their ``detectable`` effects
#: (analysis.power).  0.98 rather than the contract's minimum 0.9: each effect is audited by
#: re-running the check at 50 seeds and must be detected at >= 45 of them, which a true power of
#: exactly 0.9 passes only with probability 0.62; at 0.98, P(Binomial(50, 0.98) >= 45) = 0.999.
#: The margin also covers the normal and scaled chi-square approximations behind the numbers.
POWER = 0.98


def bonferroni(alpha: float, m: int) -> float:
    """Per-comparison level for a family of ``m`` comparisons at family level ``alpha``."""
    if not (0 < alpha < 1):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    return alpha / max(int(m), 1)


def z_threshold(level: float, two_sided: bool = True) -> float:
    """Threshold z* with P(|Z| > z*) = level (two-sided) or P(Z > z*) = level (one-sided)."""
    return float(_st.norm.isf(level / 2 if two_sided else level))


def z_test_mean(samples, target, *, exact_var=None, axis=0):
    """z statistic of the sample mean against ``target``.

    Parameters
    ----------
    samples : array, replicates along ``axis``.
    target : array broadcastable to the mean.
    exact_var : array or None
        Exact variance of ONE replicate (e.g. V/D of THEORY §2.3).  When given the z-score uses it
        (z = (mean - target) / sqrt(V/R)); otherwise the unbiased sample variance.

    Returns
    -------
    z, mean, se : arrays
    """
    x = np.asarray(samples, dtype=float)
    r = x.shape[axis]
    mean = x.mean(axis=axis)
    var = np.asarray(exact_var, dtype=float) if exact_var is not None else x.var(axis=axis, ddof=1)
    se = np.sqrt(var / r)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean - np.asarray(target, dtype=float)) / se
    # zero variance and exact agreement -> z = 0; zero variance and disagreement -> inf
    z = np.where(se > 0, z, np.where(np.isclose(mean, target, rtol=0, atol=1e-12), 0.0, np.inf))
    return z, mean, se


def clopper_pearson_upper(k, n, level):
    """One-sided Clopper–Pearson upper limit U: P_p(X <= k) = level at p = U (U = 1 if k = n).

    Coverage P(p <= U) >= 1 - level for every p (exact, conservative).
    """
    k = np.asarray(k)
    n = np.asarray(n)
    u = _st.beta.ppf(1 - level, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k >= n, 1.0, u)


def clopper_pearson_lower(k, n, level):
    """One-sided Clopper–Pearson lower limit L (L = 0 if k = 0); P(p >= L) >= 1 - level."""
    k = np.asarray(k)
    n = np.asarray(n)
    lo = _st.beta.ppf(level, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k <= 0, 0.0, lo)


def clopper_pearson(k, n, level):
    """Two-sided interval with ``level/2`` in each tail."""
    return clopper_pearson_lower(k, n, level / 2), clopper_pearson_upper(k, n, level / 2)


def variance_test(samples, v0, *, axis=0):
    """z statistic of the sample variance against a hypothesised variance ``v0``.

    Uses the delta-method standard error of s^2 from the *sample* fourth central moment,
    se(s^2) = sqrt((m4 - s^4 (R-3)/(R-1)) / R), which does not assume normal data (the Monte Carlo
    estimates are bounded averages; for Bernoulli-like estimates the kurtosis is far from 3).

    Returns z, ratio s^2 / v0, se_ratio.
    """
    x = np.asarray(samples, dtype=float)
    r = x.shape[axis]
    c = x - x.mean(axis=axis, keepdims=True)
    s2 = (c ** 2).sum(axis=axis) / (r - 1)
    m4 = (c ** 4).mean(axis=axis)
    var_s2 = np.maximum(m4 - s2 ** 2 * (r - 3) / (r - 1), 0.0) / r
    se = np.sqrt(var_s2)
    v0 = np.asarray(v0, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (s2 - v0) / se
        ratio = s2 / v0
        se_ratio = se / v0
    return z, ratio, se_ratio


def variance_ratio_interval(samples, v0, level, *, axis=0):
    """Two-sided interval for s^2 / v0 at ``level`` (normal approximation with sample kurtosis)."""
    _, ratio, se_ratio = variance_test(samples, v0, axis=axis)
    zc = z_threshold(level)
    return ratio - zc * se_ratio, ratio + zc * se_ratio


def loglog_slope(x, y):
    """Least-squares slope of log y on log x with its standard error and intercept.

    Returns dict(slope, se, intercept) (natural logs).  Needs >= 3 positive points.
    """
    lx = np.log(np.asarray(x, dtype=float))
    ly = np.log(np.asarray(y, dtype=float))
    ok = np.isfinite(lx) & np.isfinite(ly)
    lx, ly = lx[ok], ly[ok]
    n = lx.size
    if n < 2:
        return {"slope": float("nan"), "se": float("nan"), "intercept": float("nan")}
    a = np.vstack([lx, np.ones_like(lx)]).T
    coef, *_ = np.linalg.lstsq(a, ly, rcond=None)
    resid = ly - a @ coef
    if n > 2:
        s2 = resid @ resid / (n - 2)
        se = float(np.sqrt(s2 / ((lx - lx.mean()) ** 2).sum()))
    else:
        se = float("nan")
    return {"slope": float(coef[0]), "se": se, "intercept": float(coef[1])}


def loglog_crossing(x, q, eps):
    """Where a curve q(x), sampled on the increasing grid ``x``, first reaches ``eps``: log-log
    interpolation between the two grid points that bracket the crossing.  None when the first
    point at or below ``eps`` is the first grid point or there is none (the crossing is not
    inside the grid; the caller extrapolates or bounds it)."""
    below = np.nonzero(np.asarray(q) <= eps)[0]
    if not len(below) or below[0] == 0:
        return None
    i = below[0]
    t = (math.log(eps) - math.log(q[i - 1])) / (math.log(q[i]) - math.log(q[i - 1]))
    return math.exp(math.log(x[i - 1]) + t * (math.log(x[i]) - math.log(x[i - 1])))


def quantile_ci(samples, q, level):
    """Distribution-free (order-statistic) two-sided CI for the q-quantile, and the point estimate.

    Returns (lo, estimate, hi); lo/hi are order statistics chosen from Binomial(R, q).
    """
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    r = x.size
    est = float(np.quantile(x, q))
    lo_i = int(_st.binom.ppf(level / 2, r, q)) - 1
    hi_i = int(_st.binom.isf(level / 2, r, q))
    lo = x[lo_i] if lo_i >= 0 else -np.inf
    hi = x[hi_i] if hi_i < r else np.inf
    return float(lo), est, float(hi)


def _variance_law(samples, axis):
    """Sample variance s^2 and the degrees of freedom nu of its scaled chi-square law
    s^2 / Var ~ chi2_nu / nu, nu = 2 (R - 1) / (kappa - (R - 3)/(R - 1)) with kappa the sample
    kurtosis m4 / s^4 (the denominator floored at 2 / (R - 1), so nu <= (R - 1)^2)."""
    x = np.asarray(samples, dtype=float)
    r = x.shape[axis]
    c = x - x.mean(axis=axis, keepdims=True)
    s2 = (c ** 2).sum(axis=axis) / (r - 1)
    m4 = (c ** 4).mean(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = m4 / s2 ** 2
        nu = 2.0 * (r - 1) / np.maximum(kappa - (r - 3) / (r - 1), 2.0 / (r - 1))
    return s2, nu


def variance_pvalue(samples, v0, *, axis=0):
    """Two-sided p-value of H0: Var = v0 from the sample variance.

    Scaled chi-square (Satterthwaite) approximation s^2/v0 ~ chi2_nu / nu with
    nu = 2 (R - 1) / (kappa - (R - 3)/(R - 1)), kappa the sample kurtosis m4 / s^4 (nu = R - 1 for
    normal data).  This keeps the right skew of s^2 that a normal approximation loses in the far
    tail (the checks reject at p ~ 1e-7).  Returns (p, ratio s^2/v0, nu).
    """
    s2, nu = _variance_law(samples, axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = s2 / np.asarray(v0, dtype=float)
    stat = nu * ratio
    p = 2.0 * np.minimum(_st.chi2.cdf(stat, nu), _st.chi2.sf(stat, nu))
    return np.minimum(p, 1.0), ratio, nu


def variance_limits(samples, level, *, axis=0):
    """One-sided (lower, upper) confidence limits for the variance at ``level`` each, from the
    scaled chi-square law of :func:`variance_pvalue` (degrees of freedom from the sample kurtosis).
    Returns (lower, s2, upper)."""
    s2, nu = _variance_law(samples, axis)
    lo = s2 * nu / _st.chi2.isf(level, nu)
    hi = s2 * nu / _st.chi2.ppf(level, nu)
    return lo, s2, hi


def variance_detectable_ratio(nu, level, *, two_sided=True, power=0.9):
    """The smallest true ratios Var / v0 (above, below 1) that the scaled chi-square variance test
    with ``nu`` degrees of freedom rejects with probability >= ``power`` at ``level`` (each tail
    at level/2 when ``two_sided``).  Under a true ratio rho, s^2/v0 ~ rho chi2_nu / nu: the test
    rejects above when rho chi2_nu > chi2_isf(l, nu), with probability >= power iff
    rho >= chi2_isf(l, nu) / chi2_ppf(1 - power, nu).  Returns (up, down), up > 1 > down."""
    lv = level / 2 if two_sided else level
    up = _st.chi2.isf(lv, nu) / _st.chi2.ppf(1 - power, nu)
    down = _st.chi2.ppf(lv, nu) / _st.chi2.isf(1 - power, nu)
    return float(up), float(down)


def binomial_detectable_ratio(p0, n, level, *, power=0.9):
    """Power of the exceedance test "Clopper-Pearson lower limit at ``level`` > p0" with n trials:
    the smallest true probability p1 (returned as p1 / p0) whose count makes the test reject with
    probability >= ``power``.  inf when even n exceedances out of n cannot reject."""
    from scipy.optimize import brentq

    ks = np.arange(n + 1)
    lo = clopper_pearson_lower(ks, n, level)
    ok = np.nonzero(lo > p0)[0]
    if not ok.size:
        return float("inf")
    c = int(ok[0])                              # the smallest count that rejects
    f = lambda p: _st.binom.sf(c - 1, n, p) - power  # noqa: E731  P(X >= c) - power
    if f(1.0) < 0:
        return float("inf")
    return float(brentq(f, 1e-15, 1.0) / p0)


def bootstrap_needed_size(grid, samples, eps, needed, *, q=0.95, n_boot=400, level=0.05,
                          random_state=0):
    """Percentile-bootstrap interval for the size needed for the q-quantile of the samples to
    reach ``eps``: ``samples`` is a list (one array of replicate values per grid size),
    resampled independently per size; ``needed(grid, quantiles, eps)`` returns the size (or None /
    non-finite when the curve does not reach eps).  Returns (lo, hi) of the needed size (nan when
    fewer than half of the resamples give a finite size)."""
    rng = np.random.default_rng(random_state)
    grid = np.asarray(grid, float)
    qs = []
    for s in samples:
        s = np.asarray(s, float)
        idx = rng.integers(0, s.size, size=(n_boot, s.size))
        qs.append(np.quantile(s[idx], q, axis=1))
    qs = np.array(qs).T                                        # (n_boot, n_sizes)
    vals = []
    for row in qs:
        v = needed(grid, row, eps)
        vals.append(v if v is not None and np.isfinite(v) else np.nan)
    vals = np.asarray(vals, float)
    if np.mean(np.isfinite(vals)) < 0.5:
        return float("nan"), float("nan")
    vals = vals[np.isfinite(vals)]
    return float(np.quantile(vals, level / 2)), float(np.quantile(vals, 1 - level / 2))


def z_power(power=POWER) -> float:
    """The standard normal quantile z_power (1.28 at 0.9, 2.05 at 0.98)."""
    return float(_st.norm.ppf(power))


def mean_detectable(se, zc, power=POWER):
    """The smallest true shift of a mean, in the units of ``se``, that a z-test with threshold
    ``zc`` (|z| > zc) detects with probability >= ``power``: (zc + z_power) se (the far tail
    ignored, which only adds power)."""
    return (zc + z_power(power)) * np.asarray(se, dtype=float)


def bisect_smallest(detected, lo, hi, *, steps=40, log=False):
    """Smallest x in (lo, hi] with ``detected(x)`` True, for a monotone ``detected``
    (bisection, returning the upper end of the final bracket, so that ``detected`` holds there).
    inf when ``detected(hi)`` is False."""
    if not detected(hi):
        return float("inf")
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    for _ in range(steps):
        m = 0.5 * (a + b)
        if detected(math.exp(m) if log else m):
            b = m
        else:
            a = m
    return float(math.exp(b) if log else b)


@functools.lru_cache(maxsize=64)
def _cp_lower_table(n, level):
    return clopper_pearson_lower(np.arange(n + 1), n, level)


def binomial_needed_count(n, p0, level):
    """The smallest count c whose one-sided Clopper-Pearson lower limit at ``level`` exceeds
    ``p0`` (the test "lower limit > p0" rejects iff the count is >= c); n + 1 when none does."""
    lo = _cp_lower_table(int(n), float(level))          # non-decreasing in the count
    return int(np.searchsorted(lo, p0, side="right"))


def binomial_power_p(n, p0, level, power=POWER):
    """The smallest true probability p1 that the test "one-sided Clopper-Pearson lower limit of
    the count out of n (at ``level``) > p0" rejects with probability >= ``power``; 1.0 when no
    probability does (not even n out of n rejects, or P(all n) < power at p1 = 1)."""
    from scipy.optimize import brentq

    c = binomial_needed_count(n, p0, level)
    if c > n or _st.binom.sf(c - 1, n, 1.0) < power:
        return 1.0
    return float(brentq(lambda p: _st.binom.sf(c - 1, n, p) - power, 1e-15, 1.0))


def tail_tightening(values, eps, p0, level, power=POWER, conf=0.1):
    """For a tail test "P(value >= eps) <= p0" (rejected when the Clopper-Pearson lower limit of
    the exceedance count out of n = len(values) exceeds p0 at ``level``): the smallest factor f
    such that the test at eps / f rejects with probability >= ``power`` -- eps / f at or below a
    lower confidence limit (order statistic, level ``conf``) of the (1 - p1)-quantile of the
    values, p1 = binomial_power_p(n, p0, level).  inf when no such f exists."""
    x = np.asarray(values, dtype=float)
    p1 = binomial_power_p(x.size, p0, level, power)
    if p1 >= 1.0:
        return float("inf")
    q_lo = quantile_ci(x, 1 - p1, conf)[0]
    if not (q_lo > 0 and np.isfinite(q_lo)):
        return float("inf")
    return float(max(eps / q_lo, 1.0))


def sup_tail_detectable(settings, tests, size_key, p0, alpha):
    """The ``detectable`` list of a sup-tail check of a Rahimi-Recht claim (claim1: ``size_key``
    "D", claim2: "P"): the smallest factor f by which the bound could be too tight in eps (a bound
    stating P(sup >= eps_bound / f) <= ``p0``) that the run rejects with probability >= POWER at
    one (setting, size): :func:`tail_tightening` of the certified lower ends of the sup, at the
    Bonferroni level of ALL tests (conservative: a tighter bound makes more of them
    non-vacuous).  Empty when no (setting, size) can reject."""
    from analysis import power as _power

    level = bonferroni(alpha, len(tests))
    fs = []
    for st in settings:
        for s in st["sizes"]:
            t = next(t for t in tests if t["d"] == st["d"] and t["a"] == st["a"]
                     and t[size_key] == s[size_key])
            fs.append(tail_tightening(s["lower"], t["eps_bound"], p0, level))
    f = min(fs) if fs else float("inf")
    if not np.isfinite(f):
        return []
    return [_power.effect("bound too tight in eps (it states the tail at eps_bound / f) by a "
                          "factor", f, "factor", where=f"best-resolved (setting, {size_key})",
                          probability=POWER)]


def se_upper(se, n, conf=0.05):
    """A one-sided (1 - conf) upper confidence limit of a standard error estimated from the
    sample standard deviation of n replicates (normal theory: s^2 (n - 1) / sigma^2 ~
    chi2_{n-1}): se * sqrt((n - 1) / chi2_ppf(conf, n - 1)).  Power statements use it so that
    choosing the best-resolved point among many estimated ones does not overstate the power."""
    n = np.asarray(n, dtype=float)
    return np.asarray(se, dtype=float) * np.sqrt((n - 1) / _st.chi2.ppf(conf, n - 1))
