r"""Arc-cosine random features (Cho & Saul 2009) as a scikit-learn transformer."""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from randfeat._base import RandomFeaturesBase
from randfeat._lib import _pointwise
from randfeat._parallel import OrderedPool
from randfeat._sampling import sample_frequencies
from randfeat._validation import N_THREADS_CONSTRAINT, RANDOM_STATE_CONSTRAINT
from randfeat.kernels import GaussianKernel

__all__ = ["ArcCosineFeatures"]

#: values per chunk of the pointwise passes (a function of the shape only, so the output does not
#: depend on the thread count); below _PARALLEL_MIN_VALUES values they stay on one thread
CHUNK_VALUES = 1 << 15
PARALLEL_MIN_VALUES = 1 << 20


def chunked(n, m, n_threads, fn):
    """Run ``fn(a, b)`` on the row chunks ``[a, b)`` of an (n, m) array, chunk length fixed by
    m, over up to ``n_threads`` threads when the array is large (NumPy releases the GIL)."""
    rows = max(1, CHUNK_VALUES // max(m, 1))
    starts = range(0, n, rows)
    nt = n_threads if n * m >= PARALLEL_MIN_VALUES else 1
    with OrderedPool(max(1, min(nt, len(starts)))) as pool:
        for _ in pool.map(lambda a: fn(a, min(a + rows, n)), starts):
            pass


def project(X, W):
    """``X @ W.T`` as a C-contiguous array of X's dtype: one BLAS gemm for a dense X, scipy's
    sparse x dense product (over the non-zeros) for CSR/CSC."""
    if sp.issparse(X):
        return np.ascontiguousarray(X.tocsr() @ W.T, dtype=X.dtype)
    return np.matmul(X, W.T)


class ArcCosineFeatures(RandomFeaturesBase):
    r"""Random features of the arc-cosine kernels (Cho & Saul 2009).

    Maps :math:`x \in \mathbb R^d` to :math:`z(x) \in \mathbb R^D` (``D = n_components``),

    .. math::

        z(x) = \sqrt{\tfrac2D}\,\big[\Theta(w_j^\top x)\,(w_j^\top x)^n\big]_{j=1}^{D},
        \qquad w_j \sim N(0, I_d),

    :math:`\Theta` the Heaviside step (:math:`\Theta(0) = 0`), :math:`n` = ``order``: a
    random one-hidden-layer network with step (n = 0), ReLU (n = 1) or squared-ReLU (n = 2)
    units.  The estimate is unbiased for the arc-cosine kernel
    (:class:`randfeat.kernels.ArcCosineKernel`),

    .. math::

        \mathbb E\,z(x)^\top z(y) = k_n(x, y) = \frac1\pi\|x\|^n\|y\|^n J_n(\theta),

    :math:`\theta = \angle(x, y)`, :math:`J_0 = \pi - \theta`,
    :math:`J_1 = \sin\theta + (\pi - \theta)\cos\theta`,
    :math:`J_2 = 3\sin\theta\cos\theta + (\pi - \theta)(1 + 2\cos^2\theta)`.

    **Exact variance** (iid frequencies; derived in ``docs/theory/arccos.md``).  One term
    :math:`t = 2\Theta(w^\top x)\Theta(w^\top y)(w^\top x)^n(w^\top y)^n` has
    :math:`\mathbb E t^2 = 4\,\mathbb E[\Theta\Theta (w^\top x)^{2n}(w^\top y)^{2n}]
    = 2k_{2n}(x, y)`, so

    .. math::

        \operatorname{Var} z(x)^\top z(y) = \frac{2k_{2n}(x, y) - k_n(x, y)^2}{D},

    with :math:`k_{2n} = \frac1\pi\|x\|^{2n}\|y\|^{2n}J_{2n}(\theta)` and
    :math:`J_4 = (\pi - \theta)(24\cos^4\theta + 72\cos^2\theta + 9) + \sin\theta\,
    (50\cos^3\theta + 55\cos\theta)`.  For example :math:`n = 0`: :math:`(2k_0 - k_0^2)/D`
    (each term is 0 or 2); at :math:`x = y`: :math:`1/D`, :math:`5\|x\|^4/D`,
    :math:`201\|x\|^8/D` for n = 0, 1, 2 (:math:`2(4n-1)!! - ((2n-1)!!)^2`).  Antiparallel
    inputs (:math:`\theta = \pi`) have estimate exactly 0 = :math:`k_n`.

    Parameters
    ----------
    n_components : int, default 100
        Output width :math:`D` (number of random units).
    order : {0, 1, 2}, default 1
        The :math:`n` above.
    sampling : {"iid", "orthogonal"}, default "iid"
        ``"iid"``: :math:`w_j \sim N(0, I)` independent.  ``"orthogonal"``: blocks of
        :math:`d` exactly orthogonal rows, each a Haar-uniform direction times an independent
        :math:`\chi_d` radius (the ORF construction of Yu et al. 2016; independent blocks for
        :math:`D > d`, the last one cut).  Every row is still exactly :math:`N(0, I)`, so the
        estimate stays unbiased for :math:`k_n`; rows of one block are dependent, so the
        variance above no longer applies (it is measured, not given in closed form).
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the frequencies (drawn in float64 and cast: float32 and float64 fits share
        them).
    n_threads : int or None, default None
        Threads of the compiled pointwise pass (None: all available CPUs, -1 likewise, -2 all
        but one).  The projection is one BLAS call with the BLAS's own threads (never changed
        by randfeat).  The output is bit-identical for any ``n_threads``.

    Attributes
    ----------
    frequencies_ : ndarray of shape (n_components, n_features_in_)
        The :math:`w_j` as rows, in the dtype of the fitted data, read-only: the projections
        are ``X @ frequencies_.T``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Input feature names, when ``X`` had string column names.

    See Also
    --------
    randfeat.kernels.ArcCosineKernel : the exact kernel.

    Notes
    -----
    A weight variance :math:`s^2` (:math:`w \sim N(0, s^2 I)`) or an input bias are not
    parameters: scaling the input gives the first, :math:`k_n^{(s)}(x, y) = k_n(s x, s y) =
    s^{2n} k_n(x, y)`, and appending a constant column gives the second.

    Cost per sample: one BLAS matrix product (:math:`O(dD)`) and NumPy's SIMD step/maximum,
    square and scale passes over the output, on row chunks fixed by the shape (spread over
    ``n_threads`` threads for large outputs; the same bits for any thread count).  Sparse input
    (CSR/CSC) is projected by scipy over its non-zeros and gives the dense input's features up
    to the summation order.  float32 input gives float32 features (projection, square and scale
    in float32).  A projection or a square beyond the dtype's range raises ValueError instead of
    returning inf.

    References
    ----------
    Y. Cho and L. K. Saul, "Kernel Methods for Deep Learning", NIPS 2009, eq. (1)-(6).
    F. X. Yu et al., "Orthogonal Random Features", NIPS 2016 (the orthogonal blocks).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import ArcCosineFeatures
    >>> from randfeat.kernels import ArcCosineKernel
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> acf = ArcCosineFeatures(n_components=50_000, order=1, random_state=0)
    >>> Z = acf.fit_transform(X)
    >>> Z.shape, acf.frequencies_.shape
    ((5, 50000), (50000, 3))
    >>> K = ArcCosineKernel(order=1)(X)
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.05 * np.abs(K).max())
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "order": [Interval(numbers.Integral, 0, 2, closed="both")],
        "sampling": [StrOptions({"iid", "orthogonal"})],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, order=1, sampling="iid", random_state=None,
                 n_threads=None):
        self.n_components = n_components
        self.order = order
        self.sampling = sampling
        self.random_state = random_state
        self.n_threads = n_threads

    def _build(self, X):
        d, D = X.shape[1], int(self.n_components)
        W = sample_frequencies(GaussianKernel(1.0), D, d, self._rng(), self.sampling,
                               self._n_threads())
        W = np.ascontiguousarray(W, dtype=X.dtype)
        W.flags.writeable = False
        return {"frequencies_": W, "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random frequencies for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Only its number of features and dtype are used.
        y : ignored

        Returns
        -------
        self : ArcCosineFeatures
        """
        self._fit_atomic(self._build, X)
        return self

    def transform(self, X):
        """Arc-cosine features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            float32 stays float32; other real input is computed in float64.  NaN/Inf raise.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        st = self._fitted_state()
        W, D = st["frequencies_"], st["_n_features_out"]
        if not (isinstance(W, np.ndarray) and W.shape == (D, X.shape[1])
                and W.dtype.kind == "f"):
            raise ValueError(
                f"ArcCosineFeatures.transform: the fitted frequencies_ must be a float array of "
                f"shape ({D}, {X.shape[1]}); got {getattr(W, 'shape', type(W).__name__)}. "
                "Call fit again")
        if W.dtype != X.dtype or not W.flags.c_contiguous:
            W = np.ascontiguousarray(W, dtype=X.dtype)
        nt = self._n_threads()
        _pointwise.check_thread_request(nt)
        out = project(X, W)
        n_bad = self._relu_pass(out, int(st["order"]), math.sqrt(2.0 / D), nt)
        if n_bad:
            big = abs(X).max() if sp.issparse(X) else np.max(np.abs(X))
            raise ValueError(
                f"ArcCosineFeatures.transform: the features of {n_bad} rows of X are not finite "
                f"({X.dtype} input with entries up to |x| = {float(big):.3g}: the projections "
                f"w'x{' or their squares' if st['order'] == 2 else ''} overflow); rescale X "
                "(e.g. with sklearn.preprocessing.StandardScaler)"
                + (" or pass float64 input" if X.dtype == np.float32 else ""))
        return out

    @staticmethod
    def _relu_pass(P, order, scale, n_threads):
        """``P = scale * Theta(P) * P**order`` in place (``Theta(0) = 0``), NumPy's SIMD loops
        on row chunks; returns the number of rows with a non-finite value (a NaN or +inf
        projection, or a square beyond the dtype's range; a -inf projection gives 0, as the
        step does)."""
        bad = np.zeros(P.shape[0], dtype=bool)
        s = P.dtype.type(scale)

        def chunk(a, b):
            Q = P[a:b]
            with np.errstate(over="ignore", invalid="ignore"):
                pre = Q.max(axis=1)
                if order == 0:
                    np.greater(Q, 0, out=Q, casting="unsafe")       # 1.0 or 0.0
                else:
                    np.maximum(Q, 0, out=Q)
                    if order == 2:
                        np.multiply(Q, Q, out=Q)
                Q *= s
                post = Q.max(axis=1) if order == 2 else pre
            bad[a:b] = ~(np.isfinite(pre) & np.isfinite(post))

        chunked(P.shape[0], P.shape[1], n_threads, chunk)
        return int(bad.sum())
