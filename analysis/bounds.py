"""Closed-form bounds and exact variances tested by the checks, with their sources.

Conventions (THEORY.md §1): ``D`` is the number of *frequencies* of the paired map (2D outputs) and
the number of *features* of the phase-shift map (D outputs); ``P`` the number of binning grids;
``n`` the number of Fastfood rows; ``a = ||x - x'|| / sigma`` for Fastfood.  Bounds are returned
raw (they may exceed 1; a bound >= 1 is *vacuous*).  Inversions solve ``bound = delta`` by bisection
(:func:`invert_decreasing`) unless a closed form exists.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "hoeffding", "hoeffding_paired", "hoeffding_phase", "hoeffding_binning", "hoeffding_eps",
    "bernstein", "bernstein_eps",
    "claim1", "claim1_D", "claim1_eps", "claim1_vacuous_below",
    "claim2_failure", "claim2_P", "claim2_eps",
    "fastfood_C", "fastfood_thm5_var", "fastfood_thm4_var_mean", "fastfood_thm6_threshold",
    "var_rff_paired", "var_rff_phase", "var_binning", "var_fastfood_feature", "var_rff_gaussian",
    "invert_decreasing",
]


# --------------------------------------------------------------------------------------------
# generic root finding
def invert_decreasing(f, target, lo, hi, *, log=True, tol=1e-10, max_iter=200):
    """Smallest x in [lo, hi] with f(x) <= target for f non-increasing on [lo, hi] (bisection).

    Bisects in log x when ``log`` (for D, P, eps spanning decades).  Returns ``hi`` if even
    f(hi) > target is not reached (caller checks), ``lo`` if f(lo) <= target.
    """
    if f(lo) <= target:
        return lo
    if f(hi) > target:
        return math.inf
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    for _ in range(max_iter):
        m = 0.5 * (a + b)
        x = math.exp(m) if log else m
        if f(x) <= target:
            b = m
        else:
            a = m
        if b - a < tol:
            break
    return math.exp(b) if log else b


# --------------------------------------------------------------------------------------------
# pointwise concentration (THEORY §2.4, §3.5)
def hoeffding(D, eps, width):
    """Hoeffding: P(|mean of D iid terms in an interval of length ``width`` - mean| >= eps)
    <= 2 exp(-2 D eps^2 / width^2)  (Hoeffding 1963, Thm 2)."""
    return 2.0 * np.exp(-2.0 * np.asarray(D, float) * np.asarray(eps, float) ** 2 / width ** 2)


def hoeffding_paired(D, eps):
    """RR §3 (printed pointwise bound, paired map, terms in [-1, 1]): 2 exp(-D eps^2 / 2)."""
    return hoeffding(D, eps, 2.0)


def hoeffding_phase(D, eps):
    """Phase-shift map, terms 2cos()cos() in [-2, 2] (THEORY §2.4): 2 exp(-D eps^2 / 8)."""
    return hoeffding(D, eps, 4.0)


def hoeffding_binning(P, eps):
    """Binning, Bernoulli terms in [0, 1] (THEORY §3.5): 2 exp(-2 P eps^2)."""
    return hoeffding(P, eps, 1.0)


def hoeffding_eps(D, delta, width):
    """Inverse of :func:`hoeffding` in eps: eps = width sqrt(ln(2/delta) / (2D))."""
    return width * np.sqrt(np.log(2.0 / delta) / (2.0 * np.asarray(D, float)))


def bernstein(D, eps, var, b):
    """Bernstein (THEORY §2.4): 2 exp(-D eps^2 / (2 V + 2 b eps / 3)), V = exact per-term variance,
    |term - mean| <= b."""
    eps = np.asarray(eps, float)
    return 2.0 * np.exp(-np.asarray(D, float) * eps ** 2 / (2.0 * var + 2.0 * b * eps / 3.0))


def bernstein_eps(D, delta, var, b):
    """Inverse of :func:`bernstein` in eps.

    Root of D eps^2 = L (2V + 2b eps/3), L = ln(2/delta)."""
    L = math.log(2.0 / delta)
    D = np.asarray(D, float)
    c = 2.0 * b * L / 3.0
    return (c + np.sqrt(c ** 2 + 8.0 * D * var * L)) / (2.0 * D)


# --------------------------------------------------------------------------------------------
# RR Claim 1 (THEORY §2.5)
def claim1(D, eps, d, sigma_p, diam):
    """RR Claim 1 (NIPS 2007 §3, Claim 1): P[sup_{M x M} |z(x)'z(y) - k| >= eps]
    <= 2^8 (sigma_p diam(M) / eps)^2 exp(-D eps^2 / (4 (d + 2))), D = paired-map frequencies."""
    eps = np.asarray(eps, float)
    return (2.0 ** 8 * (sigma_p * diam / eps) ** 2
            * np.exp(-np.asarray(D, float) * eps ** 2 / (4.0 * (d + 2))))


def claim1_D(delta, eps, d, sigma_p, diam):
    """Smallest D with claim1(D, eps) <= delta (closed form)."""
    return 4.0 * (d + 2) / eps ** 2 * math.log(2.0 ** 8 * (sigma_p * diam / eps) ** 2 / delta)


def claim1_vacuous_below(eps, d, sigma_p, diam):
    """D below which the Claim 1 bound is >= 1 (THEORY §6 pitfall 5)."""
    return claim1_D(1.0, eps, d, sigma_p, diam)


def claim1_eps(delta, D, d, sigma_p, diam):
    """Smallest eps with claim1(D, eps) <= delta (bisection; claim1 is decreasing in eps)."""
    return invert_decreasing(lambda e: float(claim1(D, e, d, sigma_p, diam)), delta, 1e-8, 1e4)


# --------------------------------------------------------------------------------------------
# RR Claim 2 (THEORY §3.6)
def claim2_failure(P, eps, d, alpha, diam, L_k):
    """RR Claim 2 (NIPS 2007 §4, Claim 2), failure probability:
    P[sup |z(x)'z(y) - k| > eps] <= 36 d P alpha diam(M) exp(-(P eps^2/8 + ln(eps / L_k)) / (d+1)).

    Increasing in P up to P* = 8 (d+1) / eps^2, decreasing beyond; decreasing in eps.
    """
    P = np.asarray(P, float)
    eps = np.asarray(eps, float)
    return 36.0 * d * P * alpha * diam * np.exp(-(P * eps ** 2 / 8.0 + np.log(eps / L_k)) / (d + 1))


def claim2_P(delta, eps, d, alpha, diam, L_k):
    """Smallest P beyond the peak P* = 8(d+1)/eps^2 with claim2_failure <= delta (bisection)."""
    p_star = 8.0 * (d + 1) / eps ** 2
    return invert_decreasing(lambda p: float(claim2_failure(p, eps, d, alpha, diam, L_k)),
                             delta, p_star, 1e15)


def claim2_eps(delta, P, d, alpha, diam, L_k):
    """Smallest eps with claim2_failure(P, eps) <= delta (bisection)."""
    return invert_decreasing(lambda e: float(claim2_failure(P, e, d, alpha, diam, L_k)),
                             delta, 1e-8, 1e4)


# --------------------------------------------------------------------------------------------
# Fastfood (THEORY §4.3–4.5; LSS ICML 2013 Thm 4/5/6 = arXiv:1408.3060 Thm 9, Cor 10, Thm 11)
def fastfood_C(a):
    """C(alpha) = 6 alpha^4 (e^{-alpha^2} + alpha^2 / 3)  (LSS Thm 4 / arXiv Thm 9)."""
    a = np.asarray(a, float)
    return 6.0 * a ** 4 * (np.exp(-a ** 2) + a ** 2 / 3.0)


def fastfood_thm5_var(a, n):
    """LSS Thm 5 (arXiv Cor 10), n rows in n/d stacked blocks:
    Var[phi'(x)' phi'(x')] <= (2/n)(1 - e^{-a^2})^2 + C(a)/n,  a = ||x - x'||/sigma."""
    a = np.asarray(a, float)
    return 2.0 / n * (1.0 - np.exp(-a ** 2)) ** 2 + fastfood_C(a) / n


def fastfood_thm4_var_mean(a, d):
    """LSS Thm 4 (arXiv Thm 9) for one d x d block, divided by d^2 (variance of the mean of d rows):
    Var[(1/d) sum_j psi_j] <= ((1/2)(1 - e^{-a^2})^2 + C(a)) / d."""
    a = np.asarray(a, float)
    return (0.5 * (1.0 - np.exp(-a ** 2)) ** 2 + fastfood_C(a)) / d


def fastfood_thm6_threshold(delta, d, a):
    """LSS Thm 6 (arXiv Thm 11), one block, no S: P[|k^ - k| >= t] <= 2 delta with
    t = 2 d^{-1/2} a sqrt(log(2/delta) log(2d/delta)),  a = ||x - x'||/sigma."""
    return 2.0 / math.sqrt(d) * np.asarray(a, float) * math.sqrt(
        math.log(2.0 / delta) * math.log(2.0 * d / delta))


# --------------------------------------------------------------------------------------------
# exact variances (THEORY §2.3, §3.5, §4.3)
def var_rff_paired(k, k2):
    """Per-frequency variance of cos(w'Delta): (1 + k(2 Delta) - 2 k(Delta)^2) / 2 (THEORY §2.3)."""
    return (1.0 + np.asarray(k2) - 2.0 * np.asarray(k) ** 2) / 2.0


def var_rff_phase(k, k2):
    """Per-feature variance of 2cos(w'x+b)cos(w'y+b).

    1 + k(2 Delta)/2 - k(Delta)^2 (THEORY §2.3)."""
    return 1.0 + np.asarray(k2) / 2.0 - np.asarray(k) ** 2


def var_binning(k):
    """Per-grid variance of the Bernoulli(k) collision indicator: k (1 - k) (THEORY §3.5)."""
    k = np.asarray(k)
    return k * (1.0 - k)


def var_fastfood_feature(a):
    """Per-row variance of cos([V v]_j): (1/2)(1 - e^{-a^2})^2 (LSS Thm 4 first claim)."""
    return 0.5 * (1.0 - np.exp(-np.asarray(a, float) ** 2)) ** 2


var_rff_gaussian = var_fastfood_feature  # Yu et al. 2016 Lemma 1: same per-frequency formula
