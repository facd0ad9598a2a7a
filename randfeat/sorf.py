r"""Structured orthogonal random features (SORF; Yu et al., NIPS 2016, §4).

The Haar-orthogonal blocks of orthogonal random features are replaced by products of three
normalised Walsh–Hadamard matrices and random sign diagonals, so one input row costs
O(n log d) time and the parameters take O(n) memory.  The per-row pipeline runs in one compiled
kernel (:mod:`randfeat._lib._sorf`), on the FWHT and trigonometric kernels Fastfood uses.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from randfeat._base import RandomFeaturesBase
from randfeat._lib import _sorf
from randfeat._validation import N_THREADS_CONSTRAINT, next_power_of_two

__all__ = ["StructuredOrthogonalFeatures"]

_KERNEL = {np.dtype(np.float32): _sorf.sorf_transform["float"],
           np.dtype(np.float64): _sorf.sorf_transform["double"]}


class StructuredOrthogonalFeatures(RandomFeaturesBase):
    r"""Structured orthogonal random features for the Gaussian kernel (Yu et al. 2016, §4).

    Each :math:`d \times d` block of the frequency matrix is

    .. math::

        W = \frac{\sqrt d}{\sigma}\, H D_1 H D_2 H D_3,

    with :math:`d` the number of input features zero-padded to a power of two (``d_padded_``),
    :math:`H` the normalised Walsh–Hadamard matrix (:math:`H^\top H = I`, applied by the in-place
    FWHT, never stored) and :math:`D_i` diagonals of iid random signs.  :math:`W` is exactly
    :math:`\sqrt d/\sigma` times an orthogonal matrix: every row has length :math:`\sqrt d/\sigma`
    and the rows of a block are orthogonal, as in ORF' (orthogonal rows of fixed length).  It
    approximates the Gaussian kernel :math:`k(\Delta) = \exp(-\|\Delta\|^2/(2\sigma^2))` with a
    small bias, :math:`|\mathbb E\,\hat k - k| \le 6z/\sqrt d`, :math:`z = \|\Delta\|/\sigma`
    (Yu et al. Thm 3; the measured bias is about 100 times smaller, see ``analysis``), and a
    variance below that of iid random Fourier features for :math:`z \lesssim 2` (Yu et al.
    Fig. 3).  Independent blocks are stacked until there are ``n_freq`` rows (``n_components / 2``
    for ``features="paired"``, ``n_components`` for ``"phase"``); rows beyond ``n_freq`` in the
    last block are computed and dropped.  The output has exactly ``n_components`` columns:

    * ``"paired"``: :math:`[\cos(Wx), \sin(Wx)] / \sqrt{n_{freq}}` (cosines first);
    * ``"phase"``: :math:`\sqrt{2/n_{freq}}\,\cos(Wx + b)`, :math:`b_j \sim U[0, 2\pi)`.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features (even for ``features="paired"``).
    sigma : float, default=1.0
        Length scale of the Gaussian kernel; scikit-learn's ``gamma`` is :math:`1/(2\sigma^2)`.
    features : {"paired", "phase"}, default="paired"
        Real feature map, see above.
    random_state : int, Generator, RandomState, SeedSequence, BitGenerator or None
        Seed of the signs (and phases).
    n_threads : int or None, default=None
        Threads over rows for transform (None: all CPUs; negative: count back).  The output does
        not depend on it.

    Attributes
    ----------
    d_padded_ : int
        Number of input features rounded up to a power of two.
    n_freq_ : int
        Number of rows of W used.
    n_blocks_ : int
        ``ceil(n_freq_ / d_padded_)`` independent blocks.
    signs_ : ndarray of int8, shape (n_blocks_, 3, d_padded_)
        The diagonals :math:`D_1, D_2, D_3` of every block (±1).
    offsets_ : ndarray of float, shape (n_freq_,), or None
        Phases b of ``features="phase"``.
    parameter_nbytes_ : int
        Bytes of the stored random parameters: 3 per row of W, plus one float per row for the
        phases — O(n), against 8 d per row for a dense float64 frequency matrix.
    n_features_in_ : int
        Number of input features seen in fit.

    See Also
    --------
    randfeat.RandomFourierFeatures : dense frequencies, ``sampling="orthogonal"`` for ORF.
    randfeat.Fastfood : the other O(n log d) map (H G Π H B, with a Gaussian diagonal).

    Notes
    -----
    Cost per row: 3 ``n_blocks_`` FWHTs of length d (Fastfood: 2), O(n log d) time.  The scale
    :math:`1/(\sigma d)` of the unnormalised transforms is applied to x before them.  Zero
    padding does not change :math:`\|x - y\|`.  With only :math:`H D_1 H D_2` (two factors)
    Yu et al. report the same error, with one factor much worse (their Fig. 5c).

    References
    ----------
    F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice, S. Kumar. Orthogonal Random
    Features. NIPS 2016, §4 and Theorem 3.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import StructuredOrthogonalFeatures
    >>> from randfeat.kernels import GaussianKernel
    >>> X = np.random.default_rng(0).normal(size=(5, 20))
    >>> sorf = StructuredOrthogonalFeatures(n_components=8192, sigma=4.0, random_state=0)
    >>> Z = sorf.fit_transform(X)
    >>> Z.shape, sorf.d_padded_, sorf.n_blocks_
    ((5, 8192), 32, 128)
    >>> bool(np.abs(Z @ Z.T - GaussianKernel(4.0)(X)).max() < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0.0, None, closed="neither")],
        "features": [StrOptions({"paired", "phase"})],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence,
                         np.random.BitGenerator],
        "n_threads": N_THREADS_CONSTRAINT,
    }

    def __init__(self, n_components=100, *, sigma=1.0, features="paired", random_state=None,
                 n_threads=None):
        self.n_components = n_components
        self.sigma = sigma
        self.features = features
        self.random_state = random_state
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random signs (and phases) for the input dimension of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (only its shape and dtype are used).
        y : ignored

        Returns
        -------
        self : StructuredOrthogonalFeatures
        """
        X = self._validate_X(X, reset=True)
        self._n_threads()
        if not math.isfinite(float(self.sigma)):
            raise ValueError(f"StructuredOrthogonalFeatures: sigma must be a positive finite "
                             f"length scale, got {self.sigma!r}")
        if self.features == "paired" and self.n_components % 2:
            raise ValueError(
                f"StructuredOrthogonalFeatures: features='paired' needs an even n_components "
                f"(cos and sin of n_components/2 frequencies); got n_components="
                f"{self.n_components}. Use an even number or features='phase'")
        d = next_power_of_two(X.shape[1])
        n_freq = self.n_components // 2 if self.features == "paired" else self.n_components
        n_blocks = -(-n_freq // d)
        rng = self._rng()
        self.d_padded_ = d
        self.n_freq_ = n_freq
        self.n_blocks_ = n_blocks
        self.signs_ = (2 * rng.integers(0, 2, size=(n_blocks, 3, d), dtype=np.int8)
                       - 1).astype(np.int8)
        if self.features == "phase":
            self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, size=n_freq).astype(X.dtype)
        else:
            self.offsets_ = None
        self._n_features_out = self.n_components
        return self

    @property
    def parameter_nbytes_(self) -> int:
        """Bytes held by the stored random parameters (``signs_``, ``offsets_``)."""
        check_is_fitted(self)
        return int(self.signs_.nbytes + (0 if self.offsets_ is None else self.offsets_.nbytes))

    def _compute(self, X, mode):
        """mode 0: paired features, 1: phase features, 2: the projections W x (n, n_freq_)."""
        if not hasattr(self, "signs_"):
            check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        n, dtype, d, n_freq = X.shape[0], X.dtype, self.d_padded_, self.n_freq_
        off = self.offsets_
        if off is None:
            off = np.empty(0, dtype=dtype)
        elif off.dtype != dtype:
            off = off.astype(dtype)
        width = 2 * n_freq if mode == 0 else n_freq
        out = np.empty((n, width), dtype=dtype)
        mult = 1.0 / math.sqrt(n_freq) if mode == 0 else math.sqrt(2.0 / n_freq)
        n_threads = 1 if n == 1 else max(1, min(self._n_threads(), n))
        scratch = np.empty((n_threads, d), dtype=dtype)
        n_bad = _KERNEL[dtype](X, self.signs_, off, out, scratch, d.bit_length() - 1,
                               1.0 / (float(self.sigma) * d), mult, n_freq, mode, n_threads)
        self._check_projections(n_bad, X)
        return out

    def transform(self, X):
        """Map ``X`` to the SORF features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)
            float32 stays float32 (projections and cosines in float32); other real input is
            computed in float64.  NaN/Inf raise.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        return self._compute(X, 0 if self.features == "paired" else 1)

    def _project(self, X):
        """The projections W x, shape (n_samples, n_freq_) (rows beyond n_freq_ dropped)."""
        return self._compute(X, 2)
