"""Behaviour shared by every randfeat transformer: the kernel + sigma rule, random_state,
n_threads, keyword-only constructors, parameters changed after fit, atomic fits, tampered fitted
arrays, odd widths, data-driven sigma and scipy.sparse input."""

import inspect
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

import randfeat.fastfood as ff_module
from randfeat import Fastfood, RandomBinningFeatures, RandomFourierFeatures
from randfeat._base import data_sigma
from randfeat.kernels import GaussianKernel, InversePowerBinningKernel, LaplacianKernel

Z_MAX = 5.0

# (class, a kernel instance it can use, the same kernel by name)
TRANSFORMERS = [
    (RandomFourierFeatures, GaussianKernel(2.0), "gaussian"),
    (Fastfood, GaussianKernel(2.0), "gaussian"),
    (RandomBinningFeatures, LaplacianKernel(2.0), "laplacian"),
]
IDS = [c.__name__ for c, _, _ in TRANSFORMERS]
# the maps that publish their fit through RandomFeaturesBase._fit_atomic (binning's fit is the
# binning developer's)
ATOMIC = [RandomFourierFeatures, Fastfood]


def _X(n=20, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


# ----------------------------------------------------------------------- kernel + sigma
@pytest.mark.parametrize("cls, inst, name", TRANSFORMERS, ids=IDS)
def test_one_rule_for_kernel_and_sigma(cls, inst, name):
    """sigma=None: the kernel's own (an instance's sigma, 1.0 for a name); a number sets a named
    kernel's sigma; a number together with an instance is a ValueError (never ignored or
    multiplied in)."""
    X = _X()
    assert inspect.signature(cls).parameters["sigma"].default is None
    assert cls(8, kernel=inst, random_state=0).fit(X).kernel_ == inst
    assert cls(8, kernel=name, random_state=0).fit(X).kernel_.sigma == 1.0
    assert cls(8, kernel=name, sigma=2.0, random_state=0).fit(X).kernel_ == inst
    for sigma in (2.0, 1.0, 3):
        with pytest.raises(ValueError, match=rf"sigma={sigma!r} was given together with the "
                                             "kernel instance"):
            cls(8, kernel=inst, sigma=sigma).fit(X)
    # the instance and the name give the same map
    a = cls(8, kernel=inst, random_state=3).fit(X).transform(X)
    b = cls(8, kernel=name, sigma=2.0, random_state=3).fit(X).transform(X)
    if sp.issparse(a):
        a, b = a.toarray(), b.toarray()
    np.testing.assert_array_equal(a, b)


def test_one_laplacian_for_every_map():
    X = _X()
    lap = LaplacianKernel(1.5)
    RandomFourierFeatures(8, kernel=lap, random_state=0).fit_transform(X)
    RandomBinningFeatures(8, kernel=lap, random_state=0).fit_transform(X)
    with pytest.raises(ValueError, match="cannot be approximated by Fastfood"):
        Fastfood(8, kernel=lap).fit(X)
    with pytest.raises(ValueError, match="cannot be approximated by random Fourier features"):
        RandomFourierFeatures(8, kernel=InversePowerBinningKernel(a=2.0)).fit(X)
    with pytest.raises(ValueError, match="cannot be approximated by random binning"):
        RandomBinningFeatures(8, kernel=GaussianKernel()).fit(X)


@pytest.mark.parametrize("cls", [RandomFourierFeatures, Fastfood])
def test_rbf_is_the_gaussian(cls):
    X = _X()
    a = cls(8, kernel="rbf", sigma=1.3, random_state=1).fit(X)
    b = cls(8, kernel="gaussian", sigma=1.3, random_state=1).fit(X)
    assert a.kernel_ == b.kernel_ == GaussianKernel(1.3)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))


# ----------------------------------------------------------------------- random_state, threads
@pytest.mark.parametrize("cls, inst, name", TRANSFORMERS, ids=IDS)
def test_random_state_accepted_identically(cls, inst, name):
    X = _X()

    def out(rs):
        Z = cls(8, random_state=rs).fit_transform(X)
        return Z.toarray() if sp.issparse(Z) else Z

    for rs in (None, 0, np.int64(7), 2**32 - 1, np.random.SeedSequence(1),
               np.random.default_rng(1), np.random.PCG64(1), np.random.RandomState(1)):
        out(rs)
    np.testing.assert_array_equal(out(5), out(5))
    np.testing.assert_array_equal(out(np.random.SeedSequence(5)), out(np.random.SeedSequence(5)))
    for bad in ("0", 1.5, -1, 2**32, [1, 2]):
        with pytest.raises(InvalidParameterError, match="'random_state' parameter"):
            cls(8, random_state=bad).fit(X)


@pytest.mark.parametrize("cls, inst, name", TRANSFORMERS, ids=IDS)
def test_n_threads_zero_same_error_everywhere(cls, inst, name):
    with pytest.raises(InvalidParameterError, match=rf"'n_threads' parameter of {cls.__name__} "
                                                    r"must be .*Got 0 instead"):
        cls(8, n_threads=0).fit(_X())
    for bad in (1.5, "2"):
        with pytest.raises(InvalidParameterError, match="'n_threads' parameter"):
            cls(8, n_threads=bad).fit(_X())


@pytest.mark.parametrize("cls, inst, name", TRANSFORMERS, ids=IDS)
def test_keyword_only_after_the_width(cls, inst, name):
    params = list(inspect.signature(cls).parameters.values())
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    with pytest.raises(TypeError):
        cls(8, name)


# ----------------------------------------------------------------------- fitted state
@pytest.mark.parametrize("cls", ATOMIC)
def test_parameters_changed_after_fit_are_refused(cls):
    X = _X()
    est = cls(8, random_state=0).fit(X)
    Z = est.transform(X)
    est.set_params(n_threads=1)                       # does not change the map
    np.testing.assert_array_equal(est.transform(X), Z)
    for change in ({"n_components": 10}, {"features": "phase"}, {"sigma": 3.0},
                   {"random_state": 1}, {"kernel": "matern"}):
        est.set_params(**change)
        key = next(iter(change))
        with pytest.raises(NotFittedError, match=rf"parameters changed after fit \({key}="
                                                 r".*call fit again"):
            est.transform(X)
        est.set_params(n_components=8, features="paired", sigma=None, random_state=0,
                       kernel="gaussian")
        np.testing.assert_array_equal(est.transform(X), Z)
    est.set_params(n_components=10).fit(X)
    assert est.transform(X).shape == (20, 10)


class _Interrupting(GaussianKernel):
    """A Gaussian kernel whose samplers raise, to interrupt a fit midway."""

    def __init__(self, sigma=1.0, exc=KeyboardInterrupt):
        super().__init__(sigma)
        self.exc = exc

    def _boom(self, *args, **kwargs):
        raise self.exc()

    sample = sample_radius = _boom


@pytest.mark.parametrize("cls", ATOMIC)
@pytest.mark.parametrize("exc", [KeyboardInterrupt, MemoryError])
def test_fit_is_atomic(cls, exc):
    """An exception in the middle of a re-fit (here on data of another width) leaves the previous
    fitted state whole: the same attributes, the same objects, the same n_features_in_."""
    X = _X(d=5)
    est = cls(8, kernel=GaussianKernel(1.0), random_state=0).fit(X)
    Z = est.transform(X)
    before = dict(vars(est))
    est.set_params(kernel=_Interrupting(1.0, exc))
    with pytest.raises(exc):
        est.fit(_X(d=9))
    after = vars(est)
    assert set(after) == set(before)
    for k, v in before.items():
        if k != "kernel":
            assert after[k] is v, k
    assert est.n_features_in_ == 5
    est.set_params(kernel=GaussianKernel(1.0))
    np.testing.assert_array_equal(est.transform(X), Z)


def test_refit_drops_attributes_of_the_previous_fit():
    X = _X()
    est = RandomFourierFeatures(8, features="phase", random_state=0).fit(X)
    assert est.offsets_.shape == (8,)
    est.set_params(features="paired").fit(X)
    assert est.offsets_ is None


def test_fitted_arrays_are_read_only_and_checked():
    X = _X(d=13)
    ff = Fastfood(70, random_state=0).fit(X)
    Z = ff.transform(X)
    for name in ("B_packed_", "P_", "G_", "S_"):
        assert not getattr(ff, name).flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            getattr(ff, name)[0] = 0
    # out-of-range permutation: replaced, or made writeable and changed in place
    bad = ff.P_.copy()
    bad[1, 3] = ff.d_padded_
    ff.P_ = bad
    with pytest.raises(ValueError, match=r"fitted P_ has entries outside \[0, 16\)"):
        ff.transform(X)
    ff = Fastfood(70, random_state=0).fit(X)
    ff.transform(X)                     # bounds checked once, cached for the read-only array
    ff.P_.flags.writeable = True
    ff.P_[0, 0] = -5
    with pytest.raises(ValueError, match=r"fitted P_ has entries outside .*min -5"):
        ff.transform(X)
    for name, value in (("G_", np.zeros((3, 16), dtype=np.int64)),
                        ("P_", np.zeros((3, 16), dtype=np.int64)),
                        ("S_", np.zeros(35)[::-1]),
                        ("offsets_", None)):
        ff = Fastfood(70, features="phase" if name == "offsets_" else "paired",
                      random_state=0).fit(X)
        setattr(ff, name, value)
        with pytest.raises(ValueError, match=rf"fitted {name} .*call fit again"):
            ff.transform(X)
    ff = Fastfood(70, random_state=0).fit(X)
    ff.d_padded_ = 32
    with pytest.raises(ValueError, match="d_padded_/n_freq_/n_blocks_"):
        ff.transform(X)
    np.testing.assert_array_equal(Fastfood(70, random_state=0).fit(X).transform(X), Z)


@pytest.mark.parametrize("cls", ATOMIC)
def test_pickle_keeps_the_fitted_arrays_read_only(cls):
    import pickle

    X = _X()
    est = cls(9, random_state=0).fit(X)
    est2 = pickle.loads(pickle.dumps(est))
    for k in est2._fitted_keys:
        v = getattr(est2, k)
        if isinstance(v, np.ndarray):
            assert not v.flags.writeable, k
    np.testing.assert_array_equal(est2.transform(X), est.transform(X))


def test_rff_fitted_arrays_checked():
    X = _X()
    r = RandomFourierFeatures(8, random_state=0).fit(X)
    assert not r.frequencies_.flags.writeable
    r.frequencies_ = r.frequencies_[:3]
    with pytest.raises(ValueError, match=r"fitted frequencies_ must be .*\(4, 5\)"):
        r.transform(X)


# ----------------------------------------------------------------------- frequencies_
@pytest.mark.parametrize("cls", ATOMIC)
@pytest.mark.parametrize("features", ["paired", "phase"])
def test_frequencies_reproduce_the_projections(cls, features, global_dtype):
    X = _X(d=6).astype(global_dtype)
    est = cls(9, features=features, random_state=0).fit(X)
    W = est.frequencies_
    m = 5 if features == "paired" else 9
    assert W.shape == (m, 6) and W.dtype == global_dtype
    P = X.astype(np.float64) @ W.astype(np.float64).T
    Z = est.transform(X).astype(np.float64)
    s = math.sqrt(2 / 9)
    tol = 1e-4 if global_dtype == np.float32 else 1e-10
    if features == "phase":
        np.testing.assert_allclose(Z, s * np.cos(P + est.offsets_), atol=tol)
    else:
        np.testing.assert_allclose(Z[:, :4], s * np.cos(P[:, :4]), atol=tol)
        np.testing.assert_allclose(Z[:, 4:8], s * np.sin(P[:, :4]), atol=tol)
        np.testing.assert_allclose(Z[:, 8], s * np.cos(P[:, 4] + est.offsets_[0]), atol=tol)


# ----------------------------------------------------------------------- odd widths
def _odd_width_estimates(cls, X, D, seed, R=1000):
    """k-hat over R independent fits (one column per pair of rows of X): of the map, and of the
    same map with its phase-shifted feature forgotten (a deliberately broken map)."""
    seeds = np.random.SeedSequence(seed).spawn(R)
    good = np.empty((R, len(X) // 2))
    broken = np.empty_like(good)
    for r, s in enumerate(seeds):
        Z = cls(D, sigma=1.0, random_state=s, n_threads=1).fit_transform(X)
        good[r] = np.sum(Z[0::2] * Z[1::2], axis=1)
        broken[r] = good[r] - Z[0::2, -1] * Z[1::2, -1]
    return good, broken


@pytest.mark.parametrize("cls", ATOMIC)
def test_odd_paired_width_is_unbiased(cls, global_random_seed):
    """D = 3 (one pair and one phase-shifted feature), Gaussian kernel, three distances:
    E[k-hat] = k.  R = 1,000 independent fits; z-test of the mean with |z| < 5 (two-sided false
    alarm 5.7e-7 per distance).  For RFF the exact variance
    [(D-1)(1 + k2 - 2k^2) + (1 + k2/2 - k^2)] / D^2 (k2 = k(2 Delta)) is used, and itself
    checked: s^2 / var within 5 standard errors sqrt((m4/var^2 - 1)/R) (m4 the sample fourth
    central moment).  Fastfood's rows share G, Pi and B, so its sample variance is used.  The
    same z-test rejects the map without its phase feature (bias k/3: about 30 standard errors
    at k = 0.835, 10-15 at k = 1/2)."""
    d = 3
    r = np.array([0.6, 1.1774, 2.0])           # k = 0.835, 0.5, 0.135
    X = np.zeros((6, d))
    X[1::2, 0] = r
    k = np.exp(-r**2 / 2)
    k2 = np.exp(-2 * r**2)
    D = 3
    var = ((D - 1) * (1 + k2 - 2 * k**2) + (1 + k2 / 2 - k**2)) / D**2
    good, broken = _odd_width_estimates(cls, X, D, global_random_seed)
    R = good.shape[0]
    for kh, ok in ((good, True), (broken, False)):
        v = var if cls is RandomFourierFeatures else kh.var(axis=0, ddof=1)
        z = (kh.mean(axis=0) - k) / np.sqrt(v / R)
        if ok:
            assert np.all(np.abs(z) < Z_MAX), z
        else:
            assert np.abs(z).max() > Z_MAX, z
    if cls is RandomFourierFeatures:
        s2 = good.var(axis=0, ddof=1)
        m4 = np.mean((good - good.mean(axis=0)) ** 4, axis=0)
        se = np.sqrt((m4 / s2**2 - 1) / R)
        assert np.all(np.abs(s2 / var - 1) < Z_MAX * se), (s2 / var, se)


@pytest.mark.parametrize("cls", ATOMIC)
@pytest.mark.parametrize("D", [1, 3, 7, 101])
def test_odd_width_layout(cls, D):
    X = _X(d=4)
    est = cls(D, random_state=0).fit(X)
    Z = est.transform(X)
    assert Z.shape == (20, D)
    assert est.offsets_.shape == (1,)
    np.testing.assert_allclose((Z[:, :-1] ** 2).sum(axis=1), (D - 1) / D, rtol=1e-12)
    # the first D - 1 columns are the even map's pairs with D // 2 frequencies, rescaled
    if D > 1:
        even = cls(D - 1, random_state=0).fit(X)
        np.testing.assert_array_equal(even.frequencies_, est.frequencies_[:-1])


# ----------------------------------------------------------------------- data-driven sigma
def test_sigma_scale_matches_sklearn_gamma_scale():
    X = _X(50, 7) * 3.0
    gamma = 1.0 / (X.shape[1] * X.var())              # sklearn's gamma="scale"
    for cls in ATOMIC:
        est = cls(8, sigma="scale", random_state=0).fit(X)
        assert est.sigma_ == pytest.approx(1.0 / math.sqrt(2 * gamma), rel=1e-12)
        assert est.kernel_ == GaussianKernel(est.sigma_)
        ref = cls(8, sigma=est.sigma_, random_state=0).fit(X)
        np.testing.assert_array_equal(est.transform(X), ref.transform(X))
    assert data_sigma("scale", np.ones((5, 3))) == pytest.approx(math.sqrt(0.5))   # var 0


def test_sigma_median():
    from scipy.spatial.distance import pdist

    X = _X(60, 4)
    for cls in ATOMIC:
        est = cls(8, sigma="median", random_state=0).fit(X)
        assert est.sigma_ == pytest.approx(np.median(pdist(X)), rel=1e-12)
    big = _X(3000, 3, seed=1)
    s1 = RandomFourierFeatures(8, sigma="median", random_state=0).fit(big).sigma_
    s2 = RandomFourierFeatures(8, sigma="median", random_state=9).fit(big).sigma_
    assert s1 == s2                                   # seeded subsample: depends on X only
    assert s1 == pytest.approx(np.median(pdist(big)), rel=0.05)
    assert data_sigma("median", np.ones((4, 2))) == 1.0                 # every distance zero
    Xs = sp.random(80, 10, density=0.3, random_state=0, format="csr")
    assert data_sigma("median", Xs) == pytest.approx(data_sigma("median", Xs.toarray()))
    assert data_sigma("scale", Xs) == pytest.approx(data_sigma("scale", Xs.toarray()))
    with pytest.raises(ValueError, match="sigma='scale' was given together with the kernel"):
        RandomFourierFeatures(8, kernel=GaussianKernel(), sigma="scale").fit(X)
    # random binning takes the rules too (it used to refuse them), "median" with the L1
    # distance of its separable kernels (tests/test_binning_sigma.py)
    assert RandomBinningFeatures(8, sigma="median", random_state=0).fit(X).sigma_ == \
        pytest.approx(np.median(pdist(X, "cityblock")), rel=1e-12)


# ----------------------------------------------------------------------- sparse input
@pytest.mark.parametrize("features", ["paired", "phase"])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("D", [64, 63])
def test_rff_sparse_input(features, fmt, D, global_dtype):
    """Same features as the dense input up to the summation order of the projections:
    |Z_sparse - Z_dense| <= sqrt(2/D) (2 gamma_d sum_k |x_k w_jk| + 8 eps) per entry."""
    Xs = sp.random(40, 30, density=0.2, random_state=1, format=fmt, dtype=global_dtype) * 3
    X = Xs.toarray()
    r = RandomFourierFeatures(D, features=features, random_state=0).fit(X)
    Zs, Zd = r.transform(Xs), r.transform(X)
    assert Zs.dtype == Zd.dtype == global_dtype and Zs.shape == (40, D)
    eps = np.finfo(global_dtype).eps / 2
    d = X.shape[1]
    gamma = d * eps / (1 - d * eps)
    A = np.abs(X).astype(np.float64) @ np.abs(r.frequencies_.astype(np.float64)).T
    m = D // 2
    if features == "paired":
        cols = np.hstack([A[:, :m], A[:, :m]] + ([A[:, m:]] if D % 2 else []))
    else:
        cols = A
    bound = math.sqrt(2 / D) * (2 * gamma * cols + 8 * eps)
    assert np.all(np.abs(Zs.astype(np.float64) - Zd) <= bound)
    # fit on sparse data too
    r2 = RandomFourierFeatures(D, features=features, random_state=0).fit(Xs)
    np.testing.assert_array_equal(r2.frequencies_, r.frequencies_)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_fastfood_sparse_input_densified_per_block(fmt, global_dtype, monkeypatch):
    Xs = sp.random(50, 20, density=0.2, random_state=2, format=fmt, dtype=global_dtype)
    X = Xs.toarray()
    for features in ("paired", "phase"):
        ff = Fastfood(33, features=features, random_state=0).fit(Xs)
        Zd = ff.transform(X)
        np.testing.assert_array_equal(ff.transform(Xs), Zd)
        monkeypatch.setattr(ff_module, "_SPARSE_BLOCK_ELEMENTS", 7 * 20)   # 8 blocks of 7 rows
        seen = []
        compute = Fastfood._compute

        def spy(self, Xb, mode, seen=seen, compute=compute):
            seen.append(Xb.shape[0])
            return compute(self, Xb, mode)

        monkeypatch.setattr(Fastfood, "_compute", spy)
        np.testing.assert_array_equal(ff.transform(Xs), Zd)
        assert max(seen) == 7 and sum(seen) == 50
        monkeypatch.undo()


def test_sparse_bad_input():
    r = RandomFourierFeatures(8, random_state=0).fit(_X(d=5))
    bad = sp.csr_matrix(np.array([[np.nan, 0, 0, 0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        r.transform(bad)
    with pytest.raises(ValueError, match="X has 4 features"):
        r.transform(sp.csr_matrix(np.ones((2, 4))))
