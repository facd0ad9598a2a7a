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

3. **select** alpha by the learner's ``selection``: ``"holdout"`` (:func:`best_alpha`: the
   smallest validation score, ties to the largest alpha), or from one eigendecomposition
   (:func:`fit_spectral` on the statistics, the dual one on a feature matrix):
   ``"loo"`` (efficient leave-one-out; on the statistics a second pass over the rows gives
   the hat diagonals), ``"gcv"``, ``"evidence"`` (the log marginal likelihood, maximised)
   -- :mod:`randfeat.linear._selection`;
4. **publish** (:func:`publish`): every fitted attribute is computed aside -- the estimator is
   never written during a fit -- and assigned in one step, so an exception of any kind leaves
   the previous fit whole.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg.lapack as _lapack
import scipy.sparse as sp
from sklearn.base import clone

from randfeat._base import RandomFeaturesBase
from randfeat._validation import check_random_state
from randfeat.linear import _oneblas
from randfeat.linear._features import DENSE_MAPS, merge_duplicate_rows
from randfeat.linear._inputs import check_alphas, penalties
from randfeat.linear._memory import trim_heap
from randfeat.linear._posterior import Posterior
from randfeat.linear._precision import effective_gram_dtype
from randfeat.linear._selection import SPECTRAL, LooRows, Spectrum, choose
from randfeat.linear._solvers import Design, GramConsumed, SolveOptions, resolve_solver
from randfeat.linear._statistics import RidgeStatistics

__all__ = ["AlphaAtGridEdgeWarning", "FitResult", "InMemoryRows", "Plan", "best_alpha",
           "fit_design", "fit_in_memory", "fit_spectral", "fit_statistics", "plan_fit",
           "publish", "validation_split", "working_copy"]


class AlphaAtGridEdgeWarning(UserWarning):
    """The ``alpha`` chosen (on the validation split, by leave-one-out, GCV or the evidence) is
    the smallest or the largest of the grid: the best penalty may lie outside it; widen
    ``alphas`` on that side."""


class Plan(NamedTuple):
    """What a fit decides before it reads the rows (:func:`plan_fit`)."""

    #: "loo", "gcv", "evidence", "holdout", or None (a single alpha: no selection)
    selection: str | None
    #: rows with a positive weight (the n of GCV and of the evidence)
    n_eff: int
    #: sum of log s_i over them (the evidence's constant; 0 without weights)
    sum_log_w: float
    #: keep a square root of the posterior covariance (the regressor's store_covariance)
    posterior: bool


class FitResult(NamedTuple):
    """What a fit computed, before the learner turns it into attributes."""

    W: np.ndarray
    b: np.ndarray
    alpha: float
    validation_scores: Any
    solver: str
    n_iter: np.ndarray
    selection: str | None = None
    #: index in the grid of the best alpha (the edge warning), None without selection
    grid_index: int | None = None
    curve: Any = None
    results: Any = None
    noise_variance: Any = None
    log_evidence: Any = None
    posterior: Any = None
    #: the final penalty on the summed scale
    penalty: float | None = None


_HOW = {"holdout": "on the validation split", "loo": "by leave-one-out", "gcv": "by GCV",
        "evidence": "by the evidence (log marginal likelihood)"}


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


def warn_grid_edge(who, index, alphas, alpha_scale, selection, stacklevel):
    """:class:`AlphaAtGridEdgeWarning` when the best alpha of the grid, ``alphas[index]``, is
    its smallest or largest value."""
    alpha = alphas[index]
    if alpha in (alphas.min(), alphas.max()):
        side = "smallest" if alpha == alphas.min() else "largest"
        warnings.warn(
            f"{who}: the alpha chosen {_HOW.get(selection, 'on the grid')}, {alpha:g}, is the "
            f"{side} of the grid alphas={alphas.tolist()}; the best penalty may lie beyond it: "
            f"extend the grid on that side (alpha_scale={alpha_scale!r})",
            AlphaAtGridEdgeWarning, stacklevel=stacklevel + 1)


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
                    scores += np.array([_oneblas.dot(wc, model._row_losses(P[:, j], Yc))
                                        for j in range(L)])
            del Z
        stats._release()
        if merged is not None:   # the rows' own sums of squares and count, not the groups'
            stats.y_sq_sum_ = y_sq
            stats.n_samples_ = n_rows
        return stats, scores

    def loo(self, scorer):
        """One pass over every row (the chunks of :meth:`statistics`, features recomputed):
        the summed leave-one-out losses ``model._loo_sums`` of the predictions ``scorer``
        (:class:`~randfeat.linear._selection.LooRows`) gives, shape (L, m)."""
        model, X, Y, w, feats = self.model, self.X, self.Y, self.w, self.feats
        sums = None
        for sl in model._chunks(X.shape[0]):
            Z = model._chunk_features(X[sl], feats)
            if sp.issparse(Z):
                Z = Z.toarray()
            wc = None if w is None else w[sl]
            part = model._loo_sums(scorer(Z, Y[sl], wc), Y[sl], wc)
            sums = part if sums is None else sums + part
            del Z
        return sums


def _yss(stats, fit_intercept):
    """:math:`\\sum_i s_i (y_i - \\bar y)^2` per target from the statistics."""
    if not fit_intercept:
        return stats.y_sq_sum_.copy()
    my = stats.y_sum_ / stats.weight_sum_
    return np.maximum(stats.y_sq_sum_ - stats.weight_sum_ * my * my, 0.0)


def _posterior_kw(stats_or_sum, fit_intercept, mz, noise):
    S = stats_or_sum.weight_sum_ if hasattr(stats_or_sum, "weight_sum_") else stats_or_sum
    return dict(mz=mz, weight_sum=S, fit_intercept=fit_intercept, noise_variance=noise)


def fit_statistics(model, source, method, alphas, split, validation_weight, who, plan=None):
    """The "statistics" fit (module docstring, step 2) of ``model`` (a working copy whose
    ``features_`` and ``n_features_out_`` are set) on ``source`` with a single alpha or the
    hold-out selection: a :class:`FitResult`.

    ``source.statistics(rows, path)`` gives ``(RidgeStatistics, summed scores)``;
    ``validation_weight`` divides the summed validation scores (the number of validation rows,
    or their weight sum)."""
    tr, va = split
    fi = model.fit_intercept
    best = None
    if va is None:
        stats, _ = source.statistics(None)
        scores = None
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
    alpha = float(alphas[0 if best is None else best])
    trim_heap()   # the chunks' freed features, before the solve's own memory
    yss = _yss(stats, fi)
    S = stats.weight_sum_
    pen = penalties([alpha], model.alpha_scale, S)
    want = plan is not None and plan.posterior
    state = {}
    try:
        W, b, used = stats._path(pen, fi, method, who, overwrite=True, state=state)
        post = _final_posterior(state, pen[0], fi, want) if want else None
    except GramConsumed:
        # rare (A + nαI not numerically positive definite, e.g. alpha = 0 with more features
        # than rows): the in-place attempt consumed the statistics; the rows are accumulated
        # again and solved on a copy, which falls back to the eigen-solution
        stats, _ = source.statistics(None)
        state = {}
        W, b, used = stats._path(pen, fi, method, who, state=state)
        post = _final_posterior(state, pen[0], fi, want, stats) if want else None
    c, mz = state["c"], state["mz"]
    energy = yss - np.einsum("dk,dk->k", c, W[0])
    noise = _noise(energy, plan, fi)
    if post is not None:
        post = post(**_posterior_kw(S, fi, mz, noise))
    return FitResult(W[0], b[0], alpha, scores, used[0], np.ones(W.shape[2], dtype=int),
                     selection="holdout" if best is not None else None, grid_index=best,
                     curve=scores, noise_variance=noise, posterior=post, penalty=float(pen[0]))


def _noise(energy, plan, fit_intercept):
    """The profiled noise variance E / (n - 1) (n without an intercept) per target."""
    n_eff = plan.n_eff if plan is not None else 0
    return np.maximum(energy, 0.0) / max(n_eff - int(fit_intercept), 1)


def _final_posterior(state, penalty, fit_intercept, want, stats=None):
    """A constructor of the :class:`~randfeat.linear._posterior.Posterior` of the final solve
    (a callable taking the remaining keywords): the in-place Cholesky factor, the path's
    eigendecomposition, or a factorisation of A (left whole by the float32 refined solve)."""
    if "factor" in state:
        M = state["factor"]
        return lambda **kw: Posterior.from_cholesky(M, **kw)
    if state.get("eig") is not None:
        ev, Q, _ = state["eig"]
        return lambda **kw: Posterior.from_eigen(ev, Q, penalty, **kw)
    A = state.get("A")
    if A is None:   # pragma: no cover - every statistics solver leaves one of the three
        raise RuntimeError("no factorisation to build the posterior from")
    D = A.shape[0]
    A.flat[::D + 1] += penalty      # A is the solve's own (consumed) matrix
    M, info = _lapack.dpotrf(A, lower=1, clean=0, overwrite_a=1)
    state["A"] = None
    if info != 0:
        raise GramConsumed("the float64 factorisation of A + alpha I for the posterior failed")
    return lambda **kw: Posterior.from_cholesky(M, **kw)


def _spectral_curves(model, spectrum, alphas, pens, selection, loo_sums=None):
    """The criteria along the grid (a dict, ``selection_results_``), the curve of
    ``selection`` and the index of its best alpha."""
    results = {"alphas": alphas.copy(), "df": spectrum.df(pens), "gcv": spectrum.gcv(pens),
               "log_evidence": spectrum.log_evidence(pens),
               "noise_variance": spectrum.noise_variance(pens)}
    if loo_sums is not None:
        results.update(model._loo_results(loo_sums / spectrum.weight_sum))
    key = {"loo": "loo", "gcv": "gcv", "evidence": "log_evidence"}[selection]
    curve = results[key]
    best = choose(curve, alphas, maximise=selection == "evidence")
    return results, curve, best


def _refine_evidence(spectrum, pens, best):
    """The maximiser of the evidence between the neighbours of the best grid penalty."""
    order = np.argsort(pens)
    pos = int(np.flatnonzero(order == best)[0])
    lo = pens[order[max(pos - 1, 0)]]
    hi = pens[order[min(pos + 1, len(pens) - 1)]]
    return spectrum.evidence_maximiser(float(lo), float(hi)) if lo > 0 else float(pens[best])


def fit_spectral(model, source, alphas, plan, who, stats=None):
    """The "statistics" fit with a selection from the eigendecomposition of the statistics:
    one pass for the statistics of all rows, one eigendecomposition of the centred Gram (made
    in the Gram itself: no copy), the criteria of every alpha, and -- for leave-one-out -- a
    second pass over the rows for the hat diagonals (:class:`~randfeat.linear._selection.
    LooRows`).  The coefficients of the chosen alpha come from the same decomposition (no
    other solve).  With ``stats`` given (``partial_fit``), those statistics are decomposed on
    a copy (they are kept) and there is no source (no leave-one-out).  Returns a
    :class:`FitResult`."""
    fi = model.fit_intercept
    consume = stats is None
    if consume:
        stats, _ = source.statistics(None)
    S = stats.weight_sum_
    pens = penalties(alphas, model.alpha_scale, S)
    trim_heap()
    spectrum = Spectrum.from_statistics(stats, fi, consume=consume, n_eff=plan.n_eff,
                                        sum_log_w=plan.sum_log_w, who=who)
    del stats
    loo_sums = None
    if plan.selection == "loo":
        dtype = np.float32 if model.gram_dtype == "float32" else np.float64
        loo_sums = source.loo(LooRows(spectrum, pens, dtype=dtype))
    results, curve, best = _spectral_curves(model, spectrum, alphas, pens, plan.selection,
                                            loo_sums)
    pen = float(pens[best])
    if plan.selection == "evidence":
        pen = _refine_evidence(spectrum, pens, best)
    alpha = pen if model.alpha_scale == "sum" else pen / S
    if pen == pens[best]:
        alpha = float(alphas[best])
    W, b = spectrum.coef(pen)
    noise = spectrum.noise_variance([pen])[0]
    logev = float(spectrum.log_evidence([pen])[0])
    post = None
    if plan.posterior:
        post = Posterior.from_eigen(spectrum.ev, spectrum.V, pen, overwrite=True,
                                    **_posterior_kw(S, fi, spectrum.mz, noise))
    return FitResult(W, b, alpha, None, "eigh", np.ones(W.shape[1], dtype=int),
                     selection=plan.selection, grid_index=best, curve=curve, results=results,
                     noise_variance=noise, log_evidence=logev, posterior=post, penalty=pen)


# ------------------------------------------------------------------------------- design
def fit_design(model, method, spec, X, Y, w, alphas, split, who, plan=None):
    """The "design" fit (module docstring, step 2): the whole feature matrix in memory, the
    alpha path from the largest penalty down with one ``state`` (warm starts, one
    preconditioner) for the hold-out selection, or the criteria of the dual eigendecomposition
    (:meth:`~randfeat.linear._selection.Spectrum.from_design`, n x n) for "loo", "gcv" and
    "evidence"; then the final solve on all rows with a fresh state.  Returns a
    :class:`FitResult`."""
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
    best = None
    selection = None if plan is None else plan.selection
    results = curve = logev = None
    pen = None
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
        curve = scores
    design = Design(Z, Y, w)
    S = design.weight_sum()
    spectrum = None
    if selection in SPECTRAL:
        pens = penalties(alphas, model.alpha_scale, S)
        Zs = Z.astype(np.float64) if Z.dtype != np.float64 else Z
        spectrum = Spectrum.from_design(Zs, Y, w, model.fit_intercept, n_eff=plan.n_eff,
                                        sum_log_w=plan.sum_log_w, who=who)
        loo_sums = None
        if selection == "loo":
            loo_sums = model._loo_sums(spectrum.loo_predictions(pens), Y, w)
        results, curve, best = _spectral_curves(model, spectrum, alphas, pens, selection,
                                                loo_sums)
        pen = float(pens[best])
        if selection == "evidence":
            pen = _refine_evidence(spectrum, pens, best)
        logev = float(spectrum.log_evidence([pen])[0])
    alpha = float(alphas[0 if best is None else best])
    if pen is None:
        pen = float(penalties([alpha], model.alpha_scale, S)[0])
    elif pen != penalties([alpha], model.alpha_scale, S)[0]:   # the evidence's maximiser
        alpha = pen if model.alpha_scale == "sum" else pen / S
    sol = spec.function(design, pen, options, {})
    W = sol.coef
    if spectrum is not None:
        noise = spectrum.noise_variance([pen])[0]
    else:   # E = RSS + lambda |W|^2 from the rows
        Wz = W if Z.dtype == np.float64 else W.astype(Z.dtype)   # no float64 copy of Z
        R = Y - (np.asarray(_oneblas.matmul(Z, Wz), dtype=np.float64).reshape(Y.shape)
                 + sol.intercept)
        rss = (R * R).sum(axis=0) if w is None else _oneblas.matmul(w, R * R)
        noise = _noise(rss + pen * (W * W).sum(axis=0), plan, model.fit_intercept)
    if cols is not None:
        Wfull = np.zeros((D, W.shape[1]))
        Wfull[cols] = W
        W = Wfull
    return FitResult(W, sol.intercept, alpha, scores, method, sol.n_iter,
                     selection=selection if best is not None else None, grid_index=best,
                     curve=curve, results=results, noise_variance=noise, log_evidence=logev,
                     penalty=pen)


# ------------------------------------------------------------------------------- the fit
def plan_fit(model, alphas, w, n, who):
    """The :class:`Plan` of a fit: the selection (None for a single alpha), the rows with a
    positive weight, the weights' log sum, and whether to keep the posterior."""
    selection = None if alphas.size <= 1 else model.selection
    if w is None:
        n_eff, slw = n, 0.0
    else:
        pos = w > 0
        n_eff, slw = int(np.count_nonzero(pos)), float(np.log(w[pos]).sum())
    if selection in SPECTRAL and n_eff < 2:
        raise ValueError(f"{who}: choosing alpha by selection={selection!r} needs at least "
                         f"2 samples with a positive weight, got n_samples={n_eff}; pass a "
                         f"single alpha instead")
    return Plan(selection, n_eff, slw, bool(getattr(model, "store_covariance", False)))


def fit_in_memory(model, X, Y, w, who):
    """Fit the working copy ``model`` on in-memory ``X`` (validated), ``Y`` (n, K) float64 and
    weights ``w``; returns the fitted state (a dict of attributes) without publishing it."""
    alphas = check_alphas(model.alphas, model.alpha_scale, allow_single_zero=True)
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
    plan = plan_fit(model, alphas, w, n, who)
    if plan.posterior and spec.data != "statistics":
        raise ValueError(f"{who}: store_covariance=True keeps a square root of the posterior "
                         f"covariance of the D weights, which the solvers on the statistics "
                         f"make; solver={method!r} does not: use solver='cholesky' or 'eigh' "
                         f"(dense features)")
    split = validation_split(n, alphas.size if plan.selection == "holdout" else 1,
                             model.validation_fraction, model.random_state, who)
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
        source = InMemoryRows(model, X, Y, w)
        if plan.selection in SPECTRAL:
            res = fit_spectral(model, source, alphas, plan, who)
        else:
            res = fit_statistics(model, source, method, alphas, split, validation_weight, who,
                                 plan)
    else:
        res = fit_design(model, method, spec, X, Y, w, alphas, split, who, plan)
    return fitted_state(model, res, alphas, who)


def fit_partial(work, est, X, y, w, first, who):
    """``partial_fit`` of the regressor: the working copy ``work`` (validated), the estimator
    ``est`` (its ``statistics_`` are copied, never written), the new rows; returns the fitted
    state without publishing it (see ``RandomFeatureRidge.partial_fit``)."""
    alphas = check_alphas(work.alphas, work.alpha_scale, allow_single_zero=True)
    Y = y.reshape(len(y), -1)
    if first:
        feats = (None if work.features in (None, "passthrough")
                 else clone(work.features).fit(X))
        work.__dict__["features_"] = feats
        if type(feats) in DENSE_MAPS:
            D, sparse_out = int(feats._n_features_out), False
        else:
            probe = work._transform(X[:1])
            D, sparse_out = probe.shape[1], sp.issparse(probe)
        work.__dict__["n_features_out_"] = D
        # "auto" is float64 here: the floor of randfeat.linear._precision grows with the weight
        # sum of all the rows, which partial_fit does not know in advance
        dtype = "float64" if work.gram_dtype == "auto" else work.gram_dtype
        stats, n_eff, slw, y_ndim = RidgeStatistics(dtype), 0, 0.0, y.ndim
    else:
        feats, D = est.features_, est.n_features_out_
        sparse_out = False
        n_eff, slw, y_ndim = est._partial
        if y.ndim != y_ndim or Y.shape[1] != est.statistics_.n_targets:
            raise ValueError(f"{who}: y has shape {y.shape}; the previous calls gave "
                             f"{est.statistics_.n_targets} target(s) as a "
                             f"{y_ndim}-D array: pass the same targets at every call")
        stats = est.statistics_.copy()
    method, spec = resolve_solver(work.solver, sparse_out, f"{who}: solver")
    if spec.data != "statistics":
        raise ValueError(f"{who}: solver={work.solver!r} needs the whole feature matrix; "
                         f"partial_fit accumulates the statistics: use solver='auto' (dense "
                         f"features), 'cholesky' or 'eigh'")
    selection = None if alphas.size <= 1 else work.selection
    if selection == "holdout":
        raise ValueError(f"{who}: selection='holdout' needs a validation split of the rows, "
                         f"which partial_fit does not keep; use selection='gcv' or "
                         f"'evidence' (from the statistics alone), or a single alpha")
    if selection == "loo":
        selection = "gcv"   # the rotation-invariant leave-one-out: statistics only
    feats_run = work._feature_map()
    for sl in work._chunks(X.shape[0]):
        stats._update(work._chunk_features(X[sl], feats_run), Y[sl],
                      None if w is None else w[sl])
    stats._release()
    if w is None:
        n_eff += X.shape[0]
    else:
        pos = w > 0
        n_eff += int(np.count_nonzero(pos))
        slw += float(np.log(w[pos]).sum())
    if stats.weight_sum_ <= 0:
        raise ValueError(f"{who}: every sample weight so far is zero; give some samples a "
                         f"positive weight")
    plan = plan_fit(work, alphas, None, n_eff, who)._replace(selection=selection,
                                                             sum_log_w=slw)
    if selection is not None:
        res = fit_spectral(work, None, alphas, plan, who, stats=stats)
    else:
        res = _solve_kept(work, stats, method, alphas, plan, who)
    state = fitted_state(work, res, alphas, who)
    state.update(statistics_=stats, _partial=(n_eff, slw, y_ndim), _y_ndim=y_ndim)
    return state


def _solve_kept(model, stats, method, alphas, plan, who):
    """One penalty solved on statistics that are kept (a copy of A is factorised)."""
    fi = model.fit_intercept
    S = stats.weight_sum_
    pen = penalties(alphas[:1], model.alpha_scale, S)
    state = {}
    W, b, used = stats._path(pen, fi, method, who, state=state)
    post = _final_posterior(state, pen[0], fi, True) if plan.posterior else None
    energy = _yss(stats, fi) - np.einsum("dk,dk->k", state["c"], W[0])
    noise = _noise(energy, plan, fi)
    if post is not None:
        post = post(**_posterior_kw(S, fi, state["mz"], noise))
    return FitResult(W[0], b[0], float(alphas[0]), None, used[0],
                     np.ones(W.shape[2], dtype=int), noise_variance=noise, posterior=post,
                     penalty=float(pen[0]))


def fitted_state(model, res, alphas, who):
    """The fitted attributes shared by both paths (the learner adds ``coef_`` and
    ``intercept_`` from ``_W`` and ``_b``), with the edge-of-grid warning."""
    if res.grid_index is not None:
        warn_grid_edge(type(model).__name__, res.grid_index, alphas, model.alpha_scale,
                       res.selection, stacklevel=4)
    state = {"features_": model.features_, "n_features_out_": model.n_features_out_,
             "alpha_": float(res.alpha), "alphas_": alphas,
             "validation_scores_": res.validation_scores, "solver_": res.solver,
             "n_iter_": np.asarray(res.n_iter, dtype=int), "selection_": res.selection,
             "selection_curve_": res.curve, "selection_results_": res.results,
             "gram_dtype_": model.gram_dtype,
             "_W": np.ascontiguousarray(res.W), "_b": res.b}
    state["log_marginal_likelihood_"] = res.log_evidence
    if getattr(model, "_bayesian", False):
        noise = np.asarray(res.noise_variance, dtype=np.float64)
        pen = res.penalty
        amp = noise / pen if pen > 0 else np.full_like(noise, np.inf)
        state.update(noise_variance_=noise, amplitude_=amp, _posterior=res.posterior)
    return state


# ------------------------------------------------------------------------------- publish
def working_copy(est):
    """A shallow copy of ``est`` (same class, same attributes) for a fit to work on: input
    validation and the fit write to it, never to ``est``."""
    work = object.__new__(type(est))
    work.__dict__ = dict(est.__dict__)
    return work


#: private fitted attributes of the learners (the public ones end in "_")
_PRIVATE_FITTED = frozenset({"_label_binarizer", "_posterior", "_partial"})


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
