"""paper_figures: error metrics and their noise."""

from __future__ import annotations

import numpy as np

__all__ = ["rr_error", "rmse", "mean_std", "bootstrap_se", "noise"]


def rr_error(task, y, pred):
    """RR07 Table 1 metric in %: classification error, or ||pred - y|| / ||y|| for regression."""
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    if task == "regression":
        return 100.0 * float(np.linalg.norm(pred - y) / np.linalg.norm(y))
    return 100.0 * float(np.mean(pred != y))


def rmse(y, pred):
    return float(np.sqrt(np.mean((np.asarray(pred, float) - np.asarray(y, float)) ** 2)))


def mean_std(values):
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float("nan")


def bootstrap_se(metric, y, pred, *, seed, n_boot=1000):
    """Standard error of ``metric(y, pred)`` due to the finite test set: the standard deviation
    of the metric over ``n_boot`` resamples (with replacement) of the test points, for one
    fitted model.  This is the noise of a fixed split (e.g. a9a or COIL 2000), where repeated
    runs only vary the random features."""
    y, pred = np.asarray(y), np.asarray(pred)
    rng = np.random.default_rng(seed)
    vals = [metric(y[i], pred[i]) for i in
            (rng.integers(0, y.shape[0], y.shape[0]) for _ in range(n_boot))]
    return float(np.std(vals, ddof=1))


def noise(std_reps, se_test):
    """Noise of a reproduced figure: the larger of the spread over repetitions (nan with one
    repetition) and the mean bootstrap standard error of the test metric (nan if not known)."""
    vals = [v for v in (std_reps, se_test) if v is not None and np.isfinite(v)]
    return max(vals) if vals else 0.0
