"""Validation of what the ridge code is given: targets, sample weights and penalties (one place,
so that every entry point -- the learners, :class:`~randfeat.linear.RidgeStatistics`, exact
kernel ridge, the dask path -- says the same thing about the same mistake)."""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_ALPHAS", "DEFAULT_ALPHAS_MEAN", "as_2d_targets", "check_alphas",
           "check_sample_weight", "penalties"]

#: default grid of ``alphas`` for ``alpha_scale="sum"`` (scikit-learn's scale)
DEFAULT_ALPHAS = tuple(10.0 ** np.arange(-3, 6))
#: default grid of ``alphas`` for ``alpha_scale="mean"`` (per sample; randfeat 0.1's default)
DEFAULT_ALPHAS_MEAN = tuple(10.0 ** np.arange(-8, 1))


def as_2d_targets(y, who):
    """``y`` as a float64 (n, K) array: 1-D (n,) becomes (n, 1); zero rows are allowed."""
    y = np.asarray(y)
    if y.ndim not in (1, 2):
        raise ValueError(f"{who}: y must be 1-D (n_samples,) or 2-D (n_samples, n_targets), got "
                         f"an array of shape {y.shape}")
    if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
        raise TypeError(f"{who}: y must be real numeric, got dtype {y.dtype}")
    y = np.asarray(y, dtype=np.float64)
    return y.reshape(y.shape[0], 1 if y.ndim == 1 else y.shape[1])


def check_sample_weight(sample_weight, n, who, some_positive=False):
    """``sample_weight`` as a float64 (n,) array (None stays None); finite and >= 0 (and, with
    ``some_positive``, not all zero)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.ndim == 0:
        w = np.full(n, w)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{who}: sample_weight must be a scalar or of shape ({n},) (one weight "
                         f"per sample), got shape {w.shape}")
    if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
        raise TypeError(f"{who}: sample_weight must be real numeric, got dtype {w.dtype}")
    w = np.asarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{who}: sample_weight contains NaN or infinity; pass finite weights")
    if np.any(w < 0):
        raise ValueError(f"{who}: sample_weight must be >= 0, got a minimum of {w.min()!r}")
    if some_positive and n and not np.any(w > 0):
        raise ValueError(f"{who}: sample_weight is zero for every sample; give some samples a "
                         f"positive weight")
    return w


def check_alphas(alphas, alpha_scale="sum", allow_single_zero=False):
    """The candidate penalties ``alphas`` of a learner as a float64 1-D array (None: the default
    grid of ``alpha_scale``); every value finite and > 0 -- or, with ``allow_single_zero``, a
    single 0 (ridgeless regression: the minimum-norm least-squares solution)."""
    if alphas is None:
        grid = DEFAULT_ALPHAS_MEAN if alpha_scale == "mean" else DEFAULT_ALPHAS
        return np.array(grid, dtype=np.float64)
    a = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a positive number or a non-empty 1-D sequence of "
                         f"positive numbers, got {alphas!r}")
    if allow_single_zero and a.size == 1 and a[0] == 0:
        return a
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"alphas must all be finite and > 0, got {alphas!r}; use e.g. "
                         f"np.logspace(-3, 5, 9) (or None for the default grid)")
    return a


def penalties(alphas, alpha_scale, weight_sum):
    """The penalties on the summed (weighted) squared errors that ``alphas`` stand for:
    ``alphas`` itself (``alpha_scale="sum"``, scikit-learn's ``Ridge`` scale), or
    ``weight_sum * alphas`` ("mean": the penalty per sample, added to the weighted mean squared
    error)."""
    alphas = np.asarray(alphas, dtype=np.float64)
    return alphas if alpha_scale == "sum" else weight_sum * alphas
