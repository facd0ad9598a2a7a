"""Suprema of |k-hat(Delta) - k(Delta)| over a box of differences (THEORY §5, "Sup over M").

For maps whose estimate depends on x - y only (paired RFF), sup over M x M equals the sup over the
difference set M - M; for M = [0, a]^d that is the box [-a, a]^d, and by symmetry
(k-hat(-Delta) = k-hat(Delta)) the half box Delta_1 >= 0 suffices.

* :func:`certified_sup` (d <= 2, or small boxes): branch and bound on a grid of cells. With L a
  Lipschitz constant of f = k-hat - k, every cell of half-width h (sup-norm) satisfies
  sup_cell |f| <= |f(centre)| + L h sqrt(d). Cells that could still beat the best value found by
  more than ``tol`` are split, until none can. Returns a certified interval [lower, upper] with
  upper - lower <= tol (or the remaining slack if the cell budget runs out).
* :func:`search_sup` (any d): random candidates + multistart L-BFGS-B from the worst ones; returns a
  LOWER bound on the sup.

``f`` is evaluated by a callable (the checks pass the estimator's transform) and its gradient by
another (from the fitted frequencies).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import optimize

__all__ = ["certified_sup", "search_sup"]


def certified_sup(f, L, a, d, *, grad=None, M2=None, tol=0.005, rel=0.05, h0=None,
                  max_cells=400_000):
    """Certified sup of |f| over the half box {Delta in [-a, a]^d, Delta_1 >= 0}.

    Parameters
    ----------
    f : callable (m, d) -> (m,), f(Delta) = k-hat(Delta) - k(Delta).
    L : Lipschitz constant of f (Euclidean norm): sup_cell |f| <= |f(c)| + L r, r the cell's
        radius.
    grad, M2 : optional gradient callable (m, d) -> (m, d) and a bound on the spectral norm of the
        Hessian of f; then the second-order bound |f(c)| + ||grad f(c)|| r + M2 r^2 / 2 is used
        (much tighter when f is small and smooth).
    a : half side of the difference box.
    tol, rel : certified accuracy of the returned upper bound: max(tol, rel * lower).

    Returns
    -------
    dict(lower, upper, n_evals)
    """
    if h0 is None:
        h0 = (min(a, max(4 * tol / (L * np.sqrt(d)), a / 64)) if grad is None else
              min(a, max(np.sqrt(2 * tol / M2) / np.sqrt(d), a / 64)))
    # initial grid of cells with half-width h (sup norm)
    n1 = int(np.ceil(a / (2 * h0)))
    nk = int(np.ceil(2 * a / (2 * h0)))
    h = a / (2 * n1)
    hk = [h] + [a / nk] * (d - 1)
    axes = [(np.arange(n1) + 0.5) * 2 * h] + [(-a + (np.arange(nk) + 0.5) * 2 * hk[i])
                                             for i in range(1, d)]
    centres = np.array(list(itertools.product(*axes)), dtype=float).reshape(-1, d)
    half = np.tile(np.array(hk), (len(centres), 1))
    best = 0.0
    n_evals = 0
    upper_rest = 0.0
    while len(centres):
        vals = np.abs(f(centres))
        n_evals += len(centres)
        best = max(best, float(vals.max()))
        rad = np.sqrt((half ** 2).sum(axis=1))
        if grad is None:
            ub = vals + L * rad
        else:
            ub = vals + np.minimum(L * rad, np.linalg.norm(grad(centres), axis=1) * rad
                                   + 0.5 * M2 * rad ** 2)
        keep = ub > best + max(tol, rel * best)
        if not keep.any():
            break
        centres, half = centres[keep], half[keep]
        if n_evals + len(centres) * 2 ** d > max_cells:
            upper_rest = float(ub[keep].max())
            break
        # split every kept cell into 2^d children
        offs = np.array(list(itertools.product((-0.5, 0.5), repeat=d)))
        centres = (centres[:, None, :] + offs[None, :, :] * half[:, None, :]).reshape(-1, d)
        half = np.repeat(half / 2, 2 ** d, axis=0)
    upper = max(best + max(tol, rel * best), upper_rest)
    return {"lower": best, "upper": upper, "n_evals": n_evals}


def search_sup(f, grad, a, d, rng, *, f_fast=None, n_candidates=10_000, n_starts=5,
               batch=4096):
    """Lower bound on sup |f| over [-a, a]^d: random candidates then L-BFGS-B from the worst.

    ``grad(Delta)`` returns the gradient of f at one point (d,); ``f_fast`` (default ``f``) is used
    inside the optimiser only, every reported value is re-evaluated with ``f``.
    Returns dict(lower, n_evals).
    """
    f_fast = f if f_fast is None else f_fast
    cands = rng.uniform(-a, a, size=(n_candidates, d))
    vals = np.concatenate([np.abs(f(cands[i:i + batch])) for i in range(0, n_candidates, batch)])
    order = np.argsort(vals)[::-1][:n_starts]
    best = float(vals.max())
    n_evals = n_candidates
    ends = []
    for x0 in cands[order]:
        sign = np.sign(f_fast(x0[None, :])[0]) or 1.0

        def obj(x, s=sign):
            v = f_fast(x[None, :])[0]
            return -s * v, -s * grad(x)

        res = optimize.minimize(obj, x0, jac=True, method="L-BFGS-B", bounds=[(-a, a)] * d,
                                options={"maxiter": 200})
        n_evals += res.nfev
        ends.append(res.x)
    best = max(best, float(np.abs(f(np.array(ends))).max()))
    return {"lower": best, "n_evals": n_evals}
