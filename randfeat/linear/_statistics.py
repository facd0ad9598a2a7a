r"""The streaming, mergeable sufficient statistics of ridge regression
(:class:`RidgeStatistics`)."""

from __future__ import annotations

import numpy as np
import scipy.linalg.blas as _blas
import scipy.sparse as sp

from randfeat._lib import _gram as _gramlib
from randfeat.linear import _oneblas
from randfeat.linear._inputs import as_2d_targets, check_sample_weight
from randfeat.linear._memory import GRAM_PANEL, gram_buffer, uninterrupted
from randfeat.linear._solvers import SOLVERS, SolveOptions, get_solver

__all__ = ["RidgeStatistics"]

#: the statistics solvers (RidgeStatistics.solve_path's ``method``)
_METHODS = tuple(name for name, spec in SOLVERS.items() if spec.data == "statistics")


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

    Every update is all-or-nothing: :meth:`partial_fit` and ``+=`` validate the rows and compute
    every new sum aside, then add the chunk's product to the Gram in place (the only D x D
    write; no copy of the Gram is made) and publish the other sums in the same step.  An
    exception before that step -- bad input, a MemoryError, Ctrl-C -- leaves the statistics as
    they were; a Ctrl-C that arrives during the in-place step is raised right after it, with
    the chunk added and the statistics whole (the exception's note says so; ``n_samples_`` tells
    which).

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
    Q^\top c` with :math:`A = Q\Lambda Q^\top` (the solvers of :mod:`randfeat.linear._solvers`).

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
        G = self._gram
        if G is None:
            return None
        full = self._gram_full
        if full is None:
            full = G + G.T
            np.fill_diagonal(full, np.diagonal(G))
            full.flags.writeable = False
            self._gram_full = full
        return full

    def __repr__(self):
        return (f"RidgeStatistics(n_samples_={self.n_samples_}, n_features={self.n_features}, "
                f"n_targets={self.n_targets})")

    # ------------------------------------------------------------------ accumulate
    def partial_fit(self, Z, y, sample_weight=None):
        """Add the rows ``Z`` (dense or sparse, shape (n, D)), targets ``y`` ((n,) or (n, K))
        and optional ``sample_weight`` ((n,), finite, >= 0) to the statistics; returns self.

        Every call must give the same D and K.  Zero rows are allowed (nothing is added; a
        first call with zero rows fixes D and K).  Successive calls accumulate in place (dense
        ``Z``: one BLAS ``syrk`` per call into the float64 Gram, or, with
        ``gram_dtype="float32"``, the single-precision product of the call's rows, formed by
        column panels of at most 1024 (``ssyrk`` + ``sgemm``) and added to it).  All or
        nothing: see the class notes.
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
        Y = as_2d_targets(y, who)
        if Y.shape[0] != Z.shape[0]:
            raise ValueError(f"{who}: Z has {Z.shape[0]} rows but y has {Y.shape[0]}; pass one "
                             f"target row per row of Z")
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{who}: y contains NaN or infinity")
        self._check_shape(Z.shape[1], Y.shape[1], who)
        w = check_sample_weight(sample_weight, Z.shape[0], who)
        self._update(Z, Y, w, atomic=True)
        return self

    def _check_shape(self, D, K, who):
        if self._gram is not None and (D, K) != (self.n_features, self.n_targets):
            raise ValueError(f"{who}: these statistics have D={self.n_features} features and "
                             f"K={self.n_targets} targets, got D={D}, K={K}; statistics of "
                             f"different feature maps or targets cannot be combined")

    def _update(self, Z, Y, w=None, scratch=False, atomic=False):
        """Add one chunk, without validation (``Y`` 2-D float64, ``w`` None or float64 (n,)).
        Returns ``Z`` as float64 (dense ndarray or CSR), for callers that reuse it, or as it came
        for float32 ``Z`` with ``gram_dtype="float32"`` (then every product of the chunk,
        ``Zᵀ[Y, 1]`` included, is single precision, added to the float64 sums).  ``scratch``:
        the caller does not use ``Z`` again, so with weights its rows are scaled by √w in place
        (no weighted copy of the chunk; the same bits), and the return value is meaningless.

        Dense ``Z``: ``G += Zᵀ S Z`` on the lower triangle by one BLAS ``dsyrk`` into ``G``
        itself, or in float32 by column panels (``ssyrk`` + ``sgemm`` into a D x min(D, 1024)
        workspace, each panel added to ``G``; randfeat/_lib/_gram.pyx), ``[C, σ_z] +=
        Zᵀ S [Y, 1]`` by one float64 ``gemm``.  The shapes of these calls depend on the chunk
        only, so the sums are the same bits whatever calls them.

        Every new sum but the Gram's is computed aside first; then, in one step, the chunk's
        product is added to the Gram in place and the other sums are published (with
        ``atomic``, a Ctrl-C is held back during that step: see :func:`uninterrupted`)."""
        n, D = Z.shape
        K = Y.shape[1]
        G = self._gram if self._gram is not None else gram_buffer(D)
        zty = self.zty_ if self.zty_ is not None else np.zeros((D, K))
        z_sum = self.z_sum_ if self.z_sum_ is not None else np.zeros(D)
        y_sum = self.y_sum_ if self.y_sum_ is not None else np.zeros(K)
        y_sq = self.y_sq_sum_ if self.y_sq_sum_ is not None else np.zeros(K)
        add_gram = None      # the in-place Gram update, made in the publishing step
        buf32 = self._buf32
        if sp.issparse(Z):
            Z = Z.tocsr().astype(np.float64, copy=False)
            Zw = Z if w is None else Z.multiply(w[:, None]).tocsr()
            dG = np.tril((Z.T @ Zw).toarray())
            zty = zty + np.asarray(Zw.T @ Y)
            z_sum = z_sum + np.asarray(Zw.sum(axis=0)).ravel()

            def add_gram():
                G.__iadd__(dG)
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
                CS = np.asarray(_oneblas.matmul(Z.T, Yw.astype(np.float32)), dtype=np.float64)
            else:
                CS = _oneblas.matmul(Z64.T, Yw)   # SciPy's BLAS, as the syrk (one pool)
            zty = zty + CS[:, :K]
            z_sum = z_sum + CS[:, K]
            # then G += (√S Z)ᵀ(√S Z); the rows scaled in place where nobody needs them unscaled
            if self.gram_dtype == "float32":
                Zs = np.ascontiguousarray(Z, dtype=np.float32)
                if rw is not None:
                    if scratch or Zs is not Z:
                        Zs *= rw.astype(np.float32)[:, None]
                    else:
                        Zs = Zs * rw.astype(np.float32)[:, None]
                if buf32 is None or buf32.shape[0] != D:
                    buf32 = np.empty((D, min(D, GRAM_PANEL)), dtype=np.float32, order="F")

                def add_gram():
                    # ssyrk + sgemm per column panel into the D x 1024 workspace, each panel
                    # added to the lower triangle of the float64 Gram (randfeat/_lib/_gram.pyx)
                    _gramlib.syrk_f32_into(Zs, G, buf32)
            else:
                Zs = Z64
                if rw is not None:
                    if scratch:
                        Zs *= rw[:, None]
                    else:
                        Zs = Z64 * rw[:, None]

                def add_gram():
                    out = _blas.dsyrk(1.0, Zs.T, beta=1.0, c=G, trans=0, lower=1,
                                      overwrite_c=1)
                    if out is not G:  # pragma: no cover - f2py always writes in place here
                        raise RuntimeError("RidgeStatistics: BLAS dsyrk did not update the "
                                           "Gram in place")
            if not single:
                Z = Z64
        if w is None:
            y_sum = y_sum + Y.sum(axis=0)
            y_sq = y_sq + (Y * Y).sum(axis=0)
            sw = float(n)
        else:
            wY = w[:, None] * Y
            y_sum = y_sum + wY.sum(axis=0)
            y_sq = y_sq + (wY * Y).sum(axis=0)
            sw = float(w.sum())
        new = dict(self.__dict__)
        new.update(_gram=G, zty_=zty, z_sum_=z_sum, y_sum_=y_sum, y_sq_sum_=y_sq,
                   _gram_full=None, _buf32=buf32, n_samples_=self.n_samples_ + int(n),
                   weight_sum_=self.weight_sum_ + sw)
        if atomic:
            with uninterrupted("RidgeStatistics: the chunk was added before the interrupt "
                               f"(n_samples_ is now {new['n_samples_']})"):
                if add_gram is not None:
                    add_gram()
                self.__dict__ = new
        else:
            if add_gram is not None:
                add_gram()
            self.__dict__ = new
        return Z

    def _release(self):
        """Free the float32 workspace (after the last chunk)."""
        self._buf32 = None

    def _consume_gram(self):
        """Hand the Gram over to an in-place solve: the statistics are then spent (no Gram)."""
        G = self._gram
        self._gram_full = None
        self._gram = None
        return G

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
        """Add the statistics of ``other`` in place (all or nothing, as :meth:`partial_fit`)."""
        if not isinstance(other, RidgeStatistics):
            return NotImplemented
        new = dict(self.__dict__)
        add_gram = None
        if other._gram is None:
            new["n_samples_"] = self.n_samples_ + other.n_samples_
        else:
            self._check_shape(other.n_features, other.n_targets, "RidgeStatistics.merge")
            new["_gram_full"] = None
            if self._gram is None:
                for f in self._FIELDS:
                    new[f] = getattr(other, f).copy(order="K")
            else:
                for f in self._FIELDS[1:]:
                    new[f] = getattr(self, f) + getattr(other, f)
                G, dG = self._gram, other._gram

                def add_gram():
                    G.__iadd__(dG)
            new["n_samples_"] = self.n_samples_ + other.n_samples_
            new["weight_sum_"] = self.weight_sum_ + other.weight_sum_
        with uninterrupted("RidgeStatistics: the other statistics were added before the "
                           "interrupt"):
            if add_gram is not None:
                add_gram()
            self.__dict__ = new
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

    def _path(self, penalties, fit_intercept=True, method="cholesky",
              who="RidgeStatistics.solve_path", overwrite=False, state=None):
        """W of shape (L, D, K), b (L, K) and the method used per penalty (the already checked
        ``penalties``, on the summed scale), by the statistics solver ``method`` of
        :data:`randfeat.linear._solvers.SOLVERS` with one ``state`` for the whole path (one
        centring, one float32 buffer, at most one eigendecomposition).  ``overwrite``: the last
        penalty is solved in place, for a single penalty in the Gram itself (the statistics are
        consumed; see :func:`~randfeat.linear._solvers.solve_cholesky`).  ``state``: the
        solvers' dict for the path (a caller that passes one reads the factorisation or the
        eigendecomposition left in it)."""
        solve = get_solver(method, who).function
        keep = SolveOptions(fit_intercept=fit_intercept, who=who)
        last = keep._replace(overwrite=overwrite)   # only the last penalty may be in place
        state = {} if state is None else state
        L = len(penalties)
        W = b = None
        used = []
        for j, pen in enumerate(penalties):
            sol = solve(self, pen, last if j == L - 1 else keep, state)
            if W is None:
                W = np.empty((L,) + sol.coef.shape)
                b = np.empty((L,) + sol.intercept.shape)
            W[j], b[j] = sol.coef, sol.intercept
            used.append(sol.method)
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
        if method not in _METHODS:
            raise ValueError(f"{who}: method must be one of {list(_METHODS)}, got {method!r}")
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
        who = "RidgeStatistics.solve"
        a = self._check_alphas(alpha, who)
        if a.size != 1:
            raise ValueError(f"{who}: alpha must be one number, got {alpha!r}; use solve_path "
                             f"for several")
        W, b, _ = self._path(a, fit_intercept, who=who)
        return W[0].T.copy(), b[0]

    def rss(self, coef, intercept):
        r"""Weighted residual sum of squares :math:`\sum_i s_i\lVert y_i - Wz_i - b\rVert^2` of
        the rows added, per target (shape (K,)), from the statistics alone."""
        if self._gram is None:
            raise ValueError("RidgeStatistics.rss: no samples were added")
        W = np.asarray(coef, dtype=np.float64).reshape(self.n_targets, self.n_features)
        b = np.asarray(intercept, dtype=np.float64).reshape(self.n_targets)
        GW = _oneblas.matmul(self.gram_, W.T)
        return (self.y_sq_sum_ - 2 * np.einsum("dk,kd->k", self.zty_, W)
                + np.einsum("kd,dk->k", W, GW) - 2 * b * self.y_sum_
                + 2 * b * _oneblas.matmul(W, self.z_sum_) + self.weight_sum_ * b * b)
