r"""Random features and their ridge learners on dask arrays (optional extra ``randfeat[dask]``).

Nothing imports this module, or dask, until a dask array is given: the one hook of the base
classes (:class:`randfeat._base.DaskRouted`) checks the type of the first argument of ``fit``,
``fit_transform``, ``transform``, ``predict`` and ``decision_function`` and hands a dask array to
:func:`dispatch`.  This module is a leaf of randfeat's import graph: it imports the maps and the
learners, none of them imports it.  Install the extra with ``pip install "randfeat[dask]"``
(``dask[array]`` and ``distributed``).

Transform
---------
``est.transform(X)`` for a fitted randfeat transformer and a ``dask.array.Array`` ``X`` returns a
lazy dask array with the row chunks of ``X``, **one chunk along the features** and the dtype (and,
for exact random binning, the ``scipy.sparse.csr_matrix`` meta) of the in-memory transform.  All
randomness is drawn in ``fit``; the fitted attributes stay plain NumPy.

*Bit-identical for every chunking.*  A row's features must not depend on how ``X`` is chunked, but
a BLAS matrix product is not generally invariant to the number of rows it is given (the in-memory
``RandomFourierFeatures.transform(X)[a:b]`` and ``transform(X[a:b])`` differ in the last bits on
this machine's OpenBLAS).  So every row is computed inside its *canonical tile*: the rows are cut
at the global multiples of ``TILE_ROWS`` (2048), and row ``i`` is ``est.transform(X[t:t + 2048])``
at its place, ``t = 2048 * (i // 2048)`` (the last tile is shorter).  A dask block whose bounds are
not multiples of ``TILE_ROWS`` also reads the (at most ``2 * TILE_ROWS - 2``) rows of its first and
last tile from its neighbours.  The output then equals :func:`tiled_transform` (the same tiles in
memory) bit for bit, for every chunking and every scheduler; it equals the in-memory
``est.transform(X)`` bit for bit for Fastfood and random binning (row-wise kernels) and to a few
ulps for random Fourier features.  Choose row chunks that are multiples of ``TILE_ROWS`` to avoid
the neighbour reads.

Fit
---
``RandomFourierFeatures``, ``Fastfood`` and ``StructuredOrthogonalFeatures`` use only the shape and
dtype of ``X`` (their class says so: ``_dask_fit_reads_shape``): ``fit`` on a dask array computes
nothing.  ``RandomBinningFeatures`` in hashing mode (``hash_size=K``) likewise.  A map whose ``fit``
reads the data (or ``sigma="scale"``/``"median"``) raises NotImplementedError: fit it on an
in-memory sample, then transform the dask array.
``RandomBinningFeatures`` in exact mode needs the global cell -> column map: this module takes **one
documented pass over the dask array**.  Each block is fitted on its own (same grids: same
``random_state``) and returns its *representative rows*: for every grid the first row of every cell
occupied in the block, plus the rows holding each feature's minimum and maximum.  The estimator is
then fitted in memory on all representative rows, in their global row order.  That set contains
the first occurrence in ``X`` of every occupied cell (in order) and the training range of every
coordinate, which are all the exact fit reads, so the fitted map equals the in-memory
``fit(X.compute())`` (same columns, same order).  The grids are drawn once per block and once
more for the final fit, identically: with ``random_state=None`` the fit therefore draws a fresh
``numpy.random.SeedSequence`` and sets ``random_state`` to it (the one parameter a dask fit
changes; refitting with it reproduces the map).  The client holds the representatives: at most
``n_columns_ + 2 d`` rows per block in the worst case (every row its own cell), usually far fewer.

Ridge
-----
``RandomFeatureRidge.fit(X, y)`` / ``RandomFeatureRidgeClassifier.fit(X, y)`` with a dask ``X``
compute on the workers, per block, the sufficient statistics of its rows, a
:class:`randfeat.linear.RidgeStatistics` (:math:`Z^\top Z` in float64, :math:`Z^\top Y`,
:math:`\sum z`, :math:`\sum y`, counts), and reduce them by a fixed tree of merges of at most 8
parts each (:func:`tree_reduce`), so the :math:`N \times D` feature matrix is never formed.
With several ``alphas`` the choice of alpha is the in-memory one (``selection``):
``"gcv"`` and ``"evidence"`` need only the tree-reduced statistics of all rows (one pass, one
eigendecomposition on the client); ``"loo"`` (the default) takes a **second pass**: the client
sends the eigenvectors (a D x D float64 array) to the workers, every block featurises the
in-memory fit's chunks again and returns the summed leave-one-out losses of every alpha, which
are tree-reduced (:class:`randfeat.linear._selection.LooRows`); ``"holdout"`` uses the in-memory
validation split (same permutation of the rows from ``random_state``): the training rows are
reduced first, the alpha path is solved, and a second pass featurises the validation rows once
(their statistics and the validation score of every alpha).  The fit is the in-memory one
(:mod:`randfeat.linear._fit`: the same selection and final solve), with this module's tree
reduction as the source of the statistics; only the solvers that stream the statistics
(``SOLVERS[name].data == "statistics"``) are available.  ``store_covariance=True`` keeps the
posterior as in memory; ``predict(X, return_std=True)`` on a dask array and ``partial_fit`` of
one are refused (compute the rows or blocks first).

*Same features as the in-memory fit.*  The in-memory fit featurises its (training or validation)
rows in chunks of ``chunk_size`` rows; each block featurises exactly those chunks (reading the
rows of a chunk it shares with a neighbour block, and keeping the statistics of its own rows), so
every feature value is bit-identical to the in-memory one, in float32 too.  Only the order of
the float64 sums differs, so the fitted model equals the in-memory fit on the same data up to
summation order: :math:`\|w_{dask} - w\| \le 100\,\varepsilon\,\kappa\,\|w\|` with
:math:`\kappa` the condition number of :math:`A + n\alpha I` and :math:`\varepsilon` the float64
epsilon, and :math:`|b_{dask} - b| \le 100\,\varepsilon\,\kappa\,(|b| + \|\bar z\|\,\|w\|)` for
the intercept :math:`b = \bar y - \bar z^\top w` (tested for several chunkings, float32 and
float64 data, with the default ``gram_dtype="float64"``; with ``gram_dtype="float32"`` a block
that starts or ends inside a chunk forms its part of that chunk's product in single precision
on its own, so the agreement is that of the float32 products, about ``chunk_size * 6e-8``
relative per Gram entry).  Blocks whose row counts are multiples of ``chunk_size`` (single
alpha) read no neighbour rows.  For a fixed chunking the model is bit-identical from run to run
and whatever the scheduler or number of workers, as long as the tasks' BLAS runs with the same
number of threads (the reduction tree depends on the chunks only).  randfeat does not change the
BLAS thread count: ``distributed``'s worker processes run a single-threaded BLAS by default
(their nannies set ``OPENBLAS_NUM_THREADS=1``, ``OMP_NUM_THREADS=1``, ``MKL_NUM_THREADS=1``);
elsewhere set it with :func:`threadpoolctl.threadpool_limits`.

The computation runs on the active ``distributed.Client`` when there is one (dask's default),
else on dask's default scheduler for delayed objects (threads, each task's BLAS calls with the
process's BLAS threads).

Bad input
---------
Unknown row chunk sizes (``X.compute_chunk_sizes()`` fixes it), more than one chunk along the
features (``X.rechunk({1: -1})``), a dtype the in-memory transformer rejects, or a wrong number of
features raise at once.  NaN or infinity in a block of ``X`` or ``y`` (the classifier's labels
too) raise when that block is computed, naming the block and its rows; a learner whose fit fails
that way keeps its previous state (nothing is published before every block has been reduced).
Empty blocks (what boolean filtering leaves) are allowed anywhere.
"""

from __future__ import annotations

import bisect
import copy
import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin, clone
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from randfeat._base import RandomFeaturesBase, is_dask_array
from randfeat.binning import RandomBinningFeatures
from randfeat.linear import _oneblas
from randfeat.linear._fit import (
    _is_fitted,
    fit_spectral,
    fit_statistics,
    fitted_state,
    plan_fit,
    publish,
    validation_split,
    working_copy,
)
from randfeat.linear._inputs import check_alphas
from randfeat.linear._precision import effective_gram_dtype
from randfeat.linear._ridge import _RandomFeatureRidgeBase
from randfeat.linear._selection import SPECTRAL
from randfeat.linear._solvers import SOLVERS, resolve_solver
from randfeat.linear._statistics import RidgeStatistics

__all__ = ["TILE_ROWS", "decision_function", "dispatch", "fit", "fit_ridge", "fit_transform",
           "is_dask_array", "predict", "tiled_transform", "transform", "tree_reduce"]

TILE_ROWS = 2048
SPLIT_EVERY = 8


def dispatch(est, method, X, *args, **kwargs):
    """``est.<method>(X, ...)`` for a dask array ``X``: the entry point of the base classes'
    hook (:class:`randfeat._base.DaskRouted`).  ``method`` is "fit", "fit_transform",
    "transform", "predict" or "decision_function" (or "partial_fit" / "sample_y", refused)."""
    if method == "fit":
        if isinstance(est, _RandomFeatureRidgeBase):
            return fit_ridge(est, X, *args, **kwargs)
        return fit(est, X, *args, **kwargs)
    if method in ("partial_fit", "sample_y"):
        raise NotImplementedError(
            f"{type(est).__name__}.{method} does not take a dask array: "
            + ("call partial_fit on its blocks, computed (or fit the whole array with fit)"
               if method == "partial_fit" else "compute the rows first"))
    route = {"fit_transform": fit_transform, "transform": transform, "predict": predict,
             "decision_function": decision_function}.get(method)
    if route is None:  # pragma: no cover - the hook routes only the methods above
        raise NotImplementedError(f"{type(est).__name__}.{method} does not take a dask array")
    return route(est, X, *args, **kwargs)


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - the hooks only call us with a dask array
        raise ImportError("randfeat's dask support needs the optional extra: pip install "
                          "'randfeat[dask]' (dask[array] and distributed)") from exc
    return dask, da


# ----------------------------------------------------------------------------- input checks
def _check_X(X, who, n_features=None):
    """Validate the layout of a dask array ``X`` (no data is computed)."""
    if X.ndim != 2:
        raise ValueError(f"{who}: X must be a 2-D dask array (n_samples, n_features), got "
                         f"{X.ndim} dimension(s) with shape {X.shape}")
    rows = X.chunks[0]
    if any(isinstance(c, float) and math.isnan(c) for c in rows):
        raise ValueError(f"{who}: X has unknown chunk sizes along the rows ({rows}); compute "
                         "them first with X.compute_chunk_sizes() (or X = "
                         "X.persist().compute_chunk_sizes())")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"{who}: X is split into {len(X.chunks[1])} chunks along the features "
                         f"({X.chunks[1]}); every row block must hold all features: use "
                         "X.rechunk({1: -1})")
    if X.shape[0] == 0:
        raise ValueError(f"{who}: X has 0 rows; at least one sample is required")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{who}: X has dtype {X.dtype.name}; a randfeat transformer needs real "
                        "numbers (float32 or float64; bool and integers are converted to "
                        "float64): convert it with X.astype(np.float64)")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{who}: X has {X.shape[1]} features, but the estimator was fitted "
                         f"with {n_features} features; pass an array with {n_features} columns")
    return X


def _block_bounds(chunks):
    ends = np.cumsum((0,) + tuple(int(c) for c in chunks))
    return [(int(a), int(b)) for a, b in zip(ends[:-1], ends[1:], strict=True)]


def _worker_copy(est):
    """Shallow copy of a fitted transformer running one thread (dask runs blocks in parallel;
    the output does not depend on ``n_threads``)."""
    est = copy.copy(est)
    if hasattr(est, "n_threads"):
        est.n_threads = 1
    return est


def _probe(est, dtype, d, who):
    """Transform one row of zeros of ``dtype``: the output dtype, width and meta of the in-memory
    transform, or its error for a dtype it rejects (raised now, naming the dask dtype)."""
    try:
        Z = est.transform(np.zeros((1, d), dtype=dtype))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{who}: the dask array's dtype {np.dtype(dtype).name} is rejected by "
                        f"{type(est).__name__}: {exc}") from exc
    return Z


def _block_error(exc, who, i, nblocks, a, b):
    kind = type(exc) if isinstance(exc, (ValueError, TypeError, FloatingPointError)) \
        else ValueError
    return kind(f"{who}: block {i} of {nblocks} (rows {a}:{b}) of the dask array: {exc}")


# ----------------------------------------------------------------------------- transform
def _tiles(n_rows, T):
    for t0 in range(0, n_rows, T):
        yield t0, min(n_rows, t0 + T)


def _transform_piece(est, piece, lo, hi, T, info):
    """Features of rows ``lo:hi`` of the piece ``Xp``, whose row 0 is a global multiple of ``T``:
    every canonical tile is transformed on its own, then the rows are cut out.  ``piece`` is
    ``(blocks, c0, c1)``: ``Xp`` is rows ``c0:c1`` of the concatenated consecutive blocks."""
    import scipy.sparse as sp

    who, i, nblocks, a, b = info
    try:
        blocks, c0, c1 = piece
        Xp = np.concatenate([np.asarray(p) for p in blocks]) if len(blocks) > 1 \
            else np.asarray(blocks[0])
        Xp = _finite_rows(Xp[c0:c1], lo, hi, a - lo)  # piece row 0 = X row a - lo
        parts = []
        for t0, t1 in _tiles(Xp.shape[0], T):
            if t1 <= lo or t0 >= hi:
                continue
            Z = est.transform(Xp[t0:t1])
            parts.append(Z[max(lo, t0) - t0:min(hi, t1) - t0])
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc
    if len(parts) == 1:
        return parts[0]
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)


def _finite_rows(Xp, lo, hi, a, rows=None):
    """Raise for NaN/infinity in the block's own rows ``lo:hi`` (naming the first bad row of
    ``X``: ``a + k``, or ``rows[k]``); zero the non-finite neighbour rows read only to complete
    a tile (their features are discarded, and a row's features do not depend on the values of
    the other rows)."""
    if Xp.dtype.kind != "f":
        return Xp
    bad = ~np.isfinite(Xp).all(axis=1)
    if not bad.any():
        return Xp
    own = np.flatnonzero(bad[lo:hi])
    if own.size:
        k = lo + own[0]
        row = a + k if rows is None else rows[k]
        raise ValueError(f"Input X contains NaN or infinity (first in row {row} of X); "
                         "remove or impute those rows first")
    Xp = Xp.copy()  # never modify the input
    Xp[bad] = 0
    return Xp


def _empty(meta):
    """A zero-row block like ``meta`` (an empty block of X needs no neighbour and no task)."""
    return meta.copy()


def transform(est, X):
    """Lazy features of the dask array ``X`` by the fitted randfeat transformer ``est``.

    Parameters
    ----------
    est : fitted RandomFourierFeatures, Fastfood or RandomBinningFeatures
    X : dask.array.Array of shape (n_samples, n_features_in_)
        Known row chunk sizes, one chunk along the features.

    Returns
    -------
    Z : dask.array.Array of shape (n_samples, n_output)
        Row chunks of ``X``, one chunk along the columns; dtype (and sparse meta) of the in-memory
        transform.  Row ``i`` is computed in its canonical tile (module docstring), so it is
        bit-identical for every chunking of ``X``.

    Examples
    --------
    >>> import dask.array as da
    >>> from randfeat import RandomFourierFeatures
    >>> X = da.random.default_rng(0).standard_normal((5000, 8), chunks=(1000, 8))
    >>> rff = RandomFourierFeatures(64, random_state=0).fit(X)     # shape only, nothing computed
    >>> Z = rff.transform(X)
    >>> Z.shape, Z.chunks[1], Z.dtype.name
    ((5000, 64), (64,), 'float64')
    >>> import numpy as np
    >>> Z2 = rff.transform(X.rechunk(700))
    >>> bool((Z[1234:3456].compute() == Z2[1234:3456].compute()).all())
    True
    """
    dask, da = _import_dask()
    who = f"{type(est).__name__}.transform"
    check_is_fitted(est)
    X = _check_X(X, who, getattr(est, "n_features_in_", None))
    worker = _worker_copy(est)
    probe = _probe(worker, X.dtype, X.shape[1], who)
    meta = probe[:0]
    width = probe.shape[1]
    est_d = dask.delayed(worker, pure=True, traverse=False)
    T, n = TILE_ROWS, X.shape[0]
    bounds = _block_bounds(X.chunks[0])
    starts, ends = [a for a, _ in bounds], [b for _, b in bounds]
    Xb = X.to_delayed().ravel()  # the blocks' own keys (slicing X would add tasks per piece)
    outs = []
    for i, (a, b) in enumerate(bounds):
        if a == b:
            outs.append(da.from_delayed(dask.delayed(_empty, pure=True)(meta), shape=(0, width),
                                        dtype=probe.dtype, meta=meta))
            continue
        A = (a // T) * T
        B = min(n, -(-b // T) * T)
        j0, j1 = bisect.bisect_right(ends, A), bisect.bisect_left(starts, B)
        piece = (list(Xb[j0:j1]), A - starts[j0], B - starts[j0])  # whole blocks, then cut
        task = dask.delayed(_transform_piece, pure=True)(
            est_d, piece, a - A, b - A, T, (who, i, len(bounds), a, b))
        outs.append(da.from_delayed(task, shape=(b - a, width), dtype=probe.dtype, meta=meta))
    return da.concatenate(outs, axis=0) if len(outs) > 1 else outs[0]


def tiled_transform(est, X):
    """In-memory reference of :func:`transform`: ``est.transform`` of every canonical tile of the
    NumPy array ``X``, stacked (what the dask transform computes, bit for bit)."""
    parts = [est.transform(X[t0:t1]) for t0, t1 in _tiles(X.shape[0], TILE_ROWS)]
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.concatenate(parts)


# ----------------------------------------------------------------------------- fit
def _data_dependent(est):
    sigma = getattr(est, "sigma", None)
    return isinstance(sigma, str)


def fit(est, X, y=None, **kwargs):
    """Fit the randfeat transformer ``est`` on the dask array ``X`` (see the module docstring).

    Maps whose class says that ``fit`` reads only the shape and dtype of ``X``
    (``_dask_fit_reads_shape``: random Fourier features, Fastfood, SORF) and hashed random
    binning compute nothing; exact random binning takes one pass over ``X``; any other map
    raises NotImplementedError (fit it on an in-memory sample, then transform the dask array).
    """
    who = f"{type(est).__name__}.fit"
    if hasattr(est, "_validate_params"):
        est._validate_params()
    X = _check_X(X, who)
    if _data_dependent(est):
        raise NotImplementedError(
            f"{who}: sigma={est.sigma!r} is estimated from the data, which the dask path does not "
            "do; pass a numeric sigma (e.g. estimated on an in-memory sample)")
    if isinstance(est, RandomBinningFeatures):
        if est.hash_size is None:
            return _fit_binning_exact(est, X, who)
    elif not getattr(est, "_dask_fit_reads_shape", False):
        raise NotImplementedError(
            f"{who}: fitting {type(est).__name__} reads the values of X, which the dask path "
            "does not do; fit it on an in-memory sample (e.g. est.fit(X[:n].compute())), then "
            "transform the dask array")
    return est.fit(np.zeros((1, X.shape[1]), dtype=X.dtype))  # reads the shape and dtype


def fit_transform(est, X, y=None, **kwargs):
    """``fit(est, X).transform(X)``: lazy features of the dask array ``X``."""
    return fit(est, X, y, **kwargs).transform(X)


def _frozen_random_state(rs):
    """A random_state that replays ``rs``'s next draws as often as needed (None: a fresh seed)."""
    if rs is None:
        return np.random.SeedSequence()
    return copy.deepcopy(rs)


def _binning_representatives(proto, Xb, offset, info):
    """Global indices and rows of the first row of every cell of every grid in block ``Xb``,
    plus each feature's minimum and maximum rows."""
    who, i, nblocks, a, b = info
    try:
        Xb = np.asarray(Xb)
        est = clone(proto)
        Z = est.fit_transform(Xb)
        P = est.widths_.shape[0]
        first = np.unique(Z.indices, return_index=True)[1] // P  # rows: one entry per grid
        ext = np.concatenate([np.argmin(Xb, axis=0), np.argmax(Xb, axis=0)])
        rows = np.unique(np.concatenate([first, ext]))
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc
    return rows + offset, Xb[rows]


def _fit_binning_exact(est, X, who):
    dask, _ = _import_dask()
    rs = est.random_state
    frozen = _frozen_random_state(rs)
    proto = clone(est).set_params(random_state=frozen, n_threads=1)
    bounds = _block_bounds(X.chunks[0])
    Xb = X.to_delayed().ravel()
    tasks = [dask.delayed(_binning_representatives, pure=True)(
        proto, Xb[i], a, (who, i, len(bounds), a, b)) for i, (a, b) in enumerate(bounds)
        if b > a]
    parts = dask.compute(*tasks)
    idx = np.concatenate([p[0] for p in parts])
    rows = np.concatenate([p[1] for p in parts])
    order = np.argsort(idx, kind="stable")  # blocks come in order; keep it explicit
    rows = rows[order]
    if rs is None:  # the blocks' grids were drawn from `frozen`: the final fit draws them again
        est.random_state = frozen
    return est.fit(rows)


# ----------------------------------------------------------------------------- statistics
def _merge_all(*parts):
    """Sum of ``(RidgeStatistics, scores or None)`` parts, in the given order (a new object: no
    part is modified)."""
    stats, scores = parts[0][0].copy(), parts[0][1]
    for st, sc in parts[1:]:
        stats += st
        if sc is not None:
            scores = sc if scores is None else scores + sc
    return stats, scores


def tree_reduce(parts, merge=_merge_all, split_every=SPLIT_EVERY):
    """Reduce a list of delayed objects by a fixed tree of ``merge`` calls on at most
    ``split_every`` parts each (the tree depends on ``len(parts)`` only)."""
    dask, _ = _import_dask()
    level = list(parts)
    if not level:
        raise ValueError("tree_reduce needs at least one part")
    while len(level) > 1:
        level = [dask.delayed(merge, pure=True)(*level[k:k + split_every])
                 for k in range(0, len(level), split_every)]
    return level[0]


def _block_stats(model, Xp, Yp, cut, mask, own, path, info):
    """``(RidgeStatistics, scores)`` of the rows of one block, featurised in the in-memory fit's
    chunks.

    ``Xp`` / ``Yp`` are the consecutive blocks of ``X`` / ``Y`` whose rows ``cut[0]:cut[1]``
    are the original rows ``ra:rb`` of ``X`` / ``Y``; ``mask`` (or None: all)
    selects the rows of the fitted subset (training or validation rows), which are the subset's
    rows ``A:B`` with ``A`` a multiple of ``chunk_size``; the block's own rows are ``own = (lo,
    hi)`` of them.  Every chunk ``[t, t + chunk_size)`` of the subset is featurised whole (as the
    in-memory fit does: same rows, so bit-identical features), and its own rows are added to one
    :class:`~randfeat.linear.RidgeStatistics` in row order (one ``syrk`` and one ``gemm`` per
    chunk, in place, as the in-memory fit).  Neighbour rows only complete a chunk: their
    NaN/infinity is not this block's error.
    """
    who, i, nblocks, a, b, ra = info
    lo, hi = own
    try:
        Xp = np.concatenate([np.asarray(p) for p in Xp]) if len(Xp) > 1 else np.asarray(Xp[0])
        Yp = np.concatenate([np.asarray(p) for p in Yp]) if len(Yp) > 1 else np.asarray(Yp[0])
        Xp, Yp = Xp[cut[0]:cut[1]], Yp[cut[0]:cut[1]]
        rows = np.arange(ra, ra + Xp.shape[0]) if mask is None else ra + np.flatnonzero(mask)
        if mask is not None:
            Xp, Yp = Xp[mask], Yp[mask]
        Yp = Yp.reshape(len(Yp), -1)
        bad_y = ~np.isfinite(Yp[lo:hi]).all(axis=1)
        if bad_y.any():
            raise ValueError(f"y contains NaN or infinity (first in row "
                             f"{rows[lo + np.flatnonzero(bad_y)[0]]} of y)")
        Xp = _finite_rows(Xp, lo, hi, 0, rows)
        st = RidgeStatistics(model.gram_dtype)
        scores = None
        if path is not None:
            Wf, pb = path
            L, K = pb.shape
            scores = np.zeros(L)
        cs = model._chunk_rows()
        for t0 in range(0, Xp.shape[0], cs):
            t1 = min(Xp.shape[0], t0 + cs)
            k0, k1 = max(lo, t0), min(hi, t1)
            if k0 >= k1:
                continue
            Yc = Yp[k0:k1]
            Z = st._update(model._chunk_features(Xp[t0:t1])[k0 - t0:k1 - t0], Yc)
            if path is not None:
                P = np.asarray(_oneblas.matmul(Z, Wf)).reshape(-1, L, K) + pb[None]
                scores += np.array([model._scores(P[:, j], Yc) for j in range(L)]) * len(Yc)
        st._release()
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc
    return st, scores


def _block_loo(model, Xp, Yp, cut, own, scorer, info):
    """The summed leave-one-out losses ``model._loo_sums`` (L, m) of the rows of one block,
    featurised in the in-memory fit's chunks (as :func:`_block_stats` with ``mask=None``), the
    predictions from ``scorer`` (:class:`randfeat.linear._selection.LooRows`)."""
    who, i, nblocks, a, b, ra = info
    lo, hi = own
    try:
        Xp = np.concatenate([np.asarray(p) for p in Xp]) if len(Xp) > 1 else np.asarray(Xp[0])
        Yp = np.concatenate([np.asarray(p) for p in Yp]) if len(Yp) > 1 else np.asarray(Yp[0])
        Xp, Yp = Xp[cut[0]:cut[1]], Yp[cut[0]:cut[1]]
        Yp = Yp.reshape(len(Yp), -1)
        sums = None
        cs = model._chunk_rows()
        for t0 in range(0, Xp.shape[0], cs):
            t1 = min(Xp.shape[0], t0 + cs)
            k0, k1 = max(lo, t0), min(hi, t1)
            if k0 >= k1:
                continue
            Z = model._chunk_features(Xp[t0:t1])[k0 - t0:k1 - t0]
            Yc = Yp[k0:k1]
            part = model._loo_sums(scorer(Z, Yc, None), Yc, None)
            sums = part if sums is None else sums + part
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc
    return sums


def _sum_all(*parts):
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _as_dask_y(y, X, who):
    _, da = _import_dask()
    if not is_dask_array(y):
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{who}: X has {X.shape[0]} rows but y has {y.shape[0]}")
        return da.from_array(y, chunks=(X.chunks[0],) + tuple((s,) for s in y.shape[1:]))
    if y.ndim not in (1, 2):
        raise ValueError(f"{who}: y must be 1-D or 2-D, got shape {y.shape}")
    if any(isinstance(c, float) and math.isnan(c) for c in y.chunks[0]):
        raise ValueError(f"{who}: y has unknown chunk sizes; use y.compute_chunk_sizes()")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{who}: X has {X.shape[0]} rows but y has {y.shape[0]}")
    return y.rechunk((X.chunks[0],) + tuple((s,) for s in y.shape[1:]))


class _DaskRows:
    """The rows of a dask fit as a source of :class:`RidgeStatistics` for the shared workflow
    (:func:`randfeat.linear._fit.fit_statistics`): ``statistics(rows, path)`` tree-reduces the
    per-block statistics of the selected rows, computed on the workers."""

    def __init__(self, model, X, Y, who):
        self.model, self.X, self.Y, self.who = model, X, Y, who

    def statistics(self, rows=None, path=None):
        mask = None
        if rows is not None:
            mask = np.zeros(self.X.shape[0], dtype=bool)
            mask[rows] = True
        return _reduce(self.model, self.X, self.Y, mask, path, self.who)

    def loo(self, scorer):
        """The second pass of leave-one-out: every block's summed losses, tree-reduced."""
        dask, _ = _import_dask()
        X, Y, model = self.X, self.Y, self.model
        bounds = _block_bounds(X.chunks[0])
        model_d = dask.delayed(model, pure=True, traverse=False)
        scorer_d = dask.delayed(scorer, pure=True, traverse=False)
        cs = model._chunk_rows()
        n = X.shape[0]
        starts = [a for a, _ in bounds]
        ends = [b for _, b in bounds]
        Xb, Yb = X.to_delayed().ravel(), Y.to_delayed().ravel()
        parts = []
        for i, (a, b) in enumerate(bounds):
            if a == b:
                continue
            A, B = (a // cs) * cs, min(n, -(-b // cs) * cs)
            j0, j1 = bisect.bisect_right(ends, A), bisect.bisect_left(starts, B)
            cut = (A - starts[j0], B - starts[j0])
            parts.append(dask.delayed(_block_loo, pure=True)(
                model_d, list(Xb[j0:j1]), list(Yb[j0:j1]), cut, (a - A, b - A), scorer_d,
                (self.who, i, len(bounds), a, b, A)))
        (res,) = dask.compute(tree_reduce(parts, merge=_sum_all))
        return res


def _reduce(model, X, Y, mask, path, who):
    """Tree-reduced ``(RidgeStatistics, scores)`` of the rows ``mask`` (None: all) of ``X``,
    ``Y``, computed on the workers; each block featurises the chunks of the in-memory fit that
    hold its rows.  ``model`` is the fit's working copy (its ``features_`` the workers' copy of
    the map, ``n_features_out_`` set, which fixes chunk_size="auto"'s rows)."""
    dask, _ = _import_dask()

    bounds = _block_bounds(X.chunks[0])
    model_d = dask.delayed(model, pure=True, traverse=False)
    path_d = None if path is None else dask.delayed(path, pure=True, traverse=False)
    cs = model._chunk_rows()
    if mask is None:
        n_sel, idx, cum = X.shape[0], None, None
    else:
        idx = np.flatnonzero(mask)  # original row of every selected row
        n_sel = idx.size
        cum = np.concatenate([[0], np.cumsum([np.count_nonzero(mask[a:b]) for a, b in bounds])])
    starts = [a for a, _ in bounds]
    ends = [b for _, b in bounds]
    Xb, Yb = X.to_delayed().ravel(), Y.to_delayed().ravel()  # the blocks' own keys: no new tasks
    parts = []
    for i, (a, b) in enumerate(bounds):
        lo, hi = (a, b) if mask is None else (int(cum[i]), int(cum[i + 1]))  # subset rows
        if lo == hi:
            continue
        A, B = (lo // cs) * cs, min(n_sel, -(-hi // cs) * cs)  # whole chunks of the subset
        ra, rb = (A, B) if idx is None else (int(idx[A]), int(idx[B - 1]) + 1)
        # the blocks holding rows ra:rb, passed whole (slicing the dask array, X[ra:rb], instead
        # adds getitem and finalize tasks per block and piece: ~50x more tasks with small blocks)
        j0, j1 = bisect.bisect_right(ends, ra), bisect.bisect_left(starts, rb)
        Xp, Yp = list(Xb[j0:j1]), list(Yb[j0:j1])
        cut = (ra - starts[j0], rb - starts[j0])
        m = None if mask is None else mask[ra:rb]
        parts.append(dask.delayed(_block_stats, pure=True)(
            model_d, Xp, Yp, cut, m, (lo - A, hi - A), path_d, (who, i, len(bounds), a, b, ra)))
    (res,) = dask.compute(tree_reduce(parts))
    return res


def _block_classes(yb, info):
    """The labels of one block of a classifier's ``y``; NaN or infinity raise naming the row."""
    who, i, nblocks, a, b = info
    try:
        yb = np.asarray(yb)
        if yb.dtype.kind in "fc":
            bad = np.flatnonzero(~np.isfinite(yb))
            if bad.size:
                raise ValueError(f"y contains NaN or infinity (first in row {a + bad[0]} of y: "
                                 f"{yb[bad[0]]!r}); remove those rows or give them a class")
        return np.unique(yb)
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc


def _classes(y, who):
    """The classes of a dask ``y`` (one task per block, each checking its labels)."""
    dask, _ = _import_dask()
    bounds = _block_bounds(y.chunks[0])
    yb = y.to_delayed().ravel()
    parts = dask.compute(*[dask.delayed(_block_classes, pure=True)(
        yb[i], (who, i, len(bounds), a, b)) for i, (a, b) in enumerate(bounds) if b > a])
    classes = np.unique(np.concatenate(parts))
    check_classification_targets(classes)
    return classes


def fit_ridge(model, X, y, sample_weight=None):
    """Fit a :class:`~randfeat.linear.RandomFeatureRidge` or
    :class:`~randfeat.linear.RandomFeatureRidgeClassifier` on the dask array ``X`` (module
    docstring) by the in-memory workflow, the statistics tree-reduced on the workers.  ``y`` is
    a dask or NumPy array; it is rechunked to the row chunks of ``X``.  Every fitted attribute
    is published at the end, in one step, after all blocks were reduced."""
    _, da = _import_dask()
    who = f"{type(model).__name__}.fit"
    model._validate_params()
    if sample_weight is not None or getattr(model, "class_weight", None) is not None:
        raise NotImplementedError(
            f"{who}: sample_weight and class_weight are not supported on dask arrays yet; fit "
            f"in memory, or pass none")
    X = _check_X(X, who)
    y = _as_dask_y(y, X, who)
    alphas = check_alphas(model.alphas, model.alpha_scale, allow_single_zero=True)
    method, spec = resolve_solver(model.solver, False, f"{who}: solver")
    if spec.data != "statistics":
        streaming = [name for name, sp_ in SOLVERS.items() if sp_.data == "statistics"]
        raise ValueError(f"{who}: solver={model.solver!r} needs the whole feature matrix; on a "
                         "dask array only the streaming normal equations (solver='auto' or one "
                         f"of {streaming}) are available")
    # the feature map (fitted on the dask array: nothing or one documented pass is computed)
    if model.features in (None, "passthrough"):
        fitted = feats = None
        D = X.shape[1]
    else:
        if not isinstance(model.features, RandomFeaturesBase):
            raise TypeError(
                f"{who}: on a dask array, features must be a randfeat transformer (or "
                f"'passthrough'), got {type(model.features).__name__}: fitting another "
                "transformer would load the whole array into memory")
        fitted = fit(clone(model.features), X)
        feats = _worker_copy(fitted)
        probe = _probe(feats, X.dtype, X.shape[1], who)
        if sp.issparse(probe):
            raise NotImplementedError(
                f"{who}: {type(fitted).__name__} gives sparse features, solved by LSQR on the "
                "whole feature matrix; the dask path streams the normal equations of dense "
                "features only. Use a dense map (RandomFourierFeatures, Fastfood) or fit in "
                "memory")
        D = probe.shape[1]
    # targets
    classifier = isinstance(model, ClassifierMixin)
    if classifier:
        if y.ndim != 1:
            raise ValueError(f"{who}: y must be 1-D for a classifier, got shape {y.shape}")
        lb = LabelBinarizer(neg_label=-1, pos_label=1).fit(_classes(y, who))
        if len(lb.classes_) < 2:
            raise ValueError(f"{type(model).__name__} needs at least 2 classes in y, got 1 "
                             f"class ({lb.classes_!r})")
        K = 1 if len(lb.classes_) == 2 else len(lb.classes_)
        Y = y.map_blocks(lambda b, lb=lb: lb.transform(b).astype(np.float64),
                         dtype=np.float64, chunks=(y.chunks[0], (K,)), new_axis=1)
    else:
        if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
            raise TypeError(f"{who}: y must be real numeric, got dtype {y.dtype.name}")
        Y = y.astype(np.float64)
        if Y.ndim == 1:
            Y = Y[:, None]
        K = Y.shape[1]
    # the working copy the workers receive: parameters, the workers' feature map and its width
    work = working_copy(model)
    work.__dict__ = {k: v for k, v in work.__dict__.items() if not _is_fitted(k)}
    work.__dict__.update(features_=feats, n_features_out_=D, n_features_in_=X.shape[1])
    work.__dict__["gram_dtype"] = effective_gram_dtype(work, alphas, float(X.shape[0]))  # "auto"
    plan = plan_fit(work, alphas, None, X.shape[0], who)
    split = validation_split(X.shape[0], alphas.size if plan.selection == "holdout" else 1,
                             model.validation_fraction, model.random_state, who)
    n_val = None if split[1] is None else len(split[1])
    source = _DaskRows(work, X, Y, who)
    if plan.selection in SPECTRAL:
        res = fit_spectral(work, source, alphas, plan, who)
    else:
        res = fit_statistics(work, source, method, alphas, split, n_val, who, plan)
    state = fitted_state(work, res, alphas, who)
    state["features_"] = fitted
    if classifier:
        state.update(_label_binarizer=lb, classes_=lb.classes_)
        state = type(model)._coefficients(state)
    else:
        state = type(model)._coefficients(state, y.ndim)
    return publish(model, work, state)


# ----------------------------------------------------------------------------- predict
def _block_decision(model, Xb, info):
    who, i, nblocks, a, b = info
    try:
        out = model._decision(np.asarray(Xb))
    except Exception as exc:
        raise _block_error(exc, who, i, nblocks, a, b) from exc
    return out


def _scores(model, X):
    """Lazy scores ``z(X) @ coef_.T + intercept_`` of the dask array ``X``: shape (n, K)."""
    dask, da = _import_dask()
    who = f"{type(model).__name__}.predict"
    check_is_fitted(model)
    X = _check_X(X, who, model.n_features_in_)
    worker = copy.copy(model)
    worker.n_threads = 1
    K = np.reshape(model.coef_, (-1, model.n_features_out_)).shape[0]
    bounds = _block_bounds(X.chunks[0])
    m_d = dask.delayed(worker, pure=True, traverse=False)
    Xb = X.to_delayed().ravel()
    outs = [da.from_delayed(dask.delayed(_block_decision, pure=True)(
        m_d, Xb[i], (who, i, len(bounds), a, b)), shape=(b - a, K), dtype=np.float64)
        if b > a else da.zeros((0, K), dtype=np.float64) for i, (a, b) in enumerate(bounds)]
    return da.concatenate(outs, axis=0) if len(outs) > 1 else outs[0]


def decision_function(model, X):
    """Lazy ``model.decision_function(X)`` of a fitted randfeat classifier on a dask array."""
    s = _scores(model, X)
    return s[:, 0] if s.shape[1] == 1 else s


def predict(model, X, return_std=False):
    """Lazy ``model.predict(X)`` for a fitted randfeat learner and a dask array ``X``
    (``return_std=True`` is not available on dask arrays: NotImplementedError)."""
    if return_std:
        raise NotImplementedError(f"{type(model).__name__}.predict: return_std=True is not "
                                  f"available on dask arrays; compute the rows (or blocks) "
                                  f"and call predict on them")
    s = _scores(model, X)
    if isinstance(model, ClassifierMixin):
        classes = model.classes_
        if s.shape[1] == 1:
            return s[:, 0].map_blocks(lambda v: classes[(v > 0).astype(int)],
                                      dtype=classes.dtype)
        return s.map_blocks(lambda v: classes[np.argmax(v, axis=1)], drop_axis=1,
                            dtype=classes.dtype)
    return s[:, 0] if np.ndim(model.coef_) == 1 else s
