r"""Exact law of arc-cosine random features (Cho & Saul 2009), independent of randfeat.

Setting: :math:`w \sim N(0, I_d)`, one term :math:`t = 2\Theta(w^\top x)\Theta(w^\top y)
(w^\top x)^n (w^\top y)^n`; the D-feature estimate :math:`z(x)^\top z(y)` is the mean of D iid
terms (``randfeat.ArcCosineFeatures``: :math:`z_j = \sqrt{2/D}\,\Theta(w_j^\top x)
(w_j^\top x)^n`).

**Mean** (Cho & Saul eq. 1-6): :math:`\mathbb E t = k_n(x, y) = \frac1\pi \|x\|^n\|y\|^n
J_n(\theta)`.

**Second moment** [D]: :math:`t^2 = 4\Theta\Theta(w^\top x)^{2n}(w^\top y)^{2n}` is twice the
term of order :math:`2n`, so :math:`\mathbb E t^2 = 2k_{2n}(x, y)` and
:math:`\operatorname{Var} t = 2k_{2n} - k_n^2`.

:math:`J_n` for n = 0..4 from Cho & Saul's formula
:math:`J_n(\theta) = (-1)^n(\sin\theta)^{2n+1}\big(\frac{1}{\sin\theta}\frac{\partial}{\partial
\theta}\big)^n\frac{\pi - \theta}{\sin\theta}` (expanded with sympy, written out below), and an
independent route by one-dimensional quadrature (used beyond :math:`\theta = \pi/2`, where
the closed forms lose their relative precision): projecting w on the plane of x and y (a 2-D
standard normal, radius r, angle a), :math:`J_n(\theta) = 2^n n! \int_{\theta - \pi/2}^{\pi/2}
\cos^n a\,\cos^n(a - \theta)\,da` (:func:`J_quadrature`; the tests check the two agree to
1e-12).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate

__all__ = ["J", "J_quadrature", "J_stable", "angle", "k", "term_var", "term_moment2"]


def J(n, theta):
    r""":math:`J_n(\theta)`, n = 0..4 (closed forms)."""
    th = np.asarray(theta, dtype=float)
    c, s = np.cos(th), np.sin(th)
    r = np.pi - th
    if n == 0:
        return r
    if n == 1:
        return s + r * c
    if n == 2:
        return 3.0 * s * c + r * (1.0 + 2.0 * c * c)
    if n == 3:
        return r * (6.0 * c**3 + 9.0 * c) + s * (11.0 * c * c + 4.0)
    if n == 4:
        return r * (24.0 * c**4 + 72.0 * c * c + 9.0) + s * (50.0 * c**3 + 55.0 * c)
    raise ValueError(f"J: order {n} not tabulated (0..4)")


def J_quadrature(n, theta):
    """:math:`J_n(\\theta)` by adaptive quadrature of the projected integral (any n >= 0)."""
    if theta >= math.pi:
        return 0.0
    val = integrate.quad(lambda a: math.cos(a) ** n * math.cos(a - theta) ** n,
                         theta - math.pi / 2, math.pi / 2, epsabs=0.0, epsrel=1e-13,
                         limit=200)[0]
    return 2 ** n * math.factorial(n) * val


def J_stable(n, theta):
    """:math:`J_n(\theta)` to full relative precision: the closed form for theta <= pi/2,
    the quadrature beyond (where the closed forms cancel: J_n(pi - e) ~ e^{2n+1})."""
    return float(J(n, theta)) if theta <= math.pi / 2 else J_quadrature(n, theta)


def angle(x, y):
    r"""The angle of x and y in [0, pi], to full precision near 0 and pi
    (:math:`2\arcsin(\|u - v\|/2)` for unit vectors u, v)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    u, v = x / np.linalg.norm(x), y / np.linalg.norm(y)
    if u @ v >= 0:
        return 2.0 * math.asin(min(1.0, np.linalg.norm(u - v) / 2.0))
    return math.pi - 2.0 * math.asin(min(1.0, np.linalg.norm(u + v) / 2.0))


def k(n, x, y):
    """Arc-cosine kernel :math:`k_n(x, y)` (0 when x or y is 0)."""
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0 or ny == 0:
        return 0.0
    return float(nx ** n * ny ** n * J_stable(n, angle(x, y)) / math.pi)


def term_moment2(n, x, y):
    """:math:`\\mathbb E t^2 = 2 k_{2n}(x, y)`."""
    return 2.0 * k(2 * n, x, y)


def term_var(n, x, y):
    """Variance of one term, :math:`2k_{2n} - k_n^2` (the D-feature estimate: this / D)."""
    kn = k(n, x, y)
    return max(term_moment2(n, x, y) - kn * kn, 0.0)
