"""paper_figures: learners (random-feature ridge, exact kernel ridge), timed fits and the
bandwidth search (protocol: paper_figures/__init__.py)."""

from __future__ import annotations

import os
import time

import numpy as np

import randfeat
from paper_figures._data import _subsample, median_distance
from paper_figures._features import derive_seed, make_features
from randfeat import ExactKernelRidge, RandomFeatureRidge, RandomFeatureRidgeClassifier

__all__ = ["ALPHAS", "SIGMA_FACTORS", "make_learner", "fit_exact", "timing_conditions",
           "describe_timing", "fit_timed", "select_sigma"]

ALPHAS = tuple(10.0 ** np.arange(-8, 1))
SIGMA_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0)


def make_learner(method, task, *, n, sigma, seed, alphas=ALPHAS, n_rows=None):
    feats = make_features(method, n, sigma, seed, n_rows=n_rows)
    cls = RandomFeatureRidgeClassifier if task != "regression" else RandomFeatureRidge
    kw = {}
    if method == "binning":
        kw = dict(tol=1e-6, max_iter=300)
    return cls(feats, alphas=alphas, alpha_scale="mean", selection="holdout", gram_dtype="float64",
               validation_fraction=0.2, chunk_size=4096,
               random_state=derive_seed(seed, "validation"), **kw)


def fit_exact(X, y, *, sigma, alphas=ALPHAS, search_rows=3000, seed=0):
    """Exact Gaussian kernel ridge (:class:`randfeat.ExactKernelRidge`, per-sample ``alphas``):
    alpha chosen by the estimator's validation split on at most ``search_rows`` training rows
    (a random subsample: the n x n system costs O(n^3)), then one solve on all rows."""
    idx = np.random.default_rng(seed).permutation(len(X))[:search_rows]
    search = ExactKernelRidge(sigma=sigma, alphas=alphas, alpha_scale="mean",
                              random_state=seed).fit(X[idx], y[idx])
    return ExactKernelRidge(sigma=sigma, alphas=search.alpha_, alpha_scale="mean").fit(X, y)


def timing_conditions():
    """What the fit times of a computation depend on, recorded next to them: the CPUs this
    process may use (affinity), the threads of randfeat's learners (``n_threads=None``), the
    BLAS threads in effect outside them (threadpoolctl), OMP_NUM_THREADS and the 1-minute load
    average when the computation starts."""
    from threadpoolctl import threadpool_info

    # randfeat's public configuration: the CPUs this process may use, which is also what the
    # learners' n_threads=None means
    cpus = randfeat.show_config(as_dict=True)["machine"]["usable_cpus"]
    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return dict(cpus=cpus, learner_threads=cpus,
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
    c0, t0 = time.process_time(), time.perf_counter()
    if method == "exact":
        model = fit_exact(data["Xtr"], data["ytr"], sigma=sigma, alphas=alphas, seed=seed)
    else:
        model = make_learner(method, data["task"], n=n, sigma=sigma, seed=seed, alphas=alphas,
                             n_rows=len(data["Xtr"]))
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
