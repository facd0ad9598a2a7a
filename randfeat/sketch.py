r"""Random feature maps of dot-product kernels :math:`k(x, y) = f(\langle x, y\rangle)`.

* :class:`PolynomialCountSketch` -- TensorSketch (Pham & Pagh, KDD 2013) for the polynomial
  kernel :math:`(\gamma\langle x, y\rangle + c_0)^p`: ``p`` count sketches of each row combined
  by FFT (their circular convolution), scikit-learn's estimator of the same name on a compiled
  count-sketch kernel and real FFTs.
* :class:`RandomMaclaurin` -- Random Maclaurin features (Kar & Karnick, AISTATS 2012) for any
  :math:`f(t) = \sum_n a_n t^n` with :math:`a_n \ge 0`: each feature is a product of a random
  number of random projections.

Both are unbiased; their exact variances are in the class docstrings and derived in
``docs/theory/dot-product-sketches.md``.
"""

from __future__ import annotations

import math
import numbers
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.fft
import scipy.sparse as sp
from scipy.special import gammaln
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from randfeat._base import RandomFeaturesBase
from randfeat._lib import _sketch
from randfeat._validation import N_THREADS_CONSTRAINT, RANDOM_STATE_CONSTRAINT

__all__ = ["PolynomialCountSketch", "RandomMaclaurin"]

#: values of one block of the count sketches (rows x degree x n_components): the sketches of a
#: block stay in cache between the count sketch, the FFTs and the product; the block depends on
#: the shapes only, so the output does not depend on the number of threads
_SKETCH_BLOCK_VALUES = 1 << 18
#: below this many values (rows x degree x n_components, ~10 ms of work) one thread does it all:
#: starting threads costs more than it saves on a busy machine (measured on 2 shared cores)
_THREADED_VALUES = 1 << 22
#: values of one block of Random Maclaurin's projections (rows x vectors)
_PROJECTION_BLOCK_VALUES = 1 << 22


def _frozen(a):
    a.flags.writeable = False
    return a


class _ReadOnlyFit:
    """Keeps every fitted array read-only after unpickling.  (``RandomFeaturesBase`` freezes
    the arrays that own their data; NumPy 2 unpickles large read-only arrays as views of the
    pickle's bytes, which it leaves writeable.)"""

    def __setstate__(self, state):
        super().__setstate__(state)
        for k in self.__dict__.get("_fitted_keys", ()):
            v = self.__dict__.get(k)
            if isinstance(v, np.ndarray):
                v.flags.writeable = False


def _as_csr(X):
    X = X.tocsr()
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    return X


class PolynomialCountSketch(_ReadOnlyFit, RandomFeaturesBase):
    r"""Polynomial kernel features by TensorSketch (Pham & Pagh 2013).

    Approximates :math:`k(x, y) = (\gamma\langle x, y\rangle + c_0)^p` (``gamma``, ``coef0``,
    ``degree``) as :math:`z(x)^\top z(y)`.  With :math:`\tilde x = [\sqrt\gamma\,x,
    \sqrt{c_0}]` (the last coordinate only when :math:`c_0 \ne 0`), so that
    :math:`k(x, y) = \langle\tilde x, \tilde y\rangle^p`, the map draws :math:`p` independent
    bucket functions :math:`h_j` uniform on :math:`\{0..D-1\}` and sign functions :math:`s_j`
    uniform on :math:`\{\pm1\}` (``D = n_components``), one value per input coordinate, and
    outputs the circular convolution of the :math:`p` count sketches
    :math:`C_j(\tilde x)_b = \sum_{k: h_j(k) = b} s_j(k)\tilde x_k`:

    .. math::

        z(x) = \mathcal F^{-1}\Big(\prod_{j=1}^p \mathcal F C_j(\tilde x)\Big),

    which is the count sketch of :math:`\tilde x^{\otimes p}` with bucket
    :math:`\sum_j h_j(k_j) \bmod D` and sign :math:`\prod_j s_j(k_j)`.

    **Exact law.**  With :math:`t = \langle\tilde x, \tilde y\rangle`, :math:`N = \|\tilde
    x\|^2\|\tilde y\|^2` and :math:`Q = \sum_k \tilde x_k^2\tilde y_k^2`:
    :math:`\mathbb E[z(x)^\top z(y)] = t^p = k(x, y)` (unbiased), and

    .. math::

        \operatorname{Var}[z(x)^\top z(y)] = \frac{1}{D^2}\Big[(D^2 - 2D + c)\,t^{2p}
            + (D - c)\big((t^2 + N - Q)^p + (2t^2 - Q)^p\big)
            + c\,(2t^2 + N - 2Q)^p\Big] - t^{2p},

    with :math:`c = 2` for even :math:`D`, 1 for odd :math:`D` (by Parseval, from the second
    moments of one count sketch's spectrum; ``docs/theory/dot-product-sketches.md``).  For
    :math:`p = 1` it is the count sketch's :math:`(t^2 + N - 2Q)/D`; for large :math:`D` it is
    :math:`\approx p\,[\ldots]/D`, of order :math:`((t^2 + N)^p - t^{2p})/D`.

    The map is scikit-learn's ``PolynomialCountSketch`` (same parameters, same law; scikit-learn
    computes complex FFTs of all sketches at once in float64), on a compiled count-sketch kernel
    (rows in parallel), real FFTs (``scipy.fft``, ``n_threads`` workers) and the product in the
    frequency domain, in blocks of rows that stay in cache.

    Parameters
    ----------
    n_components : int, default=100
        Output width :math:`D` (any :math:`D \ge 1`).
    gamma : float, default=1.0
        :math:`\gamma \ge 0`.
    degree : int, default=2
        :math:`p \ge 1`.
    coef0 : float, default=0.0
        :math:`c_0 \ge 0` (a negative :math:`c_0` has no real square root, and the kernel is
        then not positive definite).
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the hash tables (randfeat's one rule).
    n_threads : int or None, default=None
        Threads (None: all CPUs; negative: count back).  With enough rows each thread takes
        whole blocks of rows through the count sketch, the FFTs and the product (no barrier
        between the steps); otherwise the threads split the rows of one block.  The output is
        bit-identical for every value (a row's result depends on that row only).

    Attributes
    ----------
    index_hash_ : ndarray of int64, shape (degree, n_features_in_ + [coef0 != 0])
        Buckets :math:`h_j(k)` in :math:`[0, D)` (read-only).  ``indexHash_`` is the same array
        (scikit-learn's name).
    bit_hash_ : ndarray of int8, shape (degree, n_features_in_ + [coef0 != 0])
        Signs :math:`s_j(k)` (read-only).  ``bitHash_`` is the same array.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    RandomMaclaurin : unbiased features for any dot-product kernel with non-negative Maclaurin
        coefficients (products of random projections).
    sklearn.kernel_approximation.PolynomialCountSketch

    Notes
    -----
    Time per row :math:`O(p(d + D\log D))`, memory of one block of rows.  Sparse input
    (CSR/CSC) visits the stored entries only and gives the dense input's features exactly
    (same additions in the same order).  float32 input is sketched and transformed in float32.
    Timings against scikit-learn's estimator: ``benchmarks/README.md`` (``bench_sketch.py``).

    References
    ----------
    N. Pham and R. Pagh, "Fast and scalable polynomial kernels via explicit feature maps",
    KDD 2013.  H. Avron, H. L. Nguyen and D. P. Woodruff, "Subspace embeddings for the
    polynomial kernel", NIPS 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import PolynomialCountSketch
    >>> X = np.random.default_rng(0).normal(size=(4, 3)) / 2
    >>> ps = PolynomialCountSketch(4096, degree=2, coef0=1.0, random_state=0)
    >>> Z = ps.fit_transform(X)
    >>> Z.shape, ps.index_hash_.shape
    ((4, 4096), (2, 4))
    >>> K = (X @ X.T + 1.0) ** 2
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.2)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "coef0": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, gamma=1.0, degree=2, coef0=0.0, random_state=None,
                 n_threads=None):
        self.n_components = n_components
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.random_state = random_state
        self.n_threads = n_threads

    def _build(self, X):
        rng = self._rng()
        D, p = int(self.n_components), int(self.degree)
        dd = X.shape[1] + (1 if self.coef0 != 0 else 0)
        index = rng.integers(0, D, size=(p, dd), dtype=np.int64)
        sign = (2 * rng.integers(0, 2, size=(p, dd), dtype=np.int8) - 1).astype(np.int8)
        return {"index_hash_": _frozen(index), "bit_hash_": _frozen(sign),
                "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the hash tables for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Only its number of features is used.
        y : ignored

        Returns
        -------
        self : PolynomialCountSketch
        """
        self._fit_atomic(self._build, X)
        return self

    @property
    def indexHash_(self):  # noqa: N802 - scikit-learn's name
        """``index_hash_`` under scikit-learn's name."""
        return self.index_hash_

    @property
    def bitHash_(self):  # noqa: N802 - scikit-learn's name
        """``bit_hash_`` under scikit-learn's name."""
        return self.bit_hash_

    def _checked_state(self, X):
        st = self._fitted_state()
        index, sign = st["index_hash_"], st["bit_hash_"]
        p, D = int(st["degree"]), int(st["n_components"])
        dd = X.shape[1] + (1 if st["coef0"] != 0 else 0)
        for name, a, kind in (("index_hash_", index, "i"), ("bit_hash_", sign, "i")):
            if not (isinstance(a, np.ndarray) and a.shape == (p, dd) and a.dtype.kind == kind):
                raise ValueError(
                    f"PolynomialCountSketch.transform: the fitted {name} must be an integer "
                    f"array of shape ({p}, {dd}); got {getattr(a, 'shape', type(a).__name__)} "
                    f"of dtype {getattr(a, 'dtype', None)}. Call fit again")
        index = np.ascontiguousarray(index, dtype=np.int64)
        if not np.all(np.abs(sign) == 1):
            raise ValueError("PolynomialCountSketch.transform: the fitted bit_hash_ must hold "
                             "signs -1 and +1 only. Call fit again")
        sign = np.ascontiguousarray(sign, dtype=np.int8)
        return index, sign, p, D

    def transform(self, X):
        """TensorSketch features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            float32 stays float32; other real input is computed in float64.  NaN/Inf raise.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        index, sign, p, D = self._checked_state(X)
        nt = self._n_threads()
        scale = math.sqrt(float(self.gamma))
        extra = math.sqrt(float(self.coef0))
        dt = X.dtype
        n, d = X.shape
        if sp.issparse(X):
            X = _as_csr(X)
        out = np.empty((n, D), dtype=dt)
        rows = max(1, _SKETCH_BLOCK_VALUES // (p * D))
        spans = [(s, min(n, s + rows)) for s in range(0, n, rows)]

        def block(s, e, kt):
            """Rows s..e-1 with kt threads inside the kernels and FFTs."""
            cs = np.empty((e - s, p, D), dtype=dt)
            if sp.issparse(X):
                Xb = X[s:e]
                _sketch.count_sketch_csr(Xb.data, Xb.indices, Xb.indptr, d, index, sign, scale,
                                         extra, cs, kt)
            else:
                _sketch.count_sketch_dense(X[s:e], index, sign, scale, extra, cs, kt)
            if p == 1:
                out[s:e] = cs[:, 0]
                return
            F = scipy.fft.rfft(cs, axis=2, workers=kt, overwrite_x=True)
            del cs
            _sketch.spectrum_product(F.view(dt), kt)
            out[s:e] = scipy.fft.irfft(F[:, 0], n=D, axis=1, workers=kt, overwrite_x=True)

        threaded = nt > 1 and n * p * D >= _THREADED_VALUES
        if threaded and len(spans) >= 2:
            # each thread takes whole blocks (count sketch, FFTs, product) with no barrier
            # between the steps; the kernels and pocketfft release the GIL
            with ThreadPoolExecutor(max_workers=min(nt, len(spans))) as ex:
                for f in [ex.submit(block, s, e, 1) for s, e in spans]:
                    f.result()
        else:
            # one block: threads inside the kernels and FFTs, when there is work for them
            for s, e in spans:
                block(s, e, nt if threaded else 1)
        return out


# ------------------------------------------------------------------------------ Maclaurin
class _Series:
    r"""The Maclaurin series :math:`f(t) = \sum_n a_n t^n` of a dot-product kernel and the law
    of the degree, from RandomMaclaurin's parameters (see its docstring)."""

    def __init__(self, est):
        kernel = est.kernel
        g = float(est.gamma)
        self.kind = kernel if isinstance(kernel, str) else (
            "callable" if callable(kernel) else "sequence")
        if self.kind == "polynomial":
            q, c = int(est.degree), float(est.coef0)
            if g == 0 and c == 0:
                raise ValueError("RandomMaclaurin: gamma=0 with coef0=0 makes the polynomial "
                                 "kernel identically 0; pass gamma > 0 or coef0 > 0")
            # a_n = C(q, n) gamma^n c0^(q - n) (0^0 = 1)
            self.finite = np.array([math.comb(q, n) * g**n * c**(q - n) for n in range(q + 1)],
                                   dtype=np.float64)
        elif self.kind == "exponential":
            if g == 0:
                raise ValueError("RandomMaclaurin: gamma=0 makes the exponential kernel the "
                                 "constant 1; pass gamma > 0")
            self.finite = None
            self.gamma = g
        elif self.kind == "sequence":
            a = np.asarray(kernel, dtype=np.float64)
            if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0) \
                    or not np.any(a > 0):
                raise ValueError(
                    "RandomMaclaurin: kernel given as a sequence must be the Maclaurin "
                    "coefficients a_0, a_1, ... (finite, >= 0, not all 0) of f(t) = sum a_n t^n; "
                    f"got {kernel!r}")
            self.finite = a
        else:  # callable n -> a_n
            self.finite = None
            self.fn = kernel

    def coef(self, n):
        """a_n for an integer array n."""
        n = np.asarray(n, dtype=np.int64)
        if self.finite is not None:
            a = np.zeros(n.shape)
            ok = n < self.finite.size
            a[ok] = self.finite[n[ok]]
            return a
        if self.kind == "exponential":
            return np.exp(n * math.log(self.gamma) - gammaln(n + 1))
        out = np.empty(n.shape)
        for i, k in enumerate(n.ravel()):
            v = self.fn(int(k))
            if not (isinstance(v, numbers.Real) and math.isfinite(v) and v >= 0):
                raise ValueError(f"RandomMaclaurin: the coefficient callable returned {v!r} "
                                 f"for degree {int(k)}; it must return a finite a_n >= 0")
            out.flat[i] = float(v)
        return out

    def draw_degrees(self, law, D, rng):
        """(degrees N_j, a_N / p_N) of D features for the degree law ``law``."""
        if isinstance(law, str) and law == "geometric":
            N = rng.geometric(0.5, size=D).astype(np.int64) - 1     # P(N = n) = 2^-(n+1)
            return N, self.coef(N) * np.exp2(N + 1.0)
        if isinstance(law, str):  # "proportional": p_n = a_n / f(1)
            if self.kind == "exponential":
                N = rng.poisson(self.gamma, size=D).astype(np.int64)
                return N, np.full(D, math.exp(self.gamma))
            if self.finite is None:
                raise ValueError("RandomMaclaurin: degree_law='proportional' needs the sum of "
                                 "the coefficients, unknown for a callable kernel; pass the "
                                 "coefficients as a sequence or use degree_law='geometric'")
            total = float(self.finite.sum())
            N = self._inverse_cdf(self.finite / total, D, rng)
            return N, np.full(D, total)
        p = np.asarray(law, dtype=np.float64)
        if (p.ndim != 1 or p.size == 0 or not np.all(np.isfinite(p)) or np.any(p < 0)
                or abs(p.sum() - 1) > 1e-9):
            raise ValueError(f"RandomMaclaurin: degree_law as an array must be probabilities "
                             f"p_0, p_1, ... (>= 0, summing to 1); got {law!r}")
        a = self.coef(np.arange(p.size))
        if self.finite is None or self.finite[p.size:].any() or np.any((a > 0) & (p == 0)):
            raise ValueError(
                "RandomMaclaurin: the degree law must give a positive probability to every "
                "degree with a positive coefficient (otherwise the features are biased); "
                f"degree_law={law!r} does not for this kernel")
        N = self._inverse_cdf(p, D, rng)
        return N, a[N] / p[N]

    @staticmethod
    def _inverse_cdf(p, D, rng):
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        u = rng.random(D)
        return np.minimum(np.searchsorted(cdf, u, side="right"), p.size - 1).astype(np.int64)


class RandomMaclaurin(_ReadOnlyFit, RandomFeaturesBase):
    r"""Random Maclaurin features for dot-product kernels (Kar & Karnick 2012).

    For a kernel :math:`k(x, y) = f(\langle x, y\rangle)` with
    :math:`f(t) = \sum_{n\ge 0} a_n t^n`, :math:`a_n \ge 0`, each of the :math:`D` features
    (``D = n_components``) draws a degree :math:`N \sim (p_n)` and :math:`N` independent
    random vectors :math:`w_1..w_N` (entries iid Rademacher :math:`\pm1`, or standard normal)
    and is

    .. math::

        z_j(x) = \sqrt{\frac{a_N}{D\,p_N}}\ \prod_{i=1}^{N} w_i^\top x

    (the empty product is 1).  Then :math:`\mathbb E[z(x)^\top z(y)] = \sum_n p_n
    \frac{a_n}{p_n}\langle x, y\rangle^n = k(x, y)`: unbiased whenever :math:`p_n > 0` for every
    :math:`a_n > 0`.

    **Exact variance.**  With :math:`t = \langle x, y\rangle`,
    :math:`m_2 = \|x\|^2\|y\|^2 + 2t^2 - 2\sum_k x_k^2 y_k^2` (Rademacher) or
    :math:`\|x\|^2\|y\|^2 + 2t^2` (Gaussian) -- the second moment of one factor
    :math:`(w^\top x)(w^\top y)` -- a feature of degree :math:`n` has
    :math:`\operatorname{Var}[\prod_i (w_i^\top x)(w_i^\top y)] = m_2^n - t^{2n}`, and over the
    degrees

    .. math::

        \operatorname{Var}[z(x)^\top z(y)] = \frac1D\Big[\sum_n \frac{a_n^2}{p_n}\, m_2^n
            - f(t)^2\Big].

    Rademacher vectors never have the larger variance (their :math:`m_2` is smaller by
    :math:`2\sum_k x_k^2 y_k^2 \ge 0`), at every degree and for every degree law.

    **Degree law** (``degree_law``): ``"proportional"`` (default), :math:`p_n = a_n / f(1)`, so
    every feature has the same weight :math:`a_N/p_N = f(1)` and the variance is
    :math:`[f(1) f(m_2) - f(t)^2]/D`; for the polynomial kernel :math:`N` is
    Binomial(:math:`q`, :math:`\gamma/(\gamma + c_0)`), for the exponential kernel
    Poisson(:math:`\gamma`).  ``"geometric"``: Kar & Karnick's law :math:`p_n = 2^{-(n+1)}`
    (their :math:`p = 2`), which puts weight on degrees whose coefficient is 0 (those features
    are 0).  An array :math:`(p_0, \dots, p_Q)`: your own law (finite expansions only).

    Parameters
    ----------
    n_components : int, default=100
        Number of features :math:`D`.
    kernel : "polynomial", "exponential", sequence or callable, default="polynomial"
        ``"polynomial"``: :math:`f(t) = (\gamma t + c_0)^q` (``degree`` q, ``coef0``
        :math:`c_0`), :math:`a_n = \binom qn\gamma^n c_0^{q-n}`.  ``"exponential"``:
        :math:`f(t) = e^{\gamma t}`, :math:`a_n = \gamma^n/n!` (with ``sigma``-normalised inputs
        this is the Gaussian kernel up to the factors :math:`e^{-\gamma\|x\|^2/2}`).  A sequence
        :math:`(a_0, \dots, a_Q)`: :math:`f(t) = \sum_n a_n t^n` (``gamma``, ``degree`` and
        ``coef0`` are not used).  A callable ``n -> a_n``: an infinite expansion (with
        ``degree_law="geometric"`` or an array).
    degree : int, default=2
        :math:`q` of the polynomial kernel.
    gamma : float, default=1.0
        :math:`\gamma \ge 0` of the polynomial and exponential kernels.
    coef0 : float, default=0.0
        :math:`c_0 \ge 0` of the polynomial kernel.
    vectors : {"rademacher", "gaussian"}, default="rademacher"
        Law of the entries of the random vectors.
    degree_law : "proportional", "geometric" or array-like, default="proportional"
        :math:`(p_n)`, above.
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the degrees (drawn first) and the vectors.
    n_threads : int or None, default=None
        Threads of the product pass (the projections are a BLAS product with the BLAS's own
        threads).  The output is bit-identical for every value.

    Attributes
    ----------
    degrees_ : ndarray of int64, shape (n_components,)
        :math:`N_j`.
    vectors_ : ndarray of shape (sum(degrees_), n_features_in_)
        The random vectors of all features, stacked: feature j uses rows
        ``segments_[j]:segments_[j + 1]`` (dtype of the fitted data).
    segments_ : ndarray of int64, shape (n_components + 1,)
    weights_ : ndarray of shape (n_components,)
        :math:`\sqrt{a_{N_j}/(D\,p_{N_j})}`.

    See Also
    --------
    PolynomialCountSketch : TensorSketch, faster for high degrees, for the polynomial kernel.

    References
    ----------
    P. Kar and H. Karnick, "Random feature maps for dot product kernels", AISTATS 2012.
    J. Wacker, M. Kanagawa and M. Filippone, "Improved random features for dot product
    kernels", arXiv:2201.08712 (the Rademacher/Gaussian comparison).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import RandomMaclaurin
    >>> X = np.random.default_rng(0).normal(size=(5, 4)) / 4
    >>> rm = RandomMaclaurin(20_000, kernel="exponential", gamma=0.5, random_state=0)
    >>> Z = rm.fit_transform(X)
    >>> bool(np.abs(Z @ Z.T - np.exp(0.5 * X @ X.T)).max() < 0.05)
    True
    >>> RandomMaclaurin(8, degree=3, random_state=0).fit(X).degrees_
    array([3, 3, 3, 3, 3, 3, 3, 3])
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [StrOptions({"polynomial", "exponential"}), "array-like", callable],
        "degree": [Interval(numbers.Integral, 0, None, closed="left")],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "coef0": [Interval(numbers.Real, 0, None, closed="left")],
        "vectors": [StrOptions({"rademacher", "gaussian"})],
        "degree_law": [StrOptions({"proportional", "geometric"}), "array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, kernel="polynomial", degree=2, gamma=1.0,
                 coef0=0.0, vectors="rademacher", degree_law="proportional", random_state=None,
                 n_threads=None):
        self.n_components = n_components
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.vectors = vectors
        self.degree_law = degree_law
        self.random_state = random_state
        self.n_threads = n_threads

    def _build(self, X):
        series = _Series(self)
        rng = self._rng()
        D, d = int(self.n_components), X.shape[1]
        N, ratio = series.draw_degrees(self.degree_law, D, rng)
        M = int(N.sum())
        if self.vectors == "rademacher":
            W = (2.0 * rng.integers(0, 2, size=(M, d), dtype=np.int8) - 1.0)
        else:
            W = rng.standard_normal((M, d))
        segments = np.zeros(D + 1, dtype=np.int64)
        np.cumsum(N, out=segments[1:])
        weights = np.sqrt(ratio / D)
        return {"degrees_": _frozen(N), "vectors_": _frozen(np.ascontiguousarray(W, X.dtype)),
                "segments_": _frozen(segments), "weights_": _frozen(weights.astype(X.dtype)),
                "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the degrees and random vectors for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Only its number of features and dtype are used.
        y : ignored

        Returns
        -------
        self : RandomMaclaurin
        """
        self._fit_atomic(self._build, X)
        return self

    def transform(self, X):
        """Random Maclaurin features of ``X``.

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
        W, seg, wts = st["vectors_"], st["segments_"], st["weights_"]
        D, d, dt = int(st["n_components"]), X.shape[1], X.dtype
        if not (isinstance(seg, np.ndarray) and seg.shape == (D + 1,)
                and isinstance(W, np.ndarray) and W.ndim == 2 and W.shape[1] == d
                and isinstance(wts, np.ndarray) and wts.shape == (D,)):
            raise ValueError("RandomMaclaurin.transform: the fitted vectors_, segments_ and "
                             "weights_ do not match n_components and n_features_in_. Call fit "
                             "again")
        W = np.ascontiguousarray(W, dtype=dt)
        wts = np.ascontiguousarray(wts, dtype=dt)
        seg = np.ascontiguousarray(seg, dtype=np.int64)
        nt = self._n_threads()
        n, M = X.shape[0], W.shape[0]
        if sp.issparse(X):
            X = _as_csr(X)
        out = np.empty((n, D), dtype=dt)
        rows = max(1, _PROJECTION_BLOCK_VALUES // max(1, M))
        for s in range(0, n, rows):
            e = min(n, s + rows)
            P = X[s:e] @ W.T
            P = np.ascontiguousarray(P, dtype=dt)
            _sketch.segment_products(P, seg, wts, out[s:e], nt)
        if not np.isfinite(out).all():
            raise ValueError(
                "RandomMaclaurin.transform: some features overflowed to a non-finite value "
                f"({dt} products of up to {int(np.diff(seg).max(initial=0))} projections); "
                "rescale X (smaller norms), use float64 input or a degree law with lighter "
                "tails")
        return out
