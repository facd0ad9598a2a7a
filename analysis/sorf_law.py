r"""The exact mean and variance of the SORF kernel estimate, by enumeration of the sign diagonals.

Independent of randfeat: plain numpy and ``scipy.linalg.hadamard`` (Sylvester order), from the
construction of Yu et al. (NIPS 2016, §4) only.

The map
-------
One block of SORF is :math:`W = \frac{\sqrt d}{\sigma} H D_1 H D_2 H D_3` with :math:`H` the
normalised Sylvester Hadamard matrix (:math:`H = \tilde H/\sqrt d`, :math:`\tilde H_{ik} = \pm 1`)
and :math:`D_i` iid diagonals of Rademacher signs; blocks are independent.  The paired estimate
with the first ``r`` rows of a block is :math:`\hat k = \frac1r\sum_{i<r}\cos y_i`,
:math:`y = W\Delta`.

Integrating :math:`D_1` in closed form
--------------------------------------
Write :math:`v = H D_2 H D_3 \Delta` (fixed once :math:`D_2, D_3` are).  Then
:math:`y_i = \sigma^{-1}\sum_k \tilde H_{ik} s_k v_k` with :math:`s = \operatorname{diag} D_1`
uniform on :math:`\{\pm 1\}^d`, and for any fixed :math:`a`,
:math:`\mathbb E_s \cos(\sum_k s_k a_k) = \prod_k \cos a_k` (the characteristic function of a
Rademacher sum).  Hence, with :math:`c_k = \cos(v_k/\sigma)` and :math:`C_k = \cos(2 v_k/\sigma)`,

.. math::

    \mathbb E[\cos y_i \mid D_2, D_3] = \prod_k c_k \quad (\text{every } i),\qquad
    \mathbb E[\cos y_i \cos y_j \mid D_2, D_3] = \tfrac12\Big(\prod_{k \in A_m} C_k
        + \prod_{k \notin A_m} C_k\Big),

:math:`m = i \oplus j`, :math:`A_m = \{k : \tilde H_{mk} = +1\}` (because
:math:`\cos a\cos b = \frac12[\cos(a+b) + \cos(a-b)]`, :math:`\tilde H_{ik} \pm \tilde H_{jk} \in
\{0, \pm 2\}` and :math:`\tilde H_{ik}\tilde H_{jk} = \tilde H_{i\oplus j, k}` for the Sylvester
matrix).  The remaining expectation over :math:`(D_2, D_3)` is a finite average over their
:math:`2^{2d}` values, halved by the symmetry :math:`D_3 \to -D_3` (it flips the sign of every
:math:`y_i`): 128 terms at d = 4, 32 768 at d = 8 -- the exact expectation over all
:math:`2^{3d}` sign patterns (4 096 and 16 777 216).  ``brute_force`` enumerates all
:math:`2^{3d}` patterns directly (tests check one against the other).

Widths and features
-------------------
A map with ``n`` frequencies uses ``n // d`` full blocks and one block cut to ``n % d`` rows
(independent), so :math:`\operatorname{Var}\hat k = [b\,d^2 V_d + r^2 V_r]/n^2`, :math:`V_r` the
variance of the mean of the first r rows of one block.  The phase map
:math:`\sqrt{2/n}\cos(Wx + b)` adds the independent term :math:`\cos(w_i^\top(x + y) + 2b_i)` of
mean 0 and variance 1/2 to each row, uncorrelated with everything else: the same mean and
:math:`\operatorname{Var} + 1/(2n)`.

Zero padding (d not a power of two) appends zeros to :math:`\Delta`; it does not change the law.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.linalg import hadamard as _sylvester

__all__ = ["padded_dim", "pad", "signs", "moments", "estimate_law", "brute_force",
           "ENUMERABLE"]

#: block sizes whose (D_2, D_3) patterns are enumerated exactly here (2^{2d - 1} terms)
ENUMERABLE = (1, 2, 4, 8)


def padded_dim(d):
    return 1 << max(0, int(np.ceil(np.log2(d))))


def pad(V):
    """Rows of ``V`` zero-padded to the next power of two."""
    V = np.atleast_2d(np.asarray(V, dtype=float))
    dp = padded_dim(V.shape[1])
    if dp == V.shape[1]:
        return V
    return np.hstack([V, np.zeros((V.shape[0], dp - V.shape[1]))])


def signs(d):
    """All 2^d sign vectors (rows), shape (2^d, d)."""
    return np.array(list(itertools.product((1.0, -1.0), repeat=d)))


def _v_all(V, d, no_d2=False):
    """v = H D2 H D3 Delta for every (D2, D3 up to a global sign): shape (m, n_patterns, d)."""
    Hn = _sylvester(d).astype(float) / np.sqrt(d)
    S = signs(d)
    S3 = S[S[:, 0] > 0]                                    # D3 modulo its global sign
    u3 = np.einsum("ik,pk,mk->mpi", Hn, S3, V)             # (m, P3, d): H D3 Delta
    if no_d2:
        return np.einsum("ik,mpk->mpi", Hn, u3)
    u2 = S[None, :, None, :] * u3[:, None, :, :]          # (m, P2, P3, d): D2 H D3 Delta
    v = np.einsum("ik,mabk->mabi", Hn, u2)
    return v.reshape(V.shape[0], -1, d)


def moments(V, sigma=1.0, *, rows=None, no_d2=False, mean_only=False):
    """Exact moments of one SORF block at the differences ``V`` (rows; padded to d = 2^p).

    Returns ``(mean, second)``: ``mean[i] = E cos(w_j' Delta_i)`` (the same for every row j) and
    ``second[i] = E[(mean of the first r rows of the block)^2]`` for each r in ``rows`` (default
    ``[d]``), shape (len(rows), m) (None with ``mean_only``).  ``no_d2``: the law of the map
    without its middle diagonal (for tests of the checks' power)."""
    V = pad(V)
    m, d = V.shape
    if d not in ENUMERABLE:
        raise ValueError(f"sorf_law: exact enumeration for d in {ENUMERABLE}, got d = {d}")
    rows = [d] if rows is None else [int(r) for r in rows]
    v = _v_all(V, d, no_d2) / sigma                        # (m, P, d)
    mean = np.prod(np.cos(v), axis=2).mean(axis=1)
    if mean_only:
        return mean, None
    C = np.cos(2.0 * v)
    # P_q, Q_q: products of C over A_q = {k: H_qk = +1} and over its complement, as
    # exp(sum of log|C|) times the parity of the negative factors (two matrix products)
    plus = (_sylvester(d) > 0).astype(float).T             # (k, q)
    with np.errstate(divide="ignore"):
        L = np.log(np.abs(C))
    neg = (C < 0).astype(float)
    tot_l, tot_n = L.sum(axis=2, keepdims=True), neg.sum(axis=2, keepdims=True)
    lp = (L.reshape(-1, d) @ plus).reshape(L.shape)
    np_ = (neg.reshape(-1, d) @ plus).reshape(L.shape)
    Pm = np.exp(lp) * (1.0 - 2.0 * (np.rint(np_) % 2))
    Qm = np.exp(tot_l - lp) * (1.0 - 2.0 * (np.rint(tot_n - np_) % 2))
    pair = 0.5 * (Pm + Qm).mean(axis=1)                    # (m, d): E cos y_i cos y_j, i^j = q
    idx = np.arange(d)
    out = []
    for r in rows:
        if not 1 <= r <= d:
            raise ValueError(f"sorf_law: rows must lie in 1..{d}, got {r}")
        x = np.bitwise_xor.outer(idx[:r], idx[:r]).ravel()
        cnt = np.bincount(x, minlength=d)                  # pairs (i, j) with i ^ j = q
        out.append(pair @ cnt / r ** 2)
    return mean, np.asarray(out)


def estimate_law(V, n_freq, sigma=1.0, features="paired", *, no_d2=False):
    """Exact mean and variance of the SORF estimate k-hat(x, x + Delta) with ``n_freq``
    frequencies (paired map: 2 n_freq output columns; phase map: n_freq), blocks of d (padded).
    Returns (mean, var), arrays over the rows of ``V``."""
    V = pad(V)
    d = V.shape[1]
    b, r = divmod(int(n_freq), d)
    rows = [d] + ([r] if r else [])
    mean, sec = moments(V, sigma, rows=rows, no_d2=no_d2)
    var_full = sec[0] - mean ** 2
    var = b * d * d * var_full
    if r:
        var = var + r * r * (sec[1] - mean ** 2)
    var = var / n_freq ** 2
    if features == "phase":
        var = var + 0.5 / n_freq
    elif features != "paired":
        raise ValueError(f"features must be 'paired' or 'phase', got {features!r}")
    return mean, var


def brute_force(V, sigma=1.0, *, rows=None, no_d2=False, chunk=1 << 12):
    """Mean and variance of the paired estimate of one block (its first ``rows`` rows, default
    all d) by direct enumeration of all 2^{3d} sign patterns (D1, D2, D3) -- the reference
    that ``moments`` is tested against (d = 4: 4 096 patterns; d = 8: 16 777 216, about 10 s
    per input).  ``no_d2``: D2 = I (the map without its middle diagonal)."""
    V = pad(V)
    m, d = V.shape
    Hn = _sylvester(d).astype(float) / np.sqrt(d)
    S = signs(d)
    # y = (sqrt d / sigma) H D1 H D2 H D3 Delta, for all D3, D2 (stacked), then every D1
    u3 = np.einsum("ik,pk,mk->mpi", Hn, S, V)                            # (m, 2^d, d)
    S2 = np.ones((1, d)) if no_d2 else S
    v = np.einsum("ik,mabk->mabi", Hn, S2[None, :, None, :] * u3[:, None]).reshape(m, -1, d)
    r = d if rows is None else int(rows)
    s1, s2, n = np.zeros(m), np.zeros(m), 0
    A = np.sqrt(d) / sigma * Hn
    for lo in range(0, S.shape[0], max(1, chunk // v.shape[1])):
        D1 = S[lo:lo + max(1, chunk // v.shape[1])]                      # (c, d)
        y = np.einsum("ik,ck,mpk->mcpi", A, D1, v)                       # (m, c, P, d)
        kh = np.cos(y[..., :r]).mean(axis=3).reshape(m, -1)
        s1 += kh.sum(axis=1)
        s2 += (kh ** 2).sum(axis=1)
        n += kh.shape[1]
    mean = s1 / n
    return mean, s2 / n - mean ** 2
