"""Tests of randfeat.StructuredOrthogonalFeatures (SORF, Yu et al. 2016 §4): the fused kernel
against an explicit-matrix reference, structure, threads, dtypes, errors, and the bias of
Yu et al.'s Theorem 3.

Statistical tests draw from ``global_random_seed`` (default 42; all of 0-99 with
``RANDFEAT_TESTS_SEEDS=all``).  Replicates are the independent blocks of ONE fit (independent
D1, D2, D3 per block), so per-block estimates are iid; a z-check fails at |z| > 5 (two-sided
5.7e-7 per comparison, at most 3 comparisons per test).
"""

import math

import numpy as np
import pytest
import scipy.linalg
from scipy import stats

from randfeat import StructuredOrthogonalFeatures
from randfeat.kernels import GaussianKernel

Z_FAIL = 5.0


def _reference_W(est):
    d = est.d_padded_
    Hn = scipy.linalg.hadamard(d).astype(np.float64) / math.sqrt(d)
    blocks = []
    for b in range(est.n_blocks_):
        D1, D2, D3 = (np.diag(est.signs_[b, i].astype(np.float64)) for i in range(3))
        blocks.append(math.sqrt(d) / est.sigma * Hn @ D1 @ Hn @ D2 @ Hn @ D3)
    return np.vstack(blocks)[:est.n_freq_]


def _pad(X, d):
    Xp = np.zeros((X.shape[0], d))
    Xp[:, :X.shape[1]] = X
    return Xp


@pytest.mark.parametrize("d_in,n_components,features", [(1, 6, "paired"), (5, 16, "paired"),
                                                        (16, 33, "phase"), (20, 200, "paired"),
                                                        (100, 64, "phase")])
def test_matches_explicit_matrix(d_in, n_components, features, global_dtype):
    X = np.random.default_rng(0).normal(size=(9, d_in)).astype(global_dtype)
    est = StructuredOrthogonalFeatures(n_components, sigma=1.7, features=features,
                                       random_state=2).fit(X)
    W = _reference_W(est)
    P = _pad(X.astype(np.float64), est.d_padded_) @ W.T
    tol = dict(rtol=2e-5, atol=2e-5) if global_dtype == np.float32 else dict(rtol=1e-12,
                                                                              atol=1e-12)
    np.testing.assert_allclose(est._project(X), P, **tol)
    n = est.n_freq_
    if features == "paired":
        ref = np.hstack([np.cos(P), np.sin(P)]) / math.sqrt(n)
    else:
        ref = math.sqrt(2.0 / n) * np.cos(P + est.offsets_.astype(np.float64))
    Z = est.transform(X)
    assert Z.shape == (9, n_components) and Z.dtype == global_dtype
    np.testing.assert_allclose(Z, ref, **tol)


@pytest.mark.parametrize("d_in", [3, 16, 40])
def test_rows_orthogonal_of_length_sqrt_d_over_sigma(d_in):
    est = StructuredOrthogonalFeatures(4 * 64, sigma=0.5, random_state=0).fit(np.zeros((1, d_in)))
    W = _reference_W(est)
    d = est.d_padded_
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), math.sqrt(d) / 0.5, rtol=1e-12)
    Wb = W[:d]
    np.testing.assert_allclose(Wb @ Wb.T, np.eye(d) * d / 0.25, atol=1e-9)


def test_attributes_and_memory():
    est = StructuredOrthogonalFeatures(2 * 3000, random_state=0).fit(np.zeros((2, 1000)))
    assert est.d_padded_ == 1024 and est.n_freq_ == 3000 and est.n_blocks_ == 3
    assert est.signs_.shape == (3, 3, 1024) and est.signs_.dtype == np.int8
    assert set(np.unique(est.signs_)) == {-1, 1}
    assert est.parameter_nbytes_ == 3 * 3 * 1024          # O(n): 3 bytes per row
    ph = StructuredOrthogonalFeatures(3000, features="phase", random_state=0).fit(np.zeros((2, 8)))
    assert ph.offsets_.shape == (3000,)


def _rademacher_p(signs):
    """Two-sided binomial p-value of the count of -1 in each of the three sign diagonals
    (all blocks pooled): Rademacher signs give Binomial(n, 1/2)."""
    ps = []
    for i in range(3):
        v = np.asarray(signs)[:, i, :].ravel()
        assert set(np.unique(v)) <= {-1, 1}
        ps.append(stats.binomtest(int(np.sum(v < 0)), v.size, 0.5).pvalue)
    return ps


def test_sign_diagonals_are_rademacher(global_random_seed):
    """Each of D_1, D_2, D_3 is a Rademacher diagonal: binomial test of its count of -1 over
    the blocks of a 4096-wide map (d = 16: 128 blocks, 2048 signs per diagonal), p < 1e-6 fails
    (3 comparisons: false alarm < 3e-6).  A diagonal left at I (a dropped D_i, which the
    statistical ``sorf`` check cannot see, tests/test_mutants.py) gives p = 0; a diagonal
    biased to P(-1) = 0.4 gives p ~ 1e-19."""
    X = np.zeros((1, 16))
    est = StructuredOrthogonalFeatures(4096, random_state=global_random_seed).fit(X)
    assert est.signs_.shape == (128, 3, 16)
    assert min(_rademacher_p(est.signs_)) > 1e-6
    bad = est.signs_.copy()
    bad[:, 0, :] = 1
    assert min(_rademacher_p(bad)) < 1e-6


@pytest.mark.parametrize("features", ["paired", "phase"])
def test_identical_for_any_n_threads(features, global_dtype):
    X = np.random.default_rng(1).normal(size=(301, 30)).astype(global_dtype)
    outs = [StructuredOrthogonalFeatures(1000, features=features, random_state=0,
                                         n_threads=t).fit_transform(X) for t in (1, 2, 3, None)]
    for Z in outs[1:]:
        np.testing.assert_array_equal(Z, outs[0])
    # one row at a time gives the same rows
    est = StructuredOrthogonalFeatures(1000, features=features, random_state=0).fit(X)
    np.testing.assert_array_equal(est.transform(X[7:8]), outs[0][7:8])


def test_float32_and_float64_share_the_random_stream():
    X = np.random.default_rng(1).normal(size=(10, 8))
    a = StructuredOrthogonalFeatures(64, random_state=4).fit(X)
    b = StructuredOrthogonalFeatures(64, random_state=4).fit(X.astype(np.float32))
    np.testing.assert_array_equal(a.signs_, b.signs_)
    np.testing.assert_allclose(a.transform(X), b.transform(X.astype(np.float32)), atol=1e-5)
    # a float64 fit applied to float32 input keeps float32
    assert a.transform(X.astype(np.float32)).dtype == np.float32


def test_random_state_kinds():
    X = np.zeros((2, 8))
    a = StructuredOrthogonalFeatures(16, random_state=3).fit(X).signs_
    b = StructuredOrthogonalFeatures(16, random_state=np.random.default_rng(3)).fit(X).signs_
    c = StructuredOrthogonalFeatures(16, random_state=np.random.SeedSequence(3)).fit(X).signs_
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, StructuredOrthogonalFeatures(16, random_state=9).fit(X).signs_)


def test_input_not_modified():
    X = np.random.default_rng(0).normal(size=(4, 5))
    Xc = X.copy()
    X.flags.writeable = False
    StructuredOrthogonalFeatures(16, random_state=0).fit_transform(X)
    np.testing.assert_array_equal(X, Xc)
    Xf = np.asfortranarray(Xc)
    np.testing.assert_array_equal(
        StructuredOrthogonalFeatures(16, random_state=0).fit_transform(Xf),
        StructuredOrthogonalFeatures(16, random_state=0).fit_transform(Xc))


def test_errors():
    X = np.zeros((3, 4))
    with pytest.raises(ValueError, match="sigma"):
        StructuredOrthogonalFeatures(8, sigma=0.0).fit(X)
    with pytest.raises(ValueError, match="sigma"):
        StructuredOrthogonalFeatures(8, sigma=float("inf")).fit(X)
    with pytest.raises(ValueError, match="sigma"):
        StructuredOrthogonalFeatures(8, sigma="mean").fit(X)
    with pytest.raises(ValueError, match="features"):
        StructuredOrthogonalFeatures(8, features="cos").fit(X)
    with pytest.raises(ValueError, match="n_threads"):
        StructuredOrthogonalFeatures(8, n_threads=0).fit(X)
    est = StructuredOrthogonalFeatures(8, random_state=0).fit(X)
    with pytest.raises(ValueError, match="4 features"):
        est.transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.transform(np.array([[0.0, np.nan, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="overflowed"):
        est.transform(np.full((1, 4), 3e38, dtype=np.float32))
    with pytest.raises(ValueError):
        est.transform(np.zeros((0, 4)))
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        StructuredOrthogonalFeatures(8).transform(X)


def test_compiled_kernel_guards():
    """One entry point per output (no mode integer); inconsistent shapes, a bad log_d or thread
    count are clear errors; the kernel allocates its own per-thread scratch (no argument)."""
    from randfeat._lib import _sorf
    X = np.zeros((2, 4))
    signs = np.ones((1, 3, 4), dtype=np.int8)
    out = np.empty((2, 8))
    with pytest.raises(ValueError, match="inconsistent parameter"):
        _sorf.transform_paired(X, np.ones((1, 2, 4), dtype=np.int8), out, 2, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="even number"):
        _sorf.transform_paired(X, signs, np.empty((2, 7)), 2, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="inconsistent parameter"):   # 2 n_freq = 10 > 2 d
        _sorf.transform_paired(X, signs, np.empty((2, 10)), 2, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="offsets"):
        _sorf.transform_phase(X, signs, np.zeros(3), np.empty((2, 4)), 2, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="rows"):
        _sorf.project(X, signs, np.empty((3, 4)), 2, 1.0, 1)
    with pytest.raises(ValueError, match="log_d"):
        _sorf.transform_paired(X, signs, out, 31, 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="n_threads"):
        _sorf.transform_paired(X, signs, out, 2, 1.0, 1.0, 40000)
    # the three entry points agree: paired = mult [cos p, sin p], phase = mult cos(p + b)
    rng = np.random.default_rng(0)
    Xr, sg = rng.standard_normal((5, 4)), rng.choice([-1, 1], size=(1, 3, 4)).astype(np.int8)
    p, pa, ph = np.empty((5, 4)), np.empty((5, 8)), np.empty((5, 4))
    b = rng.uniform(0, 2 * np.pi, 4)
    _sorf.project(Xr, sg, p, 2, 0.25, 2)
    _sorf.transform_paired(Xr, sg, pa, 2, 0.25, 0.5, 2)
    _sorf.transform_phase(Xr, sg, b, ph, 2, 0.25, 0.5, 2)
    np.testing.assert_allclose(pa, 0.5 * np.hstack([np.cos(p), np.sin(p)]), atol=1e-15)
    np.testing.assert_allclose(ph, 0.5 * np.cos(p + b), atol=1e-15)


@pytest.mark.parametrize("d", [16, 256])
def test_bias_within_theorem_3(d, global_random_seed):
    """Yu et al. Thm 3: |E k-hat - k| <= 6 z / sqrt(d).  The measured bias (2000 blocks, 3
    distances) must not exceed the bound by more than 5 standard errors; and SORF without its
    sqrt(d) factor (unit-length rows, a plausible bug) must be rejected at d = 256, z = 2, where
    the bound (0.75) is below its bias (~0.86)."""
    rng = np.random.default_rng(global_random_seed)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    z = np.array([0.5, 1.0, 2.0])
    R = 2000
    est = StructuredOrthogonalFeatures(R * d, features="phase",
                                       random_state=global_random_seed).fit(np.zeros((1, d)))
    P = est._project(z[:, None] * u[None, :])                 # (3, R d), sigma = 1
    k = np.exp(-z**2 / 2)

    def excess(P):
        blk = np.cos(P).reshape(3, R, d).mean(axis=2)
        bias = blk.mean(axis=1) - k
        se = blk.std(axis=1, ddof=1) / math.sqrt(R)
        return (np.abs(bias) - 6 * z / math.sqrt(d)) / se

    assert np.all(excess(P) < Z_FAIL)
    if d == 256:
        assert excess(P / math.sqrt(d))[2] > Z_FAIL


def test_approximates_the_gaussian_kernel():
    X = np.random.default_rng(3).normal(size=(20, 30))
    Z = StructuredOrthogonalFeatures(2 * 16384, sigma=5.0, random_state=0).fit_transform(X)
    assert np.abs(Z @ Z.T - GaussianKernel(5.0)(X)).max() < 0.05


def test_odd_paired_width_and_sigma_rules():
    """An odd paired width D = 2m - 1: the first m - 1 pairs, then the phase-shifted feature of
    the last frequency (the convention of RandomFourierFeatures and Fastfood), checked against
    the explicit projections; sigma=None is 1.0 and "scale"/"median" use the data rule."""
    from randfeat._base import data_sigma

    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 5))
    est = StructuredOrthogonalFeatures(11, random_state=2).fit(X)
    Z = est.transform(X)
    assert Z.shape == (6, 11) and est.n_freq_ == 6 and est.offsets_.shape == (1,)
    P = est._project(X)                                        # (6, 6) projections W x
    s = math.sqrt(2.0 / 11)
    np.testing.assert_allclose(Z[:, :5], s * np.cos(P[:, :5]), atol=1e-12)
    np.testing.assert_allclose(Z[:, 5:10], s * np.sin(P[:, :5]), atol=1e-12)
    np.testing.assert_allclose(Z[:, 10], s * np.cos(P[:, 5] + est.offsets_[0]), atol=1e-12)
    np.testing.assert_array_equal(
        StructuredOrthogonalFeatures(8, sigma=None, random_state=0).fit_transform(X),
        StructuredOrthogonalFeatures(8, sigma=1.0, random_state=0).fit_transform(X))
    for rule in ("scale", "median"):
        e = StructuredOrthogonalFeatures(8, sigma=rule, random_state=0).fit(X)
        assert e.sigma_ == pytest.approx(data_sigma(rule, X))
        np.testing.assert_array_equal(
            e.transform(X), StructuredOrthogonalFeatures(8, sigma=e.sigma_, random_state=0)
            .fit_transform(X))


def test_fitted_arrays_read_only_and_refit_is_atomic():
    X = np.random.default_rng(0).normal(size=(4, 8))
    est = StructuredOrthogonalFeatures(9, features="phase", random_state=0).fit(X)
    assert not est.signs_.flags.writeable and not est.offsets_.flags.writeable
    with pytest.raises(ValueError):
        est.signs_[0, 0, 0] = 1
    before = est.transform(X)
    with pytest.raises(ValueError, match="sigma"):
        est.set_params(sigma=float("nan")).fit(X)
    est.set_params(sigma=None)   # back to the fitted (default) value
    np.testing.assert_array_equal(est.transform(X), before)   # the failed fit left it whole
    est.set_params(features="paired")
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError, match="changed after fit"):
        est.transform(X)
