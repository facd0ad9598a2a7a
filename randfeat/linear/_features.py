"""How the ridge learners featurise their rows: which maps may be featurised in float32, the
bound on the phases that decides it, and the merging of repeated input rows."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from randfeat.fastfood import Fastfood
from randfeat.fourier import RandomFourierFeatures
from randfeat.linear import _oneblas
from randfeat.sorf import StructuredOrthogonalFeatures

__all__ = ["DENSE_MAPS", "F32_PHASE_LIMIT", "merge_duplicate_rows", "phase_bound"]

#: randfeat maps with dense output and a float32 path (``_chunk_features``)
DENSE_MAPS = (RandomFourierFeatures, Fastfood, StructuredOrthogonalFeatures)

#: largest bound on the phases |ωᵀx| at which ``gram_dtype="float32"`` featurises in float32
F32_PHASE_LIMIT = 2.0 ** 10

#: merge repeated rows when at most this fraction of the rows are distinct
MERGE_MAX_DISTINCT = 0.9


def max_frequency_norm(feats):
    """max_j ‖ω_j‖₂ over the rows of a fitted dense map (an upper bound over the input's
    coordinates): RFF from its frequencies; Fastfood's rows have length S_i ‖G_b‖_F / σ
    (V = S H G Π H B / (σ√d), H unnormalised, so ‖row_i(H G Π H B)‖ = √d ‖G_b‖_F); SORF's
    rows have length √d / σ (H D₁ H D₂ H D₃ with H normalised is orthogonal)."""
    st = feats._fitted_state()
    if isinstance(feats, RandomFourierFeatures):
        W = np.asarray(st["frequencies_"], dtype=np.float64)
        return float(np.sqrt(np.einsum("ij,ij->i", W, W).max())) if W.size else 0.0
    if isinstance(feats, Fastfood):
        d = int(st["d_padded_"])
        G = np.asarray(st["G_"], dtype=np.float64)
        S = np.abs(np.asarray(st["S_"], dtype=np.float64))
        g = np.repeat(np.sqrt(np.einsum("ij,ij->i", G, G)), d)[:S.size]
        return float((S * g).max() / st["sigma_"])
    return float(np.sqrt(st["d_padded_"]) / st["sigma_"])


def phase_bound(feats, X):
    """An upper bound on |ωᵀx| over the rows x of X and the frequencies ω of ``feats``
    (inf on overflow, which keeps float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):
            sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X)
        xmax = float(np.sqrt(sq.max())) if sq.size else 0.0
        b = xmax * max_frequency_norm(feats)
    return b if np.isfinite(b) else np.inf


def merge_duplicate_rows(X, Y, rows, w, R=None):
    r"""Repeated input rows, merged: ``(rows_u, Y_u, w_u, y_sq)`` or None when fewer than
    10 % of the rows repeat (or there are fewer than 64).

    Rows that are equal give equal features, so their terms of the ridge statistics combine
    exactly: :math:`\sum_i s_i z_i z_i^\top = \sum_g c_g z_g z_g^\top`,
    :math:`\sum_i s_i z_i y_i^\top = \sum_g c_g z_g \bar y_g^\top` with :math:`c_g` the
    group's weight sum and :math:`\bar y_g` its weighted mean target; only
    :math:`\sum_i s_i y_i^2` needs the rows themselves (returned as ``y_sq``).  Groups are
    found from two fixed random projections of the rows (a hash) and then verified exactly
    (a row that differs from its group's first row by any value is made a group of its own), so
    the merge never joins distinct rows.  Categorical and binary data repeat rows often
    (Adult: 23 % of its training rows, KDDCUP99 10 %: 70 %), and each merged row saves its
    share of the featurisation and of the Gram's ``syrk``.  Cost: one pass over X for the hash
    and one for the check, and about 40 bytes per row while the groups are formed."""
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    n = len(idx)
    if n < 64:
        return None
    if R is None:   # the hash (tests pass a degenerate one to exercise the verification)
        R = np.random.default_rng(0x5EED).standard_normal((X.shape[1], 2))
    step = 8192     # rows per block: no copy of X beyond a block
    h = np.empty((n, 2))
    for s0 in range(0, n, step):
        h[s0:s0 + step] = np.asarray(_oneblas.matmul(X[idx[s0:s0 + step]], R), dtype=np.float64)
    _, first, inv = np.unique(h.view(np.complex128).ravel(), return_index=True,
                              return_inverse=True)
    inv = inv.ravel()
    if len(first) > MERGE_MAX_DISTINCT * n:
        return None
    # exact verification: every row equals its group's first row
    bad = []
    for s0 in range(0, n, step):
        blk = slice(s0, s0 + step)
        diff = X[idx[blk]] - X[idx[first[inv[blk]]]]
        if sp.issparse(diff):
            diff = diff.tocsr()
            diff.eliminate_zeros()
            bad.append(s0 + np.flatnonzero(np.diff(diff.indptr)))
        else:
            bad.append(s0 + np.flatnonzero(np.any(diff != 0, axis=1)))
    bad = np.concatenate(bad)
    if bad.size:   # hash collisions of distinct rows (never seen): groups of their own
        inv = inv.copy()
        inv[bad] = len(first) + np.arange(bad.size)
        first = np.concatenate([first, bad])
    G = len(first)
    wr = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)[idx]
    c = np.bincount(inv, weights=wr, minlength=G)
    Yr = Y[idx]                                              # (n, K): targets are small
    sums = np.zeros((G, Y.shape[1]))
    np.add.at(sums, inv, wr[:, None] * Yr)
    keep = c > 0
    Yu = np.zeros_like(sums)
    Yu[keep] = sums[keep] / c[keep, None]
    y_sq = (wr[:, None] * Yr * Yr).sum(axis=0)
    rows_u = idx[first][keep]
    order = np.argsort(rows_u, kind="stable")               # input order of the first rows
    return rows_u[order], Yu[keep][order], c[keep][order], y_sq
