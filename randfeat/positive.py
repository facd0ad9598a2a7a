r"""Positive random features for the softmax and Gaussian kernels (Choromanski et al., ICLR 2021)
as a scikit-learn transformer, with the trigonometric estimator they are compared with."""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from randfeat._base import RandomFeaturesBase, data_sigma
from randfeat._lib import _pointwise
from randfeat._sampling import sample_frequencies
from randfeat._validation import N_THREADS_CONSTRAINT, RANDOM_STATE_CONSTRAINT, SIGMA_CONSTRAINT
from randfeat.arccos import chunked, project
from randfeat.kernels import GaussianKernel

__all__ = ["PositiveRandomFeatures"]

def _row_sq_norms(X, n_threads):
    """Squared row norms of X in float64 (accumulated in float64 for float32 input)."""
    n = X.shape[0]
    if sp.issparse(X):
        Xc = X.tocsr()
        rows = np.repeat(np.arange(n), np.diff(Xc.indptr))
        v = Xc.data.astype(np.float64)
        return np.bincount(rows, weights=v * v, minlength=n)
    out = np.empty(n, dtype=np.float64)
    _pointwise.sq_norms(X, out, n_threads)
    return out


class PositiveRandomFeatures(RandomFeaturesBase):
    r"""Positive random features for the softmax and Gaussian kernels (FAVOR+, Choromanski et
    al., ICLR 2021), and the trigonometric estimator they improve on.

    With :math:`u = x/\sigma`, the **softmax kernel** and the **Gaussian kernel**

    .. math::

        \mathrm{SM}(x, y) = \exp(u^\top v) = \exp(x^\top y/\sigma^2), \qquad
        k(x, y) = \exp(-\|u - v\|^2/2) = e^{-\|u\|^2/2}\,\mathrm{SM}(x, y)\,e^{-\|v\|^2/2}

    are estimated from :math:`m` frequencies :math:`w_j \sim N(0, I_d)` (Lemma 1 of the
    paper: :math:`\mathrm{SM}(x, y) = \mathbb E_w[e^{w^\top u - \|u\|^2/2}
    e^{w^\top v - \|v\|^2/2}]`).  ``estimator`` chooses the features (:math:`D` =
    ``n_components``, :math:`c = 1/2` for ``kernel="softmax"``, :math:`c = 1` for
    ``"gaussian"``):

    ``"positive"`` (:math:`\widehat{\mathrm{SM}}^+`, :math:`m = D`):
    :math:`\varphi(x) = D^{-1/2}\,[\exp(w_j^\top u - c\|u\|^2)]_{j=1}^{D}`, every feature
    positive.

    ``"hyperbolic"`` (:math:`\widehat{\mathrm{SM}}^{\mathrm{hyp}+}`, :math:`m = D/2`):
    :math:`\varphi(x) = D^{-1/2}\,[\exp(w_j^\top u - c\|u\|^2) \mid
    \exp(-w_j^\top u - c\|u\|^2)]`, i.e. :math:`\cosh(w_j^\top(u + v))` per frequency.

    ``"trigonometric"`` (:math:`\widehat{\mathrm{SM}}^{\mathrm{trig}}`, :math:`m = D/2`):
    :math:`\varphi(x) = m^{-1/2} e^{c'\|u\|^2}\,[\cos(w_j^\top u) \mid \sin(w_j^\top u)]`,
    :math:`c' = 1/2` (softmax) or 0 (Gaussian: these are exactly the paired random Fourier
    features).

    Each is unbiased, :math:`\mathbb E\,\varphi(x)^\top\varphi(y) = \mathrm{SM}(x, y)` or
    :math:`k(x, y)`.  **Exact variances** (iid frequencies, softmax kernel; Lemma 2 of the
    paper, re-derived and checked in ``docs/theory/positive.md``), with
    :math:`s = \|u + v\|^2`, :math:`t = \|u - v\|^2`:

    .. math::

        \operatorname{Var}^+ = \frac{\mathrm{SM}^2 (e^{s} - 1)}{D}, \quad
        \operatorname{Var}^{\mathrm{hyp}+} = \frac{\mathrm{SM}^2 (e^{s} - 1)(1 - e^{-s})}{D},
        \quad
        \operatorname{Var}^{\mathrm{trig}} = \frac{e^{\|u\|^2 + \|v\|^2}(1 - e^{-t})^2}{D}.

    For the Gaussian kernel multiply each by :math:`e^{-\|u\|^2 - \|v\|^2}`.  So the relative
    error of the positive estimators vanishes where :math:`\mathrm{SM} \to 0`
    (:math:`u \approx -v`) while the trigonometric one's explodes; and the positive variance
    grows like :math:`e^{\|u + v\|^2}` for large inputs (at :math:`x = y`, relative variance
    :math:`(e^{4\|u\|^2} - 1)/D`): centre and scale the data (``sigma``).

    ``sampling="orthogonal"``: blocks of :math:`d` exactly orthogonal frequencies with
    :math:`\chi_d` radii (ORF, Yu et al. 2016), still marginally :math:`N(0, I)`, so still
    unbiased.  Two rows of one block have covariance (derived in ``docs/theory/positive.md``)
    :math:`C = \Lambda^2[{}_1F_1(d; \tfrac d2; \tfrac s2) - e^{s}] \le 0`,
    :math:`\Lambda = e^{-(\|u\|^2 + \|v\|^2)/2}`, for the positive and hyperbolic estimators
    and :math:`C = e^{\|u\|^2 + \|v\|^2}[{}_1F_1(d; \tfrac d2; -\tfrac t2) - e^{-t}]` for the
    trigonometric one, so with blocks of sizes :math:`b_k` (:math:`\sum b_k = m`)
    :math:`\operatorname{Var}^{\mathrm{ort}} = \operatorname{Var}^{\mathrm{iid}}
    + \frac{\sum_k b_k(b_k - 1)}{m^2} C`; Theorem 2 of the paper bounds the positive case,
    :math:`C \le -\frac{2}{d + 2}(\mathrm{SM} - \Lambda)^2`.

    Parameters
    ----------
    n_components : int, default 100
        Output width :math:`D` (any :math:`D \ge 1`).  The hyperbolic and trigonometric
        estimators use two columns per frequency; for odd :math:`D` their last column is one
        unpaired feature of one more frequency (Notes), which keeps them unbiased.
    kernel : {"softmax", "gaussian"}, default "softmax"
    sigma : float, "scale", "median" or None, default None
        Input scale :math:`\sigma > 0` (None: 1.0): the kernels are evaluated at
        :math:`u = x/\sigma`, i.e. :math:`\exp(x^\top y/\sigma^2)` and
        :math:`\exp(-\|x - y\|^2/(2\sigma^2))` (randfeat's length scale; scikit-learn's
        ``gamma`` is :math:`1/(2\sigma^2)`).  A transformer's attention logits
        :math:`q^\top k/\sqrt{d}` are ``sigma = d ** 0.25``.  ``"scale"`` / ``"median"``: the
        data-driven length scales of :class:`randfeat.RandomFourierFeatures`.
    estimator : {"positive", "hyperbolic", "trigonometric"}, default "positive"
        The features above.
    sampling : {"iid", "orthogonal"}, default "iid"
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the frequencies (drawn in float64 and cast: float32 and float64 fits share
        them).
    n_threads : int or None, default None
        Threads of the pointwise pass (None: all available CPUs, -1 likewise, -2 all but
        one).  The projection is one BLAS call with the BLAS's own threads (never changed by
        randfeat).  The output is bit-identical for any ``n_threads``.

    Attributes
    ----------
    sigma_ : float
        The input scale used.
    frequencies_ : ndarray of shape (n_frequencies, n_features_in_)
        The :math:`w_j/\sigma` as rows, in the dtype of the fitted data, read-only (the
        projections are ``X @ frequencies_.T``); ``n_frequencies`` is ``n_components`` for
        ``"positive"``, ``ceil(n_components / 2)`` otherwise.
    offsets_ : ndarray of shape (1,) or None
        The phase :math:`b_0 \sim U[0, 2\pi)` of the unpaired column of an odd-width
        trigonometric map; None otherwise.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Input feature names, when ``X`` had string column names.

    See Also
    --------
    randfeat.RandomFourierFeatures : trigonometric features of many shift-invariant kernels.

    Notes
    -----
    **Numerics.**  The exponent :math:`w^\top u - c\|u\|^2 - \tfrac12\log D` of a positive
    feature is formed in float64 (also for float32 input: the squared norms are accumulated
    in float64, the float32 projection is widened) and exponentiated once (NumPy's SIMD
    ``exp``, on row chunks fixed by the shape), so nothing overflows before the feature
    itself does.  No per-row maximum is subtracted: the stabiliser of the Performer's code
    multiplies the features of row :math:`x` by :math:`e^{-\max_j t_j(x)}`, which scales the
    estimate :math:`\varphi(x)^\top\varphi(y)` by :math:`e^{-M(x) - M(y)}` -- harmless
    inside attention, whose row normalisation cancels the query's constant, but a biased
    estimate of the kernel.  A feature beyond the dtype's range raises ValueError (naming the
    largest exponent); rows whose features all underflow to zero (so their estimates are 0)
    give a RuntimeWarning.  Both happen only for inputs where the estimator is useless anyway
    (:math:`\|u\|^2` in the hundreds, where its variance is :math:`e^{\|u + v\|^2}` times the
    kernel squared).  The trigonometric factor :math:`e^{\|u\|^2/2}` likewise raises when it
    leaves the dtype's range.

    **Odd widths.**  With :math:`D = 2h + 1` the hyperbolic map has :math:`h + 1` frequencies,
    the first :math:`h` mirrored, :math:`\varphi(x) = D^{-1/2}[e^{w_j^\top u - c\|u\|^2}
    (j \le h + 1) \mid e^{-w_j^\top u - c\|u\|^2} (j \le h)]`, and the trigonometric map
    has columns :math:`\sqrt{2/D}\,e^{c'\|u\|^2}[\cos(w_j^\top u) \mid \sin(w_j^\top u)
    (j \le h) \mid \cos(w_0^\top u + b_0)]` (the phase-shifted column of
    :class:`randfeat.RandomFourierFeatures`); both are unbiased, with variances
    :math:`[4h V_{\mathrm{pair}} + V_{\mathrm{single}}]/D^2` (``docs/theory/positive.md``).

    Sparse input (CSR/CSC) is projected by scipy over its non-zeros and gives the dense
    input's features up to the summation order.

    References
    ----------
    K. Choromanski, V. Likhosherstov, D. Dohan, X. Song, A. Gane, T. Sarlos, P. Hawkins,
    J. Davis, A. Mohiuddin, L. Kaiser, D. Belanger, L. Colwell and A. Weller, "Rethinking
    Attention with Performers", ICLR 2021: Lemma 1 (the positive and hyperbolic features),
    Lemma 2 (their mean squared errors and the trigonometric one's), Theorem 2 (orthogonal
    frequencies).  F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice and S. Kumar,
    "Orthogonal Random Features", NIPS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import PositiveRandomFeatures
    >>> X = 0.3 * np.random.default_rng(0).normal(size=(4, 3))
    >>> prf = PositiveRandomFeatures(n_components=100_000, random_state=0)
    >>> Z = prf.fit_transform(X)
    >>> bool((Z > 0).all()), Z.shape
    (True, (4, 100000))
    >>> bool(np.abs(Z @ Z.T / np.exp(X @ X.T) - 1).max() < 0.02)   # softmax kernel
    True
    >>> g = PositiveRandomFeatures(50_000, kernel="gaussian", sigma=0.5, random_state=0)
    >>> Zg = g.fit_transform(X)
    >>> D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    >>> bool(np.abs(Zg @ Zg.T - np.exp(-D2 / (2 * 0.5**2))).max() < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [StrOptions({"softmax", "gaussian"})],
        "sigma": SIGMA_CONSTRAINT,
        "estimator": [StrOptions({"positive", "hyperbolic", "trigonometric"})],
        "sampling": [StrOptions({"iid", "orthogonal"})],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, kernel="softmax", sigma=None, estimator="positive",
                 sampling="iid", random_state=None, n_threads=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.estimator = estimator
        self.sampling = sampling
        self.random_state = random_state
        self.n_threads = n_threads

    @staticmethod
    def _n_frequencies(estimator, D):
        """Frequencies of a map of width D: D for "positive", ceil(D / 2) otherwise."""
        return D if estimator == "positive" else (D + 1) // 2

    def _build(self, X):
        d, D = X.shape[1], int(self.n_components)
        m = self._n_frequencies(self.estimator, D)
        sigma = self.sigma
        if sigma is None:
            sigma = 1.0
        elif isinstance(sigma, str):
            sigma = data_sigma(sigma, X)
        sigma = float(sigma)
        rng = self._rng()
        W = sample_frequencies(GaussianKernel(sigma), m, d, rng, self.sampling,
                               self._n_threads())
        W = np.ascontiguousarray(W, dtype=X.dtype)
        W.flags.writeable = False
        b = None
        if self.estimator == "trigonometric" and D % 2:   # drawn after the frequencies
            b = rng.uniform(0.0, 2.0 * np.pi, size=1).astype(X.dtype)
            b.flags.writeable = False
        return {"sigma_": sigma, "frequencies_": W, "offsets_": b, "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random frequencies for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Only its number of features and dtype are used (and its values for
            ``sigma="scale"`` or ``"median"``).
        y : ignored

        Returns
        -------
        self : PositiveRandomFeatures
        """
        self._fit_atomic(self._build, X)
        return self

    def transform(self, X):
        """Features of ``X`` (see the class docstring).

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
        W, D, sigma = st["frequencies_"], st["_n_features_out"], st["sigma_"]
        est = st["estimator"]
        m = self._n_frequencies(est, D)
        if not (isinstance(W, np.ndarray) and W.shape == (m, X.shape[1])
                and W.dtype.kind == "f"):
            raise ValueError(
                f"PositiveRandomFeatures.transform: the fitted frequencies_ must be a float "
                f"array of shape ({m}, {X.shape[1]}) for n_components={D}, estimator={est!r}; "
                f"got {getattr(W, 'shape', type(W).__name__)}. Call fit again")
        if W.dtype != X.dtype or not W.flags.c_contiguous:
            W = np.ascontiguousarray(W, dtype=X.dtype)
        nt = self._n_threads()
        _pointwise.check_thread_request(nt)
        q = _row_sq_norms(X, nt) / (sigma * sigma)            # ||u||^2, float64
        n = X.shape[0]
        softmax = st["kernel"] == "softmax"
        if est == "trigonometric":
            return self._trig(X, W, st["offsets_"], q, D, softmax, nt)
        shift = (0.5 if softmax else 1.0) * q + 0.5 * math.log(D)
        P = project(X, W)
        out = P if est == "positive" else np.empty((n, D), dtype=X.dtype)
        top = self._exp_pass(P, out, shift, D - m if est == "hyperbolic" else 0, nt)
        with np.errstate(over="ignore"):
            largest = np.exp(top).astype(X.dtype)  # each row's largest feature
        bad = ~np.isfinite(largest)                # a feature beyond the range, or NaN
        if bad.any():
            worst = top[bad]
            self._raise_overflow(int(bad.sum()), X, q,
                                 float(np.nanmax(worst)) if np.isfinite(worst).any()
                                 else float("inf"), "exp")
        zero = largest == 0
        if zero.any():
            i = int(np.argmax(q * zero))
            warnings.warn(
                f"PositiveRandomFeatures.transform: every feature of {int(zero.sum())} rows of "
                f"X underflowed to 0 (largest exponent w'u - {0.5 if softmax else 1.0:g}"
                f"||u||^2 - log(D)/2 = {float(top[zero].max()):.4g}, at ||x||/sigma up to "
                f"{math.sqrt(float(q[i])):.3g}), so their kernel estimates are 0; the "
                "estimator's variance grows like exp(||u + v||^2), so such inputs are far "
                "outside its useful range: centre and scale X (a larger sigma)",
                RuntimeWarning, stacklevel=2)
        return out

    def _trig(self, X, W, b, q, D, softmax, nt):
        """Trigonometric features: sqrt(2/D) e^{c'||u||^2} [cos | sin] of the h = D // 2 paired
        frequencies, then the phase-shifted cos of the last one when D is odd."""
        n, h = X.shape[0], D // 2
        P = project(X, W)
        logscale = (0.5 * q if softmax else np.zeros(n)) + 0.5 * math.log(2.0 / D)
        out = np.empty((n, D), dtype=X.dtype)
        buf = out if D % 2 == 0 else np.empty((n, 2 * h), dtype=X.dtype)  # C-contiguous
        buf[:, :h] = P[:, :h]
        n_bad = _pointwise.trig_features(buf, h, logscale, nt) if h else 0
        if D % 2:
            out[:, :2 * h] = buf
            if not (isinstance(b, np.ndarray) and b.shape == (1,)):
                raise ValueError(
                    "PositiveRandomFeatures.transform: the fitted offsets_ must be an array of "
                    f"shape (1,) for an odd trigonometric width; got {b!r}. Call fit again")
            with np.errstate(over="ignore", invalid="ignore"):
                last = np.exp(logscale) * np.cos(P[:, h].astype(np.float64) + float(b[0]))
                out[:, 2 * h] = last
            n_bad = max(n_bad, int((~np.isfinite(out[:, 2 * h])).sum()))
        if n_bad:
            self._raise_overflow(n_bad, X, q, float(np.max(logscale)), "trig")
        return out

    @staticmethod
    def _exp_pass(P, out, shift, h, nt):
        """``out[:, :m] = exp(P - shift)`` and, for the ``h`` mirrored frequencies,
        ``out[:, m:m + h] = exp(-P[:, :h] - shift)``; exponents in float64, on row chunks
        fixed by the shape.  Returns each row's largest exponent (float64)."""
        n, m = P.shape
        top = np.empty(n, dtype=np.float64)
        mirrored = h > 0
        in_place = out is P and P.dtype == np.float64

        def chunk(a, b):
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                s = shift[a:b, None]
                if in_place:
                    T = P[a:b]
                    T -= s
                else:                              # float64 work buffer (float32 input)
                    T = P[a:b].astype(np.float64)
                    if mirrored:
                        U = np.negative(T[:, :h])
                        U -= s
                    T -= s
                hi = T.max(axis=1)
                if mirrored:
                    hi = np.maximum(hi, U.max(axis=1))
                    np.exp(U, out=U)
                    out[a:b, m:] = U
                np.exp(T, out=T)
                if not in_place:
                    out[a:b, :m] = T
                top[a:b] = hi

        chunked(n, m + h, nt, chunk)
        return top

    def _raise_overflow(self, n_bad, X, q, worst, kind):
        dt = X.dtype
        lim = math.log(float(np.finfo(dt).max))
        norm = math.sqrt(float(q.max())) if q.size else 0.0
        what = ("the positive features exp(w'u - c||u||^2) / sqrt(D)" if kind == "exp" else
                "the trigonometric factor exp(||u||^2 / 2) / sqrt(m)")
        raise ValueError(
            f"PositiveRandomFeatures.transform: {what} of {n_bad} rows of X exceed the range of "
            f"{dt} (largest exponent {worst:.4g} > log(max) = {lim:.4g}; ||x||/sigma up to "
            f"{norm:.3g}), so they would be inf.  Scale X down (a larger sigma), centre it"
            + (", or pass float64 input" if dt == np.float32 else ""))
