r"""Structured orthogonal random features (SORF; Yu et al., NIPS 2016, §4).

The Haar-orthogonal blocks of orthogonal random features are replaced by products of three
normalised Walsh–Hadamard matrices and random sign diagonals, so one input row costs
O(n log d) time and the parameters take O(n) memory.  The per-row pipeline runs in one compiled
kernel (:mod:`randfeat._lib._sorf`), on the FWHT and trigonometric kernels Fastfood uses.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from randfeat._base import (
    RandomFeaturesBase,
    _odd_paired,
    ard_blocks,
    ard_parts,
    resolve_kernel,
)
from randfeat._lib import _sorf
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    SIGMA_CONSTRAINT,
    check_allocation,
    next_power_of_two,
)

__all__ = ["StructuredOrthogonalFeatures"]

# the compiled entry point of each output (randfeat/_lib/_sorf.pyx)
_OUTPUTS = ("paired", "phase", "projections")


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
    Fig. 3).  Independent blocks are stacked until there are ``n_freq`` rows (``ceil(D / 2)``
    for ``features="paired"``, ``D`` for ``"phase"``, D = ``n_components``); rows beyond
    ``n_freq`` in the last block are computed and dropped.  The output has exactly D columns:

    * ``"paired"``: :math:`\sqrt{2/D}\,[\cos(Wx), \sin(Wx)]` (cosines first); for an odd D
      the last frequency gives one phase-shifted feature :math:`\sqrt{2/D}\cos(w^\top x + b)`
      instead of a pair (as in RandomFourierFeatures and Fastfood);
    * ``"phase"``: :math:`\sqrt{2/n_{freq}}\,\cos(Wx + b)`, :math:`b_j \sim U[0, 2\pi)`.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features D.
    sigma : float, array of shape (n_features,), "scale", "median" or None, default=None
        Length scale of the Gaussian kernel; scikit-learn's ``gamma`` is :math:`1/(2\sigma^2)`.
        None means 1.0 (the default of every randfeat estimator); ``"scale"``/``"median"``
        choose it from the fit data (:func:`randfeat._base.data_sigma`, the rule of every
        randfeat transformer).  An array gives one length scale per feature (ARD,
        :math:`\exp(-\sum_j \Delta_j^2/(2\sigma_j^2))`): the map is the unit-scale SORF of
        :math:`x/\sigma`, formed as ``x * (1 / sigma)`` a block of rows at a time (in cache,
        no copy of X; bit-identical to ``sigma=1`` on ``X * (1 / sigma)``); equal scales are
        the scalar map, bit for bit.
    features : {"paired", "phase"}, default="paired"
        Real feature map, see above.
    random_state : int, Generator, RandomState, SeedSequence, BitGenerator or None
        Seed of the signs (and phases).
    n_threads : int or None, default=None
        Threads over rows for transform (None: all CPUs; negative: count back).  The output does
        not depend on it, nor on the batch: each row is computed by itself (the same bits in any
        batch).

    Attributes
    ----------
    d_padded_ : int
        Number of input features rounded up to a power of two.
    n_freq_ : int
        Number of rows of W used.
    n_blocks_ : int
        ``ceil(n_freq_ / d_padded_)`` independent blocks.
    signs_ : ndarray of int8, shape (n_blocks_, 3, d_padded_)
        The diagonals :math:`D_1, D_2, D_3` of every block (±1); read-only, like every fitted
        array.
    offsets_ : ndarray of float, shape (n_freq_,) or (1,), or None
        Phases b of ``features="phase"``, or of the last frequency of an odd paired width.
    sigma_ : float or ndarray of shape (n_features_in_,)
        The length scale used (``sigma``, or its data-driven value); a read-only float64 array
        for ARD length scales.
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
        "sigma": SIGMA_CONSTRAINT,
        "features": [StrOptions({"paired", "phase"})],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }

    _accept_sparse = ("csr", "csc")
    _dask_fit_reads_shape = True

    def __init__(self, n_components=100, *, sigma=None, features="paired", random_state=None,
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
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (only its shape and dtype are used, and its values for
            ``sigma="scale"`` or ``"median"``).
        y : ignored

        Returns
        -------
        self : StructuredOrthogonalFeatures
        """
        self._fit_atomic(self._build, X)
        return self

    def _build(self, X):
        """The fitted state for X (published in one step by ``_fit_atomic``)."""
        self._n_threads()                      # validates n_threads
        # the Gaussian kernel by name: the length scale by the rule of every estimator
        kernel = resolve_kernel("gaussian", self.sigma, X, who="StructuredOrthogonalFeatures")
        D = int(self.n_components)
        paired = self.features == "paired"
        d = next_power_of_two(X.shape[1])
        n_freq = D // 2 + D % 2 if paired else D
        n_blocks = -(-n_freq // d)
        rng = self._rng()
        check_allocation(n_blocks * 3 * d * 3, f"signs_ ({n_blocks} x 3 x {d} int8)",
                         f"n_components={D}", func="StructuredOrthogonalFeatures.fit")
        signs = (2 * rng.integers(0, 2, size=(n_blocks, 3, d), dtype=np.int8) - 1).astype(np.int8)
        off = None
        if not paired:
            off = rng.uniform(0.0, 2.0 * np.pi, size=n_freq)
        elif D % 2:  # odd paired width: the last frequency gives one phase-shifted feature
            off = rng.uniform(0.0, 2.0 * np.pi, size=1)
        state = {"d_padded_": d, "n_freq_": n_freq, "n_blocks_": n_blocks, "sigma_": kernel.sigma,
                 "signs_": signs, "offsets_": None if off is None else off.astype(X.dtype),
                 "_n_features_out": D, "_ard": ard_parts(kernel)}
        for name in ("signs_", "offsets_"):
            if state[name] is not None:
                state[name].flags.writeable = False
        return state

    @property
    def parameter_nbytes_(self) -> int:
        """Bytes held by the stored random parameters (``signs_``, ``offsets_``)."""
        check_is_fitted(self)
        return int(self.signs_.nbytes + (0 if self.offsets_ is None else self.offsets_.nbytes))

    def _compute(self, X, output):
        """``output`` "paired": the 2 n_freq_ columns sqrt(2/D) [cos(Wx), sin(Wx)] (for an odd
        D ``transform`` folds the last pair into one phase-shifted feature); "phase":
        sqrt(2/n_freq_) cos(Wx + b); "projections": W x, shape (n, n_freq_)."""
        if output not in _OUTPUTS:
            raise ValueError(f"output must be one of {_OUTPUTS}, got {output!r}")
        st = self._fitted_state()
        X = self._validate_X(X, reset=False)
        n, dtype, d, n_freq = X.shape[0], X.dtype, st["d_padded_"], st["n_freq_"]
        base_sigma, scales = st["_ard"]
        log_d, scale, nt = d.bit_length() - 1, 1.0 / (base_sigma * d), self._n_threads()
        odd = output == "paired" and st["_n_features_out"] % 2  # + the odd width's copy
        check_allocation(n * dtype.itemsize * (n_freq * (1 + (output == "paired")) + odd *
                                               st["_n_features_out"]),
                         f"the output ({n} x {st['_n_features_out']} {dtype.name})",
                         f"n_components={st['_n_features_out']}",
                         func="StructuredOrthogonalFeatures.transform",
                         fix="transform fewer rows at a time, or lower n_components")
        signs = st["signs_"]
        if output == "paired":
            out = np.empty((n, 2 * n_freq), dtype=dtype)
            mult = math.sqrt(2.0 / st["_n_features_out"])

            def run(Xb, ob):
                return _sorf.transform_paired(Xb, signs, ob, log_d, scale, mult, nt)
        elif output == "phase":
            off = np.ascontiguousarray(st["offsets_"], dtype=dtype)
            out = np.empty((n, n_freq), dtype=dtype)
            mult = math.sqrt(2.0 / n_freq)

            def run(Xb, ob):
                return _sorf.transform_phase(Xb, signs, off, ob, log_d, scale, mult, nt)
        else:
            out = np.empty((n, n_freq), dtype=dtype)

            def run(Xb, ob):
                return _sorf.project(Xb, signs, ob, log_d, scale, nt)
        # the kernel sets the thread count (_lib/_policy.pxd) and allocates its scratch; with
        # ARD scales W acts on x * (1 / sigma), formed a block of rows at a time
        if scales is None:
            n_bad = run(X, out)
        else:
            n_bad = sum(run(Xb, out[a:b]) for a, b, Xb in ard_blocks(X, scales))
        self._check_projections(n_bad, X)
        return out

    def _blocks(self, X, output):
        """``_compute`` on X; scipy.sparse X is densified one block of rows at a time (at most
        ``_SPARSE_BLOCK_ELEMENTS`` entries), as in Fastfood."""
        if not sp.issparse(X):
            return self._compute(X, output)
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse).tocsr()
        n, d_in = X.shape
        rows = max(1, min(n, _SPARSE_BLOCK_ELEMENTS // max(1, d_in)))
        parts = [self._compute(X[s:s + rows].toarray(), output) for s in range(0, n, rows)]
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def transform(self, X):
        """Map ``X`` to the SORF features.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features_in_)
            float32 stays float32 (projections and cosines in float32); other real input is
            computed in float64.  NaN/Inf raise.  scipy.sparse input (CSR or CSC; other formats
            are converted to CSR) is densified one block of rows at a time (at most 2**20
            entries), never as a whole: the output is the dense array's, bit for bit.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        st = self._fitted_state()
        paired = st["features"] == "paired"
        out = self._blocks(X, "paired" if paired else "phase")
        if paired and st["_n_features_out"] % 2:
            out = _odd_paired(out, st["n_freq_"], st["offsets_"])
        return out

    def _project(self, X):
        """The projections W x, shape (n_samples, n_freq_) (rows beyond n_freq_ dropped)."""
        return self._blocks(X, "projections")


#: rows of a sparse X densified at once by transform: at most this many entries
_SPARSE_BLOCK_ELEMENTS = 2 ** 20
