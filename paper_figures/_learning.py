"""paper_figures: learners (random-feature ridge, exact kernel ridge), timed fits and the
bandwidth search (protocol: paper_figures/_common.py)."""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.linalg

from paper_figures._data import _subsample, median_distance
from paper_figures._features import derive_seed, make_features
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier

__all__ = ["ALPHAS", "SIGMA_FACTORS", "make_learner", "ExactKernelRidge", "timing_conditions",
           "describe_timing", "fit_timed", "select_sigma"]

ALPHAS = tuple(10.0 ** np.arange(-8, 1))
SIGMA_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0)


def make_learner(method, task, *, n, sigma, seed, alphas=ALPHAS, n_rows=None):
    feats = make_features(method, n, sigma, seed, n_rows=n_rows)
    cls = RandomFeatureRidgeClassifier if task != "regression" else RandomFeatureRidge
    kw = {}
    if method == "binning":
        kw = dict(tol=1e-6, max_iter=300)
    return cls(feats, alphas=alphas, alpha_scale="mean", validation_fraction=0.2, chunk_size=4096,
               random_state=derive_seed(seed, "validation"), **kw)


class ExactKernelRidge:
    """Exact Gaussian kernel ridge regression (dense n x n Cholesky), alpha by validation.

    Solves (K + n alpha I) c = y - mean(y).  ``alpha`` is chosen on a 20% validation split of at
    most ``search_rows`` training rows (one Cholesky per candidate), then the full system is
    solved once.
    """

    def __init__(self, sigma, *, alphas=ALPHAS, search_rows=3000, seed=0):
        self.sigma, self.alphas, self.search_rows, self.seed = sigma, alphas, search_rows, seed

    def _K(self, A, B):
        from sklearn.metrics.pairwise import rbf_kernel
        return rbf_kernel(A, B, gamma=1.0 / (2 * self.sigma ** 2))

    def _solve(self, X, y, alpha):
        K = self._K(X, X)
        K[np.diag_indices_from(K)] += len(X) * alpha
        cf = scipy.linalg.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
        return scipy.linalg.cho_solve(cf, y, check_finite=False)

    def fit(self, X, y):
        rng = np.random.default_rng(self.seed)
        idx = rng.permutation(len(X))[: self.search_rows]
        n_val = max(1, len(idx) // 5)
        va, tr = idx[:n_val], idx[n_val:]
        ym = y[tr].mean()
        Kv = self._K(X[va], X[tr])
        errs = []
        for a in self.alphas:
            try:
                c = self._solve(X[tr], y[tr] - ym, a)
                errs.append(float(np.mean((Kv @ c + ym - y[va]) ** 2)))
            except np.linalg.LinAlgError:
                errs.append(np.inf)
        self.validation_scores_ = np.array(errs)
        self.alpha_ = float(self.alphas[int(np.argmin(errs))])
        self.mean_ = y.mean()
        self.X_ = X
        self.coef_ = self._solve(X, y - self.mean_, self.alpha_)
        return self

    def predict(self, X):
        out = np.empty(len(X))
        for s in range(0, len(X), 2048):
            out[s:s + 2048] = self._K(X[s:s + 2048], self.X_) @ self.coef_ + self.mean_
        return out


def timing_conditions():
    """What the fit times of a computation depend on, recorded next to them: the CPUs this
    process may use (affinity), the threads of randfeat's learners (``n_threads=None``), the
    BLAS threads in effect outside them (threadpoolctl), OMP_NUM_THREADS and the 1-minute load
    average when the computation starts."""
    from threadpoolctl import threadpool_info

    from randfeat._validation import check_n_threads, effective_n_cpus
    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return dict(cpus=effective_n_cpus(), learner_threads=check_n_threads(None),
                blas_threads=max(blas) if blas else None,
                omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
                load_average=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)


def describe_timing(t):
    """One phrase for :func:`timing_conditions`'s record (``None`` for rows computed before it
    was recorded)."""
    if not t:
        return "timing conditions not recorded"
    learner = (f" ({t['learner_threads']} learner threads, single-threaded BLAS in each)"
               if "learner_threads" in t else "")
    return (f"timed on {t['cpus']} CPU(s){learner}, {t['blas_threads']} BLAS thread(s) "
            f"outside the learner, load {t['load_average']}")


def fit_timed(method, data, *, n, sigma, seed, alphas=ALPHAS):
    """Fit on data['Xtr'] and predict data['Xte']: (predictions, fit wall seconds, model, fit CPU
    seconds).  CPU seconds (``time.process_time``, all threads of the process) measure the work
    independently of other processes competing for the cores."""
    if method == "exact":
        model = ExactKernelRidge(sigma, alphas=alphas, seed=seed)
    else:
        model = make_learner(method, data["task"], n=n, sigma=sigma, seed=seed, alphas=alphas,
                             n_rows=len(data["Xtr"]))
    c0, t0 = time.process_time(), time.perf_counter()
    model.fit(data["Xtr"], data["ytr"])
    fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return model.predict(data["Xte"]), fit_s, model, cpu_s


def select_sigma(method, data, *, n, seed, factors=SIGMA_FACTORS, search_rows=4000,
                 alphas=ALPHAS, max_extend=2):
    """Bandwidth by validation on at most ``search_rows`` training rows (see module docstring).

    Returns (sigma, {sigma: validation error}).  The validation error is the best (over
    ``alphas``) validation MSE / error rate of a RandomFeatureRidge(Classifier) fit on the
    subsample (``search_rows=None``: every training row).  While the best sigma is at an edge of
    the grid, the grid is extended by a factor 2 that way, at most ``max_extend`` times.
    """
    p = 1 if method == "binning" else 2
    X, y = data["Xtr"], data["ytr"]
    rng = np.random.default_rng(derive_seed(seed, "search"))
    idx = _subsample(y, search_rows, rng, data["task"] != "regression")
    Xs, ys = X[idx], y[idx]
    ref = median_distance(Xs, p=p, seed=derive_seed(seed, "median"))
    scores = {}
    gauss_method = "rks" if method == "exact" else method

    def score(s):
        model = make_learner(gauss_method, data["task"], n=n, sigma=s, seed=seed,
                             n_rows=len(Xs), alphas=alphas)
        model.fit(Xs, ys)
        scores[s] = float(np.min(model.validation_scores_))

    for f in factors:
        score(ref * f)
    # extend the grid (x2 / /2, at most twice each way) while the best is at its edge
    for _ in range(max_extend):
        best = min(scores, key=lambda s: (scores[s], -s))
        if best == max(scores) and len(scores) > 1:
            score(2 * best)
        elif best == min(scores) and len(scores) > 1:
            score(best / 2)
        else:
            break
    best = min(scores, key=lambda s: (scores[s], -s))
    return best, scores
