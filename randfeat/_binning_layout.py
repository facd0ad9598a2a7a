"""Exact cell-key arithmetic of random binning (private; used by :mod:`randfeat.binning`).

For every grid the training data's range of cell coordinates fixes a lossless packing of a
cell's integer vector into 64-bit words (:func:`key_layout`); the compiled kernels
(``randfeat._lib._binning``) compute those words per row and identify a cell by a keyed
96-bit fingerprint of them.  :func:`first_float_reaching` gives the exact float64 interval of
inputs whose cell lies in the training range (the per-grid "box" test of ``transform``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randfeat._lib import _binning

__all__ = ["FAST_LIMIT", "FAST_WORD_BITS", "dense_row_blocks", "first_float_reaching",
           "fit_cells", "key_layout"]

#: entries of a sparse X densified at once (and of a block's per-grid scratch)
SPARSE_BLOCK_ELEMENTS = 2 ** 20


def dense_row_blocks(X, per_row=0):
    """``(start, stop, dense rows)`` covering X: a dense X in one piece (as is); a scipy.sparse X
    (CSR or CSC) densified one block of rows at a time, in X's dtype, with at most
    ``SPARSE_BLOCK_ELEMENTS`` entries per block (``per_row``: further values per row a caller
    allocates for each block, which bound the block too).  Implicit zeros are real coordinates
    (every coordinate is binned), so the blocks hold exactly ``X.toarray()``'s rows and the
    row-wise kernels give the dense input's bits."""
    if not sp.issparse(X):
        yield 0, X.shape[0], X
        return
    X = X.tocsr()
    n, d = X.shape
    rows = max(1, min(n, SPARSE_BLOCK_ELEMENTS // max(1, d, per_row)))
    for a in range(0, n, rows):
        b = min(n, a + rows)
        yield a, b, np.ascontiguousarray(X[a:b].toarray())


def _column_range(X):
    """(2, d) float64: every column's minimum and maximum (implicit zeros of a sparse X count)."""
    if sp.issparse(X):
        lo = np.asarray(X.min(axis=0).toarray()).ravel()
        hi = np.asarray(X.max(axis=0).toarray()).ravel()
        return np.ascontiguousarray(np.stack([lo, hi]), dtype=np.float64)
    return np.ascontiguousarray(np.stack([X.min(axis=0), X.max(axis=0)]), dtype=np.float64)

FAST_LIMIT = 2.0 ** 50  # fast layout: |lo|, |hi| and the range below this
FAST_WORD_BITS = 52     # fast words are accumulated exactly in float64


def key_layout(u, r, lo, hi, xmin, xmax):
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

    Returns ``(arrays, n_words)``: ``arrays`` the named fields of
    :class:`randfeat._lib._binning.CellLayout` except its fingerprint key (``u, r, lo, hi, word,
    shift, raw, fast, idx, n_active, pu, pr, plo, pscale, xa, xb, wb, bb_lo, bb_hi``);
    ``[xa, xb)`` is the exact float interval of inputs whose cell coordinate lies in
    ``[lo, hi]`` and ``[bb_lo, bb_hi)`` the training bounding box ``[xmin, xmax]``.  A
    single-cell dimension of a generic grid gets word 0 and shift 0 (it adds nothing to the key;
    every shift is below 64).
    """
    P, d = lo.shape
    with np.errstate(over="ignore", invalid="ignore"):
        small = (np.abs(lo) < FAST_LIMIT) & (np.abs(hi) < FAST_LIMIT) & \
            ((hi - lo) < FAST_LIMIT)
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
        new = act & (used + b > FAST_WORD_BITS)
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
            if b == 0:
                continue  # word 0, shift 0: contributes nothing (c == lo on the training box)
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
        xa[f] = first_float_reaching(u[f], r[f], lo[f])
        xb[f] = first_float_reaching(u[f], r[f], hi[f] + 1.0)
    arrays = dict(u=u, r=r, lo=lo, hi=hi, word=word, shift=shift, raw=raw, fast=fast, idx=idx,
                  n_active=n_active, pu=u[rows, idx], pr=r[rows, idx], plo=lo[rows, idx],
                  pscale=pscale, xa=xa, xb=xb, wb=wb, bb_lo=np.asarray(xmin, dtype=np.float64),
                  bb_hi=_next_up(xmax))
    return arrays, n_words


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


def first_float_reaching(u, r, target):
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


def fit_cells(X, shifts, inv_widths, rng, store_assign, n_threads, fingerprint_bits=96):
    """The exact-mode cell map of the training rows ``X`` (one column per occupied cell; a dense
    array, or a scipy.sparse matrix whose rows are densified a block at a time).

    Computes every grid's training cell range, its key layout (:func:`key_layout`) and draws
    the fingerprint key from ``rng`` (after the pitches, shifts and salt, so the grids do not
    depend on it); then the rows' fingerprints and each grid's cells, numbered in order of first
    occurrence.  Returns ``(cell_map, assign)``: a validated
    :class:`randfeat._lib._binning.CellMap` and, when ``store_assign``, the (P, n) int32 local
    column of every training row in every grid (else None).
    """
    n, d = X.shape
    P = shifts.shape[0]
    # Training range of every cell coordinate (floor is monotone in x, so the min/max rows give
    # it exactly, with the same float operations as the kernel).
    ext = _column_range(X)
    bounds = np.empty((2, P, d), dtype=np.float64)
    _binning.cell_indices(ext, shifts, inv_widths, bounds, 1)
    lo, hi = np.ascontiguousarray(bounds[0]), np.ascontiguousarray(bounds[1])
    arrays, n_words = key_layout(shifts, inv_widths, lo, hi, ext[0], ext[1])
    # uniform 128-bit multipliers and offsets of the two fingerprint lanes (see binning.h)
    fp_key = rng.integers(0, 2 ** 64 - 1, size=(2, n_words + 1, 2), dtype=np.uint64,
                          endpoint=True)
    layout = _binning.CellLayout(fp_key=fp_key, fingerprint_bits=fingerprint_bits, **arrays)
    fa = np.empty((P, n), dtype=np.uint64)
    fb = np.empty((P, n), dtype=np.uint32)
    if not sp.issparse(X):
        _binning.fingerprints(X, layout, fa, fb, n_threads)
    else:   # a block of rows at a time; a row's fingerprints depend on that row only
        for a, b, Xb in dense_row_blocks(X, per_row=P):
            ta = np.empty((P, b - a), dtype=np.uint64)
            tb = np.empty((P, b - a), dtype=np.uint32)
            _binning.fingerprints(Xb, layout, ta, tb, n_threads)
            fa[:, a:b] = ta
            fb[:, a:b] = tb
            del ta, tb
    assign = np.empty((P, n) if store_assign else (1, 1), dtype=np.int32)
    entries, n_cells = _binning.build_cells(fa, fb, assign, bool(store_assign), n_threads)
    del fa, fb
    col_offsets = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(n_cells, out=col_offsets[1:])
    return _binning.CellMap(layout, col_offsets, entries), (assign if store_assign else None)
