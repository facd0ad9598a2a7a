r"""Feature maps of the chi-squared family of histogram kernels.

* :class:`AdditiveChi2Sampler` -- the deterministic map of Vedaldi & Zisserman (2012) for the
  additive chi2 kernel :math:`\sum_k 2x_k y_k/(x_k + y_k)`: the kernel's spectrum sampled at
  regular intervals (scikit-learn's estimator of the same name, on a compiled kernel).
* :class:`SkewedChi2Sampler` -- random Fourier features of the skewed chi2 kernel
  :math:`\prod_k 2\sqrt{(x_k + c)(y_k + c)}/(x_k + y_k + 2c)` (Li, Ionescu & Sminchisescu
  2010), scikit-learn's estimator of the same name.

Both laws are derived in ``docs/theory/chi2-maps.md``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from randfeat._base import RandomFeaturesBase
from randfeat._lib import _fourier, _sketch
from randfeat._validation import N_THREADS_CONSTRAINT, RANDOM_STATE_CONSTRAINT, check_n_threads
from randfeat.sketch import _ReadOnlyFit

__all__ = ["AdditiveChi2Sampler", "SkewedChi2Sampler"]

#: Vedaldi & Zisserman's sampling intervals for 1, 2 and 3 steps (their Figure 2 c), which
#: scikit-learn uses when ``sample_interval`` is None
DEFAULT_INTERVALS = {1: 0.8, 2: 0.5, 3: 0.4}


class AdditiveChi2Sampler(TransformerMixin, BaseEstimator):
    r"""Deterministic features of the additive chi2 kernel (Vedaldi & Zisserman 2012).

    The additive chi2 kernel :math:`k(x, y) = \sum_k \kappa(x_k, y_k)`,
    :math:`\kappa(a, b) = 2ab/(a + b)` on non-negative data, is a sum of 1-D kernels, and
    :math:`\kappa(a, b) = \sqrt{ab}\,\operatorname{sech}(\lambda/2)`, :math:`\lambda =
    \log(b/a)`, with :math:`\operatorname{sech}(\lambda/2) = \int
    \operatorname{sech}(\pi\omega)\,e^{i\omega\lambda}\,d\omega`.  Sampling this spectrum at
    :math:`\omega = jL` (:math:`L` = ``sample_interval``, :math:`j = 0..n-1`, :math:`n` =
    ``sample_steps``) gives, per input coordinate :math:`a > 0`, the :math:`2n - 1` features

    .. math::

        \sqrt{aL},\quad \sqrt{\tfrac{2aL}{\cosh(\pi jL)}}\cos(jL\log a),\quad
        \sqrt{\tfrac{2aL}{\cosh(\pi jL)}}\sin(jL\log a)\quad (j = 1..n-1),

    (all 0 for :math:`a = 0`), and

    .. math::

        \hat\kappa(a, b) = \sqrt{ab}\,L\Big[1 + 2\sum_{j=1}^{n-1}
            \operatorname{sech}(\pi jL)\cos(jL\lambda)\Big].

    **Exact error** (deterministic): by Poisson's summation formula,

    .. math::

        \hat\kappa(a, b) - \kappa(a, b) = \sqrt{ab}\Big[\sum_{m\ne0}
            \operatorname{sech}\big(\tfrac{\lambda}2 + \tfrac{\pi m}{L}\big)
            - 2L\sum_{j\ge n}\operatorname{sech}(\pi jL)\cos(jL\lambda)\Big]:

    aliasing of the periodised kernel plus truncation of the spectrum; both decay
    exponentially (in :math:`1/L` and in :math:`nL`).  ``docs/theory/chi2-maps.md`` derives it.

    The output equals scikit-learn's ``AdditiveChi2Sampler`` to round-off (same layout: the
    square-root block, then the cosine and sine blocks of each step, each of ``n_features``
    columns; same default intervals), computed in one compiled pass over the entries.

    Parameters
    ----------
    sample_steps : int, default=2
        :math:`n`; the output has ``n_features * (2 n - 1)`` columns.
    sample_interval : float or None, default=None
        :math:`L > 0`.  None: 0.8, 0.5, 0.4 for 1, 2, 3 steps (Vedaldi & Zisserman, Fig. 2 c);
        required for other step counts.
    n_threads : int or None, default=None
        Threads over rows (None: all CPUs; negative: count back).  The output does not depend
        on it.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    The map is stateless: ``transform`` works without ``fit`` (as in scikit-learn), and
    validates the parameters itself.  Sparse input (CSR/CSC) gives sparse CSR output with the
    same pattern in every block (the map of 0 is 0).  Entries must be >= 0.

    References
    ----------
    A. Vedaldi and A. Zisserman, "Efficient additive kernels via explicit feature maps",
    IEEE TPAMI 34(3), 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import AdditiveChi2Sampler
    >>> X = np.random.default_rng(0).random((4, 3))
    >>> Z = AdditiveChi2Sampler(sample_steps=3).fit_transform(X)
    >>> Z.shape
    (4, 15)
    >>> K = (2 * X[:, None] * X[None] / (X[:, None] + X[None])).sum(-1)
    >>> bool(np.abs(Z @ Z.T / K - 1).max() < 0.06)   # the quadrature error, a few per cent
    True
    """

    _parameter_constraints: dict = {
        "sample_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "sample_interval": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_threads": N_THREADS_CONSTRAINT,
    }

    def __init__(self, *, sample_steps=2, sample_interval=None, n_threads=None):
        self.sample_steps = sample_steps
        self.sample_interval = sample_interval
        self.n_threads = n_threads

    def _interval(self):
        if self.sample_interval is not None:
            return float(self.sample_interval)
        if self.sample_steps not in DEFAULT_INTERVALS:
            raise ValueError(
                "If sample_steps is not in [1, 2, 3], you need to provide sample_interval "
                f"(AdditiveChi2Sampler got sample_steps={self.sample_steps!r} and "
                "sample_interval=None; Vedaldi & Zisserman tabulate the interval for 1-3 steps "
                "only)")
        return DEFAULT_INTERVALS[self.sample_steps]

    def _check_X(self, X, reset):
        with np.errstate(over="ignore", invalid="ignore"):
            return validate_data(self, X, reset=reset, accept_sparse=("csr", "csc"),
                                 dtype=[np.float64, np.float32], order="C",
                                 ensure_non_negative=True, ensure_min_samples=1)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the parameters and record the number of features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features), entries >= 0
        y : ignored

        Returns
        -------
        self : AdditiveChi2Sampler
        """
        self._interval()
        self._check_X(X, reset=True)
        return self

    def transform(self, X):
        """The sampled-spectrum features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features), entries >= 0
            float32 stays float32; other real input is computed in float64.

        Returns
        -------
        Z : ndarray or sparse CSR of shape (n_samples, n_features * (2 sample_steps - 1))
            Sparse (CSR matrix or array, like the input) exactly when ``X`` is sparse.
        """
        self._validate_params()
        L = self._interval()
        X = self._check_X(X, reset=False)
        steps = int(self.sample_steps)
        nt = check_n_threads(self.n_threads)
        cosh_j = np.cosh(np.pi * np.arange(steps) * L)
        n, d = X.shape
        if not sp.issparse(X):
            out = np.empty((n, d * (2 * steps - 1)), dtype=X.dtype)
            _sketch.additive_chi2_dense(X, steps, L, cosh_j, out, nt)
            return out
        array_api = isinstance(X, sp.sparray)
        X = X.tocsr()
        vals = np.empty((2 * steps - 1, X.nnz), dtype=X.dtype)
        _sketch.additive_chi2_values(np.ascontiguousarray(X.data), steps, L, cosh_j, vals, nt)
        cls = sp.csr_array if array_api else sp.csr_matrix
        blocks = [cls((vals[b], X.indices, X.indptr), shape=X.shape) for b in range(len(vals))]
        out = sp.hstack(blocks, format="csr")
        return cls(out) if not isinstance(out, cls) else out

    def get_feature_names_out(self, input_features=None):
        """Output feature names: ``additivechi2sampler_{name}_sqrt``, then ``..._cos{j}`` and
        ``..._sin{j}`` for each step j (scikit-learn's names).

        Parameters
        ----------
        input_features : array-like of str or None
            Only used to validate the names seen in :meth:`fit`.

        Returns
        -------
        ndarray of str objects
        """
        check_is_fitted(self, attributes="n_features_in_")
        names = _check_feature_names_in(self, input_features, generate_names=True)
        prefix = type(self).__name__.lower()
        out = [f"{prefix}_{name}_sqrt" for name in names]
        for j in range(1, self.sample_steps):
            out += [f"{prefix}_{name}_cos{j}" for name in names]
            out += [f"{prefix}_{name}_sin{j}" for name in names]
        return np.asarray(out, dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class SkewedChi2Sampler(_ReadOnlyFit, RandomFeaturesBase):
    r"""Random Fourier features of the skewed chi2 kernel (Li, Ionescu & Sminchisescu 2010).

    The skewed chi2 kernel with skewedness :math:`c`,

    .. math::

        k(x, y) = \prod_{k=1}^d \frac{2\sqrt{(x_k + c)(y_k + c)}}{x_k + y_k + 2c}
                = \prod_k \operatorname{sech}\Big(\frac{u_k - v_k}{2}\Big),
        \qquad u = \log(x + c),\ v = \log(y + c),

    is shift-invariant in the log coordinates, and
    :math:`\operatorname{sech}(\Delta/2) = \mathbb E[\cos(w\Delta)]` for :math:`w` with density
    :math:`\operatorname{sech}(\pi w)` (the hyperbolic secant law, drawn as
    :math:`w = \frac1\pi\log\tan(\frac\pi2 U)`, :math:`U` uniform on (0, 1]).  With
    :math:`D` = ``n_components`` frequency vectors :math:`w_j` (iid coordinates) and phases
    :math:`b_j \sim U[0, 2\pi)`,

    .. math:: z(x) = \sqrt{2/D}\,\big[\cos(w_j^\top \log(x + c) + b_j)\big]_{j=1}^D.

    **Exact law** (the phase-shift random Fourier map, Sutherland & Schneider 2015):
    :math:`\mathbb E[z(x)^\top z(y)] = k(x, y)` and

    .. math::

        \operatorname{Var}[z(x)^\top z(y)] = \frac{1 + k_2/2 - k^2}{D},\qquad
        k_2 = \prod_k \operatorname{sech}(u_k - v_k)

    (the kernel at twice the log-difference).  This is scikit-learn's ``SkewedChi2Sampler``
    (same parameters, same law); the cosines run in randfeat's compiled kernel.

    Parameters
    ----------
    n_components : int, default=100
        :math:`D`.
    skewedness : float, default=1.0
        :math:`c`; every entry of X must be greater than :math:`-c`.
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the frequencies (drawn first) and phases.
    n_threads : int or None, default=None
        Threads of the cosine pass (the projection is a BLAS product with the BLAS's own
        threads).  The output is bit-identical for every value.

    Attributes
    ----------
    frequencies_ : ndarray of shape (n_components, n_features_in_)
        :math:`w_j` as rows (read-only, dtype of the fitted data).  ``random_weights_`` is its
        transpose, scikit-learn's layout (n_features_in_, n_components).
    offsets_ : ndarray of shape (n_components,)
        :math:`b_j`; ``random_offset_`` is the same array.

    Notes
    -----
    Sparse input (CSR/CSC, with :math:`c > 0`) is projected without densifying X:
    :math:`\log(x + c) = \log c + \log(1 + x/c)` and the second term keeps the sparsity
    pattern; the features equal the dense input's up to round-off.

    References
    ----------
    F. Li, C. Ionescu and C. Sminchisescu, "Random Fourier approximations for skewed
    multiplicative histogram kernels", DAGM 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import SkewedChi2Sampler
    >>> X = np.random.default_rng(0).random((4, 3))
    >>> sk = SkewedChi2Sampler(20_000, skewedness=0.5, random_state=0)
    >>> Z = sk.fit_transform(X)
    >>> U = np.log(X + 0.5)
    >>> K = np.prod(1 / np.cosh((U[:, None] - U[None]) / 2), axis=-1)
    >>> bool(np.abs(Z @ Z.T - K).max() < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "skewedness": [Interval(numbers.Real, None, None, closed="neither")],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, skewedness=1.0, random_state=None, n_threads=None):
        self.n_components = n_components
        self.skewedness = skewedness
        self.random_state = random_state
        self.n_threads = n_threads

    def _build(self, X):
        rng = self._rng()
        D, d = int(self.n_components), X.shape[1]
        u = 1.0 - rng.random((D, d))                     # (0, 1]: log tan stays finite
        W = np.log(np.tan(0.5 * np.pi * u)) / np.pi       # hyperbolic secant law
        b = rng.uniform(0.0, 2.0 * np.pi, size=D)
        W = np.ascontiguousarray(W, dtype=X.dtype)
        b = b.astype(X.dtype)
        W.flags.writeable = False
        b.flags.writeable = False
        return {"frequencies_": W, "offsets_": b, "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the frequencies and phases for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Only its number of features and dtype are used.
        y : ignored

        Returns
        -------
        self : SkewedChi2Sampler
        """
        self._fit_atomic(self._build, X)
        return self

    @property
    def random_weights_(self):
        """``frequencies_.T``: scikit-learn's layout (n_features_in_, n_components)."""
        return self.frequencies_.T

    @property
    def random_offset_(self):
        """``offsets_`` under scikit-learn's name."""
        return self.offsets_

    def transform(self, X):
        """Skewed chi2 features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Entries greater than ``-skewedness``.  float32 stays float32.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        st = self._fitted_state()
        W, b, D = st["frequencies_"], st["offsets_"], int(st["n_components"])
        dt, d = X.dtype, X.shape[1]
        if not (isinstance(W, np.ndarray) and W.shape == (D, d) and isinstance(b, np.ndarray)
                and b.shape == (D,)):
            raise ValueError(f"SkewedChi2Sampler.transform: the fitted frequencies_ must have "
                             f"shape ({D}, {d}) and offsets_ ({D},). Call fit again")
        W = np.ascontiguousarray(W, dtype=dt)
        b = np.ascontiguousarray(b, dtype=dt)
        c = float(st["skewedness"])
        if sp.issparse(X):
            X = X.tocsr()
            low = X.data.min(initial=np.inf)
            if c <= 0 or low <= -c:
                raise ValueError(
                    "X may not contain entries smaller than -skewedness "
                    f"(SkewedChi2Sampler: skewedness={c!r}, "
                    + (f"smallest stored entry {low!r}" if low <= -c
                       else "and the implicit zeros of sparse X are not > -skewedness")
                    + "); shift X or pass a larger skewedness")
            Ls = sp.csr_matrix((np.log1p(X.data / dt.type(c)).astype(dt), X.indices, X.indptr),
                               shape=X.shape)
            P = np.asarray(Ls @ W.T, dtype=dt)
            P += dt.type(math.log(c)) * W.sum(axis=1, dtype=dt)
        else:
            if (X <= -c).any():
                raise ValueError(
                    "X may not contain entries smaller than -skewedness "
                    f"(SkewedChi2Sampler: skewedness={c!r}, smallest entry {X.min()!r}); "
                    "shift X or pass a larger skewedness")
            P = np.log(X + dt.type(c)) @ W.T
        P = np.ascontiguousarray(P, dtype=dt)
        n_bad = _fourier.phase_inplace(P, b, math.sqrt(2.0 / D), self._n_threads())
        self._check_projections(n_bad, X)
        return P
