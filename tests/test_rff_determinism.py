"""Float32/float64 random Fourier features are bit-identical for every thread count and every
cut of the work into blocks (issue 12 item 3).

The fused kernel cuts the projection into gemm blocks -- of rows, or of frequencies, so that a
row can be split into pieces -- and the number of blocks may follow ``n_threads`` (when the BLAS
is cut-invariant, see randfeat/fourier.py).  The trigonometric code path (single-precision
polynomial, double-precision polynomial, libm) must therefore be chosen per element, from that
element's magnitude alone: choosing it per row piece made large projections differ between
``n_threads=1`` and ``2`` by up to 5e-6.  Deterministic checks; hypothesis varies the inputs.
"""

from contextlib import nullcontext

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from threadpoolctl import threadpool_limits

from randfeat import RandomFourierFeatures
from randfeat._lib import _fourier


def _projections(seed, n, edges, lo, hi, dtype):
    """n x m projections with random signs and log-uniform magnitudes; each piece between two
    ``edges`` gets its own range inside [10**lo, 10**hi], so that some pieces stay below a code
    path's limit while their row goes above it."""
    rng = np.random.default_rng(seed)
    m = edges[-1]
    expo = np.empty((n, m))
    for a, e in zip(edges[:-1], edges[1:], strict=True):
        top = rng.uniform(lo, hi)
        expo[:, a:e] = rng.uniform(lo, top, size=(n, e - a))
    return (10.0 ** expo * rng.choice([-1.0, 1.0], size=(n, m))).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 4), m=st.integers(1, 700),
       lo=st.floats(-2, 3), span=st.floats(0, 4),
       cuts=st.lists(st.integers(1, 699), max_size=5),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_trig_kernels_do_not_depend_on_the_cut(seed, n, m, lo, span, cuts, dtype):
    """paired_inplace / phase_inplace on whole rows equal the same kernels run on any pieces of
    the rows (what a frequency-blocked gemm hands them)."""
    edges = sorted({0, m, *(c for c in cuts if c < m)})
    P = _projections(seed, n, edges, lo, lo + span, dtype)
    b = np.random.default_rng(seed + 1).uniform(0, 2 * np.pi, size=m).astype(dtype)
    whole = np.empty((n, 2 * m), dtype)
    whole[:, :m] = P
    _fourier.paired_inplace(whole, m, 0.5, 1)
    ph_whole = P.copy()
    _fourier.phase_inplace(ph_whole, b, 0.5, 1)
    for a, e in zip(edges[:-1], edges[1:], strict=True):
        k = e - a
        piece = np.empty((n, 2 * k), dtype)
        piece[:, :k] = P[:, a:e]
        _fourier.paired_inplace(piece, k, 0.5, 1)
        assert_array_equal(piece[:, :k], whole[:, a:e])
        assert_array_equal(piece[:, k:], whole[:, m + a:m + e])
        ph = np.ascontiguousarray(P[:, a:e])
        _fourier.phase_inplace(ph, np.ascontiguousarray(b[a:e]), 0.5, 1)
        assert_array_equal(ph, ph_whole[:, a:e])


@settings(max_examples=16, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1),
       shape=st.one_of(
           # above the threading threshold (n * m * (d + 16) >= 2**26): blocks of frequencies
           # (m > n) or of rows, 2+ blocks
           st.tuples(st.integers(8, 160), st.integers(1200, 2600), st.integers(180, 320)),
           st.tuples(st.integers(1200, 2600), st.integers(8, 160), st.integers(180, 320)),
           # small maps (one block)
           st.tuples(st.integers(1, 40), st.integers(1, 300), st.integers(1, 40))),
       log_scale=st.floats(-1, 6.5),
       features=st.sampled_from(["paired", "phase"]),
       dtype=st.sampled_from([np.float32, np.float64]),
       blas=st.sampled_from([1, None]))
def test_rff_bit_identical_for_1_and_2_threads(seed, shape, log_scale, features, dtype, blas):
    """Random shapes (up to large projections, |w'x| up to ~1e7), both maps, both dtypes,
    under a single-threaded BLAS (threadpool_limits(1): the fused path) and under the process's
    own BLAS threads (the BLAS-threaded path): n_threads=1 and 2 give the same bits."""
    n, m, d = shape
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((n, d)) * (10.0 ** log_scale / np.sqrt(d))
         * 10.0 ** rng.uniform(-1, 0, size=(n, 1))).astype(dtype)
    width = 2 * m if features == "paired" else m
    limit = nullcontext() if blas is None else threadpool_limits(limits=blas, user_api="blas")
    with limit:
        Z = [RandomFourierFeatures(width, features=features, random_state=seed % 1000,
                                   n_threads=t).fit(X).transform(X) for t in (1, 2)]
    assert_array_equal(Z[0], Z[1])
