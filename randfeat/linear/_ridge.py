"""The ridge learners on random features: :class:`RandomFeatureRidge` and
:class:`RandomFeatureRidgeClassifier` (parameters, targets, prediction; the fit itself is the
workflow of :mod:`randfeat.linear._fit`)."""

from __future__ import annotations

import copy
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat._base import DaskRouted, RandomFeaturesBase
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    check_n_threads,
    check_random_state,
)
from randfeat.linear import _oneblas
from randfeat.linear._features import DENSE_MAPS, F32_PHASE_LIMIT, phase_bound
from randfeat.linear._fit import fit_in_memory, fit_partial, publish, working_copy
from randfeat.linear._inputs import check_alphas, check_sample_weight, penalties
from randfeat.linear._memory import auto_chunk_rows
from randfeat.linear._posterior import standard_normal
from randfeat.linear._selection import SELECTIONS
from randfeat.linear._solvers import SOLVERS

__all__ = ["RandomFeatureRidge", "RandomFeatureRidgeClassifier"]


class _RandomFeatureRidgeBase(DaskRouted, BaseEstimator):
    """Parameters, featurisation and prediction shared by the two learners (see
    :mod:`randfeat.linear` for the mathematics and :mod:`randfeat.linear._fit` for the fit)."""

    _parameter_constraints: dict = {
        "features": [HasMethods(["fit", "transform"]), StrOptions({"passthrough"}), None],
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="left"), None],
        "selection": [StrOptions(set(SELECTIONS))],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "chunk_size": [Interval(numbers.Integral, 1, None, closed="left"),
                       StrOptions({"auto"})],
        "solver": [StrOptions({"auto", *SOLVERS})],
        "fit_intercept": ["boolean"],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "alpha_scale": [StrOptions({"sum", "mean"})],
        "gram_dtype": [StrOptions({"auto", "float64", "float32"})],
        "n_threads": N_THREADS_CONSTRAINT,
    }

    def __init__(self, features="passthrough", *, alphas=None, alpha_scale="sum",
                 selection="loo", validation_fraction=0.2, chunk_size="auto", solver="auto",
                 fit_intercept=True, tol=1e-8, max_iter=None, random_state=None,
                 gram_dtype="auto", n_threads=None):
        self.features = features
        self.alphas = alphas
        self.alpha_scale = alpha_scale
        self.selection = selection
        self.validation_fraction = validation_fraction
        self.chunk_size = chunk_size
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.gram_dtype = gram_dtype
        self.n_threads = n_threads

    # ------------------------------------------------------------------ helpers
    def _check_alphas(self):
        return check_alphas(self.alphas, self.alpha_scale)

    def _penalty(self, alphas, weight_sum):
        """The penalties on the summed squared errors that ``alphas`` stand for (see
        :func:`randfeat.linear._inputs.penalties`)."""
        return penalties(alphas, self.alpha_scale, weight_sum)

    def _transform(self, X, feats=None):
        """Features of X by ``feats`` (default: ``features_``); None is the identity."""
        feats = self.features_ if feats is None else feats
        return X if feats is None else feats.transform(X)

    def _chunk_features(self, X, feats=None):
        """Features of one chunk as the fit accumulates them.  With ``gram_dtype="float32"`` and
        a randfeat map with dense output (RFF, Fastfood, SORF), float64 input is featurised in
        float32 (the map's single-precision path: its projection, its cosines): the chunk's
        products are single precision anyway, and this skips a float64 feature matrix and its
        cast (on Adult, D = 4000: 2.0 s of a 9 s fit).  ``predict`` featurises in the input's
        precision.

        Only when the phases are small: a float32 phase θ = ωᵀx carries an absolute error of
        about |θ|·2⁻²⁴, which the cosine passes on to the feature.  The chunk is featurised in
        float32 only if the bound max‖x‖₂ · max‖ω‖₂ ≥ |θ| is at most ``F32_PHASE_LIMIT``
        (2¹⁰: a feature error ≤ 6·10⁻⁵, the order of a float32 sum of 10³ products, which the
        chunk's Gram already carries); otherwise (wide inputs, a narrow σ, or values beyond
        float32's range) it stays float64."""
        feats = self.features_ if feats is None else feats
        if (self.gram_dtype == "float32" and isinstance(feats, DENSE_MAPS)
                and X.dtype == np.float64 and X.shape[0] > 0):
            if phase_bound(feats, X) <= F32_PHASE_LIMIT:
                X = X.astype(np.float32)
        return self._transform(X, feats)

    def _chunk_rows(self):
        """Rows per chunk: ``chunk_size``, or with "auto" :func:`auto_chunk_rows` of the fitted
        width ``n_features_out_``."""
        if isinstance(self.chunk_size, str):
            return auto_chunk_rows(self.n_features_out_)
        return int(self.chunk_size)

    def _chunks(self, n):
        step = self._chunk_rows()
        for start in range(0, n, step):
            yield slice(start, min(n, start + step))

    @staticmethod
    def _as64(Z):
        if sp.issparse(Z):
            return Z.tocsr().astype(np.float64, copy=False)
        return np.asarray(Z, dtype=np.float64)

    def _feature_map(self):
        """The fitted feature map as :meth:`fit` and :meth:`predict` use it: a randfeat map is
        shallow-copied with the learner's ``n_threads`` (its compiled kernels' threads; its
        output does not depend on them); other transformers are used as they are."""
        f = self.features_
        if isinstance(f, RandomFeaturesBase):
            f = copy.copy(f)
            f.n_threads = check_n_threads(self.n_threads)
        return f

    def _float32_features(self, X):
        """A "design" solver's feature matrix in float32, chunk by chunk (no float64 copy), when
        ``gram_dtype="float32"`` and the map is a randfeat map with dense output; else None
        (the features as the other design solvers take them)."""
        if self.gram_dtype != "float32" or type(self.features_) not in DENSE_MAPS:
            return None
        feats = self._feature_map()
        Z = np.empty((X.shape[0], int(self.features_._n_features_out)), dtype=np.float32)
        for sl in self._chunks(X.shape[0]):
            Z[sl] = self._chunk_features(X[sl], feats)
        return Z

    def _scores(self, P, Y):  # pragma: no cover - abstract
        """Mean validation loss of the predictions P (n, K) of Y."""
        raise NotImplementedError

    def _row_losses(self, P, Y):  # pragma: no cover - abstract
        """Validation loss of every row (n,); its mean is ``_scores``."""
        raise NotImplementedError

    def _weighted_score(self, P, Y, w):
        return self._scores(P, Y) if w is None else float(w @ self._row_losses(P, Y) / w.sum())

    def _loo_sums(self, P, Y, w):  # pragma: no cover - abstract
        """Summed (weighted) leave-one-out losses of the predictions P (n, L, K): (L, m)."""
        raise NotImplementedError

    def _loo_results(self, means):  # pragma: no cover - abstract
        """The named leave-one-out curves from the weighted means (L, m); "loo" selects."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fit / predict
    def _fit_work(self, X, y, sample_weight, **validate):
        """Validate on a working copy (the estimator is not written): ``(work, X, y, w)``."""
        who = f"{type(self).__name__}.fit"
        work = working_copy(self)
        X, y = validate_data(work, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             ensure_all_finite=True, **validate)
        w = check_sample_weight(sample_weight, X.shape[0], who, some_positive=True)
        return work, X, y, w

    def _decision(self, X, posterior=None, draws=None):
        """Scores (n, K); with ``posterior`` also the latent variance per unit noise (n,);
        with ``draws`` (K, D + 1, s) posterior draws (n, K, s) instead."""
        check_is_fitted(self)
        st = self.__dict__   # one snapshot: a concurrent re-fit publishes a new dict
        X = validate_data(self, X, reset=False, accept_sparse="csr",
                          dtype=[np.float64, np.float32], ensure_all_finite=True)
        D = st["n_features_out_"]
        Wt = st["coef_"].reshape(-1, D).T
        out = np.empty((X.shape[0], Wt.shape[1]))
        b = np.atleast_1d(st["intercept_"])
        work = working_copy(self)
        work.__dict__ = dict(st)
        feats = work._feature_map()
        var = None if posterior is None or draws is not None else np.empty(X.shape[0])
        smp = None if draws is None else np.empty((X.shape[0], Wt.shape[1], draws.shape[2]))
        for sl in work._chunks(X.shape[0]):
            Z = work._as64(work._transform(X[sl], feats))
            out[sl] = np.asarray(_oneblas.matmul(Z, Wt)) + b
            if posterior is not None:
                Zd = Z.toarray() if sp.issparse(Z) else Z
                if draws is None:
                    var[sl] = posterior.latent_variance(Zd)
                else:
                    scale = np.sqrt(posterior.noise_variance)[None, :, None]
                    smp[sl] = out[sl][:, :, None] + scale * posterior.draws(Zd, draws)
        if draws is not None:
            return smp
        return out if var is None else (out, var)

    def __sklearn_tags__(self):
        from sklearn.utils import get_tags
        tags = super().__sklearn_tags__()
        if self.features in (None, "passthrough"):
            tags.input_tags.sparse = True
        else:
            try:
                tags.input_tags.sparse = get_tags(self.features).input_tags.sparse
            except Exception:  # a transformer without sklearn tags
                tags.input_tags.sparse = False
        return tags


class RandomFeatureRidge(RegressorMixin, _RandomFeatureRidgeBase):
    """Ridge regression on random features, α chosen by efficient leave-one-out, with the
    posterior of Bayesian linear regression on the features.

    Minimises :math:`\\sum_i s_i (y_i - z(x_i)^\\top w - b)^2 + \\alpha\\lVert w\\rVert^2`
    where :math:`z` is the fitted ``features`` transformer and :math:`s_i` the sample weights:
    with the default ``alpha_scale="sum"`` this is :class:`sklearn.linear_model.Ridge` with the
    same ``alpha`` on the explicit features (``alpha_scale="mean"``: ``alpha`` per sample,
    ``Ridge(alpha * sum(s_i))``).  A grid of alphas is searched by ``selection``
    (leave-one-out by default, as :class:`sklearn.linear_model.RidgeCV`; GCV, the evidence or
    a validation split) and an :class:`AlphaAtGridEdgeWarning` is issued when the chosen alpha
    is at either end of the grid.  Dense features are handled by streaming normal equations
    (``chunk_size`` rows at a time, never an ``n_samples x D`` matrix) and a Cholesky solve,
    or one eigendecomposition for a whole path; sparse features (random binning) by damped
    LSQR or CG.  See :mod:`randfeat.linear` and the theory page *Model selection and the
    posterior*.

    The fitted model is also the posterior mean of Bayesian linear regression on the features
    (:math:`w \\sim N(0, \\tau^2 I)`, noise :math:`N(0, \\sigma^2/s_i)`, a flat prior on the
    intercept, :math:`\\alpha = \\sigma^2/\\tau^2` on the summed scale), i.e. of the
    Gaussian process with kernel :math:`\\tau^2 z(x)^\\top z(x')`: ``noise_variance_`` is
    :math:`\\hat\\sigma^2` (its maximum-likelihood value given alpha), ``amplitude_`` is
    :math:`\\tau^2`, and with ``store_covariance=True`` :meth:`predict` gives the predictive
    standard deviation and :meth:`sample_y` draws posterior functions.

    Parameters
    ----------
    features : transformer, "passthrough" or None, default="passthrough"
        Unfitted feature map (e.g. :class:`randfeat.RandomFourierFeatures`); it is cloned and
        fitted on ``X`` inside :meth:`fit` (fitted copy in ``features_``).  "passthrough"/None
        uses ``X`` itself (plain ridge regression).
    alphas : float, array-like of float or None, default=None
        Candidate penalties (> 0), in the scale ``alpha_scale`` says.  With a single value no
        selection is made, and a single 0 is allowed: ridgeless regression, the minimum-norm
        least-squares solution (e.g. with ``solver="dual"`` for more features than rows).
        None: ``10**arange(-3, 6)`` ("sum") or ``10**arange(-8, 1)`` ("mean").
    alpha_scale : {"sum", "mean"}, default="sum"
        "sum": ``alpha`` multiplies :math:`\\lVert w\\rVert^2` added to the *summed* weighted
        squared errors (scikit-learn's ``Ridge``/``RidgeCV`` scale; the same ``alpha`` means a
        relatively weaker penalty on more rows).  "mean": added to the weighted *mean* squared
        error, i.e. a penalty per sample (kernel ridge's convention, used by
        :class:`randfeat.kernel_ridge.ExactKernelRidge`; randfeat 0.1's only behaviour).
    selection : {"loo", "gcv", "evidence", "holdout"}, default="loo"
        How ``alpha`` is chosen among several (``selection_curve_`` holds the criterion of
        every candidate, ``selection_results_`` every criterion computed), all but "holdout"
        from one eigendecomposition of the statistics (:math:`O(D^3)`, the whole path at
        :math:`O(D)` per alpha; theory page *Model selection and the posterior*):

        * "loo": efficient leave-one-out, the weighted mean squared leave-one-out error
          :math:`\\sum_i s_i (y_i - \\hat y_{-i})^2 / \\sum_i s_i` (the criterion of
          scikit-learn's ``RidgeCV``; equal to it on the same features).  The hat diagonals
          take a second pass over the rows (the features are recomputed chunk by chunk;
          about twice the Gram's flops);
        * "gcv": generalised cross-validation (Golub, Heath & Wahba 1979), from the statistics
          alone;
        * "evidence": the log marginal likelihood of Bayesian linear regression on the
          features with the noise variance at its maximum for each alpha, from the statistics
          alone; the chosen alpha is its maximiser, refined between the neighbours of the
          best grid value (so it need not be on the grid);
        * "holdout": a random validation split of ``validation_fraction`` of the rows (randfeat
          0.1-0.3's default), then a refit on all rows.

        The design solvers ("lsqr", "cg", "pcg", "dual") compute "loo", "gcv" and "evidence"
        from the eigendecomposition of the n x n kernel of the rows instead (memory
        :math:`2n^2` floats; refused beforehand when it cannot fit: use "holdout" then).
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out to choose ``alpha`` with ``selection="holdout"``; the
        model is then refitted on all rows.
    chunk_size : int or "auto", default="auto"
        Rows featurised at a time (memory ``chunk_size x D``).  "auto": ``max(1024, 2**21 //
        D, D // 2)`` rows, at most 8192 (about 2**21 values per chunk for narrow features,
        ``D / 2`` rows for wide ones so that a float32 chunk stays at most a quarter of the
        Gram's bytes; e.g. 2097 rows at D = 1000, 2000 at D = 4000).
    solver : {"auto", "cholesky", "eigh", "lsqr", "cg", "pcg", "dual"}, default="auto"
        "auto" uses "cholesky" (streaming normal equations) for dense features and "lsqr" for
        sparse ones.  "eigh": the streaming normal equations solved by one eigendecomposition
        of :math:`Z_c^\top S Z_c` for every alpha (cheaper than "cholesky" from about 15
        alphas on).  With ``selection`` "loo", "gcv" or "evidence" and several alphas, both
        take the selection's eigendecomposition, which also gives the coefficients
        (``solver_`` is then "eigh").  "dual": ridge in the dual, the n x n kernel of the rows
        (:math:`O(n^2 D + n^3)`, memory :math:`2n^2` floats), for more features than rows;
        with ``alphas=0`` the minimum-norm least-squares solution (ridgeless regression, the
        interpolant when D >= n).  "lsqr"/"cg" materialise the whole feature matrix (cheap
        when sparse).
        "pcg": conjugate gradients on the normal equations, preconditioned by a randomized
        Nyström approximation of rank 100 of :math:`Z_c^\top S Z_c` (Frangella, Tropp & Udell,
        *Randomized Nyström preconditioning*, SIAM J. Matrix Anal. Appl. 2023), all targets at
        once, to relative residual ``tol``; it keeps the feature matrix, in float32 with
        ``gram_dtype="float32"`` and a dense randfeat map (N x D x 4 bytes), and costs
        O(N D (r + iterations)) instead of the Gram's O(N D^2): much faster than "cholesky"
        when D is large and the kernel's spectrum decays (cpu_act, D = 4000: 25-35 iterations;
        see ``benchmarks/README.md``).  Its random test matrix comes from ``random_state``.
        The solvers are one table, ``randfeat.linear._solvers.SOLVERS``; another name raises
        ValueError naming the valid ones.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (centred normal equations).
    tol : float, default=1e-8
        Tolerance of LSQR (``atol = btol = tol``) and relative tolerance of CG.
    max_iter : int or None, default=None
        Iteration cap of LSQR/CG (None: the SciPy default).
    random_state : None, int or Generator, default=None
        Seeds the validation split of ``selection="holdout"`` and the test matrix of
        ``solver="pcg"`` (the feature map has its own ``random_state``).
    gram_dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of each chunk's :math:`Z^\top Z` product (dense features; always accumulated over
        chunks in float64 and solved to float64 accuracy).  "float32" halves the dominant cost of a
        fit with wide features (one single-precision ``syrk`` per chunk; the chunk's features
        rounded to float32, the products summed over the chunk in float32, the chunk sums added in
        float64): the Gram's rounding has spectral norm about ``6e-8 * trace(G)`` (measured), and
        moves the solution by at most that norm over the penalty, relatively.  With "float32" and
        a randfeat map with dense output (RFF, Fastfood, SORF), :meth:`fit` also featurises float64
        input in float32 (the map's single-precision path, which the products would round to
        anyway; :meth:`predict` featurises in the input's precision), and solves by a float32
        Cholesky factorisation refined to float64 accuracy (about twice as fast as the float64
        one; see :class:`RidgeStatistics`).  "float64" is exact to float64 rounding.  "auto" (the
        default since this release; it was "float64") is "float32" where the penalty dominates
        that rounding -- ``features`` a randfeat map with dense output (each feature at most
        ``sqrt(2 / D)``, so ``trace(G) <= 2 * sum(sample_weight)``) and every alpha at least
        ``1.2e-6 * sum(sample_weight)`` (``alpha_scale="sum"``; ``1.2e-6`` with "mean"): ten times
        the rounding's bound -- and "float64" otherwise (other features, smaller alphas, e.g.
        the default grid's 1e-3 on more than about 830 rows); see
        :mod:`randfeat.linear._precision`.  The precision used is ``gram_dtype_``.  On Adult,
        cpu_act and KDDCUP99 (alpha = 1) "auto" is float32 with the float64 test errors
        (``benchmarks/README.md``).
    n_threads : int or None, default=None
        Threads of randfeat's compiled feature kernels in :meth:`fit` and :meth:`predict` (a
        randfeat ``features`` map runs with this many; its output does not depend on it).  The
        BLAS and LAPACK calls (each chunk's ``syrk`` and ``gemm``, the Cholesky factorisations)
        are made from the calling thread, one chunk after another, with the process's BLAS
        threads: randfeat does not change them (set them with
        :func:`threadpoolctl.threadpool_limits`, as for scikit-learn).  No call's shape depends
        on ``n_threads``, so the fitted model is bit-identical for every ``n_threads``.  None:
        every CPU available to the process; negative: counted back from that (-1 all, -2 all
        but one).
    store_covariance : bool, default=False
        Keep a square root of the posterior covariance of the weights,
        :math:`(A + \\alpha I)^{-1}` (one D x D float64 matrix: the final Cholesky factor or
        the scaled eigenvectors of the selection, which the fit makes anyway), for
        ``predict(X, return_std=True)`` and :meth:`sample_y`.  Off by default: it makes the
        fitted model D^2 x 8 bytes larger (128 MB at D = 4000).  Needs a solver on the
        statistics ("auto" with dense features, "cholesky", "eigh").

    Attributes
    ----------
    features_ : transformer or None
        The fitted feature map.
    coef_ : ndarray of shape (D,) or (n_targets, D)
    intercept_ : float or ndarray of shape (n_targets,)
    alpha_ : float
        Selected penalty.
    alphas_ : ndarray
        Candidate penalties.
    selection_ : str or None
        The criterion that chose ``alpha_`` ("loo", "gcv", "evidence", "holdout"; None for a
        single alpha; :meth:`partial_fit` reports "gcv" for "loo").
    selection_curve_ : ndarray of shape (n_alphas,) or None
        That criterion for every candidate (leave-one-out or validation mean squared error,
        GCV: smaller is better; log evidence: larger is better).
    selection_results_ : dict or None
        Every criterion the selection's eigendecomposition gives, per candidate: ``"alphas"``,
        ``"df"`` (effective degrees of freedom, the trace of the hat matrix),
        ``"gcv"``, ``"log_evidence"``, ``"noise_variance"`` (n_alphas, n_targets) and, with
        "loo", ``"loo"``.  None for "holdout" and a single alpha.
    validation_scores_ : ndarray of shape (n_alphas,) or None
        Validation mean squared error of every candidate with ``selection="holdout"`` (None
        otherwise).
    noise_variance_ : float or ndarray of shape (n_targets,)
        :math:`\\hat\\sigma^2`, the noise variance of Bayesian linear regression on the
        features that maximises the evidence at ``alpha_``: :math:`E / (n - 1)` with
        :math:`E = \\sum_i s_i (y_i - \\hat y_i)^2 + \\alpha\\lVert w\\rVert^2` (:math:`n`
        rows with a positive weight; :math:`n` without an intercept).
    amplitude_ : float or ndarray of shape (n_targets,)
        :math:`\\tau^2 = \\hat\\sigma^2 / \\alpha` (``alpha`` on the summed scale): the prior
        variance of each weight, i.e. the amplitude of the Gaussian process kernel
        :math:`\\tau^2 z(x)^\\top z(x')` this model is the posterior mean of.
    log_marginal_likelihood_ : float or None
        The log evidence at ``alpha_`` and ``noise_variance_`` (selections "loo", "gcv",
        "evidence"; None otherwise).
    statistics_ : RidgeStatistics
        After :meth:`partial_fit` only: the statistics of every row seen.
    n_features_out_ : int
        Width ``D`` of the feature map.
    solver_ : str
        Solver actually used for the final fit.
    n_iter_ : ndarray of int, shape (n_targets,)
        LSQR/CG iterations per target of the final fit (1 for the direct Cholesky solve).
    gram_dtype_ : {"float64", "float32"}
        Precision of the statistics of the fit (``gram_dtype``, with "auto" resolved).
    n_features_in_ : int

    See Also
    --------
    randfeat.linear.SigmaSearchCV : choose the features' length scale by the same criteria.
    sklearn.linear_model.RidgeCV : the same leave-one-out on explicit features.
    sklearn.gaussian_process.GaussianProcessRegressor : the exact Gaussian process.

    References
    ----------
    Rahimi & Recht (2007), §5 / Table 1 ("Fourier+LS", "Binning+LS"); Le, Sarlós & Smola (2013),
    Table 2.  Leave-one-out and GCV: Golub, Heath & Wahba, *Generalized cross-validation as a
    method for choosing a good ridge parameter*, Technometrics 21 (1979).  The evidence and the
    posterior: MacKay, *Bayesian interpolation*, Neural Computation 4 (1992); Rasmussen &
    Williams, *Gaussian Processes for Machine Learning* (2006), §2.1-2.2 and §2.7.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.kernel_approximation import RBFSampler
    >>> from randfeat.linear import RandomFeatureRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(500, 1)); y = np.sin(X[:, 0])
    >>> model = RandomFeatureRidge(RBFSampler(n_components=200, random_state=0),
    ...                            random_state=0).fit(X, y)
    >>> bool(np.sqrt(np.mean((model.predict(X) - y) ** 2)) < 0.05)
    True
    """

    #: the fit publishes noise_variance_, amplitude_, log_marginal_likelihood_, the posterior
    _bayesian = True

    _parameter_constraints: dict = {
        **_RandomFeatureRidgeBase._parameter_constraints,
        "store_covariance": ["boolean"],
    }

    def __init__(self, features="passthrough", *, alphas=None, alpha_scale="sum",
                 selection="loo", validation_fraction=0.2, chunk_size="auto", solver="auto",
                 fit_intercept=True, tol=1e-8, max_iter=None, random_state=None,
                 gram_dtype="auto", n_threads=None, store_covariance=False):
        super().__init__(features, alphas=alphas, alpha_scale=alpha_scale, selection=selection,
                         validation_fraction=validation_fraction, chunk_size=chunk_size,
                         solver=solver, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter,
                         random_state=random_state, gram_dtype=gram_dtype, n_threads=n_threads)
        self.store_covariance = store_covariance

    def _scores(self, P, Y):
        return float(np.mean((P - Y) ** 2))

    def _row_losses(self, P, Y):
        return np.mean((P - Y) ** 2, axis=1)

    def _loo_sums(self, P, Y, w):
        e = np.mean((P - Y[:, None, :]) ** 2, axis=2)            # (n, L)
        e = np.where(np.isnan(e), np.inf, e)
        return (e.sum(axis=0) if w is None else _weighted_sum(w, e))[:, None]

    def _loo_results(self, means):
        return {"loo": means[:, 0]}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the feature map and the ridge weights.

        The new fit is computed aside and published in one step: if it fails or is interrupted
        (MemoryError, Ctrl-C, bad input), the previous fit is left whole.  A dask array ``X``
        is fitted on its workers (:mod:`randfeat.dask`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights :math:`s_i` of the squared errors (as in scikit-learn's
            ``Ridge.fit``); the selection criteria are weighted means.

        Returns
        -------
        self
        """
        work, X, y, w = self._fit_work(X, y, sample_weight, multi_output=True, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        state = fit_in_memory(work, X, y.reshape(len(y), -1), w, f"{type(self).__name__}.fit")
        return publish(self, work, self._coefficients(state, y.ndim))

    @_fit_context(prefer_skip_nested_validation=False)
    def partial_fit(self, X, y, sample_weight=None):
        """Add the rows ``X``, ``y`` to the fit: the model becomes that of :meth:`fit` on every
        row given so far (to the rounding of the sums).

        The first call fits the feature map on its rows (a map whose ``fit`` reads only the
        shape -- random Fourier features, Fastfood, SORF with a numeric ``sigma`` -- is then the
        one :meth:`fit` would make; a data-dependent one, e.g. ``sigma="scale"``, is fitted on
        this first batch) and starts ``statistics_``, a :class:`RidgeStatistics`; every call
        adds its rows to them and solves again, so each call costs one pass over its rows plus
        one solve (a Cholesky factorisation, or with several alphas one eigendecomposition).
        Alpha is chosen from the statistics alone: ``selection`` "gcv" or "evidence" as
        given; "loo" cannot see the past rows again and is replaced by "gcv", its
        rotation-invariant form (``selection_`` says "gcv"); "holdout" raises.  Only the
        solvers on the statistics are available.  All or nothing: the statistics are copied,
        extended and solved aside, then published with the new model in one step (peak
        memory three D x D arrays).  :meth:`fit` starts over.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            The same number of targets at every call.
        sample_weight : float or array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        who = f"{type(self).__name__}.partial_fit"
        first = "statistics_" not in self.__dict__
        work = working_copy(self)
        X, y = validate_data(work, X, y, reset=first, accept_sparse="csr",
                             dtype=[np.float64, np.float32], ensure_all_finite=True,
                             multi_output=True, y_numeric=True)
        w = check_sample_weight(sample_weight, X.shape[0], who)
        y = np.asarray(y, dtype=np.float64)
        state = fit_partial(work, self, X, y, w, first, who)
        return publish(self, work, self._coefficients(state, state.pop("_y_ndim")))

    @staticmethod
    def _coefficients(state, y_ndim):
        """``coef_`` and ``intercept_`` from the workflow's ``_W`` (D, K) and ``_b`` (K,)."""
        W, b = state.pop("_W"), state.pop("_b")
        if y_ndim == 1:
            state.update(coef_=W[:, 0], intercept_=float(b[0]),
                         noise_variance_=float(state["noise_variance_"][0]),
                         amplitude_=float(state["amplitude_"][0]))
        else:
            state.update(coef_=W.T.copy(), intercept_=b)
        return state

    def predict(self, X, return_std=False):
        """Predict ``z(X) @ coef_ + intercept_`` (featurised chunk by chunk).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the standard deviation of the posterior predictive distribution of
            a new observation at each row (the noise included, as
            :class:`sklearn.linear_model.BayesianRidge`):
            :math:`\\hat\\sigma\\,\\bigl(1 + 1/S + \\tilde z^\\top (A + \\alpha I)^{-1}
            \\tilde z\\bigr)^{1/2}`, equal to that of the Gaussian process with kernel
            ``amplitude_ * z(x)ᵀz(x')`` and noise ``noise_variance_`` (a constant mean with a
            flat prior).  Needs ``store_covariance=True``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_targets)
        y_std : ndarray of the same shape
            Only with ``return_std=True``.
        """
        if not return_std:
            out = self._decision(X)
            return out[:, 0] if np.ndim(self.coef_) == 1 else out
        post = self._posterior_or_raise("predict(X, return_std=True)")
        out, lv = self._decision(X, posterior=post)
        std = np.sqrt(post.noise_variance[None, :] * (lv[:, None] + 1.0))
        if np.ndim(self.coef_) == 1:
            return out[:, 0], std[:, 0]
        return out, std

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw functions from the posterior at the rows ``X`` (jointly).

        Each draw is :math:`\\bar y + \\tilde z(x)^\\top w + \\beta` with :math:`w` and the
        intercept's part :math:`\\beta` from their posterior (Bayesian linear regression on
        the features, the Gaussian process with kernel ``amplitude_ * z(x)ᵀz(x')``): the latent
        function, without the observation noise (add :math:`N(0,` ``noise_variance_``
        :math:`)` for new observations), as
        :meth:`sklearn.gaussian_process.GaussianProcessRegressor.sample_y`.  Costs
        :math:`O(D^2)` per row and draw set; the draws do not depend on how ``X`` is chunked.
        Needs ``store_covariance=True``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples_X, n_features)
        n_samples : int, default=1
            Number of functions drawn.
        random_state : int, Generator, SeedSequence, RandomState or None, default=0
            randfeat's rule (:func:`randfeat._validation.check_random_state`).

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples) or (n_samples_X, n_targets,
            n_samples)
        """
        who = f"{type(self).__name__}.sample_y"
        if (not isinstance(n_samples, numbers.Integral) or isinstance(n_samples, bool)
                or n_samples < 1):
            raise ValueError(f"{who}: n_samples must be an integer >= 1, got {n_samples!r}")
        post = self._posterior_or_raise("sample_y")
        rng = check_random_state(random_state)
        K = post.noise_variance.size
        D = self.n_features_out_
        xi = standard_normal(rng, (K, D + 1, int(n_samples)))
        out = self._decision(X, posterior=post, draws=xi)
        return out[:, 0] if np.ndim(self.coef_) == 1 else out

    def _posterior_or_raise(self, what):
        check_is_fitted(self)
        post = self.__dict__.get("_posterior")
        if post is None:
            raise ValueError(f"{type(self).__name__}.{what} needs the posterior covariance: fit "
                             f"with store_covariance=True (it keeps one D x D matrix)")
        return post


def _weighted_sum(w, e):
    """Sum over rows of ``w[:, None] * e`` with rows of weight 0 counting 0 even where ``e``
    is infinite (their leave-one-out residual is never used)."""
    pos = w > 0
    return _oneblas.matmul(w[pos], e[pos])


class RandomFeatureRidgeClassifier(ClassifierMixin, _RandomFeatureRidgeBase):
    """Least-squares classification on random features (±1 / one-vs-rest targets).

    Fits :class:`RandomFeatureRidge` to the targets :math:`\\pm 1` (two classes) or to one
    :math:`\\pm 1` column per class (more than two, one-vs-rest) and predicts the class of the
    sign / largest score — the "Fourier+LS" and "Binning+LS" classifiers of Rahimi & Recht (2007,
    Table 1).  ``alpha`` is chosen by *error rate* -- the leave-one-out error rate by default
    (``selection="loo"``), or that of a validation split (``"holdout"``); among alphas with the
    same error rate, by the squared error of the scores on the ±1 targets (then the larger
    ``alpha``).  ``"gcv"`` and ``"evidence"`` choose by the squared error of the scores (their
    Gaussian model of the ±1 targets).  Parameters as in :class:`RandomFeatureRidge` (but
    ``store_covariance``), and:

    Parameters
    ----------
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplying ``sample_weight`` (as in scikit-learn's
        ``RidgeClassifier``): a dict ``{class: weight}`` (classes not named weigh 1) or
        "balanced", ``n_samples / (n_classes * count(class))``.

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (1, D) (binary) or (n_classes, D)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    alpha_, alphas_, selection_, selection_curve_, validation_scores_, \
log_marginal_likelihood_, features_, n_features_out_, solver_, n_iter_, gram_dtype_
        As in :class:`RandomFeatureRidge`; ``selection_curve_`` (with "loo") and
        ``validation_scores_`` (with "holdout") are error rates plus a tie-break term below
        1e-9 (the squared error mapped to [0, 1e-9)).
    selection_results_ : dict or None
        As in :class:`RandomFeatureRidge`; with "loo" also ``"loo_error_rate"`` (the weighted
        fraction of rows whose leave-one-out class -- the sign, or the largest of the
        one-vs-rest scores -- is wrong) and ``"loo_squared_error"`` (the weighted mean over
        rows and columns of the squared leave-one-out residuals of the ±1 targets: the
        criterion of scikit-learn's ``RidgeClassifierCV``, which equals it unweighted).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.linear import RandomFeatureRidgeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = np.where(X[:, 0] > 0, "a", "b")
    >>> clf = RandomFeatureRidgeClassifier(random_state=0).fit(X, y)
    >>> float(clf.score(X, y)) > 0.95
    True
    """

    _parameter_constraints: dict = {
        **_RandomFeatureRidgeBase._parameter_constraints,
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, features="passthrough", *, alphas=None, alpha_scale="sum",
                 class_weight=None, selection="loo", validation_fraction=0.2,
                 chunk_size="auto", solver="auto", fit_intercept=True, tol=1e-8, max_iter=None,
                 random_state=None, gram_dtype="auto", n_threads=None):
        super().__init__(features, alphas=alphas, alpha_scale=alpha_scale, selection=selection,
                         validation_fraction=validation_fraction, chunk_size=chunk_size,
                         solver=solver, fit_intercept=fit_intercept, tol=tol, max_iter=max_iter,
                         random_state=random_state, gram_dtype=gram_dtype, n_threads=n_threads)
        self.class_weight = class_weight

    # weight of the tie-break term of the validation loss: below one misclassified row of any
    # validation set of fewer than 5e8 rows (the term's mean is < _TIE_BREAK)
    _TIE_BREAK = 1e-9

    def _scores(self, P, Y):
        return float(np.mean(self._row_losses(P, Y)))

    def _row_losses(self, P, Y):
        """0-1 loss of every row plus ``_TIE_BREAK`` times its squared error on the ±1 targets
        mapped to [0, 1) by e / (1 + e): error rates decide, and among alphas with the same
        error rate (frequent: error rates are multiples of 1 / n_val) the smaller squared error
        wins, instead of the largest alpha, which on separable data shrank the scores until
        one-vs-rest failed (e.g. 0.70 training accuracy on three separated blobs)."""
        if Y.shape[1] == 1:
            miss = np.sign(P[:, 0]) != Y[:, 0]
        else:
            miss = np.argmax(P, axis=1) != np.argmax(Y, axis=1)
        e = np.sum((P - Y) ** 2, axis=1)
        return miss.astype(np.float64) + self._TIE_BREAK * (e / (1.0 + e))

    def _loo_sums(self, P, Y, w):
        """Per alpha, the summed (weighted) leave-one-out [loss of ``_row_losses``, errors,
        squared errors averaged over the K columns]: (L, 3)."""
        L = P.shape[1]
        out = np.empty((P.shape[0], L, 3))
        for j in range(L):
            Pj = np.where(np.isnan(P[:, j]), np.inf, P[:, j])
            if Y.shape[1] == 1:
                miss = np.sign(Pj[:, 0]) != Y[:, 0]
            else:
                miss = np.argmax(Pj, axis=1) != np.argmax(Y, axis=1)
            e = np.sum((Pj - Y) ** 2, axis=1)
            with np.errstate(invalid="ignore"):
                frac = np.where(np.isinf(e), 1.0, e / (1.0 + e))
            out[:, j, 0] = miss + self._TIE_BREAK * frac       # _row_losses, inf-safe
            out[:, j, 1] = miss
            out[:, j, 2] = e / Y.shape[1]
        if w is None:
            return out.sum(axis=0)
        pos = w > 0
        return np.einsum("i,ilm->lm", w[pos], out[pos])

    def _loo_results(self, means):
        return {"loo": means[:, 0], "loo_error_rate": means[:, 1],
                "loo_squared_error": means[:, 2]}

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the feature map and one least-squares scorer per class (±1 targets).

        All or nothing, as :meth:`RandomFeatureRidge.fit`; a dask array ``X`` is fitted on its
        workers (:mod:`randfeat.dask`; ``sample_weight`` and ``class_weight`` are not
        supported there).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights of the squared errors, multiplied by the weights of
            ``class_weight`` (as in scikit-learn's ``RidgeClassifier.fit``).

        Returns
        -------
        self
        """
        who = f"{type(self).__name__}.fit"
        work, X, y, w = self._fit_work(X, y, sample_weight)
        check_classification_targets(y)
        lb = LabelBinarizer(neg_label=-1, pos_label=1)
        Y = lb.fit_transform(y).astype(np.float64)
        classes = lb.classes_
        if len(classes) < 2:
            raise ValueError(f"RandomFeatureRidgeClassifier needs at least 2 classes in y, got "
                             f"1 class ({classes!r})")
        if self.class_weight is not None:
            if isinstance(self.class_weight, dict):
                unknown = set(self.class_weight) - set(classes.tolist())
                if unknown:
                    raise ValueError(f"{who}: class_weight names classes that are not in y: "
                                     f"{sorted(unknown, key=str)!r}; the classes are "
                                     f"{classes.tolist()!r}")
            cw = compute_sample_weight(self.class_weight, y)
            w = cw if w is None else w * cw
        if w is not None:
            weighted = np.unique(np.asarray(y)[w > 0])
            if len(weighted) < 2:
                raise ValueError(f"{who}: needs at least 2 classes with a positive weight, got "
                                 f"{len(weighted)} class(es) ({weighted!r}) after sample_weight "
                                 f"and class_weight")
        state = fit_in_memory(work, X, Y, w, who)
        state.update(_label_binarizer=lb, classes_=classes)
        return publish(self, work, self._coefficients(state))

    @staticmethod
    def _coefficients(state):
        """``coef_`` (n_classes or 1, D) and ``intercept_`` from ``_W`` and ``_b``."""
        W, b = state.pop("_W"), state.pop("_b")
        state.update(coef_=W.T.copy(), intercept_=b)
        return state

    def decision_function(self, X):
        """Least-squares scores: shape (n_samples,) for two classes, else (n_samples, n_classes)."""
        out = self._decision(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X):
        """Class of the positive score (binary) or of the largest score (one-vs-rest)."""
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]
