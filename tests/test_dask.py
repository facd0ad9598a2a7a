"""Tests of randfeat.dask on a real ``distributed.LocalCluster`` (two worker processes, one thread
each), closed at the end of the module.

Deterministic algebra only: the dask transform is compared bit for bit with the same canonical
tiles in memory, and the dask ridge with the in-memory ridge on the same data, within a round-off
bound (no statistical claim, so no false-alarm rate: every seed 0-99 must pass).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

da = pytest.importorskip("dask.array", reason="randfeat's dask support needs the optional extra "
                         "randfeat[dask] (dask[array] and distributed)")
distributed = pytest.importorskip("distributed", reason="randfeat's dask support needs the "
                                  "optional extra randfeat[dask] (dask[array] and distributed)")
import dask  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from randfeat import Fastfood, RandomBinningFeatures, RandomFourierFeatures  # noqa: E402
from randfeat import dask as rdask  # noqa: E402
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier  # noqa: E402
from randfeat.sorf import StructuredOrthogonalFeatures  # noqa: E402

T = rdask.TILE_ROWS
EPS = np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def client():
    """Two worker processes with one thread each; closed (cluster and client) at the end."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", memory_limit="1GiB")
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _data(seed, n=5000, d=5, k=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal((d,) if k is None else (d, k))
    y = np.sin(X) @ w + 0.1 * rng.standard_normal((n,) if k is None else (n, k))
    return X, y


def _assert_identical(A, B):
    """Same values bit for bit (sparse: same type, same stored pattern and values)."""
    assert sp.issparse(A) == sp.issparse(B)
    if sp.issparse(A):
        A, B = A.tocsr(), B.tocsr()
        A.sort_indices()
        B.sort_indices()
        assert A.shape == B.shape
        np.testing.assert_array_equal(A.indptr, B.indptr)
        np.testing.assert_array_equal(A.indices, B.indices)
        np.testing.assert_array_equal(A.data, B.data)
    else:
        np.testing.assert_array_equal(A, B)


MAPS = {
    "rff": lambda s: RandomFourierFeatures(64, sigma=1.5, random_state=s),
    "rff_paired": lambda s: RandomFourierFeatures(64, sigma=1.5, features="paired",
                                                  random_state=s),
    "rff_orthogonal": lambda s: RandomFourierFeatures(64, sigma=1.5, sampling="orthogonal",
                                                      random_state=s),
    "fastfood": lambda s: Fastfood(64, sigma=1.5, random_state=s),
    "sorf": lambda s: StructuredOrthogonalFeatures(64, sigma=1.5, random_state=s),
    "binning": lambda s: RandomBinningFeatures(8, random_state=s),
    "binning_hashed": lambda s: RandomBinningFeatures(8, hash_size=512, random_state=s),
}
CHUNKINGS = [5000, (1000, 3000, 1000), 777, (1, 4095, 2, 902)]


# ----------------------------------------------------------------------------- transform
@pytest.mark.parametrize("name", sorted(MAPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transform_lazy_declared_and_bit_identical(client, global_random_seed, name, dtype):
    X = _data(global_random_seed)[0].astype(dtype)
    est_mem = MAPS[name](global_random_seed).fit(X)
    Zmem = est_mem.transform(X)
    ref = rdask.tiled_transform(est_mem, X)
    est = MAPS[name](global_random_seed).fit(da.from_array(X, chunks=(1000, -1)))
    assert est.n_features_in_ == est_mem.n_features_in_
    sl = slice(1234, 4321)
    lazy = []
    for chunks in CHUNKINGS:
        Xd = da.from_array(X, chunks=(chunks, -1))
        Z = est.transform(Xd)
        assert isinstance(Z, da.Array)
        assert Z.shape == Zmem.shape and Z.dtype == Zmem.dtype
        assert Z.chunks[0] == Xd.chunks[0] and Z.chunks[1] == (Zmem.shape[1],)
        assert sp.issparse(Z._meta) == sp.issparse(Zmem)
        lazy += [Z, Z[sl]]
    got = dask.compute(*lazy)  # on the cluster, all chunkings at once
    for Zc, Zs in zip(got[::2], got[1::2], strict=True):
        assert type(Zc) is type(Zmem) and Zc.dtype == Zmem.dtype
        _assert_identical(Zc, ref)  # bit for bit, every chunking
        _assert_identical(Zs, ref[sl])
    if name.startswith("rff"):  # BLAS: a few ulps from the one-call in-memory transform
        np.testing.assert_allclose(got[0], Zmem, rtol=0, atol=64 * EPS)
    else:  # row-wise kernels: the in-memory transform itself, bit for bit
        _assert_identical(got[0], Zmem)


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(1, 2999), min_size=0, max_size=6, unique=True))
def test_transform_any_chunking_hypothesis(cuts):
    """Random chunkings (Hypothesis varies the cut points; the map's seed is fixed)."""
    n = 3000
    X = np.random.default_rng(7).standard_normal((n, 3))
    est = RandomFourierFeatures(32, random_state=1).fit(X)
    bounds = [0, *sorted(cuts), n]
    chunks = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    Z = est.transform(da.from_array(X, chunks=(chunks, -1)))
    got = Z.compute(scheduler="sync")
    np.testing.assert_array_equal(got, rdask.tiled_transform(est, X))


def test_fit_reads_no_data(client):
    """RFF, Fastfood and hashed binning fit from shape and dtype: a block that fails when computed
    is never computed; exact binning takes its documented pass and so meets it."""
    def boom(b):
        raise RuntimeError("computed")

    X = da.zeros((4000, 3), chunks=(1000, 3)).map_blocks(boom, dtype=np.float64)
    for est in (RandomFourierFeatures(16, random_state=0), Fastfood(16, random_state=0),
                RandomBinningFeatures(4, hash_size=64, random_state=0)):
        est.fit(X)
        assert est.n_features_in_ == 3
        for v in vars(est).values():
            assert not isinstance(v, da.Array)
    with pytest.raises(RuntimeError, match="computed"):
        RandomBinningFeatures(4, random_state=0).fit(X)


@pytest.mark.parametrize("random_state", [0, None, "instance"])
def test_exact_binning_map_equals_in_memory_fit(client, global_random_seed, random_state):
    X = _data(global_random_seed, n=3000)[0]
    X[::7] = np.round(X[::7], 1)  # repeated cells across blocks
    if random_state == "instance":
        a = RandomBinningFeatures(6, random_state=np.random.RandomState(global_random_seed))
        b = RandomBinningFeatures(6, random_state=np.random.RandomState(global_random_seed))
    elif random_state is None:
        a = RandomBinningFeatures(6, random_state=None)
        b = None
    else:
        a = RandomBinningFeatures(6, random_state=global_random_seed)
        b = RandomBinningFeatures(6, random_state=global_random_seed)
    a.fit(da.from_array(X, chunks=(701, -1)))
    if b is None:  # a fresh seed, kept in random_state (documented): the in-memory fit with it
        assert isinstance(a.random_state, np.random.SeedSequence)
        b = RandomBinningFeatures(6, random_state=a.random_state)
    b.fit(X)
    assert a.n_columns_ == b.n_columns_
    np.testing.assert_array_equal(a.widths_, b.widths_)
    Xt = _data(global_random_seed + 1, n=2500)[0]
    _assert_identical(a.transform(da.from_array(Xt, chunks=(600, -1))).compute(),
                      b.transform(Xt))


# ----------------------------------------------------------------------------- ridge
def _kappa_bound(model, X):
    """100 eps kappa: the stated tolerance of ||w_dask - w|| / ||w|| (module docstring)."""
    Z = model.features_.transform(X) if model.features_ is not None else X
    Z = np.asarray(Z, dtype=np.float64)
    Zc = Z - Z.mean(axis=0)
    A = Zc.T @ Zc
    A[np.diag_indices_from(A)] += model._penalty([model.alpha_], len(Z))[0]  # alpha_scale
    return 100 * EPS * np.linalg.cond(A)


def _within(a, b, bound):
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return np.linalg.norm(a - b) <= bound * np.linalg.norm(b)


def _intercept_within(dk, mem, X, bound):
    """|b_dask - b| <= 100 eps kappa (|b| + ||mean z|| ||w||): b = mean y - mean z . w inherits
    the error of w through mean z (relative to b itself it is unbounded when b is near 0)."""
    Z = mem.features_.transform(X) if mem.features_ is not None else X
    mz = np.linalg.norm(np.asarray(Z, dtype=np.float64).mean(axis=0))
    scale = np.linalg.norm(mem.intercept_) + mz * np.linalg.norm(mem.coef_)
    return np.linalg.norm(np.subtract(dk.intercept_, mem.intercept_)) <= bound * scale


@pytest.mark.parametrize("chunks, k, dtype", [
    (5000, None, np.float64), ((1000, 3000, 1000), None, np.float64), (333, None, np.float64),
    (5000, 2, np.float64), (333, 2, np.float64),
    (4096, None, np.float32), (333, None, np.float32), ((2500, 1, 2499), 2, np.float32)])
def test_ridge_equals_in_memory_fit(client, global_random_seed, chunks, k, dtype):
    X, y = _data(global_random_seed, k=k)
    X = X.astype(dtype)  # float32: float32 features (their rounding must match in-memory too)
    feats = RandomFourierFeatures(64, sigma=1.5, random_state=global_random_seed)
    mem = RandomFeatureRidge(feats, alphas=1e-3).fit(X, y)
    Xd = da.from_array(X, chunks=(chunks, -1))
    dk = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y if k else da.from_array(y, chunks=700))
    bound = _kappa_bound(mem, X)
    assert bound < 1e-8  # a meaningful bound on this well-conditioned problem
    assert _within(dk.coef_, mem.coef_, bound)
    assert _intercept_within(dk, mem, X, bound)
    assert isinstance(dk.coef_, np.ndarray) and dk.coef_.shape == mem.coef_.shape
    assert dk.n_features_out_ == 64 and dk.solver_ == "cholesky" and dk.alpha_ == mem.alpha_
    pred = dk.predict(Xd)
    assert isinstance(pred, da.Array) and pred.shape == mem.predict(X).shape
    np.testing.assert_allclose(pred.compute(), mem.predict(X), rtol=0, atol=1e-9)


def test_tolerance_check_can_fail(client, global_random_seed):
    """The comparison above detects a fit that lost one block's statistics (a broken reduction)."""
    X, y = _data(global_random_seed)
    feats = RandomFourierFeatures(64, sigma=1.5, random_state=global_random_seed)
    mem = RandomFeatureRidge(feats, alphas=1e-3).fit(X, y)
    broken = RandomFeatureRidge(feats, alphas=1e-3).fit(
        da.from_array(X[:4999], chunks=(1000, -1)), y[:4999])  # one row missing
    assert not _within(broken.coef_, mem.coef_, _kappa_bound(mem, X))


def test_ridge_recovers_from_a_failed_in_place_solve(client, fail_first_dpotrf):
    """The final solve factorises the reduced Gram in place; if that fails (simulated: the first
    dpotrf reports a non-positive pivot) the statistics are reduced again over all rows and
    solved on a copy: the same model as a fit where nothing failed."""
    X, y = _data(0, n=3000)
    feats = RandomFourierFeatures(48, sigma=1.5, random_state=0)
    Xd = da.from_array(X, chunks=(1000, -1))
    ref = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y)
    calls = fail_first_dpotrf()
    m = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y)
    assert len(calls) == 2 and m.solver_ == "cholesky"
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


@pytest.mark.parametrize("selection", ["loo", "holdout"])
def test_ridge_alpha_path_and_passthrough(client, global_random_seed, selection):
    """The alpha path on dask: the same criterion curve, alpha and model as in memory (the
    leave-one-out's second pass featurises the in-memory fit's chunks, as the hold-out's
    validation pass)."""
    X, y = _data(global_random_seed)
    kw = dict(alphas=np.logspace(-6, 0, 7), random_state=global_random_seed,
              selection=selection)
    feats = Fastfood(64, sigma=1.5, random_state=global_random_seed)
    mem = RandomFeatureRidge(feats, **kw).fit(X, y)
    for chunks, dtype in ((5000, np.float64), (900, np.float64), (1234, np.float32)):
        if dtype is np.float32:
            X = X.astype(np.float32)
            mem = RandomFeatureRidge(feats, **kw).fit(X, y)
        dk = RandomFeatureRidge(feats, **kw).fit(da.from_array(X, chunks=(chunks, -1)), y)
        assert dk.alpha_ == mem.alpha_
        np.testing.assert_allclose(dk.selection_curve_, mem.selection_curve_, rtol=1e-9)
        assert _within(dk.coef_, mem.coef_, _kappa_bound(mem, X))
    p_mem = RandomFeatureRidge(alphas=0.01).fit(X, y)
    p_dk = RandomFeatureRidge(alphas=0.01).fit(da.from_array(X, chunks=(700, -1)), y)
    assert _within(p_dk.coef_, p_mem.coef_, _kappa_bound(p_mem, X))


def test_ridge_gcv_evidence_and_the_posterior_on_dask(client):
    """GCV and the evidence come from the tree-reduced statistics alone (one pass): the same
    curves and alpha as in memory; the regressor's posterior (store_covariance) too.  What the
    dask path cannot do is refused: return_std on a dask array, partial_fit of a dask array."""
    X, y = _data(5, n=3000)
    f = RandomFourierFeatures(48, sigma=1.5, random_state=0)
    Xd = da.from_array(X, chunks=(700, -1))
    for sel in ("gcv", "evidence"):
        kw = dict(alphas=np.logspace(-4, 2, 7), selection=sel, store_covariance=True)
        mem = RandomFeatureRidge(f, **kw).fit(X, y)
        dk = RandomFeatureRidge(f, **kw).fit(Xd, y)
        np.testing.assert_allclose(dk.selection_curve_, mem.selection_curve_, rtol=1e-9)
        assert dk.alpha_ == pytest.approx(mem.alpha_, rel=1e-6)
        np.testing.assert_allclose(dk.noise_variance_, mem.noise_variance_, rtol=1e-6)
        np.testing.assert_allclose(dk.predict(X[:4], return_std=True)[1],
                                   mem.predict(X[:4], return_std=True)[1], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="return_std=True is not available"):
        dk.predict(Xd, return_std=True)
    with pytest.raises(NotImplementedError, match="partial_fit does not take a dask array"):
        RandomFeatureRidge(f).partial_fit(Xd, y)
    with pytest.raises(NotImplementedError, match="sample_y does not take a dask array"):
        dk.sample_y(Xd)


def test_fixed_chunking_is_bit_identical_across_schedulers(client):
    X, y = _data(3)
    Xd = da.from_array(X, chunks=(700, -1))
    feats = RandomFourierFeatures(64, sigma=1.5, random_state=0)
    a = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y)  # the client (two processes)
    b = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y)
    with dask.config.set(scheduler="sync"):
        c = RandomFeatureRidge(feats, alphas=1e-3).fit(Xd, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    assert a.intercept_ == c.intercept_


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_equals_in_memory_fit(client, global_random_seed, n_classes):
    X, _ = _data(global_random_seed)
    labels = np.array(["a", "b", "c"])[:n_classes]
    y = labels[np.digitize(X[:, 0] + 0.5 * X[:, 1],
                           np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))]
    feats = RandomFourierFeatures(64, sigma=1.5, random_state=global_random_seed)
    kw = dict(alphas=np.logspace(-5, -1, 3), random_state=0)
    mem = RandomFeatureRidgeClassifier(feats, **kw).fit(X, y)
    Xd = da.from_array(X, chunks=(1100, -1))
    dk = RandomFeatureRidgeClassifier(feats, **kw).fit(Xd, da.from_array(y, chunks=900))
    np.testing.assert_array_equal(dk.classes_, mem.classes_)
    assert dk.alpha_ == mem.alpha_
    assert _within(dk.coef_, mem.coef_, _kappa_bound(mem, X))
    np.testing.assert_allclose(dk.decision_function(Xd).compute(), mem.decision_function(X),
                               rtol=0, atol=1e-9)
    np.testing.assert_array_equal(dk.predict(Xd).compute(), mem.predict(X))


def test_tree_reduction_associative_and_exact_counts(global_random_seed):
    """The reduction's merge: any grouping gives the same statistics up to the rounding of the
    float64 sums; counts are exact; no part is modified."""
    from randfeat.linear import RidgeStatistics

    rng = np.random.default_rng(global_random_seed)
    parts = []
    for n in (40, 75, 130, 1):
        st = RidgeStatistics().partial_fit(rng.standard_normal((n, 6)), rng.standard_normal(n))
        parts.append((st, rng.standard_normal(3)))
    before = [p[0].copy() for p in parts]
    flat = rdask._merge_all(*parts)
    nested = rdask._merge_all(parts[0], rdask._merge_all(*parts[1:3]), parts[3])
    lazy = dask.compute(rdask.tree_reduce([dask.delayed(p) for p in parts], split_every=2),
                        scheduler="sync")[0]
    # summing 4 parts in any order rounds by at most 3 eps times the sum of their magnitudes
    # (entrywise; relative to the result itself it is unbounded under cancellation)
    for got in (nested, lazy):
        assert got[0].n_samples_ == flat[0].n_samples_ == 246
        for f in RidgeStatistics._FIELDS:
            u, v = getattr(got[0], f), getattr(flat[0], f)
            mag = sum(np.abs(getattr(p[0], f)) for p in parts)
            assert np.all(np.abs(u - v) <= 6 * EPS * mag), f
        mag = sum(np.abs(p[1]) for p in parts)
        assert np.all(np.abs(got[1] - flat[1]) <= 6 * EPS * mag)
    for p, b in zip(parts, before, strict=True):
        np.testing.assert_array_equal(p[0].gram_, b.gram_)


# ----------------------------------------------------------------------------- bad input
def test_unknown_row_chunks_and_split_features():
    X = da.from_array(np.ones((100, 4)), chunks=(30, 4))
    unknown = X[X[:, 0] > 0]
    est = RandomFourierFeatures(8, random_state=0)
    with pytest.raises(ValueError, match=r"unknown chunk sizes.*compute_chunk_sizes"):
        est.fit(unknown)
    with pytest.raises(ValueError, match=r"unknown chunk sizes"):
        RandomFeatureRidge(est).fit(unknown, np.ones(100))
    split = X.rechunk((30, 2))
    with pytest.raises(ValueError, match=r"2 chunks along the features.*rechunk"):
        est.fit(split)
    est.fit(X)
    with pytest.raises(ValueError, match=r"2 chunks along the features"):
        est.transform(split)
    with pytest.raises(ValueError, match=r"has 3 features.*fitted with 4"):
        est.transform(X[:, :3])
    with pytest.raises(ValueError, match="0 rows"):
        est.transform(X[:0])
    with pytest.raises(NotFittedError):
        RandomFourierFeatures(8).transform(X)


@pytest.mark.parametrize("dtype", [np.complex128, "U3", object])
def test_rejected_dtype(dtype):
    X = da.from_array(np.ones((10, 3)).astype(dtype), chunks=(5, 3))
    for est in (RandomFourierFeatures(8, random_state=0), Fastfood(8, random_state=0),
                RandomBinningFeatures(4, random_state=0)):
        with pytest.raises(TypeError, match=r"X has dtype .*astype\(np.float64\)"):
            est.fit(X)
        fitted = clone(est).fit(np.ones((10, 3)))
        with pytest.raises(TypeError, match=r"X has dtype"):
            fitted.transform(X)
    with pytest.raises(TypeError, match=r"X has dtype"):
        RandomFeatureRidge(RandomFourierFeatures(8, random_state=0)).fit(X, np.ones(10))


def _nan_in_block(n=4000, chunk=1000, block=2):
    X, y = _data(0, n=n)
    X[block * chunk + 17, 1] = np.nan
    return X, y, da.from_array(X, chunks=(chunk, -1))


def test_nan_in_later_block_transform_names_block(client):
    X, y, Xd = _nan_in_block()
    est = RandomFourierFeatures(16, random_state=0).fit(Xd)  # nothing computed: no error yet
    Z = est.transform(Xd)
    clean = np.concatenate([Z[:2000].compute(), Z[3000:].compute()])  # share tiles with row 2017
    np.testing.assert_array_equal(clean, np.delete(rdask.tiled_transform(
        est, np.nan_to_num(X)), np.s_[2000:3000], axis=0))
    with pytest.raises(ValueError, match=r"block 2 of 4 \(rows 2000:3000\).*NaN or infinity "
                       r"\(first in row 2017 of X\)"):
        Z.compute()
    assert np.isnan(X[2017, 1])


@pytest.mark.parametrize("cls", [RandomFeatureRidge, RandomFeatureRidgeClassifier])
def test_nan_in_later_block_fit_leaves_no_partial_model(client, cls):
    X, y, Xd = _nan_in_block()
    if cls is RandomFeatureRidgeClassifier:
        y = (y > 0).astype(int)
    feats = RandomFourierFeatures(16, random_state=0)
    fresh = cls(feats, alphas=1e-3)
    with pytest.raises(ValueError, match=r"block 2 of 4 \(rows 2000:3000\).*NaN"):
        fresh.fit(Xd, y)
    assert not [k for k in vars(fresh) if k.endswith("_") and not k.startswith("__")]
    with pytest.raises(NotFittedError):
        fresh.predict(X[:5])
    good = cls(feats, alphas=1e-3).fit(X[:2000], y[:2000])
    before = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in vars(good).items()}
    with pytest.raises(ValueError, match=r"block 2 of 4"):
        good.fit(Xd, y)
    for k, v in before.items():  # the previous model is kept whole
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(getattr(good, k), v)
        else:
            assert getattr(good, k) is v or getattr(good, k) == v
    yn = np.array(y, dtype=float)
    yn[3500] = np.nan
    with pytest.raises(ValueError, match=r"block 3 of 4 \(rows 3000:4000\).*y contains NaN"):
        RandomFeatureRidge(feats, alphas=1e-3).fit(da.from_array(X[:, :], chunks=(1000, -1))
                                                   .map_blocks(np.nan_to_num), yn)
    assert math.isnan(yn[3500])  # inputs are not modified


def test_ridge_rejects_sparse_features_and_non_randfeat_maps():
    from sklearn.preprocessing import StandardScaler

    Xd = da.from_array(np.random.default_rng(0).standard_normal((200, 3)), chunks=(50, 3))
    with pytest.raises(NotImplementedError, match="sparse features"):
        RandomFeatureRidge(RandomBinningFeatures(4, random_state=0)).fit(Xd, np.ones(200))
    with pytest.raises(TypeError, match="randfeat transformer"):
        RandomFeatureRidge(StandardScaler()).fit(Xd, np.ones(200))
    with pytest.raises(ValueError, match="solver='lsqr' needs the whole feature matrix"):
        RandomFeatureRidge(RandomFourierFeatures(8, random_state=0), solver="lsqr").fit(
            Xd, np.ones(200))
    with pytest.raises(ValueError, match="200 rows but y has 199"):
        RandomFeatureRidge(RandomFourierFeatures(8, random_state=0)).fit(Xd, np.ones(199))


@pytest.mark.parametrize("chunks", [(4096, 0), (2048, 0, 2048, 0), (0, 4096),
                                    (1000, 0, 3096, 0), (2048, 0, 0, 2048)])
def test_empty_blocks_anywhere(client, chunks):
    """Empty blocks (what boolean filtering leaves), also at a multiple of TILE_ROWS and at the
    end: transform equals the in-memory tiles for every map (the output keeps the non-empty
    row chunks of X; dask's concatenation drops the empty ones), the ridge fit equals the fit on
    the same array without them, predict too (randfeat 0.1: a raw IndexError while the graph
    was built)."""
    X, y = _data(0, n=4096, d=3)
    Xd = da.from_array(X, chunks=(chunks, -1))
    assert Xd.chunks[0] == chunks
    full = tuple(c for c in chunks if c)
    for name, make in MAPS.items():
        est = make(0).fit(X)
        Z = est.transform(Xd)
        assert Z.chunks[0] == full, name
        _assert_identical(Z.compute(), rdask.tiled_transform(est, X))
    feats = RandomFourierFeatures(32, sigma=1.5, random_state=0)
    # float64 statistics: the float32 ones ("auto" picks them here) depend on the chunking
    ref = RandomFeatureRidge(feats, alphas=[0.1, 1.0], random_state=0, gram_dtype="float64").fit(
        da.from_array(X, chunks=(1024, -1)), y)
    m = RandomFeatureRidge(feats, alphas=[0.1, 1.0], random_state=0,
                           gram_dtype="float64").fit(Xd, y)
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    P = m.predict(Xd)
    assert P.chunks[0] == full
    np.testing.assert_allclose(P.compute(), m.predict(X), rtol=1e-12, atol=1e-12)
    b = RandomBinningFeatures(8, random_state=0).fit(Xd)   # exact: one pass over the blocks
    _assert_identical(b.transform(X), RandomBinningFeatures(8, random_state=b.random_state)
                      .fit(X).transform(X))


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_classifier_with_non_finite_labels_names_block_and_row(client, bad):
    """A classifier's float labels with inf or NaN raise naming the block and the row, as the
    regressor does (randfeat 0.1: scikit-learn's generic message)."""
    X, y = _data(0, n=3000)
    yc = (y > 0).astype(float)
    yc[2345] = bad
    Xd = da.from_array(X, chunks=(1000, -1))
    clf = RandomFeatureRidgeClassifier(RandomFourierFeatures(16, random_state=0), alphas=1.0)
    with pytest.raises(ValueError, match=r"block 2 of 3 \(rows 2000:3000\).*y contains NaN "
                                         r"or infinity \(first in row 2345 of y"):
        clf.fit(Xd, da.from_array(yc, chunks=700))
    with pytest.raises(ValueError, match=r"first in row 2345 of y"):
        clf.fit(Xd, yc)
    assert not hasattr(clf, "coef_")
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(Xd, y)                                     # continuous labels, as in memory


def test_a_new_map_inherits_the_hook():
    """A map of randfeat's base class gets the dask hook without a line of its own: transform
    is lazy and bit-identical per tile; a fit that reads the data is refused with the
    alternative named, one that reads only the shape is computed from it."""
    class ReadsData(RandomFourierFeatures):
        _dask_fit_reads_shape = False

    X = np.random.default_rng(0).standard_normal((3000, 4))
    Xd = da.from_array(X, chunks=(700, -1))
    with pytest.raises(NotImplementedError, match=r"ReadsData.fit.*in-memory sample"):
        ReadsData(8, random_state=0).fit(Xd)
    est = ReadsData(8, random_state=0).fit(X)
    Z = est.transform(Xd)
    assert isinstance(Z, da.Array)
    _assert_identical(Z.compute(scheduler="sync"), rdask.tiled_transform(est, X))
    with pytest.raises(NotImplementedError, match="estimated from the data"):
        RandomFourierFeatures(8, sigma="median").fit(Xd)


# ----------------------------------------------------------------------------- analysis runner
def _results(out):
    import json

    return {p.name: json.loads(p.read_text())["result"]
            for p in sorted((out / "cache").glob("*.json"))}


def test_analysis_on_the_cluster_equals_local_run(client, tmp_path):
    from analysis.__main__ import main

    args = ["--smoke", "--only", "lemma1", "--seed", "0-1", "--quiet", "--no-cache"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--out", str(tmp_path / "addr"),
                 "--scheduler", client.scheduler.address]) == 0
    assert main([*args, "--out", str(tmp_path / "active"), "--scheduler", "active"]) == 0
    local = _results(tmp_path / "local")
    assert len(local) == 2
    assert _results(tmp_path / "addr") == local  # same seeds, identical results
    assert _results(tmp_path / "active") == local
    assert (tmp_path / "addr" / "seed_sweep.md").exists()


def test_analysis_runner_refuses_other_code(client):
    from analysis._dask_runner import executor

    with pytest.raises(SystemExit, match=r"dask workers .* run other analysis/randfeat code"):
        with executor(client.scheduler.address, 1, "0" * 64):
            pass
