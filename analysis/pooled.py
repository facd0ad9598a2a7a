"""The pooled (high-power) Monte Carlo design: many independent replicates from few fits.

The terms of an RFF map (frequencies, or phase-shift features) and of random binning (grids) are
i.i.d. within one fitted map, and so are the d-row blocks of Fastfood.  One fit with K * size terms
therefore holds K independent replicates of the size-term estimate: the per-term products
averaged in K consecutive groups.  This buys 10-100x more replicates per second than one fit per
replicate, which is what lets the quick suite resolve a 5 % variance error or a 2 % bandwidth
error.  It cannot see bugs that correlate terms *within* a fit (antithetic frequencies, one G
shared by all blocks): the checks keep a one-fit-per-replicate design beside it for those.
"""

from __future__ import annotations

import numpy as np

from analysis import maps

__all__ = ["group_estimates"]


def group_estimates(spec, size, K, random_state, X, Y):
    """K independent estimates k-hat(X_i, Y_i) of ``size`` terms each from ONE fitted map of
    K * size terms: the per-term products (analysis.maps.row_terms; for binning the per-grid
    collision indicators, summed over each grid's columns ``column_offsets_``) averaged in K
    consecutive groups.  X has one row (broadcast) or len(Y) rows.  Returns shape (K, len(Y))."""
    est = maps.build(spec, K * size, random_state)
    zx, zy = maps.transform_pair(spec, est, X, Y)
    if spec["family"] == "binning":
        off = np.asarray(est.column_offsets_)
        t = np.add.reduceat(zx * zy, off[:-1], axis=1) * (K * size)   # (m, K size) indicators
    else:
        t = maps.row_terms(zx, zy, spec.get("features", "paired"))    # (m, K size)
    return t.reshape(len(Y), K, size).mean(axis=2).T
