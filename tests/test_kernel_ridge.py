"""Tests of randfeat.kernel_ridge.ExactKernelRidge (exact kernel ridge, the reference learner)."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomFourierFeatures
from randfeat.kernel_ridge import ExactKernelRidge
from randfeat.kernels import GaussianKernel, ShiftInvariantKernel, get_kernel
from randfeat.linear import RandomFeatureRidge


def _data(seed, n=80, d=3, k=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n) + 2.0
    if k is not None:
        y = np.column_stack([y + j for j in range(k)])
    return X, y


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
@pytest.mark.parametrize("alpha_scale", ["sum", "mean"])
def test_equals_sklearn_kernel_ridge_without_intercept(global_random_seed, kernel, alpha_scale):
    """No intercept: (K + lambda I) c = y is sklearn's KernelRidge(alpha=lambda), lambda = alpha
    with the default alpha_scale="sum" (scikit-learn's scale, as the learners) and n alpha with
    "mean" (per sample)."""
    X, y = _data(global_random_seed)
    sigma, alpha = 1.3, 1e-2
    m = ExactKernelRidge(kernel, sigma=sigma, alphas=alpha, fit_intercept=False,
                         alpha_scale=alpha_scale).fit(X, y)
    kern = get_kernel(kernel, sigma)
    lam = alpha if alpha_scale == "sum" else 40 * alpha
    ref = KernelRidge(alpha=lam, kernel=lambda a, b: float(kern.k(a - b)))
    ref.fit(X[:40], y[:40])
    m40 = ExactKernelRidge(kernel, sigma=sigma, alphas=alpha, fit_intercept=False,
                           alpha_scale=alpha_scale)
    m40.fit(X[:40], y[:40])
    np.testing.assert_allclose(m40.predict(X[40:]), ref.predict(X[40:]), rtol=1e-9, atol=1e-10)
    assert m.solver_ == "cholesky"


class _EmpiricalKernel(ShiftInvariantKernel):
    """k(Delta) = mean_j cos(w_j' Delta): the kernel of a paired RFF map with frequencies W."""

    name = "empirical"

    def __init__(self, W):
        super().__init__(1.0)
        self.W = W

    def _k_scaled(self, u):
        return np.cos(u @ self.W.T).mean(axis=-1)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dual_equals_random_feature_ridge_on_the_same_kernel(global_random_seed, fit_intercept):
    """With the kernel z(x)'z(y) of a fitted paired RFF map, the centred dual system (intercept)
    and the plain one give exactly RandomFeatureRidge's primal solution (to round-off)."""
    X, y = _data(global_random_seed, n=60)
    rff = RandomFourierFeatures(40, sigma=1.1, random_state=global_random_seed).fit(X)
    W = rff.frequencies_  # (n_frequencies, n_features_in_)
    Z = rff.transform(X)
    np.testing.assert_allclose(Z @ Z.T, _EmpiricalKernel(W)(X), atol=1e-12)
    alpha = 1e-2
    Xt = np.random.default_rng(global_random_seed + 1).normal(size=(30, 3))
    for alpha_scale in ("sum", "mean"):   # one alpha scale for both estimators
        rf = RandomFeatureRidge(rff, alphas=alpha, alpha_scale=alpha_scale, gram_dtype="float64",
                                fit_intercept=fit_intercept).fit(X, y)
        ex = ExactKernelRidge(_EmpiricalKernel(W), alphas=alpha, alpha_scale=alpha_scale,
                              fit_intercept=fit_intercept)
        ex.fit(X, y)
        np.testing.assert_allclose(ex.predict(Xt), rf.predict(Xt), rtol=1e-8, atol=1e-8)


def test_converges_to_random_feature_ridge_as_D_grows():
    """Deterministic instance (seed 0) of the analysis check kernel_interpolation_limit: the RMS
    distance between RF ridge and exact ridge shrinks about like D^{-1/2}."""
    X, y = _data(0, n=100)
    Xt = np.random.default_rng(1).normal(size=(50, 3))
    ex = ExactKernelRidge(sigma=1.5, alphas=1e-3, alpha_scale="mean").fit(X, y).predict(Xt)
    dist = []
    for D in (64, 4096):
        rf = RandomFeatureRidge(RandomFourierFeatures(2 * D, sigma=1.5, random_state=0),
                                alphas=1e-3, alpha_scale="mean").fit(X, y)
        dist.append(np.sqrt(np.mean((rf.predict(Xt) - ex) ** 2)))
    assert dist[1] < dist[0] / 4  # 64x more features: 8x closer expected


def test_alpha_path_validation_and_predict_path(global_random_seed):
    X, y = _data(global_random_seed, n=100)
    alphas = [1e-5, 1e-3, 1e-1]
    m = ExactKernelRidge(sigma=1.0, alphas=alphas, random_state=global_random_seed).fit(X, y)
    assert m.validation_scores_.shape == (3,) and m.alpha_ in alphas
    # validation scores equal explicit refits on the training part of the split
    rng = np.random.default_rng(global_random_seed)
    perm = rng.permutation(100)
    tr, va = np.sort(perm[20:]), np.sort(perm[:20])
    for j, a in enumerate(alphas):
        p = ExactKernelRidge(sigma=1.0, alphas=a).fit(X[tr], y[tr]).predict(X[va])
        np.testing.assert_allclose(m.validation_scores_[j], np.mean((p - y[va]) ** 2),
                                   rtol=1e-7)
    P = m.predict_path(X[:7])
    assert P.shape == (3, 7)
    for j, a in enumerate(alphas):
        np.testing.assert_allclose(
            P[j], ExactKernelRidge(sigma=1.0, alphas=a).fit(X, y).predict(X[:7]), rtol=1e-7,
            atol=1e-9)
    P2 = m.predict_path(X[:7], alphas=[1e-2])
    assert P2.shape == (1, 7)


def test_multi_output_and_float32_input_not_modified():
    X, Y = _data(0, k=2)
    X32 = X.astype(np.float32)
    X32.setflags(write=False)
    before = X32.copy()
    m = ExactKernelRidge(sigma=1.0, alphas=1e-3).fit(X32, Y)
    assert m.dual_coef_.shape == (80, 2) and m.intercept_.shape == (2,)
    P = m.predict(X32)
    assert P.shape == (80, 2)
    np.testing.assert_array_equal(X32, before)
    m1 = ExactKernelRidge(sigma=1.0, alphas=1e-3).fit(X, Y[:, 1])
    np.testing.assert_allclose(m1.predict(X), m.predict(X)[:, 1], rtol=1e-5, atol=1e-5)


def test_kernel_instance_and_params():
    X, y = _data(0)
    a = ExactKernelRidge(GaussianKernel(0.7), alphas=1e-3).fit(X, y).predict(X)
    b = ExactKernelRidge("gaussian", sigma=0.7, alphas=1e-3).fit(X, y).predict(X)
    np.testing.assert_allclose(a, b)
    m = ExactKernelRidge("matern", kernel_params={"nu": 2.5}, alphas=1e-3).fit(X, y)
    assert m.kernel_.nu == 2.5


def test_errors():
    X, y = _data(0)
    with pytest.raises(ValueError, match="alphas must all be finite and > 0"):
        ExactKernelRidge(alphas=[1e-3, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="alphas"):
        ExactKernelRidge(alphas=[]).fit(X, y)
    with pytest.raises(ValueError, match="unknown kernel"):
        ExactKernelRidge("nope").fit(X, y)
    with pytest.raises(ValueError, match="kernel_params"):
        ExactKernelRidge(GaussianKernel(1.0), kernel_params={"nu": 1.5}).fit(X, y)
    with pytest.raises(ValueError, match="sigma"):
        ExactKernelRidge(sigma=-1.0).fit(X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ExactKernelRidge().fit(Xn, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        ExactKernelRidge().fit(X, np.where(np.arange(80) == 3, np.inf, y))
    with pytest.raises(ValueError, match="0 sample"):
        ExactKernelRidge().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="at least 2 samples"):
        ExactKernelRidge(alphas=[1e-3, 1e-2]).fit(X[:1], y[:1])
    m = ExactKernelRidge(alphas=1e-3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="alphas must all be finite"):
        m.predict_path(X, alphas=[-1.0])
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        ExactKernelRidge().predict(X)
    import scipy.sparse as sp
    with pytest.raises(TypeError, match="dense"):
        ExactKernelRidge().fit(sp.csr_matrix(X), y)


@parametrize_with_checks([ExactKernelRidge(alphas=1e-3),
                          ExactKernelRidge(alphas=[1e-4, 1e-2], random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
