r"""Exact bias and variance of orthogonal random features for the Gaussian kernel.

Setting (Yu et al., NIPS 2016): :math:`k(\Delta) = e^{-z^2/2}`, :math:`z = \|\Delta\|/\sigma`;
the estimate with :math:`D` frequencies is :math:`\hat k = \frac1D\sum_j \cos(w_j^\top\Delta)`
(the paired map with D frequencies).  Everything below is in units :math:`\sigma = 1`.

**iid RFF** (Yu et al. Lemma 1): :math:`\operatorname{Var}\cos(w^\top\Delta) = V_1 =
(1 - e^{-z^2})^2/2`, so :math:`\operatorname{Var}\hat k = V_1/D`.

**ORF, exact** [D, derived here; checked by Monte Carlo in ``analysis.checks.orf_variance``].
Rows :math:`w_i = r_i q_i` of one block: :math:`q_i` rows of a Haar orthogonal matrix,
:math:`r_i \sim \chi_d` iid.  Each row is :math:`N(0, I)`, so the diagonal terms are
:math:`V_1`.  For two rows :math:`i \ne j`, with :math:`u = \Delta/\|\Delta\|`,
:math:`(a, b) = (q_i^\top u, q_j^\top u)` has the law of the first two coordinates of a
uniform unit vector of :math:`\mathbb R^d` (rotate u to :math:`e_1`; the columns of a Haar matrix
are uniform), i.e. :math:`a = \rho\cos\theta`, :math:`b = \rho\sin\theta` with :math:`\theta`
uniform, :math:`\rho^2 \sim \mathrm{Beta}(1, (d-2)/2)` (:math:`\rho = 1` for d = 2), and
:math:`r_i, r_j` are independent of it, so

.. math::

    C_d(z) = \operatorname{Cov}(\cos w_i^\top\Delta, \cos w_j^\top\Delta)
           = \mathbb E_{\rho,\theta}\big[\varphi_d(z\rho\cos\theta)\,
             \varphi_d(z\rho\sin\theta)\big] - e^{-z^2},
    \qquad \varphi_d(t) = \mathbb E\cos(t\chi_d) = {}_1F_1(\tfrac d2; \tfrac12; -\tfrac{t^2}2).

A block of b rows contributes :math:`b V_1 + b(b-1) C_d`; blocks are independent, so with blocks
of sizes :math:`b_1, \dots` summing to D

.. math::

    \frac{\operatorname{Var}_{ORF}}{\operatorname{Var}_{RFF}}
      = 1 + \frac{C_d(z)}{V_1(z)}\,\frac{\sum_k b_k(b_k - 1)}{D},

which is :math:`1 + (D-1)C_d/V_1` for :math:`D \le d` and :math:`1 + (d-1)C_d/V_1` for
:math:`D = m d`.  Quadrature: generalised Gauss–Laguerre in :math:`s = r^2/2` for
:math:`\varphi_d` (the integrand is entire in s), Gauss–Jacobi in :math:`\rho^2` and
Gauss–Legendre in θ.  Yu et al.'s eq. (3) is the large-d limit
:math:`C_d \approx -e^{-z^2} z^4/(2d)`.

**ORF'** (rows of length :math:`\sqrt d`): :math:`\mathbb E\hat k = \psi_d(\sqrt d z)` with
:math:`\psi_d(t) = \mathbb E\cos(t\,a) = \Gamma(\tfrac d2)(\tfrac 2t)^{d/2-1} J_{d/2-1}(t)
= {}_0F_1(;\tfrac d2; -\tfrac{t^2}4)` (the sphere's characteristic function; a Bessel kernel).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["chi_cf", "orf_cov", "rff_var_term", "orf_var_ratio", "eq3_ratio", "sphere_cf",
           "orf_unit_mean", "sorf_bias_bound", "radial_cf", "row_var", "orf_unit_var",
           "orf_unit_cov", "estimate_var"]

_NQ = 64


def chi_cf(t, d, n=_NQ):
    r""":math:`\varphi_d(t) = \mathbb E\cos(t\chi_d)` (array t)."""
    x, w = special.roots_genlaguerre(n, d / 2 - 1)
    w = w / special.gamma(d / 2)
    t = np.asarray(t, dtype=float)
    return (np.cos(np.multiply.outer(t, np.sqrt(2 * x))) @ w).reshape(t.shape)


def radial_cf(t, d, radial="chi"):
    r"""E cos(t R) for the row length R of an orthogonal block: ``"chi"`` (ORF, R ~ chi_d) or
    ``"unit"`` (ORF', R = sqrt(d))."""
    if radial == "chi":
        return chi_cf(t, d)
    if radial == "unit":
        return np.cos(np.sqrt(d) * np.asarray(t, dtype=float))
    raise ValueError(f"radial must be 'chi' or 'unit', got {radial!r}")


def orf_cov(z, d, n=_NQ, radial="chi"):
    """Covariance C_d(z) of the cos-terms of two rows of one ORF block (sigma = 1); with
    ``radial="unit"`` the same for ORF' (rows of length sqrt(d)): the law of (a, b) is the
    same, only phi_d becomes t -> cos(sqrt(d) t) and the product of the means
    psi_d(sqrt(d) z)^2 replaces e^{-z^2}."""
    th, wt = special.roots_legendre(n)
    th = np.pi * (th + 1.0)
    wt = wt / 2.0
    if d == 2:
        rho, wr = np.ones(1), np.ones(1)
    else:
        x, w = special.roots_jacobi(n, (d - 4) / 2.0, 0.0)
        rho, wr = np.sqrt((x + 1.0) / 2.0), w / w.sum()
    a = np.outer(rho, np.cos(th)).ravel()
    b = np.outer(rho, np.sin(th)).ravel()
    # phi is even and |a|, |b| take each value several times on the symmetric theta nodes:
    # evaluate it once per distinct |value|
    ab = np.abs(np.concatenate([a, b]))
    u, inv = np.unique(np.round(ab, 13), return_inverse=True)
    out = []
    for zz in np.atleast_1d(np.asarray(z, dtype=float)):
        key = (float(zz), int(d), int(n), radial)
        if key not in _COV_CACHE:
            phi = radial_cf(zz * u, d, radial)[inv]
            E = (phi[:a.size] * phi[a.size:]).reshape(len(rho), len(th))
            m2 = np.exp(-zz * zz) if radial == "chi" else float(orf_unit_mean(zz, d)) ** 2
            _COV_CACHE[key] = float(wr @ E @ wt - m2)
        out.append(_COV_CACHE[key])
    return np.asarray(out).reshape(np.shape(z))


_COV_CACHE = {}


def orf_unit_cov(z, d, n=_NQ):
    """C'_d(z): covariance of the cos-terms of two rows of one ORF' block (sigma = 1)."""
    return orf_cov(z, d, n, radial="unit")


def row_var(z, d, radial="chi"):
    """Variance of one row's term cos(w' Delta): V_1 for ORF (rows N(0, I)); for ORF'
    (1 + psi_d(2 sqrt(d) z)) / 2 - psi_d(sqrt(d) z)^2."""
    if radial == "chi":
        return rff_var_term(z)
    z = np.asarray(z, dtype=float)
    return 0.5 * (1.0 + orf_unit_mean(2.0 * z, d)) - orf_unit_mean(z, d) ** 2


def orf_unit_var(z, d, D):
    """Exact variance of the ORF' estimate with D frequencies in blocks of d."""
    return estimate_var(z, d, D, "unit")


def estimate_var(z, d, D, radial="chi"):
    """Exact variance of the D-frequency estimate of ORF (``"chi"``) or ORF' (``"unit"``):
    (D row_var + sum_k b_k (b_k - 1) C) / D^2, blocks of sizes b_k."""
    return (row_var(z, d, radial) + orf_cov(z, d, radial=radial) * _pairs_per_term(d, D)) / D


def rff_var_term(z):
    """V_1 = Var cos(w' Delta), w ~ N(0, I), ||Delta|| = z: (1 - e^{-z^2})^2 / 2."""
    z = np.asarray(z, dtype=float)
    return 0.5 * (1.0 - np.exp(-z * z)) ** 2


def _pairs_per_term(d, D):
    sizes = [d] * (D // d) + ([D % d] if D % d else [])
    return sum(b * (b - 1) for b in sizes) / D


def orf_var_ratio(z, d, D):
    """Exact Var_ORF / Var_RFF for D frequencies in blocks of d (see the module docstring)."""
    return 1.0 + orf_cov(z, d) / rff_var_term(z) * _pairs_per_term(d, D)


def eq3_ratio(z, d, D):
    """Yu et al. eq. (3), the large-d approximation, with D -> min(D, d) per block."""
    z = np.asarray(z, dtype=float)
    c = -np.exp(-z * z) * z**4 / (2.0 * d)
    return 1.0 + c / rff_var_term(z) * _pairs_per_term(d, D)


def sphere_cf(t, d):
    r""":math:`\psi_d(t) = {}_0F_1(;d/2;-t^2/4)`, E cos(t a) for a a coordinate of a uniform unit
    vector of R^d (power series; exact to ~1e-12 for t^2/4 <= 40 d)."""
    t = np.asarray(t, dtype=float)
    x = -0.25 * t * t
    term = np.ones_like(x)
    acc = np.ones_like(x)
    for m in range(1, 400):
        term = term * x / (m * (d / 2.0 + m - 1.0))
        acc = acc + term
        if np.all(np.abs(term) < 1e-17 * np.maximum(1.0, np.abs(acc))):
            break
    return acc


def orf_unit_mean(z, d):
    """E k-hat of ORF' (rows of length sqrt(d)/sigma) at z = ||Delta||/sigma."""
    return sphere_cf(np.sqrt(d) * np.asarray(z, dtype=float), d)


def sorf_bias_bound(z, d):
    """Yu et al. Thm 3: |E k-hat_SORF - e^{-z^2/2}| <= 6 z / sqrt(d)."""
    return 6.0 * np.asarray(z, dtype=float) / np.sqrt(d)
