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
LaplacianKernel             :math:`e^{-t}`                      Gamma(shape 2, scale 1), untruncated
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
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from randfeat._base import RandomFeaturesBase
from randfeat._binning_layout import dense_row_blocks as _dense_row_blocks
from randfeat._binning_layout import fit_cells as _fit_cells
from randfeat._lib import _binning
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    SIGMA_CONSTRAINT,
    check_allocation,
)
from randfeat.kernels import BinningKernel

__all__ = ["RandomBinningFeatures"]

# Largest output width: column indices are int64.
_MAX_COLUMNS = 2 ** 63 - 1
# A fit whose output has more columns than this warns (see RandomBinningFeatures, Notes).
WIDTH_WARNING_COLUMNS = 10 ** 7

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


def _index_dtype(n_columns):
    return np.int32 if n_columns < 2 ** 31 else np.int64


def _check_output(n, P, dtype, n_columns):
    """MemoryError before a transform whose n x P column indices and data (and, in exact mode
    with unseen cells, the mask and the compressed copy) cannot fit in memory."""
    idx = np.dtype(_index_dtype(n_columns)).itemsize
    check_allocation(n * P * (2 * idx + np.dtype(dtype).itemsize + 1),
                     f"the {n} x {P} entries of the sparse output (indices and data)",
                     f"n_grids={P}", func="RandomBinningFeatures.transform",
                     fix="transform fewer rows at a time, or lower n_grids")


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
    sigma : float, array of shape (n_features,), "scale", "median" or None, default=None
        Length scale of a kernel given by name or callable (None: 1.0): pitches are ``sigma``
        times the unit pitch law.  An array gives one length scale per feature (ARD,
        :math:`\prod_m \kappa(|x_m - y_m|/\sigma_m)`): the pitches and shifts of coordinate m
        are :math:`\sigma_m` times the unit ones (no cost).  ``"scale"``: the σ of
        scikit-learn's ``gamma="scale"``, :math:`\sqrt{d\,\operatorname{Var}(X)/2}`;
        ``"median"``: the median **L1** distance between rows of a seeded subsample of X (the
        distance in these kernels' exponent: the median pair then has k = 1/e under the
        Laplacian in any dimension; :func:`randfeat._base.data_sigma`).  A kernel instance
        (e.g. ``randfeat.kernels.LaplacianKernel(2)``) carries its own ``sigma``; ``sigma`` must
        then stay None (ValueError otherwise).
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
    sigma_ : float or ndarray of shape (n_features_in_,)
        Its length scale (``kernel_.sigma``: the number given, the data-driven value, or the
        instance's own); a read-only float64 array for ARD length scales.
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
    fingerprint, started from a per-grid directory of at most 4,096 buckets, the P grids of a
    row searched together).  All of it runs in compiled code
    without the GIL, notices Ctrl-C within milliseconds, and the output is bit-identical for
    every ``n_threads`` and, row by row, for every batch a row is transformed in.  Dimensions
    in which all training points of a grid share one cell cost
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
        "sigma": SIGMA_CONSTRAINT,
        "kernel_params": [dict, None],
        "hash_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }

    # fingerprint bits kept by the cell map: a test seam for the collision model (never change)
    _fingerprint_bits = 96
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_grids=30, *, kernel="laplacian", sigma=None, kernel_params=None,
                 hash_size=None, random_state=None, n_threads=None):
        self.n_grids = n_grids
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.hash_size = hash_size
        self.random_state = random_state
        self.n_threads = n_threads

    # -- fitting ---------------------------------------------------------------------------------
    def _sample_grids(self, X):
        d = X.shape[1]
        kern = self._resolve_kernel(X, "binning", **(self.kernel_params or {}))
        rng = self._rng()
        P = int(self.n_grids)
        check_allocation(48 * P * d, f"the grids ({P} x {d} pitches and shifts, float64)",
                         f"n_grids={P}", func="RandomBinningFeatures.fit")
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
            raise ValueError(f"sigma={_short(kern.sigma)} is too small: a sampled pitch "
                             "underflowed to a subnormal number whose reciprocal overflows; "
                             "rescale X or use a larger sigma")
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
        kern, widths, shifts, inv, salt, rng = self._sample_grids(X)
        P = widths.shape[0]
        n_thr = self._n_threads()
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
            check_allocation(48 * n * P, f"the cell index of {n} rows x {P} grids (fingerprints, "
                             "assignments, up to one 32-byte cell entry each)", f"n_grids={P}",
                             func="RandomBinningFeatures.fit",
                             fix="lower n_grids, fit on fewer rows, or use hash_size")
            cells, assign = _fit_cells(X, shifts, inv, rng, store_assign, n_thr,
                                       self._fingerprint_bits)
            col_offsets = cells.column_offsets()
            n_cells = np.diff(col_offsets)
            _warn_width(int(col_offsets[-1]), "sigma")
        n_columns = int(col_offsets[-1])
        state = _Fitted(n_features=d, shifts=_frozen(shifts), inv_widths=_frozen(inv),
                        salt=salt, hash_size=None if cells is not None else int(self.hash_size),
                        cells=cells)
        for a in (widths, shifts, n_cells, col_offsets):  # public copies, read-only as in
            a.flags.writeable = False                     # every randfeat transformer
        attrs = {"kernel_": kern, "sigma_": kern.sigma, "widths_": widths, "shifts_": shifts,
                 "hash_salt_": salt,
                 "n_cells_": n_cells, "column_offsets_": col_offsets, "n_columns_": n_columns,
                 "_fitted": state}
        return state, attrs, assign

    def _fit_binning(self, X, store_assign):
        """Validate ``X``, build the new state aside and publish it in one step
        (:meth:`RandomFeaturesBase._fit_atomic`): a fit that raises (KeyboardInterrupt,
        MemoryError, a bad parameter) leaves the previous one whole, and a concurrent
        ``transform`` reads either the old or the new ``_fitted`` snapshot, never a mix.
        Returns ``(X, state, assign)``."""
        out = {}

        def build(X):
            out["state"], attrs, out["assign"] = self._build(X, store_assign)
            return attrs

        X = self._fit_atomic(build, X)
        return X, out["state"], out["assign"]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the grids and (exact mode) index the cells occupied by ``X``.

        The new fitted state is built aside and published in one step: if ``fit`` fails or is
        interrupted (Ctrl-C), the previous fit is left whole.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (float32/float64 kept, integers become float64; finite).
            scipy.sparse input (CSR or CSC; other formats are converted to CSR) is densified
            one block of rows at a time: the fit of the dense array, bit for bit.
        y : ignored

        Returns
        -------
        self : RandomBinningFeatures
        """
        self._fit_binning(X, store_assign=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)`` in one pass (identical result, training cells reused)."""
        X, state, assign = self._fit_binning(X, store_assign=True)
        if assign is None:
            return self._transform_hashed(X, state)
        cols = assign.T.astype(_index_dtype(state.n_columns))
        cols += state.cells.column_offsets()[:-1].astype(cols.dtype)[None, :]  # local -> global
        return _csr_full(cols, X.dtype, state.n_columns)

    # -- transform -------------------------------------------------------------------------------
    def _transform_hashed(self, X, state):
        n, P = X.shape[0], state.shifts.shape[0]
        _check_output(n, P, X.dtype, state.n_columns)
        cols = np.empty((n, P), dtype=_index_dtype(state.n_columns))
        nt = self._n_threads()
        for a, b, Xb in _dense_row_blocks(X):     # the whole array, or sparse rows densified
            _binning.hashed_columns(Xb, state.shifts, state.inv_widths, np.uint64(state.salt),
                                    np.uint64(state.hash_size), cols[a:b], nt)
        return _csr_full(cols, X.dtype, state.n_columns)

    def transform(self, X):
        """Sparse random binning features of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features_in_)
            scipy.sparse input (CSR or CSC; other formats are converted to CSR) is densified
            one block of rows at a time (at most 2**20 entries): the dense array's output, bit
            for bit.  Zeros are coordinates like any other: every coordinate is binned.

        Returns
        -------
        Z : scipy.sparse.csr_matrix of shape (n_samples, n_columns_), dtype of X
            One entry :math:`1/\\sqrt{P}` per grid (exact mode: per grid whose cell was occupied
            in ``fit``; hashing mode: every grid), column indices sorted within rows.
        """
        state = self._fitted_state()["_fitted"]
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        if state.cells is None:
            return self._transform_hashed(X, state)
        n, P = X.shape[0], state.shifts.shape[0]
        _check_output(n, P, X.dtype, state.n_columns)
        cols = np.empty((n, P), dtype=_index_dtype(state.n_columns))
        nt = self._n_threads()
        n_unseen = 0
        for a, b, Xb in _dense_row_blocks(X):     # the whole array, or sparse rows densified
            n_unseen += _binning.lookup_columns(Xb, state.cells, cols[a:b], nt)
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


def _short(sigma):
    """``sigma`` for a message (an ARD array by its range)."""
    if isinstance(sigma, np.ndarray):
        return f"array of {sigma.size} length scales in [{sigma.min():g}, {sigma.max():g}]"
    return repr(sigma)
