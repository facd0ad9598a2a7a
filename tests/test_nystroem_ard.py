"""Nystroem with ARD length scales (issue 31): ``sigma`` of shape (n_features,), one length scale
per feature, k(x, y) = k1((x - y) / sigma) coordinate-wise, for every shift-invariant kernel and
both landmark samplings.  Deterministic (no statistical claim):

* the deterministic equivalent: given the landmarks S, Z Z^T = K_nS K_SS^+ K_Sn (and the same
  for held-out rows), with the ARD kernel written out independently in numpy;
* equal scales ``(s, ..., s)`` give the scalar ``sigma=s`` map bit for bit (same landmarks,
  same features), dense and sparse, float32 and float64;
* ARD with ``sigma`` is the unit-scale map on ``X / sigma`` bit for bit (the kernel divides the
  rows by sigma in float64, exactly as ``X / sigma`` does), leverage sampling included;
* validation: wrong length, non-positive, NaN/Inf, empty, 2-D -> ValueError naming sigma.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from randfeat import Nystroem
from randfeat.kernels import GaussianKernel, LaplacianKernel

SIGMA = np.array([0.5, 1.0, 2.0, 4.0])
KERNELS = ["rbf", "gaussian", "laplacian", "cauchy", "matern", "ballsum", "inverse_power",
           "stretched_exponential"]


def _X(n=60, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# the ARD kernels written out in numpy, independently of randfeat.kernels
def _scaled(A, B, s):
    return A[:, None, :] / s - B[None, :, :] / s


def _gauss(A, B, s):
    return np.exp(-0.5 * (_scaled(A, B, s) ** 2).sum(-1))


def _laplace(A, B, s):
    return np.exp(-np.abs(_scaled(A, B, s)).sum(-1))


def _cauchy(A, B, s):
    return np.prod(1.0 / (1.0 + _scaled(A, B, s) ** 2), axis=-1)


def _matern32(A, B, s):
    r = np.sqrt(3.0) * np.sqrt((_scaled(A, B, s) ** 2).sum(-1))
    return (1.0 + r) * np.exp(-r)


REFERENCE = {"rbf": ({}, _gauss), "laplacian": ({}, _laplace), "cauchy": ({}, _cauchy),
             "matern": ({"kernel_params": {"nu": 1.5}}, _matern32)}


def _formula(Kxs, Kss, Ksn):
    """K_xS K_SS^+ K_Sn with numpy's pseudo-inverse."""
    return Kxs @ np.linalg.pinv(Kss, rcond=1e-10, hermitian=True) @ Ksn


@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
@pytest.mark.parametrize("kernel", sorted(REFERENCE))
def test_deterministic_equivalent(kernel, sampling):
    kw, ref = REFERENCE[kernel]
    X, Xnew = _X(80), _X(25, seed=1)
    ny = Nystroem(15, kernel=kernel, sigma=SIGMA, sampling=sampling, random_state=2,
                  **kw).fit(X)
    S = X[ny.component_indices_]
    np.testing.assert_array_equal(ny.components_, S)
    Kss = ref(S, S, SIGMA)
    assert np.linalg.cond(Kss) < 1e6   # the tolerance below is meaningful
    Z, Znew = ny.transform(X), ny.transform(Xnew)
    expect = _formula(ref(X, S, SIGMA), Kss, ref(S, X, SIGMA))
    np.testing.assert_allclose(Z @ Z.T, expect, atol=1e-8)
    np.testing.assert_allclose(Znew @ Z.T, _formula(ref(Xnew, S, SIGMA), Kss, ref(S, X, SIGMA)),
                               atol=1e-8)
    # the check has power: the scales applied to the wrong features (reversed) or squared are
    # far from the map at this tolerance
    for wrong in (SIGMA[::-1], SIGMA**2):
        bad = _formula(ref(X, S, wrong), ref(S, S, wrong), ref(S, X, wrong))
        assert np.abs(Z @ Z.T - bad).max() > 1e-2
    # K - ZZ' is positive semi-definite (the Nystroem residual)
    assert np.linalg.eigvalsh(ref(X, X, SIGMA) - Z @ Z.T).min() > -1e-8


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_equal_scales_are_the_scalar_map_bit_for_bit(kernel, sampling, dtype):
    X, Xnew = _X().astype(dtype), _X(20, seed=1).astype(dtype)
    for A, B in ((X, Xnew), (sp.csr_matrix(X), sp.csr_matrix(Xnew))):
        a = Nystroem(12, kernel=kernel, sigma=np.full(4, 1.7), sampling=sampling,
                     random_state=5).fit(A)
        b = Nystroem(12, kernel=kernel, sigma=1.7, sampling=sampling, random_state=5).fit(A)
        np.testing.assert_array_equal(a.component_indices_, b.component_indices_)
        np.testing.assert_array_equal(a.normalization_, b.normalization_)
        Za = a.transform(B)
        assert Za.dtype == dtype
        np.testing.assert_array_equal(Za, b.transform(B))
        np.testing.assert_array_equal(a.sigma_, np.full(4, 1.7))
        assert b.sigma_ == 1.7


@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_ard_is_the_unit_scale_map_on_X_over_sigma(kernel, sampling):
    """Bit for bit: the map divides the rows by sigma in float64 as ``X / sigma`` does, so the
    landmarks, K_SS^{+1/2} and the features are the same numbers (dense and CSR)."""
    X, Xnew = _X(), _X(20, seed=1)
    for A, B, Au, Bu in ((X, Xnew, X / SIGMA, Xnew / SIGMA),
                         (sp.csr_matrix(X), sp.csr_matrix(Xnew), sp.csr_matrix(X / SIGMA),
                          sp.csr_matrix(Xnew / SIGMA))):
        a = Nystroem(12, kernel=kernel, sigma=SIGMA, sampling=sampling, random_state=7).fit(A)
        b = Nystroem(12, kernel=kernel, sigma=1.0, sampling=sampling, random_state=7).fit(Au)
        np.testing.assert_array_equal(a.component_indices_, b.component_indices_)
        np.testing.assert_array_equal(a.normalization_, b.normalization_)
        if sampling == "leverage":
            np.testing.assert_array_equal(a.leverage_scores_, b.leverage_scores_)
            assert a.ridge_ == b.ridge_
        np.testing.assert_array_equal(a.transform(B), b.transform(Bu))


def test_sparse_float32_threads_instance_pickle():
    X = _X(1100, seed=3)        # > 512 rows: several row blocks
    dense = Nystroem(30, sigma=SIGMA, random_state=0, n_threads=1).fit(X)
    Z = dense.transform(X)
    # threads: bit-identical
    np.testing.assert_array_equal(
        Nystroem(30, sigma=SIGMA, random_state=0, n_threads=2).fit(X).transform(X), Z)
    # CSR and CSC input: the same map up to the rounding of scikit-learn's sparse distances
    for fmt in (sp.csr_matrix, sp.csc_matrix):
        ny = Nystroem(30, sigma=SIGMA, random_state=0).fit(fmt(X))
        np.testing.assert_allclose(ny.transform(fmt(X)), Z, atol=1e-9)
    # float32 kept, close to float64 (the kernel is evaluated in float64)
    Z32 = Nystroem(30, sigma=SIGMA, random_state=0).fit(X.astype(np.float32)).transform(
        X.astype(np.float32))
    assert Z32.dtype == np.float32
    G = Z @ Z.T
    assert np.abs(Z32.astype(np.float64) @ Z32.T.astype(np.float64) - G).max() < 1e-3
    # a kernel instance with ARD scales: the same map
    for inst, name in ((GaussianKernel(SIGMA), "rbf"), (LaplacianKernel(SIGMA), "laplacian")):
        np.testing.assert_array_equal(
            Nystroem(30, kernel=inst, random_state=0).fit(X).transform(X[:50]),
            Nystroem(30, kernel=name, sigma=SIGMA, random_state=0).fit(X).transform(X[:50]))
    # pickling, the fitted sigma_ read-only, the parameter untouched
    s = SIGMA.copy()
    ny = Nystroem(30, sigma=s, random_state=0).fit(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ny)).transform(X[:50]), Z[:50])
    assert not ny.sigma_.flags.writeable
    np.testing.assert_array_equal(s, SIGMA)


def test_changing_sigma_in_place_after_fit_refuses_transform():
    s = SIGMA.copy()
    X = _X()
    ny = Nystroem(12, sigma=s, random_state=0).fit(X)
    s[0] = 3.0
    with pytest.raises(NotFittedError, match="sigma"):
        ny.transform(X)


@pytest.mark.parametrize("sigma, match", [
    ([1.0, 2.0], r"sigma has 2 length scales .* X has 4 features; pass sigma of shape \(4,\)"),
    ([1.0, 2.0, 3.0, 4.0, 5.0], r"sigma has 5 length scales .* pass sigma of shape \(4,\)"),
    ([1.0, -2.0, 3.0, 4.0], r"sigma must hold positive finite length scales .* sigma\[1\] = -2"),
    ([1.0, 0.0, 3.0, 4.0], r"sigma\[1\] = 0"),
    ([1.0, np.nan, 3.0, 4.0], r"sigma\[1\] = nan"),
    ([1.0, 2.0, np.inf, 4.0], r"sigma\[2\] = inf"),
    ([], r"sigma is an empty array; pass one positive length scale per feature"),
    (np.ones((4, 1)), r"sigma as an array must be 1-D.*got an array of shape \(4, 1\)"),
])
@pytest.mark.parametrize("sampling", ["uniform", "leverage"])
def test_bad_sigma(sigma, match, sampling):
    X = _X()
    with pytest.raises(ValueError, match="Nystroem: .*" + match):
        Nystroem(12, sigma=sigma, sampling=sampling).fit(X)


def test_bad_combinations():
    X = _X()
    with pytest.raises(ValueError, match=r"sigma of the kernel instance .* has 3 length scales "
                                         r".* X has 4 features"):
        Nystroem(12, kernel=GaussianKernel([1.0, 2.0, 3.0])).fit(X)
    with pytest.raises(ValueError, match="pass either sigma .* or gamma .*, not both"):
        Nystroem(12, sigma=SIGMA, gamma=0.5).fit(X)
    with pytest.raises(ValueError, match="sigma=.* is a length scale of shift-invariant"):
        Nystroem(12, kernel="polynomial", sigma=SIGMA).fit(X)
    with pytest.raises(ValueError, match="Don't pass gamma, coef0 or degree"):
        Nystroem(12, kernel="precomputed", sigma=SIGMA).fit(X @ X.T)
    # transform with the wrong number of features is refused as for a scalar sigma
    ny = Nystroem(12, sigma=SIGMA).fit(X)
    with pytest.raises(ValueError, match="features"):
        ny.transform(X[:, :3])
