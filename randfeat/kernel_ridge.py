r"""Exact kernel ridge regression with a shift-invariant kernel (the reference for random features).

:class:`ExactKernelRidge` solves the same problem as :class:`randfeat.RandomFeatureRidge`, with the
exact kernel :math:`k` in place of the random-feature kernel :math:`z(x)^\top z(y)`:

.. math::

    \min_{f \in \mathcal H,\, b}\; \sum_{i=1}^n \bigl(y_i - f(x_i) - b\bigr)^2
    + \lambda \lVert f \rVert_{\mathcal H}^2 ,

with the learners' ``alphas`` and ``alpha_scale``: :math:`\lambda = \alpha` (``"sum"``, the
default: scikit-learn's ``Ridge`` / ``KernelRidge`` scale) or :math:`\lambda = n\alpha`
(``"mean"``: the penalty per sample, added to the mean squared error), and the same
unpenalised intercept.  By the representer theorem :math:`f = \sum_i c_i\, \tilde k(\cdot,
x_i)`, where with an intercept the kernel is centred on the training rows (:math:`\tilde K = H K
H`, :math:`H = I - \frac1n 1 1^\top`, the dual of the centred normal equations of the
feature-space solver), and

.. math::

    (\tilde K + \lambda I)\, c = y - \bar y, \qquad
    \hat y(x) = \tilde k(x)^\top c + \bar y,\quad
    \tilde k(x)_i = k(x, x_i) - \overline{k(x, \cdot)} - \overline{k(\cdot, x_i)}
                    + \overline{k(\cdot,\cdot)} .

So for a random-feature map whose kernel :math:`z(x)^\top z(y)` tends to :math:`k(x, y)`
(Rahimi & Recht 2007, Claim 1) the fitted ``RandomFeatureRidge(features=z, alphas=alpha)``
tends to ``ExactKernelRidge(kernel=k, alphas=alpha)`` as the number of features grows; at
``alpha -> 0`` with more features than rows both tend to the kernel interpolant.

The system is solved by a Cholesky factorisation (:func:`scipy.linalg.cho_factor`).  A path of
several ``alphas`` is solved from one eigendecomposition :math:`\tilde K = Q \Lambda Q^\top`
(:math:`c_\lambda = Q(\Lambda + \lambda)^{-1}Q^\top y_c`, :meth:`ExactKernelRidge.predict_path`);
with several alphas :meth:`~ExactKernelRidge.fit` picks one on a random validation split exactly
as :class:`randfeat.RandomFeatureRidge` does (the same split, the same selection: the shared
workflow of :mod:`randfeat.linear._fit`), then refits on all rows by Cholesky.  Memory is
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
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat._base import resolve_kernel
from randfeat._validation import RANDOM_STATE_CONSTRAINT, SIGMA_CONSTRAINT
from randfeat.kernels import ShiftInvariantKernel
from randfeat.linear._fit import best_alpha, publish, validation_split, working_copy
from randfeat.linear._inputs import check_alphas, penalties

__all__ = ["ExactKernelRidge"]


class _Dual:
    """The centred dual system of one set of training rows: ``Kc`` (n, n), ``Yc`` (n, K), the
    centring terms, and an eigendecomposition made on demand for a path of penalties."""

    def __init__(self, kernel, X, Y, fit_intercept):
        self.kernel, self.X, self.fit_intercept = kernel, X, fit_intercept
        K = kernel(X)
        if fit_intercept:
            col_mean = K.mean(axis=0)
            tot_mean = float(col_mean.mean())
            ybar = Y.mean(axis=0)
            # K - row means - column means + total mean, in place (the same operations in the
            # same order as _centre: the same bits, one n x n array fewer)
            K -= col_mean[:, None]
            K -= col_mean[None, :]
            K += tot_mean
        else:
            col_mean, tot_mean, ybar = np.zeros(len(X)), 0.0, np.zeros(Y.shape[1])
        np.add(K, K.T, out=K)   # 0.5 (K + Kᵀ): exactly symmetric (NumPy buffers the overlap)
        K *= 0.5
        self.Kc = K
        self.Yc, self.centring = Y - ybar, (col_mean, tot_mean, ybar)
        self._eig = None

    def solve(self, penalty):
        """``(c, method)``: Cholesky of :math:`\\tilde K + \\lambda I`, or the eigen-solution if
        that factorisation fails (:math:`\\lambda` below round-off)."""
        M = self.Kc.copy()
        M[np.diag_indices_from(M)] += penalty
        try:
            cf = scipy.linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
            return scipy.linalg.cho_solve(cf, self.Yc, check_finite=False), "cholesky"
        except np.linalg.LinAlgError:
            del M
            ev, Q = scipy.linalg.eigh(self.Kc, check_finite=False)
            ev = np.clip(ev, 0.0, None)
            return Q @ ((Q.T @ self.Yc) / (ev + penalty)[:, None]), "eigh"

    def path_decision(self, X, penalties):
        """Predictions at ``X`` for every penalty, from one eigendecomposition: (L, m, K)."""
        if self._eig is None:
            ev, Q = scipy.linalg.eigh(self.Kc, check_finite=False)
            self._eig = (np.clip(ev, 0.0, None), Q, Q.T @ self.Yc)
        ev, Q, QY = self._eig
        col_mean, tot_mean, ybar = self.centring
        Kt = _centre(self.kernel(X, self.X), col_mean, tot_mean, self.fit_intercept) @ Q
        return np.stack([Kt @ (QY / (ev + p)[:, None]) + ybar for p in penalties])


def _centre(K, col_mean, tot_mean, fit_intercept, row_mean=None):
    """Centre a kernel block against the training rows (fit_intercept)."""
    if not fit_intercept:
        return K
    if row_mean is None:
        row_mean = K.mean(axis=1, keepdims=True)
    return K - row_mean - col_mean[None, :] + tot_mean


class ExactKernelRidge(RegressorMixin, BaseEstimator):
    r"""Exact kernel ridge regression (dense Cholesky), ``alphas`` on the learners' scale.

    Minimises :math:`\sum_i (y_i - f(x_i) - b)^2 + \lambda\lVert f\rVert_{\mathcal H}^2`
    over the RKHS of ``kernel``, :math:`\lambda = \alpha` (``alpha_scale="sum"``,
    scikit-learn's :class:`~sklearn.kernel_ridge.KernelRidge` scale) or :math:`n\alpha`
    (``"mean"``), as :class:`randfeat.RandomFeatureRidge` (see :mod:`randfeat.kernel_ridge`
    for the centred dual system).

    Parameters
    ----------
    kernel : str or ShiftInvariantKernel, default="gaussian"
        A name accepted by :func:`randfeat.kernels.get_kernel` (``"gaussian"``, ``"laplacian"``,
        ``"cauchy"``, ``"matern"``, ``"ballsum"``) or a kernel instance (which carries its own
        ``sigma`` and parameters).
    sigma : float, array of shape (n_features,), "scale", "median" or None, default=None
        Length scale of a kernel given by name (None: 1.0; Gaussian:
        :math:`\exp(-\lVert\Delta\rVert^2 / (2\sigma^2))`), or one per feature (ARD,
        :math:`k((x - y)/\sigma)` coordinate-wise: the same fit, bit for bit, as ``sigma=1`` on
        ``X / sigma``); ``"scale"``/``"median"`` choose it
        from the training rows as in every randfeat transformer
        (:func:`randfeat._base.data_sigma`).  Must stay None with a kernel instance, which
        carries its own (ValueError otherwise), as in every randfeat estimator.
    kernel_params : dict or None, default=None
        Extra kernel parameters for a kernel given by name (``{"nu": 2.5}`` for Matérn): the
        one way of every randfeat estimator.
    alphas : float, array-like of float or None, default=None
        Candidate penalties (> 0), in the scale ``alpha_scale`` says.  With a single value no
        validation split is made.  None: ``10**arange(-3, 6)`` ("sum") or
        ``10**arange(-8, 1)`` ("mean"), the learners' grids.
    alpha_scale : {"sum", "mean"}, default="sum"
        "sum": ``alpha`` multiplies :math:`\lVert f\rVert^2` added to the *summed* squared
        errors (scikit-learn's ``KernelRidge(alpha)``); "mean": added to the *mean* squared
        error, a penalty per sample (randfeat 0.1's only scale for this estimator).  The same
        parameter, with the same meaning, as the learners'.
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
    sigma_ : float or ndarray of shape (n_features,)
        Its length scale (``sigma``, its data-driven value, or the instance's own); a read-only
        float64 array for ARD length scales.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (a float64 copy).
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        :math:`c` of the centred dual system.
    intercept_ : float or ndarray of shape (n_targets,)
        :math:`\bar y` (0 without intercept).
    alpha_ : float
        Selected penalty (in ``alpha_scale``).
    alphas_ : ndarray
        Candidate penalties.
    validation_scores_ : ndarray of shape (n_alphas,) or None
        Validation mean squared error of every candidate (None without validation).
    solver_ : {"cholesky", "eigh"}
        How the final system was solved.
    n_features_in_ : int

    See Also
    --------
    randfeat.RandomFeatureRidge : the same estimator on random features.

    Notes
    -----
    :meth:`fit` is all-or-nothing: the new fit is computed aside and published in one step, so
    a re-fit that fails (a MemoryError for the n x n Gram matrix, Ctrl-C, bad input) leaves the
    previous model whole.

    References
    ----------
    Rahimi & Recht (2007); Rudi & Rosasco (2017).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernel_ridge import ExactKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(200, 1)); y = np.sin(X[:, 0])
    >>> model = ExactKernelRidge(sigma=1.0, alphas=1e-4).fit(X, y)
    >>> bool(np.sqrt(np.mean((model.predict(X) - y) ** 2)) < 1e-3)
    True
    """

    _parameter_constraints: dict = {
        "kernel": [str, ShiftInvariantKernel],
        "sigma": SIGMA_CONSTRAINT,
        "kernel_params": [dict, None],
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="neither"), None],
        "alpha_scale": [StrOptions({"sum", "mean"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "fit_intercept": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, kernel="gaussian", *, sigma=None, kernel_params=None, alphas=None,
                 alpha_scale="sum", validation_fraction=0.2, fit_intercept=True,
                 random_state=None):
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.alphas = alphas
        self.alpha_scale = alpha_scale
        self.validation_fraction = validation_fraction
        self.fit_intercept = fit_intercept
        self.random_state = random_state

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
        who = f"{type(self).__name__}.fit"
        work = working_copy(self)
        X, y = validate_data(work, X, y, dtype=[np.float64, np.float32], multi_output=True,
                             y_numeric=True, ensure_all_finite=True)
        alphas = check_alphas(self.alphas, self.alpha_scale)
        kernel = resolve_kernel(self.kernel, self.sigma, X, who=who,
                                **(self.kernel_params or {}))
        kernel(X[:1])  # raises a clear error if the kernel rejects this dimension
        X = np.array(X, dtype=np.float64, copy=True)
        y = np.asarray(y, dtype=np.float64)
        Y = y.reshape(len(y), -1)
        n = X.shape[0]
        tr, va = validation_split(n, alphas.size, self.validation_fraction, self.random_state,
                                  who)
        scores, best = None, 0
        if va is not None:
            part = _Dual(kernel, X[tr], Y[tr], self.fit_intercept)
            P = part.path_decision(X[va], penalties(alphas, self.alpha_scale, len(tr)))
            del part
            scores = np.mean((P - Y[va][None]) ** 2, axis=(1, 2))
            best = best_alpha(scores, alphas)
        alpha = float(alphas[best])
        full = _Dual(kernel, X, Y, self.fit_intercept)
        C, solver = full.solve(penalties([alpha], self.alpha_scale, n)[0])
        sigma_ = kernel.sigma if kernel.ard else float(kernel.sigma)
        state = {"kernel_": kernel, "sigma_": sigma_, "X_fit_": X,
                 "alpha_": alpha, "alphas_": alphas, "validation_scores_": scores,
                 "solver_": solver, "_y_fit_": Y, "_centring_": full.centring}
        if y.ndim == 1:
            state.update(dual_coef_=C[:, 0], intercept_=float(full.centring[2][0]))
        else:
            state.update(dual_coef_=C, intercept_=full.centring[2].copy())
        return publish(self, work, state)

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
        st = self.__dict__   # one snapshot: a concurrent re-fit publishes a new dict
        col_mean, tot_mean, _ = st["_centring_"]
        K = st["kernel_"](np.asarray(X, dtype=np.float64), st["X_fit_"])
        return _centre(K, col_mean, tot_mean, st["fit_intercept"]) @ st["dual_coef_"] \
            + st["intercept_"]

    def predict_path(self, X, alphas=None):
        r"""Predictions for a path of penalties from one eigendecomposition of the training Gram.

        Refits nothing: the training rows are those of :meth:`fit` (all of them).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        alphas : array-like of float > 0 or None
            Penalties, in ``alpha_scale`` (default: ``alphas_``).

        Returns
        -------
        ndarray of shape (n_alphas, n_samples) or (n_alphas, n_samples, n_targets)
        """
        X = self._validate_predict_X(X)
        st = self.__dict__
        alphas = st["alphas_"] if alphas is None else check_alphas(alphas)
        dual = _Dual(st["kernel_"], st["X_fit_"], st["_y_fit_"], st["fit_intercept"])
        P = dual.path_decision(np.asarray(X, dtype=np.float64),
                               penalties(alphas, st["alpha_scale"], len(st["X_fit_"])))
        return P if np.ndim(st["dual_coef_"]) == 2 else P[:, :, 0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
