"""Shared Monte Carlo plumbing of the orthogonal / structured / QMC checks.

Replicates are *blocks of one fitted map*: the orthogonal maps (ORF, SORF) draw independent
d x d blocks, frequencies filling blocks in order, so the mean of cos(w_j' Delta) over D = m d
consecutive frequencies starting at a block boundary is one replicate of the D-frequency
estimate, independent of the others.  Every value comes from the estimator's own
``transform`` (paired map, x0 = 0, so z(0)'z(Delta) per frequency is cos(w_j' Delta)).
"""

from __future__ import annotations

import numpy as np

from analysis import maps
from analysis import montecarlo as mc

__all__ = ["off_axis_direction", "block_estimates", "BiasedColumnsMap", "haar"]


def haar(d, rng, n_blocks):
    """``n_blocks`` independent Haar-distributed orthogonal d x d matrices: the QR factors of
    standard Gaussian matrices with the signs of diag(R) moved into Q (Mezzadri 2007; without
    the correction LAPACK's sign convention makes Q non-Haar).  Plain numpy, independent of
    randfeat's own sampler."""
    G = rng.standard_normal((n_blocks, d, d))
    Q, R = np.linalg.qr(G)
    return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]


def off_axis_direction(d, rng):
    """A fixed unit direction whose coordinates all have size ~1/sqrt(d) (away from the axes,
    where the biased `diag(s) @ Q`-columns construction happens to be unbiased)."""
    v = np.where(rng.random(d) < 0.5, -1.0, 1.0) * (1.0 + 0.3 * rng.random(d))
    return v / np.linalg.norm(v)


def block_estimates(make, d, D, n_rep, deltas, seed, names, chunk_freq=1 << 15, progress=None,
                    features="paired", x0=None, discrete=False):
    """Per-replicate estimates, shape (n_rep, len(deltas)).

    ``make(n_components, random_state)`` returns an unfitted feature map whose frequencies
    come in independent blocks of ``d`` (D must be a multiple of d: groups of fewer than d
    frequencies would share blocks and not be independent); each fitted map holds many
    replicates (``chunk_freq`` frequencies), each map is seeded from its own child
    SeedSequence of (seed, names).  ``features``: "paired" (``make`` gets 2 r D components,
    the estimate at (x0, x0 + Delta) is the mean of cos(w_j' Delta)) or "phase" (r D
    components, the mean of 2 cos(w_j' x0 + b_j) cos(w_j' (x0 + Delta) + b_j)); ``x0``
    defaults to 0.  ``discrete=True`` for a map whose estimate takes finitely many values
    (SORF: a function of its sign patterns): repeated replicates are then expected, and only an
    all-identical run is refused (:func:`analysis.montecarlo.check_not_degenerate`)."""
    if D % d:
        raise ValueError(f"block_estimates: D = {D} is not a multiple of the block size d = {d}")
    per = max(1, chunk_freq // D)
    n_chunks = -(-n_rep // per)
    seeds = mc.seed_sequences(seed, *names, n=n_chunks)
    x0 = np.zeros(deltas.shape[1]) if x0 is None else np.asarray(x0, dtype=float)
    X = np.vstack([x0[None, :], x0[None, :] + deltas])
    mult = 2 if features == "paired" else 1
    out, left = [], n_rep
    mc.check_distinct(seeds)
    for ss in seeds:
        r = min(per, left)
        left -= r
        est = make(mult * r * D, mc.random_state_of(ss))
        Z = np.asarray(est.fit(X).transform(X), dtype=float)
        t = maps.row_terms(Z[:1], Z[1:], features)               # (n_delta, r D)
        out.append(t.reshape(len(deltas), r, D).mean(axis=2).T)
        if progress is not None:
            progress.tick(r)
    res = np.vstack(out)
    mc.check_not_degenerate(res, "block estimates", allow_repeats=discrete)
    return res


class BiasedColumnsMap:
    """Negative control: the widely copied biased ORF (LITERATURE §F), frequencies the COLUMNS
    of ``diag(s) Q`` (s ~ chi_d, Q Haar) per block, i.e. w_j = (s_1 Q_1j, ..., s_d Q_dj)/sigma.
    Each coordinate is N(0, 1/sigma^2), so the map is unbiased ON the coordinate axes, but the
    law of w is not rotation invariant and the estimate is biased off the axes.  A minimal
    paired feature map (fit / transform) with the interface block_estimates needs."""

    def __init__(self, n_components, sigma=1.0, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.random_state = random_state

    def fit(self, X, y=None):
        d = X.shape[1]
        n = self.n_components // 2
        rng = np.random.default_rng(self.random_state)
        nb = -(-n // d)
        Q = haar(d, rng, nb)                                      # (nb, d, d)
        s = np.sqrt(rng.chisquare(d, size=(nb, d)))
        self.W_ = ((s[:, :, None] * Q).transpose(0, 2, 1).reshape(nb * d, d)[:n]
                   / self.sigma)
        return self

    def transform(self, X):
        P = np.asarray(X, dtype=float) @ self.W_.T
        return np.hstack([np.cos(P), np.sin(P)]) / np.sqrt(self.W_.shape[0])
