"""ARD length scales (issue 31): ``sigma`` of shape (n_features,) in the kernels, every
shift-invariant map and ExactKernelRidge.  Deterministic (no statistical claim): validation,
fitted attributes, pickling and cloning, and the two equivalences

* ARD with equal scales ``(s, ..., s)`` is bit-identical to the scalar ``sigma=s``, in every map,
  every sampling, both feature maps, float32 and float64;
* ARD with ``sigma`` equals the unit-scale map on ``X / sigma``: bit for bit for Fastfood and
  SORF on ``X * (1 / sigma)`` (the reciprocals rounded to X's dtype: how they scale X) and for
  ExactKernelRidge on ``X / sigma`` (the kernel divides); for RFF the frequencies are bit for
  bit the unit-scale ones divided by sigma and the features agree within the rounding of the two
  projections (x * (w / sigma) and (x / sigma) * w round differently); for random binning the
  pitches are bit for bit the unit-scale ones times sigma (the cells of x and of x / sigma round
  differently, so the columns are compared in law, tests/test_ard_law.py).

The statistical checks of the ARD kernel (z-tests against the exact ARD kernel) and the mutants
(sigma squared, sigma on the wrong axis) are in tests/test_ard_law.py.
"""

import copy
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from randfeat import (
    ExactKernelRidge,
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    CustomBinningKernel,
    GaussianKernel,
    InversePowerBinningKernel,
    LaplacianKernel,
    MaternKernel,
    ShiftInvariantKernel,
    StretchedExponentialBinningKernel,
    get_kernel,
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 4))
Y = np.sin(X[:, 0]) + X[:, 1]
SIGMA = np.array([0.5, 1.0, 2.0, 4.0])


def _chi(n, d, rng):
    return np.sqrt(rng.chisquare(d, n))


# name -> factory(**kw) of an estimator whose sigma may be an array
ESTIMATORS = {
    "rff": lambda **kw: RandomFourierFeatures(17, random_state=0, **kw),
    "fastfood": lambda **kw: Fastfood(17, random_state=0, **kw),
    "fastfood_radial": lambda **kw: Fastfood(17, radial=_chi, random_state=0, **kw),
    "sorf": lambda **kw: StructuredOrthogonalFeatures(17, random_state=0, **kw),
    "binning": lambda **kw: RandomBinningFeatures(9, random_state=0, **kw),
    "binning_hashed": lambda **kw: RandomBinningFeatures(9, hash_size=8, random_state=0, **kw),
    "exact": lambda **kw: ExactKernelRidge(alphas=1.0, **kw),
}


def _out(est, Xt):
    Z = est.predict(Xt) if isinstance(est, ExactKernelRidge) else est.transform(Xt)
    return Z.toarray() if sp.issparse(Z) else Z


# ------------------------------------------------------------------------------ kernels
ALL_KERNELS = [
    lambda s: GaussianKernel(s), lambda s: LaplacianKernel(s), lambda s: CauchyKernel(s),
    lambda s: MaternKernel(s, nu=0.5), lambda s: MaternKernel(s, nu=2.5),
    lambda s: BallSumKernel(s, t=2), lambda s: BallSumKernel(s, t=1, dim=6),
    lambda s: InversePowerBinningKernel(a=1.5, sigma=s),
    lambda s: StretchedExponentialBinningKernel(q=0.5, sigma=s),
    lambda s: CustomBinningKernel(lambda size, rng: np.ones(size),
                                  profile=lambda t: np.maximum(0.0, 1.0 - t), sigma=s),
]
KIDS = ["gauss", "lap", "cauchy", "mat05", "mat25", "ball2", "ball1d6", "invpow", "stretched",
        "hat"]


@pytest.mark.parametrize("make", ALL_KERNELS, ids=KIDS)
def test_every_kernel_admits_ard(make):
    """k_sigma(Delta) = k_1(Delta / sigma) coordinate-wise, for k and the Gram matrix, against
    the unit-scale kernel on the divided differences (computed here); equal scales give the
    scalar kernel's values bit for bit."""
    kern, unit = make(SIGMA), make(1.0)
    assert kern.ard and not unit.ard
    D = RNG.normal(size=(7, 4))
    np.testing.assert_array_equal(kern.k(D), unit.k(D / SIGMA))
    A, B = X[:6], X[6:11]
    np.testing.assert_allclose(kern(A, B), unit(A / SIGMA, B / SIGMA), rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(kern(A, B), kern.gram(A, B))
    np.testing.assert_array_equal(np.diag(kern(A)), 1.0)
    eq, sc = make(np.full(4, 1.7)), make(1.7)
    np.testing.assert_array_equal(eq.k(D), sc.k(D))
    np.testing.assert_array_equal(eq(A, B), sc(A, B))
    base, scales = eq.ard_split()
    assert type(base) is type(sc) and base.sigma == 1.7 and scales is None
    base, scales = kern.ard_split()
    assert type(base) is type(unit) and base.sigma == 1.0 and scales is kern.sigma
    assert base._params().keys() == unit._params().keys()


@pytest.mark.parametrize("make", ALL_KERNELS[:7], ids=KIDS[:7])
def test_spectral_samples_are_unit_samples_divided_by_sigma(make):
    """sample(): the unit-scale kernel's frequencies divided by sigma column-wise (the same
    random stream), bit for bit; equal scales are the scalar kernel's frequencies, bit for bit;
    sigma_p2 = sigma_p2(unit) * mean(1 / sigma^2)."""
    kern, unit = make(SIGMA), make(1.0)
    np.testing.assert_array_equal(kern.sample(50, 4, 7), unit.sample(50, 4, 7) / SIGMA)
    np.testing.assert_array_equal(make(np.full(4, 0.3)).sample(50, 4, 7),
                                  make(0.3).sample(50, 4, 7))
    p2 = unit.sigma_p2(4)
    expected = p2 * np.mean(1 / SIGMA**2) if np.isfinite(p2) else np.inf
    assert kern.sigma_p2(4) == pytest.approx(expected, rel=1e-15)
    if kern.isotropic:
        with pytest.raises(ValueError, match="unequal length scales"):
            kern.sample_radius(5, 4, 0)
        np.testing.assert_array_equal(make(np.full(4, 0.3)).sample_radius(9, 4, 3),
                                      make(0.3).sample_radius(9, 4, 3))


@pytest.mark.parametrize("make", ALL_KERNELS[7:] + [ALL_KERNELS[1]], ids=KIDS[7:] + ["lap"])
def test_pitches_are_unit_pitches_times_sigma(make):
    kern, unit = make(SIGMA), make(1.0)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(kern.sample_pitch((6, 4), rng_a),
                                  unit.sample_pitch((6, 4), rng_b) * SIGMA)
    with pytest.raises(ValueError, match="does not end with 4 coordinates"):
        kern.sample_pitch((6, 3), rng_a)
    np.testing.assert_array_equal(kern.profile(np.ones((2, 4))),
                                  unit.profile(np.ones((2, 4)) / SIGMA))
    np.testing.assert_array_equal(kern.rescaled(2.0).sigma, 2.0 * SIGMA)


@pytest.mark.parametrize("bad, err, match", [
    (np.array([1.0, -1.0, 2.0]), ValueError, r"sigma\[1\] = -1\.0"),
    (np.array([1.0, 0.0, 2.0]), ValueError, r"sigma\[1\] = 0\.0"),
    (np.array([1.0, np.nan, 2.0]), ValueError, r"sigma\[1\] = nan"),
    (np.array([np.inf, 1.0, np.inf]), ValueError, r"sigma\[0\] = inf \(2 such entries\)"),
    (np.ones((1, 3)), ValueError, r"must be 1-D.*shape \(1, 3\)"),
    (np.ones(0), ValueError, "empty array"),
    ([True, False, True], TypeError, "dtype bool"),
    (["a", "b"], TypeError, "sigma must be"),
    (np.array([1 + 1j, 1, 1]), TypeError, "dtype complex"),
])
def test_kernel_sigma_errors(bad, err, match):
    with pytest.raises(err, match=match):
        GaussianKernel(bad)
    with pytest.raises(err, match=r"sigma"):
        get_kernel("laplacian", bad, who="someone")


def test_kernel_dimension_and_state():
    kern = GaussianKernel(SIGMA)
    with pytest.raises(ValueError, match=r"sigma has 4 length scales .* input has 3 features"):
        kern.k(np.ones(3))
    with pytest.raises(ValueError, match=r"sigma has 4 length scales .* input has 5 features"):
        kern(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"sigma has 4 length scales .* input has 2 features"):
        kern.sample(3, 2, 0)
    # a read-only copy: the caller's array is not kept (nor modified)
    s = SIGMA.copy()
    kern = GaussianKernel(s)
    s[0] = 99.0
    assert kern.sigma[0] == 0.5 and not kern.sigma.flags.writeable
    for k2 in (pickle.loads(pickle.dumps(kern)), copy.deepcopy(kern)):
        assert k2 == kern and hash(k2) == hash(kern) and not k2.sigma.flags.writeable
    assert GaussianKernel(SIGMA) != GaussianKernel(SIGMA * 2)
    assert GaussianKernel(SIGMA) != GaussianKernel(1.0) and GaussianKernel(1.0) != kern
    assert "array([0.5, 1. , 2. , 4. ])" in repr(kern)
    # a 0-d array and an integer list are fine
    assert GaussianKernel(np.array(2.0)).sigma == 2.0
    np.testing.assert_array_equal(GaussianKernel([1, 2]).sigma, [1.0, 2.0])
    # a 1-D BinningKernel with one length scale takes a scalar difference
    assert LaplacianKernel([2.0]).k(1.0) == pytest.approx(math.exp(-0.5))


def test_subclass_that_applies_sigma_itself_refuses_ard():
    """A kernel subclass outside randfeat.kernels that overrides a public method applying sigma
    may use it as a number: ARD scales are refused for it, with the fix; one that implements the
    unit-scale hooks only takes them."""

    class Own(ShiftInvariantKernel):
        spectral = True

        def k(self, delta):                                  # applies sigma as a number
            return np.exp(-np.sum(np.square(delta), axis=-1) / (2 * self.sigma**2))

    class Hooks(ShiftInvariantKernel):
        spectral = True

        def _k_scaled(self, u):
            return np.exp(-0.5 * np.sum(u * u, axis=-1))

        def _sample(self, n, d, rng):
            return rng.standard_normal((n, d)) / self.sigma

    assert Own(2.0).sigma == 2.0
    with pytest.raises(ValueError, match=r"Own\.k is defined in .* may treat sigma as a number"):
        Own(SIGMA)
    h = Hooks(SIGMA)
    np.testing.assert_array_equal(h.k(np.ones(4)), GaussianKernel(SIGMA).k(np.ones(4)))
    np.testing.assert_array_equal(h.sample(5, 4, 1), GaussianKernel(SIGMA).sample(5, 4, 1))
    Z = RandomFourierFeatures(8, kernel=h, random_state=0).fit(X).frequencies_
    np.testing.assert_array_equal(Z, RandomFourierFeatures(8, kernel=GaussianKernel(SIGMA),
                                                           random_state=0).fit(X).frequencies_)


# ------------------------------------------------------------------------------ estimators
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("bad, match", [
    (np.ones(3), r"sigma has 3 length scales \(ARD, one per feature\) but X has 4 features; "
                 r"pass sigma of shape \(4,\)"),
    (np.ones(5), r"sigma has 5 length scales"),
    (np.array([1.0, 2.0, -3.0, 1.0]), r"sigma\[2\] = -3\.0"),
    (np.array([1.0, 2.0, 0.0, 1.0]), r"sigma\[2\] = 0\.0"),
    (np.array([1.0, np.nan, 1.0, 1.0]), r"sigma\[1\] = nan"),
    (np.array([1.0, 1.0, 1.0, np.inf]), r"sigma\[3\] = inf"),
    (np.ones((2, 4)), r"sigma as an array must be 1-D, .*got an array of shape \(2, 4\)"),
    (np.ones((4, 1)), r"sigma as an array must be 1-D"),
])
def test_estimator_sigma_errors_name_sigma(name, bad, match):
    """Wrong length, non-positive, non-finite and 2-D length scales are ValueErrors naming sigma,
    what was received and the fix, raised by fit before anything is drawn; a previous fit is
    left whole."""
    est = ESTIMATORS[name]()
    est.fit(X, Y)
    before = _out(est, X)
    est.set_params(sigma=bad)
    with pytest.raises(ValueError, match=match):
        est.fit(X, Y)
    est.set_params(sigma=None)
    np.testing.assert_array_equal(_out(est, X), before)


@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - {"sorf"}))  # SORF has no kernel
def test_kernel_instance_with_ard_scales(name):
    """An instance may carry ARD scales (then sigma stays None); their number is checked against
    X; the instance and the name + array give the same map."""
    kern = (LaplacianKernel if name.startswith("binning") else GaussianKernel)(SIGMA)
    a = ESTIMATORS[name](kernel=kern).fit(X, Y)
    b = ESTIMATORS[name](kernel=kern.name, sigma=SIGMA).fit(X, Y)
    np.testing.assert_array_equal(_out(a, X), _out(b, X))
    with pytest.raises(ValueError, match=r"sigma of the kernel instance .* has 4 length scales "
                                         r"\(ARD, one per feature\) but X has 3 features"):
        ESTIMATORS[name](kernel=kern).fit(X[:, :3], Y)
    with pytest.raises(ValueError, match="was given together with the kernel instance"):
        ESTIMATORS[name](kernel=kern, sigma=SIGMA).fit(X, Y)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fitted_sigma_get_params_clone_pickle(name):
    """sigma_ keeps the array (read-only float64 copy, also after unpickling); get_params keeps
    the user's object; clone and pickle give the same map; changing sigma (set_params, or the
    array in place) after fit makes transform raise NotFittedError until the next fit."""
    s = [0.5, 1.0, 2.0, 4.0]                          # a list: kept as given by get_params
    est = ESTIMATORS[name](sigma=s).fit(X, Y)
    assert est.get_params()["sigma"] is s
    assert isinstance(est.sigma_, np.ndarray) and est.sigma_.dtype == np.float64
    np.testing.assert_array_equal(est.sigma_, SIGMA)
    assert not est.sigma_.flags.writeable
    kern = getattr(est, "kernel_", None)       # SORF has none; Fastfood(radial=...) None
    assert kern is None or kern.sigma is est.sigma_ or np.array_equal(kern.sigma, est.sigma_)
    Z = _out(est, X)
    np.testing.assert_array_equal(_out(clone(est).fit(X, Y), X), Z)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_out(est2, X), Z)
    assert not est2.sigma_.flags.writeable
    if name == "exact":
        return                                        # the learners do not track parameters
    arr = SIGMA.copy()
    est = ESTIMATORS[name](sigma=arr).fit(X, Y)
    np.testing.assert_array_equal(_out(est, X), Z)
    est.set_params(sigma=arr.copy())                  # equal values: still fitted
    np.testing.assert_array_equal(_out(est, X), Z)
    arr2 = est.get_params()["sigma"]
    arr2[0] = 3.0                                     # changed in place after fit
    with pytest.raises(NotFittedError, match="sigma="):
        _out(est, X)
    est.set_params(sigma=SIGMA * 2)
    with pytest.raises(NotFittedError, match="the parameters changed after fit"):
        _out(est, X)
    est.fit(X, Y)
    assert _out(est, X).shape[0] == len(X)


def test_scale_and_median_stay_scalars():
    """"scale" and "median" are one number, whatever the map (there is no ARD rule)."""
    for name in ("rff", "fastfood", "sorf", "binning", "exact"):
        for rule in ("scale", "median"):
            est = ESTIMATORS[name](sigma=rule).fit(X, Y)
            assert isinstance(est.sigma_, float)


# ------------------------------------------------------------------------------ equal scales
SAMPLINGS = ["iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton"]


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("features, D", [("paired", 16), ("paired", 17), ("phase", 16)])
def test_rff_equal_scales_bit_identical_to_scalar(sampling, features, D, global_dtype):
    kernels = ["gaussian"] if sampling == "orthogonal_unit" else ["gaussian", "matern"]
    if sampling.startswith("qmc") or sampling == "iid":
        kernels += ["laplacian", "cauchy"]
    Xd = X.astype(global_dtype)
    for kernel in kernels:
        kw = dict(kernel=kernel, features=features, sampling=sampling, random_state=3)
        a = RandomFourierFeatures(D, sigma=np.full(4, 1.3), **kw).fit(Xd)
        b = RandomFourierFeatures(D, sigma=1.3, **kw).fit(Xd)
        np.testing.assert_array_equal(a.frequencies_, b.frequencies_)
        np.testing.assert_array_equal(a.transform(Xd), b.transform(Xd))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("sparse", [False, True])
def test_equal_scales_bit_identical_to_scalar(name, sparse, global_dtype):
    """Every map (and exact ridge): sigma = (s, ..., s) gives the scalar sigma = s map, bit for
    bit, dense and sparse input, float32 and float64."""
    if sparse and name == "exact":
        pytest.skip("ExactKernelRidge takes dense input")
    Xd = X.astype(global_dtype)
    Xt = sp.csr_matrix(Xd) if sparse else Xd
    a = ESTIMATORS[name](sigma=np.full(4, 1.3)).fit(Xt, Y)
    b = ESTIMATORS[name](sigma=1.3).fit(Xt, Y)
    np.testing.assert_array_equal(_out(a, Xt), _out(b, Xt))
    if name.startswith("fastfood"):
        np.testing.assert_array_equal(a.frequencies_, b.frequencies_)


# ------------------------------------------------------------------------------ X / sigma
def _scaled(Xd):
    """X / sigma as the structured maps compute it: X * (1 / sigma), the reciprocals computed in
    float64 and rounded to X's dtype, one multiplication in X's dtype."""
    return Xd * (1.0 / SIGMA).astype(Xd.dtype)


@pytest.mark.parametrize("name", ["fastfood", "fastfood_radial", "sorf", "exact"])
@pytest.mark.parametrize("features", ["paired", "phase"])
def test_ard_is_the_unit_map_on_divided_inputs_bit_for_bit(name, features, global_dtype):
    """Fastfood, SORF (dense and sparse, both feature maps, odd width) and ExactKernelRidge:
    the ARD map on X is the sigma = 1 map on X / sigma, bit for bit (X * (1 / sigma) for the
    structured maps); several ARD blocks of rows give the same bits."""
    if name == "exact":
        if features == "phase" or global_dtype == np.float32:
            pytest.skip("one case: exact ridge computes in float64")
        a = ExactKernelRidge(sigma=SIGMA, alphas=[0.1, 1.0], random_state=0).fit(X, Y)
        b = ExactKernelRidge(sigma=1.0, alphas=[0.1, 1.0], random_state=0).fit(X / SIGMA, Y)
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
        np.testing.assert_array_equal(a.predict(X[:7]), b.predict(X[:7] / SIGMA))
        np.testing.assert_array_equal(a.predict_path(X[:7]), b.predict_path(X[:7] / SIGMA))
        return
    Xd = X.astype(global_dtype)
    a = ESTIMATORS[name](sigma=SIGMA, features=features).fit(Xd)
    b = ESTIMATORS[name](sigma=1.0, features=features).fit(Xd)
    ref = b.transform(_scaled(Xd))
    np.testing.assert_array_equal(a.transform(Xd), ref)
    np.testing.assert_array_equal(a.transform(sp.csc_matrix(Xd)), ref)
    np.testing.assert_array_equal(a._project(Xd), b._project(_scaled(Xd)))
    assert a.transform(Xd).dtype == global_dtype
    import randfeat._base as base
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(base, "ARD_BLOCK_ELEMENTS", 7 * 4)          # blocks of 7 rows
        np.testing.assert_array_equal(a.transform(Xd), ref)


def test_fastfood_frequencies_are_divided_by_sigma():
    """Fastfood's frequencies_ (computed through the transform) are the unit-scale ones divided
    by sigma column-wise (to rounding: 1/sigma is applied to the unit vectors first)."""
    a = Fastfood(64, sigma=SIGMA, random_state=0).fit(X)
    b = Fastfood(64, sigma=1.0, random_state=0).fit(X)
    np.testing.assert_allclose(a.frequencies_, b.frequencies_ / SIGMA, rtol=1e-14, atol=0)
    np.testing.assert_allclose(X @ a.frequencies_.T, a._project(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("features, D", [("paired", 64), ("paired", 63), ("phase", 64)])
def test_rff_ard_frequencies_and_features(sampling, features, D, global_dtype):
    """RFF: frequencies_ are the unit-scale frequencies divided by sigma column-wise (same random
    stream, float64, then cast), bit for bit, for every sampling; the features equal the
    unit-scale map's on X / sigma within the rounding of the two projections, per entry
    sqrt(2/D) (2 gamma_{d+3} sum_k |x_k w_jk| + 8 eps) (the terms x_k * fl(w_jk) and
    fl(x_k / sigma_k) * fl(w_1jk) differ by a few roundings, and each sum by gamma_d)."""
    Xd = X.astype(global_dtype)
    kw = dict(features=features, sampling=sampling, random_state=4)
    a = RandomFourierFeatures(D, sigma=SIGMA, **kw).fit(Xd)
    b = RandomFourierFeatures(D, sigma=1.0, **kw).fit(X)            # float64 frequencies
    np.testing.assert_array_equal(a.frequencies_, (b.frequencies_ / SIGMA).astype(global_dtype))
    if a.offsets_ is not None:
        np.testing.assert_array_equal(a.offsets_, b.offsets_.astype(global_dtype))
    b32 = RandomFourierFeatures(D, sigma=1.0, **kw).fit(Xd)
    Za = a.transform(Xd).astype(np.float64)
    Zb = b32.transform(_scaled(Xd)).astype(np.float64)
    eps = np.finfo(global_dtype).eps / 2
    d = X.shape[1] + 3
    gamma = d * eps / (1 - d * eps)
    A = np.abs(Xd.astype(np.float64)) @ np.abs(a.frequencies_.astype(np.float64)).T
    m = D // 2
    cols = (np.hstack([A[:, :m], A[:, :m]] + ([A[:, m:]] if D % 2 else []))
            if features == "paired" else A)
    assert np.all(np.abs(Za - Zb) <= math.sqrt(2 / D) * (2 * gamma * cols + 8 * eps))


def test_rff_ard_refuses_samplings_that_read_the_data(monkeypatch):
    """A sampling that is not known to take ARD scales by a column division is refused (a
    data-dependent sampler would need X / sigma), instead of a silently wrong law."""
    import randfeat._sampling as smp
    import randfeat.fourier as fourier

    monkeypatch.setattr(fourier, "SAMPLINGS", (*smp.SAMPLINGS, "other"), raising=True)
    monkeypatch.setitem(RandomFourierFeatures._parameter_constraints, "sampling",
                        [str])
    with pytest.raises(ValueError, match=r"sigma with one length scale per feature \(ARD\) is "
                                         r"not supported with sampling='other'"):
        RandomFourierFeatures(8, sigma=SIGMA, sampling="other").fit(X)


@pytest.mark.parametrize("d", [2, 5])        # quadrature (d <= 2) and pool leverage laws
@pytest.mark.parametrize("sparse", [False, True])
def test_rff_leverage_ard_is_unit_scale_leverage_on_scaled_rows(d, sparse):
    """sampling="leverage" with ARD scales: the unit-scale kernel's leverage law on the rows
    X / sigma, the frequencies divided by sigma column-wise -- bit for bit the unit-scale fit on
    X / sigma (same draws, weights, ridge and statistical dimension), features within the
    rounding of the two projections.  A broken seam (the density of the unscaled rows, or the
    frequencies left undivided) changes the weights or the frequencies and fails here."""
    rng = np.random.default_rng(5)
    Xd = rng.standard_normal((60, d))
    s = np.linspace(0.5, 2.5, d)
    a = RandomFourierFeatures(64, sigma=s, sampling="leverage", random_state=3).fit(
        sp.csr_matrix(Xd) if sparse else Xd)
    b = RandomFourierFeatures(64, sigma=1.0, sampling="leverage", random_state=3).fit(Xd / s)
    np.testing.assert_array_equal(a.frequency_weights_, b.frequency_weights_)
    np.testing.assert_array_equal(a.frequencies_, b.frequencies_ / s)
    assert a.leverage_ridge_ == b.leverage_ridge_
    assert a.statistical_dimension_ == b.statistical_dimension_
    np.testing.assert_allclose(a.transform(Xd), b.transform(Xd / s), rtol=0, atol=1e-12)
    # the law differs from the one of the unscaled rows (the seam is not a no-op)
    c = RandomFourierFeatures(64, sigma=1.0, sampling="leverage", random_state=3).fit(Xd)
    assert not np.array_equal(a.frequency_weights_, c.frequency_weights_)


def test_rff_leverage_equal_ard_scales_are_the_scalar_sigma():
    """Equal ARD scales (s, ..., s) with sampling="leverage" are sigma=s bit for bit."""
    rng = np.random.default_rng(6)
    Xd = rng.standard_normal((40, 3))
    a = RandomFourierFeatures(32, sigma=[1.5] * 3, sampling="leverage", random_state=1).fit(Xd)
    b = RandomFourierFeatures(32, sigma=1.5, sampling="leverage", random_state=1).fit(Xd)
    np.testing.assert_array_equal(a.frequencies_, b.frequencies_)
    np.testing.assert_array_equal(a.transform(Xd), b.transform(Xd))


def test_binning_pitches_are_unit_pitches_times_sigma():
    """Binning: widths_ and shifts_ are the unit-scale grids times sigma, bit for bit (the same
    random stream: U * (t * sigma) is rounded as (U * t) * sigma is not, so the shifts are
    compared to the rounding); the same number of grids, every kernel."""
    for kernel, params in (("laplacian", None), ("inverse_power", {"a": 1.5}),
                           ("stretched_exponential", {"q": 0.5})):
        a = RandomBinningFeatures(50, kernel=kernel, kernel_params=params, sigma=SIGMA,
                                  random_state=1).fit(X)
        b = RandomBinningFeatures(50, kernel=kernel, kernel_params=params, sigma=1.0,
                                  random_state=1).fit(X)
        np.testing.assert_array_equal(a.widths_, b.widths_ * SIGMA)
        fin = np.isfinite(a.widths_)
        np.testing.assert_allclose(a.shifts_[fin], (b.shifts_ * SIGMA)[fin], rtol=4e-16)
        assert np.all((a.shifts_ >= 0) & ((a.shifts_ < a.widths_) | ~fin))
        assert a.hash_salt_ == b.hash_salt_
