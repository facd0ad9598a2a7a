"""One rule for a kernel, its length scale and its parameters, in every estimator: the feature maps,
Fastfood's custom radial law, SORF and exact kernel ridge.  Deterministic (no statistical
claim): fixed data and seeds, exact comparisons."""

import numpy as np
import pytest

from randfeat import (
    ExactKernelRidge,
    Fastfood,
    RandomBinningFeatures,
    RandomFeatureRidge,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat._base import data_sigma
from randfeat.kernels import GaussianKernel, LaplacianKernel, MaternKernel

X = np.random.default_rng(0).normal(size=(40, 3))
Y = np.sin(X[:, 0])


def _chi(n, d, rng):
    return np.sqrt(rng.chisquare(d, n))


ESTIMATORS = {
    "rff": lambda **kw: RandomFourierFeatures(16, random_state=0, **kw),
    "fastfood": lambda **kw: Fastfood(16, random_state=0, **kw),
    "fastfood_radial": lambda **kw: Fastfood(16, radial=_chi, random_state=0, **kw),
    "sorf": lambda **kw: StructuredOrthogonalFeatures(16, random_state=0, **kw),
    "binning": lambda **kw: RandomBinningFeatures(8, random_state=0, **kw),
    "exact": lambda **kw: ExactKernelRidge(alphas=1.0, **kw),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_one_default_sigma(name):
    """sigma defaults to None everywhere (SORF defaulted to 1.0); None means 1.0 for a kernel
    given by name."""
    est = ESTIMATORS[name]()
    assert est.get_params()["sigma"] is None
    est.fit(X, Y)
    sigma = est.kernel_.sigma if name in ("binning",) else est.sigma_
    assert sigma == 1.0


@pytest.mark.parametrize("name", ["rff", "fastfood", "fastfood_radial", "binning", "exact"])
def test_kernel_instance_with_sigma_raises(name):
    """A kernel instance carries its own length scale: giving sigma too is an error in every
    estimator (ExactKernelRidge and Fastfood with a custom radial law used one of the two
    silently)."""
    kern = LaplacianKernel(2.0) if name == "binning" else GaussianKernel(2.0)
    with pytest.raises(ValueError, match=r"sigma=5.0 was given together with the kernel "
                                         r"instance"):
        ESTIMATORS[name](kernel=kern, sigma=5.0).fit(X, Y)
    est = ESTIMATORS[name](kernel=kern).fit(X, Y)        # the instance's own: 2.0
    sigma = est.kernel_.sigma if name == "binning" else est.sigma_
    assert sigma == 2.0


@pytest.mark.parametrize("name", ["rff", "fastfood", "binning", "exact"])
def test_kernel_params_are_the_one_way(name):
    """Extra kernel parameters go in ``kernel_params`` with a kernel given by name (the same
    kernel as the instance); with an instance they raise, naming kernel_params."""
    if name == "binning":
        by_name = dict(kernel="inverse_power", kernel_params={"a": 2.5}, sigma=1.5)
        from randfeat.kernels import InversePowerBinningKernel
        inst = InversePowerBinningKernel(a=2.5, sigma=1.5)
    else:
        by_name = dict(kernel="matern", kernel_params={"nu": 2.5}, sigma=1.5)
        inst = MaternKernel(1.5, nu=2.5)
    a = ESTIMATORS[name](**by_name).fit(X, Y)
    b = ESTIMATORS[name](kernel=inst).fit(X, Y)
    assert a.kernel_ == b.kernel_ == inst
    if name == "exact":
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
    else:
        out_a, out_b = a.transform(X), b.transform(X)
        if hasattr(out_a, "toarray"):
            out_a, out_b = out_a.toarray(), out_b.toarray()
        np.testing.assert_array_equal(out_a, out_b)
    with pytest.raises(ValueError, match="kernel_params"):
        ESTIMATORS[name](kernel=inst, kernel_params=by_name["kernel_params"]).fit(X, Y)


@pytest.mark.parametrize("rule", ["scale", "median"])
def test_exact_kernel_ridge_takes_a_data_sigma(rule):
    """ExactKernelRidge(sigma="scale"/"median") (refused before) is the fit with that
    number, as in the transformers."""
    m = ExactKernelRidge(sigma=rule, alphas=0.1).fit(X, Y)
    assert m.sigma_ == data_sigma(rule, X) == m.kernel_.sigma
    ref = ExactKernelRidge(sigma=data_sigma(rule, X), alphas=0.1).fit(X, Y)
    np.testing.assert_array_equal(m.predict(X), ref.predict(X))


def test_exact_kernel_ridge_and_the_learners_share_the_alpha_scale_and_grid():
    """One alpha scale: the default grids are the learners' (sum: 10^-3..10^5), and
    alpha_scale="mean" is n alpha in both."""
    m = ExactKernelRidge(sigma=1.0).fit(X, Y)
    r = RandomFeatureRidge(RandomFourierFeatures(16, random_state=0)).fit(X, Y)
    np.testing.assert_array_equal(m.alphas_, r.alphas_)
    np.testing.assert_array_equal(m.alphas_, 10.0 ** np.arange(-3, 6))
    mean = ExactKernelRidge(sigma=1.0, alphas=0.01, alpha_scale="mean").fit(X, Y)
    total = ExactKernelRidge(sigma=1.0, alphas=0.01 * len(X)).fit(X, Y)
    np.testing.assert_allclose(mean.predict(X), total.predict(X), rtol=1e-12, atol=1e-12)
    grid = ExactKernelRidge(sigma=1.0, alpha_scale="mean").fit(X, Y)
    np.testing.assert_array_equal(grid.alphas_, 10.0 ** np.arange(-8, 1))


@pytest.mark.parametrize("kernel", ["gaussian", "matern", "ballsum"])
def test_fastfood_applies_sigma_once(kernel):
    """The row lengths S_ are drawn at unit length scale and sigma divides once, in the
    transform: S_ is the same bits for every sigma (randfeat 0.1 drew them at sigma, multiplied
    back by sigma, and divided again: last-bit changes), and the frequencies scale as 1/sigma."""
    a = Fastfood(64, kernel=kernel, sigma=1.0, random_state=3).fit(X)
    b = Fastfood(64, kernel=kernel, sigma=3.7, random_state=3).fit(X)
    np.testing.assert_array_equal(a.S_, b.S_)
    np.testing.assert_allclose(b.frequencies_, a.frequencies_ / 3.7, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("scale", [1e200, 1e-200])
@pytest.mark.parametrize("make", [
    lambda s: RandomFourierFeatures(16, sigma=s, random_state=0),
    lambda s: Fastfood(16, sigma=s, random_state=0),
    lambda s: StructuredOrthogonalFeatures(16, sigma=s, random_state=0),
    lambda s: ExactKernelRidge(sigma=s, alphas=1.0),
])
@pytest.mark.parametrize("rule", ["scale", "median"])
def test_data_sigma_of_extreme_magnitudes(make, scale, rule):
    """sigma="scale"/"median" on data of magnitude 1e200 (the variance overflows) or 1e-200
    (it underflows) is the length scale of the unscaled data times the scale (randfeat 0.1:
    ZeroDivisionError at 1e200, sigma = sqrt(1/2) at 1e-200), and the features are those of
    the unscaled data."""
    est = make(rule).fit(X * scale, Y)
    np.testing.assert_allclose(est.sigma_, scale * data_sigma(rule, X), rtol=1e-12)
    if hasattr(est, "transform"):
        ref = make(rule).fit(X, Y)
        np.testing.assert_allclose(est.transform(X * scale), ref.transform(X), rtol=1e-9,
                                   atol=1e-9)


def test_data_sigma_that_cannot_be_represented_raises_naming_sigma():
    """A length scale beyond float64 (entries near 1e308 in 64 dimensions) is a clear error
    naming sigma and the fix, not inf or a crash."""
    big = np.full((4, 64), 1.5e308)
    big[::2] = -1.5e308
    with pytest.raises(ValueError, match=r"sigma='scale'.*not a positive finite number.*"
                                         r"rescale X"):
        data_sigma("scale", big)
    with pytest.raises(ValueError, match=r"sigma='scale'"):
        RandomFourierFeatures(8, sigma="scale").fit(big)
