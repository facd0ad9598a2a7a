"""The exact variance of the paper's Fastfood block, and the inputs where structured maps fail.

Independent of randfeat: plain numpy (its own Walsh-Hadamard transform), from the construction
of LSS 2013 §3 only.

Variance of one block of V' = H G Pi H B / (sigma sqrt d)
---------------------------------------------------------
Given the signs B and the permutation Pi, u = Pi H B v is fixed and the projections
z = V' v = H G u / (sigma sqrt d) are jointly Gaussian (G = diag(g), g ~ N(0, I)) with

    Cov(z_i, z_j) = c_{i xor j},  c_m = (1/(sigma^2 d)) sum_k H_{km} u_k^2,  c_0 = a^2,

(H_ik H_jk = H_{k, i xor j} for the Sylvester Hadamard matrix), so every projection is
N(0, ||v||^2/sigma^2) — the estimate is unbiased whatever B and Pi — and for X, Y ~ N(0, s^2)
with covariance c, Cov(cos X, cos Y) = e^{-s^2} (cosh c - 1).  The paired estimate
k-hat(v) = (1/d) sum_i cos z_i of one block therefore has

    Var[k-hat] = E_{B, Pi} (1/d) [ (1 - e^{-a^2})^2 / 2 + e^{-a^2} sum_{m != 0} (cosh c_m - 1) ],

a = ||v|| / sigma, and n/d independent blocks divide it by n/d.  The expectation over (B, Pi)
is a Monte Carlo average of a bounded smooth function (no G drawn), far more precise than any
check's sample variance; its standard error is returned with it.

Why the three random matrices matter (what this formula sees and a bound does not)
-----------------------------------------------------------------------------------
- without B, a Hadamard row or the constant vector gives u = d e_j: all c_m = a^2, every
  projection of the block is the same +-g_j a: the block is ONE frequency (variance d times the
  i.i.d. one);
- without Pi, a 2-sparse v = (e_i + e_j)/sqrt 2 gives one c_m = +-a^2 and the others 0: rows pair
  up exactly (variance 2x the i.i.d. one at large a, against 1.04x with Pi at a = 3, d = 16);
- with one G shared by all blocks, the blocks are correlated (c between blocks
  (1/(sigma^2 d)) sum_k H_{k, i xor j} u_k u'_k != 0): n/d blocks do not divide the variance by n/d.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fwht", "hadamard", "block_variance", "adversarial_directions", "worst_direction"]


def fwht(x):
    """Unnormalised Walsh-Hadamard transform (Sylvester order) along the last axis: x @ H."""
    x = np.array(x, dtype=float, copy=True)
    d = x.shape[-1]
    if d & (d - 1):
        raise ValueError(f"fwht: the last axis must have a power-of-two length, got {d}")
    lead = x.shape[:-1]
    h = 1
    while h < d:
        y = x.reshape(lead + (d // (2 * h), 2, h))
        a = y[..., 0, :].copy()
        y[..., 0, :] += y[..., 1, :]
        y[..., 1, :] = a - y[..., 1, :]
        x = y.reshape(lead + (d,))
        h *= 2
    return x


def hadamard(d):
    """Sylvester Hadamard matrix of order d (entries +-1), built by the Kronecker recursion."""
    H = np.ones((1, 1))
    while H.shape[0] < d:
        H = np.block([[H, H], [H, -H]])
    if H.shape[0] != d:
        raise ValueError(f"hadamard: d must be a power of two, got {d}")
    return H


def block_variance(V, *, sigma=1.0, n_draws=4000, random_state=0, signs=True, permute=True,
                   chunk=2000):
    """Variance of the paired one-block Fastfood estimate k-hat(x, x + v) of the paper's V'.

    Parameters
    ----------
    V : array, shape (m, d) with d a power of two
        Differences v = x' - x (one per row).
    sigma : float
        Gaussian kernel bandwidth.
    n_draws : int
        Number of (B, Pi) draws averaged over.
    signs, permute : bool
        Draw B (else B = I) and Pi (else Pi = I): the variance of a map built without them.

    Returns
    -------
    var, se : arrays, shape (m,)
        The variance and the Monte Carlo standard error of ``var`` (from the spread of the
        conditional variances over the draws).
    """
    V = np.atleast_2d(np.asarray(V, dtype=float))
    m, d = V.shape
    rng = np.random.default_rng(random_state)
    a2 = np.sum(V ** 2, axis=1) / sigma ** 2
    s1 = np.zeros(m)
    s2 = np.zeros(m)
    done = 0
    while done < n_draws:
        nn = min(chunk, n_draws - done)
        b = rng.choice([-1.0, 1.0], size=(nn, 1, d)) if signs else np.ones((nn, 1, d))
        u = fwht(b * V[None, :, :])                                   # (nn, m, d)
        if permute:
            perm = rng.permuted(np.tile(np.arange(d), (nn, 1)), axis=1)
            u = np.take_along_axis(u, perm[:, None, :], axis=2)
        c = fwht(u ** 2) / (d * sigma ** 2)                           # c[..., 0] = a^2
        cv = ((1 - np.exp(-a2)) ** 2 / 2
              + np.exp(-a2) * np.sum(np.cosh(c[..., 1:]) - 1, axis=-1)) / d
        s1 += cv.sum(axis=0)
        s2 += (cv ** 2).sum(axis=0)
        done += nn
    mean = s1 / n_draws
    sd = np.sqrt(np.maximum(s2 / n_draws - mean ** 2, 0.0) * n_draws / max(n_draws - 1, 1))
    return mean, sd / np.sqrt(n_draws)


def adversarial_directions(d):
    """Unit directions where structured maps fail: {name: vector}.  A coordinate axis, a
    Hadamard row, the constant vector (Hadamard row 0), 2- and 4-sparse vectors, and a sparse
    vector with unequal entries (d >= 4)."""
    H = hadamard(d)
    e = np.eye(d)
    dirs = {"axis e_3": e[min(3, d - 1)], "Hadamard row 5": H[min(5, d - 1)],
            "constant": np.ones(d), "2-sparse (e_0 + e_1)": e[0] + e[1],
            "4-sparse (e_0..e_3)": e[:4].sum(axis=0),
            "sparse (e_2 + 2 e_5 - e_6)": e[2] + 2 * e[min(5, d - 1)] - e[min(6, d - 1)]}
    return {k: v / np.linalg.norm(v) for k, v in dirs.items()}


def worst_direction(d, radius, *, sigma=1.0, n_candidates=64, n_draws=400, random_state=0):
    """The unit direction, among a pool of structured and random candidates, with the largest
    exact one-block variance at ``radius`` (a search for the worst input of the correct map;
    Theorems 4-5 must hold there too).  Returns (name, vector, variance)."""
    rng = np.random.default_rng(random_state)
    H = hadamard(d)
    pool = dict(adversarial_directions(d))
    for j in range(1, d):
        pool[f"Hadamard row {j}"] = H[j] / np.sqrt(d)
    for k in (2, 3, 4, 8):
        for t in range(n_candidates // 8):
            v = np.zeros(d)
            idx = rng.choice(d, size=min(k, d), replace=False)
            v[idx] = rng.choice([-1.0, 1.0], size=idx.size) * (1 + rng.random(idx.size))
            pool[f"random {k}-sparse #{t}"] = v / np.linalg.norm(v)
    for t in range(n_candidates // 4):
        v = rng.standard_normal(d)
        pool[f"Gaussian #{t}"] = v / np.linalg.norm(v)
    names = list(pool)
    U = np.array([pool[n] for n in names])
    var, _ = block_variance(U * radius, sigma=sigma, n_draws=n_draws, random_state=random_state)
    i = int(np.argmax(var))
    return names[i], U[i], float(var[i])
