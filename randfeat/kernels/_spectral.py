"""The spectral kernels: random Fourier features and Fastfood sample their spectral densities."""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import special
from scipy.spatial.distance import cdist

from randfeat.kernels._base import BinningKernel, ShiftInvariantKernel, _check_count, _RadialKernel

__all__ = ["BallSumKernel", "CauchyKernel", "GaussianKernel", "LaplacianKernel", "MaternKernel"]


# --------------------------------------------------------------------------------------------
# concrete kernels
# --------------------------------------------------------------------------------------------
class GaussianKernel(_RadialKernel):
    r"""Gaussian (RBF) kernel :math:`k(\Delta) = \exp(-\|\Delta\|^2 / (2\sigma^2))`.

    Spectral density :math:`p = N(0, \sigma^{-2} I_d)`; :math:`\sigma_p^2 = d/\sigma^2`.
    scikit-learn's ``gamma`` is :math:`1/(2\sigma^2)`: ``exp(-gamma ||Delta||^2)`` has
    frequencies :math:`N(0, 2\gamma I)` (RR 2007, Figure 1; THEORY.md §1).

    Parameters
    ----------
    sigma : float, default 1.0
        Length scale, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import GaussianKernel
    >>> GaussianKernel(sigma=1.0)(np.array([[0.0, 0.0], [1.0, 0.0]]))
    array([[1.        , 0.60653066],
           [0.60653066, 1.        ]])
    """

    name = "gaussian"
    aliases = ("rbf",)
    _binning_refusal = "its profile exp(-t^2/2) is concave for t < 1"

    def _profile(self, r):
        return np.exp(-0.5 * r * r)

    def _k_scaled(self, u):
        return np.exp(-0.5 * np.einsum("...j,...j->...", u, u))

    def _gram(self, U, V):
        return np.exp(-0.5 * cdist(U, V, "sqeuclidean"))

    def _sample(self, n, d, rng):
        return rng.standard_normal((n, d)) / self.sigma

    def _sample_radius(self, n, d, rng):
        # chi_d / sigma: the lengths of N(0, sigma^-2 I) vectors
        return np.sqrt(rng.chisquare(d, n)) / self.sigma

    def _sigma_p2(self, d):
        return d / self.sigma**2


class LaplacianKernel(BinningKernel):
    r"""Laplacian (L1, product-form) kernel :math:`k(\Delta) = \exp(-\|\Delta\|_1/\sigma)`.

    The one Laplacian of randfeat, usable by every feature map that can represent it:

    * random Fourier features: spectral density :math:`p(\omega) = \prod_j \sigma/(\pi(1 +
      \sigma^2\omega_j^2))`, iid Cauchy(0, 1/σ) coordinates (RR 2007, Figure 1).  The Cauchy
      law has no second moment, so :math:`\sigma_p^2 = \infty` and RR's Claim 1 does not apply;
    * random binning: the profile :math:`\kappa(t) = e^{-t}` is convex, with pitch law
      :math:`p(\delta) = \delta e^{-\delta/\sigma}/\sigma^2`, i.e. Gamma(2, scale σ) (THEORY
      §3.3), sampled exactly by :meth:`numpy.random.Generator.gamma` — never truncated
      (truncating the Gamma law, e.g. by rejection on [0, 1], biases the kernel; THEORY
      pitfall 9).

    Not isotropic (Fastfood cannot use it).

    Parameters
    ----------
    sigma : float, default 1.0
        Length scale, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import LaplacianKernel
    >>> float(LaplacianKernel(2.0).k(np.array([1.0, -1.0])))   # exp(-2/2)
    0.36787944117144233
    """

    name = "laplacian"
    spectral = True

    def _unit_profile(self, t):
        return np.exp(-t)

    def _unit_dprofile(self, t):
        return -np.exp(-t)

    def _unit_d2profile(self, t):
        return np.exp(-t)

    def _unit_sample(self, size, rng):
        return rng.gamma(2.0, 1.0, size=size)

    def _k_scaled(self, u):
        return np.exp(-np.abs(u).sum(axis=-1))

    def _gram(self, U, V):
        return np.exp(-cdist(U, V, "cityblock"))

    def _sample(self, n, d, rng):
        return rng.standard_cauchy((n, d)) / self.sigma

    def _sigma_p2(self, d):
        return np.inf


class CauchyKernel(ShiftInvariantKernel):
    r"""Cauchy (product-form) kernel :math:`k(\Delta) = \prod_j 1/(1 + \Delta_j^2/\sigma^2)`.

    Normalised (:math:`k(0)=1`; RR's table prints :math:`\prod_j 2/(1+\Delta_j^2)`, which is
    :math:`2^d` at 0, THEORY.md §2.1).  Spectral density :math:`\prod_j (\sigma/2)
    e^{-\sigma|\omega_j|}`: iid Laplace(0, scale 1/σ) coordinates; :math:`\sigma_p^2 =
    2d/\sigma^2`.  Not isotropic.

    Parameters
    ----------
    sigma : float, default 1.0
        Length scale, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import CauchyKernel
    >>> float(CauchyKernel(1.0).k(np.array([1.0, 1.0])))
    0.25
    """

    name = "cauchy"
    spectral = True
    _binning_refusal = "its profile 1/(1 + t^2) is concave for t < 1/sqrt(3)"

    def _k_scaled(self, u):
        return np.exp(-np.log1p(u * u).sum(axis=-1))

    def _gram(self, U, V):
        acc = np.zeros((U.shape[0], V.shape[0]))
        for j in range(U.shape[1]):
            diff = U[:, j, None] - V[None, :, j]
            acc += np.log1p(diff * diff)
        return np.exp(-acc)

    def _sample(self, n, d, rng):
        return rng.laplace(0.0, 1.0, (n, d)) / self.sigma

    def _sigma_p2(self, d):
        return 2.0 * d / self.sigma**2


_MATERN_NUS = (0.5, 1.5, 2.5)


class MaternKernel(_RadialKernel):
    r"""Standard Matérn kernel with smoothness ν ∈ {1/2, 3/2, 5/2} and length scale σ.

    .. math::

        k(r) = \frac{2^{1-\nu}}{\Gamma(\nu)} \big(\sqrt{2\nu}\, r/\sigma\big)^\nu
               K_\nu\big(\sqrt{2\nu}\, r/\sigma\big), \qquad r = \|\Delta\|_2,

    i.e. :math:`e^{-a}`, :math:`(1+a)e^{-a}`, :math:`(1+a+a^2/3)e^{-a}` with
    :math:`a = \sqrt{2\nu}\,r/\sigma` — the same as
    ``sklearn.gaussian_process.kernels.Matern(length_scale=sigma, nu=nu)``.
    Its spectral density is a multivariate Student-t with :math:`2\nu` degrees of freedom:
    :math:`\omega = g\sqrt{2\nu/u}/\sigma`, :math:`g \sim N(0, I_d)`, :math:`u \sim \chi^2_{2\nu}`
    (THEORY.md §1).  :math:`\sigma_p^2 = d\,\nu/((\nu-1)\sigma^2)` for ν > 1 (3d/σ² and
    5d/(3σ²)), infinite for ν = 1/2.  (This is not Fastfood's "Matérn", see
    :class:`BallSumKernel`.)

    Parameters
    ----------
    sigma : float, default 1.0
        Length scale, > 0.
    nu : {0.5, 1.5, 2.5}, default 1.5
        Smoothness.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import MaternKernel
    >>> float(MaternKernel(1.0, nu=0.5).k(np.array([0.3, 0.4])))   # exp(-0.5)
    0.6065306597126334
    """

    name = "matern"
    _binning_refusal = ("it is not separable, and Matérn profiles with nu > 1/2 are concave near "
                        "0 (the separable nu = 1/2 kernel is the Laplacian)")

    def __init__(self, sigma=1.0, nu=1.5):
        super().__init__(sigma)
        ok = (isinstance(nu, (numbers.Real, np.floating, np.integer))
              and not isinstance(nu, (bool, np.bool_)) and float(nu) in _MATERN_NUS)
        if not ok:
            raise ValueError(f"MaternKernel: nu must be one of 0.5, 1.5, 2.5 (closed forms), "
                             f"got {nu!r}")
        self.nu = float(nu)

    def _params(self):
        return {"sigma": self.sigma, "nu": self.nu}

    def _profile(self, r):
        a = math.sqrt(2.0 * self.nu) * r
        e = np.exp(-a)
        if self.nu == 0.5:
            return e
        if self.nu == 1.5:
            return (1.0 + a) * e
        return (1.0 + a + a * a / 3.0) * e

    def _sample_radius(self, n, d, rng):
        # chi_d sqrt(2 nu / chi^2_{2 nu}) / sigma (Student-t lengths)
        g2 = rng.chisquare(d, n)
        u = rng.chisquare(2.0 * self.nu, n)
        return np.sqrt(g2 * (2.0 * self.nu) / u) / self.sigma

    def _sample(self, n, d, rng):
        g = rng.standard_normal((n, d))
        u = rng.chisquare(2.0 * self.nu, n)
        return g * (np.sqrt(2.0 * self.nu / u) / self.sigma)[:, None]

    def _sigma_p2(self, d):
        if self.nu <= 1.0:
            return np.inf
        return d * self.nu / ((self.nu - 1.0) * self.sigma**2)


# ---- the normalised Bessel function of the ball ------------------------------------------------
def _ball_cf(r, nu):
    r"""Characteristic function of Uniform(unit ball of R^d) at radius r, nu = d/2:

    :math:`\phi_\nu(r) = \Gamma(\nu+1)(2/r)^\nu J_\nu(r) = {}_0F_1(;\nu+1;-r^2/4)`.

    Regimes: the power series where it does not cancel (x = r^2/4 <= nu + 1, exactly 1 at r = 0);
    beyond it, for small nu (<= 40) the Bessel form directly; for large nu, where Gamma(nu+1) and
    (2/r)^nu overflow and J_nu(r) underflows for r < nu, log space: for r >= nu the Bessel form,
    for r < nu ``_ball_cf_recurrence``.  Absolute error <= ~1e-13 (tested against mpmath).
    """
    r = np.abs(np.asarray(r, dtype=np.float64))
    out = np.empty_like(r)
    x = 0.25 * r * r
    small = x <= nu + 1.0
    if np.any(small):
        xs = x[small]
        term = np.ones_like(xs)
        acc = np.ones_like(xs)
        m = 0
        while True:
            m += 1
            term = term * (-xs) / (m * (nu + m))
            acc += term
            if np.all(np.abs(term) <= 1e-17 * np.maximum(np.abs(acc), 1e-300)) or m > 400:
                break
        out[small] = acc
    big = ~small
    if np.any(big):
        rb = r[big]
        if nu <= 40.0:
            out[big] = math.gamma(nu + 1.0) * (2.0 / rb) ** nu * special.jv(nu, rb)
        else:
            val = np.empty_like(rb)
            low = rb < nu
            if np.any(low):
                val[low] = _ball_cf_recurrence(rb[low], nu)
            hi = ~low
            if np.any(hi):
                jv = special.jv(nu, rb[hi])
                with np.errstate(divide="ignore"):
                    logmag = (special.gammaln(nu + 1.0) + nu * np.log(2.0 / rb[hi])
                              + np.log(np.abs(jv)))
                val[hi] = np.sign(jv) * np.exp(logmag)
            out[big] = val
    return out


def _ball_cf_recurrence(r, nu, extra=60):
    r"""phi_nu(r) for 0 < r < nu (large nu), where J_nu(r) may underflow.

    With f_mu = phi_mu(r) = Gamma(mu+1)(2/r)^mu J_mu(r), the Bessel recurrence reads
    f_{mu-1} = f_mu - x/(mu(mu+1)) f_{mu+1} (x = r^2/4), so the ratios g_mu = f_mu/f_{mu-1}
    satisfy g_mu = 1/(1 - x g_{mu+1}/(mu(mu+1))), computed downwards from nu + extra (the
    minimal-solution direction: stable, start error damped).  For mu >= r every f_mu > 0 (no
    Bessel zero below the order), so log f_nu = log f_mu* + sum log g over mu* < mu <= nu with
    mu* = nu - floor(nu - r) in [r, r + 1), where J_mu*(r) ~ r^{-1/3} is safely representable.
    """
    x = 0.25 * r * r
    mus = nu - np.floor(nu - r)
    acc = np.zeros_like(r)
    g = np.ones_like(r)
    mu = nu + extra
    lo = float(mus.min())
    while mu > lo:
        g = 1.0 / (1.0 - x / (mu * (mu + 1.0)) * g)
        if mu <= nu:
            use = mu > mus
            acc[use] += np.log(g[use])
        mu -= 1.0
    logf = special.gammaln(mus + 1.0) + mus * np.log(2.0 / r) + np.log(special.jv(mus, r))
    return np.exp(logf + acc)


class BallSumKernel(_RadialKernel):
    r"""Fastfood's ball-sum kernel (LSS 2013 §3.4 "Matérn"; THEORY.md §4.6).

    .. math::

        k_t(\Delta) = \Big[\Gamma\big(\tfrac d2+1\big)\big(\tfrac 2r\big)^{d/2}
                      J_{d/2}(r)\Big]^t, \qquad r = \|\Delta\|_2/\sigma,

    the characteristic function of :math:`(\xi_1+\dots+\xi_t)/\sigma` with :math:`\xi_i` iid
    uniform in the unit ball :math:`B_d`: the bracket is the characteristic function of
    Uniform(:math:`B_d`) (:math:`d=1`: :math:`\sin r/r`; :math:`d=3`:
    :math:`3(\sin r - r\cos r)/r^3`).  **This is not the standard Matérn family** (whose spectrum
    is Student-t, :class:`MaternKernel`): its spectrum is compactly supported (radius t/σ), the
    kernel oscillates, and for odd t it is negative at some Δ.  The paper calls it Matérn
    because :math:`\|\Delta\|^{-t d/2} J_{d/2}(\|\Delta\|)^t` has the t-fold convolution of the
    ball's indicator as Fourier transform.

    The kernel depends on the dimension d of the ball.  ``dim`` fixes it; with ``dim=None`` it
    is the last axis of Δ (or the number of features of X), or the ``d`` argument of the
    samplers.  With ``dim`` fixed, inputs of any dimension ``d <= dim`` are treated as
    zero-padded to ``dim``: :meth:`k` is the same formula, :meth:`sample` returns the first ``d``
    coordinates of ``dim``-dimensional frequencies and :meth:`sample_radius` their lengths
    (this is the situation of Fastfood, whose ball lives in the padded power-of-two dimension).

    Parameters
    ----------
    sigma : float, default 1.0
        Length scale, > 0.
    t : int, default 1
        Number of summed ball points, >= 1 (the power of the Bessel factor).
    dim : int or None, default None
        Dimension of the ball.

    Notes
    -----
    :math:`\sigma_p^2 = \mathbb E\|\omega\|^2 = t\, d/((D+2)\sigma^2)` with D the ball dimension
    (a point uniform in :math:`B_D` has :math:`\mathbb E\|\xi\|^2 = D/(D+2)`).
    Radii are sampled exactly in O(t) per draw: :math:`\|\xi\| = U^{1/D}` and
    :math:`\|S_k\|^2 = \|S_{k-1}\|^2 + \|\xi_k\|^2 + 2\|S_{k-1}\|\|\xi_k\|\cos\theta_k` with
    :math:`(1+\cos\theta_k)/2 \sim \mathrm{Beta}((D-1)/2, (D-1)/2)` (a random sign for D = 1).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import BallSumKernel
    >>> r = 2.0
    >>> float(BallSumKernel(1.0, t=1).k(np.array([r]))), float(np.sin(r) / r)
    (0.45464871341284085, 0.45464871341284085)
    """

    name = "ballsum"
    aliases = ("ball_sum",)
    _binning_refusal = "Fastfood's ball-sum profiles are concave near 0 (and change sign)"

    def __init__(self, sigma=1.0, t=1, dim=None):
        super().__init__(sigma)
        if isinstance(t, (float, np.floating)) and float(t).is_integer():
            t = int(t)
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (numbers.Integral, np.integer)) \
                or int(t) < 1:
            raise ValueError(f"BallSumKernel: t must be an integer >= 1 (number of summed "
                             f"uniform ball points), got {t!r}")
        self.t = int(t)
        if dim is not None:
            dim = _check_count(dim, "dim", "BallSumKernel", 1)
        self.dim = dim

    def _params(self):
        return {"sigma": self.sigma, "t": self.t, "dim": self.dim}

    def _check_dim(self, d, who):
        if self.dim is not None and d > self.dim:
            raise ValueError(f"{who}: the ball of this BallSumKernel has dimension dim={self.dim}, "
                             f"but the input has {d} > {self.dim} coordinates; use dim >= {d} "
                             "or dim=None")
        return d

    def _ball_dim(self, d):
        return self.dim if self.dim is not None else d

    def _k_scaled(self, u):
        return self._profile(np.sqrt(np.einsum("...j,...j->...", u, u)), u.shape[-1])

    def _gram(self, U, V):
        return self._profile(cdist(U, V, "euclidean"), U.shape[1])

    def _profile(self, r, d):
        phi = _ball_cf(r, 0.5 * self._ball_dim(d))
        return phi if self.t == 1 else phi ** self.t

    def _ball_radius(self, n, D, rng):
        """||xi_1 + ... + xi_t|| for xi iid uniform in the unit ball of R^D (unscaled)."""
        s = rng.random(n) ** (1.0 / D)
        for _ in range(self.t - 1):
            rho = rng.random(n) ** (1.0 / D)
            if D == 1:
                c = np.where(rng.random(n) < 0.5, -1.0, 1.0)
            else:
                c = 2.0 * rng.beta(0.5 * (D - 1), 0.5 * (D - 1), n) - 1.0
            s = np.sqrt(np.maximum(s * s + rho * rho + 2.0 * s * rho * c, 0.0))
        return s

    def _sample_radius(self, n, d, rng):
        # lengths ||omega|| of frequencies in R^d (see the class notes)
        D = self._ball_dim(d)
        rad = self._ball_radius(n, D, rng)
        if D > d:  # length of the first d coordinates of a uniform direction in R^D
            rad = rad * np.sqrt(rng.beta(0.5 * d, 0.5 * (D - d), n))
        return rad / self.sigma

    def _sample(self, n, d, rng):
        D = self._ball_dim(d)
        rad = self._ball_radius(n, D, rng)
        dirs = self._uniform_directions(n, D, rng)[:, :d]
        return dirs * (rad / self.sigma)[:, None]

    def _sigma_p2(self, d):
        D = self._ball_dim(d)
        return self.t * d / ((D + 2.0) * self.sigma**2)
