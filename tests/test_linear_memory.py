"""Tests of randfeat.linear._memory: lazily zeroed Gram buffers, chunk sizing and giving the C
heap back before the solve.  Deterministic."""



import numpy as np

from randfeat import (
    RandomFourierFeatures,
)
from randfeat.linear import (
    RandomFeatureRidge,
    RidgeStatistics,
)


def _data(seed, n=200, d=4, k=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=(d,) if k is None else (d, k))
    return X, X @ w + 0.1 * rng.normal(size=(n,) if k is None else (n, k))


def test_fit_gives_the_freed_chunks_back_before_the_solve(monkeypatch):
    """The Cholesky fit trims the C heap once, after the last chunk and before the final solve
    (glibc keeps freed blocks under 32 MiB, e.g. a chunk's features, resident otherwise); where
    the C library has malloc_trim (glibc) the trim is done."""
    import platform

    import randfeat.linear._fit as lin
    calls = []
    real = lin.trim_heap
    monkeypatch.setattr(lin, "trim_heap", lambda: calls.append(1) or real())
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.normal(size=200)
    RandomFeatureRidge(RandomFourierFeatures(30, random_state=0), alphas=1.0,
                       chunk_size=50).fit(X, y)
    assert calls == [1]
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert real() is True


def test_large_gram_buffer_is_zeroed_and_behaves_as_an_array():
    """Grams of 4 MiB or more live in an anonymous mmap (pages resident only when written; see
    randfeat.linear._memory.gram_buffer): zeroed, Fortran-ordered, writeable, and statistics
    built on one copy, merge and pickle like any other."""
    import pickle

    from randfeat.linear._memory import gram_buffer as _gram_buffer
    G = _gram_buffer(800)
    assert G.shape == (800, 800) and G.flags.f_contiguous and G.flags.writeable
    assert G.dtype == np.float64 and not G.any()
    rng = np.random.default_rng(1)
    Z, y = rng.normal(size=(30, 800)), rng.normal(size=30)
    st = RidgeStatistics().partial_fit(Z, y)
    assert st._gram.nbytes >= 1 << 22
    ref = Z.T @ Z
    np.testing.assert_allclose(st.gram_, ref, rtol=1e-12, atol=1e-12)
    back = pickle.loads(pickle.dumps(st))
    np.testing.assert_array_equal(back.gram_, st.gram_)
    np.testing.assert_allclose(st.merge(back).gram_, 2 * ref, rtol=1e-12, atol=1e-12)


def test_gram_buffer_without_mmap(monkeypatch):
    """Where an anonymous mapping cannot be made, the Gram is NumPy's zeros (same behaviour)."""
    import mmap

    from randfeat.linear._memory import gram_buffer as _gram_buffer

    def refuse(*a, **k):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refuse)
    G = _gram_buffer(800)
    assert G.shape == (800, 800) and G.flags.f_contiguous and G.flags.owndata and not G.any()


def test_auto_chunk_rows():
    """chunk_size="auto": about 2**21 values per chunk for narrow features, D / 2 rows for
    wide ones, between 1024 and 8192 rows; a fit with "auto" is the fit with those rows."""
    from randfeat.linear._memory import auto_chunk_rows as _auto_chunk_rows
    assert [_auto_chunk_rows(D) for D in (1, 100, 256, 257, 1000, 2048, 4000, 9000, 20000)] == [
        8192, 8192, 8192, 8160, 2097, 1024, 2000, 4500, 8192]
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(3000, 3)), rng.normal(size=3000)
    f = RandomFourierFeatures(1500, sigma=2.0, random_state=0)
    a = RandomFeatureRidge(f, alphas=1.0, gram_dtype="float32").fit(X, y)
    b = RandomFeatureRidge(f, alphas=1.0, gram_dtype="float32", chunk_size=1398).fit(X, y)
    c = RandomFeatureRidge(f, alphas=1.0, gram_dtype="float32", chunk_size=1000).fit(X, y)
    assert a._chunk_rows() == 1398
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)  # the chunks do change float32 sums' bits


