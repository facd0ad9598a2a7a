"""Linear learners on random features: ridge regression and least-squares classification.

Both papers train a *linear* model on the random features :math:`z(x) \\in \\mathbb{R}^D`
(Rahimi & Recht 2007, §5 and Table 1, "Fourier+LS", "Binning+LS"; Le, Sarlós & Smola 2013,
§6, Table 2): ridge regression

.. math::

    \\min_{w, b}\\; \\sum_{i=1}^n s_i \\bigl(y_i - z(x_i)^\\top w - b\\bigr)^2
    + \\alpha \\lVert w \\rVert_2^2

with sample weights :math:`s_i` (1 by default): ``alphas`` are in scikit-learn's
:class:`~sklearn.linear_model.Ridge` / ``RidgeCV`` scale.  ``alpha_scale="mean"`` reads them per
sample instead (the penalty added to the weighted *mean* squared error, i.e.
:math:`\\alpha \\sum_i s_i` on the sum, the convention of kernel ridge regression and of
:class:`randfeat.kernel_ridge.ExactKernelRidge`; randfeat 0.1's only scale),

and classification by least squares on :math:`\\pm 1` targets (one-vs-rest columns for more than
two classes), predicting the sign / the arg-max of the fitted scores.

Two solvers, chosen from the type of the features:

* **dense features** (random Fourier, Fastfood, Nyström): *streaming normal equations*.  The
  feature transformer is applied to ``chunk_size`` rows at a time and only the sufficient
  statistics :math:`Z^\\top Z`, :math:`Z^\\top Y`, :math:`Z^\\top 1`, :math:`1^\\top Y` are kept
  (memory :math:`O(D^2 + DK)`, never :math:`N \\times D`); each chunk's :math:`Z^\\top Z` is
  one BLAS ``syrk`` on the lower triangle, made from the calling thread with the process's BLAS
  threads (float64 into the Gram itself by default; with ``gram_dtype="float32"`` a
  single-precision product of the chunk added to the float64 Gram).
  These statistics are a public object, :class:`RidgeStatistics` (``partial_fit``, ``merge``,
  ``solve``, ``solve_path``): statistics of blocks of rows computed anywhere (threads,
  processes, a cluster) merge into those of all the rows.
  With the centred statistics :math:`A = Z_c^\\top S Z_c`, :math:`c = Z_c^\\top S Y_c` the solution
  is :math:`w = (A + \\lambda I)^{-1} c` (:math:`\\lambda = \\alpha`, or :math:`\\alpha\\sum_i s_i`
  with ``alpha_scale="mean"``), :math:`b = \\bar y - \\bar z^\\top w`.  A grid of
  :math:`\\alpha` is solved from one accumulation by one Cholesky factorisation per
  :math:`\\alpha` (LAPACK ``potrf`` / ``potrs`` on the lower triangle), falling back
  to the eigendecomposition :math:`A = Q \\Lambda Q^\\top`
  (:math:`w_\\alpha = Q (\\Lambda + n\\alpha)^{-1} Q^\\top c`) when a factorisation fails.
* **sparse features** (random binning, CSR with a hashed, possibly huge width): the centred
  design is wrapped in a :class:`scipy.sparse.linalg.LinearOperator` (so centring never
  densifies it) and solved by damped LSQR (``damp = sqrt(lambda)``; default) or by conjugate
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
import mmap
import numbers
import warnings

import numpy as np
import scipy.linalg
import scipy.linalg.blas as _blas
import scipy.linalg.lapack as _lapack
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat import dask as _dask
from randfeat._base import RandomFeaturesBase
from randfeat._lib import _gram as _gramlib
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    check_n_threads,
    check_random_state,
)
from randfeat.fastfood import Fastfood
from randfeat.fourier import RandomFourierFeatures
from randfeat.sorf import StructuredOrthogonalFeatures

# randfeat maps with dense output and a float32 path (``_chunk_features``)
_DENSE_MAPS = (RandomFourierFeatures, Fastfood, StructuredOrthogonalFeatures)


def _auto_chunk_rows(D):
    """``chunk_size="auto"``: rows per chunk for features of width ``D``.

    ``max(1024, 2**21 // D, D // 2)`` rows, at most 8192: a chunk of about 2**21 values
    (8 MiB in float32, 16 MiB in float64) for narrow features, where larger chunks amortise
    each chunk's fixed costs, and of ``D / 2`` rows (in float32 a quarter of the float64
    Gram's bytes) for wide ones, so that the chunk never dominates the fit's memory; each chunk
    still has at least 1024 rows (the ``syrk`` runs near its peak rate from about 1000 rows
    on).  E.g. D = 100: 8192 rows; 1000: 2097; 4000: 2000; 20000: 8192."""
    D = max(1, int(D))
    return min(8192, max(1024, (1 << 21) // D, D // 2))


class _GramConsumed(ArithmeticError):
    """The in-place final Cholesky (``RidgeStatistics._path(overwrite=True)``) failed: the
    statistics are consumed and must be accumulated again (the learners do)."""


#: columns per panel of a float32 chunk product (the workspace is D x _GRAM_PANEL float32;
#: one panel, a single ssyrk, up to D = 1024; wider panels repack less: 5 % slower than one
#: ssyrk at D = 4000, 8 % with 512)
_GRAM_PANEL = 1024
#: Grams of at least this many bytes get pages of their own (see _gram_buffer)
_GRAM_MMAP_BYTES = 1 << 22


def _gram_buffer(D):
    """A zeroed (D, D) float64 Fortran array for a Gram kept as its lower triangle.

    Only the lower triangle is ever written while statistics accumulate (``syrk`` and the
    float32 panels touch nothing above the diagonal), so a large Gram is given memory of its own
    (an anonymous ``mmap``, zero pages that become resident only when first written) with huge
    pages turned off for it where the OS allows (``MADV_NOHUGEPAGE``): with 4 KiB pages the
    never-written upper triangle, about half the matrix, costs no memory (with NumPy's default
    huge pages every 2 MiB page holds some of the lower triangle, so all of it becomes
    resident).  Small Grams are plain ``np.zeros``."""
    return _lazy_zeros((D, D), np.float64)


def _posv_mixed(A, alpha, c, out, SA=None):
    """Solve ``(A + alpha I) x = c`` (A (D, D) Fortran float64, symmetric, its lower triangle
    read and never written; c (D, K)) into ``out`` (D, K) by a float32 Cholesky
    factorisation refined to float64 accuracy (:func:`randfeat._lib._gram.posv_mixed`, the
    algorithm and stopping test of LAPACK's ``dsposv``).  Returns the number of refinement
    steps, or a negative number when the float32 factorisation failed or the refinement
    stalled (``out`` then untouched: solve in float64).  The float32 factor is a lazily zeroed
    D x D buffer of which only the lower triangle becomes resident (D^2 / 2 float32 values
    beside A); pass one as ``SA`` to reuse it over several alphas."""
    D, K = c.shape
    B = np.asfortranarray(c, dtype=np.float64)
    X = np.empty((D, K), order="F")
    R = np.empty((D, K), order="F")
    SX = np.empty((D, K), dtype=np.float32, order="F")
    if SA is None:
        SA = _lazy_zeros((D, D), np.float32)
    it = _gramlib.posv_mixed(A, float(alpha), B, X, SA, SX, R)
    if it >= 0:
        out[...] = X
    return int(it)


#: rank of solver="pcg"'s Nyström preconditioner (at most D)
_NYSTROM_RANK = 100


def _nystrom(gram, D, r, rng, eps):
    """Randomized Nyström approximation ``U diag(lam) Uᵀ`` of rank r of the PSD D x D operator
    ``gram`` (V (D, k) -> A V), by Frangella, Tropp & Udell (2023, Alg. 2.1): a Gaussian test
    matrix Ω orthonormalised, Y = A Ω, a shift ν = √D eps ‖Y‖_F for stability, Y_ν = Y + νΩ,
    C = chol(Ωᵀ Y_ν), B = Y_ν C⁻ᵀ, B = U Σ Vᵀ, lam = Σ² - ν, of which only the positive ones
    are kept (so the preconditioner is finite for any penalty); decreasing order.  ``eps``:
    the rounding unit of A's products.  An empty approximation (no preconditioning) if the
    Cholesky factorisation fails."""
    if r <= 0:
        return np.zeros((D, 0)), np.zeros(0)
    Om, _ = np.linalg.qr(rng.standard_normal((D, r)))
    Y = gram(Om)
    nu = np.sqrt(D) * eps * np.linalg.norm(Y)
    Y += nu * Om
    try:
        C = np.linalg.cholesky(Om.T @ Y)
    except np.linalg.LinAlgError:
        return np.zeros((D, 0)), np.zeros(0)
    B = scipy.linalg.solve_triangular(C, Y.T, lower=True, check_finite=False).T
    U, S, _ = np.linalg.svd(B, full_matrices=False)
    lam = S ** 2 - nu
    keep = lam > 0   # directions below the shift carry no information (and alpha may be 0)
    return U[:, keep], lam[keep]


_MALLOC_TRIM = []


def _trim_heap():
    """Give the C heap's free memory back to the OS (glibc's ``malloc_trim(0)``); True if done.

    A fit's chunk features (e.g. 2000 x 4000 float32, 32 MB) are freed after each chunk, but
    glibc serves blocks under 32 MiB from its heap once one such block has been freed (its
    dynamic ``mmap`` threshold) and keeps the freed heap pages: without this, about one chunk
    stays resident through the solve and after the fit (measured: 32 MB of cpu_act D = 4000's
    fit).  A no-op (False) where there is no ``malloc_trim`` (not glibc)."""
    if not _MALLOC_TRIM:
        fn = None
        try:
            import ctypes
            fn = getattr(ctypes.CDLL(None), "malloc_trim", None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, TypeError, AttributeError):  # pragma: no cover - no C library handle
            fn = None
        _MALLOC_TRIM.append(fn)
    fn = _MALLOC_TRIM[0]
    if fn is None:
        return False
    fn(0)
    return True


def _lazy_zeros(shape, dtype):
    """Zeroed Fortran array whose pages become resident only where written (an anonymous
    ``mmap`` with ``MADV_NOHUGEPAGE``) from ``_GRAM_MMAP_BYTES`` on; ``np.zeros`` below that or
    where no anonymous mapping can be made."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes < _GRAM_MMAP_BYTES:
        return np.zeros(shape, dtype=dtype, order="F")
    try:
        buf = mmap.mmap(-1, nbytes)
    except (OSError, ValueError):  # no anonymous mapping here: NumPy's allocation (and its
        return np.zeros(shape, dtype=dtype, order="F")  # MemoryError if memory is short)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:  # pragma: no cover - a kernel without transparent huge pages
            pass
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order="F")


#: largest bound on the phases |ωᵀx| at which ``gram_dtype="float32"`` featurises in float32
_F32_PHASE_LIMIT = 2.0 ** 10


def _max_frequency_norm(feats):
    """max_j ‖ω_j‖₂ over the rows of a fitted dense map (an upper bound over the input's
    coordinates): RFF from its frequencies; Fastfood's rows have length S_i ‖G_b‖_F / σ
    (V = S H G Π H B / (σ√d), H unnormalised, so ‖row_i(H G Π H B)‖ = √d ‖G_b‖_F); SORF's
    rows have length √d / σ (H D₁ H D₂ H D₃ with H normalised is orthogonal)."""
    st = feats._fitted_state()
    if isinstance(feats, RandomFourierFeatures):
        W = np.asarray(st["frequencies_"], dtype=np.float64)
        return float(np.sqrt(np.einsum("ij,ij->i", W, W).max())) if W.size else 0.0
    if isinstance(feats, Fastfood):
        d = int(st["d_padded_"])
        G = np.asarray(st["G_"], dtype=np.float64)
        S = np.abs(np.asarray(st["S_"], dtype=np.float64))
        g = np.repeat(np.sqrt(np.einsum("ij,ij->i", G, G)), d)[:S.size]
        return float((S * g).max() / st["sigma_"])
    return float(np.sqrt(st["d_padded_"]) / st["sigma_"])


def _phase_bound(feats, X):
    """An upper bound on |ωᵀx| over the rows x of X and the frequencies ω of ``feats``
    (inf on overflow, which keeps float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if sp.issparse(X):
            sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", X, X)
        xmax = float(np.sqrt(sq.max())) if sq.size else 0.0
        b = xmax * _max_frequency_norm(feats)
    return b if np.isfinite(b) else np.inf


__all__ = ["AlphaAtGridEdgeWarning", "RandomFeatureRidge", "RandomFeatureRidgeClassifier",
           "RidgeStatistics"]

#: default grid of ``alphas`` for ``alpha_scale="sum"`` (scikit-learn's scale)
DEFAULT_ALPHAS = tuple(10.0 ** np.arange(-3, 6))
#: default grid of ``alphas`` for ``alpha_scale="mean"`` (per sample; randfeat 0.1's default)
DEFAULT_ALPHAS_MEAN = tuple(10.0 ** np.arange(-8, 1))


class AlphaAtGridEdgeWarning(UserWarning):
    """The ``alpha`` chosen on the validation split is the smallest or the largest of the grid:
    the best penalty may lie outside it; widen ``alphas`` on that side."""


def _as_2d_targets(y, who):
    y = np.asarray(y)
    if y.ndim not in (1, 2):
        raise ValueError(f"{who}: y must be 1-D (n_samples,) or 2-D (n_samples, n_targets), got "
                         f"an array of shape {y.shape}")
    if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
        raise TypeError(f"{who}: y must be real numeric, got dtype {y.dtype}")
    y = np.asarray(y, dtype=np.float64)
    return y.reshape(len(y), -1)


def _check_sample_weight(sample_weight, n, who, some_positive=False):
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


class RidgeStatistics:
    r"""Streaming, mergeable sufficient statistics of (weighted) ridge regression.

    For rows :math:`z_i \in \mathbb{R}^D` (features), targets :math:`y_i \in \mathbb{R}^K` and
    sample weights :math:`s_i \ge 0` (1 by default) it holds, in float64,

    .. math::

        G = \sum_i s_i z_i z_i^\top,\quad C = \sum_i s_i z_i y_i^\top,\quad
        \sigma_z = \sum_i s_i z_i,\quad \sigma_y = \sum_i s_i y_i,\quad
        q = \sum_i s_i y_i \odot y_i,\quad S = \sum_i s_i,\quad n ,

    which is all that ridge regression needs: :meth:`solve` returns the minimiser of

    .. math::

        \sum_i s_i \bigl(y_i - W z_i - b\bigr)^2 + \alpha \lVert W \rVert_F^2

    (scikit-learn's :class:`~sklearn.linear_model.Ridge` scale: the squared errors are summed,
    not averaged), from the centred statistics :math:`A = G - \sigma_z\sigma_z^\top/S`,
    :math:`c = C - \sigma_z\sigma_y^\top/S`: :math:`W^\top = (A + \alpha I)^{-1} c`,
    :math:`b = (\sigma_y - W\sigma_z)/S`.  Memory is :math:`O(D^2 + DK)` whatever the number
    of rows, so :meth:`partial_fit` can stream a data set chunk by chunk, and :meth:`merge` adds
    the statistics of two disjoint sets of rows: statistics computed on blocks (threads, processes,
    the workers of a cluster) combine by a tree reduction to those of all the rows.  Merging is
    associative and commutative up to the rounding of the float64 sums (exactly so for the counts,
    and for data whose sums are exact); combining the same parts in the same order gives the same
    bits.

    Parameters
    ----------
    gram_dtype : {"float64", "float32"}, default="float64"
        Precision of each :meth:`partial_fit` call's :math:`Z^\top Z` product (dense ``Z``); the
        products are always accumulated in float64 and solved to float64 accuracy.  "float32"
        (single-precision ``syrk``, about twice as fast) adds a relative error of about ``n_rows *
        6e-8`` per entry of one call's product; float32 ``Z`` then also has its :math:`Z^\top[y, 1]`
        computed in float32 (float64 ``Z`` in float64).  With "float32" the solve, too, is about
        twice as fast at no cost in accuracy: a float32 Cholesky factorisation refined in float64
        until the solution meets LAPACK's float64 residual test (``dsposv``'s method), with the
        float64 factorisation where float32 cannot (A + alpha I too ill-conditioned).

    Attributes
    ----------
    n_samples_ : int
        Rows seen (weights do not change it).
    weight_sum_ : float
        :math:`S`, the sum of the sample weights (``n_samples_`` when unweighted).
    gram_ : ndarray of shape (D, D) or None
        :math:`G` (None before the first rows).
    zty_ : ndarray of shape (D, K) or None
        :math:`C`.
    z_sum_ : ndarray of shape (D,) or None
        :math:`\sigma_z`.
    y_sum_ : ndarray of shape (K,) or None
        :math:`\sigma_y`.
    y_sq_sum_ : ndarray of shape (K,) or None
        :math:`q` (gives the residual sum of squares of any solution, :meth:`rss`).

    See Also
    --------
    RandomFeatureRidge : fits with these statistics (one :meth:`partial_fit` per chunk of rows,
        in row order).

    Notes
    -----
    A tree reduction over blocks: compute ``RidgeStatistics().partial_fit(Z_b, y_b, w_b)`` for
    every block ``b`` (the objects pickle), then merge them pairwise (``a.merge(b)``, a new object,
    or ``a += b`` in place); fixing the tree fixes the rounding.  The whole alpha path costs one
    Cholesky factorisation per alpha (``method="cholesky"``) or one eigendecomposition of
    :math:`A` for all alphas (``method="eigh"``): :math:`W_\alpha^\top = Q(\Lambda + \alpha)^{-1}
    Q^\top c` with :math:`A = Q\Lambda Q^\top`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from randfeat.linear import RidgeStatistics
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(100, 5)); y = Z @ np.arange(5.0) + 1.0
    >>> a = RidgeStatistics().partial_fit(Z[:60], y[:60])
    >>> b = RidgeStatistics().partial_fit(Z[60:], y[60:])
    >>> coef, intercept = a.merge(b).solve(alpha=2.0)
    >>> ref = Ridge(alpha=2.0).fit(Z, y)
    >>> bool(np.allclose(coef[0], ref.coef_) and np.isclose(intercept[0], ref.intercept_))
    True
    """

    _FIELDS = ("_gram", "zty_", "z_sum_", "y_sum_", "y_sq_sum_")

    def __init__(self, gram_dtype="float64"):
        if gram_dtype not in ("float64", "float32"):
            raise ValueError(f"RidgeStatistics: gram_dtype must be 'float64' or 'float32', got "
                             f"{gram_dtype!r}")
        self.gram_dtype = gram_dtype
        self.n_samples_ = 0
        self.weight_sum_ = 0.0
        for f in self._FIELDS:
            setattr(self, f, None)
        self._gram_full = None  # cache of the symmetric gram_ (dropped on every update)
        self._buf32 = None      # float32 workspace (D x min(D, 1024)) of a chunk's product panels

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_gram_full"] = None  # caches are not sent (the statistics travel between workers)
        state["_buf32"] = None
        return state

    # ------------------------------------------------------------------ shape
    @property
    def n_features(self):
        """Width D of the rows (None before the first rows)."""
        return None if self._gram is None else self._gram.shape[0]

    @property
    def n_targets(self):
        """Number K of target columns (None before the first rows)."""
        return None if self.zty_ is None else self.zty_.shape[1]

    @property
    def gram_(self):
        """:math:`G = \\sum_i s_i z_i z_i^\\top`, symmetric, float64, read-only (None before the
        first rows).  Stored as its lower triangle (BLAS ``syrk`` updates one triangle); this
        view is formed on first access after an update."""
        if self._gram is None:
            return None
        if self._gram_full is None:
            G = self._gram
            S = G + G.T
            np.fill_diagonal(S, np.diagonal(G))
            S.flags.writeable = False
            self._gram_full = S
        return self._gram_full

    def __repr__(self):
        return (f"RidgeStatistics(n_samples_={self.n_samples_}, n_features={self.n_features}, "
                f"n_targets={self.n_targets})")

    # ------------------------------------------------------------------ accumulate
    def partial_fit(self, Z, y, sample_weight=None):
        """Add the rows ``Z`` (dense or sparse, shape (n, D)), targets ``y`` ((n,) or (n, K))
        and optional ``sample_weight`` ((n,), finite, >= 0) to the statistics; returns self.

        Every call must give the same D and K.  Zero rows are allowed (nothing is added).
        Successive calls accumulate in place (dense ``Z``: one BLAS ``syrk`` per call into the
        float64 Gram, or, with ``gram_dtype="float32"``, the single-precision product of the
        call's rows, formed by column panels of at most 1024 (``ssyrk`` + ``sgemm``) and added
        to it).
        """
        who = "RidgeStatistics.partial_fit"
        if sp.issparse(Z):
            if Z.ndim != 2:
                raise ValueError(f"{who}: Z must be 2-D, got shape {Z.shape}")
            data = Z.tocsr().data
        else:
            Z = np.asarray(Z)
            if Z.ndim != 2:
                raise ValueError(f"{who}: Z must be a 2-D array (n_samples, n_features), got "
                                 f"shape {Z.shape}")
            data = Z
        if not np.issubdtype(data.dtype, np.number) or np.issubdtype(data.dtype,
                                                                     np.complexfloating):
            raise TypeError(f"{who}: Z must be real numeric, got dtype {data.dtype}")
        if not np.all(np.isfinite(data)):
            raise ValueError(f"{who}: Z contains NaN or infinity")
        Y = _as_2d_targets(y, who)
        if Y.shape[0] != Z.shape[0]:
            raise ValueError(f"{who}: Z has {Z.shape[0]} rows but y has {Y.shape[0]}; pass one "
                             f"target row per row of Z")
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{who}: y contains NaN or infinity")
        self._check_shape(Z.shape[1], Y.shape[1], who)
        w = _check_sample_weight(sample_weight, Z.shape[0], who)
        self._update(Z, Y, w)
        return self

    def _check_shape(self, D, K, who):
        if self._gram is not None and (D, K) != (self.n_features, self.n_targets):
            raise ValueError(f"{who}: these statistics have D={self.n_features} features and "
                             f"K={self.n_targets} targets, got D={D}, K={K}; statistics of "
                             f"different feature maps or targets cannot be combined")

    def _update(self, Z, Y, w=None, scratch=False):
        """Add one chunk in place, without validation (``Y`` 2-D float64, ``w`` None or float64
        (n,)).  Returns ``Z`` as float64 (dense ndarray or CSR), for callers that reuse it, or as
        it came for float32 ``Z`` with ``gram_dtype="float32"`` (then every product of the chunk,
        ``Zᵀ[Y, 1]`` included, is single precision, added to the float64 sums).  ``scratch``:
        the caller does not use ``Z`` again, so with weights its rows are scaled by √w in place
        (no weighted copy of the chunk; the same bits), and the return value is meaningless.

        Dense ``Z``: ``G += Zᵀ S Z`` on the lower triangle by one BLAS ``dsyrk`` into ``G``
        itself, or in float32 by column panels (``ssyrk`` + ``sgemm`` into a D x min(D, 1024)
        workspace, each panel added to ``G``; randfeat/_lib/_gram.pyx), ``[C, σ_z] +=
        Zᵀ S [Y, 1]`` by one float64 ``gemm``.  The shapes of these calls depend on the chunk
        only, so the sums are the same bits whatever calls them."""
        n, D = Z.shape
        K = Y.shape[1]
        if self._gram is None:
            self._gram = _gram_buffer(D)
            self.zty_ = np.zeros((D, K))
            self.z_sum_ = np.zeros(D)
            self.y_sum_ = np.zeros(K)
            self.y_sq_sum_ = np.zeros(K)
        self._gram_full = None
        if sp.issparse(Z):
            Z = Z.tocsr().astype(np.float64, copy=False)
            Zw = Z if w is None else Z.multiply(w[:, None]).tocsr()
            self._gram += np.tril((Z.T @ Zw).toarray())
            self.zty_ += np.asarray(Zw.T @ Y)
            self.z_sum_ += np.asarray(Zw.sum(axis=0)).ravel()
        elif n:
            single = self.gram_dtype == "float32" and Z.dtype == np.float32
            Z64 = None if single else np.ascontiguousarray(Z, dtype=np.float64)
            rw = None if w is None else np.sqrt(w)
            # [C, σ_z] += Zᵀ S [Y, 1] first, from the unscaled features
            Yw = np.empty((n, K + 1))
            if w is None:
                Yw[:, :K] = Y
                Yw[:, K] = 1.0
            else:
                np.multiply(Y, w[:, None], out=Yw[:, :K])
                Yw[:, K] = w
            if single:
                # float32 features, float32 products: one sgemm of the chunk, added in float64
                # (relative error of the chunk's sums about n * 6e-8, as for its Gram)
                CS = np.asarray(Z.T @ Yw.astype(np.float32), dtype=np.float64)
            else:
                CS = Z64.T @ Yw
            self.zty_ += CS[:, :K]
            self.z_sum_ += CS[:, K]
            # then G += (√S Z)ᵀ(√S Z); the rows scaled in place where nobody needs them unscaled
            if self.gram_dtype == "float32":
                Zs = np.ascontiguousarray(Z, dtype=np.float32)
                if rw is not None:
                    if scratch or Zs is not Z:
                        Zs *= rw.astype(np.float32)[:, None]
                    else:
                        Zs = Zs * rw.astype(np.float32)[:, None]
                if self._buf32 is None or self._buf32.shape[0] != D:
                    self._buf32 = np.empty((D, min(D, _GRAM_PANEL)), dtype=np.float32,
                                           order="F")
                # ssyrk + sgemm per column panel into the D x 1024 workspace, each panel added
                # to the lower triangle of the float64 Gram (randfeat/_lib/_gram.pyx)
                _gramlib.syrk_f32_into(Zs, self._gram, self._buf32)
            else:
                Zs = Z64
                if rw is not None:
                    if scratch:
                        Zs *= rw[:, None]
                    else:
                        Zs = Z64 * rw[:, None]
                out = _blas.dsyrk(1.0, Zs.T, beta=1.0, c=self._gram, trans=0, lower=1,
                                  overwrite_c=1)
                if out is not self._gram:  # pragma: no cover - f2py always writes in place here
                    self._gram = out
            if not single:
                Z = Z64
        if w is None:
            self.y_sum_ += Y.sum(axis=0)
            self.y_sq_sum_ += (Y * Y).sum(axis=0)
            sw = float(n)
        else:
            wY = w[:, None] * Y
            self.y_sum_ += wY.sum(axis=0)
            self.y_sq_sum_ += (wY * Y).sum(axis=0)
            sw = float(w.sum())
        self.n_samples_ += int(n)
        self.weight_sum_ += sw
        return Z

    def _release(self):
        """Free the float32 workspace (after the last chunk)."""
        self._buf32 = None

    # ------------------------------------------------------------------ combine
    def copy(self):
        """An independent copy."""
        out = RidgeStatistics(self.gram_dtype)
        out.n_samples_, out.weight_sum_ = self.n_samples_, self.weight_sum_
        for f in self._FIELDS:
            v = getattr(self, f)
            setattr(out, f, None if v is None else v.copy(order="K"))
        return out

    def __iadd__(self, other):
        if not isinstance(other, RidgeStatistics):
            return NotImplemented
        if other._gram is None:
            self.n_samples_ += other.n_samples_
            return self
        self._check_shape(other.n_features, other.n_targets, "RidgeStatistics.merge")
        self._gram_full = None
        if self._gram is None:
            for f in self._FIELDS:
                setattr(self, f, getattr(other, f).copy(order="K"))
        else:
            for f in self._FIELDS:
                getattr(self, f).__iadd__(getattr(other, f))
        self.n_samples_ += other.n_samples_
        self.weight_sum_ += other.weight_sum_
        return self

    def merge(self, other):
        """Statistics of the rows of ``self`` and of ``other`` together (a new object; neither
        is modified).  ``a.merge(b).merge(c)`` equals ``a.merge(b.merge(c))`` up to the rounding
        of the float64 sums."""
        if not isinstance(other, RidgeStatistics):
            raise TypeError(f"RidgeStatistics.merge: other must be a RidgeStatistics, got "
                            f"{type(other).__name__}")
        out = self.copy()
        out += other
        return out

    __add__ = merge

    # ------------------------------------------------------------------ solve
    def _means(self, fit_intercept):
        """Weighted means of z and y (zeros without an intercept)."""
        if not fit_intercept:
            return np.zeros_like(self.z_sum_), np.zeros_like(self.y_sum_)
        return self.z_sum_ / self.weight_sum_, self.y_sum_ / self.weight_sum_

    @staticmethod
    def _check_alphas(alphas, who):
        a = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
        if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{who}: alpha must be finite and >= 0 (a number or a 1-D "
                             f"sequence), got {alphas!r}")
        return a

    def _path(self, alphas, fit_intercept=True, method="cholesky",
              who="RidgeStatistics.solve_path", overwrite=False):
        """W of shape (L, D, K), b (L, K) and the method used per alpha, for the (already
        checked) ``alphas``.

        Works on the lower triangle only: :math:`A = G - S\\bar z\\bar z^\\top` by one rank-1
        update (``syr``), then per alpha a copy of A factorised in place (``potrf``) and solved
        (``potrs``).  Statistics with ``gram_dtype="float32"`` first try, per alpha, a float32
        factorisation of a float32 copy of A + alpha I refined to float64 accuracy (about twice
        as fast; see :func:`_posv_mixed`), which reads A and never writes it; the float64
        factorisation serves the alphas it declines.  The eigendecomposition (``syevr`` via
        :func:`scipy.linalg.eigh`, lower triangle) serves the alphas whose factorisation fails,
        or all with ``method="eigh"``.
        Peak memory: A and one factor (two D x D float64; with float32 statistics solved in
        float32, A and the float32 lower triangle), plus G unless ``overwrite`` (then G
        becomes A, the last alpha is factorised in A itself, and these statistics must not be
        used again: one D x D float64 for a single alpha, of which only the lower triangle is
        touched).  If that in-place factorisation fails, A is lost: :class:`_GramConsumed` is
        raised and the caller, who has the rows, accumulates them again and solves without
        ``overwrite`` (the eigen-solution)."""
        if self._gram is None or self.weight_sum_ <= 0:
            raise ValueError(f"{who}: no samples (or only zero weights) were added; call "
                             f"partial_fit first")
        mz, my = self._means(fit_intercept)
        A = self._gram if overwrite else self._gram.copy(order="F")
        if overwrite:
            self._gram_full = None
            self._gram = None  # consumed
        c = self.zty_.copy()
        if fit_intercept:
            n = self.weight_sum_
            A = _blas.dsyr(-n, mz, lower=1, a=A, overwrite_a=1)
            c -= n * np.outer(mz, my)
        L, D = len(alphas), A.shape[0]
        W = np.empty((L, D, c.shape[1]))
        used = ["eigh"] * L
        if method == "cholesky":
            # float32 statistics: a float32 factorisation refined to float64 accuracy, one
            # float32 buffer for every alpha
            SA = _lazy_zeros((D, D), np.float32) if self.gram_dtype == "float32" else None
            for j, a in enumerate(alphas):
                # overwrite: the last alpha is factorised in A itself (no D x D copy; LAPACK
                # touches only the lower triangle, so the upper one of a large Gram is never
                # resident, see _gram_buffer)
                in_place = overwrite and j == L - 1
                if SA is not None and _posv_mixed(A, a, c, W[j], SA) >= 0:  # A not written
                    used[j] = "cholesky"
                    continue
                M = A if in_place else A.copy(order="F")
                M.flat[::D + 1] += a
                M, info = _lapack.dpotrf(M, lower=1, clean=0, overwrite_a=1)
                if info == 0:
                    W[j], info = _lapack.dpotrs(M, c, lower=1)
                    used[j] = "cholesky" if info == 0 else "eigh"
                if in_place and used[j] != "cholesky":
                    raise _GramConsumed(f"{who}: the in-place Cholesky factorisation failed "
                                        f"(A + alpha I is not numerically positive definite)")
                del M
            SA = None   # freed before any eigendecomposition
        eig = None
        for j, a in enumerate(alphas):
            if used[j] == "cholesky":
                continue
            if eig is None:
                ev, Q = scipy.linalg.eigh(A, lower=True, check_finite=False, overwrite_a=True)
                A = None
                eig = (np.clip(ev, 0.0, None), Q, Q.T @ c)
            ev, Q, Qc = eig
            if a > 0:
                W[j] = Q @ (Qc / (ev + a)[:, None])
            else:  # alpha = 0: the minimum-norm least-squares solution (pseudo-inverse of A)
                cut = ev.max(initial=0.0) * len(ev) * np.finfo(np.float64).eps
                inv = np.divide(1.0, ev, out=np.zeros_like(ev), where=ev > cut)
                W[j] = Q @ (Qc * inv[:, None])
        b = my[None, :] - np.einsum("d,ldk->lk", mz, W)
        return W, b, used

    def solve_path(self, alphas, *, fit_intercept=True, method="cholesky"):
        r"""Ridge solutions for every penalty in ``alphas``.

        Parameters
        ----------
        alphas : float or 1-D array-like of float >= 0
            Penalties :math:`\alpha` of :math:`\sum_i s_i(y_i - Wz_i - b)^2 + \alpha\lVert
            W\rVert_F^2` (scikit-learn's ``Ridge(alpha=...)`` scale).
        fit_intercept : bool, default=True
            Fit an unpenalised intercept (centred statistics); False: :math:`b = 0`.
        method : {"cholesky", "eigh"}, default="cholesky"
            "cholesky": one factorisation of :math:`A + \alpha I` per alpha (an alpha whose
            factorisation fails, e.g. 0 with a singular A, takes the eigen-solution; with
            alpha = 0 that is the minimum-norm least-squares solution); "eigh":
            one eigendecomposition of A for the whole path (eigenvalues clipped at 0; cheaper
            than Cholesky from about 15 alphas on).

        Returns
        -------
        coef : ndarray of shape (n_alphas, K, D)
        intercept : ndarray of shape (n_alphas, K)

        Notes
        -----
        The LAPACK calls run in the calling thread with the process's BLAS threads (set them
        with :func:`threadpoolctl.threadpool_limits`); randfeat does not change them.
        """
        who = "RidgeStatistics.solve_path"
        a = self._check_alphas(alphas, who)
        if method not in ("cholesky", "eigh"):
            raise ValueError(f"{who}: method must be 'cholesky' or 'eigh', got {method!r}")
        W, b, _ = self._path(a, fit_intercept, method, who)
        return W.transpose(0, 2, 1).copy(), b

    def solve(self, alpha, *, fit_intercept=True):
        r"""The ridge solution for one penalty ``alpha`` (>= 0, scikit-learn's scale; see
        :meth:`solve_path`), by a Cholesky factorisation of :math:`A + \alpha I`.

        Returns
        -------
        coef : ndarray of shape (K, D)
        intercept : ndarray of shape (K,)
        """
        a = self._check_alphas(alpha, "RidgeStatistics.solve")
        if a.size != 1:
            raise ValueError(f"RidgeStatistics.solve: alpha must be one number, got {alpha!r}; "
                             f"use solve_path for several")
        W, b, _ = self._path(a, fit_intercept, who="RidgeStatistics.solve")
        return W[0].T.copy(), b[0]

    def rss(self, coef, intercept):
        r"""Weighted residual sum of squares :math:`\sum_i s_i\lVert y_i - Wz_i - b\rVert^2` of
        the rows added, per target (shape (K,)), from the statistics alone."""
        if self._gram is None:
            raise ValueError("RidgeStatistics.rss: no samples were added")
        W = np.asarray(coef, dtype=np.float64).reshape(self.n_targets, self.n_features)
        b = np.asarray(intercept, dtype=np.float64).reshape(self.n_targets)
        GW = self.gram_ @ W.T
        return (self.y_sq_sum_ - 2 * np.einsum("dk,kd->k", self.zty_, W)
                + np.einsum("kd,dk->k", W, GW) - 2 * b * self.y_sum_
                + 2 * b * (W @ self.z_sum_) + self.weight_sum_ * b * b)


#: merge repeated rows when at most this fraction of the rows are distinct
_MERGE_MAX_DISTINCT = 0.9


def _merge_duplicate_rows(X, Y, rows, w, R=None):
    r"""Repeated input rows, merged: ``(rows_u, Y_u, w_u, y_sq)`` or None when fewer than
    10 % of the rows repeat (or there are fewer than 64).

    Rows that are equal give equal features, so their terms of the ridge statistics combine
    exactly: :math:`\sum_i s_i z_i z_i^\top = \sum_g c_g z_g z_g^\top`,
    :math:`\sum_i s_i z_i y_i^\top = \sum_g c_g z_g \bar y_g^\top` with :math:`c_g` the
    group's weight sum and :math:`\bar y_g` its weighted mean target; only
    :math:`\sum_i s_i y_i^2` needs the rows themselves (returned as ``y_sq``).  Groups are
    found from two fixed random projections of the rows (a hash) and then verified exactly
    (a row that differs from its group's first row by any value is made a group of its own), so
    the merge never joins distinct rows.  Categorical and binary data repeat rows often
    (Adult: 23 % of its training rows, KDDCUP99 10 %: 70 %), and each merged row saves its
    share of the featurisation and of the Gram's ``syrk``.  Cost: one pass over X for the hash
    and one for the check, and about 40 bytes per row while the groups are formed."""
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows)
    n = len(idx)
    if n < 64:
        return None
    if R is None:   # the hash (tests pass a degenerate one to exercise the verification)
        R = np.random.default_rng(0x5EED).standard_normal((X.shape[1], 2))
    step = 8192     # rows per block: no copy of X beyond a block
    h = np.empty((n, 2))
    for s0 in range(0, n, step):
        h[s0:s0 + step] = np.asarray(X[idx[s0:s0 + step]] @ R, dtype=np.float64)
    _, first, inv = np.unique(h.view(np.complex128).ravel(), return_index=True,
                              return_inverse=True)
    inv = inv.ravel()
    if len(first) > _MERGE_MAX_DISTINCT * n:
        return None
    # exact verification: every row equals its group's first row
    bad = []
    for s0 in range(0, n, step):
        blk = slice(s0, s0 + step)
        diff = X[idx[blk]] - X[idx[first[inv[blk]]]]
        if sp.issparse(diff):
            diff = diff.tocsr()
            diff.eliminate_zeros()
            bad.append(s0 + np.flatnonzero(np.diff(diff.indptr)))
        else:
            bad.append(s0 + np.flatnonzero(np.any(diff != 0, axis=1)))
    bad = np.concatenate(bad)
    if bad.size:   # hash collisions of distinct rows (never seen): groups of their own
        inv = inv.copy()
        inv[bad] = len(first) + np.arange(bad.size)
        first = np.concatenate([first, bad])
    G = len(first)
    wr = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)[idx]
    c = np.bincount(inv, weights=wr, minlength=G)
    Yr = Y[idx]                                              # (n, K): targets are small
    sums = np.zeros((G, Y.shape[1]))
    np.add.at(sums, inv, wr[:, None] * Yr)
    keep = c > 0
    Yu = np.zeros_like(sums)
    Yu[keep] = sums[keep] / c[keep, None]
    y_sq = (wr[:, None] * Yr * Yr).sum(axis=0)
    rows_u = idx[first][keep]
    order = np.argsort(rows_u, kind="stable")               # input order of the first rows
    return rows_u[order], Yu[keep][order], c[keep][order], y_sq


class _RandomFeatureRidgeBase(BaseEstimator):
    """Shared fitting machinery (see the module docstring for the mathematics)."""

    _parameter_constraints: dict = {
        "features": [HasMethods(["fit", "transform"]), StrOptions({"passthrough"}), None],
        "alphas": ["array-like", Interval(numbers.Real, 0, None, closed="neither"), None],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "chunk_size": [Interval(numbers.Integral, 1, None, closed="left"),
                       StrOptions({"auto"})],
        "solver": [StrOptions({"auto", "cholesky", "lsqr", "cg", "pcg"})],
        "fit_intercept": ["boolean"],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "alpha_scale": [StrOptions({"sum", "mean"})],
        "gram_dtype": [StrOptions({"float64", "float32"})],
        "n_threads": N_THREADS_CONSTRAINT,
    }

    def __init__(self, features="passthrough", *, alphas=None, alpha_scale="sum",
                 validation_fraction=0.2, chunk_size="auto", solver="auto", fit_intercept=True,
                 tol=1e-8, max_iter=None, random_state=None, gram_dtype="float64",
                 n_threads=None):
        self.features = features
        self.alphas = alphas
        self.alpha_scale = alpha_scale
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
        if self.alphas is None:
            grid = DEFAULT_ALPHAS_MEAN if self.alpha_scale == "mean" else DEFAULT_ALPHAS
            return np.array(grid, dtype=np.float64)
        alphas = np.atleast_1d(np.asarray(self.alphas, dtype=np.float64))
        if alphas.ndim != 1 or alphas.size == 0:
            raise ValueError(f"alphas must be a positive number or a non-empty 1-D sequence of "
                             f"positive numbers, got {self.alphas!r}")
        if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
            raise ValueError(f"alphas must all be finite and > 0, got {self.alphas!r}; use e.g. "
                             f"np.logspace(-3, 5, 9) (or None for the default grid)")
        return alphas

    def _penalty(self, alphas, weight_sum):
        """The penalties on the summed (weighted) squared errors that ``alphas`` stand for:
        ``alphas`` itself (``alpha_scale="sum"``), or ``weight_sum * alphas`` ("mean": the
        penalty per sample, added to the weighted mean squared error)."""
        alphas = np.asarray(alphas, dtype=np.float64)
        return alphas if self.alpha_scale == "sum" else weight_sum * alphas

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
        float32 only if the bound max‖x‖₂ · max‖ω‖₂ ≥ |θ| is at most ``_F32_PHASE_LIMIT``
        (2¹⁰: a feature error ≤ 6·10⁻⁵, the order of a float32 sum of 10³ products, which the
        chunk's Gram already carries); otherwise (wide inputs, a narrow σ, or values beyond
        float32's range) it stays float64."""
        feats = self.features_ if feats is None else feats
        if (self.gram_dtype == "float32" and isinstance(feats, _DENSE_MAPS)
                and X.dtype == np.float64 and X.shape[0] > 0):
            if _phase_bound(feats, X) <= _F32_PHASE_LIMIT:
                X = X.astype(np.float32)
        return self._transform(X, feats)

    def _chunk_rows(self):
        """Rows per chunk: ``chunk_size``, or with "auto" :func:`_auto_chunk_rows` of the fitted
        width ``n_features_out_``."""
        if isinstance(self.chunk_size, str):
            return _auto_chunk_rows(self.n_features_out_)
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

    def _accumulate(self, feats, X, Y, rows=None, path=None, w=None):
        """Statistics of the rows ``rows`` (None: all) of X, chunk by chunk in row order, in one
        :class:`RidgeStatistics` (its :meth:`~RidgeStatistics.partial_fit` accumulation), and
        with ``path=(Wf, b)`` the summed validation score of every alpha: ``(stats, scores)``.

        Every chunk of ``chunk_size`` rows is featurised (randfeat's kernels on ``n_threads``
        threads) and then added by one BLAS ``syrk`` and one ``gemm`` called from this thread
        (with the process's BLAS threads): no call's shape depends on ``n_threads``, so neither
        do the sums."""
        stats = RidgeStatistics(self.gram_dtype)
        n = X.shape[0] if rows is None else len(rows)
        scores = None
        if path is not None:
            Wf, b = path
            L, K = b.shape
            scores = np.zeros(L)
        n_rows = n
        # a chunk's features may be scaled in place only when this loop owns them: randfeat's
        # maps return new arrays, while "passthrough" (or another transformer) may return a
        # view of the caller's X, which must never be modified
        scratch = path is None and isinstance(feats, RandomFeaturesBase)
        merged = None if path is not None else _merge_duplicate_rows(X, Y, rows, w)
        if merged is not None:
            rows, Y, w, y_sq = merged          # one row per distinct input row, weighted
            n = len(rows)
        for sl in self._chunks(n):
            idx = sl if rows is None else rows[sl]
            pos = idx if merged is None else sl
            Yc = Y[pos]
            wc = None if w is None else w[pos]
            Z = stats._update(self._chunk_features(X[idx], feats), Yc, wc, scratch=scratch)
            if path is not None:
                P = np.asarray(Z @ Wf).reshape(-1, L, K) + b[None]
                if wc is None:
                    scores += np.array([self._scores(P[:, j], Yc) for j in range(L)]) * len(Yc)
                else:
                    scores += np.array([wc @ self._row_losses(P[:, j], Yc) for j in range(L)])
            del Z
        stats._release()
        if merged is not None:   # the rows' own sums of squares and count, not the groups'
            stats.y_sq_sum_ = y_sq
            stats.n_samples_ = n_rows
        return stats, scores

    def _solve_path(self, stats, alphas):
        r"""Coefficients for every alpha from one accumulation: W (L, D, K), b (L, K).

        One Cholesky factorisation of :math:`A + \lambda I` per alpha, :math:`\lambda` the
        penalty the alpha stands for (``_penalty``; about 15 times cheaper than an
        eigendecomposition each, so faster for fewer than ~15 alphas); if a factorisation fails
        (lambda below the round-off of A), the eigendecomposition :math:`A = Q\Lambda Q^\top`
        gives :math:`w = Q(\Lambda + \lambda)^{-1}Q^\top c` (see :class:`RidgeStatistics`).
        """
        W, b, _ = stats._path(self._penalty(alphas, stats.weight_sum_), self.fit_intercept,
                              "cholesky")
        return W, b

    def _solve_one(self, stats, alpha, overwrite=False):
        """Final solve by Cholesky (the eigen-solution if A + nαI is not positive definite);
        ``overwrite``: the statistics' Gram is used as workspace (they are discarded after)."""
        W, b, used = stats._path(self._penalty([alpha], stats.weight_sum_), self.fit_intercept,
                                 overwrite=overwrite)
        self.solver_ = used[0]
        return W[0], b[0]

    def _iterative(self, Z, Y, alpha, solver, x0=None, w=None, nystrom=None):
        """Solve the centred, damped least-squares problem with LSQR or CG, column by column,
        or with PCG (:meth:`_pcg`, every column at once; ``nystrom`` its preconditioner's
        cache) (the process's BLAS threads; for narrow problems one BLAS thread is often
        faster, which the caller sets with :func:`threadpoolctl.threadpool_limits`)."""
        n, D = Z.shape
        if w is None:
            mz = (np.asarray(Z.mean(axis=0), dtype=np.float64).ravel() if self.fit_intercept
                  else np.zeros(D))
            my = Y.mean(axis=0) if self.fit_intercept else np.zeros(Y.shape[1])
            pen = self._penalty(alpha, n)

            def mv(v):
                v = np.ravel(v)
                return Z @ v - mz @ v

            def rmv(u):
                u = np.ravel(u)
                return np.asarray(Z.T @ u).ravel() - mz * u.sum()
        else:  # rows scaled by sqrt(w): the weighted least-squares problem
            sw = float(w.sum())
            # float32 features (solver="pcg"): weights in float32 too, no float64 copy of Z
            wz = w.astype(np.float32) if Z.dtype == np.float32 else w
            mz = (np.asarray(Z.T @ wz, dtype=np.float64).ravel() / sw if self.fit_intercept
                  else np.zeros(D))
            my = w @ Y / sw if self.fit_intercept else np.zeros(Y.shape[1])
            rw = np.sqrt(w)
            pen = self._penalty(alpha, sw)

            def mv(v):
                v = np.ravel(v)
                return rw * (Z @ v - mz @ v)

            def rmv(u):
                u = rw * np.ravel(u)
                return np.asarray(Z.T @ u).ravel() - mz * u.sum()

        if solver == "pcg":
            return self._pcg(Z, Y, mz, my, pen, w, x0, nystrom)
        op = spla.LinearOperator((n, D), matvec=mv, rmatvec=rmv, dtype=np.float64)
        W = np.zeros((D, Y.shape[1]))
        iters = []
        for k in range(Y.shape[1]):
            yk = Y[:, k] - my[k] if w is None else rw * (Y[:, k] - my[k])
            start = None if x0 is None else x0[:, k]
            if solver == "lsqr":
                # no warm start: with x0, SciPy's LSQR damps the correction x - x0, not x
                res = spla.lsqr(op, yk, damp=np.sqrt(pen), atol=self.tol, btol=self.tol,
                                iter_lim=self.max_iter)
                W[:, k], it = res[0], res[2]
            else:  # cg on (ZcᵀSZc + λI) w = ZcᵀS y
                normal = spla.LinearOperator(
                    (D, D), matvec=lambda v: rmv(mv(v)) + pen * np.ravel(v),
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

    def _pcg(self, Z, Y, mz, my, pen, w, x0, nystrom):
        r"""Preconditioned conjugate gradients on the normal equations
        :math:`(Z_c^\top S Z_c + \lambda I) W = Z_c^\top S (Y - \bar y)`, every target at once.

        The preconditioner is a randomized Nyström approximation
        :math:`\hat A = U \Lambda U^\top` of rank ``r = min(D, _NYSTROM_RANK)`` of
        :math:`A = Z_c^\top S Z_c` (Frangella, Tropp & Udell 2023, Alg. 2.1 and eq. 5.3):
        :math:`P^{-1} = (\lambda_r + \lambda) U(\Lambda + \lambda I)^{-1}U^\top + (I -
        UU^\top)`, which leaves :math:`P^{-1}(A + \lambda I)` with condition at most about
        :math:`(\lambda_{r+1}(A) + \lambda) / \lambda` (against :math:`(\lambda_1 +
        \lambda) / \lambda` without it).  ``nystrom``: a dict that keeps the approximation
        for further calls on the same ``Z`` and weights (it does not depend on alpha).
        Products with ``Z`` are in ``Z``'s precision (float32 features: single-precision
        ``gemm``), the recurrences in float64; stops when every column's residual is at most
        ``tol`` times its right-hand side's norm."""
        n, D = Z.shape
        K = Y.shape[1]
        dt = np.float32 if Z.dtype == np.float32 else np.float64
        mzd = mz.astype(dt)
        wd = None if w is None else w.astype(dt)

        def gram(V):  # A V = Zcᵀ S Zc V, float64 (D, k) in and out
            Vd = np.ascontiguousarray(V, dtype=dt)
            U = np.asarray(Z @ Vd)
            U -= mzd @ Vd
            if wd is not None:
                U *= wd[:, None]
            out = np.asarray(Z.T @ U, dtype=np.float64)
            out -= np.outer(mz, U.sum(axis=0, dtype=np.float64))
            return out

        Yc = Y - my
        if w is not None:
            Yc = Yc * w[:, None]
        C = np.asarray(Z.T @ Yc.astype(dt), dtype=np.float64) - np.outer(mz, Yc.sum(axis=0))
        if nystrom is None:
            nystrom = {}
        if "U" not in nystrom:
            nystrom["U"], nystrom["lam"] = _nystrom(gram, D, min(D, _NYSTROM_RANK),
                                                    check_random_state(self.random_state),
                                                    np.finfo(dt).eps)
        U, lam = nystrom["U"], nystrom["lam"]
        lr = lam[-1] if lam.size else 0.0

        def prec(R):
            UR = U.T @ R
            return U @ (((lr + pen) / (lam + pen))[:, None] * UR) + (R - U @ UR)

        X = np.zeros((D, K)) if x0 is None else np.array(x0, dtype=np.float64)
        cn = np.linalg.norm(C, axis=0)
        X[:, cn == 0] = 0.0   # a zero right-hand side (e.g. a constant target): w = 0
        R = C - (gram(X) + pen * X) if x0 is not None else C.copy()
        todo = np.linalg.norm(R, axis=0) > self.tol * cn
        iters = np.zeros(K, dtype=int)
        Zr = prec(R)
        P = Zr.copy()
        rz = np.einsum("ij,ij->j", R, Zr)
        cap = self.max_iter if self.max_iter is not None else 10 * D
        while todo.any() and iters.max() < cap:
            cols = np.flatnonzero(todo)
            AP = gram(P[:, cols]) + pen * P[:, cols]
            a = rz[cols] / np.einsum("ij,ij->j", P[:, cols], AP)
            X[:, cols] += a * P[:, cols]
            R[:, cols] -= a * AP
            iters[cols] += 1
            todo[cols] = np.linalg.norm(R[:, cols], axis=0) > self.tol * cn[cols]
            cols = np.flatnonzero(todo)
            if cols.size:
                Zr = prec(R[:, cols])
                rz2 = np.einsum("ij,ij->j", R[:, cols], Zr)
                P[:, cols] = Zr + (rz2 / rz[cols]) * P[:, cols]
                rz[cols] = rz2
        if todo.any():
            warnings.warn(f"PCG did not converge in {cap} iterations; raise max_iter or tol",
                          RuntimeWarning, stacklevel=4)
        b = my - mz @ X
        return X, b, [int(i) for i in iters]

    def _pcg_features(self, X):
        """solver="pcg"'s feature matrix in float32, chunk by chunk (no float64 copy), when
        ``gram_dtype="float32"`` and the map is a randfeat map with dense output; else None
        (the features as the other iterative solvers take them)."""
        if self.gram_dtype != "float32" or type(self.features_) not in _DENSE_MAPS:
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

    # ------------------------------------------------------------------ fit / predict
    def _fit(self, X, Y, w=None):
        alphas = self._check_alphas()
        self.features_ = (None if self.features in (None, "passthrough")
                          else clone(self.features).fit(X))
        n = X.shape[0]
        if type(self.features_) in _DENSE_MAPS:  # width known: no probe transform
            D, sparse_out = int(self.features_._n_features_out), False
        else:
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
        if va is not None and w is not None:
            wsum_va = float(w[va].sum())
            if not wsum_va > 0 or not float(w[tr].sum()) > 0:
                raise ValueError(
                    f"{type(self).__name__}.fit: the {'validation' if wsum_va <= 0 else 'training'}"
                    f" part of the split (validation_fraction={self.validation_fraction}) has "
                    f"only zero sample weights; give more rows a positive weight, change "
                    f"random_state, or pass a single alpha (no split)")

        if solver == "cholesky":
            feats = self._feature_map()
            if va is None:
                stats, _ = self._accumulate(feats, X, Y, w=w)
                best = 0
            else:
                stats, _ = self._accumulate(feats, X, Y, rows=tr, w=w)
                W, b = self._solve_path(stats, alphas)
                L, K = len(alphas), Y.shape[1]
                Wf = W.transpose(1, 0, 2).reshape(D, L * K)
                del W
                vstats, vscores = self._accumulate(feats, X, Y, rows=va, path=(Wf, b), w=w)
                self.validation_scores_ = vscores / (len(va) if w is None else wsum_va)
                best = self._best(self.validation_scores_)
                stats += vstats
                del vstats
            self.alpha_ = float(alphas[best])
            _trim_heap()   # the chunks' freed features, before the solve's own memory
            try:
                W, b = self._solve_one(stats, self.alpha_, overwrite=True)
            except _GramConsumed:
                # rare (A + nαI not numerically positive definite, e.g. alpha = 0 with more
                # features than rows): the in-place attempt consumed the statistics; the rows
                # are accumulated again and solved on a copy, which falls back to the
                # eigen-solution
                stats, _ = self._accumulate(feats, X, Y, w=w)
                W, b = self._solve_one(stats, self.alpha_)
            del stats
            self.n_iter_ = np.ones(Y.shape[1], dtype=int)  # one direct solve per target
        else:
            Z = self._pcg_features(X) if solver == "pcg" else None
            if Z is None:
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
                wtr, wva = (None, None) if w is None else (w[tr], w[va])
                nys = {}   # pcg: one preconditioner for every alpha
                for j in np.argsort(alphas)[::-1]:
                    W, b, _ = self._iterative(Ztr, Y[tr], alphas[j], solver, x0=Wprev, w=wtr,
                                              nystrom=nys)
                    Wprev = W if solver in ("cg", "pcg") else None
                    errs[j] = self._weighted_score(np.asarray(Zva @ W) + b, Y[va], wva)
                self.validation_scores_ = errs
                best = self._best(self.validation_scores_)
            else:
                best, Wprev = 0, None
            self.alpha_ = float(alphas[best])
            W, b, n_iter = self._iterative(Z, Y, self.alpha_, solver, w=w)
            self.n_iter_ = np.array(n_iter, dtype=int)
            if cols is not None:
                Wfull = np.zeros((D, W.shape[1]))
                Wfull[cols] = W
                W = Wfull
            self.solver_ = solver
        if va is None:
            self.validation_scores_ = None
        elif self.alpha_ in (alphas.min(), alphas.max()):
            side = "smallest" if self.alpha_ == alphas.min() else "largest"
            warnings.warn(
                f"{type(self).__name__}: the alpha chosen on the validation split, "
                f"{self.alpha_:g}, is the {side} of the grid alphas={alphas.tolist()}; the best "
                f"penalty may lie beyond it: extend the grid on that side "
                f"(alpha_scale={self.alpha_scale!r})", AlphaAtGridEdgeWarning, stacklevel=3)
        self.alphas_ = alphas
        return W, b

    def _no_dask_weights(self, sample_weight):
        if sample_weight is not None or getattr(self, "class_weight", None) is not None:
            raise NotImplementedError(
                f"{type(self).__name__}.fit: sample_weight and class_weight are not supported "
                f"on dask arrays yet; fit in memory, or pass none")

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
        feats = self._feature_map()
        for sl in self._chunks(X.shape[0]):
            out[sl] = np.asarray(self._as64(self._transform(X[sl], feats)) @ Wt) + b
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

    Minimises :math:`\\sum_i s_i (y_i - z(x_i)^\\top w - b)^2 + \\alpha\\lVert w\\rVert^2`
    where :math:`z` is the fitted ``features`` transformer and :math:`s_i` the sample weights:
    with the default ``alpha_scale="sum"`` this is :class:`sklearn.linear_model.Ridge` with the
    same ``alpha`` on the explicit features (``alpha_scale="mean"``: ``alpha`` per sample,
    ``Ridge(alpha * sum(s_i))``).  A grid of alphas is searched on a validation split and an
    :class:`AlphaAtGridEdgeWarning` is issued when the chosen alpha is at either end of the
    grid.  Dense features are handled by streaming normal equations
    (``chunk_size`` rows at a time, never an ``n_samples x D`` matrix) and a Cholesky solve;
    sparse features (random binning) by damped LSQR or CG.  See :mod:`randfeat.linear`.

    Parameters
    ----------
    features : transformer, "passthrough" or None, default="passthrough"
        Unfitted feature map (e.g. :class:`randfeat.RandomFourierFeatures`); it is cloned and
        fitted on ``X`` inside :meth:`fit` (fitted copy in ``features_``).  "passthrough"/None
        uses ``X`` itself (plain ridge regression).
    alphas : float, array-like of float or None, default=None
        Candidate penalties (> 0), in the scale ``alpha_scale`` says.  With a single value no
        validation split is made.  None: ``10**arange(-3, 6)`` ("sum") or ``10**arange(-8, 1)``
        ("mean").
    alpha_scale : {"sum", "mean"}, default="sum"
        "sum": ``alpha`` multiplies :math:`\\lVert w\\rVert^2` added to the *summed* weighted
        squared errors (scikit-learn's ``Ridge``/``RidgeCV`` scale; the same ``alpha`` means a
        relatively weaker penalty on more rows).  "mean": added to the weighted *mean* squared
        error, i.e. a penalty per sample (kernel ridge's convention, used by
        :class:`randfeat.kernel_ridge.ExactKernelRidge`; randfeat 0.1's only behaviour).
    validation_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out to choose ``alpha``; the model is then refitted on all rows.
    chunk_size : int or "auto", default="auto"
        Rows featurised at a time (memory ``chunk_size x D``).  "auto": ``max(1024, 2**21 //
        D, D // 2)`` rows, at most 8192 (about 2**21 values per chunk for narrow features,
        ``D / 2`` rows for wide ones so that a float32 chunk stays at most a quarter of the
        Gram's bytes; e.g. 2097 rows at D = 1000, 2000 at D = 4000).
    solver : {"auto", "cholesky", "lsqr", "cg", "pcg"}, default="auto"
        "auto" uses "cholesky" (streaming normal equations) for dense features and "lsqr" for
        sparse ones.  "lsqr"/"cg" materialise the whole feature matrix (cheap when sparse).
        "pcg": conjugate gradients on the normal equations, preconditioned by a randomized
        Nyström approximation of rank 100 of :math:`Z_c^\top S Z_c` (Frangella, Tropp & Udell,
        *Randomized Nyström preconditioning*, SIAM J. Matrix Anal. Appl. 2023), all targets at
        once, to relative residual ``tol``; it keeps the feature matrix, in float32 with
        ``gram_dtype="float32"`` and a dense randfeat map (N x D x 4 bytes), and costs
        O(N D (r + iterations)) instead of the Gram's O(N D^2): much faster than "cholesky"
        when D is large and the kernel's spectrum decays (cpu_act, D = 4000: 25-35 iterations;
        see ``benchmarks/README.md``).  Its random test matrix comes from ``random_state``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (centred normal equations).
    tol : float, default=1e-8
        Tolerance of LSQR (``atol = btol = tol``) and relative tolerance of CG.
    max_iter : int or None, default=None
        Iteration cap of LSQR/CG (None: the SciPy default).
    random_state : None, int or Generator, default=None
        Seeds the validation split (the feature map has its own ``random_state``).
    gram_dtype : {"float64", "float32"}, default="float64"
        Precision of each chunk's :math:`Z^\top Z` product (dense features; always accumulated over
        chunks in float64 and solved to float64 accuracy).  "float32" halves the dominant cost of a
        fit with wide features (one single-precision ``syrk`` per chunk; the chunk's features
        rounded to float32, the products summed over the chunk in float32, the chunk sums added in
        float64) at a rounding error of each chunk's entries of at most about ``chunk_size * 6e-8``
        times the sum of the magnitudes of their terms (typically ``sqrt(chunk_size) * 6e-8``): use
        it when the penalty is far above that error (moderate alphas; see ``benchmarks/README.md``
        for the measured effect on Adult, where the test error is unchanged); the default is exact
        to float64 rounding.  With "float32" and a randfeat map with dense output (RFF, Fastfood,
        SORF), :meth:`fit` also featurises float64 input in float32 (the map's single-precision
        path, which the products would round to anyway; :meth:`predict` featurises in the input's
        precision), and solves by a float32 Cholesky factorisation refined to float64 accuracy
        (about twice as fast as the float64 one; see :class:`RidgeStatistics`).
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

    def _row_losses(self, P, Y):
        return np.mean((P - Y) ** 2, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the feature map and the ridge weights.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights :math:`s_i` of the squared errors (as in scikit-learn's
            ``Ridge.fit``); the validation scores are weighted means.

        Returns
        -------
        self
        """
        if _dask.is_dask_array(X):
            self._no_dask_weights(sample_weight)
            return _dask.fit_ridge(self, X, y)
        X, y = self._validate_fit_X(X, y, multi_output=True, y_numeric=True)
        w = _check_sample_weight(sample_weight, X.shape[0], f"{type(self).__name__}.fit",
                                 some_positive=True)
        y = np.asarray(y, dtype=np.float64)
        Y = y.reshape(len(y), -1)
        W, b = self._fit(X, Y, w)
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
    Table 1).  ``alpha`` is chosen by validation *error rate*; among alphas with the same error
    rate, by the squared error of the scores on the ±1 targets (then the larger ``alpha``).
    Parameters as in :class:`RandomFeatureRidge`, and:

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
    alpha_, alphas_, validation_scores_, features_, n_features_out_, solver_, n_iter_
        As in :class:`RandomFeatureRidge`; ``validation_scores_`` are error rates plus a
        tie-break term below 1e-9 (the squared error mapped to [0, 1e-9)).

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
                 class_weight=None, validation_fraction=0.2, chunk_size="auto", solver="auto",
                 fit_intercept=True, tol=1e-8, max_iter=None, random_state=None,
                 gram_dtype="float64", n_threads=None):
        super().__init__(features, alphas=alphas, alpha_scale=alpha_scale,
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

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Fit the feature map and one least-squares scorer per class (±1 targets).

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
        if _dask.is_dask_array(X):
            self._no_dask_weights(sample_weight)
            return _dask.fit_ridge(self, X, y)
        who = f"{type(self).__name__}.fit"
        X, y = self._validate_fit_X(X, y)
        check_classification_targets(y)
        w = _check_sample_weight(sample_weight, X.shape[0], who, some_positive=True)
        self._label_binarizer = LabelBinarizer(neg_label=-1, pos_label=1)
        Y = self._label_binarizer.fit_transform(y).astype(np.float64)
        self.classes_ = self._label_binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"RandomFeatureRidgeClassifier needs at least 2 classes in y, got "
                             f"1 class ({self.classes_!r})")
        if self.class_weight is not None:
            if isinstance(self.class_weight, dict):
                unknown = set(self.class_weight) - set(self.classes_.tolist())
                if unknown:
                    raise ValueError(f"{who}: class_weight names classes that are not in y: "
                                     f"{sorted(unknown, key=str)!r}; the classes are "
                                     f"{self.classes_.tolist()!r}")
            cw = compute_sample_weight(self.class_weight, y)
            w = cw if w is None else w * cw
        if w is not None:
            weighted = np.unique(np.asarray(y)[w > 0])
            if len(weighted) < 2:
                raise ValueError(f"{who}: needs at least 2 classes with a positive weight, got "
                                 f"{len(weighted)} class(es) ({weighted!r}) after sample_weight "
                                 f"and class_weight")
        W, b = self._fit(X, Y, w)
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
