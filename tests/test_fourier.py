"""Tests of randfeat.RandomFourierFeatures.

Statistical design (THEORY.md §5).  One fit with m frequencies gives m iid per-frequency terms
(paired: cos(w'Delta); phase: 2 cos(w'x + b) cos(w'y + b)), so

* the kernel estimate z(x)'z(y) is their mean, with the EXACT variance of THEORY §2.3
  (paired (1 + k(2D) - 2k(D)^2)/D_emb, phase (1 + k(2D)/2 - k(D)^2)/D_emb at output width
  D_emb): z-test, fail at |z| > 5 (5.7e-7 per check);
* their sample variance s^2 estimates the per-feature variance V; its standard error uses the
  exact fourth central moment (derived below from k at 1, 2, 3, 4 Delta): fail at |z| > 5.

Seeds come from ``global_random_seed`` (``RANDFEAT_TESTS_SEEDS=all`` runs 0..99).  The largest
family is the unbiasedness test: 9 kernels x 2 maps x 8 pairs = 144 checks, family false alarm
< 1e-4 per seed (Bonferroni), < 0.01 over the 100-seed sweep.
"""

import math
import pickle

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from randfeat import RandomFourierFeatures
from randfeat._lib import _fourier
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
)

Z_MAX = 5.0


def _kernels(sigma):
    return [
        GaussianKernel(sigma), LaplacianKernel(sigma), CauchyKernel(sigma),
        MaternKernel(sigma, nu=0.5), MaternKernel(sigma, nu=1.5), MaternKernel(sigma, nu=2.5),
        BallSumKernel(sigma, t=1), BallSumKernel(sigma, t=2), BallSumKernel(sigma, t=3, dim=6),
    ]


KIDS = ["gauss", "lap", "cauchy", "mat05", "mat15", "mat25", "ball1", "ball2", "ball3d6"]


def _seed(seed, *tag):
    return np.random.SeedSequence([seed, *tag])


# ------------------------------------------------------------------------------------------
# shapes, dtypes, attributes
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("features, n_components, n_freq", [("paired", 10, 5), ("phase", 7, 7),
                                                            ("phase", 1, 1)])
def test_shapes_and_attributes(features, n_components, n_freq, global_dtype):
    X = np.random.default_rng(0).normal(size=(6, 4)).astype(global_dtype)
    rff = RandomFourierFeatures(n_components, features=features, random_state=0).fit(X)
    Z = rff.transform(X)
    assert Z.shape == (6, n_components) and Z.dtype == global_dtype
    assert rff.frequencies_.shape == (n_freq, 4)
    assert rff.frequencies_.dtype == global_dtype
    assert rff.n_features_in_ == 4
    assert isinstance(rff.kernel_, GaussianKernel)
    assert (rff.offsets_ is None) == (features == "paired")
    # the compatibility names are gone (randfeat 0.2): one name per array
    assert not hasattr(rff, "random_offset_") and not hasattr(rff, "random_weights_")
    if features == "phase":
        b = rff.offsets_
        assert b.shape == (n_freq,) and np.all((b >= 0) & (b < 2 * np.pi + 1e-6))
    names = rff.get_feature_names_out()
    assert len(names) == n_components and names[0] == "randomfourierfeatures0"
    assert names[-1] == f"randomfourierfeatures{n_components - 1}"


def test_matches_numpy_reference(global_dtype):
    """The fused kernel equals sqrt(2/D) [cos P, sin P] / sqrt(2/D) cos(P + b) with P = X W^T,
    to a few ulp (plus the rounding of P itself); huge arguments take the libm path (float
    arguments > 8192 the double path), element by element."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    X[3] *= 1e3     # |P| ~ 1e3..1e4: float32 double-precision path
    X[7] *= 3e5     # |P| ~ 1e6: libm path
    X = X.astype(global_dtype)
    tol = 4e-16 if global_dtype == np.float64 else 3e-7
    for features in ("paired", "phase"):
        rff = RandomFourierFeatures(600, features=features, random_state=3).fit(X)
        Z = rff.transform(X)
        W = rff.frequencies_
        P = (X @ W.T).astype(np.float64)  # the same BLAS product, then exact trig
        s = math.sqrt(2 / 600)
        if features == "paired":
            ref = s * np.hstack([np.cos(P), np.sin(P)])
        else:
            arg = P + rff.offsets_.astype(np.float64)
            if global_dtype == np.float32:  # small arguments (per element) add in float
                small = np.abs(P.astype(np.float32)) + 6.3 <= 8192
                f32 = (P.astype(np.float32) + rff.offsets_).astype(np.float64)
                arg[small] = f32[small]
            ref = s * np.cos(arg)
        # the blocked BLAS product may round P differently from numpy's by ~ulp(|P|), which
        # moves cos/sin by up to that much
        eps = np.finfo(global_dtype).eps
        Pw = np.abs(np.hstack([P, P])) if features == "paired" else np.abs(P)
        bound = tol * s * 8 + s * 4 * eps * Pw
        assert np.all(np.abs(Z - ref) <= bound), np.max(np.abs(Z - ref) / bound)


def test_paired_diagonal_is_one(global_dtype):
    X = np.random.default_rng(2).normal(size=(30, 8)).astype(global_dtype)
    Z = RandomFourierFeatures(1000, random_state=0).fit_transform(X)
    eps = np.finfo(global_dtype).eps
    np.testing.assert_allclose((Z * Z).sum(1), 1.0, atol=200 * eps)


def test_float32_and_float64_share_the_random_stream():
    X = np.random.default_rng(3).normal(size=(20, 6))
    for features in ("paired", "phase"):
        r64 = RandomFourierFeatures(64, features=features, random_state=5).fit(X)
        r32 = RandomFourierFeatures(64, features=features, random_state=5).fit(
            X.astype(np.float32))
        np.testing.assert_array_equal(r32.frequencies_,
                                      r64.frequencies_.astype(np.float32))
        Z32 = r32.transform(X.astype(np.float32))
        assert Z32.dtype == np.float32
        np.testing.assert_allclose(Z32, r64.transform(X), atol=2e-6)
        # transform in the other dtype follows the input
        assert r32.transform(X).dtype == np.float64


def _blas_config(blas):
    """The BLAS thread count a test runs under: 1 (threadpool_limits(1): the fused path) or
    None (the process's own, 2 threads on a 2-core machine: the BLAS-threaded path)."""
    from contextlib import nullcontext

    from threadpoolctl import threadpool_limits
    return nullcontext() if blas is None else threadpool_limits(limits=blas, user_api="blas")


@pytest.mark.parametrize("blas", [1, None])
@pytest.mark.parametrize("features", ["paired", "phase"])
@pytest.mark.parametrize("n, d, width", [(1201, 40, 4096), (3000, 100, 1400), (700, 600, 3000)])
def test_identical_for_any_n_threads(features, global_dtype, n, d, width, blas):
    """Large enough (n * m * (d + 16) > 2^26) for the compiled loop to cut the gemm into blocks
    (of rows or of frequencies), whose number follows n_threads when the BLAS is single-threaded
    and cut-invariant for the dtype: for a given BLAS configuration the bits are the same for
    every thread count."""
    X = np.random.default_rng(4).normal(size=(n, d)).astype(global_dtype) / np.sqrt(d)
    with _blas_config(blas):
        outs = [RandomFourierFeatures(width, features=features, random_state=11, n_threads=nt)
                .fit_transform(X) for nt in (1, 2, 3, None, -1)]
    for Z in outs[1:]:
        np.testing.assert_array_equal(Z, outs[0])


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("max_blocks", [1, 3, 8])
@pytest.mark.parametrize("n, m", [(3000, 700), (700, 3000)])
def test_kernel_identical_for_any_thread_count(max_blocks, n, m, global_dtype, fused):
    """The gemm blocks depend on the shapes and ``max_blocks`` only: any thread count (more or
    fewer threads than blocks) gives the same bits, on both paths (fused: gemm calls inside the
    parallel region, under a single-threaded BLAS; BLAS-threaded: gemm calls from the calling
    thread).  n * m * (d + 16) > 2^26: threaded path."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(n, 40)).astype(global_dtype)
    W = rng.normal(size=(m, 40)).astype(global_dtype)
    b = rng.uniform(0, 6, size=m).astype(global_dtype)
    for fn, width, args in ((_fourier.transform_paired, 2 * m, (X, W)),
                            (_fourier.transform_phase, m, (X, W, b))):
        outs = []
        with _blas_config(1 if fused else None):
            for nt in (1, 2, 5, 8):
                out = np.empty((n, width), global_dtype)
                fn(*args, out, 1.0, nt, 512, max_blocks, blas_single_threaded=fused)
                outs.append(out)
        for out in outs[1:]:
            np.testing.assert_array_equal(out, outs[0])


def test_one_thread_does_not_read_the_blas_threads(monkeypatch, global_dtype):
    """n_threads=1 takes the BLAS-threaded path with the fused path's blocks without reading the
    BLAS's thread count (threadpoolctl's first read scans every loaded library); the output is
    the one of n_threads=2, which reads it (the determinism tests cover both BLAS settings)."""
    from randfeat import fourier
    X = np.random.default_rng(5).normal(size=(3000, 40)).astype(global_dtype)
    f = RandomFourierFeatures(1400, features="phase", random_state=3, n_threads=2).fit(X)
    reads = []
    real = fourier.blas_threads
    monkeypatch.setattr(fourier, "blas_threads", lambda: reads.append(1) or real())
    Z2 = f.transform(X)
    assert reads == [1]
    Z1 = f.set_params(n_threads=1).transform(X)
    assert reads == [1]
    np.testing.assert_array_equal(Z1, Z2)


def test_max_blocks_is_fixed_per_machine(monkeypatch):
    """The block bound comes from the CPU count, not from OMP_NUM_THREADS or the affinity mask;
    n_threads chooses the number of blocks only when the BLAS was found cut-invariant for the
    dtype (otherwise the fixed bound), and small jobs are never cut."""
    import os

    from randfeat import fourier
    assert fourier._MAX_BLOCKS == max(1, min(8, os.cpu_count() or 1))
    big, small = (1000, 1000, 1024), (10, 10, 10)
    for invariant in (False, True):
        monkeypatch.setitem(fourier._CUT_INVARIANT, "f", invariant)
        for nt in (1, 2, 3, 64):
            want = min(nt, fourier._MAX_BLOCKS) if invariant else fourier._MAX_BLOCKS
            assert fourier._max_blocks(*big, np.float32, nt) == want
            assert fourier._max_blocks(*small, np.float32, nt) == fourier._MAX_BLOCKS


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_cut_probe(dtype):
    """The probe compares one gemm with the same product cut in two (rows of X, rows of W); it
    answers a bool, and a cut at an impossible place is an error."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 7)).astype(dtype)
    W = rng.normal(size=(30, 7)).astype(dtype)
    assert isinstance(_fourier.gemm_cut_invariant(X, W, 20, 11), bool)
    for rc, cc in ((0, 5), (50, 5), (5, 0), (5, 30)):
        with pytest.raises(ValueError, match="row_cut"):
            _fourier.gemm_cut_invariant(X, W, rc, cc)
    from randfeat import fourier
    assert fourier._cut_invariant(dtype) in (True, False)


def test_random_state_kinds():
    X = np.random.default_rng(5).normal(size=(5, 3))
    a = RandomFourierFeatures(16, random_state=7).fit_transform(X)
    b = RandomFourierFeatures(16, random_state=np.random.default_rng(7)).fit_transform(X)
    c = RandomFourierFeatures(16, random_state=np.random.SeedSequence(7)).fit_transform(X)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    d = RandomFourierFeatures(16, random_state=8).fit_transform(X)
    assert not np.array_equal(a, d)
    RandomFourierFeatures(16, random_state=np.random.RandomState(0)).fit_transform(X)


def test_input_kinds_not_modified():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(10, 8))
    ref = RandomFourierFeatures(32, random_state=0).fit(X)
    Zref = ref.transform(X)
    Xf = np.asfortranarray(X)
    Xs = np.repeat(X, 2, axis=1)[:, ::2]
    Xr = X.copy()
    Xr.flags.writeable = False
    for Xin in (Xf, Xs, Xr, X.tolist()):
        np.testing.assert_array_equal(ref.transform(Xin), Zref)
    np.testing.assert_array_equal(Xr, X)
    Zi = ref.transform(np.arange(80).reshape(10, 8))
    assert Zi.dtype == np.float64


def test_kernel_instances_and_names():
    X = np.random.default_rng(7).normal(size=(4, 3))
    r = RandomFourierFeatures(10, kernel=MaternKernel(2.0, nu=2.5), random_state=0).fit(X)
    assert r.kernel_ == MaternKernel(2.0, nu=2.5)
    r = RandomFourierFeatures(10, kernel="cauchy", sigma=3.0, random_state=0).fit(X)
    assert r.kernel_ == CauchyKernel(3.0)
    np.testing.assert_array_equal(
        r.frequencies_, CauchyKernel(3.0).sample(5, 3, np.random.default_rng(0)))


def test_pickle_roundtrip():
    X = np.random.default_rng(8).normal(size=(7, 3))
    r = RandomFourierFeatures(20, features="phase", kernel="ballsum", random_state=0).fit(X)
    r2 = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(r.transform(X), r2.transform(X))


def test_errors():
    X = np.random.default_rng(9).normal(size=(5, 3))
    assert RandomFourierFeatures(7, random_state=0).fit_transform(X).shape == (5, 7)  # any width
    with pytest.raises(InvalidParameterError, match=r"'n_components'.*Got 0"):
        RandomFourierFeatures(0).fit(X)
    for bad in (0.0, -1.0):
        with pytest.raises(InvalidParameterError, match=rf"'sigma'.*Got {bad}"):
            RandomFourierFeatures(4, sigma=bad).fit(X)
    with pytest.raises(InvalidParameterError, match=r"'sigma'.*Got nan"):
        RandomFourierFeatures(4, sigma=np.nan).fit(X)
    with pytest.raises(InvalidParameterError, match=r"'sigma'.*Got inf"):
        RandomFourierFeatures(4, sigma=np.inf).fit(X)
    with pytest.raises(InvalidParameterError, match=r"unknown kernel 'rbff'; valid names are "
                                                    r"\['gaussian'"):
        RandomFourierFeatures(4, kernel="rbff").fit(X)
    with pytest.raises(InvalidParameterError, match=r"'features'.*'cos'"):
        RandomFourierFeatures(4, features="cos").fit(X)
    with pytest.raises(InvalidParameterError, match=r"'n_threads'.*Got 0"):
        RandomFourierFeatures(4, n_threads=0).fit(X)
    with pytest.raises(ValueError, match=r"sigma=2.0 was given together with the kernel"):
        RandomFourierFeatures(4, kernel=GaussianKernel(1.0), sigma=2.0).fit(X)
    with pytest.raises(ValueError, match=r"sigma=1.0 was given together with the kernel"):
        RandomFourierFeatures(4, kernel=GaussianKernel(1.0), sigma=1.0).fit(X)
    with pytest.raises(ValueError, match=r"kernel='inverse_power' cannot be approximated by "
                                         r"random Fourier features"):
        RandomFourierFeatures(4, kernel="inverse_power").fit(X)
    with pytest.raises(NotFittedError):
        RandomFourierFeatures(4).transform(X)
    r = RandomFourierFeatures(4, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"X has 4 features, but RandomFourierFeatures is "
                                         r"expecting 3 features"):
        r.transform(np.zeros((2, 4)))
    for bad, word in ((np.nan, "NaN"), (np.inf, "infinity")):
        Xb = X.copy()
        Xb[1, 2] = bad
        with pytest.raises(ValueError, match=word):
            r.transform(Xb)
        with pytest.raises(ValueError, match=word):
            RandomFourierFeatures(4).fit(Xb)
    with pytest.raises(ValueError, match="0 sample"):
        r.transform(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="(?i)complex data"):
        r.transform(X + 1j)


def test_compiled_kernel_guards():
    with pytest.raises(ValueError, match="buffer has 5 columns, expected 6"):
        _fourier.paired_inplace(np.zeros((2, 5)), 3, 1.0, 1)
    with pytest.raises(ValueError, match="2 offsets for 3 columns"):
        _fourier.phase_inplace(np.zeros((2, 3)), np.zeros(2), 1.0, 1)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        _fourier.transform_paired(np.zeros((2, 3)), np.zeros((4, 3)), np.zeros((2, 7)), 1.0, 1)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        _fourier.transform_phase(np.zeros((2, 3)), np.zeros((4, 3)), np.zeros(3),
                                 np.zeros((2, 4)), 1.0, 1)
    assert _fourier.isa() in {"avx512", "avx2", "scalar"}


@pytest.mark.parametrize("chunk", [1, 7, 256])
@pytest.mark.parametrize("n, m", [(300, 40), (30, 400), (1, 3), (5, 1)])
def test_blocks_give_the_reference(chunk, n, m, global_dtype):
    """Blocks over rows (n > m) or frequencies (m >= n), both maps, several threads: every
    entry equals the unblocked numpy reference to rounding."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(n, 17)).astype(global_dtype)
    W = rng.normal(size=(m, 17)).astype(global_dtype)
    b = rng.uniform(0, 6, size=m).astype(global_dtype)
    P = (X @ W.T).astype(np.float64)
    tol = 1e-12 if global_dtype == np.float64 else 2e-5
    for nt in (1, 2, 3):
        out = np.empty((n, 2 * m), global_dtype)
        _fourier.transform_paired(X, W, out, 1.0, nt, chunk)
        np.testing.assert_allclose(out, np.hstack([np.cos(P), np.sin(P)]), atol=tol)
        out = np.empty((n, m), global_dtype)
        _fourier.transform_phase(X, W, b, out, 1.0, nt, chunk)
        np.testing.assert_allclose(out, np.cos(P + b), atol=tol)


# ------------------------------------------------------------------------------------------
# Monte Carlo: unbiasedness and exact variances
# ------------------------------------------------------------------------------------------
def _pairs(seed, d, sigma, radii):
    """Pairs (x, y) with ||x - y|| = r * sigma in random directions, x random (not 0)."""
    rng = np.random.default_rng(_seed(seed, 100))
    dirs = rng.normal(size=(len(radii), d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    x = rng.normal(size=(len(radii), d)) * sigma
    y = x - dirs * (np.asarray(radii) * sigma)[:, None]
    return x, y


def _terms(rff, x, y):
    """Per-frequency terms whose mean is z(x)'z(y), shape (n_pairs, n_frequencies)."""
    Zx, Zy = rff.transform(x).astype(np.float64), rff.transform(y).astype(np.float64)
    D = rff.n_components
    if rff.features == "paired":
        m = D // 2
        return (Zx[:, :m] * Zy[:, :m] + Zx[:, m:] * Zy[:, m:]) * m
    return Zx * Zy * D


@pytest.mark.parametrize("features", ["paired", "phase"])
@pytest.mark.parametrize("kern", _kernels(1.5), ids=KIDS)
def test_unbiased(kern, features, global_random_seed):
    """E z(x)'z(y) = k(x - y) for every kernel and map, ||Delta||/sigma in 0.25..4 (P1, P2);
    z-test with the exact variance of THEORY §2.3, |z| <= 5."""
    d, D = 5, 20_000
    radii = [0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0]
    x, y = _pairs(global_random_seed, d, kern.sigma, radii)
    rff = RandomFourierFeatures(D, kernel=kern, features=features,
                                random_state=_seed(global_random_seed, 1)).fit(x)
    est = (rff.transform(x) * rff.transform(y)).sum(1)
    k, k2 = kern.k(x - y), kern.k(2 * (x - y))
    var = (1 + k2 - 2 * k**2) / D if features == "paired" else (1 + k2 / 2 - k**2) / D
    z = (est - k) / np.sqrt(var)
    assert np.abs(z).max() < Z_MAX, (z, est, k)


def test_unbiased_float32(global_random_seed):
    """Same check in float32 (Gaussian and Laplacian, both maps; 16 checks)."""
    d, D = 5, 20_000
    radii = [0.25, 0.5, 1.0, 2.0, 3.0, 4.0]
    for i, kern in enumerate([GaussianKernel(0.7), LaplacianKernel(0.7)]):
        x, y = _pairs(global_random_seed, d, kern.sigma, radii)
        for features in ("paired", "phase"):
            rff = RandomFourierFeatures(D, kernel=kern, features=features,
                                        random_state=_seed(global_random_seed, 2, i)).fit(
                x.astype(np.float32))
            est = (rff.transform(x.astype(np.float32)).astype(np.float64)
                   * rff.transform(y.astype(np.float32))).sum(1)
            k, k2 = kern.k(x - y), kern.k(2 * (x - y))
            var = (1 + k2 - 2 * k**2) / D if features == "paired" else (1 + k2 / 2 - k**2) / D
            z = (est - k) / np.sqrt(var)
            assert np.abs(z).max() < Z_MAX, (kern, features, z)


def _moments_paired(kern, delta):
    """Mean, variance and 4th central moment of X = cos(w'Delta), from k at 1..4 Delta:
    E X^2 = (1 + k2)/2, E X^3 = (3 k1 + k3)/4, E X^4 = (3 + 4 k2 + k4)/8."""
    k1, k2, k3, k4 = (kern.k(j * delta) for j in (1, 2, 3, 4))
    m2, m3, m4 = (1 + k2) / 2, (3 * k1 + k3) / 4, (3 + 4 * k2 + k4) / 8
    var = m2 - k1**2
    mu4 = m4 - 4 * k1 * m3 + 6 * k1**2 * m2 - 3 * k1**4
    return k1, var, mu4


@pytest.mark.parametrize("kern", _kernels(1.0), ids=KIDS)
def test_per_feature_variance(kern, global_random_seed):
    """Sample variance of the per-frequency terms vs the exact per-feature variance (P2):
    paired (1 + k(2D) - 2k^2)/2, phase 1 + k(2D)/2 - k^2.  The phase term is X + U with
    U = cos(phi + 2b) independent of X (uniform phase), E U^2 = 1/2, E U^4 = 3/8, so
    mu4(Y) = mu4(X) + 3 Var X + 3/8.  Standard error of s^2: sqrt((mu4 - V^2 (R-3)/(R-1))/R).
    6 radii x 2 maps = 12 checks, |z| <= 5."""
    d, m = 3, 20_000
    radii = [0.3, 0.7, 1.0, 1.5, 2.5, 4.0]
    x, y = _pairs(global_random_seed, d, kern.sigma, radii)
    for features in ("paired", "phase"):
        D = 2 * m if features == "paired" else m
        rff = RandomFourierFeatures(D, kernel=kern, features=features,
                                    random_state=_seed(global_random_seed, 3)).fit(x)
        T = _terms(rff, x, y)
        assert T.shape == (len(radii), m)
        s2 = T.var(axis=1, ddof=1)
        k1, var_x, mu4_x = _moments_paired(kern, x - y)
        if features == "paired":
            V, mu4 = var_x, mu4_x
            np.testing.assert_allclose(V, (1 + kern.k(2 * (x - y)) - 2 * k1**2) / 2)
        else:
            V, mu4 = var_x + 0.5, mu4_x + 3 * var_x + 3 / 8
            np.testing.assert_allclose(V, 1 + kern.k(2 * (x - y)) / 2 - k1**2)
        se = np.sqrt((mu4 - V**2 * (m - 3) / (m - 1)) / m)
        z = (s2 - V) / se
        assert np.abs(z).max() < Z_MAX, (features, s2 / V, z)


def test_variance_gap_sign():
    """Var_phase - Var_paired = (k^2 - k(2D)/2)/D_emb at equal width: positive for Gaussian and
    Laplacian at every Delta != 0, negative for the 1-D Cauchy kernel at |Delta| = 3 (P2)."""
    r = np.linspace(0.05, 6, 50)[:, None] * np.array([[0.6, 0.8]])
    for kern in (GaussianKernel(1.0), LaplacianKernel(1.0)):
        assert np.all(kern.k(r) ** 2 - kern.k(2 * r) / 2 > 0)
    c = CauchyKernel(1.0)
    gap = c.k(np.array([3.0])) ** 2 - c.k(np.array([6.0])) / 2
    assert gap == pytest.approx(0.01 - 1 / 74, rel=1e-12) and gap < 0


# ------------------------------------------------------------------------------------------
# the compiled sin/cos against libm, on arbitrary arguments (hypothesis varies the inputs)
# ------------------------------------------------------------------------------------------
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402


@given(p=arrays(np.float64, st.integers(1, 700),
                elements=st.floats(-2e6, 2e6, allow_nan=False, allow_infinity=False)),
       scale=st.floats(0.01, 10.0))
def test_trig_kernel_matches_libm(p, scale):
    """|error| <= 2 ulp(scale) for float64 and 2 ulp(scale) of float32 after rounding; arguments
    beyond the fast range take libm itself (element by element)."""
    for dt, tol in ((np.float64, 4.5e-16), (np.float32, 1.8e-7)):
        pp = p.astype(dt)
        ref = pp.astype(np.float64)
        buf = np.empty((1, 2 * p.size), dtype=dt)
        buf[0, :p.size] = pp
        _fourier.paired_inplace(buf, p.size, scale, 1)
        s = float(dt(scale))
        np.testing.assert_allclose(buf[0, :p.size], s * np.cos(ref), rtol=0, atol=tol * s * 2)
        np.testing.assert_allclose(buf[0, p.size:], s * np.sin(ref), rtol=0, atol=tol * s * 2)
        b = np.linspace(0, 6.28, p.size).astype(dt)
        ph = pp.copy()[None, :]
        _fourier.phase_inplace(ph, b, scale, 1)
        arg = ref + b.astype(np.float64)
        if dt == np.float32:  # elements on the fast float path add in float
            small = np.abs(pp) + 6.3 <= 8192
            arg[small] = (pp + b).astype(np.float64)[small]
        np.testing.assert_allclose(ph[0], s * np.cos(arg), rtol=0, atol=tol * s * 2)


def _check_phase_vs_libm(p, b, scale):
    """phase_inplace (the cosine-only kernel) against libm's cos of the same argument, at the
    tolerance of test_trig_kernel_matches_libm: 2 ulp(scale) (float64), 2 ulp(scale) of float32.
    The reference argument is p + b rounded as the kernel rounds it: in float32 on the fast
    float path (|p| + 6.3 <= 8192, per element), in float64 otherwise."""
    for dt, tol in ((np.float64, 4.5e-16), (np.float32, 1.8e-7)):
        pp, bb = p.astype(dt), b.astype(dt)
        ph = pp.copy()[None, :]
        _fourier.phase_inplace(ph, bb, scale, 1)
        arg = pp.astype(np.float64) + bb.astype(np.float64)
        if dt == np.float32:  # elements on the fast float path add in float
            small = np.abs(pp) + 6.3 <= 8192
            arg[small] = (pp + bb).astype(np.float64)[small]
        s = float(dt(scale))
        np.testing.assert_allclose(ph[0], s * np.cos(arg), rtol=0, atol=tol * s * 2)


@given(p=arrays(np.float64, st.integers(1, 700),
                elements=st.one_of(st.floats(-8000, 8000), st.floats(-7.9e5, 7.9e5),
                                   st.floats(-20, 20))),
       data=st.data(), scale=st.floats(0.01, 10.0))
def test_phase_cos_kernel_matches_libm(p, data, scale):
    """The cosine-only phase kernel on its own ranges: arguments drawn so that rows fall in the
    single-precision fast path (|x| <= 8192), the double-precision polynomial (|x| <= 8e5) and
    small |x| (most RFF projections), with offsets anywhere in [0, 2 pi)."""
    b = data.draw(arrays(np.float64, p.size, elements=st.floats(0.0, 6.283185307179586,
                                                               exclude_max=True)))
    _check_phase_vs_libm(p, b, scale)


def test_phase_cos_kernel_reduction_edges():
    """Arguments at and around the reduction boundaries of the cosine-only kernel (multiples of
    pi, where the odd multiple q of pi/2 changes, and odd multiples of pi/2, where cos = 0),
    up to the ends of the float32 (8192) and float64 (8e5) polynomial ranges."""
    k = np.concatenate([np.arange(-40, 41), np.array([2600, -2600, 2605, 254000, -254600])])
    centres = np.concatenate([k * np.pi, (k + 0.5) * np.pi])
    for spread in (0.0, 1e-12, 1e-7, 1e-4, 1e-2):
        p = (centres[:, None] + spread * np.array([-1.0, 0.0, 1.0])).ravel()
        for lim in (8192 - 6.3, 8e5 - 6.3):
            q = p[np.abs(p) <= lim]
            _check_phase_vs_libm(q, np.zeros_like(q), 1.0)
            _check_phase_vs_libm(q, np.full_like(q, np.pi), 0.5)
