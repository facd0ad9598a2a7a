r"""Nyström features: a kernel map from landmarks (Williams & Seeger 2001), with uniform or
ridge-leverage-score sampling of the landmarks (Musco & Musco 2017)."""

from __future__ import annotations

import math
import numbers
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.base import _fit_context
from sklearn.metrics.pairwise import (
    KERNEL_PARAMS,
    PAIRWISE_KERNEL_FUNCTIONS,
    pairwise_kernels,
    rbf_kernel,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from randfeat._base import RandomFeaturesBase, divide_columns, resolve_kernel
from randfeat._validation import N_THREADS_CONSTRAINT, RANDOM_STATE_CONSTRAINT, SIGMA_CONSTRAINT
from randfeat.kernels import ShiftInvariantKernel
from randfeat.kernels._registry import _LOOKUP, _canonical
from randfeat.sketch import _ReadOnlyFit

__all__ = ["Nystroem", "successive_sampling"]

#: scikit-learn's kernel names that are not shift-invariant: their parameters are scikit-learn's
#: gamma, coef0 and degree (with scikit-learn's defaults)
SKLEARN_KERNELS = tuple(sorted(set(PAIRWISE_KERNEL_FUNCTIONS) - {"rbf", "laplacian"}))
#: every kernel name Nystroem accepts
KERNEL_CHOICES = frozenset(SKLEARN_KERNELS) | frozenset(_LOOKUP) | {"rbf", "laplacian",
                                                                   "precomputed"}
#: rows of one block of the kernel matrix (fixed: the output does not depend on n_threads)
_ROWS = 512


def successive_sampling(weights, m, rng):
    r"""``m`` distinct indices drawn one after the other, each with probability proportional to
    its weight among those not drawn yet ("successive sampling"), by the Gumbel-top-m rule:
    the ``m`` largest :math:`\log w_i + G_i` (:math:`G_i` iid standard Gumbel) in decreasing
    order have exactly that law.  Indices of weight 0 come last, uniformly at random, when
    fewer than ``m`` weights are positive.

    Parameters
    ----------
    weights : ndarray of shape (n,), >= 0
    m : int, 0 <= m <= n
    rng : numpy Generator

    Returns
    -------
    ndarray of int64, shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> successive_sampling(np.array([0.0, 1.0, 0.0, 1.0]), 2,
    ...                     np.random.default_rng(0)).tolist() in ([1, 3], [3, 1])
    True
    """
    w = np.asarray(weights, dtype=np.float64)
    g = rng.gumbel(size=w.size)
    with np.errstate(divide="ignore"):
        key = np.where(w > 0, np.log(np.where(w > 0, w, 1.0)) + g, -np.inf)
    order = np.argsort(-key, kind="stable")[:m]
    pos = order[np.isfinite(key[order])]
    if pos.size < m:
        rest = np.flatnonzero(~(w > 0))
        pos = np.concatenate([pos, rng.permutation(rest)[:m - pos.size]])
    return pos.astype(np.int64)


class Nystroem(_ReadOnlyFit, RandomFeaturesBase):
    r"""Nyström features for any positive-definite kernel (Williams & Seeger 2001).

    From :math:`m` landmarks :math:`S` (``n_components`` rows of the training data), the map
    is :math:`z(x) = K_{SS}^{+1/2} k_S(x)`, :math:`k_S(x) = [k(x, s)]_{s\in S}`, so that

    .. math:: z(x)^\top z(y) = k_S(x)^\top K_{SS}^{+} k_S(y),\qquad
              Z Z^\top = K_{nS} K_{SS}^{+} K_{Sn}:

    deterministic given the landmarks (:math:`K_{SS}^+` the pseudo-inverse, eigenvalues below
    :math:`m\,\epsilon\,\lambda_{\max}` dropped, :math:`\epsilon` the unit roundoff of
    float64, in which :math:`K_{SS}` and its pseudo-inverse are computed for float32 data too;
    the negative part of an indefinite kernel such as ``"sigmoid"`` is dropped
    too).  On the training rows it is :math:`K^{1/2} P K^{1/2}`, :math:`P` the orthogonal
    projection onto the span of the columns :math:`K^{1/2}e_s`, :math:`s \in S`: it depends on
    the *set* of landmarks only (not their order, multiplicities or any column weights), and
    :math:`0 \preceq K - ZZ^\top`.

    **Landmarks.**  ``sampling="uniform"``: a uniformly random subset of size :math:`m`
    (scikit-learn's law: the first :math:`m` of a random permutation), so the expected error
    :math:`\mathbb E_S\|K - K_{nS}K_{SS}^+K_{Sn}\|` is the average over all
    :math:`\binom nm` subsets.  ``sampling="leverage"``: :math:`\lambda`-ridge leverage
    scores :math:`\ell_i(\lambda) = [K(K + \lambda I)^{-1}]_{ii}` are estimated by Musco &
    Musco's recursive sampling (RLS-Nyström, Alg. 3 of their paper: halve the data
    uniformly down to about :math:`m` points, then at each level estimate the scores of twice
    as many points from the weighted Nyström sample of the level below,
    :math:`\tilde\ell_i = \frac1\lambda(k_{ii} - k_{iS}^\top(K_{SS} + \lambda W^{-2})^{-1}
    k_{iS})`, and keep each with probability :math:`\min(1, \tilde\ell_i\log m)` and weight
    :math:`1/\sqrt{p_i}`), then :math:`m` distinct landmarks are drawn by successive sampling
    with probabilities proportional to :math:`\min(1, \tilde\ell_i)` (``leverage_scores_``).
    Weights are needed only inside the score estimates: the Nyström map itself does not
    depend on them (above), so it stays the exact formula for the drawn set.

    **Kernels and length scales** (one rule).  A shift-invariant kernel -- ``"gaussian"``
    (alias ``"rbf"``), ``"laplacian"``, ``"cauchy"``, ``"matern"``, ``"ballsum"``, ... or a
    :class:`~randfeat.kernels.ShiftInvariantKernel` -- takes randfeat's length scale
    ``sigma`` (None: 1.0, a number, one per feature, ``"scale"`` or ``"median"``).  For
    ``"rbf"``/``"gaussian"`` and ``"laplacian"`` scikit-learn's ``gamma`` may be given *instead*
    (:math:`\sigma = 1/\sqrt{2\gamma}` and :math:`\sigma = 1/\gamma`); giving both is an error.
    Unlike scikit-learn, the default is :math:`\sigma = 1`, not :math:`\gamma = 1/d`.
    scikit-learn's other kernels -- ``"linear"``, ``"polynomial"``/``"poly"``,
    ``"sigmoid"``, ``"cosine"``, ``"chi2"``, ``"additive_chi2"`` -- take ``gamma``,
    ``coef0`` and ``degree`` exactly as in :func:`sklearn.metrics.pairwise.pairwise_kernels`
    (None: that function's default) and no ``sigma``.  A callable ``k(x, y, **kernel_params)``
    and ``"precomputed"`` take none of them.

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks :math:`m` (at most the number of training rows; larger values are
        reduced to it with a warning, as in scikit-learn).
    kernel : str, ShiftInvariantKernel or callable, default="rbf"
        The kernel (above).  ``"precomputed"``: ``fit`` takes the square training kernel
        matrix and ``transform`` the (n_samples, n_train) kernel between new points and the
        training points.
    sigma : float, array of shape (n_features,), "scale", "median" or None, default=None
        Length scale of a shift-invariant kernel given by name (None: 1.0 unless ``gamma``).
        An array gives one length scale per feature (ARD): :math:`k(x, y) = k_1((x - y)/\sigma)`
        coordinate-wise, :math:`k_1` the kernel at unit scale, evaluated on the rows divided by
        :math:`\sigma` column-wise in float64 (both samplings).  It is the unit-scale map on
        ``X / sigma`` bit for bit; equal scales ``(s, ..., s)`` are ``sigma=s`` bit for bit.
        Positive finite entries, one per column of ``X`` (ValueError otherwise).  ``"scale"``
        and ``"median"`` choose it from the fit data (:func:`randfeat._base.data_sigma`; the
        median distance is L1 for the Laplacian, Euclidean otherwise, as in every randfeat map).
    gamma, coef0, degree : float or None, default=None
        scikit-learn's kernel parameters (above).
    kernel_params : dict or None, default=None
        More parameters: of a callable kernel, of a scikit-learn kernel, or of a randfeat
        kernel name (``nu`` for ``"matern"``, ``t`` for ``"ballsum"``, ...).
    sampling : {"uniform", "leverage"}, default="uniform"
        How the landmarks are drawn (above).
    ridge : float or "auto", default="auto"
        :math:`\lambda > 0` of the ridge leverage scores, in the units of the kernel matrix
        (the ridge of kernel ridge regression with :math:`n` rows and per-sample penalty
        :math:`\alpha` is :math:`n\alpha`).  ``"auto"``: Musco & Musco's choice at each level,
        the tail :math:`\frac1k\sum_{i>k}\lambda_i` of the weighted sample's spectrum beyond
        :math:`k = \lceil m/(4\log m)\rceil` (so that about :math:`m/\log m` scores are large).
        Used with ``sampling="leverage"`` only.
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the landmark draw.
    n_threads : int or None, default=None
        Threads over blocks of rows of the kernel matrices (None: all CPUs; negative: count
        back).  The BLAS's own threads stay the user's.  The output is bit-identical for every
        value.  (scikit-learn's ``n_jobs``.)

    Attributes
    ----------
    components_ : ndarray or sparse matrix of shape (m, n_features_in_)
        The landmarks (for ``"precomputed"``: their rows of the training kernel matrix).
    component_indices_ : ndarray of int64, shape (m,)
        Their indices in the training data.
    normalization_ : ndarray of shape (m, m)
        :math:`K_{SS}^{+1/2}` (symmetric; the features are ``K_nS @ normalization_.T``).
    kernel_ : ShiftInvariantKernel, str or callable
        The resolved kernel (an instance for shift-invariant kernels).
    sigma_ : float, ndarray of shape (n_features_in_,) or None
        Its length scale (a read-only float64 copy for ARD scales; None for the other
        kernels).
    leverage_scores_ : ndarray of shape (n_train,) or None
        :math:`\min(1, \tilde\ell_i)`, the probabilities (up to normalisation) of the final
        draw (``sampling="leverage"``; None otherwise).
    ridge_ : float or None
        :math:`\lambda` of the final level's scores.

    See Also
    --------
    sklearn.kernel_approximation.Nystroem
    RandomFourierFeatures : data-independent features of shift-invariant kernels.

    References
    ----------
    C. K. I. Williams and M. Seeger, "Using the Nyström method to speed up kernel machines",
    NIPS 2001.  C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017.
    A. El Alaoui and M. W. Mahoney, "Fast randomized kernel ridge regression with statistical
    guarantees", NIPS 2015 (ridge leverage scores).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import Nystroem
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> ny = Nystroem(100, sigma=2.0, random_state=0).fit(X)
    >>> Z = ny.transform(X)
    >>> Z.shape, ny.components_.shape
    ((200, 100), (100, 3))
    >>> K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 8)
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.05)
    True
    >>> lev = Nystroem(50, sigma=2.0, sampling="leverage", random_state=0).fit(X)
    >>> lev.leverage_scores_.shape
    (200,)

    One length scale per feature (ARD) is the unit-scale map on ``X / sigma``:

    >>> s = np.array([1.0, 2.0, 4.0])
    >>> ard = Nystroem(50, sigma=s, random_state=0).fit(X)
    >>> unit = Nystroem(50, sigma=1.0, random_state=0).fit(X / s)
    >>> bool(np.array_equal(ard.transform(X), unit.transform(X / s)))
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [StrOptions(set(KERNEL_CHOICES)), ShiftInvariantKernel, callable],
        "sigma": SIGMA_CONSTRAINT,
        "gamma": [Interval(numbers.Real, 0, None, closed="left"), None],
        "coef0": [Interval(numbers.Real, None, None, closed="neither"), None],
        "degree": [Interval(numbers.Real, 1, None, closed="left"), None],
        "kernel_params": [dict, None],
        "sampling": [StrOptions({"uniform", "leverage"})],
        "ridge": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, kernel="rbf", sigma=None, gamma=None, coef0=None,
                 degree=None, kernel_params=None, sampling="uniform", ridge="auto",
                 random_state=None, n_threads=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.kernel_params = kernel_params
        self.sampling = sampling
        self.ridge = ridge
        self.random_state = random_state
        self.n_threads = n_threads

    # ------------------------------------------------------------------ the kernel
    def _kind(self):
        k = self.kernel
        if isinstance(k, ShiftInvariantKernel):
            return "shift"
        if isinstance(k, str):
            if k == "precomputed":
                return "precomputed"
            if k in SKLEARN_KERNELS:
                return "sklearn"
            return "shift"
        return "callable"

    def _resolve(self, X):
        """(kernel_, sigma_): the kernel of this fit by the one rule (class docstring)."""
        kind = self._kind()
        extra = dict(self.kernel_params or {})
        if kind in ("callable", "precomputed"):
            if (self.gamma is not None or self.coef0 is not None or self.degree is not None
                    or self.sigma is not None):
                raise ValueError(
                    "Don't pass gamma, coef0 or degree to Nystroem if using a callable or "
                    f"precomputed kernel (got gamma={self.gamma!r}, coef0={self.coef0!r}, "
                    f"degree={self.degree!r}, sigma={self.sigma!r}); put a callable's "
                    "parameters in kernel_params")
            return self.kernel, None
        if kind == "sklearn":
            if self.sigma is not None:
                raise ValueError(
                    f"Nystroem: sigma={self.sigma!r} is a length scale of shift-invariant "
                    f"kernels; kernel={self.kernel!r} takes scikit-learn's gamma, coef0 and "
                    "degree instead")
            bad = [n for n in ("gamma", "coef0", "degree")
                   if getattr(self, n) is not None and n not in KERNEL_PARAMS[self.kernel]]
            if bad:
                raise ValueError(f"Nystroem: kernel={self.kernel!r} takes no "
                                 f"{' or '.join(bad)} (it has no such parameter)")
            return self.kernel, None
        # shift-invariant
        if self.coef0 is not None or self.degree is not None:
            raise ValueError(f"Nystroem: kernel={self.kernel!r} is shift-invariant and takes "
                             "no coef0 or degree")
        sigma = self.sigma
        if self.gamma is not None:
            canon = (_LOOKUP.get(_canonical(self.kernel)) if isinstance(self.kernel, str)
                     else None)
            if canon not in ("gaussian", "laplacian"):
                raise ValueError(
                    "Nystroem: gamma is accepted for kernel='rbf'/'gaussian' and "
                    "'laplacian' only (scikit-learn's spelling of their length scale); for "
                    f"kernel={self.kernel!r} pass sigma")
            if sigma is not None:
                raise ValueError(
                    "Nystroem: pass either sigma (randfeat's length scale) or gamma "
                    f"(scikit-learn's), not both (got sigma={sigma!r}, gamma={self.gamma!r})")
            if self.gamma == 0:
                raise ValueError("Nystroem: gamma=0 is an infinite length scale; pass gamma > 0")
            sigma = (1.0 / math.sqrt(2.0 * self.gamma) if canon == "gaussian"
                     else 1.0 / self.gamma)
        # every randfeat map's rule: "scale"/"median" from X (the median in the kernel's own
        # distance, L1 for the Laplacian), ARD scales checked against X's columns
        kern = resolve_kernel(self.kernel, sigma, X, who="Nystroem", **extra)
        return kern, kern.sigma

    # ------------------------------------------------------------------ kernel matrices
    @staticmethod
    def _blocks(fn, n, nt):
        """Run ``fn(s, e)`` on the fixed row blocks [s, e) of 0..n, over ``nt`` threads."""
        spans = [(s, min(n, s + _ROWS)) for s in range(0, n, _ROWS)]
        if nt <= 1 or len(spans) == 1:
            for s, e in spans:
                fn(s, e)
            return
        # the blocks are the parallel unit: the BLAS runs one thread per block meanwhile (its own
        # pool on top of these threads oversubscribed the cores: transform was 2x slower than
        # one thread on 2 cores, benchmarks/bench_sklearn_maps.py)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(max_workers=min(nt, len(spans))) as ex:
            for f in [ex.submit(fn, s, e) for s, e in spans]:
                f.result()

    def _matrix(self, pair, A, B, dtype, nt, right=None):
        """``pair(A, B)`` (times ``right`` if given) in fixed row blocks, cast to ``dtype``."""
        n = A.shape[0]
        cols = B.shape[0] if right is None else right.shape[1]
        out = np.empty((n, cols), dtype=dtype)

        def one(s, e):
            K = np.asarray(pair(A[s:e], B), dtype=dtype)
            out[s:e] = K if right is None else K @ right
        self._blocks(one, n, nt)
        return out

    # ------------------------------------------------------------------ fit
    def _check_precomputed(self, X, reset):
        if reset and X.shape[0] != X.shape[1]:
            raise ValueError(
                f"Nystroem(kernel='precomputed').fit expects the square training kernel "
                f"matrix; got X of shape {X.shape}")
        if sp.issparse(X):
            raise TypeError("Nystroem(kernel='precomputed') needs a dense kernel matrix")

    def _build(self, X):
        kind = self._kind()
        if kind == "precomputed":
            self._check_precomputed(X, True)
        kernel_, sigma_ = self._resolve(X)
        pair = None if kind == "precomputed" else _pair_function(kernel_, self.get_params())
        rng = self._rng()
        nt = self._n_threads()
        n = X.shape[0]
        m = int(self.n_components)
        if m > n:
            warnings.warn(
                "n_components > n_samples. This is not possible.\nn_components was set to "
                f"n_samples ({n}), which results in inefficient evaluation of the full kernel.",
                stacklevel=3)
            m = n
        if kind == "precomputed":
            X64 = np.asarray(X, dtype=np.float64)

            def sub(rows, cols):
                return X64[np.ix_(rows, cols)]
            diag = np.diagonal(X64).copy()
        else:
            def sub(rows, cols):
                return self._matrix(pair, X[rows], X[cols], np.float64, nt)
            diag = None
        scores = ridge_ = None
        if self.sampling == "uniform" or m == n:
            idx = rng.permutation(n)[:m].astype(np.int64)
        else:
            if diag is None:
                diag = self._diagonal(kernel_, pair, X, nt)
            idx, scores, ridge_ = _recursive_rls(sub, diag, n, m, self.ridge, rng)
        if kind == "precomputed":
            comps = np.ascontiguousarray(X[idx])
            Kmm = X64[np.ix_(idx, idx)]
        else:
            comps = X[idx]
            # one symmetric call (a callable kernel is then evaluated on m (m + 1) / 2 pairs)
            Kmm = np.asarray(pair(comps, None), dtype=np.float64)
        # in float64 for float32 data too (then cast): a cut at float32's roundoff dropped real
        # spectrum (Z Z' off by up to 0.05 against float64, scikit-learn's float32 by 2e-5)
        norm = _inverse_sqrt(Kmm, np.finfo(np.float64).eps).astype(X.dtype)
        for a in (idx, norm) + ((comps,) if isinstance(comps, np.ndarray) else ()):
            a.flags.writeable = False
        if scores is not None:
            scores.flags.writeable = False
        return {"components_": comps, "component_indices_": idx, "normalization_": norm,
                "kernel_": kernel_, "sigma_": sigma_, "leverage_scores_": scores,
                "ridge_": ridge_, "_n_features_out": m}

    def _diagonal(self, kernel_, pair, X, nt):
        """k(x_i, x_i) for every row (1 for a shift-invariant kernel)."""
        n = X.shape[0]
        if isinstance(kernel_, ShiftInvariantKernel):
            return np.ones(n)
        out = np.empty(n)
        if not isinstance(kernel_, str):      # a Python callable: one evaluation per row
            for i in range(n):
                out[i] = float(np.asarray(pair(X[i:i + 1], X[i:i + 1]))[0, 0])
            return out

        def one(s, e):
            out[s:e] = np.diagonal(np.asarray(pair(X[s:e], X[s:e]), dtype=np.float64))
        self._blocks(one, n, nt)
        return out

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the landmarks and compute :math:`K_{SS}^{+1/2}`.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Training data (``kernel="precomputed"``: the square training kernel matrix).
        y : ignored

        Returns
        -------
        self : Nystroem
        """
        self._fit_atomic(self._build, X)
        return self

    # ------------------------------------------------------------------ transform
    def transform(self, X):
        """Nyström features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            (``kernel="precomputed"``: the (n_samples, n_train) kernel between the rows to
            transform and the training rows.)  float32 stays float32.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        st = self._fitted_state()
        norm = st["normalization_"]
        m = int(st["_n_features_out"])
        if not (isinstance(norm, np.ndarray) and norm.shape == (m, m)):
            raise ValueError(f"Nystroem.transform: the fitted normalization_ must have shape "
                             f"({m}, {m}). Call fit again")
        if isinstance(st["kernel_"], str) and st["kernel_"] == "precomputed":
            X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                              ensure_all_finite=True)
            self._check_precomputed(X, False)
            Kx = X[:, st["component_indices_"]]
            return np.asarray(Kx @ norm.astype(X.dtype).T, dtype=X.dtype)
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        comps = st["components_"]
        if comps.shape != (m, X.shape[1]):
            raise ValueError(f"Nystroem.transform: the fitted components_ must have shape "
                             f"({m}, {X.shape[1]}). Call fit again")
        right = np.ascontiguousarray(norm.T, dtype=X.dtype)
        pair = _pair_function(st["kernel_"], st["_fitted_params"])
        return self._matrix(pair, X, comps, X.dtype, self._n_threads(), right=right)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


def _sq_distances(A, B):
    """Squared Euclidean distances of two dense blocks, in float64 (float32 input is upcast:
    the kernel of nearby points needs the digits), clipped at 0."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    D = A @ B.T
    D *= -2.0
    D += np.einsum("ij,ij->i", A, A)[:, None]
    D += np.einsum("ij,ij->i", B, B)[None, :]
    return np.maximum(D, 0.0, out=D)


def _pair_function(kernel_, params):
    """pair(A, B): the kernel matrix between two blocks of rows, for the fitted ``kernel_``
    (and, for scikit-learn's kernels and callables, the parameters of the fit)."""
    extra = dict(params.get("kernel_params") or {})
    if isinstance(kernel_, ShiftInvariantKernel):
        # ARD length scales: the unit-scale kernel on x / sigma (equal scales: the scalar kernel,
        # bit for bit)
        kernel_, scales = kernel_.ard_split()
        if scales is not None:
            unit = _pair_function(kernel_, params)

            def ard(A, B):
                return unit(divide_columns(A, scales),
                            None if B is None else divide_columns(B, scales))
            return ard
        if kernel_.name == "gaussian":
            g = 0.5 / kernel_.sigma**2

            def gauss(A, B):
                if sp.issparse(A) or sp.issparse(B):
                    return rbf_kernel(A, B, gamma=g)
                return np.exp(-g * _sq_distances(A, A if B is None else B))
            return gauss
        if kernel_.name == "laplacian":
            g = 1.0 / kernel_.sigma

            def lap(A, B):
                # scikit-learn's sparse L1 distances need 32-bit indices: densify the block
                A, B = (a.toarray() if sp.issparse(a) else a for a in (A, B))
                B = A if B is None else B
                return np.exp(-g * cdist(np.asarray(A, np.float64), np.asarray(B, np.float64),
                                         "cityblock"))
            return lap

        def pair(A, B):
            A = A.toarray() if sp.issparse(A) else A
            B = B.toarray() if sp.issparse(B) else B
            return kernel_(A, B)
        return pair
    if isinstance(kernel_, str):
        for name in KERNEL_PARAMS[kernel_]:
            if params.get(name) is not None:
                extra[name] = params[name]
        dense_only = kernel_ in ("chi2", "additive_chi2")

        def pair(A, B):
            # scikit-learn's compiled chi2 kernels refuse read-only buffers (components_ is)
            A, B = (a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a
                    for a in (A, B))
            if dense_only:  # densified per block of rows
                A, B = (a.toarray() if sp.issparse(a) else a for a in (A, B))
            return pairwise_kernels(A, B, metric=kernel_, filter_params=True, **extra)
        return pair
    return lambda A, B: pairwise_kernels(A, B, metric=kernel_, **extra)


def _inverse_sqrt(K, eps):
    r""":math:`K^{+1/2}` of a symmetric matrix: eigenvalues above :math:`m\,\epsilon\,
    \lambda_{\max}` inverted and square-rooted, the others (and negative ones) dropped."""
    K = 0.5 * (K + K.T)
    lam, Q = scipy.linalg.eigh(K)
    top = max(float(lam.max(initial=0.0)), 0.0)
    keep = lam > top * K.shape[0] * eps
    if not keep.any():
        return np.zeros_like(K)
    Qk = Q[:, keep] / np.sqrt(lam[keep])
    return Qk @ Q[:, keep].T


def _recursive_rls(sub, diag, n, m, ridge, rng):
    r"""Musco & Musco's recursive ridge leverage score sampling (RLS-Nyström, NIPS 2017,
    Algorithm 3 in the form of their reference implementation).

    ``sub(rows, cols)`` gives kernel submatrices (float64), ``diag`` the kernel's diagonal.
    Returns (landmark indices, min(1, estimated scores) of all n rows, lambda of the last
    level)."""
    over = max(1.0, math.log(m))
    k = max(1, math.ceil(m / (4 * over)))
    n_levels = max(0, math.ceil(math.log2(n / m)))
    perm = rng.permutation(n)
    sizes = [n]
    for _ in range(n_levels):
        sizes.append(math.ceil(sizes[-1] / 2))
    samp = np.arange(sizes[-1])
    weights = np.ones(samp.size)
    lam = None
    levs = None
    for level in range(n_levels - 1, -1, -1):
        cur = perm[:sizes[level]]
        r_ind = perm[samp]
        KS = sub(cur, r_ind)
        SKS = KS[samp]
        if ridge != "auto":
            lam = float(ridge)
        elif k >= SKS.shape[0]:
            lam = 1e-5
        else:
            Wd = weights[:, None] * SKS * weights[None, :]
            ev = scipy.linalg.eigh(0.5 * (Wd + Wd.T), eigvals_only=True,
                                   subset_by_index=[SKS.shape[0] - k, SKS.shape[0] - 1])
            lam = max((float(np.sum(np.diag(SKS) * weights**2)) - float(np.abs(ev).sum())) / k,
                      1e-12)
        A = SKS + np.diag(lam / weights**2)
        try:
            R = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A), KS.T)
        except np.linalg.LinAlgError:
            R = np.linalg.lstsq(A, KS.T, rcond=None)[0]
        est = np.maximum(0.0, diag[cur] - np.einsum("ij,ji->i", KS, R)) / lam
        if level > 0:
            p = np.minimum(1.0, over * est)
            samp = np.flatnonzero(rng.random(cur.size) < p)
            if samp.size == 0:
                p = np.full(cur.size, m / cur.size)
                samp = np.sort(rng.permutation(cur.size)[:m])
            weights = np.sqrt(1.0 / p[samp])
        else:
            levs = np.empty(n)
            levs[perm] = np.minimum(1.0, est)
    if levs is None:  # n <= m: every row is a landmark
        levs = np.ones(n)
    idx = successive_sampling(levs, m, rng)
    return idx, levs, lam

