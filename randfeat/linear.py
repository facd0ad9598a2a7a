"""Linear learners on random features: ridge regression and least-squares classification.

Both papers train a *linear* model on the random features :math:`z(x) \\in \\mathbb{R}^D`
(Rahimi & Recht 2007, §5 and Table 1, "Fourier+LS", "Binning+LS"; Le, Sarlós & Smola 2013,
§6, Table 2): ridge regression

.. math::

    \\min_{w, b}\\; \\frac{1}{n}\\sum_{i=1}^n \\bigl(y_i - z(x_i)^\\top w - b\\bigr)^2
    + \\alpha \\lVert w \\rVert_2^2 ,

and classification by least squares on :math:`\\pm 1` targets (one-vs-rest columns for more than
two classes), predicting the sign / the arg-max of the fitted scores.

Two solvers, chosen from the type of the features:

* **dense features** (random Fourier, Fastfood, Nyström): *streaming normal equations*.  The
  feature transformer is applied to ``chunk_size`` rows at a time and only the sufficient
  statistics :math:`Z^\\top Z`, :math:`Z^\\top Y`, :math:`Z^\\top 1`, :math:`1^\\top Y` are kept
  (memory :math:`O(D^2 + DK)`, never :math:`N \\times D`); each chunk's :math:`Z^\\top Z` is
  one BLAS ``syrk`` (float64 by default, float32 per chunk with ``gram_dtype="float32"``).
  With the centred statistics :math:`A = Z_c^\\top Z_c`, :math:`c = Z_c^\\top Y_c` the solution is
  :math:`w = (A + n\\alpha I)^{-1} c`, :math:`b = \\bar y - \\bar z^\\top w`.  A grid of
  :math:`\\alpha` is solved from one accumulation by one Cholesky factorisation per
  :math:`\\alpha` (:func:`scipy.linalg.cho_factor` / :func:`scipy.linalg.cho_solve`), falling back
  to the eigendecomposition :math:`A = Q \\Lambda Q^\\top`
  (:math:`w_\\alpha = Q (\\Lambda + n\\alpha)^{-1} Q^\\top c`) when a factorisation fails.
* **sparse features** (random binning, CSR with a hashed, possibly huge width): the centred
  design is wrapped in a :class:`scipy.sparse.linalg.LinearOperator` (so centring never
  densifies it) and solved by damped LSQR (``damp = sqrt(n alpha)``; default) or by conjugate
  gradients on the regularised normal equations.

The regularisation :math:`\\alpha` is chosen on a random validation split
(``validation_fraction`` of the rows): statistics of the training part and of the validation part
are accumulated separately (every row is featurised once), the validation error of every
:math:`\\alpha` is measured, and the model is refitted on all rows with the best one.

References
----------
.. [RR07] A. Rahimi and B. Recht. Random features for large-scale kernel machines. NIPS 2007.
.. [LSS13] Q. Le, T. Sarlós and A. Smola. Fastfood — approximating kernel expansions in loglinear
   time. ICML 2013.
"""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat import dask as _dask
from randfeat._base import RandomFeaturesBase
from randfeat._parallel import OrderedPool, blas_limit
from randfeat._validation import N_THREADS_CONSTRAINT, check_n_threads, check_random_state

__all__ = ["RandomFeatureRidge", "RandomFeatureRidgeClassifier"]

DEFAULT_ALPHAS = tuple(10.0 ** np.arange(-8, 1))


class _RandomFeatureRidgeBase(BaseEstimator):
    """Shared fitting machinery (see the module docstring for the mathematics)."""

    _parameter_constraints: dict = {
        "features": [HasMethods(["fit", "transform"]), StrOptions({"passthrough"}), None],
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="neither")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "chunk_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "solver": [StrOptions({"auto", "cholesky", "lsqr", "cg"})],
        "fit_intercept": ["boolean"],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "gram_dtype": [StrOptions({"float64", "float32"})],
        "n_threads": N_THREADS_CONSTRAINT,
    }

    def __init__(self, features="passthrough", *, alphas=DEFAULT_ALPHAS, validation_fraction=0.2,
                 chunk_size=4096, solver="auto", fit_intercept=True, tol=1e-8, max_iter=None,
                 random_state=None, gram_dtype="float64", n_threads=None):
        self.features = features
        self.alphas = alphas
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
        alphas = np.atleast_1d(np.asarray(self.alphas, dtype=np.float64))
        if alphas.ndim != 1 or alphas.size == 0:
            raise ValueError(f"alphas must be a positive number or a non-empty 1-D sequence of "
                             f"positive numbers, got {self.alphas!r}")
        if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
            raise ValueError(f"alphas must all be finite and > 0 (the regularisation per "
                             f"sample), got {self.alphas!r}; use e.g. np.logspace(-8, 0, 9)")
        return alphas

    def _transform(self, X, feats=None):
        """Features of X by ``feats`` (default: ``features_``); None is the identity."""
        feats = self.features_ if feats is None else feats
        return X if feats is None else feats.transform(X)

    def _chunks(self, n):
        step = int(self.chunk_size)
        for start in range(0, n, step):
            yield slice(start, min(n, start + step))

    @staticmethod
    def _as64(Z):
        if sp.issparse(Z):
            return Z.tocsr().astype(np.float64, copy=False)
        return np.asarray(Z, dtype=np.float64)

    def _worker_features(self):
        """The fitted feature map as used by the worker threads of :class:`OrderedPool`.

        A randfeat map is shallow-copied with ``n_threads=1`` (its output does not depend on
        ``n_threads``): the learner's threads already run one chunk each.  Other transformers are
        used as they are (their ``transform`` must be thread-safe, as scikit-learn's are).
        """
        f = self.features_
        if isinstance(f, RandomFeaturesBase):
            f = copy.copy(f)
            f.n_threads = 1
        return f

    def _chunk_stats(self, feats, X, Y, sl, path=None):
        """Sufficient statistics of the rows ``sl`` of X: [ZᵀZ, ZᵀY, Σz, ΣY, rows], and with
        ``path=(Wf, b)`` also the summed validation score of every alpha of the path."""
        Z = self._transform(X[sl], feats)
        Yc = Y[sl]
        G, Z = self._chunk_gram(Z)
        out = [G, np.asarray(Z.T @ Yc), np.asarray(Z.sum(axis=0)).ravel(), Yc.sum(axis=0),
               len(Yc)]
        if path is not None:
            Wf, b = path
            L, K = b.shape
            P = np.asarray(Z @ Wf).reshape(-1, L, K) + b[None]
            out.append(np.array([self._scores(P[:, j], Yc) for j in range(L)]) * len(Yc))
        return out

    def _accumulate(self, pool, feats, X, Y, path=None):
        """Chunk statistics of all rows of X, computed by the pool's threads and summed in chunk
        order (so the sums are bit-identical for every ``n_threads``)."""
        total = None
        for r in pool.map(lambda sl: self._chunk_stats(feats, X, Y, sl, path),
                          self._chunks(X.shape[0])):
            if total is None:
                total = r
            else:
                for i in range(len(r)):
                    total[i] += r[i]
        return total

    def _chunk_gram(self, Z):
        """``(ZᵀZ, Z as float64)`` for one chunk; the Gram is float64 (to be summed in float64).

        Dense chunks: NumPy evaluates ``Z.T @ Z`` with BLAS ``syrk`` (one triangle, half the
        flops of a general product).  ``gram_dtype="float32"`` forms the chunk product in single
        precision (``ssyrk``, about twice as fast), so the rounding error of an entry is about
        ``chunk_size * 6e-8`` times the sum of the absolute products of that chunk, independent
        of the number of chunks.
        """
        if sp.issparse(Z):
            Z = self._as64(Z)
            return (Z.T @ Z).toarray(), Z
        if self.gram_dtype == "float32":
            Z32 = np.asarray(Z, dtype=np.float32)
            return (Z32.T @ Z32).astype(np.float64), self._as64(Z)
        Z = self._as64(Z)
        return Z.T @ Z, Z

    def _centred(self, stats):
        G, C, s, sy, n = stats
        if not self.fit_intercept:
            return G, C, np.zeros_like(s), np.zeros_like(sy), n
        mz, my = s / n, sy / n
        return G - n * np.outer(mz, mz), C - n * np.outer(mz, my), mz, my, n

    def _solve_path(self, stats, alphas, pool=None):
        r"""Coefficients for every alpha from one accumulation: W (L, D, K), b (L, K).

        One Cholesky factorisation of :math:`A + n\alpha I` per alpha (about 15 times cheaper
        than an eigendecomposition each, so faster for fewer than ~15 alphas; the alphas are
        spread over the ``pool``'s threads); if a factorisation fails (alpha below the round-off
        of A), the eigendecomposition :math:`A = Q\Lambda Q^\top` gives
        :math:`w = Q(\Lambda + n\alpha)^{-1}Q^\top c`.
        """
        A, c, mz, my, n = self._centred(stats)
        A = 0.5 * (A + A.T)

        def cholesky(a):
            M = A.copy().T  # = A (symmetric), in LAPACK's layout: factorised in place
            M[np.diag_indices_from(M)] += n * a
            try:
                cf = scipy.linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
                return scipy.linalg.cho_solve(cf, c, check_finite=False)
            except np.linalg.LinAlgError:
                return None

        sols = list((pool or OrderedPool(1)).map(cholesky, alphas))
        eig = None
        W = np.empty((len(alphas), A.shape[0], c.shape[1]))
        for j, a in enumerate(alphas):
            if sols[j] is not None:
                W[j] = sols[j]
                continue
            if eig is None:
                ev, Q = scipy.linalg.eigh(A, check_finite=False)
                eig = (np.clip(ev, 0.0, None), Q, Q.T @ c)
            ev, Q, Qc = eig
            W[j] = Q @ (Qc / (ev + n * a)[:, None])
        b = my[None, :] - np.einsum("d,ldk->lk", mz, W)
        return W, b

    def _solve_one(self, stats, alpha):
        """Final solve by Cholesky (falls back to the eigen-solution if A + nαI is not PD)."""
        A, c, mz, my, n = self._centred(stats)
        A = (0.5 * (A + A.T)).T  # symmetric; the transpose is LAPACK's layout (no copy)
        A[np.diag_indices_from(A)] += n * alpha
        try:
            cf = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
            W = scipy.linalg.cho_solve(cf, c, check_finite=False)
            self.solver_ = "cholesky"
        except np.linalg.LinAlgError:  # pragma: no cover - needs a pathologically tiny alpha
            W = self._solve_path(stats, [alpha])[0][0]
            self.solver_ = "eigh"
        b = my - mz @ W
        return W, b

    def _iterative(self, Z, Y, alpha, solver, x0=None):
        """Solve the centred, damped least-squares problem with LSQR or CG, column by column.

        The vector operations of the Krylov loop are level-1 BLAS on short vectors: BLAS threads
        only add synchronisation (badly so on a loaded machine), so they are limited to one.
        """
        with blas_limit(1):
            return self._iterative_impl(Z, Y, alpha, solver, x0)

    def _iterative_impl(self, Z, Y, alpha, solver, x0):
        n, D = Z.shape
        mz = (np.asarray(Z.mean(axis=0)).ravel() if self.fit_intercept else np.zeros(D))
        my = Y.mean(axis=0) if self.fit_intercept else np.zeros(Y.shape[1])

        def mv(v):
            v = np.ravel(v)
            return Z @ v - mz @ v

        def rmv(u):
            u = np.ravel(u)
            return np.asarray(Z.T @ u).ravel() - mz * u.sum()

        op = spla.LinearOperator((n, D), matvec=mv, rmatvec=rmv, dtype=np.float64)
        W = np.zeros((D, Y.shape[1]))
        iters = []
        for k in range(Y.shape[1]):
            yk = Y[:, k] - my[k]
            start = None if x0 is None else x0[:, k]
            if solver == "lsqr":
                # no warm start: with x0, SciPy's LSQR damps the correction x - x0, not x
                res = spla.lsqr(op, yk, damp=np.sqrt(n * alpha), atol=self.tol, btol=self.tol,
                                iter_lim=self.max_iter)
                W[:, k], it = res[0], res[2]
            else:  # cg on (ZcᵀZc + nαI) w = Zcᵀ y
                normal = spla.LinearOperator(
                    (D, D), matvec=lambda v: rmv(mv(v)) + n * alpha * np.ravel(v),
                    dtype=np.float64)
                counter = []
                W[:, k], info = spla.cg(normal, rmv(yk), x0=start, rtol=self.tol, atol=0.0,
                                        maxiter=self.max_iter,
                                        callback=lambda _x, counter=counter: counter.append(1))
                it = len(counter)
                if info > 0:
                    warnings.warn(f"CG did not converge in {info} iterations; raise max_iter "
                                  f"or tol", RuntimeWarning, stacklevel=3)
            iters.append(int(it))
        b = my - mz @ W
        return W, b, iters

    def _scores(self, P, Y):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------------ fit / predict
    def _fit(self, X, Y):
        alphas = self._check_alphas()
        self.features_ = (None if self.features in (None, "passthrough")
                          else clone(self.features).fit(X))
        n = X.shape[0]
        probe = self._transform(X[:1])
        D = probe.shape[1]
        sparse_out = sp.issparse(probe)
        solver = self.solver
        if solver == "auto":
            solver = "lsqr" if sparse_out else "cholesky"
        self.n_features_out_ = D

        if alphas.size > 1:
            if n < 2:
                raise ValueError(f"choosing alpha on a validation split needs at least 2 "
                                 f"samples, got n_samples={n}; pass a single alpha instead")
            rng = check_random_state(self.random_state)
            perm = rng.permutation(n)
            n_val = min(n - 1, max(1, int(round(self.validation_fraction * n))))
            tr, va = np.sort(perm[n_val:]), np.sort(perm[:n_val])
        else:
            tr, va = np.arange(n), None

        if solver == "cholesky":
            feats = self._worker_features()
            # BLAS single-threaded, chunks and alphas spread over n_threads threads: the
            # rounding then does not depend on n_threads (OpenBLAS's threaded syrk/potrf do)
            with OrderedPool(check_n_threads(self.n_threads)) as pool:
                stats = self._accumulate(pool, feats, X[tr], Y[tr])
                if va is not None:
                    W, b = self._solve_path(stats, alphas, pool)
                    L, K = len(alphas), Y.shape[1]
                    Wf = W.transpose(1, 0, 2).reshape(D, L * K)
                    vstats = self._accumulate(pool, feats, X[va], Y[va], path=(Wf, b))
                    self.validation_scores_ = vstats.pop() / len(va)
                    best = self._best(self.validation_scores_)
                    stats = [a + v for a, v in zip(stats, vstats, strict=True)]
                else:
                    best = 0
                self.alpha_ = float(alphas[best])
                W, b = self._solve_one(stats, self.alpha_)
            self.n_iter_ = np.ones(Y.shape[1], dtype=int)  # one direct solve per target
        else:
            Z = self._as64(self._transform(X))
            if sp.issparse(Z):
                # keep only occupied columns (hashed binning features are mostly empty); the
                # weights of never-occupied columns are exactly 0
                cols = np.flatnonzero(np.bincount(Z.indices, minlength=D))
                Z = Z[:, cols].tocsr()
            else:
                Z, cols = np.ascontiguousarray(Z), None
            if va is not None:
                Ztr, Zva = Z[tr], Z[va]
                errs = np.zeros(len(alphas))
                Wprev = None
                # largest alpha first; CG warm-starts the next alpha from the previous solution
                for j in np.argsort(alphas)[::-1]:
                    W, b, _ = self._iterative(Ztr, Y[tr], alphas[j], solver, x0=Wprev)
                    Wprev = W if solver == "cg" else None
                    errs[j] = self._scores(np.asarray(Zva @ W) + b, Y[va])
                self.validation_scores_ = errs
                best = self._best(self.validation_scores_)
            else:
                best, Wprev = 0, None
            self.alpha_ = float(alphas[best])
            W, b, n_iter = self._iterative(Z, Y, self.alpha_, solver)
            self.n_iter_ = np.array(n_iter, dtype=int)
            if cols is not None:
                Wfull = np.zeros((D, W.shape[1]))
                Wfull[cols] = W
                W = Wfull
            self.solver_ = solver
        if va is None:
            self.validation_scores_ = None
        self.alphas_ = alphas
        return W, b

    def _best(self, scores):
        # smallest validation score; among ties (to round-off) the largest, safest alpha
        alphas = self._check_alphas()
        m = np.min(scores)
        ties = np.flatnonzero(scores <= m * (1 + 1e-12) + 1e-300)
        return int(ties[np.argmax(alphas[ties])])

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, accept_sparse="csr",
                          dtype=[np.float64, np.float32], ensure_all_finite=True)
        out = np.empty((X.shape[0], self.coef_.reshape(-1, self.n_features_out_).shape[0]))
        Wt = self.coef_.reshape(-1, self.n_features_out_).T
        b = np.atleast_1d(self.intercept_)
        feats = self._worker_features()

        def work(sl):
            out[sl] = np.asarray(self._as64(self._transform(X[sl], feats)) @ Wt) + b

        with OrderedPool(check_n_threads(self.n_threads)) as pool:
            for _ in pool.map(work, self._chunks(X.shape[0])):
                pass
        return out

    def _validate_fit_X(self, X, y, **kw):
        return validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             ensure_all_finite=True, **kw)

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
    """Ridge regression on random features, α chosen on a validation split.

    Minimises :math:`\\frac1n\\sum_i (y_i - z(x_i)^\\top w - b)^2 + \\alpha\\lVert w\\rVert^2`
    where :math:`z` is the fitted ``features`` transformer (so ``alpha`` is a *per-sample*
    penalty: this equals :class:`sklearn.linear_model.Ridge` with ``alpha = n_samples * alpha`` on
    the explicit features).  Dense features are handled by streaming normal equations
    (``chunk_size`` rows at a time, never an ``n_samples x D`` matrix) and a Cholesky solve;
    sparse features (random binning) by damped LSQR or CG.  See :mod:`randfeat.linear`.

    Parameters
    ----------
    features : transformer, "passthrough" or None, default="passthrough"
        Unfitted feature map (e.g. :class:`randfeat.RandomFourierFeatures`); it is cloned and
        fitted on ``X`` inside :meth:`fit` (fitted copy in ``features_``).  "passthrough"/None
        uses ``X`` itself (plain ridge regression).
    alphas : float or array-like of float, default=10**arange(-8, 1)
        Candidate per-sample penalties (> 0).  With a single value no validation split is made.
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out to choose ``alpha``; the model is then refitted on all rows.
    chunk_size : int, default=4096
        Rows featurised at a time (memory ``chunk_size x D``).
    solver : {"auto", "cholesky", "lsqr", "cg"}, default="auto"
        "auto" uses "cholesky" (streaming normal equations) for dense features and "lsqr" for
        sparse ones.  "lsqr"/"cg" materialise the whole feature matrix (cheap when sparse).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (centred normal equations).
    tol : float, default=1e-8
        Tolerance of LSQR (``atol = btol = tol``) and relative tolerance of CG.
    max_iter : int or None, default=None
        Iteration cap of LSQR/CG (None: the SciPy default).
    random_state : None, int or Generator, default=None
        Seeds the validation split (the feature map has its own ``random_state``).
    gram_dtype : {"float64", "float32"}, default="float64"
        Precision of each chunk's :math:`Z^\top Z` product (dense features; always accumulated
        over chunks and solved in float64).  "float32" halves the dominant cost of a fit with
        wide features (single-precision ``syrk``) at a relative error of about
        ``chunk_size * 6e-8`` per Gram entry: use it only when ``n_samples * alpha`` is far above
        that error (moderate alphas); the default is exact to float64 rounding.
    n_threads : int or None, default=None
        Threads of :meth:`fit` and :meth:`predict`: chunks of rows (featurised, their
        :math:`Z^\top Z` formed) and the alphas of the Cholesky path are spread over this many
        threads, each running single-threaded BLAS, and the chunk statistics are summed in chunk
        order, so the fitted model is bit-identical for every ``n_threads``.  None: every CPU
        available to the process; negative: counted back from that (-1 all, -2 all but one).
        Holds up to ``n_threads + 1`` chunk Grams (:math:`D \times D` each) at a time.

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
    validation_scores_ : ndarray of shape (n_alphas,) or None
        Validation mean squared error of every candidate (None without validation).
    n_features_out_ : int
        Width ``D`` of the feature map.
    solver_ : str
        Solver actually used for the final fit.
    n_iter_ : ndarray of int, shape (n_targets,)
        LSQR/CG iterations per target of the final fit (1 for the direct Cholesky solve).
    n_features_in_ : int

    References
    ----------
    Rahimi & Recht (2007), §5 / Table 1 ("Fourier+LS", "Binning+LS"); Le, Sarlós & Smola (2013),
    Table 2.

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

    def _scores(self, P, Y):
        return float(np.mean((P - Y) ** 2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the feature map and the ridge weights.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)

        Returns
        -------
        self
        """
        if _dask.is_dask_array(X):
            return _dask.fit_ridge(self, X, y)
        X, y = self._validate_fit_X(X, y, multi_output=True, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        Y = y.reshape(len(y), -1)
        W, b = self._fit(X, Y)
        if y.ndim == 1:
            self.coef_, self.intercept_ = W[:, 0], float(b[0])
        else:
            self.coef_, self.intercept_ = W.T.copy(), b
        return self

    def predict(self, X):
        """Predict ``z(X) @ coef_ + intercept_`` (featurised chunk by chunk)."""
        if _dask.is_dask_array(X):
            return _dask.predict(self, X)
        out = self._decision(X)
        return out[:, 0] if np.ndim(self.coef_) == 1 else out


class RandomFeatureRidgeClassifier(ClassifierMixin, _RandomFeatureRidgeBase):
    """Least-squares classification on random features (±1 / one-vs-rest targets).

    Fits :class:`RandomFeatureRidge` to the targets :math:`\\pm 1` (two classes) or to one
    :math:`\\pm 1` column per class (more than two, one-vs-rest) and predicts the class of the
    sign / largest score — the "Fourier+LS" and "Binning+LS" classifiers of Rahimi & Recht (2007,
    Table 1).  ``alpha`` is chosen by validation *error rate* (ties: the larger ``alpha``).
    Parameters as in :class:`RandomFeatureRidge`.

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (1, D) (binary) or (n_classes, D)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    alpha_, alphas_, validation_scores_, features_, n_features_out_, solver_, n_iter_
        As in :class:`RandomFeatureRidge`; ``validation_scores_`` are error rates.

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

    def _scores(self, P, Y):
        if Y.shape[1] == 1:
            return float(np.mean(np.sign(P[:, 0]) != Y[:, 0]))
        return float(np.mean(np.argmax(P, axis=1) != np.argmax(Y, axis=1)))

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the feature map and one least-squares scorer per class (±1 targets)."""
        if _dask.is_dask_array(X):
            return _dask.fit_ridge(self, X, y)
        X, y = self._validate_fit_X(X, y)
        check_classification_targets(y)
        self._label_binarizer = LabelBinarizer(neg_label=-1, pos_label=1)
        Y = self._label_binarizer.fit_transform(y).astype(np.float64)
        self.classes_ = self._label_binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"RandomFeatureRidgeClassifier needs at least 2 classes in y, got "
                             f"1 class ({self.classes_!r})")
        W, b = self._fit(X, Y)
        self.coef_, self.intercept_ = W.T.copy(), b
        return self

    def decision_function(self, X):
        """Least-squares scores: shape (n_samples,) for two classes, else (n_samples, n_classes)."""
        if _dask.is_dask_array(X):
            return _dask.decision_function(self, X)
        out = self._decision(X)
        return out[:, 0] if out.shape[1] == 1 else out

    def predict(self, X):
        """Class of the positive score (binary) or of the largest score (one-vs-rest)."""
        if _dask.is_dask_array(X):
            return _dask.predict(self, X)
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]
