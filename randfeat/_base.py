"""Shared scikit-learn plumbing of the randfeat transformers."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import validate_data

from randfeat._validation import check_n_threads, check_random_state

__all__ = ["RandomFeaturesBase"]

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class RandomFeaturesBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Base class: input validation, dtype tags, ``random_state`` and ``n_threads`` resolution.

    Subclasses declare ``_parameter_constraints`` (validated by ``fit`` through
    ``sklearn.base._fit_context``), set ``_n_features_out`` in ``fit`` (used by
    ``get_feature_names_out``) and never draw random numbers outside ``fit``.
    """

    def _validate_X(self, X, *, reset: bool, accept_sparse=False):
        """float32/float64 C-ordered finite array (ints become float64); checks n_features_in_.

        At transform time (``reset=False``) an input that is already what the kernels need --
        a finite, C-contiguous, non-empty float32/float64 ndarray with ``n_features_in_``
        columns, for an estimator fitted without feature names -- is returned as is after one
        ``sum`` (NaN/Inf propagate through it; an overflowing sum of finite values falls
        back to the full check): sklearn's ``validate_data`` costs ~50-300 us per call, which
        dominates one-vector latency.  Everything else goes through ``validate_data``.
        """
        if (not reset and type(X) is np.ndarray and X.ndim == 2 and X.dtype in _FAST_DTYPES
                and X.flags.c_contiguous and X.shape[0] > 0
                and X.shape[1] == getattr(self, "n_features_in_", -1)
                and not hasattr(self, "feature_names_in_")):
            with np.errstate(over="ignore", invalid="ignore"):
                if np.isfinite(X.sum()):
                    return X
        # Values near DBL_MAX are valid input: silence NumPy's overflow warning in sklearn's
        # finiteness fast path (it sums X before checking element-wise).
        with np.errstate(over="ignore", invalid="ignore"):
            return validate_data(
                self, X, reset=reset, accept_sparse=accept_sparse,
                dtype=[np.float64, np.float32], order="C", ensure_all_finite=True,
                ensure_min_samples=1)

    def _check_projections(self, n_bad, X):
        """Raise when the compiled kernel met non-finite projections (``n_bad`` > 0): finite
        but huge input can overflow w'x (float32 near 1e36, float64 near 1e306), and the
        features would silently be NaN."""
        if n_bad:
            raise ValueError(
                f"{type(self).__name__}.transform: the random projections of some rows of X "
                f"overflowed to a non-finite value ({X.dtype} input with entries up to "
                f"|x| = {float(np.max(np.abs(X))):.3g}), so their features would be NaN; "
                "rescale X (e.g. with sklearn.preprocessing.StandardScaler)"
                + (" or pass float64 input" if X.dtype == np.float32 else ""))

    def _rng(self) -> np.random.Generator:
        return check_random_state(self.random_state)

    def _n_threads(self) -> int:
        return check_n_threads(self.n_threads)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
