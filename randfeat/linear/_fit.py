r"""The one fit workflow of the ridge learners, shared by the in-memory path and the dask path.

A fit is

1. **plan**: the candidate ``alphas`` and the validation split (:func:`validation_split`; one
   permutation from ``random_state``, the same in memory and on dask);
2. **accumulate and solve** by the solver's kind (:data:`~randfeat.linear._solvers.SOLVERS`):

   * "statistics" solvers (:func:`fit_statistics`): the training rows' :class:`RidgeStatistics`
     from a *source* -- :class:`InMemoryRows` here, the per-block tree reduction of
     :mod:`randfeat.dask` on a cluster -- the alpha path solved on them, one pass over the
     validation rows for their statistics and the score of every alpha, then one final solve of
     the chosen alpha on all rows, in the Gram itself;
   * "design" solvers (:func:`fit_design`, in memory only): the feature matrix, the alpha path
     from the largest penalty down (warm starts, one preconditioner), the final solve on all
     rows;

3. **select** alpha (:func:`best_alpha`: the smallest validation score, ties to the largest
   alpha; the place where other criteria -- leave-one-out, GCV, the evidence -- will plug in,
   from the statistics' eigendecomposition);
4. **publish** (:func:`publish`): every fitted attribute is computed aside -- the estimator is
   never written during a fit -- and assigned in one step, so an exception of any kind leaves
   the previous fit whole.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from randfeat._base import RandomFeaturesBase
from randfeat._validation import check_random_state
from randfeat.linear import _oneblas
from randfeat.linear._features import DENSE_MAPS, merge_duplicate_rows
from randfeat.linear._inputs import check_alphas, penalties
from randfeat.linear._memory import trim_heap
from randfeat.linear._precision import effective_gram_dtype
from randfeat.linear._solvers import Design, GramConsumed, SolveOptions, resolve_solver
from randfeat.linear._statistics import RidgeStatistics

__all__ = ["AlphaAtGridEdgeWarning", "InMemoryRows", "best_alpha", "fit_design",
           "fit_in_memory", "fit_statistics", "publish", "validation_split", "working_copy"]


class AlphaAtGridEdgeWarning(UserWarning):
    """The ``alpha`` chosen on the validation split is the smallest or the largest of the grid:
    the best penalty may lie outside it; widen ``alphas`` on that side."""


# ------------------------------------------------------------------------------- plan and select
def validation_split(n, n_alphas, validation_fraction, random_state, who):
    """``(train, validation)`` sorted row indices of the split that chooses alpha, or
    ``(None, None)`` for a single alpha (no split).  One permutation of the rows drawn from
    ``random_state``; ``round(validation_fraction * n)`` validation rows, at least one of each."""
    if n_alphas <= 1:
        return None, None
    if n < 2:
        raise ValueError(f"{who}: choosing alpha on a validation split needs at least 2 "
                         f"samples, got n_samples={n}; pass a single alpha instead")
    perm = check_random_state(random_state).permutation(n)
    n_val = min(n - 1, max(1, int(round(validation_fraction * n))))
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def best_alpha(scores, alphas):
    """Index of the smallest validation score; among ties (to round-off) the largest, safest
    alpha."""
    m = np.min(scores)
    ties = np.flatnonzero(scores <= m * (1 + 1e-12) + 1e-300)
    return int(ties[np.argmax(alphas[ties])])


def warn_grid_edge(who, alpha, alphas, alpha_scale, stacklevel):
    """:class:`AlphaAtGridEdgeWarning` when ``alpha`` is the smallest or largest of ``alphas``."""
    if alpha in (alphas.min(), alphas.max()):
        side = "smallest" if alpha == alphas.min() else "largest"
        warnings.warn(
            f"{who}: the alpha chosen on the validation split, {alpha:g}, is the {side} of "
            f"the grid alphas={alphas.tolist()}; the best penalty may lie beyond it: extend the "
            f"grid on that side (alpha_scale={alpha_scale!r})", AlphaAtGridEdgeWarning,
            stacklevel=stacklevel + 1)


# ------------------------------------------------------------------------------- statistics
class InMemoryRows:
    """The rows of an in-memory fit as a source of :class:`RidgeStatistics`: chunk by chunk in
    row order, one :meth:`RidgeStatistics._update` per chunk (a BLAS ``syrk`` and a ``gemm``
    from this thread, randfeat's feature kernels on ``n_threads`` threads: no call's shape
    depends on ``n_threads``, so neither do the sums)."""

    def __init__(self, model, X, Y, w=None):
        self.model, self.X, self.Y, self.w = model, X, Y, w
        self.feats = model._feature_map()

    def statistics(self, rows=None, path=None):
        """Statistics of the rows ``rows`` (None: all) and, with ``path=(Wf, b)``, the summed
        validation score of every alpha: ``(stats, scores)``.  Without a path, repeated input
        rows are merged first (:func:`~randfeat.linear._features.merge_duplicate_rows`)."""
        model, X, Y, w, feats = self.model, self.X, self.Y, self.w, self.feats
        stats = RidgeStatistics(model.gram_dtype)
        n = X.shape[0] if rows is None else len(rows)
        scores = None
        if path is not None:
            Wf, b = path
            L, K = b.shape
            scores = np.zeros(L)
        n_rows = n
        # a chunk's features may be scaled in place only when this loop owns them: randfeat's
        # maps return new arrays, while "passthrough" (or another transformer) may return a
        # view of the caller's X, which must never be modified
        scratch = path is None and isinstance(feats, RandomFeaturesBase)
        merged = None if path is not None else merge_duplicate_rows(X, Y, rows, w)
        if merged is not None:
            rows, Y, w, y_sq = merged          # one row per distinct input row, weighted
            n = len(rows)
        for sl in model._chunks(n):
            idx = sl if rows is None else rows[sl]
            pos = idx if merged is None else sl
            Yc = Y[pos]
            wc = None if w is None else w[pos]
            Z = stats._update(model._chunk_features(X[idx], feats), Yc, wc, scratch=scratch)
            if path is not None:
                P = np.asarray(_oneblas.matmul(Z, Wf)).reshape(-1, L, K) + b[None]
                if wc is None:
                    scores += np.array([model._scores(P[:, j], Yc) for j in range(L)]) * len(Yc)
                else:
                    scores += np.array([wc @ model._row_losses(P[:, j], Yc) for j in range(L)])
            del Z
        stats._release()
        if merged is not None:   # the rows' own sums of squares and count, not the groups'
            stats.y_sq_sum_ = y_sq
            stats.n_samples_ = n_rows
        return stats, scores


def fit_statistics(model, source, method, alphas, split, validation_weight, who):
    """The "statistics" fit (module docstring, step 2) of ``model`` (a working copy whose
    ``features_`` and ``n_features_out_`` are set) on ``source``: the fitted values
    ``(W (D, K), b (K,), alpha, validation_scores or None, method used)``.

    ``source.statistics(rows, path)`` gives ``(RidgeStatistics, summed scores)``;
    ``validation_weight`` divides the summed validation scores (the number of validation rows,
    or their weight sum)."""
    tr, va = split
    fi = model.fit_intercept
    if va is None:
        stats, _ = source.statistics(None)
        best, scores = 0, None
    else:
        stats, _ = source.statistics(tr)
        W, b, _ = stats._path(penalties(alphas, model.alpha_scale, stats.weight_sum_), fi,
                              method, who)
        L, D, K = W.shape
        Wf = W.transpose(1, 0, 2).reshape(D, L * K)
        del W
        vstats, vscores = source.statistics(va, path=(Wf, b))
        scores = vscores / validation_weight
        best = best_alpha(scores, alphas)
        stats += vstats
        del vstats
    alpha = float(alphas[best])
    trim_heap()   # the chunks' freed features, before the solve's own memory
    try:
        W, b, used = stats._path(penalties([alpha], model.alpha_scale, stats.weight_sum_), fi,
                                 method, who, overwrite=True)
    except GramConsumed:
        # rare (A + nαI not numerically positive definite, e.g. alpha = 0 with more features
        # than rows): the in-place attempt consumed the statistics; the rows are accumulated
        # again and solved on a copy, which falls back to the eigen-solution
        stats, _ = source.statistics(None)
        W, b, used = stats._path(penalties([alpha], model.alpha_scale, stats.weight_sum_), fi,
                                 method, who)
    return W[0], b[0], alpha, scores, used[0]


# ------------------------------------------------------------------------------- design
def fit_design(model, method, spec, X, Y, w, alphas, split, who):
    """The "design" fit (module docstring, step 2): the whole feature matrix in memory, the
    alpha path from the largest penalty down with one ``state`` (warm starts, one
    preconditioner), the final solve on all rows with a fresh one.  Returns
    ``(W (D, K), b (K,), alpha, validation_scores or None, n_iter (K,))``."""
    D = model.n_features_out_
    Z = model._float32_features(X) if spec.float32_features else None
    if Z is None:
        Z = model._as64(model._transform(X))
    if sp.issparse(Z):
        # keep only occupied columns (hashed binning features are mostly empty); the weights
        # of never-occupied columns are exactly 0
        cols = np.flatnonzero(np.bincount(Z.indices, minlength=D))
        Z = Z[:, cols].tocsr()
    else:
        Z, cols = np.ascontiguousarray(Z), None
    options = SolveOptions(fit_intercept=model.fit_intercept, tol=model.tol,
                           max_iter=model.max_iter, random_state=model.random_state, who=who)
    tr, va = split
    scores = None
    best = 0
    if va is not None:
        train = Design(Z[tr], Y[tr], None if w is None else w[tr])
        Zva, Yva, wva = Z[va], Y[va], None if w is None else w[va]
        pens = penalties(alphas, model.alpha_scale, train.weight_sum())
        scores = np.zeros(len(alphas))
        state = {}   # warm start and preconditioner shared along the path
        for j in np.argsort(alphas)[::-1]:   # largest alpha first
            sol = spec.function(train, pens[j], options, state)
            scores[j] = model._weighted_score(np.asarray(_oneblas.matmul(Zva, sol.coef))
                                              + sol.intercept,
                                              Yva, wva)
        del train, state
        best = best_alpha(scores, alphas)
    alpha = float(alphas[best])
    design = Design(Z, Y, w)
    sol = spec.function(design, penalties([alpha], model.alpha_scale, design.weight_sum())[0],
                        options, {})
    W = sol.coef
    if cols is not None:
        Wfull = np.zeros((D, W.shape[1]))
        Wfull[cols] = W
        W = Wfull
    return W, sol.intercept, alpha, scores, sol.n_iter


# ------------------------------------------------------------------------------- the fit
def fit_in_memory(model, X, Y, w, who):
    """Fit the working copy ``model`` on in-memory ``X`` (validated), ``Y`` (n, K) float64 and
    weights ``w``; returns the fitted state (a dict of attributes) without publishing it."""
    alphas = check_alphas(model.alphas, model.alpha_scale)
    feats = (None if model.features in (None, "passthrough")
             else clone(model.features).fit(X))
    model.__dict__["features_"] = feats
    n = X.shape[0]
    if type(feats) in DENSE_MAPS:  # width known: no probe transform
        D, sparse_out = int(feats._n_features_out), False
    else:
        probe = model._transform(X[:1])
        D, sparse_out = probe.shape[1], sp.issparse(probe)
    model.__dict__["n_features_out_"] = D
    # gram_dtype="auto" made concrete on the working copy (randfeat.linear._precision)
    model.__dict__["gram_dtype"] = effective_gram_dtype(model, alphas,
                                                        n if w is None else float(w.sum()))
    method, spec = resolve_solver(model.solver, sparse_out, f"{who}: solver")
    split = validation_split(n, alphas.size, model.validation_fraction, model.random_state, who)
    tr, va = split
    validation_weight = None if va is None else len(va)
    if va is not None and w is not None:
        validation_weight = float(w[va].sum())
        if not validation_weight > 0 or not float(w[tr].sum()) > 0:
            part = "validation" if validation_weight <= 0 else "training"
            raise ValueError(
                f"{who}: the {part} part of the split (validation_fraction="
                f"{model.validation_fraction}) has only zero sample weights; give more rows a "
                f"positive weight, change random_state, or pass a single alpha (no split)")
    if spec.data == "statistics":
        W, b, alpha, scores, used = fit_statistics(model, InMemoryRows(model, X, Y, w), method,
                                                   alphas, split, validation_weight, who)
        n_iter = np.ones(Y.shape[1], dtype=int)  # one direct solve per target
    else:
        W, b, alpha, scores, n_iter = fit_design(model, method, spec, X, Y, w, alphas, split,
                                                 who)
        used = method
    return fitted_state(model, W, b, alpha, alphas, scores, used, n_iter, who)


def fitted_state(model, W, b, alpha, alphas, scores, solver, n_iter, who):
    """The fitted attributes shared by both paths (the learner adds ``coef_`` and
    ``intercept_`` from ``W`` and ``b``), with the edge-of-grid warning."""
    if scores is not None:
        warn_grid_edge(type(model).__name__, alpha, alphas, model.alpha_scale, stacklevel=4)
    return {"features_": model.features_, "n_features_out_": model.n_features_out_,
            "alpha_": alpha, "alphas_": alphas, "validation_scores_": scores,
            "solver_": solver, "n_iter_": np.asarray(n_iter, dtype=int),
            "gram_dtype_": model.gram_dtype,
            "_W": np.ascontiguousarray(W), "_b": b}


# ------------------------------------------------------------------------------- publish
def working_copy(est):
    """A shallow copy of ``est`` (same class, same attributes) for a fit to work on: input
    validation and the fit write to it, never to ``est``."""
    work = object.__new__(type(est))
    work.__dict__ = dict(est.__dict__)
    return work


#: private fitted attributes of the learners (the public ones end in "_")
_PRIVATE_FITTED = frozenset({"_label_binarizer"})


def _is_fitted(key):
    return (key.endswith("_") and not key.startswith("__")) or key in _PRIVATE_FITTED


def publish(est, work, state):
    """Replace every fitted attribute of ``est`` by ``state`` in one step.

    The new ``__dict__`` -- ``est``'s parameters and other non-fitted attributes, the input
    description that validation left on the working copy ``work`` (``n_features_in_`` and,
    when the input had column names, ``feature_names_in_``) and ``state`` -- is built aside and
    assigned in one operation: a concurrent ``predict`` sees the old or the new fit, and an
    exception before this point leaves the old one whole.  Returns ``est``."""
    new = {k: v for k, v in est.__dict__.items() if not _is_fitted(k)}
    for k in ("n_features_in_", "feature_names_in_"):
        if k in work.__dict__:
            new[k] = work.__dict__[k]
    new.update(state)
    est.__dict__ = new
    return est
