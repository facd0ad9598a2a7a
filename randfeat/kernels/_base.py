r"""The kernel hierarchy's base classes and their argument checks.

:class:`ShiftInvariantKernel` is the root: a normalised kernel :math:`k(x, y) = k(x - y)` with a
length scale ``sigma``, its Gram matrix and :math:`k(\Delta)`.  What a feature map needs from a
kernel is a *capability*, declared by three class flags:

=============  ==============================  =================================================
flag           method                          used by
=============  ==============================  =================================================
``spectral``   ``sample(n, d, rng)``           :class:`randfeat.RandomFourierFeatures`
``isotropic``  ``sample_radius(n, d, rng)``    :class:`randfeat.Fastfood`
``binnable``   ``sample_pitch(size, rng)``     :class:`randfeat.RandomBinningFeatures`
=============  ==============================  =================================================

:class:`BinningKernel` adds the separable convex-profile machinery of random binning (Rahimi &
Recht 2007, Lemma 1); a kernel may have several capabilities (the Laplacian has all but
``isotropic``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.spatial.distance import cdist

from randfeat._validation import check_random_state

__all__ = ["BinningKernel", "ShiftInvariantKernel"]


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------
def _check_sigma(sigma, who):
    if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, (numbers.Real, np.floating,
                                                                     np.integer)):
        raise TypeError(f"{who}: sigma must be a positive finite real number (a length scale), "
                        f"got {sigma!r} of type {type(sigma).__name__}")
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{who}: sigma must be a positive finite length scale, got {sigma!r}; "
                         "for scikit-learn's gamma use sigma = 1/sqrt(2*gamma)")
    return sigma


def _as_positive_real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r} "
                        f"of type {type(value).__name__}")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _check_count(n, name, who, minimum=0):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"{who}: {name} must be an integer >= {minimum}, got {n!r} "
                        f"of type {type(n).__name__}")
    n = int(n)
    if n < minimum:
        raise ValueError(f"{who}: {name} must be an integer >= {minimum}, got {n}")
    return n


def _as_points(X, name, who):
    X = np.asarray(X)
    if X.dtype.kind not in "fiub":
        raise TypeError(f"{who}: {name} must be a real array, got dtype {X.dtype}")
    X = X.astype(np.float64, copy=False)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2:
        raise ValueError(f"{who}: {name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.size and not np.isfinite(X).all():
        raise ValueError(f"{who}: {name} contains NaN or infinity")
    return X


def _as_delta(delta, who):
    delta = np.asarray(delta)
    if delta.dtype.kind not in "fiub":
        raise TypeError(f"{who}: delta must be a real array, got dtype {delta.dtype}")
    delta = delta.astype(np.float64, copy=False)
    if delta.ndim == 0:
        raise ValueError(f"{who}: delta must have shape (..., d) with the coordinates on the last "
                         "axis, got a scalar; use np.atleast_1d(delta)")
    return delta


# --------------------------------------------------------------------------------------------
# root of the hierarchy
# --------------------------------------------------------------------------------------------
class ShiftInvariantKernel:
    r"""Base class of normalised shift-invariant kernels :math:`k(x, y) = k(x - y)`, :math:`k(0)=1`.

    Attributes
    ----------
    name : str
        Canonical name accepted by :func:`randfeat.kernels.get_kernel` (``aliases`` lists the
        other accepted spellings).
    sigma : float
        Length scale (``Delta -> Delta / sigma``, ``omega -> omega / sigma``).
    spectral : bool
        True when :meth:`sample` draws frequencies from the spectral density (random Fourier
        features can use the kernel).
    isotropic : bool
        True when :math:`k` depends on :math:`\|\Delta\|_2` only (then :math:`p` is spherically
        symmetric and :meth:`sample_radius` is available: Fastfood can use the kernel).
    binnable : bool
        True for a separable kernel with a convex 1-D profile (:class:`BinningKernel`: random
        binning can use it).

    Notes
    -----
    Subclasses implement ``_k_scaled(u)`` (the kernel at ``u = Delta / sigma``, shape (..., d) →
    (...)), ``sample`` and, when isotropic, ``sample_radius`` and ``sigma_p2``.  The Gram matrix
    defaults to evaluating ``k`` on all pairwise differences, in row blocks.
    """

    name = "base"
    aliases: tuple = ()
    spectral = False
    isotropic = False
    binnable = False
    #: why random binning cannot represent this kernel (Lemma 1), for the error message
    _binning_refusal = "it is not a separable kernel with a convex profile"

    def __init__(self, sigma=1.0):
        self.sigma = _check_sigma(sigma, type(self).__name__)

    # ---- public API ---------------------------------------------------------------------
    def __call__(self, X, Y=None):
        """Gram matrix :math:`K_{ij} = k(x_i - y_j)`.

        Parameters
        ----------
        X : array_like, shape (n_x, d)
        Y : array_like, shape (n_y, d), optional
            Defaults to ``X``.

        Returns
        -------
        K : ndarray of float64, shape (n_x, n_y)
            Exactly 1 where ``x_i == y_j``.
        """
        who = f"{type(self).__name__}.__call__"
        X = _as_points(X, "X", who)
        Y = X if Y is None else _as_points(Y, "Y", who)
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"{who}: X has {X.shape[1]} features but Y has {Y.shape[1]}")
        self._check_dim(X.shape[1], who)
        return self._gram(X / self.sigma, Y / self.sigma)

    def gram(self, X, Y=None):
        """Same as calling the kernel: the Gram matrix ``K[i, j] = k(X[i] - Y[j])``."""
        return self(X, Y)

    def k(self, delta):
        r"""Kernel as a function of the difference, :math:`k(\Delta)`.

        Parameters
        ----------
        delta : array_like, shape (..., d)
            Differences :math:`x - y`, coordinates on the last axis.

        Returns
        -------
        ndarray of float64, shape (...)
        """
        who = f"{type(self).__name__}.k"
        delta = _as_delta(delta, who)
        self._check_dim(delta.shape[-1], who)
        return self._k_scaled(delta / self.sigma)

    # The public samplers validate their arguments once, here, and call the kernel's own
    # ``_sample`` / ``_sample_radius`` / ``_sigma_p2`` (None: the kernel has no such law).
    _sample = None
    _sample_radius = None
    _sigma_p2 = None

    def _sampler_args(self, n, d, rng, what):
        """Validated (n, d, Generator) of ``sample``/``sample_radius``."""
        who = f"{type(self).__name__}.{what}"
        n = _check_count(n, "n", who)
        d = _check_count(d, "d", who, 1)
        self._check_dim(d, who)
        return n, d, check_random_state(rng)

    def sample(self, n, d, rng=None):
        r"""Draw ``n`` frequencies :math:`\omega \sim p` in :math:`\mathbb R^d`.

        Returns a float64 array of shape (n, d); ``rng`` is a numpy Generator (or a seed).
        Available when ``spectral`` is True.
        """
        if self._sample is None:
            raise ValueError(
                f"{type(self).__name__} has no sampler of its spectral density, so random "
                "Fourier features cannot use it; it is a random binning kernel "
                "(randfeat.RandomBinningFeatures)")
        return self._sample(*self._sampler_args(n, d, rng, "sample"))

    def sample_radius(self, n, d, rng=None):
        r"""Draw ``n`` lengths :math:`\|\omega\|_2`, :math:`\omega \sim p` in dimension ``d``.

        Only for isotropic kernels (Fastfood draws its scaling matrix S from this law).
        """
        if self._sample_radius is None:
            raise ValueError(
                f"{type(self).__name__} is not isotropic (its spectral density is not "
                "spherically symmetric), so it has no radial law; sample_radius is available "
                "for GaussianKernel, MaternKernel and BallSumKernel")
        return self._sample_radius(*self._sampler_args(n, d, rng, "sample_radius"))

    def sigma_p2(self, d):
        r""":math:`\sigma_p^2 = \mathbb E_p\|\omega\|^2 = -\operatorname{tr}\nabla^2 k(0)`.

        In dimension ``d`` (``np.inf`` when the second moment is infinite).  This is the constant
        of Rahimi & Recht's Claim 1 (THEORY.md §2.5).
        """
        if self._sigma_p2 is None:
            raise NotImplementedError(f"{type(self).__name__} does not know its sigma_p^2")
        who = f"{type(self).__name__}.sigma_p2"
        d = _check_count(d, "d", who, 1)
        self._check_dim(d, who)
        return self._sigma_p2(d)

    # ---- helpers --------------------------------------------------------------------------
    def _check_dim(self, d, who):
        return d

    def _params(self):
        return {"sigma": self.sigma}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self._params() == other._params()

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self._params().items()))))

    def _gram(self, U, V):
        """Gram matrix of already-scaled points, through k on blocks of differences."""
        out = np.empty((U.shape[0], V.shape[0]))
        block = max(1, 2**22 // max(1, V.shape[0] * U.shape[1]))
        for s in range(0, U.shape[0], block):
            out[s:s + block] = self._k_scaled(U[s:s + block, None, :] - V[None, :, :])
        return out

    def _uniform_directions(self, n, d, rng):
        g = rng.standard_normal((n, d))
        nrm = np.linalg.norm(g, axis=1, keepdims=True)
        # a zero Gaussian vector has probability 0; guard anyway
        nrm[nrm == 0] = 1.0
        return g / nrm


class _RadialKernel(ShiftInvariantKernel):
    """Isotropic kernel: k depends on r = ||Delta||_2 / sigma through ``_profile(r)``."""

    spectral = True
    isotropic = True

    def _k_scaled(self, u):
        return self._profile(np.sqrt(np.einsum("...j,...j->...", u, u)))

    def _gram(self, U, V):
        return self._profile(cdist(U, V, "euclidean"))

    def _sample(self, n, d, rng):
        return self._uniform_directions(n, d, rng) * self._sample_radius(n, d, rng)[:, None]


# --------------------------------------------------------------------------------------------
# separable convex-profile kernels (random binning)
# --------------------------------------------------------------------------------------------
class BinningKernel(ShiftInvariantKernel):
    r"""A separable kernel :math:`\prod_m \kappa(|\Delta_m|/\sigma)` with a convex profile.

    Random binning (Rahimi & Recht 2007, §4, Lemma 1) approximates exactly these kernels: if
    :math:`\kappa` is twice differentiable, convex, :math:`\kappa(0) = 1` and
    :math:`\kappa(\infty) = 0`, then

    .. math:: \kappa(\Delta) = \int_0^\infty p(\delta)\,\max(0, 1 - \Delta/\delta)\,d\delta,
              \qquad p(\delta) = \delta\,\kappa''(\delta),

    and sampling grid pitches from :math:`p` makes the collision indicator of a randomly
    shifted grid an unbiased estimate of :math:`\kappa`.

    Subclasses define the unit-scale profile :math:`\kappa(t)`, its first two derivatives and
    an exact sampler of the unit pitch law :math:`t\,\kappa''(t)`; this base class adds the scale
    ``sigma`` (pitches scale by ``sigma``) and the derived quantities.

    Parameters
    ----------
    sigma : float, default=1.0
        Length scale: :math:`k(\Delta) = \prod_m \kappa(|\Delta_m| / \sigma)`.
    """

    name = "binning"
    binnable = True

    # -- unit-scale definition (override) -----------------------------------------------------
    def _unit_profile(self, t):
        raise NotImplementedError

    def _unit_dprofile(self, t):
        raise NotImplementedError

    def _unit_d2profile(self, t):
        raise NotImplementedError

    def _unit_sample(self, size, rng):
        raise NotImplementedError

    # -- ShiftInvariantKernel ----------------------------------------------------------------
    def _k_scaled(self, u):
        return np.prod(self._unit_profile(np.abs(u)), axis=-1)

    def _gram(self, U, V):
        K = np.ones((U.shape[0], V.shape[0]))
        for m in range(U.shape[1]):
            K *= self._unit_profile(np.abs(U[:, m, None] - V[None, :, m]))
        return K

    def k(self, delta):
        r"""Kernel at differences ``delta`` (..., d): :math:`\prod_m \kappa(|\Delta_m|/\sigma)`.

        A scalar ``delta`` is a one-dimensional difference (the profile itself).
        """
        if np.ndim(delta) == 0:
            return self.profile(delta)
        return super().k(delta)

    # -- public API ------------------------------------------------------------------------------
    def profile(self, delta):
        r"""1-D profile :math:`\kappa(|\Delta|/\sigma)` (elementwise; ``profile(0) == 1``)."""
        return self._unit_profile(np.abs(np.asarray(delta, dtype=np.float64)) / self.sigma)

    def pitch_pdf(self, delta):
        r"""Pitch density :math:`p(\delta) = \delta\,\kappa_\sigma''(\delta)` (Lemma 1)."""
        t = np.asarray(delta, dtype=np.float64) / self.sigma
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            out = np.where(t > 0, t * self._unit_d2profile(np.where(t > 0, t, 1.0)), 0.0)
        return out / self.sigma

    def pitch_cdf(self, delta):
        r"""Pitch CDF :math:`F(\delta) = 1 - \kappa(t) + t\,\kappa'(t)`, :math:`t = \delta/\sigma`.

        (Integrate Lemma 1's density by parts.)
        """
        t = np.asarray(delta, dtype=np.float64) / self.sigma
        tt = np.where(t > 0, t, 1.0)
        with np.errstate(invalid="ignore", over="ignore"):
            out = 1.0 - self._unit_profile(tt) + tt * self._unit_dprofile(tt)
        return np.where(t > 0, np.clip(out, 0.0, 1.0), 0.0)

    def sample_pitch(self, size, rng):
        """Draw pitches (float64, may be ``inf`` for heavy-tailed laws) of shape ``size``."""
        t = np.asarray(self._unit_sample(size, rng), dtype=np.float64)
        return t * self.sigma

    def rescaled(self, factor):
        """Same kernel with length scale ``sigma * factor``."""
        params = dict(self._params())
        params["sigma"] = self.sigma * _as_positive_real(factor, "sigma")
        return type(self)(**params)
