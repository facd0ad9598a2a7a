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

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from randfeat import dask as _dask
from randfeat._base import RandomFeaturesBase
from randfeat._lib import _binning
from randfeat._validation import (
    LENGTH_SCALE_CONSTRAINT,
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
)
from randfeat.kernels import (  # noqa: F401  (the kernel classes live in randfeat.kernels)
    BinningKernel,
    CustomBinningKernel,
    InversePowerBinningKernel,
    LaplacianBinningKernel,
    LaplacianKernel,
    ShiftInvariantKernel,
    StretchedExponentialBinningKernel,
)

__all__ = [
    "BinningKernel",
    "CustomBinningKernel",
    "InversePowerBinningKernel",
    "LaplacianBinningKernel",
    "RandomBinningFeatures",
    "StretchedExponentialBinningKernel",
]

_FAST_LIMIT = 2.0 ** 50  # fast layout: |lo|, |hi| and the range below this
_FAST_WORD_BITS = 52     # fast words are accumulated exactly in float64


def _key_layout(u, r, lo, hi, xmin, xmax):
    """Layout of the packed exact cell keys of each grid (``lo``/``hi``: (P, d) cell ranges).

    A dimension with training cell range ``[lo, hi]`` needs ``bits = bit_length(hi - lo)`` bits;
    it is *active* when ``bits > 0`` (a dimension whose training points all share one coordinate
    contributes nothing to the key, and in ``transform`` only its range is checked).

    *Fast* grids (every |lo|, |hi| and range below 2**50) pack their active dimensions greedily,
    in input order, into words of at most 52 bits, summed exactly in float64 by the compiled
    kernel; their per-dimension parameters are permuted so the active dimensions come first.
    Other grids (cells beyond 2**50, e.g. inputs near 1e300) use the *generic* layout: 64-bit
    words, a whole word holding the raw float64 bits of a cell coordinate whose range is not
    below 2**50.  Both are injective on the training box, so keys identify cells exactly.

    Returns ``(layout, n_words)``, ``layout`` the tuple read by ``randfeat._lib._binning``:
    ``(u, r, lo, hi, word, shift, raw, fast, idx, n_active, pu, pr, plo, pscale, xa, xb, wb,
    bb_lo, bb_hi)``; ``[xa, xb)`` is the exact float interval of inputs whose cell coordinate lies
    in ``[lo, hi]`` and ``[bb_lo, bb_hi)`` the training bounding box ``[xmin, xmax]``.
    """
    P, d = lo.shape
    with np.errstate(over="ignore", invalid="ignore"):
        small = (np.abs(lo) < _FAST_LIMIT) & (np.abs(hi) < _FAST_LIMIT) & \
            ((hi - lo) < _FAST_LIMIT)
        span = np.where(small, hi - lo, 0.0)  # exact integers below 2**50
    fast = small.all(axis=1).astype(np.uint8)
    # bit_length of the integer span: frexp is exact (span = m * 2**e, 0.5 <= m < 1)
    bits = np.where(span > 0, np.frexp(span)[1], 0).astype(np.int64)
    bits[~small] = 64
    word = np.zeros((P, d), dtype=np.int32)
    shift = np.zeros((P, d), dtype=np.int32)
    raw = (~small).astype(np.uint8)
    # fast grids: active dimensions first (stable: input order kept), packed greedily into words
    # of at most 52 bits; vectorised over grids, one pass over the dimensions
    idx = np.argsort(bits == 0, axis=1, kind="stable").astype(np.int32)
    sorted_bits = np.take_along_axis(bits, idx.astype(np.intp), axis=1)
    n_active = (bits > 0).sum(axis=1).astype(np.int32)
    pscale = np.ones((P, d), dtype=np.float64)
    used = np.zeros(P, dtype=np.int64)
    wcount = np.zeros(P, dtype=np.int64)
    starts = []  # (grid, word, slot) of every word start after the first
    for j in range(d):
        b = sorted_bits[:, j]
        act = b > 0
        new = act & (used + b > _FAST_WORD_BITS)
        if new.any():
            wcount[new] += 1
            used[new] = 0
            g = np.flatnonzero(new)
            starts.append((g, wcount[g], np.full(g.size, j)))
        pscale[act, j] = np.ldexp(1.0, used[act])
        used[act] += b[act]
    n_words_p = wcount + 1
    # generic grids (rare: cells beyond 2**50): 64-bit words in input order
    for p in np.flatnonzero(fast == 0):
        idx[p] = np.arange(d, dtype=np.int32)
        n_active[p] = d
        w, u_bits = 0, 0
        for m in range(d):
            b = int(bits[p, m])
            if u_bits + b > 64:
                w, u_bits = w + 1, 0
            word[p, m], shift[p, m] = w, u_bits
            u_bits += b
        n_words_p[p] = w + 1
    n_words = int(n_words_p.max())
    wb = np.zeros((P, n_words + 1), dtype=np.int32)
    for g, w, j in starts:
        keep = fast[g] == 1
        wb[g[keep], w[keep]] = j[keep]
    # the end of each grid's last word (and of the unused trailing words) is n_active
    last = np.arange(n_words + 1)[None, :] >= n_words_p[:, None]
    wb[last] = np.broadcast_to(n_active[:, None], wb.shape)[last]
    rows = np.arange(P)[:, None]
    xa = np.full((P, d), -np.inf)
    xb = np.full((P, d), np.inf)
    f = fast.astype(bool)
    if f.any():
        xa[f] = _first_float_reaching(u[f], r[f], lo[f])
        xb[f] = _first_float_reaching(u[f], r[f], hi[f] + 1.0)
    layout = (u, r, lo, hi, word, shift, raw, fast, idx, n_active,
              np.ascontiguousarray(u[rows, idx]), np.ascontiguousarray(r[rows, idx]),
              np.ascontiguousarray(lo[rows, idx]), pscale, xa, xb, wb,
              np.ascontiguousarray(xmin, dtype=np.float64), _next_up(xmax))
    return layout, n_words


def _next_up(x):
    with np.errstate(over="ignore"):
        return np.nextafter(np.asarray(x, dtype=np.float64), np.inf)


_SIGN = np.uint64(1 << 63)


def _to_ordered(x):
    """Monotone bijection float64 -> uint64 (-0.0 and +0.0 both map to 2**63)."""
    b = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    neg = (b & _SIGN) != 0
    return np.where(neg, _SIGN - (b & ~_SIGN), b + _SIGN)


def _from_ordered(o):
    neg = o < _SIGN
    bits = np.where(neg, (_SIGN - o) | _SIGN, o - _SIGN)
    return bits.view(np.float64)


def _first_float_reaching(u, r, target):
    """Smallest finite float64 x with floor((x - u) * r) >= target, elementwise (+inf if none).

    The kernel's cell map x -> floor(fl(fl(x - u) * r)) is monotone non-decreasing over the
    floats, so bisection over the ordered float64 bit patterns finds the exact boundary; NumPy's
    float64 subtraction and multiplication are the same IEEE operations as the C kernel's.  The
    search starts from the bracket of +-64 ulps around u + target / r (a few bisection steps);
    elements whose boundary is not in it are bisected over all finite floats.
    """
    big = np.finfo(np.float64).max

    def reaches(o):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.floor((_from_ordered(o) - u) * r) >= target

    full_lo = np.full(u.shape, _to_ordered(-big))
    full_hi = np.full(u.shape, _to_ordered(big))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        guess = np.clip(np.nan_to_num(u + target / r, nan=0.0, posinf=big, neginf=-big),
                        -big, big)
    g = _to_ordered(guess)
    k = np.uint64(64)
    lo_o = np.maximum(np.where(g > full_lo[0] + k, g - k, full_lo), full_lo)
    hi_o = np.minimum(np.where(g < full_hi[0] - k, g + k, full_hi), full_hi)
    # invariant wanted: reaches(hi_o) and (lo_o is the first float, or not reaches(lo_o - 1))
    local = reaches(hi_o) & ~reaches(lo_o)
    lo_o = np.where(local, lo_o + np.uint64(1), full_lo)
    hi_o = np.where(local, hi_o, full_hi)
    none = ~reaches(full_hi)
    first = ~local & reaches(full_lo)
    hi_o = np.where(first, full_lo, hi_o)
    for _ in range(70):
        active = lo_o < hi_o
        if not active.any():
            break
        mid = lo_o + (hi_o - lo_o) // np.uint64(2)
        ok = reaches(mid)
        hi_o = np.where(active & ok, mid, hi_o)
        lo_o = np.where(active & ~ok, mid + np.uint64(1), lo_o)
    out = _from_ordered(hi_o)
    out[none] = np.inf
    return out


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
    sigma : float or None, default=None
        Length scale of a kernel given by name or callable (None: 1.0): pitches are ``sigma``
        times the unit pitch law.  A kernel instance (e.g. ``randfeat.kernels.LaplacianKernel(2)``)
        carries its own ``sigma``; ``sigma`` must then stay None (ValueError otherwise).
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
    training data, per grid (the paper's "eliminate unoccupied bins"); a cell is identified by its
    *full* integer vector: each coordinate is packed losslessly into 64-bit words using its
    training range (raw float64 bits when the range is huge), and the lookup table compares the
    full packed keys, so distinct cells never share a column (the 64-bit hash only chooses where
    to probe; there are no hash collisions to handle).  ``transform`` gives a new point no entry
    for a grid where its cell was not seen in ``fit``.  Hence for a new point :math:`x`,
    :math:`z(x)^\top z(y)` is unbiased when :math:`y` is a training point (the shared cell is
    then occupied), but :math:`\|z(x)\|^2 = n_{\mathrm{seen}}(x)/P \le 1`, and for two new points
    :math:`E[z(x)^\top z(y)] = P[c(x) = c(y)\ \text{and that cell was seen}] \le k(x, y)`: a lower
    estimate, biased down by the probability that the shared cell was unoccupied in training
    (large for points far from the training data, negligible inside it).

    **Hashing mode.**  ``hash_size=K`` maps the (grid, full cell vector) of each row through a
    salted 64-bit hash into the K columns of grid p.  Every row has exactly P entries, so
    :math:`\|z(x)\|^2 = 1`, and for :math:`x \neq y`, modelling the salted hash as random,

    .. math:: E[z(x)^\top z(y)] = k + (1 - k)/K,\qquad
              \mathrm{Var} = E(1-E)/P,

    because in each grid the two points either share the cell (probability :math:`k`) or sit in
    different cells that collide with probability :math:`1/K`.  Giving every grid its own K
    columns avoids the extra cross-grid collision term :math:`(P-1)/K` a single shared block of
    K columns would add.  An unbiased estimate is :math:`(K\,z^\top z - 1)/(K - 1)`.

    **Threads and cost.**  ``fit`` computes every training row's packed cell key in every grid
    (rows in parallel; (P, n_samples, n_words) uint64 scratch, i.e. 8 bytes per row and grid for
    one-word keys), then builds each grid's cell table (grids in parallel, each grid sequentially,
    columns in order of first occurrence); ``transform`` looks rows up in parallel.  All of it runs
    in compiled code without the GIL, and the output is bit-identical for every ``n_threads``.
    Dimensions in which all training points of a grid share one cell cost nothing in ``fit``, and
    nothing in ``transform`` for rows inside the training data's bounding box (checked once per
    row): with a bandwidth ``sigma`` of the order of the data's L1 diameter, most of them are such
    dimensions.  ``fit_transform`` reuses the training cells (one pass).  ``transform`` never
    modifies the estimator.

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
        "sigma": LENGTH_SCALE_CONSTRAINT,
        "kernel_params": [dict, None],
        "hash_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }

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
    def _sample_grids(self, d):
        kern = self._resolve_kernel(None, "binning", **(self.kernel_params or {}))
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
        return kern, widths, shifts, inv, salt

    def _fit(self, X, store_assign):
        n, d = X.shape
        if n >= 2 ** 31 - 1:
            raise ValueError(f"RandomBinningFeatures.fit supports fewer than 2**31 - 1 samples, "
                             f"got {n}; fit on a subsample or use hash_size")
        kern, widths, shifts, inv, salt = self._sample_grids(d)
        self.kernel_ = kern
        self.widths_ = widths
        self.shifts_ = shifts
        self.hash_salt_ = salt
        self._inv_widths = inv
        P = widths.shape[0]
        n_thr = self._n_threads()
        if self.hash_size is not None:
            K = int(self.hash_size)
            self.n_cells_ = np.full(P, K, dtype=np.int64)
            self.column_offsets_ = np.arange(P + 1, dtype=np.int64) * K
            self.n_columns_ = int(P * K)
            return None
        # Training range of every cell coordinate (floor is monotone in x, so the min/max rows
        # give it exactly, with the same float operations as the kernel).
        ext = np.ascontiguousarray(np.stack([X.min(axis=0), X.max(axis=0)]))
        bounds = np.empty((2, P, d), dtype=np.float64)
        _binning.cell_indices(ext, shifts, inv, bounds, 1)
        lo, hi = np.ascontiguousarray(bounds[0]), np.ascontiguousarray(bounds[1])
        layout, n_words = _key_layout(shifts, inv, lo, hi, ext[0], ext[1])
        row_keys = np.empty((P, n, n_words), dtype=np.uint64)
        _binning.row_keys(X, layout, row_keys, n_thr)
        assign = np.empty((n, P) if store_assign else (1, P), dtype=np.int32)
        keys, n_cells = _binning.fit_cells(row_keys, assign, bool(store_assign), n_thr)
        del row_keys
        col_offsets = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(n_cells, out=col_offsets[1:])
        caps = np.maximum(2, 2 ** np.ceil(np.log2(np.maximum(2 * n_cells, 2))).astype(np.int64))
        table_offsets = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(caps, out=table_offsets[1:])
        table = np.full(int(table_offsets[-1]), -1, dtype=np.int64)
        _binning.build_tables(keys, col_offsets, table_offsets, table, n_thr)
        self._layout = layout
        self._cell_keys = keys
        self._table_offsets = table_offsets
        self._table = table
        self.n_cells_ = n_cells
        self.column_offsets_ = col_offsets
        self.n_columns_ = int(col_offsets[-1])
        return assign if store_assign else None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the grids and (exact mode) index the cells occupied by ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (float32/float64 kept, integers become float64; finite).
        y : ignored

        Returns
        -------
        self : RandomBinningFeatures
        """
        if _dask.is_dask_array(X):
            return _dask.fit(self, X)
        X = self._validate_X(X, reset=True)
        self._fit(X, store_assign=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)`` in one pass (identical result, training cells reused)."""
        if _dask.is_dask_array(X):
            return _dask.fit(self, X).transform(X)
        X = self._validate_X(X, reset=True)
        assign = self._fit(X, store_assign=True)
        if assign is None:
            return self._transform_hashed(X)
        cols = assign.astype(self._index_dtype(), copy=False)
        cols += self.column_offsets_[:-1].astype(cols.dtype)[None, :]  # local -> global
        return self._csr_full(cols, X.dtype)

    # -- transform -------------------------------------------------------------------------------
    def _index_dtype(self):
        return np.int32 if self.n_columns_ < 2 ** 31 else np.int64

    def _csr_full(self, cols, dtype):
        """CSR with exactly one entry per (row, grid); ``cols`` (n, P) ascending per row."""
        n, P = cols.shape
        data = np.full(n * P, 1.0 / math.sqrt(P), dtype=dtype)
        indptr = np.arange(0, n * P + 1, P, dtype=self._index_dtype() if n * P < 2 ** 31
                           else np.int64)
        Z = sp.csr_matrix((data, cols.reshape(-1), indptr), shape=(n, self.n_columns_))
        Z.has_sorted_indices = True
        return Z

    def _transform_hashed(self, X):
        n, P = X.shape[0], self.widths_.shape[0]
        cols = np.empty((n, P), dtype=self._index_dtype())
        _binning.hashed_columns(X, self.shifts_, self._inv_widths, np.uint64(self.hash_salt_),
                                np.uint64(self.hash_size), cols, self._n_threads())
        return self._csr_full(cols, X.dtype)

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
        if _dask.is_dask_array(X):
            return _dask.transform(self, X)
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        if self.hash_size is not None:
            return self._transform_hashed(X)
        n, P = X.shape[0], self.widths_.shape[0]
        cols = np.empty((n, P), dtype=self._index_dtype())
        n_unseen = _binning.lookup_columns(X, self._layout, self._cell_keys, self._table_offsets,
                                           self._table, cols, self._n_threads())
        if n_unseen == 0:
            return self._csr_full(cols, X.dtype)
        seen = cols >= 0
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(seen.sum(axis=1), out=indptr[1:])
        indices = cols[seen]
        data = np.full(indices.shape[0], 1.0 / math.sqrt(P), dtype=X.dtype)
        Z = sp.csr_matrix((data, indices, indptr), shape=(n, self.n_columns_))
        Z.has_sorted_indices = True
        return Z

    @property
    def _n_features_out(self):
        return self.n_columns_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
