r"""Random binning features (Rahimi & Recht 2007, §4, Algorithm 2) and their admissible kernels.

A random binning map approximates a *separable* shift-invariant kernel

.. math:: k(x, y) = \prod_{m=1}^{d} \kappa\!\big(|x_m - y_m| / \sigma\big)

by the collision indicator of random grids.  In one dimension a grid of pitch :math:`\delta`
shifted by :math:`u \sim U[0, \delta)` puts :math:`x` and :math:`y` in the same cell with
probability :math:`\max(0, 1 - |x - y|/\delta)` (the *hat* kernel, THEORY §3.1).  Lemma 1 of
Rahimi & Recht: if :math:`\kappa` is twice differentiable,

.. math:: \kappa(\Delta) = \int_0^\infty p(\delta)\,\max(0, 1 - \Delta/\delta)\,d\delta
          \quad\text{with}\quad p(\delta) = \delta\,\kappa''(\delta),

so sampling the pitch from :math:`p` makes the collision indicator an unbiased estimate of
:math:`\kappa`.  :math:`p` is a probability density iff :math:`\kappa'' \ge 0` (a *convex*
profile), :math:`\kappa(0) = 1`, :math:`\kappa(\infty) = 0`.  Hence the Gaussian, Cauchy
:math:`1/(1+\Delta^2)`, Matérn :math:`\nu > 1/2` and sinc kernels **cannot** be approximated
by random binning (their profile is concave near 0) and are refused.

Kernels (unit scale :math:`t = \Delta/\sigma`; the CDF of the pitch is
:math:`F(t) = 1 - \kappa(t) + t\,\kappa'(t)`, integrating Lemma 1 by parts)

==========================  ==================================  ====================================
class                       :math:`\kappa(t)`                   pitch :math:`\delta/\sigma` sampler
==========================  ==================================  ====================================
LaplacianBinningKernel      :math:`e^{-t}`                      Gamma(shape 2, scale 1), untruncated
InversePowerBinningKernel   :math:`(1 + t)^{-a}`, a > 0         inverse CDF: Beta(2, a) quantile B,
                                                                :math:`t = B/(1-B)` (beta-prime)
StretchedExponential...     :math:`e^{-t^q}`, 0 < q <= 1        :math:`s^{1/q}`, s ~ q Gamma(2) +
                                                                (1-q) Exp(1) mixture (exact)
CustomBinningKernel         user profile (optional)             user ``sample_pitch(size, rng)``
==========================  ==================================  ====================================

The multivariate Laplacian here is :math:`\exp(-\|x - y\|_1/\sigma)` (product form, L1 norm),
not :math:`\exp(-\|x-y\|_2/\sigma)`.

References
----------
A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007,
§4 (Algorithm 2), Lemma 1 and Claim 2.

Examples
--------
>>> import numpy as np
>>> from randfeat import RandomBinningFeatures
>>> X = np.random.default_rng(0).normal(size=(500, 3))
>>> rbf = RandomBinningFeatures(n_grids=200, sigma=2.0, random_state=0).fit(X)
>>> Z = rbf.transform(X[:2])
>>> Z.shape == (2, rbf.n_columns_), Z.nnz            # one entry per grid per training row
(True, 400)
>>> est = float((Z[0] @ Z[1].T).toarray()[0, 0])     # fraction of grids sharing a cell
>>> exact = float(rbf.kernel_.gram(X[:1], X[1:2])[0, 0])
>>> bool(abs(est - exact) < 5 * np.sqrt(exact * (1 - exact) / 200) + 1e-12)
True
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy import special
from sklearn.base import _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from randfeat._base import RandomFeaturesBase
from randfeat._binning_layout import fit_cells as _fit_cells
from randfeat._lib import _binning

__all__ = [
    "BinningKernel",
    "CustomBinningKernel",
    "InversePowerBinningKernel",
    "LaplacianBinningKernel",
    "RandomBinningFeatures",
    "StretchedExponentialBinningKernel",
    "get_binning_kernel",
]

# Kernels a user may reasonably ask for that random binning cannot represent (Lemma 1).
_NON_CONVEX = {
    "gaussian": "exp(-t^2/2) is concave for t < 1",
    "rbf": "exp(-t^2/2) is concave for t < 1",
    "cauchy": "1/(1 + t^2) is concave for t < 1/sqrt(3)",
    "matern": "Matérn profiles with nu > 1/2 are concave near 0 (nu = 1/2 is the Laplacian)",
    "sinc": "sin(t)/t changes sign and is concave near 0",
    "ballsum": "Fastfood's ball-sum profiles are concave near 0 (and change sign)",
}


def _as_positive_real(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {value!r} "
                        f"of type {type(value).__name__}")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


class BinningKernel:
    r"""A separable kernel :math:`\prod_m \kappa(|\Delta_m|/\sigma)` with a convex profile.

    Subclasses define the unit-scale profile :math:`\kappa(t)`, its first two derivatives and
    an exact sampler of the unit pitch law :math:`t\,\kappa''(t)`; this base class adds the scale
    ``sigma`` (pitches scale by ``sigma``) and the derived quantities.

    Parameters
    ----------
    sigma : float, default=1.0
        Length scale: :math:`k(\Delta) = \prod_m \kappa(|\Delta_m| / \sigma)`.
    """

    name = "binning"

    def __init__(self, sigma=1.0):
        self.sigma = _as_positive_real(sigma, "sigma")

    # -- unit-scale definition (override) -----------------------------------------------------
    def _unit_profile(self, t):
        raise NotImplementedError

    def _unit_dprofile(self, t):
        raise NotImplementedError

    def _unit_d2profile(self, t):
        raise NotImplementedError

    def _unit_sample(self, size, rng):
        raise NotImplementedError

    def _params(self):
        return {}

    # -- public API ------------------------------------------------------------------------------
    def profile(self, delta):
        r"""1-D profile :math:`\kappa(|\Delta|/\sigma)` (elementwise; ``profile(0) == 1``)."""
        return self._unit_profile(np.abs(np.asarray(delta, dtype=np.float64)) / self.sigma)

    def k(self, delta):
        r"""Kernel at differences ``delta`` (..., d): :math:`\prod_m \kappa(|\Delta_m|/\sigma)`."""
        delta = np.asarray(delta, dtype=np.float64)
        if delta.ndim == 0:
            return self.profile(delta)
        return np.prod(self.profile(delta), axis=-1)

    def gram(self, X, Y=None):
        """Exact Gram matrix ``K[i, j] = k(X[i] - Y[j])`` (``Y = X`` when omitted)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        Y = X if Y is None else np.atleast_2d(np.asarray(Y, dtype=np.float64))
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X and Y must have the same number of features, got {X.shape[1]} "
                             f"and {Y.shape[1]}")
        K = np.ones((X.shape[0], Y.shape[0]))
        for m in range(X.shape[1]):
            K *= self.profile(X[:, m, None] - Y[None, :, m])
        return K

    __call__ = gram

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

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in {**self._params(), "sigma": self.sigma}.items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and self._params() == other._params() and \
            self.sigma == other.sigma

    def __hash__(self):
        return hash((type(self).__name__, self.sigma, tuple(sorted(self._params().items()))))


class LaplacianBinningKernel(BinningKernel):
    r"""Laplacian :math:`\exp(-\|\Delta\|_1/\sigma)`; pitch :math:`\delta \sim` Gamma(2, scale σ).

    :math:`p(\delta) = \delta e^{-\delta/\sigma}/\sigma^2` (THEORY §3.3), sampled exactly by
    :meth:`numpy.random.Generator.gamma` — never truncated (truncating the Gamma law, e.g. by
    rejection on [0, 1], biases the kernel; THEORY pitfall 9).
    """

    name = "laplacian"

    def _unit_profile(self, t):
        return np.exp(-t)

    def _unit_dprofile(self, t):
        return -np.exp(-t)

    def _unit_d2profile(self, t):
        return np.exp(-t)

    def _unit_sample(self, size, rng):
        return rng.gamma(2.0, 1.0, size=size)


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

    def __init__(self, a=1.0, sigma=1.0):
        self.a = _as_positive_real(a, "a")
        super().__init__(sigma)

    def _params(self):
        return {"a": self.a}

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

    def __init__(self, q=0.5, sigma=1.0):
        q = _as_positive_real(q, "q")
        if q > 1:
            raise ValueError(f"q must be in (0, 1] (the profile exp(-t^q) is concave near 0 for "
                             f"q > 1, so random binning cannot represent it); got {q!r}")
        self.q = q
        super().__init__(sigma)

    def _params(self):
        return {"q": self.q}

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
        return {"sample_pitch": self.sample_pitch_fn, "profile": self.profile_fn}

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


_KERNELS = {
    "laplacian": (LaplacianBinningKernel, ()),
    "inverse_power": (InversePowerBinningKernel, ("a",)),
    "stretched_exponential": (StretchedExponentialBinningKernel, ("q",)),
}


def get_binning_kernel(kernel="laplacian", *, sigma=1.0, kernel_params=None):
    """Resolve ``kernel`` (name, :class:`BinningKernel` or pitch-sampler callable) to a kernel.

    A name builds the kernel with ``sigma`` and ``kernel_params`` (``{"a": ...}`` for
    ``"inverse_power"``, ``{"q": ...}`` for ``"stretched_exponential"``).  A
    :class:`BinningKernel` instance is rescaled by ``sigma`` (its own ``sigma`` times this one).
    A callable is wrapped as :class:`CustomBinningKernel` ``(kernel, sigma=sigma)``.
    Kernels whose profile is not convex are refused with the reason (Lemma 1).
    """
    sigma = _as_positive_real(sigma, "sigma")
    params = {} if kernel_params is None else dict(kernel_params)
    if isinstance(kernel, BinningKernel):
        if params:
            raise ValueError("kernel_params must be None when kernel is a BinningKernel "
                             f"instance; got {kernel_params!r}")
        return kernel.rescaled(sigma)
    if isinstance(kernel, str):
        key = kernel.lower()
        if key in _NON_CONVEX:
            raise ValueError(
                f"kernel={kernel!r} cannot be approximated by random binning: the pitch density "
                "p(delta) = delta * k''(delta) of Rahimi & Recht's Lemma 1 must be a probability "
                f"density, so the 1-D profile k must be convex (k'' >= 0), but {_NON_CONVEX[key]}."
                " Use random Fourier features for this kernel, or a convex-profile kernel: "
                f"{sorted(_KERNELS)}")
        if key not in _KERNELS:
            raise ValueError(f"kernel must be one of {sorted(_KERNELS)}, a BinningKernel or a "
                             f"callable sample_pitch(size, rng); got {kernel!r}")
        cls, allowed = _KERNELS[key]
        unknown = set(params) - set(allowed)
        if unknown:
            raise ValueError(f"kernel_params {sorted(unknown)} not understood by kernel "
                             f"{kernel!r} (accepted: {list(allowed)})")
        return cls(**params, sigma=sigma)
    if callable(kernel):
        if params:
            raise ValueError("kernel_params must be None when kernel is a callable; got "
                             f"{kernel_params!r}")
        return CustomBinningKernel(kernel, sigma=sigma)
    raise TypeError(f"kernel must be a string, a BinningKernel or a callable sample_pitch(size, "
                    f"rng); got {kernel!r} of type {type(kernel).__name__}")


# Largest output width: column indices are int64.
_MAX_COLUMNS = 2 ** 63 - 1
# A fit whose output has more columns than this warns (see RandomBinningFeatures, Notes).
WIDTH_WARNING_COLUMNS = 10 ** 7
# Attributes a fit sets (replaced together by the next fit).
_FITTED_ATTRS = ("kernel_", "widths_", "shifts_", "hash_salt_", "n_cells_", "column_offsets_",
                 "n_columns_", "_fitted")


class WideBinningWarning(UserWarning):
    """A random binning fit creates more than ``WIDTH_WARNING_COLUMNS`` output columns."""


def _warn_width(n_columns, knob):
    if n_columns > WIDTH_WARNING_COLUMNS:
        fix = ("use a larger sigma or hash_size=K (a fixed width)" if knob == "sigma" else
               "use a smaller hash_size")
        warnings.warn(
            f"RandomBinningFeatures.fit creates {n_columns:,} output columns (more than "
            f"{WIDTH_WARNING_COLUMNS:,}): models on these features need memory per column "
            f"(e.g. {n_columns * 8 / 2 ** 30:.2g} GiB for one float64 weight each); {fix}",
            WideBinningWarning, stacklevel=4)


class _Fitted(NamedTuple):
    """One fit's state, immutable and read once by ``transform`` (a consistent snapshot)."""

    n_features: int
    shifts: np.ndarray       # (P, d), read-only
    inv_widths: np.ndarray   # (P, d), read-only
    salt: int
    hash_size: int | None    # hashing mode: K; exact mode: None
    cells: object            # exact mode: randfeat._lib._binning.CellMap; hashing mode: None
    params: dict             # the map's parameters at fit time

    @property
    def n_columns(self):
        """Output width, from the (validated) cell map or the hashing parameters."""
        if self.cells is not None:
            return self.cells.n_columns
        return self.shifts.shape[0] * self.hash_size


def _frozen(a):
    a = np.array(a, dtype=np.float64, order="C", copy=True)
    a.setflags(write=False)
    return a


def _same(a, b):
    """``a`` and ``b`` are the same parameter value (identity, or equal values of one type)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, (np.random.Generator, np.random.RandomState,
                                                 np.random.BitGenerator,
                                                 np.random.SeedSequence)):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (e.g. arrays: not the same value)
        return False


def _index_dtype(n_columns):
    return np.int32 if n_columns < 2 ** 31 else np.int64


def _csr_full(cols, dtype, n_columns):
    """CSR with exactly one entry per (row, grid); ``cols`` (n, P) ascending per row."""
    n, P = cols.shape
    data = np.full(n * P, 1.0 / math.sqrt(P), dtype=dtype)
    indptr = np.arange(0, n * P + 1, P, dtype=_index_dtype(n_columns) if n * P < 2 ** 31
                       else np.int64)
    Z = sp.csr_matrix((data, cols.reshape(-1), indptr), shape=(n, n_columns))
    Z.has_sorted_indices = True
    return Z


class RandomBinningFeatures(RandomFeaturesBase):
    r"""Random binning features (Rahimi & Recht 2007, Algorithm 2): sparse, exactly unbiased.

    For each of the :math:`P` = ``n_grids`` grids and each input dimension :math:`m` a pitch
    :math:`\delta_{pm} \sim p(\delta) = \delta\,\kappa_\sigma''(\delta)` (Lemma 1) and a shift
    :math:`u_{pm} \sim U[0, \delta_{pm})` are drawn.  Row :math:`x` falls in the cell
    :math:`c_p(x) = (\lfloor (x_m - u_{pm})/\delta_{pm} \rfloor)_{m=1..d}` of grid :math:`p`, and

    .. math:: z(x) = P^{-1/2}\,[\,e_{c_1(x)};\ \dots;\ e_{c_P(x)}\,],\qquad
              z(x)^\top z(y) = \frac1P \sum_{p=1}^P 1[c_p(x) = c_p(y)].

    Each grid's indicator is Bernoulli(:math:`k(x, y)`) for the product kernel
    :math:`k(x,y) = \prod_m \kappa(|x_m - y_m|/\sigma)`, so :math:`z(x)^\top z(y)` is unbiased
    with variance exactly :math:`k(1-k)/P` (THEORY §3.4–3.5), and Hoeffding gives
    :math:`P(|z^\top z - k| \ge \epsilon) \le 2 e^{-2P\epsilon^2}`.

    Parameters
    ----------
    n_grids : int, default=30
        Number of random grids :math:`P`; every row of the output has (at most, exactly in
        hashing mode and for training rows) ``n_grids`` non-zeros.
    kernel : {"laplacian", "inverse_power", "stretched_exponential"}, BinningKernel or callable, \
default="laplacian"
        The 1-D profile :math:`\kappa` (see the module table).  A callable is a unit-scale pitch
        sampler ``pitch(size, rng) -> pitches`` (wrapped in :class:`CustomBinningKernel`).
        Non-convex kernels ("gaussian", "cauchy", "matern", ...) raise ValueError (Lemma 1).
    sigma : float, default=1.0
        Length scale: pitches are ``sigma`` times the unit pitch law.  With a BinningKernel
        instance the effective scale is ``kernel.sigma * sigma``.
    kernel_params : dict, default=None
        Shape parameters of a named kernel: ``{"a": a}`` for "inverse_power" (default a = 1),
        ``{"q": q}`` for "stretched_exponential" (default q = 0.5).
    hash_size : int, default=None
        None: exact mode, one column per cell occupied by the training data (per grid).
        K: hashing mode, grid p's cells are hashed into the K columns ``[pK, (p+1)K)``
        (``P*K`` columns in all); ``fit`` stores only the grids (streaming use).
    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Seeds the pitches, the shifts and the hash salt (drawn in this order, in float64, for
        both modes, so exact and hashing mode with one seed share the grids).
    n_threads : int, default=None
        Threads for the compiled loops (None: all CPUs; negative counts back).  The output is
        bit-identical for every value.

    Attributes
    ----------
    kernel_ : BinningKernel
        The resolved kernel (effective sigma); ``kernel_.gram(X, Y)`` / ``kernel_.k(delta)`` is the
        exact kernel being approximated.
    widths_ : ndarray of shape (n_grids, n_features_in_), float64
        Pitches :math:`\delta_{pm}` (``inf`` allowed: that dimension never separates points).
    shifts_ : ndarray of shape (n_grids, n_features_in_), float64
        Shifts :math:`u_{pm} \in [0, \delta_{pm})` (0 where the pitch is infinite).
    hash_salt_ : int
        64-bit salt of the hash (used in hashing mode only).
    n_cells_ : ndarray of shape (n_grids,), int64
        Exact mode: number of cells of each grid occupied by the training data (columns per
        grid).  Hashing mode: ``hash_size`` for every grid.
    column_offsets_ : ndarray of shape (n_grids + 1,), int64
        Grid p owns output columns ``[column_offsets_[p], column_offsets_[p+1])``.
    n_columns_ : int
        Output width: ``column_offsets_[-1]``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str (when X has string column names)

    Notes
    -----
    **Cells.**  Cell coordinates are computed in float64 for float32 and float64 input alike
    (float32 input is widened exactly; a float32 cell computation would misplace points near cell
    boundaries), as :math:`\lfloor (x - u)\cdot(1/\delta) \rfloor` (multiplication by the
    float64 reciprocal pitch).  The floor is kept as an exactly integer-valued float64, which is
    defined for every finite input: no integer overflow, e.g. ``x = 1e300`` gets the cell
    ``1e300``.  Only when :math:`|x - u|/\delta` exceeds the float64 range (about 1.8e308) is the
    coordinate clamped to ±DBL_MAX (all such points share the extreme cell).  NaN and infinity
    are rejected.

    **Exact mode and unseen cells.**  ``fit`` assigns a column to every cell occupied by the
    training data, per grid (the paper's "eliminate unoccupied bins"), in order of first
    occurrence.  A cell's full integer vector is packed losslessly into 64-bit words using its
    training range (raw float64 bits when the range is huge), and the fitted map stores, per
    occupied cell, only a 96-bit *fingerprint* of those words and its column: 16 bytes per cell
    (plus per-grid parameters), whatever the dimension.  ``transform`` gives a new point no entry
    for a grid where its cell was not seen in ``fit``.  Hence for a new point :math:`x`,
    :math:`z(x)^\top z(y)` is unbiased when :math:`y` is a training point (the shared cell is
    then occupied), but :math:`\|z(x)\|^2 = n_{\mathrm{seen}}(x)/P \le 1`, and for two new points
    :math:`E[z(x)^\top z(y)] = P[c(x) = c(y)\ \text{and that cell was seen}] \le k(x, y)`: a lower
    estimate, biased down by the probability that the shared cell was unoccupied in training
    (large for points far from the training data, negligible inside it).

    **Fingerprint collisions.**  The fingerprint is two independent keyed vector multiply-shift
    hashes of the packed words (Dietzfelbinger 1996; Thorup 2015), 64 and 32 bits, with 128-bit
    keys drawn from ``random_state`` at every fit.  They are strongly universal, so two distinct
    cells of a grid share a fingerprint with probability exactly :math:`2^{-96}` over the key,
    for every data set (no assumption on the data).  With :math:`N` occupied cells in a grid the
    probability that any two of them merge into one column is at most
    :math:`N^2/2^{97}`: :math:`6.3\cdot 10^{-14}` for :math:`N = 10^8` (below :math:`10^{-12}`
    for every :math:`N \le 3.9\cdot 10^8`), and an unseen cell is mistaken for a seen one with
    probability at most :math:`N/2^{96}` per lookup.  A merge would only add a spurious
    collision term to that grid (the map stays a valid sparse matrix).  The column numbering
    and the output are those of a map comparing full keys, except with that probability.

        **Hashing mode.**  ``hash_size=K`` maps the (grid, full cell vector) of each row through a
    salted 64-bit hash into the K columns of grid p.  Every row has exactly P entries, so
    :math:`\|z(x)\|^2 = 1`, and for :math:`x \neq y`, modelling the salted hash as random,

    .. math:: E[z(x)^\top z(y)] = k + (1 - k)/K,\qquad
              \mathrm{Var} = E(1-E)/P,

    because in each grid the two points either share the cell (probability :math:`k`) or sit in
    different cells that collide with probability :math:`1/K`.  Giving every grid its own K
    columns avoids the extra cross-grid collision term :math:`(P-1)/K` a single shared block of
    K columns would add.  An unbiased estimate is :math:`(K\,z^\top z - 1)/(K - 1)`.

    **Threads and cost.**  ``fit`` computes every training row's cell fingerprint in every grid
    (rows in parallel; 12 bytes of scratch per row and grid), then builds each grid's cell table
    (grids in parallel, each grid sequentially, columns in order of first occurrence);
    ``transform`` looks rows up in parallel (interpolation search in each grid's cells sorted by
    fingerprint, the P grids of a row searched together).  All of it runs in compiled code
    without the GIL, notices Ctrl-C within milliseconds, and the output is bit-identical for
    every ``n_threads``.  Dimensions in which all training points of a grid share one cell cost
    nothing in ``fit``, and nothing in ``transform`` for rows inside the training data's bounding
    box (checked once per row).  ``fit_transform`` reuses the training cells (one pass).

    **Width.**  The exact mode has up to ``n_grids * n_samples`` columns (a small ``sigma``
    puts every row in a cell of its own), the hashing mode ``n_grids * hash_size``.  A fit that
    creates more than ``randfeat.binning.WIDTH_WARNING_COLUMNS`` = :math:`10^7` columns emits a
    :class:`WideBinningWarning` (a model with one float64 weight per column then needs more than
    76 MiB); more than :math:`2^{63} - 1` columns is a ValueError.

    **Fitted state.**  ``fit`` builds the new state aside and publishes it in one step: a fit
    that fails or is interrupted leaves the previous one whole, and a ``transform`` running in
    another thread uses either the old or the new fit, never a mix.  ``transform`` never modifies
    the estimator and reads only that private, validated state.  Changing a parameter with
    ``set_params`` after ``fit`` (any but ``n_threads``) makes ``transform`` raise
    :class:`~sklearn.exceptions.NotFittedError` until the next ``fit``.

    References
    ----------
    A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007,
    §4, Algorithm 2 and Lemma 1.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import RandomBinningFeatures
    >>> X = np.random.default_rng(0).uniform(size=(1000, 4))
    >>> rbf = RandomBinningFeatures(n_grids=50, sigma=1.0, random_state=0)
    >>> Z = rbf.fit_transform(X)
    >>> Z.format, Z.shape[0], Z.nnz == 1000 * 50
    ('csr', 1000, True)
    >>> bool(np.allclose(Z.multiply(Z).sum(axis=1), 1.0))    # z(x).z(x) = 1 on training rows
    True
    >>> H = RandomBinningFeatures(n_grids=50, hash_size=64, random_state=0).fit(X)
    >>> H.transform(X).shape
    (1000, 3200)
    """

    _parameter_constraints = {
        "n_grids": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [str, BinningKernel, callable],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
        "kernel_params": [dict, None],
        "hash_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence,
                         np.random.BitGenerator],
        "n_threads": [numbers.Integral, None],
    }

    # fingerprint bits kept by the cell map: a test seam for the collision model (never change)
    _fingerprint_bits = 96

    def __init__(self, n_grids=30, *, kernel="laplacian", sigma=1.0, kernel_params=None,
                 hash_size=None, random_state=None, n_threads=None):
        self.n_grids = n_grids
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.hash_size = hash_size
        self.random_state = random_state
        self.n_threads = n_threads

    # -- fitting ---------------------------------------------------------------------------------
    def _sample_grids(self, d):
        kern = get_binning_kernel(self.kernel, sigma=self.sigma, kernel_params=self.kernel_params)
        rng = self._rng()
        P = int(self.n_grids)
        widths = np.asarray(kern.sample_pitch((P, d), rng), dtype=np.float64)
        if widths.shape != (P, d) or np.isnan(widths).any() or (widths <= 0).any():
            raise ValueError(f"the pitch sampler of {kern!r} must return positive pitches of "
                             f"shape {(P, d)}")
        shifts = rng.random((P, d)) * widths
        finite = np.isfinite(widths)
        shifts = np.where(finite, shifts, 0.0)
        # u must lie in [0, delta): U * delta can round up to delta when U is close to 1
        over = finite & (shifts >= widths)
        shifts[over] = np.nextafter(widths[over], 0.0)
        salt = int(rng.integers(0, 2 ** 63, dtype=np.int64)) * 2 + 1
        with np.errstate(divide="ignore"):
            inv = 1.0 / widths
        if not np.isfinite(inv).all():
            raise ValueError(f"sigma={self.sigma!r} is too small: a sampled pitch underflowed to "
                             "a subnormal number whose reciprocal overflows; rescale X or use a "
                             "larger sigma")
        return kern, widths, shifts, inv, salt, rng

    def _build(self, X, store_assign):
        """The fitted state of ``X``, built aside (nothing of ``self`` is modified).

        Returns ``(state, attrs, assign)``: ``state`` the :class:`_Fitted` snapshot that
        ``transform`` reads, ``attrs`` the public fitted attributes, ``assign`` the (P, n) local
        columns of the training rows (exact mode with ``store_assign``) or None.
        """
        n, d = X.shape
        if n >= 2 ** 31 - 1:
            raise ValueError(f"RandomBinningFeatures.fit supports fewer than 2**31 - 1 samples, "
                             f"got {n}; fit on a subsample or use hash_size")
        kern, widths, shifts, inv, salt, rng = self._sample_grids(d)
        P = widths.shape[0]
        n_thr = self._n_threads()
        params = self._map_params()
        if self.hash_size is not None:
            K = int(self.hash_size)
            if P * K > _MAX_COLUMNS:
                raise ValueError(
                    f"n_grids * hash_size = {P} * {K} = {P * K} columns overflow the 64-bit "
                    f"column index (at most {_MAX_COLUMNS}); use a smaller hash_size or fewer "
                    "grids")
            _warn_width(P * K, "hash_size")
            n_cells = np.full(P, K, dtype=np.int64)
            col_offsets = np.arange(P + 1, dtype=np.int64) * K
            cells = None
            assign = None
        else:
            cells, assign = _fit_cells(X, shifts, inv, rng, store_assign, n_thr,
                                       self._fingerprint_bits)
            col_offsets = cells.column_offsets()
            n_cells = np.diff(col_offsets)
            _warn_width(int(col_offsets[-1]), "sigma")
        n_columns = int(col_offsets[-1])
        state = _Fitted(n_features=d, shifts=_frozen(shifts), inv_widths=_frozen(inv),
                        salt=salt, hash_size=None if cells is not None else int(self.hash_size),
                        cells=cells, params=params)
        attrs = {"kernel_": kern, "widths_": widths, "shifts_": shifts, "hash_salt_": salt,
                 "n_cells_": n_cells, "column_offsets_": col_offsets, "n_columns_": n_columns,
                 "_fitted": state}
        return state, attrs, assign

    def _fit_atomic(self, X, store_assign):
        """Validate ``X``, build the new state aside and publish it in one step.

        If anything raises (KeyboardInterrupt, MemoryError, a bad parameter), the previous fitted
        state is left whole, including ``n_features_in_``/``feature_names_in_`` that validation
        resets.  The new attributes replace the old ones in one ``__dict__`` assignment, so a
        concurrent ``transform`` sees either the old or the new fit, never a mix (it reads only
        the ``_fitted`` snapshot).
        """
        keys = ("n_features_in_", "feature_names_in_")
        saved = {k: self.__dict__[k] for k in keys if k in self.__dict__}
        try:
            X = self._validate_X(X, reset=True)
            state, attrs, assign = self._build(X, store_assign)
            new = {k: v for k, v in self.__dict__.items() if k not in _FITTED_ATTRS}
            new.update(attrs)
        except BaseException:
            for k in keys:
                self.__dict__.pop(k, None)
            self.__dict__.update(saved)
            raise
        self.__dict__ = new
        return X, state, assign

    def _map_params(self):
        """The parameters that define the map (all but ``n_threads``), as fitted."""
        return {k: v for k, v in self.get_params(deep=False).items() if k != "n_threads"}

    def _snapshot(self):
        """The fitted state, read once; an error when a parameter changed since fit."""
        state = self.__dict__.get("_fitted")
        if state is None:
            check_is_fitted(self)
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call "
                                 "'fit' with appropriate arguments before using this estimator.")
        current = self._map_params()
        changed = [k for k, v in state.params.items() if not _same(current.get(k), v)]
        if changed:
            what = ", ".join(f"{k}={current.get(k)!r} (fitted with {state.params[k]!r})"
                             for k in changed)
            raise NotFittedError(
                f"{type(self).__name__}: parameters changed after fit ({what}), so the fitted "
                "grids no longer match them; call fit again (or set_params back to the fitted "
                "values)")
        return state

    def __sklearn_is_fitted__(self):
        return "_fitted" in self.__dict__

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the grids and (exact mode) index the cells occupied by ``X``.

        The new fitted state is built aside and published in one step: if ``fit`` fails or is
        interrupted (Ctrl-C), the previous fit is left whole.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (float32/float64 kept, integers become float64; finite).
        y : ignored

        Returns
        -------
        self : RandomBinningFeatures
        """
        self._fit_atomic(X, store_assign=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)`` in one pass (identical result, training cells reused)."""
        X, state, assign = self._fit_atomic(X, store_assign=True)
        if assign is None:
            return self._transform_hashed(X, state)
        cols = assign.T.astype(_index_dtype(state.n_columns))
        cols += state.cells.column_offsets()[:-1].astype(cols.dtype)[None, :]  # local -> global
        return _csr_full(cols, X.dtype, state.n_columns)

    # -- transform -------------------------------------------------------------------------------
    def _transform_hashed(self, X, state):
        n, P = X.shape[0], state.shifts.shape[0]
        cols = np.empty((n, P), dtype=_index_dtype(state.n_columns))
        _binning.hashed_columns(X, state.shifts, state.inv_widths, np.uint64(state.salt),
                                np.uint64(state.hash_size), cols, self._n_threads())
        return _csr_full(cols, X.dtype, state.n_columns)

    def transform(self, X):
        """Sparse random binning features of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        Z : scipy.sparse.csr_matrix of shape (n_samples, n_columns_), dtype of X
            One entry :math:`1/\\sqrt{P}` per grid (exact mode: per grid whose cell was occupied
            in ``fit``; hashing mode: every grid), column indices sorted within rows.
        """
        state = self._snapshot()
        X = self._validate_X(X, reset=False)
        if state.cells is None:
            return self._transform_hashed(X, state)
        n, P = X.shape[0], state.shifts.shape[0]
        cols = np.empty((n, P), dtype=_index_dtype(state.n_columns))
        n_unseen = _binning.lookup_columns(X, state.cells, cols, self._n_threads())
        if n_unseen == 0:
            return _csr_full(cols, X.dtype, state.n_columns)
        seen = cols >= 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(seen.sum(axis=1), out=indptr[1:])
        indices = cols[seen]
        data = np.full(indices.shape[0], 1.0 / math.sqrt(P), dtype=X.dtype)
        Z = sp.csr_matrix((data, indices, indptr), shape=(n, state.n_columns))
        Z.has_sorted_indices = True
        return Z

    @property
    def _n_features_out(self):
        return self.n_columns_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
