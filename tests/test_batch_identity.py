"""Issue 29: what is bit-identical across batch sizes and chunkings, and what is not.

* Fastfood, SORF and random binning compute each row by itself (compiled row-wise kernels): a
  row's features are the same bits whatever batch it is transformed in, for any ``n_threads``.
* RandomFourierFeatures projects with a BLAS gemm, and the BLAS chooses its kernel -- and so the
  order in which a row's d products are summed -- by the shape of the product (on this machine's
  OpenBLAS, SkylakeX kernels: a matrix-vector kernel for one row, an AVX-512 small-matrix kernel
  when M*N*K <= 1e6 and d >= 32, the blocked kernel otherwise).  A row's features therefore
  depend, in the last bits, on the batch; the difference is bounded by the rounding of the two
  projections (tested here).  For one batch they are bit-identical for any ``n_threads``
  (tested here for batches of 1, 2, 3 and 700 rows; tests/test_rff_determinism.py for more
  shapes), and the dask transform is bit-identical for any chunking (tests/test_dask.py).

Deterministic checks (no statistical claim): fixed data, several shapes.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from randfeat import (
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)

#: batch sizes, and how many leading rows are transformed in batches of that size (the rest of
#: the test's rows are compared through the ragged cut)
BATCHES = {1: 24, 2: 24, 3: 24, 7: 70, 64: 256, 513: 700}


def _dense(Z):
    return Z.toarray() if sp.issparse(Z) else Z


def _batched(est, X, size):
    parts = [_dense(est.transform(X[i:i + size])) for i in range(0, X.shape[0], size)]
    return np.vstack(parts)


def _ragged(est, X, cuts):
    bounds = [0, *cuts, len(X)]
    return np.vstack([_dense(est.transform(X[a:b])) for a, b in
                      zip(bounds[:-1], bounds[1:], strict=True)])


ROWWISE = {
    "fastfood-paired": lambda nt: Fastfood(257, sigma=3.0, random_state=0, n_threads=nt),
    "fastfood-phase": lambda nt: Fastfood(128, sigma=3.0, features="phase", random_state=0,
                                          n_threads=nt),
    "sorf-paired": lambda nt: StructuredOrthogonalFeatures(255, sigma=3.0, random_state=0,
                                                           n_threads=nt),
    "sorf-phase": lambda nt: StructuredOrthogonalFeatures(128, sigma=3.0, features="phase",
                                                          random_state=0, n_threads=nt),
    "binning-exact": lambda nt: RandomBinningFeatures(50, sigma=2.0, random_state=0,
                                                      n_threads=nt),
    "binning-hashed": lambda nt: RandomBinningFeatures(50, sigma=2.0, hash_size=32,
                                                       random_state=0, n_threads=nt),
}


@pytest.mark.parametrize("d", [5, 40, 600])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("name", sorted(ROWWISE))
def test_rowwise_maps_give_the_same_bits_in_any_batch(name, n_threads, d, global_dtype):
    if name.startswith("binning") and d == 600:
        pytest.skip("binning on 600 dimensions is slow and adds nothing to d = 40")
    X = np.random.default_rng(d).normal(size=(700, d)).astype(global_dtype)
    est = ROWWISE[name](n_threads).fit(X)
    full = _dense(est.transform(X))
    for size, rows in BATCHES.items():
        np.testing.assert_array_equal(_batched(est, X[:rows], size), full[:rows],
                                      err_msg=f"batch {size}")
    np.testing.assert_array_equal(_ragged(est, X, [1, 3, 100, 101, 613]), full)


@pytest.mark.parametrize("d", [40, 600])
def test_fastfood_sparse_input_same_bits_in_any_batch(d):
    X = sp.random(300, d, density=0.3, format="csr", random_state=0)
    est = Fastfood(256, sigma=3.0, random_state=0).fit(X)
    full = est.transform(X)
    np.testing.assert_array_equal(_batched(est, X, 7), full)
    np.testing.assert_array_equal(est.transform(X.toarray()), full)


def _rff_bound(est, X, dtype):
    """Per entry: sqrt(2/D) (2 gamma_d sum_k |x_k w_jk| + 8 eps), gamma_d = d eps / (1 - d eps):
    two projections of one row summed in any orders differ by at most 2 gamma_d sum |x_k w_jk|,
    cos and sin are 1-Lipschitz, and each trigonometric value is rounded (a few eps)."""
    eps = np.finfo(dtype).eps
    d, D = X.shape[1], est.n_components
    gamma = d * eps / (1 - d * eps)
    A = np.abs(X.astype(np.float64)) @ np.abs(est.frequencies_.astype(np.float64)).T
    per_freq = math.sqrt(2.0 / D) * (2 * gamma * A + 8 * eps)
    return np.hstack([per_freq, per_freq])   # the cos and the sin column of each frequency


@pytest.mark.parametrize("d, D", [(8, 64), (64, 8), (64, 1024), (600, 8), (600, 1024)])
def test_rff_batch_dependence_is_bounded_by_the_rounding_of_the_projections(d, D, global_dtype):
    """Not bit-identical across batches (see the module docstring), but never by more than
    the two projections' rounding allows."""
    X = np.random.default_rng(d).normal(size=(1200, d)).astype(global_dtype)
    est = RandomFourierFeatures(D, sigma=math.sqrt(d), random_state=0).fit(X)
    full = est.transform(X)
    bound = _rff_bound(est, X, global_dtype)
    for size, rows in {1: 24, 2: 24, 3: 24, 100: 300, 600: 1200}.items():
        diff = np.abs(_batched(est, X[:rows], size).astype(np.float64) - full[:rows])
        assert np.all(diff <= bound[:rows]), (size, float((diff / bound[:rows]).max()))


@pytest.mark.parametrize("blas_threads", [None, 1])
@pytest.mark.parametrize("size", [1, 2, 3, 700])
def test_rff_same_bits_for_any_n_threads_at_every_batch_size(size, blas_threads,
                                                            global_dtype):
    """What is promised for RFF: for one batch, the bits do not depend on n_threads (under the
    process's BLAS threads, and under a single-threaded BLAS, where n_threads > 1 takes the fused
    path)."""
    X = np.random.default_rng(1).normal(size=(size, 64)).astype(global_dtype)
    with threadpool_limits(blas_threads):
        out = [RandomFourierFeatures(1025, sigma=8.0, random_state=0, n_threads=t).fit(X)
               .transform(X) for t in (1, 2)]
    np.testing.assert_array_equal(out[0], out[1])
