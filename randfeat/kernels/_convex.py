r"""Separable convex-profile kernels that only random binning represents (RR 2007, Lemma 1).

Unit scale :math:`t = \Delta/\sigma`; the CDF of the pitch is :math:`F(t) = 1 - \kappa(t) +
t\,\kappa'(t)` (integrating Lemma 1 by parts).  The Laplacian :math:`e^{-t}`, which random
Fourier features can use as well, is :class:`randfeat.kernels.LaplacianKernel`.

==========================  ==================================  ====================================
class                       :math:`\kappa(t)`                   pitch :math:`\delta/\sigma` sampler
==========================  ==================================  ====================================
LaplacianKernel             :math:`e^{-t}`                      Gamma(shape 2, scale 1), untruncated
InversePowerBinningKernel   :math:`(1 + t)^{-a}`, a > 0         inverse CDF: Beta(2, a) quantile B,
                                                                :math:`t = B/(1-B)` (beta-prime)
StretchedExponential...     :math:`e^{-t^q}`, 0 < q <= 1        :math:`s^{1/q}`, s ~ q Gamma(2) +
                                                                (1-q) Exp(1) mixture (exact)
CustomBinningKernel         user profile (optional)             user ``sample_pitch(size, rng)``
==========================  ==================================  ====================================
"""

from __future__ import annotations

import numpy as np
from scipy import special

from randfeat.kernels._base import BinningKernel, _as_positive_real

__all__ = ["CustomBinningKernel", "InversePowerBinningKernel",
           "StretchedExponentialBinningKernel"]


class InversePowerBinningKernel(BinningKernel):
    r"""Inverse power :math:`\prod_m (1 + |\Delta_m|/\sigma)^{-a}`, :math:`a > 0`.

    Pitch density :math:`a(a+1)\,t\,(1+t)^{-a-2}/\sigma` with :math:`t = \delta/\sigma`, i.e.
    :math:`t` is beta-prime(2, a): :math:`t = B/(1-B)` with :math:`B \sim` Beta(2, a).  Sampled by
    inverse CDF (``scipy.special.betaincinv``), computing :math:`B` and :math:`1 - B` from their
    own quantile functions (whichever is below 1/2) so the heavy tail
    (:math:`P(t > s) \sim (a+1) s^{-a}`) keeps full relative precision.  For small ``a``
    pitches can be astronomically large (up to ~1e308) or ``inf``; both are handled exactly (an
    infinite pitch puts every point in one cell: its hat kernel is 1).
    """

    name = "inverse_power"
    aliases = ("rational",)

    def __init__(self, a=1.0, sigma=1.0):
        self.a = _as_positive_real(a, "a")
        super().__init__(sigma)

    def _params(self):
        return {"a": self.a, "sigma": self.sigma}

    def _unit_profile(self, t):
        return (1.0 + t) ** (-self.a)

    def _unit_dprofile(self, t):
        return -self.a * (1.0 + t) ** (-self.a - 1.0)

    def _unit_d2profile(self, t):
        return self.a * (self.a + 1.0) * (1.0 + t) ** (-self.a - 2.0)

    def _unit_sample(self, size, rng):
        U = rng.random(size)
        # B = F^{-1}(U) for Beta(2, a) and C = 1 - B; compute the smaller of the two from its own
        # quantile function (Beta(a, 2) for C), so both keep full relative precision
        u_half = special.betainc(2.0, self.a, 0.5)  # F(1/2): B < 1/2 iff U < u_half
        low = U < u_half
        B = np.empty_like(U)
        C = np.empty_like(U)
        B[low] = special.betaincinv(2.0, self.a, U[low])
        C[low] = 1.0 - B[low]
        C[~low] = special.betaincinv(self.a, 2.0, 1.0 - U[~low])
        B[~low] = 1.0 - C[~low]
        with np.errstate(divide="ignore"):
            return B / C


class StretchedExponentialBinningKernel(BinningKernel):
    r"""Stretched exponential :math:`\prod_m \exp(-(|\Delta_m|/\sigma)^q)`, :math:`0 < q \le 1`.

    With :math:`s = t^q` the pitch CDF is :math:`1 - e^{-s}(1 + q s)`, whose density in
    :math:`s` is :math:`e^{-s}(1 - q + q s)`: the mixture :math:`q\,\mathrm{Gamma}(2, 1) +
    (1-q)\,\mathrm{Exp}(1)`.  So :math:`t = s^{1/q}` is sampled exactly (no numerical inversion).
    ``q = 1`` is the Laplacian.  :math:`E[1/\delta] = \infty` for :math:`q < 1`.
    """

    name = "stretched_exponential"
    aliases = ("stretched",)

    def __init__(self, q=0.5, sigma=1.0):
        q = _as_positive_real(q, "q")
        if q > 1:
            raise ValueError(f"q must be in (0, 1] (the profile exp(-t^q) is concave near 0 for "
                             f"q > 1, so random binning cannot represent it); got {q!r}")
        self.q = q
        super().__init__(sigma)

    def _params(self):
        return {"q": self.q, "sigma": self.sigma}

    def _unit_profile(self, t):
        return np.exp(-(t ** self.q))

    def _unit_dprofile(self, t):
        q = self.q
        return -q * t ** (q - 1.0) * np.exp(-(t ** q))

    def _unit_d2profile(self, t):
        q = self.q
        return (q * (1.0 - q) * t ** (q - 2.0) + q * q * t ** (2.0 * q - 2.0)) * np.exp(-(t ** q))

    def _unit_sample(self, size, rng):
        gamma2 = rng.gamma(2.0, 1.0, size=size)
        expo = rng.standard_exponential(size=size)
        pick = rng.random(size) < self.q
        s = np.where(pick, gamma2, expo)
        with np.errstate(over="ignore"):
            return s ** (1.0 / self.q)


class CustomBinningKernel(BinningKernel):
    r"""A user-supplied pitch law, optionally with its exact unit profile.

    Parameters
    ----------
    sample_pitch : callable
        ``sample_pitch(size, rng) -> pitches``: unit-scale pitches (positive, may be ``inf``) of
        shape ``size`` drawn from :math:`t\,\kappa''(t)` using the :class:`numpy.random.Generator`
        ``rng`` (no other source of randomness, so ``random_state`` makes fits reproducible).
    profile : callable, optional
        Unit-scale :math:`\kappa(t)` for :math:`t \ge 0`, needed only by :meth:`k`, :meth:`gram`
        and :meth:`profile` (tests and analysis).  Lemma 1 fixes it given the law:
        :math:`\kappa(t) = E[\max(0, 1 - t/\delta)]`.
    sigma : float, default=1.0
        Scale applied to the pitches and the profile.

    Examples
    --------
    The hat kernel :math:`\max(0, 1 - |\Delta|)` has a point-mass pitch law at 1:

    >>> import numpy as np
    >>> hat = CustomBinningKernel(lambda size, rng: np.ones(size),
    ...                           profile=lambda t: np.maximum(0.0, 1.0 - t))
    >>> float(hat.k(np.array([0.25, 0.5])))
    0.375
    """

    name = "custom"

    def __init__(self, sample_pitch, profile=None, sigma=1.0):
        if not callable(sample_pitch):
            raise TypeError(f"sample_pitch must be callable as sample_pitch(size, rng), got "
                            f"{sample_pitch!r} of type {type(sample_pitch).__name__}")
        if profile is not None and not callable(profile):
            raise TypeError(f"profile must be None or a callable profile(t), got {profile!r}")
        self.sample_pitch_fn = sample_pitch
        self.profile_fn = profile
        super().__init__(sigma)

    def _params(self):
        return {"sample_pitch": self.sample_pitch_fn, "profile": self.profile_fn,
                "sigma": self.sigma}

    def _unit_profile(self, t):
        if self.profile_fn is None:
            raise ValueError("this CustomBinningKernel has no exact profile; pass "
                             "profile=callable(t) to CustomBinningKernel to evaluate the kernel")
        return np.asarray(self.profile_fn(t), dtype=np.float64)

    def pitch_pdf(self, delta):
        raise NotImplementedError("CustomBinningKernel knows its pitch law only by its sampler")

    def pitch_cdf(self, delta):
        raise NotImplementedError("CustomBinningKernel knows its pitch law only by its sampler")

    def _unit_sample(self, size, rng):
        out = np.asarray(self.sample_pitch_fn(size, rng), dtype=np.float64)
        if out.shape != tuple(np.atleast_1d(size)):
            raise ValueError(f"sample_pitch(size={size}, rng) must return an array of shape "
                             f"{tuple(np.atleast_1d(size))}, got shape {out.shape}")
        if np.isnan(out).any() or (out <= 0).any():
            raise ValueError("sample_pitch must return positive pitches (inf allowed); got "
                             f"min {np.nanmin(out) if not np.isnan(out).all() else np.nan!r} "
                             "or NaN")
        return out
