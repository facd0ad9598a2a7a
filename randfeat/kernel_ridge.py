r"""Exact kernel ridge regression with a shift-invariant kernel (the reference for random features).

:class:`ExactKernelRidge` solves the same problem as :class:`randfeat.RandomFeatureRidge`, with the
exact kernel :math:`k` in place of the random-feature kernel :math:`z(x)^\top z(y)`:

.. math::

    \min_{f \in \mathcal H,\, b}\; \frac1n \sum_{i=1}^n \bigl(y_i - f(x_i) - b\bigr)^2
    + \alpha \lVert f \rVert_{\mathcal H}^2 ,

with the same *per-sample* penalty ``alpha`` and the same unpenalised intercept.  By the
representer theorem :math:`f = \sum_i c_i\, \tilde k(\cdot, x_i)`, where with an intercept the
kernel is centred on the training rows (:math:`\tilde K = H K H`, :math:`H = I - \frac1n 1 1^\top`,
the dual of the centred normal equations of the feature-space solver), and

.. math::

    (\tilde K + n\alpha I)\, c = y - \bar y, \qquad
    \hat y(x) = \tilde k(x)^\top c + \bar y,\quad
    \tilde k(x)_i = k(x, x_i) - \overline{k(x, \cdot)} - \overline{k(\cdot, x_i)}
                    + \overline{k(\cdot,\cdot)} .

So for a random-feature map whose kernel :math:`z(x)^\top z(y)` tends to :math:`k(x, y)`
(Rahimi & Recht 2007, Claim 1) the fitted ``RandomFeatureRidge(features=z, alphas=alpha)``
tends to ``ExactKernelRidge(kernel=k, alphas=alpha)`` as the number of features grows; at
``alpha -> 0`` with more features than rows both tend to the kernel interpolant.

The system is solved by a Cholesky factorisation (:func:`scipy.linalg.cho_factor`).  A path of
several ``alphas`` is solved from one eigendecomposition :math:`\tilde K = Q \Lambda Q^\top`
(:math:`c_\alpha = Q(\Lambda + n\alpha)^{-1}Q^\top y_c`, :meth:`ExactKernelRidge.predict_path`);
with several alphas :meth:`~ExactKernelRidge.fit` picks one on a random validation split exactly
as :class:`randfeat.RandomFeatureRidge` does, then refits on all rows by Cholesky.  Memory is
:math:`O(n^2)` and time :math:`O(n^3)`: meant for a few thousand rows (a subsample of a large
training set).

References
----------
.. [RR07] A. Rahimi and B. Recht. Random features for large-scale kernel machines. NIPS 2007.
.. [RR17] A. Rudi and L. Rosasco. Generalization properties of learning with random features.
   NIPS 2017 (random-feature ridge reaches the rate of this exact estimator with
   :math:`O(\sqrt n \log n)` features).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat._validation import (
    LENGTH_SCALE_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    check_random_state,
)
from randfeat.kernels import ShiftInvariantKernel, get_kernel

__all__ = ["ExactKernelRidge"]

DEFAULT_ALPHAS = tuple(10.0 ** np.arange(-8, 1))


class ExactKernelRidge(RegressorMixin, BaseEstimator):
    r"""Exact kernel ridge regression (dense Cholesky), ``alpha`` per sample as in
    :class:`randfeat.RandomFeatureRidge`.

    Minimises :math:`\frac1n\sum_i (y_i - f(x_i) - b)^2 + \alpha\lVert f\rVert_{\mathcal H}^2`
    over the RKHS of ``kernel`` (see :mod:`randfeat.kernel_ridge` for the centred dual system).

    Parameters
    ----------
    kernel : str or ShiftInvariantKernel, default="gaussian"
        A name accepted by :func:`randfeat.kernels.get_kernel` (``"gaussian"``, ``"laplacian"``,
        ``"cauchy"``, ``"matern"``, ``"ballsum"``) or a kernel instance (which carries its own
        ``sigma``).
    sigma : float or None, default=None
        Length scale for a kernel given by name (None: 1.0; Gaussian:
        :math:`\exp(-\lVert\Delta\rVert^2 / (2\sigma^2))`).  Must stay None with a kernel
        instance, which carries its own (ValueError otherwise), as in every randfeat estimator.
    kernel_params : dict or None, default=None
        Extra kernel parameters for a kernel given by name (``{"nu": 2.5}`` for Matérn).
    alphas : float or array-like of float, default=10**arange(-8, 1)
        Candidate per-sample penalties (> 0).  With a single value no validation split is made.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out to choose ``alpha`` (several alphas only).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (centred kernel).
    random_state : None, int, RandomState, Generator, SeedSequence or BitGenerator, default=None
        Seeds the validation split.

    Attributes
    ----------
    kernel_ : ShiftInvariantKernel
        The resolved kernel.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (a float64 copy).
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        :math:`c` of the centred dual system.
    intercept_ : float or ndarray of shape (n_targets,)
        :math:`\bar y` (0 without intercept).
    alpha_ : float
        Selected penalty.
    alphas_ : ndarray
        Candidate penalties.
    validation_scores_ : ndarray of shape (n_alphas,) or None
        Validation mean squared error of every candidate (None without validation).
    n_features_in_ : int

    See Also
    --------
    randfeat.RandomFeatureRidge : the same estimator on random features.

    References
    ----------
    Rahimi & Recht (2007); Rudi & Rosasco (2017).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernel_ridge import ExactKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(200, 1)); y = np.sin(X[:, 0])
    >>> model = ExactKernelRidge(sigma=1.0, alphas=1e-6).fit(X, y)
    >>> bool(np.sqrt(np.mean((model.predict(X) - y) ** 2)) < 1e-3)
    True
    """

    _parameter_constraints: dict = {
        "kernel": [str, ShiftInvariantKernel],
        "sigma": LENGTH_SCALE_CONSTRAINT,
        "kernel_params": [dict, None],
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="neither")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "fit_intercept": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, kernel="gaussian", *, sigma=None, kernel_params=None,
                 alphas=DEFAULT_ALPHAS, validation_fraction=0.2, fit_intercept=True,
                 random_state=None):
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.alphas = alphas
        self.validation_fraction = validation_fraction
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _check_alphas(self):
        alphas = np.atleast_1d(np.asarray(self.alphas, dtype=np.float64))
        if alphas.ndim != 1 or alphas.size == 0:
            raise ValueError(f"alphas must be a positive number or a non-empty 1-D sequence of "
                             f"positive numbers, got {self.alphas!r}")
        if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
            raise ValueError(f"alphas must all be finite and > 0 (the regularisation per "
                             f"sample), got {self.alphas!r}; use e.g. np.logspace(-8, 0, 9)")
        return alphas

    def _resolve_kernel(self):
        if isinstance(self.kernel, ShiftInvariantKernel):
            if self.kernel_params:
                raise ValueError(f"kernel_params={self.kernel_params!r} cannot be applied to the "
                                 f"kernel instance {self.kernel!r}; pass them to its "
                                 "constructor")
            return self.kernel
        return get_kernel(self.kernel, self.sigma, **(self.kernel_params or {}))

    def _centre(self, K, col_mean, tot_mean, row_mean=None):
        """Centre a kernel block against the training rows (fit_intercept)."""
        if not self.fit_intercept:
            return K
        if row_mean is None:
            row_mean = K.mean(axis=1, keepdims=True)
        return K - row_mean - col_mean[None, :] + tot_mean

    @staticmethod
    def _cholesky_solve(Kc, Yc, n, alpha):
        M = Kc.copy()
        M[np.diag_indices_from(M)] += n * alpha
        try:
            cf = scipy.linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
            return scipy.linalg.cho_solve(cf, Yc, check_finite=False), "cholesky"
        except np.linalg.LinAlgError:
            # K + n alpha I numerically indefinite (alpha below round-off): eigen-solution
            ev, Q = scipy.linalg.eigh(Kc, check_finite=False)
            ev = np.clip(ev, 0.0, None)
            return Q @ ((Q.T @ Yc) / (ev + n * alpha)[:, None]), "eigh"

    def _prepare(self, X, Y):
        """Centred Gram matrix and targets of rows X: (Kc, Yc, col_mean, tot_mean, ybar)."""
        K = self.kernel_(X)
        if self.fit_intercept:
            col_mean = K.mean(axis=0)
            tot_mean = float(col_mean.mean())
            ybar = Y.mean(axis=0)
        else:
            col_mean, tot_mean, ybar = np.zeros(len(X)), 0.0, np.zeros(Y.shape[1])
        Kc = self._centre(K, col_mean, tot_mean, row_mean=col_mean[:, None])
        Kc = 0.5 * (Kc + Kc.T)
        return Kc, Y - ybar, col_mean, tot_mean, ybar

    # ------------------------------------------------------------------ fit / predict
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the dual coefficients (alpha by validation when several are given).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True,
                             y_numeric=True, ensure_all_finite=True)
        alphas = self._check_alphas()
        self.kernel_ = self._resolve_kernel()
        self.kernel_(X[:1])  # raises a clear error if the kernel rejects this dimension
        X = np.array(X, dtype=np.float64, copy=True)
        y = np.asarray(y, dtype=np.float64)
        Y = y.reshape(len(y), -1)
        n = X.shape[0]
        if alphas.size > 1:
            if n < 2:
                raise ValueError(f"choosing alpha on a validation split needs at least 2 "
                                 f"samples, got n_samples={n}; pass a single alpha instead")
            rng = check_random_state(self.random_state)
            perm = rng.permutation(n)
            n_val = min(n - 1, max(1, int(round(self.validation_fraction * n))))
            tr, va = np.sort(perm[n_val:]), np.sort(perm[:n_val])
            self._fit_rows(X[tr], Y[tr])
            P = self._path_decision(X[va], alphas)
            self.validation_scores_ = np.mean((P - Y[va][None]) ** 2, axis=(1, 2))
            m = np.min(self.validation_scores_)
            ties = np.flatnonzero(self.validation_scores_ <= m * (1 + 1e-12) + 1e-300)
            best = int(ties[np.argmax(alphas[ties])])
        else:
            self.validation_scores_ = None
            best = 0
        self.alpha_ = float(alphas[best])
        self.alphas_ = alphas
        self._fit_rows(X, Y)
        C, self.solver_ = self._cholesky_solve(self._Kc, self._Yc, n, self.alpha_)
        self._y_fit = Y
        del self._Kc, self._Yc, self._eig
        if y.ndim == 1:
            self.dual_coef_, self.intercept_ = C[:, 0], float(self._ybar[0])
        else:
            self.dual_coef_, self.intercept_ = C, self._ybar.copy()
        return self

    def _fit_rows(self, X, Y):
        self.X_fit_ = X
        self._Kc, self._Yc, self._col_mean, self._tot_mean, self._ybar = self._prepare(X, Y)
        self._eig = None

    def _test_kernel(self, X):
        return self._centre(self.kernel_(X, self.X_fit_), self._col_mean, self._tot_mean)

    def _path_decision(self, X, alphas):
        """Predictions of every alpha for the current training rows: (L, m, K)."""
        if self._eig is None:
            ev, Q = scipy.linalg.eigh(self._Kc, check_finite=False)
            self._eig = (np.clip(ev, 0.0, None), Q, Q.T @ self._Yc)
        ev, Q, QY = self._eig
        Kt = self._test_kernel(X) @ Q
        n = len(self.X_fit_)
        return np.stack([Kt @ (QY / (ev + n * a)[:, None]) + self._ybar for a in alphas])

    def _validate_predict_X(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                             ensure_all_finite=True)

    def predict(self, X):
        r"""Predict :math:`\tilde k(x)^\top c + \bar y`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        X = self._validate_predict_X(X)
        return self._test_kernel(np.asarray(X, dtype=np.float64)) @ self.dual_coef_ \
            + self.intercept_

    def predict_path(self, X, alphas=None):
        r"""Predictions for a path of penalties from one eigendecomposition of the training Gram.

        Refits nothing: the training rows are those of :meth:`fit` (all of them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        alphas : array-like of float > 0 or None
            Penalties (default: ``alphas_``).

        Returns
        -------
        ndarray of shape (n_alphas, n_samples) or (n_alphas, n_samples, n_targets)
        """
        X = self._validate_predict_X(X)
        if alphas is None:
            alphas = self.alphas_
        else:
            saved, self.alphas = self.alphas, alphas
            try:
                alphas = self._check_alphas()
            finally:
                self.alphas = saved
        multi = np.ndim(self.dual_coef_) == 2
        self._fit_rows(self.X_fit_, self._y_fit)
        try:
            P = self._path_decision(np.asarray(X, dtype=np.float64), alphas)
        finally:
            del self._Kc, self._Yc, self._eig
        return P if multi else P[:, :, 0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
