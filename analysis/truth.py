"""Independent ground truth: the exact kernels in closed form (THEORY.md §1, §2.1, §3.3, §4.6).

Written from the theory document, *not* imported from ``randfeat.kernels``, so that a wrong kernel
and a matching wrong sampler in the library cannot agree with each other and pass.  Every function
takes differences ``delta`` of shape (..., d) and returns k of shape (...).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["kernel", "sigma_p2", "binning_profile", "BINNING_PROFILES"]


def _gaussian(delta, sigma):
    return np.exp(-np.sum(delta ** 2, axis=-1) / (2.0 * sigma ** 2))


def _laplacian(delta, sigma):
    return np.exp(-np.sum(np.abs(delta), axis=-1) / sigma)


def _cauchy(delta, sigma):
    return np.prod(1.0 / (1.0 + (delta / sigma) ** 2), axis=-1)


def _matern(delta, sigma, nu):
    r = np.sqrt(np.sum(delta ** 2, axis=-1)) / sigma
    s = np.sqrt(2.0 * nu) * r
    if nu == 0.5:
        return np.exp(-s)
    if nu == 1.5:
        return (1.0 + s) * np.exp(-s)
    if nu == 2.5:
        return (1.0 + s + s ** 2 / 3.0) * np.exp(-s)
    with np.errstate(invalid="ignore"):
        out = 2.0 ** (1 - nu) / special.gamma(nu) * s ** nu * special.kv(nu, s)
    return np.where(s > 0, out, 1.0)


def _ballsum(delta, sigma, t, dim):
    """k_t = [Gamma(dim/2 + 1) (2/r)^{dim/2} J_{dim/2}(r)]^t, r = ||delta||/sigma (THEORY §4.6)."""
    r = np.sqrt(np.sum(delta ** 2, axis=-1)) / sigma
    h = dim / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        cf = special.gamma(h + 1) * (2.0 / r) ** h * special.jv(h, r)
    cf = np.where(r > 1e-8, cf, 1.0 - r ** 2 / (2.0 * (dim + 2)))
    return cf ** t


def _rational(delta, sigma, a):
    """Product of (1 + |delta_j|/sigma)^{-a} (THEORY §3.3)."""
    return np.prod((1.0 + np.abs(delta) / sigma) ** (-a), axis=-1)


def _stretched(delta, sigma, q):
    """Product of exp(-(|delta_j|/sigma)^q), 0 < q <= 1 (THEORY §3.3)."""
    return np.exp(-np.sum((np.abs(delta) / sigma) ** q, axis=-1))


def kernel(name, delta, sigma=1.0, **params):
    """Exact k(delta) for ``name`` in gaussian, laplacian, cauchy, matern (nu), ballsum (t, dim),
    rational (a), stretched (q)."""
    delta = np.asarray(delta, dtype=float)
    if name == "gaussian":
        return _gaussian(delta, sigma)
    if name == "laplacian":
        return _laplacian(delta, sigma)
    if name == "cauchy":
        return _cauchy(delta, sigma)
    if name == "matern":
        return _matern(delta, sigma, params["nu"])
    if name == "ballsum":
        return _ballsum(delta, sigma, params["t"], params["dim"])
    if name == "rational":
        return _rational(delta, sigma, params["a"])
    if name == "stretched":
        return _stretched(delta, sigma, params["q"])
    raise ValueError(f"unknown kernel {name!r}")


def sigma_p2(name, d, sigma=1.0, **params):
    """E_p ||w||^2 = -trace Hess k(0) (THEORY §1); inf when the second moment does not exist."""
    if name == "gaussian":
        return d / sigma ** 2
    if name == "cauchy":
        return 2.0 * d / sigma ** 2
    if name == "laplacian":
        return np.inf
    if name == "matern":
        nu = params["nu"]
        return d * nu / ((nu - 1.0) * sigma ** 2) if nu > 1 else np.inf
    raise ValueError(f"no sigma_p^2 for {name!r}")


# --------------------------------------------------------------------------------------------
# 1-D binning profiles k(Delta), Delta >= 0, their derivatives and p(delta) = delta k''(delta)
# (RR Lemma 1; THEORY §3.2–3.3).  Each entry: k, k1 = k', k2 = k'', alpha = E[1/delta] = -k'(0+).
def _lap(sigma):
    return dict(k=lambda x: np.exp(-x / sigma),
                k1=lambda x: -np.exp(-x / sigma) / sigma,
                k2=lambda x: np.exp(-x / sigma) / sigma ** 2,
                alpha=1.0 / sigma)


def _rat(sigma, a):
    return dict(k=lambda x: (1 + x / sigma) ** (-a),
                k1=lambda x: -a / sigma * (1 + x / sigma) ** (-a - 1),
                k2=lambda x: a * (a + 1) / sigma ** 2 * (1 + x / sigma) ** (-a - 2),
                alpha=a / sigma)


def _str(sigma, q):
    def k(x):
        return np.exp(-(x / sigma) ** q)

    def k1(x):
        t = x / sigma
        return -q * t ** (q - 1) * np.exp(-t ** q) / sigma

    def k2(x):
        t = x / sigma
        return ((q * (1 - q) * t ** (q - 2) + q ** 2 * t ** (2 * q - 2))
                * np.exp(-t ** q) / sigma ** 2)

    return dict(k=k, k1=k1, k2=k2, alpha=np.inf if q < 1 else 1.0 / sigma)


BINNING_PROFILES = {"laplacian": _lap, "rational": _rat, "stretched": _str}


def binning_profile(name, sigma=1.0, **params):
    """Closed forms of the 1-D profile of a binning kernel (see module notes)."""
    return BINNING_PROFILES[name](sigma, **params)
