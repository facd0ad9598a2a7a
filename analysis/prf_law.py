r"""Exact laws of the softmax-kernel random features (Choromanski et al., ICLR 2021),
independent of randfeat.

Inputs are already divided by the scale: :math:`u = x/\sigma`, :math:`v = y/\sigma`;
:math:`a = \|u\|^2`, :math:`b = \|v\|^2`, :math:`s = \|u + v\|^2`, :math:`t = \|u - v\|^2`,
:math:`\mathrm{SM} = e^{u^\top v}`, :math:`\Lambda = e^{-(a + b)/2}`, :math:`w \sim N(0, I_d)`.
One *term* of each estimate (its mean over the m frequencies is the estimate):

* positive: :math:`T = \Lambda e^{w^\top(u + v)}` (one feature product times D);
* hyperbolic: :math:`T = \Lambda\cosh(w^\top(u + v))` (one frequency's two columns);
* trigonometric: :math:`T = e^{(a + b)/2}\cos(w^\top(u - v))`.

Gaussian kernel :math:`e^{-t/2}`: every term times :math:`e^{-(a + b)/2}` (mean times it,
variances times its square).

**Means and variances** (iid; Lemma 2 of the paper, re-derived [D]): with
:math:`\mathbb E e^{w^\top z} = e^{\|z\|^2/2}`,
:math:`\operatorname{Var}T^+ = \mathrm{SM}^2(e^s - 1)`,
:math:`\operatorname{Var}T^{\mathrm{hyp}} = \tfrac12\Lambda^2(e^s - 1)^2`,
:math:`\operatorname{Var}T^{\mathrm{trig}} = \tfrac12 e^{a + b}(1 - e^{-t})^2`.

**Orthogonal blocks** [D]: two rows :math:`w_1 = r_1q_1`, :math:`w_2 = r_2q_2` of one block
(:math:`q_1 \perp q_2` Haar, :math:`r_i \sim \chi_d` independent): :math:`w_1 \pm w_2` is
rotation invariant with squared norm :math:`r_1^2 + r_2^2 \sim \chi^2_{2d}`, so
:math:`\mathbb E e^{(w_1 \pm w_2)^\top z} = \mathbb E_\rho\,{}_0F_1(;\tfrac d2;
\tfrac{\rho^2\|z\|^2}{4}) = \sum_k \frac{(d)_k}{(d/2)_k k!}(\tfrac{\|z\|^2}{2})^k =
{}_1F_1(d; \tfrac d2; \tfrac{\|z\|^2}{2})` (term by term, :math:`\mathbb E\rho^{2k} = 2^k(d)_k`),
and likewise :math:`\mathbb E\cos((w_1 \pm w_2)^\top\Delta) = {}_1F_1(d; \tfrac d2;
-\tfrac{\|\Delta\|^2}{2})`.  Hence the covariance of two terms of one block is

* positive and hyperbolic (:math:`\cosh\cosh` is a mean of four :math:`e^{(\pm w_1 \pm
  w_2)^\top z}`): :math:`C = \Lambda^2[{}_1F_1(d; \tfrac d2; \tfrac s2) - e^s]`;
* trigonometric (:math:`\cos\cos = \tfrac12[\cos(\cdot + \cdot) + \cos(\cdot - \cdot)]`):
  :math:`C = e^{a + b}[{}_1F_1(d; \tfrac d2; -\tfrac t2) - e^{-t}]` (the covariance of Yu et
  al.'s orthogonal random features; ``analysis.orf_theory.orf_cov`` computes it by quadrature,
  and the tests check the two agree).

With m frequencies in blocks of sizes :math:`b_k`: :math:`\operatorname{Var} = [m V_1 + \sum_k
b_k(b_k - 1) C]/m^2`.  Theorem 2 of the paper states
:math:`\mathrm{MSE}^{\mathrm{ort}} \le \mathrm{MSE}^{\mathrm{iid}} - \frac{2(m-1)}{m(d+2)}
(\mathrm{SM} - \Lambda)^2` for :math:`m \le d`, i.e. :math:`C \le -\frac{2}{d+2}
(\mathrm{SM} - \Lambda)^2` (:func:`thm2_cov_bound`).

**Large norms**: :math:`\log T^+ = w^\top(u + v) - (a + b)/2 \sim N(-(a + b)/2, s)` exactly
(softmax; Gaussian: mean :math:`-(a + b)`), a law whose mean and variance stay estimable where
the variance of :math:`T^+` itself, :math:`\mathrm{SM}^2(e^s - 1)`, explodes.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

__all__ = ["ESTIMATORS", "hyp1f1", "term_law", "block_var", "thm2_cov_bound", "log_term_law",
           "kernel_value"]

ESTIMATORS = ("positive", "hyperbolic", "trigonometric")


def hyp1f1(a, b, x):
    """Kummer's function 1F1(a; b; x) to double precision (mpmath at 30 digits)."""
    with mpmath.workdps(30):
        return float(mpmath.hyp1f1(a, b, x))


def _geom(u, v):
    u, v = np.asarray(u, float), np.asarray(v, float)
    return float(u @ u), float(v @ v), float((u + v) @ (u + v)), float((u - v) @ (u - v)), \
        float(u @ v)


def kernel_value(kernel, u, v):
    """SM(x, y) = e^{u'v} or the Gaussian kernel e^{-||u - v||^2 / 2}."""
    a, b, s, t, uv = _geom(u, v)
    return math.exp(uv) if kernel == "softmax" else math.exp(-t / 2.0)


def term_law(estimator, kernel, u, v, d=None):
    """(mean, V1, C) of one term: its mean (the kernel), its variance V1 (iid), and the
    covariance C of two terms of one orthogonal block in dimension ``d`` (None: not computed)."""
    a, b, s, t, uv = _geom(u, v)
    if estimator == "trigonometric":
        F2 = math.exp(a + b)
        V1 = 0.5 * F2 * (-math.expm1(-t)) ** 2
        C = None if d is None else F2 * (hyp1f1(d, d / 2.0, -t / 2.0) - math.exp(-t))
    else:
        lam2 = math.exp(-(a + b))
        if estimator == "positive":
            V1 = math.exp(2.0 * uv) * math.expm1(s)
        elif estimator == "hyperbolic":
            V1 = 0.5 * lam2 * math.expm1(s) ** 2
        else:
            raise ValueError(f"unknown estimator {estimator!r}")
        C = None if d is None else lam2 * (hyp1f1(d, d / 2.0, s / 2.0) - math.exp(s))
    mean = math.exp(uv)
    if kernel == "gaussian":
        g = math.exp(-(a + b) / 2.0)
        mean, V1 = mean * g, V1 * g * g
        C = None if C is None else C * g * g
    return mean, V1, C


def block_var(V1, C, m, d):
    """Variance of the mean of m terms drawn in orthogonal blocks of d (the last cut)."""
    sizes = [d] * (m // d) + ([m % d] if m % d else [])
    pairs = sum(bk * (bk - 1) for bk in sizes)
    return (m * V1 + pairs * (C if C is not None else 0.0)) / (m * m)


def thm2_cov_bound(kernel, u, v, d):
    """Theorem 2's bound on C for the positive estimator: -2/(d+2) (SM - Lambda)^2 (softmax;
    Gaussian: times e^{-(a + b)})."""
    a, b, s, t, uv = _geom(u, v)
    lam = math.exp(-(a + b) / 2.0)
    bound = -2.0 / (d + 2.0) * (math.exp(uv) - lam) ** 2
    return bound * (math.exp(-(a + b)) if kernel == "gaussian" else 1.0)


def log_term_law(kernel, u, v):
    """(mean, variance) of log T+ : N(-c (a + b), s), c = 1/2 (softmax) or 1 (Gaussian)."""
    a, b, s, t, uv = _geom(u, v)
    c = 0.5 if kernel == "softmax" else 1.0
    return -c * (a + b), s
