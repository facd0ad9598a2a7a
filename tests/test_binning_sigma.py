"""sigma="scale" and sigma="median" in RandomBinningFeatures (issue 31), with ``sigma_`` fitted.

The rule is the one of every randfeat estimator (``randfeat._base.data_sigma``): "scale" is
sqrt(d Var(X) / 2) for every kernel; "median" is the median distance between the rows of a
seeded subsample of at most 1,000 rows, in the distance of the kernel's exponent: L1 for the
separable kernels of random binning (Laplacian exp(-||Delta||_1 / sigma), inverse power,
stretched exponential, custom pitch laws), so that the median pair has k = 1/e under the
Laplacian in every dimension; Euclidean for the Gaussian, Cauchy, Matérn and ball-sum kernels.
The Laplacian is one kernel in every map, so RandomFourierFeatures(kernel="laplacian",
sigma="median") takes the same L1 median.  Deterministic (no statistical claim)."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from randfeat import ExactKernelRidge, RandomBinningFeatures, RandomFourierFeatures
from randfeat._base import data_sigma
from randfeat.kernels import LaplacianKernel, kernel_names
from randfeat.kernels._registry import median_metric

X = np.random.default_rng(0).normal(size=(80, 5)) * np.array([1.0, 2.0, 0.5, 3.0, 1.0])
Y = X[:, 0]


@pytest.mark.parametrize("kernel, params", [("laplacian", None), ("inverse_power", {"a": 2.0}),
                                            ("stretched_exponential", {"q": 0.7}),
                                            (lambda size, rng: rng.gamma(2.0, 1.0, size), None)])
@pytest.mark.parametrize("hash_size", [None, 16])
def test_binning_scale_and_median(kernel, params, hash_size):
    """sigma_ is the rule's number (median: the L1 median of all pairs for n <= 1000, exactly);
    the grids are those of the numeric sigma = sigma_, bit for bit (the rule draws nothing)."""
    expected = {"scale": data_sigma("scale", X),
                "median": float(np.median(pdist(X, "cityblock")))}
    assert expected["scale"] == pytest.approx(np.sqrt(X.shape[1] * X.var() / 2), rel=1e-14)
    for rule, value in expected.items():
        kw = dict(kernel=kernel, kernel_params=params, hash_size=hash_size, random_state=3)
        est = RandomBinningFeatures(40, sigma=rule, **kw).fit(X)
        assert isinstance(est.sigma_, float) and est.sigma_ == est.kernel_.sigma
        assert est.sigma_ == pytest.approx(value, rel=1e-13)
        ref = RandomBinningFeatures(40, sigma=est.sigma_, **kw).fit(X)
        np.testing.assert_array_equal(est.widths_, ref.widths_)
        np.testing.assert_array_equal(est.shifts_, ref.shifts_)
        assert (est.transform(X) != ref.transform(X)).nnz == 0
        assert est.get_params()["sigma"] == rule


def test_median_metric_follows_the_kernel():
    """L1 for every kernel random binning can use, Euclidean for the others; the one Laplacian
    takes the L1 median in RFF, binning and exact ridge alike."""
    for name in kernel_names():
        expected = "cityblock" if name in kernel_names("binning") else "euclidean"
        assert median_metric(name) == expected, name
    assert median_metric(LaplacianKernel(2.0)) == "cityblock"
    assert median_metric(lambda size, rng: np.ones(size)) == "cityblock"
    assert median_metric("no such kernel") == "euclidean"
    l1 = float(np.median(pdist(X, "cityblock")))
    l2 = float(np.median(pdist(X)))
    assert RandomFourierFeatures(8, kernel="laplacian", sigma="median",
                                 random_state=0).fit(X).sigma_ == pytest.approx(l1, rel=1e-13)
    assert ExactKernelRidge(kernel="laplacian", sigma="median", alphas=1.0).fit(X, Y).sigma_ \
        == pytest.approx(l1, rel=1e-13)
    for kernel in ("gaussian", "cauchy", "matern"):
        assert RandomFourierFeatures(8, kernel=kernel, sigma="median",
                                     random_state=0).fit(X).sigma_ == pytest.approx(l2, rel=1e-13)


def test_median_on_a_seeded_subsample_and_extreme_magnitudes():
    """Beyond 1,000 rows the median is taken on the seeded subsample (depends on X only, not on
    random_state); data of magnitude 1e200 or 1e-200 give the unscaled data's sigma times the
    scale."""
    big = np.random.default_rng(1).laplace(size=(3000, 4))
    a = RandomBinningFeatures(5, sigma="median", random_state=0).fit(big).sigma_
    b = RandomBinningFeatures(5, sigma="median", random_state=7).fit(big).sigma_
    assert a == b == data_sigma("median", big, "cityblock")
    assert a == pytest.approx(np.median(pdist(big, "cityblock")), rel=0.05)
    for scale in (1e200, 1e-200):
        for rule in ("scale", "median"):
            est = RandomBinningFeatures(5, sigma=rule, random_state=0).fit(X * scale)
            np.testing.assert_allclose(est.sigma_, scale * data_sigma(rule, X, "cityblock"),
                                       rtol=1e-12)
            ref = RandomBinningFeatures(5, sigma=rule, random_state=0).fit(X)
            np.testing.assert_allclose(est.widths_, ref.widths_ * scale, rtol=1e-12)


def test_rules_with_a_kernel_instance_raise_and_degenerate_data():
    with pytest.raises(ValueError, match="sigma='scale' was given together with the kernel"):
        RandomBinningFeatures(5, kernel=LaplacianKernel(2.0), sigma="scale").fit(X)
    # constant data: "scale" uses gamma = 1 (sigma = sqrt(1/2)), "median" 1.0 (every distance 0)
    assert RandomBinningFeatures(5, sigma="scale").fit(np.ones((5, 3))).sigma_ == np.sqrt(0.5)
    assert RandomBinningFeatures(5, sigma="median").fit(np.ones((5, 3))).sigma_ == 1.0
    with pytest.raises(ValueError, match=r"sigma='scale'.*not a positive finite number"):
        big = np.full((4, 64), 1.5e308)
        big[::2] = -1.5e308
        RandomBinningFeatures(5, sigma="scale").fit(big)


@pytest.mark.parametrize("hash_size", [None, 8])
def test_rules_on_dask_raise_as_in_every_map(hash_size):
    """A dask fit computes nothing from the data: sigma="scale"/"median" raise
    NotImplementedError naming sigma, as for RFF, Fastfood and SORF."""
    da = pytest.importorskip("dask.array")
    Xd = da.from_array(X, chunks=(40, -1))
    for rule in ("scale", "median"):
        with pytest.raises(NotImplementedError, match=rf"sigma='{rule}' is estimated from the "
                                                      "data"):
            RandomBinningFeatures(5, sigma=rule, hash_size=hash_size, random_state=0).fit(Xd)
    # a numeric (or ARD) sigma still fits on dask, the in-memory map
    sig = np.linspace(0.5, 2.0, 5)
    est = RandomBinningFeatures(5, sigma=sig, hash_size=hash_size, random_state=0).fit(Xd)
    ref = RandomBinningFeatures(5, sigma=sig, hash_size=hash_size, random_state=0).fit(X)
    np.testing.assert_array_equal(est.sigma_, ref.sigma_)
    assert (est.transform(Xd).compute() != ref.transform(X)).nnz == 0
