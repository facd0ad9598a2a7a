r"""Choosing the length scale of the features by the learner's own criterion:
:class:`SigmaSearchCV`.

The learners choose alpha from one eigendecomposition of the statistics of *one* feature map.
A length scale :math:`\sigma` changes the features themselves, so every candidate is a refit:
:class:`SigmaSearchCV` fits a clone of a :class:`~randfeat.linear.RandomFeatureRidge` (or its
classifier) per :math:`\sigma` of a grid, reads the best value of the learner's ``selection``
criterion along its alpha path (the leave-one-out or GCV minimum, the evidence maximum, the
hold-out validation minimum), and keeps the fit of the best :math:`\sigma`.  The criteria are
comparable across :math:`\sigma`: leave-one-out, GCV and the hold-out error estimate the same
prediction error on the same rows, and the evidence is the density of the same targets under
each model.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from randfeat.linear._fit import AlphaAtGridEdgeWarning

__all__ = ["SigmaAtGridEdgeWarning", "SigmaSearchCV"]


class SigmaAtGridEdgeWarning(UserWarning):
    """The ``sigma`` chosen by :class:`SigmaSearchCV` is the smallest or the largest of its
    grid: the best length scale may lie outside it; widen ``sigmas`` on that side."""


def _has(name):
    return lambda self: hasattr(self.best_estimator_ if hasattr(self, "best_estimator_")
                                else self.estimator, name)


class _Bar:
    """A progress bar on stderr (tqdm when installed, else one line per step), drawn only on
    a terminal with ``progress="auto"``, always with True, never with False."""

    def __init__(self, total, progress, desc):
        on = progress is True or (progress == "auto" and sys.stderr.isatty())
        self.tqdm = None
        self.on = on
        self.total, self.desc, self.k = total, desc, 0
        if on:
            try:
                from tqdm.auto import tqdm
                self.tqdm = tqdm(total=total, desc=desc, file=sys.stderr, leave=False)
            except ImportError:
                self.tqdm = None

    def step(self, note):
        self.k += 1
        if not self.on:
            return
        if self.tqdm is not None:
            self.tqdm.set_postfix_str(note)
            self.tqdm.update(1)
        else:
            print(f"{self.desc}: {self.k}/{self.total} {note}", file=sys.stderr, flush=True)

    def close(self):
        if self.tqdm is not None:
            self.tqdm.close()


class SigmaSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Choose the length scale of a ridge learner's features (and alpha) by the learner's own
    selection criterion.

    For every ``sigma`` of ``sigmas`` a clone of ``estimator`` with its feature map's length
    scale set to it (``estimator.set_params(**{param: sigma})``) is fitted; each fit chooses
    alpha along its path by its ``selection`` ("loo", "gcv", "evidence" or "holdout": see
    :class:`~randfeat.linear.RandomFeatureRidge`), and the sigma whose best criterion value is
    best -- the smallest leave-one-out, GCV or validation error, the largest log evidence -- is
    kept, with its fitted learner (``best_estimator_``); ties go to the larger sigma (the
    smoother model).  Each sigma is a full refit of the features (one or two passes over the
    rows and one eigendecomposition): ``n_sigmas`` times the cost of one fit, with a progress
    bar on a terminal.

    So that the candidates differ only by sigma, randomness is shared: a feature map whose
    ``random_state`` is None gets one seed drawn once for the whole search (random Fourier
    features then scale the same base frequencies by 1/sigma -- common random numbers), and
    so does a learner with ``selection="holdout"`` (one validation split for every sigma).

    Parameters
    ----------
    estimator : RandomFeatureRidge or RandomFeatureRidgeClassifier
        The learner, with a feature map that has a length scale (e.g.
        :class:`randfeat.RandomFourierFeatures`) and several ``alphas``.
    sigmas : array-like of float > 0
        The candidate length scales.
    param : str, default="features__sigma"
        The parameter of ``estimator`` that ``sigmas`` set.
    progress : bool or "auto", default="auto"
        Draw a progress bar on stderr (tqdm when installed): "auto" on a terminal only.

    Attributes
    ----------
    best_estimator_ : estimator
        The learner fitted with ``sigma_`` (its ``alpha_``, curves, posterior...).
    sigma_ : float
        The chosen length scale.
    alpha_ : float
        ``best_estimator_.alpha_``.
    sigmas_ : ndarray of shape (n_sigmas,)
    sigma_curve_ : ndarray of shape (n_sigmas,)
        The best value of the criterion along the alpha path, per sigma (for "evidence" the
        log evidence at the refined maximiser).
    selection_curves_ : ndarray of shape (n_sigmas, n_alphas)
        Every learner's ``selection_curve_``.
    alphas_chosen_ : ndarray of shape (n_sigmas,)
        The alpha each sigma's fit chose.
    fit_times_ : ndarray of shape (n_sigmas,)
        Wall seconds of each fit.
    selection_ : str
        The criterion ("loo", "gcv", "evidence" or "holdout").
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import RandomFourierFeatures
    >>> from randfeat.linear import RandomFeatureRidge, SigmaSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(300, 1))
    >>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=300)
    >>> search = SigmaSearchCV(RandomFeatureRidge(RandomFourierFeatures(100, random_state=0)),
    ...                        sigmas=[0.05, 0.2, 0.8, 3.2]).fit(X, y)
    >>> search.sigma_, search.alpha_
    (0.8, 0.01)
    >>> search.sigma_curve_.round(4)      # the leave-one-out error at each sigma's best alpha
    array([0.0115, 0.0105, 0.0098, 0.2618])
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "set_params"])],
        "sigmas": ["array-like"],
        "param": [str],
        "progress": ["boolean", StrOptions({"auto"})],
    }

    def __init__(self, estimator, sigmas, *, param="features__sigma", progress="auto"):
        self.estimator = estimator
        self.sigmas = sigmas
        self.param = param
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.input_tags = inner.input_tags
        tags.target_tags = inner.target_tags
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        return tags

    def _check_sigmas(self):
        s = np.atleast_1d(np.asarray(self.sigmas, dtype=np.float64))
        if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
            raise ValueError(f"SigmaSearchCV: sigmas must be a non-empty 1-D sequence of "
                             f"finite numbers > 0, got {self.sigmas!r}")
        return s

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit one learner per sigma and keep the best (see the class docstring).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        who = "SigmaSearchCV.fit"
        sigmas = self._check_sigmas()
        base = clone(self.estimator)
        params = base.get_params(deep=True)
        if self.param not in params:
            raise ValueError(f"{who}: the estimator has no parameter {self.param!r}; pass "
                             f"param= the name of its features' length scale (e.g. "
                             f"'features__sigma')")
        alphas = base._check_alphas() if hasattr(base, "_check_alphas") else None
        if alphas is None or np.size(alphas) < 2:
            raise ValueError(f"{who}: the estimator must choose alpha along a path (several "
                             f"alphas); its criterion at the best alpha is what compares the "
                             f"sigmas")
        seeds = np.random.default_rng()
        fixed = {}
        prefix = self.param.rsplit("__", 1)[0] + "__" if "__" in self.param else None
        if prefix is not None and params.get(prefix + "random_state", 0) is None:
            fixed[prefix + "random_state"] = int(seeds.integers(2 ** 31 - 1))
        if getattr(base, "selection", None) == "holdout" and base.random_state is None:
            fixed["random_state"] = int(seeds.integers(2 ** 31 - 1))
        selection = base.selection
        maximise = selection == "evidence"
        fits, crit, chosen, times, curves = [], [], [], [], []
        bar = _Bar(len(sigmas), self.progress, "SigmaSearchCV")
        best = None
        try:
            for s in sigmas:
                est = clone(base).set_params(**fixed, **{self.param: float(s)})
                t0 = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", AlphaAtGridEdgeWarning)
                    if sample_weight is None:
                        est.fit(X, y)
                    else:
                        est.fit(X, y, sample_weight=sample_weight)
                for c in caught:
                    if not issubclass(c.category, AlphaAtGridEdgeWarning):
                        warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
                times.append(time.perf_counter() - t0)
                curve = np.asarray(est.selection_curve_, dtype=np.float64)
                if selection == "evidence":
                    value = float(est.log_marginal_likelihood_)
                else:
                    value = float(np.nanmin(curve))
                crit.append(value)
                curves.append(curve)
                chosen.append(est.alpha_)
                edge = [c for c in caught if issubclass(c.category, AlphaAtGridEdgeWarning)]
                key = -value if maximise else value
                if best is None or key < best[0] or (key == best[0] and s > best[1]):
                    best = (key, s, est, edge)
                fits.append(est)
                bar.step(f"sigma={s:.4g}: {selection} {value:.5g} (alpha {est.alpha_:.3g})")
        finally:
            bar.close()
        _, sigma, est, edge = best
        for c in edge:   # the chosen learner's own edge-of-grid warning
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
        if sigma in (sigmas.min(), sigmas.max()) and len(sigmas) > 1:
            side = "smallest" if sigma == sigmas.min() else "largest"
            warnings.warn(f"{who}: the sigma chosen by {selection}, {sigma:g}, is the {side} of "
                          f"the grid sigmas={sigmas.tolist()}; the best length scale may lie "
                          f"beyond it: extend the grid on that side", SigmaAtGridEdgeWarning,
                          stacklevel=3)
        state = {"best_estimator_": est, "sigma_": float(sigma), "alpha_": float(est.alpha_),
                 "sigmas_": sigmas, "sigma_curve_": np.array(crit),
                 "selection_curves_": np.vstack(curves), "alphas_chosen_": np.array(chosen),
                 "fit_times_": np.array(times), "selection_": selection,
                 "n_features_in_": est.n_features_in_}
        if hasattr(est, "feature_names_in_"):
            state["feature_names_in_"] = est.feature_names_in_
        if hasattr(est, "classes_"):
            state["classes_"] = est.classes_
        new = {k: v for k, v in self.__dict__.items()
               if not (k.endswith("_") and not k.startswith("__"))}
        new.update(state)
        self.__dict__ = new    # published in one step
        return self

    # ------------------------------------------------------------------ delegation
    def predict(self, X, **kwargs):
        """``best_estimator_.predict(X, **kwargs)`` (e.g. ``return_std=True``)."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X, **kwargs)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """``best_estimator_.decision_function(X)``."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    @available_if(_has("sample_y"))
    def sample_y(self, X, n_samples=1, random_state=0):
        """``best_estimator_.sample_y(X, n_samples, random_state)``."""
        check_is_fitted(self)
        return self.best_estimator_.sample_y(X, n_samples=n_samples, random_state=random_state)

    def score(self, X, y, sample_weight=None):
        """``best_estimator_.score(X, y, sample_weight)`` (R^2 or accuracy)."""
        check_is_fitted(self)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)

