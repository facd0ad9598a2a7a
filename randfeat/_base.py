"""Shared scikit-learn plumbing of the randfeat estimators: the one rule for a kernel and its
length scale, atomic fits, and the one hook that hands dask arrays to :mod:`randfeat.dask`."""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat._validation import check_n_threads, check_random_state
from randfeat.kernels import ShiftInvariantKernel, get_kernel
from randfeat.kernels._registry import median_metric

__all__ = ["DaskRouted", "RandomFeaturesBase", "ard_blocks", "ard_parts", "data_sigma",
           "is_dask_array", "resolve_kernel"]

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: rows of the seeded subsample of the median heuristic (at most n(n-1)/2 = 499,500 distances)
MEDIAN_SUBSAMPLE = 1000
#: seed of that subsample: fixed, so sigma_ depends on X only (not on random_state, whose stream
#: then draws the same random parameters as with a numeric sigma)
MEDIAN_SEED = 20071203

# parameters that transform may read without refitting (they never change the map)
_TRANSFORM_FREE_PARAMS = frozenset({"n_threads"})


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence,
                      np.random.RandomState)):
        return False  # compared by identity: a different generator object is a different seed
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):  # e.g. ARD length scales
        return (type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b)))
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # noqa: BLE001 - incomparable values count as changed
        return False


def data_sigma(rule, X, metric="euclidean") -> float:
    r"""Length scale chosen from the data by ``rule`` (``sigma="scale"`` or ``"median"``).

    ``"scale"``: the :math:`\sigma` that scikit-learn's ``gamma="scale"`` implies,
    :math:`\gamma = 1/(d\,\operatorname{Var}(X))` (variance of all entries of X, as in
    :class:`sklearn.svm.SVC`; :math:`\gamma = 1` when the variance is 0) and
    :math:`\sigma = 1/\sqrt{2\gamma} = \sqrt{d\,\operatorname{Var}(X)/2}`, the same number
    for every kernel.

    ``"median"``: the median heuristic, the median distance between distinct rows of a
    subsample of at most ``MEDIAN_SUBSAMPLE`` = 1000 rows drawn without replacement with a fixed
    seed (so it depends on X only); zero distances (duplicate rows) are left out, and 1.0 is used
    when every distance is zero.  The distance is ``metric``: the estimators pass the kernel's
    own (:func:`randfeat.kernels._registry.median_metric`), Euclidean for the Gaussian, Cauchy,
    Matérn and ball-sum kernels, L1 (``"cityblock"``) for the separable kernels of random
    binning -- the Laplacian :math:`\exp(-\|\Delta\|_1/\sigma)` (in every map), inverse power,
    stretched exponential and custom pitch laws -- so that the median pair has
    :math:`k = e^{-1}` under the Laplacian in any dimension.

    Both work on data of any magnitude: when the variance (or a squared distance) would
    overflow or underflow float64 (entries beyond ~1e154 or below ~1e-154), it is computed on
    X / max|x| and scaled back.  A length scale that float64 cannot hold raises ValueError naming
    ``sigma``.

    Parameters
    ----------
    rule : {"scale", "median"}
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
    metric : {"euclidean", "cityblock"}, default "euclidean"
        Distance of ``"median"``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 8))
    >>> round(data_sigma("scale", X), 1), round(data_sigma("median", X), 1)  # ~2, ~sqrt(2*8)
    (2.0, 3.8)
    """
    n, d = X.shape
    if rule == "scale":
        with np.errstate(over="ignore", invalid="ignore"):
            var = _variance(X, 1.0)
        if not (math.isfinite(var) and var >= _TINY):
            # the variance overflowed (|x| beyond ~1e154) or underflowed: computed on X / s,
            # s = max |x|, and scaled back (sigma = s sqrt(d var(X/s) / 2))
            s = float(abs(X).max()) if sp.issparse(X) else float(np.max(np.abs(X)))
            if s > 0 and math.isfinite(s):
                v = _variance(X, s)
                sigma = s * math.sqrt(0.5 * d * v) if v > 0 else math.sqrt(0.5)
                return _finite_sigma(sigma, rule, s)
        gamma = 1.0 / (d * var) if var > 0 else 1.0
        return _finite_sigma(float(np.sqrt(0.5 / gamma)), rule, None)
    if rule == "median":
        from sklearn.metrics.pairwise import euclidean_distances
        if metric not in ("euclidean", "cityblock"):
            raise ValueError(f"data_sigma: metric must be 'euclidean' or 'cityblock', got "
                             f"{metric!r}")
        distances = euclidean_distances if metric == "euclidean" else _manhattan
        rows = np.arange(n)
        if n > MEDIAN_SUBSAMPLE:
            rows = np.sort(np.random.default_rng(MEDIAN_SEED).choice(n, MEDIAN_SUBSAMPLE,
                                                                     replace=False))
        Xs = X[rows]
        Xs = Xs.astype(np.float64) if sp.issparse(Xs) else np.asarray(Xs, dtype=np.float64)
        s = 1.0
        big = float(abs(Xs).max()) if sp.issparse(Xs) else float(np.max(np.abs(Xs)))
        if not big < 1e150 or 0 < big < 1e-150:
            s = big     # squared norms would overflow (or underflow): distances of X / s
            Xs = Xs / s
        D = distances(Xs)[np.triu_indices(len(rows), 1)]
        D = D[D > 0]
        return _finite_sigma(s * float(np.median(D)) if D.size else 1.0, rule, big)
    raise ValueError(f"unknown sigma rule {rule!r}; use a positive number, 'scale' or 'median'")


def _manhattan(X):
    """L1 distances between the rows of X (at most ``MEDIAN_SUBSAMPLE`` of them): scikit-learn's
    ``manhattan_distances``, with a sparse X given 32-bit indices (its compiled sparse loop takes
    no others; scipy gives 64-bit ones to large or converted matrices)."""
    from sklearn.metrics.pairwise import manhattan_distances
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        if X.nnz >= 2 ** 31 or X.shape[1] >= 2 ** 31:
            raise ValueError(f"sigma='median': the subsample of X has {X.nnz} non-zeros in "
                             f"{X.shape[1]} columns, beyond 32-bit indices; pass a numeric sigma")
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return manhattan_distances(X)


#: below this the variance of "scale" is computed on rescaled data (subnormal or zero)
_TINY = float(np.finfo(np.float64).tiny)


def _variance(X, s):
    """Variance of all entries of X / s (float64)."""
    n, d = X.shape
    if sp.issparse(X):
        Xs = X.astype(np.float64)      # float32 data squared in float64, as np.var does
        if s != 1.0:
            Xs = Xs / s
        mean = float(Xs.sum(dtype=np.float64)) / (n * d)
        return float(Xs.multiply(Xs).sum(dtype=np.float64)) / (n * d) - mean * mean
    return float(np.var(X if s == 1.0 else np.asarray(X, dtype=np.float64) / s,
                        dtype=np.float64))


def _finite_sigma(sigma, rule, magnitude):
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(
            f"sigma={rule!r}: the length scale estimated from X is {sigma!r}, not a positive "
            f"finite number" + ("" if magnitude is None else f" (entries of X up to "
                                f"|x| = {magnitude:.3g})") + "; rescale X (e.g. with "
            "sklearn.preprocessing.StandardScaler) or pass a numeric sigma")
    return sigma


def resolve_kernel(kernel, sigma, X, *, require=None, who=None, **params):
    """The one rule for a kernel and its length scale, used by every randfeat estimator.

    ``kernel`` is a registered name or a kernel instance (or, for random binning, a pitch
    sampler); ``sigma`` is None, a positive number, a 1-D array of them (one per feature: ARD)
    or ``"scale"``/``"median"`` (:func:`data_sigma` on ``X``, with the kernel's
    ``median_metric``).  A name is built with ``sigma`` (1.0 when None) and its extra parameters
    ``params`` (the estimator's ``kernel_params``: ``nu``, ``t``, ``a``, ...); an instance
    carries its own length scale and parameters, so ``sigma`` other than None, or any
    ``params``, raise ValueError (:func:`randfeat.kernels.get_kernel`).  ``require``
    ("fourier", "fastfood" or "binning") refuses kernels the map cannot approximate.  With
    ``X`` given, ARD length scales (of ``sigma`` or of the instance) must number
    ``X.shape[1]`` (ValueError naming ``sigma`` otherwise).
    """
    if isinstance(kernel, ShiftInvariantKernel) and params:
        raise ValueError(f"{who}: kernel_params={params!r} cannot be applied to the kernel "
                         f"instance {kernel!r}; pass them to its constructor, or give the kernel "
                         f"by name ({kernel.name!r})")
    if isinstance(sigma, str) and not isinstance(kernel, ShiftInvariantKernel):
        if X is None:
            raise ValueError(f"{who}: sigma={sigma!r} (a length scale chosen from the data) is "
                             "not available here; pass a number")
        sigma = data_sigma(sigma, X, median_metric(kernel))
    kern = get_kernel(kernel, sigma, require=require, who=who, **params)
    if X is not None and kern.ard and kern.sigma.shape[0] != X.shape[1]:
        where = "" if sigma is not None else f" of the kernel instance {kern!r}"
        raise ValueError(
            f"{who}: sigma{where} has {kern.sigma.shape[0]} length scales (ARD, one per "
            f"feature) but X has {X.shape[1]} features; pass sigma of shape ({X.shape[1]},) or "
            "a number")
    return kern


# ----------------------------------------------------------------------------- dask
#: the methods whose first argument may be a dask array (see DaskRouted)
_DASK_METHODS = ("fit", "fit_transform", "transform", "predict", "decision_function",
                 "partial_fit", "sample_y")


def is_dask_array(X) -> bool:
    """True for a ``dask.array.Array`` (checked by type name: dask is not imported)."""
    t = type(X)
    return t.__name__ == "Array" and t.__module__.startswith("dask.array")


def _routed(name, method):
    @functools.wraps(method)
    def routed(self, X, *args, **kwargs):
        if is_dask_array(X):
            from randfeat import dask as _dask  # the leaf, imported only for a dask array

            return _dask.dispatch(self, name, X, *args, **kwargs)
        return method(self, X, *args, **kwargs)

    routed._dask_routed = True
    return routed


class DaskRouted:
    """The one hook that hands dask arrays to :mod:`randfeat.dask`.

    Every class deriving from it (the feature maps through :class:`RandomFeaturesBase`, the
    learners) has the methods it defines among ``fit``, ``fit_transform``, ``transform``,
    ``predict``, ``decision_function``, ``partial_fit`` and ``sample_y`` wrapped, once, when the
    class is created: a
    ``dask.array.Array`` as first argument goes to :func:`randfeat.dask.dispatch` (which imports
    dask); anything else to the method itself, after one type check.  No module of the maps or
    learners imports :mod:`randfeat.dask`: it is a leaf of the import graph.  A new feature map
    inherits the hook; its ``transform`` is then lazy and bit-identical for every chunking
    (canonical tiles), and its ``fit`` on a dask array reads only the shape and dtype when the
    class says so (``_dask_fit_reads_shape = True``), or raises NotImplementedError naming the
    alternative (fit on an in-memory sample).
    """

    #: fit reads only the shape and dtype of X (then fit on a dask array computes nothing)
    _dask_fit_reads_shape = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _DASK_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_dask_routed", False):
                setattr(cls, name, _routed(name, method))


class RandomFeaturesBase(DaskRouted, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                         BaseEstimator):
    """Base class: input validation, dtype tags, ``random_state``, ``n_threads``, the kernel rule
    and atomic fits.

    Subclasses declare ``_parameter_constraints`` (validated by ``fit`` through
    ``sklearn.base._fit_context``), build their fitted state aside and publish it with
    :meth:`_publish` (which also records ``_n_features_out``, used by
    ``get_feature_names_out``), and never draw random numbers outside ``fit``.

    One rule for a kernel and ``sigma`` (:meth:`_resolve_kernel`): ``sigma=None`` (the default)
    means the kernel's own length scale -- a kernel instance's ``sigma``, or 1.0 for a kernel
    given by name; a number or ``"scale"``/``"median"`` sets the length scale of a kernel given
    by name; with a kernel instance, any ``sigma`` other than None is a ValueError.
    """

    # ---------------------------------------------------------------- input
    def _validate_X(self, X, *, reset: bool, accept_sparse=False):
        """float32/float64 C-ordered finite array (ints become float64); checks n_features_in_.

        At transform time (``reset=False``) an input that is already what the kernels need --
        a finite, C-contiguous, non-empty float32/float64 ndarray with ``n_features_in_``
        columns, for an estimator fitted without feature names -- is returned as is after one
        ``sum`` (NaN/Inf propagate through it; an overflowing sum of finite values falls
        back to the full check): sklearn's ``validate_data`` costs ~50-300 us per call, which
        dominates one-vector latency.  Everything else goes through ``validate_data``.
        ``accept_sparse`` (e.g. ``("csr", "csc")``) lets scipy.sparse input through (float32 or
        float64 data, finite).
        """
        if (not reset and type(X) is np.ndarray and X.ndim == 2 and X.dtype in _FAST_DTYPES
                and X.flags.c_contiguous and X.shape[0] > 0
                and X.shape[1] == getattr(self, "n_features_in_", -1)
                and not hasattr(self, "feature_names_in_")):
            with np.errstate(over="ignore", invalid="ignore"):
                if np.isfinite(X.sum()):
                    return X
        # Values near DBL_MAX are valid input: silence NumPy's overflow warning in sklearn's
        # finiteness fast path (it sums X before checking element-wise).
        with np.errstate(over="ignore", invalid="ignore"):
            return validate_data(
                self, X, reset=reset, accept_sparse=accept_sparse,
                dtype=[np.float64, np.float32], order="C", ensure_all_finite=True,
                ensure_min_samples=1)

    def _check_projections(self, n_bad, X):
        """Raise when the compiled kernel met non-finite projections (``n_bad`` > 0): finite
        but huge input can overflow w'x (float32 near 1e36, float64 near 1e306), and the
        features would silently be NaN."""
        if n_bad:
            big = abs(X).max() if sp.issparse(X) else np.max(np.abs(X))
            raise ValueError(
                f"{type(self).__name__}.transform: the random projections of some rows of X "
                f"overflowed to a non-finite value ({X.dtype} input with entries up to "
                f"|x| = {float(big):.3g}), so their features would be NaN; "
                "rescale X (e.g. with sklearn.preprocessing.StandardScaler)"
                + (" or pass float64 input" if X.dtype == np.float32 else ""))

    # ---------------------------------------------------------------- parameters
    def _rng(self) -> np.random.Generator:
        return check_random_state(self.random_state)

    def _n_threads(self) -> int:
        return check_n_threads(self.n_threads)

    def _resolve_kernel(self, X, require, **params):
        """The kernel of this fit, by the one rule of every randfeat transformer.

        ``self.kernel`` is a registered name, a kernel instance (or, for random binning, a pitch
        sampler); ``self.sigma`` is None, a positive number or ``"scale"``/``"median"``
        (:func:`data_sigma` on ``X``).  A kernel instance with a ``sigma`` other than None raises
        ValueError (it has its own length scale); a name takes ``sigma`` (1.0 when None).
        ``require`` ("fourier", "fastfood" or "binning") refuses kernels the map cannot
        approximate; ``params`` are the name's extra parameters (``nu``, ``t``, ``a``, ...).
        """
        return resolve_kernel(self.kernel, self.sigma, X, require=require,
                              who=type(self).__name__, **params)

    # ---------------------------------------------------------------- fitted state
    def _fit_atomic(self, build, X):
        """Validate ``X`` (resetting ``n_features_in_``), call ``state = build(X)`` and publish
        the state in one step.  If ``build`` raises (including KeyboardInterrupt and
        MemoryError), the previous fitted state is left whole: ``n_features_in_`` and
        ``feature_names_in_``, which validation sets, are restored."""
        keys = ("n_features_in_", "feature_names_in_")
        saved = {k: self.__dict__[k] for k in keys if k in self.__dict__}
        try:
            X = self._validate_X(X, reset=True, accept_sparse=self._accept_sparse)
            state = build(X)
        except BaseException:
            for k in keys:
                self.__dict__.pop(k, None)
            self.__dict__.update(saved)
            raise
        self._publish(state)
        return X

    _accept_sparse = False

    def _publish(self, state):
        """Replace every fitted attribute by ``state`` in one step.

        The new ``__dict__`` (parameters, ``n_features_in_``, ``feature_names_in_``, ``state``
        and the parameters it was fitted with) is built aside and assigned in one operation, so a
        Ctrl-C, a MemoryError or a concurrent ``transform`` never sees half of it; attributes of
        the previous fit that ``state`` does not set (e.g. ``offsets_`` of a phase map refitted
        as a paired one) are dropped.
        """
        params = self.get_params(deep=False)
        stale = set(self.__dict__.get("_fitted_keys", ()))
        new = {k: v for k, v in self.__dict__.items()
               if k in params or k in ("n_features_in_", "feature_names_in_")
               or not (k in stale or (k.endswith("_") and not k.startswith("__")))}
        new.update(state)
        # arrays and lists (ARD sigma) by value: changed in place after fit, they differ
        new["_fitted_params"] = {k: (copy.deepcopy(v) if isinstance(v, (np.ndarray, list))
                                     else v)
                                 for k, v in params.items() if k not in _TRANSFORM_FREE_PARAMS}
        new["_fitted_keys"] = tuple(state)
        self.__dict__ = new

    def __setstate__(self, state):
        """Unpickling keeps the fitted arrays read-only (pickle does not keep the flag)."""
        super().__setstate__(state)
        for k in self.__dict__.get("_fitted_keys", ()):
            v = self.__dict__.get(k)
            if isinstance(v, np.ndarray) and v.flags.owndata:
                v.flags.writeable = False

    def _fitted_state(self):
        """One consistent snapshot (the instance ``__dict__``) of a fitted estimator whose
        parameters are those it was fitted with; NotFittedError otherwise."""
        state = self.__dict__
        fitted = state.get("_fitted_params")
        if fitted is None:
            check_is_fitted(self)
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call "
                                 "'fit' with appropriate arguments before using this estimator.")
        changed = [k for k, v in fitted.items() if not _same(state.get(k, v), v)]
        if changed:
            what = ", ".join(f"{k}={state.get(k)!r} (fitted with {fitted[k]!r})"
                             for k in changed)
            raise NotFittedError(
                f"{type(self).__name__}: the parameters changed after fit ({what}), so the "
                "fitted random parameters no longer match them; call fit again (or "
                "set_params back to the fitted values)")
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = bool(self._accept_sparse)
        return tags


def ard_parts(kernel):
    """``(base_sigma, scales)`` of a fitted kernel (:meth:`ShiftInvariantKernel.ard_split`):
    ``(sigma, None)`` for a number or for ARD length scales that are all equal (then the map is
    the isotropic one, bit for bit), else ``(1.0, sigma)``: the structured maps (Fastfood, SORF)
    run at unit length scale on ``X * (1 / sigma)`` (:func:`ard_blocks`)."""
    base, scales = kernel.ard_split()
    return float(base.sigma), scales


def divide_columns(A, scales):
    """``A / scales`` column-wise in float64 (a new array; sparse stays sparse CSR, its stored
    entries divided exactly as the dense ones are): the rows in the units of an ARD kernel's
    unit-scale base, for the maps that read the rows at fit (Nystroem; leverage-weighted RFF)."""
    if sp.issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64, copy=True)
        A.data /= scales[A.indices]
        return A
    return np.asarray(A, dtype=np.float64) / scales


#: entries of X scaled at once by the ARD pass of the structured maps (in cache)
ARD_BLOCK_ELEMENTS = 2 ** 17


def ard_blocks(X, scales):
    """``(start, stop, X[start:stop] * (1 / scales))`` over blocks of rows of the dense X, in
    X's dtype: the reciprocal length scales are computed in float64 and rounded to X's dtype
    (``inv``), and every entry is one multiplication ``x * inv`` (so the ARD map equals the
    unit-scale map on ``X * (1 / sigma).astype(X.dtype)``, bit for bit).  The blocks (at most
    ``ARD_BLOCK_ELEMENTS`` entries) are written into one reused buffer, which stays in cache:
    no copy of X is made.  Overflow (a tiny length scale) gives inf, which the kernels report
    as overflowed projections."""
    n, d = X.shape
    inv = (1.0 / np.asarray(scales, dtype=np.float64)).astype(X.dtype)
    rows = max(1, min(n, ARD_BLOCK_ELEMENTS // max(1, d)))
    buf = np.empty((rows, d), dtype=X.dtype)
    with np.errstate(over="ignore"):
        for a in range(0, n, rows):
            b = min(n, a + rows)
            blk = buf[:b - a]
            np.multiply(X[a:b], inv, out=blk)
            yield a, b, blk


def _odd_paired(P, m, b):
    r"""Odd paired width ``D = 2m - 1`` from the paired features ``P = s[cos(Vx) | sin(Vx)]`` of
    ``m`` frequencies (``s = sqrt(2/D)``): the first ``m - 1`` pairs, then
    ``s cos(w_m'x + b) = s cos(w_m'x) cos b - s sin(w_m'x) sin b`` (the phase-shifted feature of
    the last frequency, ``b = offsets_[0]``)."""
    n, h = P.shape[0], m - 1
    out = np.empty((n, 2 * h + 1), dtype=P.dtype)
    out[:, :h] = P[:, :h]
    out[:, h:2 * h] = P[:, m:m + h]
    b0 = float(b[0])
    out[:, 2 * h] = P[:, h] * P.dtype.type(math.cos(b0)) - P[:, m + h] * P.dtype.type(math.sin(b0))
    return out
