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

ARD length scales
-----------------
``sigma`` may be a 1-D array of positive length scales, one per coordinate (automatic relevance
determination): the kernel is then :math:`k(x, y) = k_1((x - y)/\sigma)` coordinate-wise, where
:math:`k_1` is the same kernel at unit length scale.  Every kernel of this package admits it
(the change of variables :math:`\Delta \to \Delta/\sigma` keeps a kernel positive definite
and maps its spectral law to :math:`\omega = \omega_1/\sigma` and its pitch law to
:math:`\delta_m = \sigma_m\,\delta_{1,m}`), through the base classes, which apply ``sigma``
before the subclass hooks (``_k_scaled``, ``_gram``, ``_sample``, ``_unit_sample``) see a
unit-scale problem.  A subclass that overrides one of the public methods that apply ``sigma``
outside this package is refused (``_check_ard_capable``).
:meth:`ShiftInvariantKernel.ard_split` gives the scalar part and the per-coordinate scales that
the feature maps fold into their frequencies, inputs or pitches.
"""

from __future__ import annotations

import copy
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
    """A positive finite length scale (float), or a 1-D array of them, one per coordinate (ARD,
    returned as a read-only float64 copy).  Errors name ``sigma``, say what was received and
    how to fix it."""
    if isinstance(sigma, (bool, np.bool_)) or isinstance(sigma, str):
        raise TypeError(f"{who}: sigma must be a positive finite real number (a length scale) or "
                        "a 1-D array of them, one per feature (ARD), got "
                        f"{sigma!r} of type {type(sigma).__name__}")
    if not isinstance(sigma, (numbers.Real, np.floating, np.integer)):
        try:
            arr = np.asarray(sigma)
        except Exception:  # noqa: BLE001 - anything that is not array-like
            arr = None
        if arr is None or arr.dtype.kind not in "fiu":
            raise TypeError(
                f"{who}: sigma must be a positive finite real number (a length scale) or a 1-D "
                f"array of them, one per feature (ARD), got {sigma!r} of type "
                f"{type(sigma).__name__}" + ("" if arr is None else f" (dtype {arr.dtype})"))
        if arr.ndim == 0:
            sigma = arr[()]
        else:
            return _check_sigma_array(arr, who)
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{who}: sigma must be a positive finite length scale, got {sigma!r}; "
                         "for scikit-learn's gamma use sigma = 1/sqrt(2*gamma)")
    return sigma


def _check_sigma_array(arr, who):
    if arr.ndim != 1:
        raise ValueError(f"{who}: sigma as an array must be 1-D, one length scale per feature "
                         f"(ARD), shape (n_features,); got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{who}: sigma is an empty array; pass one positive length scale per "
                         "feature (ARD), or a number")
    with np.errstate(over="ignore"):
        out = np.array(arr, dtype=np.float64, copy=True)
    bad = np.flatnonzero(~(np.isfinite(out) & (out > 0)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{who}: sigma must hold positive finite length scales (one per "
                         f"feature), but sigma[{i}] = {arr[i].item()!r}" +
                         (f" ({bad.size} such entries)" if bad.size > 1 else "") +
                         "; for scikit-learn's gamma use sigma = 1/sqrt(2*gamma)")
    out.flags.writeable = False
    return out


#: the public methods through which a kernel applies its ``sigma``: a subclass that overrides one
#: of them outside randfeat.kernels may treat sigma as a number, so it cannot take ARD scales
_SIGMA_METHODS = ("__call__", "gram", "k", "sample", "sample_radius", "sigma_p2", "profile",
                  "pitch_pdf", "pitch_cdf", "sample_pitch", "rescaled", "ard_split")


def _check_ard_capable(kernel, who):
    """Refuse ARD length scales for a subclass that applies ``sigma`` in its own public methods
    (defined outside this package), where an array would be used as a number."""
    cls = type(kernel)
    for name in _SIGMA_METHODS:
        f = getattr(cls, name, None)
        mod = getattr(f, "__module__", None) or ""
        if f is not None and not mod.startswith("randfeat.kernels"):
            raise ValueError(
                f"{who}: sigma as an array (one length scale per feature, ARD) needs the "
                f"randfeat.kernels base classes to apply it, but {cls.__name__}.{name} is "
                f"defined in {mod or 'an unknown module'} and may treat sigma as a number; pass "
                "a scalar sigma (and divide X by the length scales yourself), or implement the "
                "unit-scale hooks (_k_scaled, _gram, _sample, _unit_sample) instead")


def _check_ard_dim(kernel, d, who):
    """The number of coordinates ``d`` matches an ARD kernel's length scales."""
    s = kernel.sigma
    if isinstance(s, np.ndarray) and s.shape[0] != d:
        raise ValueError(f"{who}: sigma has {s.shape[0]} length scales (ARD, one per feature) "
                         f"but the input has {d} features; pass sigma of shape ({d},) or a "
                         "number")
    return d


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

    #: distance of the median heuristic (``sigma="median"``): the norm in the kernel's exponent
    median_metric = "euclidean"

    def __init__(self, sigma=1.0):
        who = type(self).__name__
        self.sigma = _check_sigma(sigma, who)
        if isinstance(self.sigma, np.ndarray):
            _check_ard_capable(self, who)

    def __setstate__(self, state):
        """Unpickling (and deepcopy) keeps an ARD ``sigma`` read-only."""
        self.__dict__.update(state)
        s = self.__dict__.get("sigma")
        if isinstance(s, np.ndarray) and s.flags.owndata:
            s.flags.writeable = False

    @property
    def ard(self):
        """True when ``sigma`` is an array of per-coordinate length scales (ARD)."""
        return isinstance(self.sigma, np.ndarray)

    def ard_split(self):
        r"""``(base, scales)`` with :math:`k(\Delta) = k_{base}(\Delta / scales)`.

        For a scalar ``sigma``: ``(self, None)``.  For ARD length scales that are all equal
        (:math:`\sigma_j = s`): the same kernel with the scalar ``sigma = s`` and None -- the
        isotropic kernel, whose feature maps are then bit-identical to a scalar ``sigma=s``.
        Otherwise the kernel at unit length scale and the array ``sigma``: frequencies are
        ``base``'s divided by ``scales`` column-wise, inputs of structured maps are divided by
        ``scales``, pitches are multiplied by them.

        Examples
        --------
        >>> from randfeat.kernels import GaussianKernel
        >>> GaussianKernel(sigma=[2.0, 2.0]).ard_split()
        (GaussianKernel(sigma=2.0), None)
        >>> GaussianKernel(sigma=[1.0, 4.0]).ard_split()
        (GaussianKernel(sigma=1.0), array([1., 4.]))
        """
        s = self.sigma
        if not isinstance(s, np.ndarray):
            return self, None
        base = copy.copy(self)
        if np.all(s == s[0]):
            base.sigma = float(s[0])
            return base, None
        base.sigma = 1.0
        return base, s

    def _dim(self, d, who):
        """The subclass's dimension check and the ARD length check."""
        self._check_dim(d, who)
        return _check_ard_dim(self, d, who)

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
        self._dim(X.shape[1], who)
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
        self._dim(delta.shape[-1], who)
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
        self._dim(d, who)
        return n, d, check_random_state(rng)

    def sample(self, n, d, rng=None):
        r"""Draw ``n`` frequencies :math:`\omega \sim p` in :math:`\mathbb R^d`.

        Returns a float64 array of shape (n, d); ``rng`` is a numpy Generator (or a seed).
        Available when ``spectral`` is True.  With ARD length scales the frequencies are those of
        the unit-scale kernel divided by ``sigma`` column-wise, :math:`\omega_j = \omega_{1,j}
        / \sigma_j` (the spectral law of :math:`k_1(\Delta/\sigma)`).
        """
        if self._sample is None:
            raise ValueError(
                f"{type(self).__name__} has no sampler of its spectral density, so random "
                "Fourier features cannot use it; it is a random binning kernel "
                "(randfeat.RandomBinningFeatures)")
        args = self._sampler_args(n, d, rng, "sample")
        base, scales = self.ard_split()
        W = base._sample(*args)
        if scales is not None:
            W /= scales
        return W

    def sample_radius(self, n, d, rng=None):
        r"""Draw ``n`` lengths :math:`\|\omega\|_2`, :math:`\omega \sim p` in dimension ``d``.

        Only for isotropic kernels (Fastfood draws its scaling matrix S from this law), and not
        for unequal ARD length scales (the spectral law is then not spherically symmetric:
        sample the radii of ``ard_split()[0]``, the unit-scale kernel, and divide the frequencies
        by the length scales).
        """
        if self._sample_radius is None:
            raise ValueError(
                f"{type(self).__name__} is not isotropic (its spectral density is not "
                "spherically symmetric), so it has no radial law; sample_radius is available "
                "for GaussianKernel, MaternKernel and BallSumKernel")
        args = self._sampler_args(n, d, rng, "sample_radius")
        base, scales = self.ard_split()
        if scales is not None:
            raise ValueError(
                f"{type(self).__name__}.sample_radius: sigma holds unequal length scales (ARD), "
                "so the spectral law is not spherically symmetric and has no radial law; use "
                "ard_split(): the radii of its unit-scale kernel, with the frequencies divided "
                "by the length scales")
        return base._sample_radius(*args)

    def sigma_p2(self, d):
        r""":math:`\sigma_p^2 = \mathbb E_p\|\omega\|^2 = -\operatorname{tr}\nabla^2 k(0)`.

        In dimension ``d`` (``np.inf`` when the second moment is infinite).  This is the constant
        of Rahimi & Recht's Claim 1 (THEORY.md §2.5).  With ARD length scales every coordinate
        of the unit-scale law has the same second moment (the kernels are isotropic or products
        of one profile), so :math:`\sigma_p^2 = \sigma_{p,1}^2(d)\,\overline{\sigma_j^{-2}}`.
        """
        if self._sigma_p2 is None:
            raise NotImplementedError(f"{type(self).__name__} does not know its sigma_p^2")
        who = f"{type(self).__name__}.sigma_p2"
        d = _check_count(d, "d", who, 1)
        self._dim(d, who)
        base, scales = self.ard_split()
        if scales is None:
            return base._sigma_p2(d)
        return base._sigma_p2(d) * float(np.mean(1.0 / scales ** 2))

    # ---- helpers --------------------------------------------------------------------------
    def _check_dim(self, d, who):
        return d

    def _params(self):
        return {"sigma": self.sigma}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        a, b = self._params(), other._params()
        return a.keys() == b.keys() and all(_param_equal(a[k], b[k]) for k in a)

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(
            (k, tuple(v.tolist()) if isinstance(v, np.ndarray) else v)
            for k, v in self._params().items()))))

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


def _param_equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and bool(np.array_equal(a, b)))
    return bool(a == b)


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
    #: the median heuristic uses the L1 distance: the kernel is a product over coordinates, with
    #: log k = -||Delta||_1 / sigma for the Laplacian (and ~ -a ||Delta||_1 / sigma, -q ... for the
    #: others near 0), so sigma = the median L1 distance gives k = 1/e at the median pair for the
    #: Laplacian in every dimension (the Euclidean median would shrink k like exp(-c sqrt(d)))
    median_metric = "cityblock"

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
        r"""Kernel at differences ``delta`` (..., d): :math:`\prod_m \kappa(|\Delta_m|/\sigma_m)`.

        A scalar ``delta`` is a one-dimensional difference (the profile itself; with ARD length
        scales, a 1-D kernel's single coordinate).
        """
        if np.ndim(delta) == 0:
            if self.ard:
                return super().k(np.atleast_1d(delta))
            return self.profile(delta)
        return super().k(delta)

    # -- public API ------------------------------------------------------------------------------
    def profile(self, delta):
        r"""1-D profile :math:`\kappa(|\Delta|/\sigma)` (elementwise; ``profile(0) == 1``).

        With ARD length scales, ``sigma`` is broadcast against the last axis of ``delta``
        (coordinate m uses :math:`\sigma_m`), as in :meth:`pitch_pdf`, :meth:`pitch_cdf` and
        :meth:`sample_pitch`.
        """
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
        r"""Draw pitches (float64, may be ``inf`` for heavy-tailed laws) of shape ``size``.

        With ARD length scales ``size`` must end with the number of coordinates: the unit
        pitches of coordinate m are multiplied by :math:`\sigma_m`.
        """
        if self.ard:
            shape = tuple(np.atleast_1d(size))
            if shape[-1] != self.sigma.shape[0]:
                raise ValueError(
                    f"{type(self).__name__}.sample_pitch: sigma has {self.sigma.shape[0]} "
                    f"length scales (ARD, one per coordinate) but size={size!r} does not end "
                    f"with {self.sigma.shape[0]} coordinates")
        t = np.asarray(self._unit_sample(size, rng), dtype=np.float64)
        return t * self.sigma

    def rescaled(self, factor):
        """Same kernel with length scale ``sigma * factor`` (every ARD scale times ``factor``)."""
        params = dict(self._params())
        params["sigma"] = self.sigma * _as_positive_real(factor, "sigma")
        return type(self)(**params)
