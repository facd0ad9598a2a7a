"""One BLAS pool per fit (issue 34): ``randfeat.linear._oneblas.matmul`` gives NumPy's bits in
SciPy's BLAS, and a fit, a prediction and the posterior call NumPy's BLAS on no large operand.

The second part watches NumPy's BLAS itself: a child process runs with a small interposer
(``LD_PRELOAD``, compiled here from C) in front of the CBLAS entry points NumPy 2.x calls in its
bundled OpenBLAS (``scipy_cblas_?gemm64_``, ``?gemv``, ``?syrk``, ``?dot``, ``?axpy``); every
call is recorded with its dimensions.  SciPy's BLAS (``scipy_openblas``, other symbol names) and
randfeat's compiled kernels (SciPy's ``cython_blas``) are not seen.  An operand is *large* when
both of its dimensions are at least ``LARGE`` = 64: with n >= 150 rows and D >= 200 features
every D x D, n x D and n x n matrix is large, while the D x L, n x L and n x K ones (L = 9
alphas, K <= 2 targets) are not.  The test runs where the interposer can be built and sees
NumPy's BLAS (Linux, a C compiler, NumPy's ``scipy_openblas64_`` wheel); a control product in
the child proves that it does, and a mutant (the ``matmul`` of the selection, the posterior and
the solvers put back to NumPy's) proves that the check fails on a fit that wakes NumPy's pool.
"""

import ctypes.util
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from randfeat.linear import _oneblas

ROOT = Path(__file__).resolve().parents[1]
LARGE = 64


# ----------------------------------------------------------------------------- same bits
def _operands(rng, dtype):
    """(A, B) pairs in every layout ``matmul`` distinguishes: C / F / strided views, vectors,
    a matrix times its own transpose (``syrk``), inner dimension 1, empty."""
    Z = rng.normal(size=(120, 70)).astype(dtype)
    W = rng.normal(size=(70, 9)).astype(dtype)
    v = rng.normal(size=70).astype(dtype)
    u = rng.normal(size=120).astype(dtype)
    Zf = np.asfortranarray(Z)
    yield Z, W
    yield Zf, W
    yield Z, np.asfortranarray(W)
    yield Z.T, u[:, None] * np.ones((1, 3), dtype)
    yield Z[::2], W
    yield Z[:, ::2], W[::2]
    yield Z, v
    yield Zf, v
    yield v, Z.T
    yield u, Z
    yield u, Zf
    yield v, v
    yield Z, Z.T
    yield Z.T, Z
    yield Zf, Zf.T
    yield Zf.T, Zf
    yield Z[:, :1], W[:1]
    yield Z[:0], W
    yield Z, W.astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matmul_gives_numpys_bits(dtype):
    """``matmul`` makes NumPy's BLAS call in SciPy's library: the same bits as ``@`` (same
    shape, dtype and C order), ``A @ A.T`` included (``syrk``, exactly symmetric)."""
    rng = np.random.default_rng(0)
    for A, B in _operands(rng, dtype):
        want = A @ B
        got = _oneblas.matmul(A, B)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{A.shape} @ {B.shape}")
        if np.ndim(want) == 2:
            assert np.asarray(got).flags.c_contiguous


def test_matmul_syrk_result_is_symmetric_and_a_fresh_array():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(50, 300))
    K = _oneblas.matmul(Z, Z.T)
    np.testing.assert_array_equal(K, K.T)
    assert not np.shares_memory(K, Z)
    np.testing.assert_allclose(K, np.einsum("ik,jk->ij", Z, Z), rtol=1e-12, atol=1e-10)


# ----------------------------------------------------------------------------- NumPy's pool
_PROBE_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef int64_t bi;
#define CAP 65536
static long long rec_n = 0;
static long long rec[CAP][4];
static void *lib = NULL;
static void *real(const char *name) {
    if (!lib) {
        const char *p = getenv("RFPROBE_LIB");
        lib = dlopen(p, RTLD_NOW | RTLD_NOLOAD);
        if (!lib) lib = dlopen(p, RTLD_NOW);
        if (!lib) { fprintf(stderr, "rfprobe: cannot open %s\n", p); abort(); }
    }
    void *f = dlsym(lib, name);
    if (!f) { fprintf(stderr, "rfprobe: no %s\n", name); abort(); }
    return f;
}
static void put(int kind, bi a, bi b, bi c) {
    if (rec_n < CAP) { rec[rec_n][0] = kind; rec[rec_n][1] = a; rec[rec_n][2] = b;
                       rec[rec_n][3] = c; }
    rec_n++;
}
long long rfprobe_count(void) { return rec_n; }
void rfprobe_reset(void) { rec_n = 0; }
long long rfprobe_get(long long i, int j) { return i < CAP ? rec[i][j] : -1; }
#define GEMM(T, NAME) \
void NAME(int o, int ta, int tb, bi M, bi N, bi K, T al, const T *A, bi lda, const T *B, \
          bi ldb, T be, T *C, bi ldc) { \
    static void (*f)(int, int, int, bi, bi, bi, T, const T *, bi, const T *, bi, T, T *, bi); \
    if (!f) f = real(#NAME); put(1, M, N, K); \
    f(o, ta, tb, M, N, K, al, A, lda, B, ldb, be, C, ldc); }
#define GEMV(T, NAME) \
void NAME(int o, int t, bi m, bi n, T al, const T *A, bi lda, const T *x, bi incx, T be, \
          T *y, bi incy) { \
    static void (*f)(int, int, bi, bi, T, const T *, bi, const T *, bi, T, T *, bi); \
    if (!f) f = real(#NAME); put(2, m, n, 0); \
    f(o, t, m, n, al, A, lda, x, incx, be, y, incy); }
#define SYRK(T, NAME) \
void NAME(int o, int u, int t, bi N, bi K, T al, const T *A, bi lda, T be, T *C, bi ldc) { \
    static void (*f)(int, int, int, bi, bi, T, const T *, bi, T, T *, bi); \
    if (!f) f = real(#NAME); put(3, N, K, 0); \
    f(o, u, t, N, K, al, A, lda, be, C, ldc); }
#define DOT(T, NAME) \
T NAME(bi n, const T *x, bi incx, const T *y, bi incy) { \
    static T (*f)(bi, const T *, bi, const T *, bi); \
    if (!f) f = real(#NAME); put(4, n, 0, 0); \
    return f(n, x, incx, y, incy); }
#define AXPY(T, NAME) \
void NAME(bi n, T al, const T *x, bi incx, T *y, bi incy) { \
    static void (*f)(bi, T, const T *, bi, T *, bi); \
    if (!f) f = real(#NAME); put(5, n, 0, 0); \
    f(n, al, x, incx, y, incy); }
GEMM(double, scipy_cblas_dgemm64_)
GEMM(float, scipy_cblas_sgemm64_)
GEMV(double, scipy_cblas_dgemv64_)
GEMV(float, scipy_cblas_sgemv64_)
SYRK(double, scipy_cblas_dsyrk64_)
SYRK(float, scipy_cblas_ssyrk64_)
DOT(double, scipy_cblas_ddot64_)
DOT(float, scipy_cblas_sdot64_)
AXPY(double, scipy_cblas_daxpy64_)
AXPY(float, scipy_cblas_saxpy64_)
"""

# the child: every case's NumPy BLAS calls (kind, dims); kind 1 gemm (M, N, K), 2 gemv (m, n),
# 3 syrk (N, K), 4 dot (n), 5 axpy (n)
_CHILD = r"""
import ctypes, json, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
probe = ctypes.CDLL(None)
probe.rfprobe_count.restype = ctypes.c_longlong
probe.rfprobe_get.restype = ctypes.c_longlong
from randfeat import RandomFourierFeatures
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier
if sys.argv[1] == "mutant":   # NumPy's matmul back in the selection, posterior and solvers
    import randfeat.linear._oneblas as ob
    import randfeat.linear._posterior as po
    import randfeat.linear._selection as se
    ob.matmul = se.matmul = po.matmul = np.matmul
rng = np.random.default_rng(0)
X = rng.normal(size=(600, 5))
Y = np.c_[np.sin(X[:, 0]), X[:, 1]] + 0.1 * rng.normal(size=(600, 2))
y = Y[:, 0]
w = rng.uniform(0.5, 2.0, size=600)
w[:5] = 0.0
Xd, yd, wd = X[:150], y[:150], w[:150]

def rff(D=200):
    return RandomFourierFeatures(D, sigma="scale", random_state=0)

def default(): RandomFeatureRidge(rff()).fit(X, y).predict(X)
def default_weighted_2targets(): RandomFeatureRidge(rff()).fit(X, Y, sample_weight=w)
def loo_float32(): RandomFeatureRidge(rff(), gram_dtype="float32").fit(X, y)
def loo_float64(): RandomFeatureRidge(rff(), gram_dtype="float64").fit(X, y)
def gcv(): RandomFeatureRidge(rff(), selection="gcv").fit(X, y)
def evidence(): RandomFeatureRidge(rff(), selection="evidence").fit(X, Y, sample_weight=w)
def holdout(): RandomFeatureRidge(rff(), selection="holdout", random_state=0).fit(X, y)
def single_alpha(): RandomFeatureRidge(rff(), alphas=1.0).fit(X, y).predict(X)
def posterior_loo():
    m = RandomFeatureRidge(rff(), store_covariance=True).fit(X, y)
    m.predict(X, return_std=True); m.sample_y(X, n_samples=2)
def posterior_single():
    m = RandomFeatureRidge(rff(), alphas=1.0, store_covariance=True).fit(X, y)
    m.predict(X, return_std=True)
def posterior_evidence():
    m = RandomFeatureRidge(rff(), selection="evidence", store_covariance=True).fit(X, Y)
    m.predict(X, return_std=True)
def partial_fit_gcv():
    m = RandomFeatureRidge(rff(), store_covariance=True)
    m.partial_fit(X[:300], y[:300]); m.partial_fit(X[300:], y[300:])
    m.predict(X, return_std=True)
def dual_loo(): RandomFeatureRidge(rff(400), solver="dual").fit(Xd, yd).predict(Xd)
def dual_loo_weighted(): RandomFeatureRidge(rff(400), solver="dual").fit(Xd, yd, sample_weight=wd)
def dual_gcv(): RandomFeatureRidge(rff(400), solver="dual", selection="gcv").fit(Xd, yd)
def dual_evidence(): RandomFeatureRidge(rff(400), solver="dual", selection="evidence").fit(Xd, yd)
def dual_single(): RandomFeatureRidge(rff(400), solver="dual", alphas=1.0).fit(Xd, yd)
def classifier(): RandomFeatureRidgeClassifier(rff()).fit(X, y > 0).decision_function(X)
def control(): np.ones((200, 100)) @ np.ones((100, 100))

out = {}
for name, case in list(globals().items()):
    if callable(case) and getattr(case, "__module__", None) == "__main__" and name != "rff":
        probe.rfprobe_reset()
        case()
        n = probe.rfprobe_count()
        out[name] = [[probe.rfprobe_get(i, j) for j in range(4)] for i in range(min(n, 65536))]
print(json.dumps(out))
"""


def _large(call):
    """Whether a recorded NumPy BLAS call has an operand with both dimensions >= LARGE."""
    kind, a, b, c = call
    if kind == 1:    # gemm: A (M, K), B (K, N), C (M, N)
        return max(min(a, c), min(c, b), min(a, b)) >= LARGE
    if kind == 2:    # gemv: A (m, n)
        return min(a, b) >= LARGE
    if kind == 3:    # syrk: A (N, K), C (N, N)
        return a >= LARGE
    return False     # dot, axpy: vectors


@pytest.fixture(scope="module")
def numpy_blas_probe(tmp_path_factory):
    """``run(mode)``: the child's calls per case, or skip where the probe cannot be built."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the interposer is Linux-only (LD_PRELOAD)")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the BLAS interposer")
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                  "libscipy_openblas64_*.so"))
    if len(libs) != 1:
        pytest.skip("NumPy's BLAS is not the bundled scipy_openblas64_ of a NumPy wheel")
    d = tmp_path_factory.mktemp("blasprobe")
    (d / "probe.c").write_text(_PROBE_C)
    so = d / "probe.so"
    libdl = ctypes.util.find_library("dl")
    cmd = [cc, "-O1", "-shared", "-fPIC", "-o", str(so), str(d / "probe.c")]
    subprocess.run(cmd + (["-ldl"] if libdl else []), check=True, capture_output=True)
    # after any preload already there (a sanitizer's runtime must stay first)
    preload = f"{os.environ.get('LD_PRELOAD', '')} {so}".strip()
    env = {**os.environ, "LD_PRELOAD": preload, "RFPROBE_LIB": os.path.realpath(libs[0]),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run(mode):
        res = subprocess.run([sys.executable, "-c", _CHILD, mode], env=env, cwd=str(ROOT),
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        calls = json.loads(res.stdout.strip().splitlines()[-1])
        if not any(_large(c) for c in calls["control"]):
            pytest.skip("the interposer does not see NumPy's BLAS here")
        return calls

    return run


_CASES = ["default", "default_weighted_2targets", "loo_float32", "loo_float64", "gcv",
          "evidence", "holdout", "single_alpha", "posterior_loo", "posterior_single",
          "posterior_evidence", "partial_fit_gcv", "dual_loo", "dual_loo_weighted", "dual_gcv",
          "dual_evidence", "dual_single", "classifier"]


def test_fits_call_numpys_blas_on_no_large_operand(numpy_blas_probe):
    """Issue 34: with the default arguments (selection="loo", gram_dtype="auto") and with
    "gcv", "evidence", "holdout", a single alpha, the posterior (store_covariance=True,
    predict(return_std=True), sample_y), partial_fit and solver="dual", every D x D, n x D and
    n x n product goes to SciPy's BLAS: NumPy's is called on no large operand (it may see a
    few small ones, e.g. sklearn's validation)."""
    calls = numpy_blas_probe("routed")
    assert sorted(c for c in calls if c != "control") == sorted(_CASES)
    bad = {case: [c for c in calls[case] if _large(c)] for case in _CASES}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"NumPy's BLAS called on large operands (kind, dims): {bad}"


def test_numpy_blas_probe_can_fail(numpy_blas_probe):
    """The probe sees a fit that wakes NumPy's pool: with NumPy's matmul put back in the
    selection, the posterior and the solvers (the mutant), every case above calls NumPy's BLAS
    on a large operand (the leave-one-out pass's n x D times D x D, the dual kernel's n x n,
    the posterior's D x D, the solves' D x D and n x D products), so each case's check has
    power."""
    calls = numpy_blas_probe("mutant")
    missed = [case for case in _CASES if not any(_large(c) for c in calls[case])]
    assert not missed, missed
