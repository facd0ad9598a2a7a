"""Tests of randfeat.Fastfood: structure (THEORY P7), unbiasedness (P8, P11), padding (P13),
the fused kernel against an explicit-matrix reference, threads, dtypes and errors.

Statistical tests draw their parameters from ``global_random_seed`` (default 42; all of 0–99 with
``RANDFEAT_TESTS_SEEDS=all``).  Replicates are the independent blocks of ONE fit: blocks of
Fastfood are iid (independent B, Π, G, S per block), so the per-block kernel estimates are iid
and the sample variance across blocks gives a valid z-test without assuming the (unknown exact)
within-block covariance.  Every z-check fails at |z| > 5 (two-sided normal tail 5.7e-7 per check;
with R >= 1500 replicates of a bounded statistic the normal approximation is accurate); the
largest family below has 7 distances, so the family-wise false-alarm rate is < 5e-6 per seed.
"""

import math

import numpy as np
import pytest
import scipy.linalg
from scipy import special, stats

from paper_figures._fastfood_fft import FastfoodFFT
from randfeat.fastfood import Fastfood
from randfeat.kernels import BallSumKernel, MaternKernel, get_kernel

Z_FAIL = 5.0


def _S_blocks(ff):
    """S_ (n_freq_,) as (n_blocks_, d) in float64, the unused rows of the last block set to 0."""
    S = np.zeros(ff.n_blocks_ * ff.d_padded_)
    S[:ff.n_freq_] = ff.S_
    return S.reshape(ff.n_blocks_, ff.d_padded_)


def _reference_V(ff):
    """Explicit stacked V (n_freq_, d) from the fitted parameters, with scipy's Hadamard matrix."""
    d = ff.d_padded_
    H = scipy.linalg.hadamard(d).astype(np.float64)
    S_blocks, B_signs = _S_blocks(ff), ff.B_
    blocks = []
    for b in range(ff.n_blocks_):
        Pi = np.zeros((d, d))
        Pi[np.arange(d), ff.P_[b]] = 1.0                  # (Pi u)_k = u[P[k]]
        B = np.diag(B_signs[b].astype(np.float64))
        G = np.diag(ff.G_[b].astype(np.float64))
        S = np.diag(S_blocks[b])
        blocks.append(S @ H @ G @ Pi @ H @ B / (ff.sigma_ * math.sqrt(d)))
    return np.vstack(blocks)[:ff.n_freq_]


def _pad(X, d):
    Xp = np.zeros((X.shape[0], d))
    Xp[:, :X.shape[1]] = X
    return Xp


def _block_estimates(ff, delta):
    """Per-block kernel estimates (1/d) sum_j cos([V delta]_j) over the complete blocks (R,)."""
    d = ff.d_padded_
    z = ff._project(delta[None, :])[0]
    R = ff.n_freq_ // d
    return np.cos(z[:R * d]).reshape(R, d).mean(axis=1)


def _z(est, k):
    return (est.mean() - k) / (est.std(ddof=1) / math.sqrt(est.size))


def _sphere_cf(r, d):
    """E cos(r u_1) for u uniform on the unit sphere S^{d-1}.

    Equals Gamma(d/2)(2/r)^{d/2-1}J_{d/2-1}(r)."""
    r = np.maximum(np.asarray(r, dtype=float), 1e-12)
    nu = d / 2 - 1
    return np.exp(special.gammaln(d / 2) + nu * np.log(2 / r)) * special.jv(nu, r)


# ----------------------------------------------------------------------------- structure (P7)
@pytest.mark.parametrize("d_in", [1, 5, 16, 100])
def test_rows_have_equal_length_sqrt_d_times_norm_G(d_in):
    """Every row of H G Pi H B has length exactly sqrt(d) ||G||_F (deterministic fact)."""
    ff = Fastfood(n_components=3 * 2 * next_pow2(d_in), random_state=0).fit(np.zeros((1, d_in)))
    d = ff.d_padded_
    VT = ff._project(np.eye(d_in))                     # (d_in, n_freq): the fused kernel's V^T
    V = _reference_V(ff)                               # explicit matrices, all d columns
    np.testing.assert_allclose(VT, V[:, :d_in].T, rtol=1e-12, atol=1e-12)
    S = _S_blocks(ff)                                  # n_freq = 3 d: every block complete
    for b in range(ff.n_blocks_):
        rows = V[b * d:(b + 1) * d] * (ff.sigma_ * math.sqrt(d)) / S[b][:, None]
        expected = math.sqrt(d) * np.linalg.norm(ff.G_[b])
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), expected, rtol=1e-12)
        # and the rows of V itself have lengths s_i / sigma = S_ii ||G||_F / sigma
        np.testing.assert_allclose(np.linalg.norm(V[b * d:(b + 1) * d], axis=1),
                                   S[b] * np.linalg.norm(ff.G_[b]) / ff.sigma_, rtol=1e-12)


def next_pow2(n):
    return 1 << (n - 1).bit_length()


@pytest.mark.parametrize("sigma", [1.0, 2.5])
def test_rows_marginally_gaussian_ks(global_random_seed, sigma):
    """P7: a row of V is N(0, sigma^-2 I): KS test of sigma*(v_j . u) ~ N(0,1) for two fixed unit
    vectors u, and of sigma*||v_j|| ~ chi_d.  One row per block (blocks are iid), R = 2000.
    Fails at p < 1e-6 (3 checks -> false-alarm < 3e-6 per seed)."""
    d, R = 16, 2000
    rng = np.random.default_rng(global_random_seed)
    ff = Fastfood(n_components=R * d, features="phase", sigma=sigma,
                  random_state=rng.integers(2**32)).fit(np.zeros((1, d)))
    V = ff._project(np.eye(d)).T                              # (R*d, d): row j = v_j
    j = rng.integers(0, d, size=R)                            # row index chosen independently
    rows = V.reshape(R, d, d)[np.arange(R), j]
    u2 = rng.normal(size=d)
    u2 /= np.linalg.norm(u2)
    for u in (np.eye(d)[0], u2):
        assert stats.kstest(sigma * rows @ u, "norm").pvalue > 1e-6
    assert stats.kstest(sigma * np.linalg.norm(rows, axis=1), stats.chi(d).cdf).pvalue > 1e-6


# ----------------------------------------------------------------------- unbiasedness (P8/P11)
RADII = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]       # ||Delta|| / sigma


def _unbiased_check(ff_factory, kfun, d_in, seed, radii=RADII):
    rng = np.random.default_rng(seed)
    ff = ff_factory(int(rng.integers(2**32))).fit(np.zeros((1, d_in)))
    u = rng.normal(size=d_in)
    u /= np.linalg.norm(u)
    zs = []
    for r in radii:
        delta = r * ff.sigma_ * u
        est = _block_estimates(ff, delta)
        zs.append(_z(est, kfun(delta)))
    assert np.all(np.abs(zs) < Z_FAIL), dict(zip(radii, np.round(zs, 2), strict=True))
    return ff


def test_gaussian_unbiased(global_random_seed):
    """LSS Lemma 3: E k-hat = exp(-||Delta||^2 / (2 sigma^2)).

    d_in = 12 (padded to 16), sigma = 1.7."""
    _unbiased_check(lambda s: Fastfood(n_components=2 * 16 * 2000, sigma=1.7, random_state=s),
                    lambda dl: math.exp(-np.sum(dl**2) / (2 * 1.7**2)), 12, global_random_seed)


@pytest.mark.parametrize("kernel", [MaternKernel(sigma=1.2, nu=0.5),
                                    MaternKernel(sigma=0.9, nu=2.5), "matern"])
def test_other_isotropic_kernels_unbiased(global_random_seed, kernel):
    """Isotropic kernels of randfeat.kernels through their sample_radius (Student-t radii)."""
    sigma = 1.1 if isinstance(kernel, str) else None  # an instance carries its own sigma
    ff = _unbiased_check(lambda s: Fastfood(n_components=16 * 1500, features="phase",
                                            sigma=sigma, kernel=kernel, random_state=s),
                         lambda dl: float(get_kernel(kernel, sigma=sigma).k(dl)), 16,
                         global_random_seed)
    assert isinstance(ff.kernel_, MaternKernel)
    assert ff.sigma_ == (1.1 if kernel == "matern" else kernel.sigma)


def test_gaussian_unbiased_larger_d(global_random_seed):
    _unbiased_check(lambda s: Fastfood(n_components=256 * 1500, sigma=0.8, features="phase",
                                       random_state=s),
                    lambda dl: math.exp(-np.sum(dl**2) / (2 * 0.8**2)), 200, global_random_seed,
                    radii=[0.5, 1.0, 2.0])


@pytest.mark.parametrize("d_in, t", [(1, 1), (3, 1), (12, 2), (5, 3)])
def test_ballsum_unbiased_against_k_t_of_padded_dimension(global_random_seed, d_in, t):
    """P11: ball-sum Fastfood approximates k_t of the PADDED dimension (d_in=1,t=1: sinc, with
    negative lobes; d_in=3 pads to 4 and d_in=12 to 16, d_in=5 to 8)."""
    d = next_pow2(d_in)
    ff = _unbiased_check(
        lambda s: Fastfood(n_components=max(d, 4) * 1500 * 2, kernel="ballsum",
                           kernel_params={"t": t}, sigma=0.7, random_state=s),
        lambda dl: float(BallSumKernel(sigma=0.7, t=t, dim=d).k(np.pad(dl, (0, d - d_in)))),
        d_in, global_random_seed)
    assert isinstance(ff.kernel_, BallSumKernel)
    assert ff.kernel_.dim == ff.d_padded_ == d and ff.kernel_.t == t


def test_ballsum_d1_is_sinc():
    """k_1 in dimension 1 is sin(r)/r (the characteristic function of U[-1, 1])."""
    r = np.array([0.3, 1.0, 4.0, 7.0])
    k = BallSumKernel(sigma=1.0, t=1, dim=1).k(r[:, None])
    np.testing.assert_allclose(k, np.sin(r) / r, rtol=1e-10)


def test_custom_radial_unbiased(global_random_seed):
    """radial= : row lengths 1 or 2 (prob 1/2 each) with uniform directions in d = 8 give
    k(Delta) = (Omega_8(r) + Omega_8(2 r)) / 2, Omega_d the sphere characteristic function."""
    def radial(n, d, rng):
        return rng.choice([1.0, 2.0], size=n)

    def kfun(dl):
        r = np.linalg.norm(dl) / 1.3
        return 0.5 * (_sphere_cf(r, 8) + _sphere_cf(2 * r, 8))

    ff = _unbiased_check(lambda s: Fastfood(n_components=8 * 2000, features="phase", sigma=1.3,
                                            radial=radial, random_state=s),
                         kfun, 7, global_random_seed)
    assert ff.kernel_ is None


def test_literal_sqrt_norm_scaling_is_biased(global_random_seed):
    """Negative control (THEORY P8 / pitfall 6): S_ii = s_i ||G||_F^{-1/2}, as printed, is biased
    (E k-hat ~ 0.15 instead of 0.61 at ||Delta||/sigma = 1, d = 16): the same z-test must reject."""
    rng = np.random.default_rng(global_random_seed)
    ff = Fastfood(n_components=2 * 16 * 2000, random_state=int(rng.integers(2**32)))
    ff.fit(np.zeros((1, 16)))
    normG = np.repeat(np.linalg.norm(ff.G_, axis=1), 16)     # ||G_b|| of every row (S_ flat)
    ff.S_ = ff.S_ * normG / np.sqrt(normG)           # s_i / ||G||^{1/2} instead of s_i / ||G||
    u = rng.normal(size=16)
    delta = u / np.linalg.norm(u)
    est = _block_estimates(ff, delta)
    assert abs(_z(est, math.exp(-0.5))) > 20
    assert est.mean() < 0.3


# ------------------------------------------------------------------------------- padding (P13)
def test_padding_invariance(global_dtype):
    """Features of x (12 features) and of x zero-padded to 16 features are identical (same d)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 12)).astype(global_dtype)
    Xp = np.hstack([X, np.zeros((9, 4), dtype=global_dtype)])
    for features in ("paired", "phase"):
        a = Fastfood(n_components=64, features=features, random_state=5).fit(X)
        b = Fastfood(n_components=64, features=features, random_state=5).fit(Xp)
        assert a.d_padded_ == b.d_padded_ == 16
        np.testing.assert_array_equal(a.transform(X), b.transform(Xp))


# -------------------------------------------------------------------- fused kernel vs reference
@pytest.mark.parametrize("d_in", [1, 2, 3, 8, 13, 64])
@pytest.mark.parametrize("features, n_components", [("paired", 2), ("paired", 70),
                                                    ("phase", 1), ("phase", 53)])
def test_fused_kernel_matches_numpy_reference(global_dtype, d_in, features, n_components):
    rng = np.random.default_rng(d_in)
    X = rng.normal(size=(6, d_in)).astype(global_dtype)
    ff = Fastfood(n_components=n_components, features=features, sigma=1.7, random_state=3,
                  n_threads=2).fit(X)
    Zref = _pad(X.astype(np.float64), ff.d_padded_) @ _reference_V(ff).T
    if features == "paired":
        ref = np.hstack([np.cos(Zref), np.sin(Zref)]) / math.sqrt(ff.n_freq_)
    else:
        ref = math.sqrt(2 / n_components) * np.cos(Zref + ff.offsets_.astype(np.float64))
    out = ff.transform(X)
    assert out.dtype == global_dtype and out.shape == (6, n_components)
    scale = np.abs(Zref).max() + 1
    tol = 1e-12 if global_dtype == np.float64 else 2e-5
    np.testing.assert_allclose(ff._project(X), Zref, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(out, ref, rtol=0, atol=tol * scale / math.sqrt(ff.n_freq_))


def test_trig_accuracy_against_numpy():
    """The vectorised cos/sin are within 2 ulp of numpy's (float64) on moderate and large args."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 32)) * np.array([1, 30, 3e3, 1e5, 3e6])[:, None].repeat(10, 0)
    ff = Fastfood(n_components=128, random_state=0).fit(X)
    z = ff._project(X)
    out = ff.transform(X) * math.sqrt(ff.n_freq_)
    for got, want in ((out[:, :64], np.cos(z)), (out[:, 64:], np.sin(z))):
        ulp = np.spacing(np.maximum(np.abs(want), 1e-300))
        assert np.max(np.abs(got - want) / ulp) <= 2.5
    Xf = X.astype(np.float32)
    zf = ff._project(Xf).astype(np.float64)
    outf = ff.transform(Xf).astype(np.float64) * math.sqrt(ff.n_freq_)
    np.testing.assert_allclose(outf[:, :64], np.cos(zf).astype(np.float32), rtol=0, atol=3e-7)
    np.testing.assert_allclose(outf[:, 64:], np.sin(zf).astype(np.float32), rtol=0, atol=3e-7)


# --------------------------------------------------------------------------- shapes & threads
@pytest.mark.parametrize("d_in", [1, 2, 7, 16, 33])
@pytest.mark.parametrize("n_components", [1, 2, 9, 16, 64, 101, 130])
@pytest.mark.parametrize("features", ["paired", "phase"])
def test_output_width_is_exactly_n_components(d_in, n_components, features):
    X = np.ones((3, d_in))
    ff = Fastfood(n_components=n_components, features=features, random_state=0)
    Z = ff.fit_transform(X)
    assert Z.shape == (3, n_components)
    assert ff.n_freq_ == (-(-n_components // 2) if features == "paired" else n_components)
    assert ff.n_blocks_ == -(-ff.n_freq_ // ff.d_padded_)
    assert ff.d_padded_ == next_pow2(d_in)
    assert ff.B_.shape == ff.P_.shape == ff.G_.shape == (ff.n_blocks_, ff.d_padded_)
    assert ff.S_.shape == (ff.n_freq_,)
    assert ff.B_packed_.shape == (ff.n_blocks_, -(-ff.d_padded_ // 8))
    assert ff.B_.dtype == np.int8 and ff.P_.dtype == np.int32 and ff.B_packed_.dtype == np.uint8
    assert len(ff.get_feature_names_out()) == n_components


@pytest.mark.parametrize("features", ["paired", "phase"])
@pytest.mark.parametrize("cls", [Fastfood, FastfoodFFT])
def test_bit_identical_for_any_thread_count(global_dtype, features, cls):
    X = np.random.default_rng(0).normal(size=(37, 20)).astype(global_dtype)
    outs = [cls(n_components=200, features=features, random_state=7,
                n_threads=nt).fit_transform(X) for nt in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_float32_and_float64_fits_share_parameters():
    X = np.random.default_rng(0).normal(size=(5, 10))
    for features in ("paired", "phase"):
        a = Fastfood(n_components=100, features=features, random_state=1).fit(X)
        b = Fastfood(n_components=100, features=features, random_state=1).fit(
            X.astype(np.float32))
        np.testing.assert_array_equal(a.B_, b.B_)
        np.testing.assert_array_equal(a.P_, b.P_)
        assert b.G_.dtype == b.S_.dtype == np.float32
        np.testing.assert_array_equal(a.G_.astype(np.float32), b.G_)
        np.testing.assert_array_equal(a.S_.astype(np.float32), b.S_)
        if features == "phase":
            np.testing.assert_array_equal(a.offsets_.astype(np.float32), b.offsets_)
        np.testing.assert_allclose(a.transform(X), b.transform(X.astype(np.float32)), atol=1e-5)


def test_parameter_memory_is_O_n():
    X = np.zeros((1, 1000))
    ff = Fastfood(n_components=2 * 4096, random_state=0).fit(X)
    # per row of the 4 blocks of 1024: B 1 bit + P int32 + G, S float64
    assert ff.parameter_nbytes_ == 4 * 1024 * (4 + 8 + 8) + 4 * 1024 // 8
    ff32 = Fastfood(n_components=4096, features="phase", random_state=0).fit(X.astype(np.float32))
    assert ff32.parameter_nbytes_ == 4 * 1024 * (4 + 4) + 4096 * (4 + 4) + 4 * 1024 // 8
    # an incomplete last block: S_ and the phases only for the n_freq_ = 2500 rows used
    ff = Fastfood(n_components=2500, features="phase", random_state=0).fit(X)
    assert ff.n_blocks_ == 3 and ff.S_.shape == (2500,)
    assert ff.parameter_nbytes_ == 3 * 1024 * (4 + 8) + 2500 * (8 + 8) + 3 * 1024 // 8
    # d_padded_ < 8: one byte of signs per block
    ff = Fastfood(n_components=10, features="phase", random_state=0).fit(np.zeros((1, 3)))
    assert ff.B_packed_.shape == (3, 1)
    assert ff.parameter_nbytes_ == 3 * 1 + 3 * 4 * (4 + 8) + 10 * (8 + 8)
    # what the benchmark's memory ratio counts: RBFSampler stores W (d, n) and b (n) in float32
    ff32 = Fastfood(n_components=32768, features="phase", random_state=0).fit(
        np.zeros((1, 4096), dtype=np.float32))
    assert (4096 * 32768 + 32768) * 4 / ff32.parameter_nbytes_ > 1000


@pytest.mark.parametrize("d_in", [1, 3, 7, 8, 13, 100])
def test_signs_are_bit_packed_from_the_same_random_stream(d_in):
    """B is drawn exactly as the int8 signs were (2 * integers(0, 2, int8) - 1, first in the
    stream, so P_ and G_ follow unchanged) and only stored packed: bit k % 8 of byte k // 8 of
    B_packed_[b] is 1 iff B_[b, k] = -1, padding bits 0, and B_ is the int8 +-1 view."""
    ff = Fastfood(n_components=2 * 70, random_state=123).fit(np.zeros((1, d_in)))
    nb, d = ff.n_blocks_, ff.d_padded_
    rng = np.random.default_rng(123)
    B = (2 * rng.integers(0, 2, size=(nb, d), dtype=np.int8) - 1).astype(np.int8)
    P = rng.permuted(np.tile(np.arange(d, dtype=np.int32), (nb, 1)), axis=1)
    G = rng.standard_normal((nb, d))
    assert ff.B_.dtype == np.int8 and ff.B_.shape == (nb, d)
    np.testing.assert_array_equal(ff.B_, B)
    np.testing.assert_array_equal(ff.P_, P)
    np.testing.assert_array_equal(ff.G_, G)
    nbytes = -(-d // 8)
    assert ff.B_packed_.dtype == np.uint8 and ff.B_packed_.shape == (nb, nbytes)
    for b in range(nb):
        value = int.from_bytes(ff.B_packed_[b].tobytes(), "little")   # bit k = sign k
        assert value == sum(1 << k for k in range(d) if B[b, k] < 0)
    assert ff.B_packed_.nbytes == nb * nbytes


@pytest.mark.parametrize("d_in", [1, 3, 8, 13, 16, 29])
def test_packed_signs_applied_exactly(global_dtype, d_in):
    """The kernel's signs are exact multiplications by +-1, as with int8 signs: the projections
    of x equal, bit for bit, those of the pre-signed B x (zero padded) through the same block
    with all signs +1.  Covers d_in % 8 tails and d_padded_ < 8 (one block, n_freq_ <= d)."""
    rng = np.random.default_rng(d_in)
    X = rng.normal(size=(5, d_in)).astype(global_dtype)
    n_components = 2 * next_pow2(d_in)
    ff = Fastfood(n_components=n_components, random_state=4).fit(X)
    d = ff.d_padded_
    assert ff.n_blocks_ == 1 and np.all(np.abs(ff.B_) == 1)
    assert d < 8 or (ff.B_.min() == -1 and ff.B_.max() == 1)          # both signs exercised
    Xs = np.zeros((5, d), dtype=global_dtype)
    Xs[:, :d_in] = X * ff.B_[0, :d_in]
    ff_plus = Fastfood(n_components=n_components, random_state=4).fit(Xs)
    np.testing.assert_array_equal(ff_plus.P_, ff.P_)
    ff_plus.B_packed_ = np.zeros_like(ff.B_packed_)                  # every sign +1
    assert np.all(ff_plus.B_ == 1)
    np.testing.assert_array_equal(ff_plus._project(Xs), ff._project(X))
    np.testing.assert_array_equal(ff_plus.transform(Xs), ff.transform(X))


def test_kernel_rejects_inconsistent_parameter_shapes():
    """The fitted arrays are public (read-only, but replaceable); a wrong length must not be read
    out of bounds: transform checks the layout first."""
    X = np.ones((2, 13))
    ff = Fastfood(n_components=70, random_state=0).fit(X)
    ff.S_ = ff.S_[:-1]
    with pytest.raises(ValueError, match=r"fitted S_ must be .*shape \(35,\), got \(34,\)"):
        ff.transform(X)
    ff = Fastfood(n_components=70, random_state=0).fit(X)
    ff.B_packed_ = ff.B_packed_[:, :1].copy()
    with pytest.raises(ValueError, match=r"fitted B_packed_ must be .*shape \(3, 2\), got "
                                         r"\(3, 1\)"):
        ff.transform(X)


def test_pickle_round_trip(global_dtype):
    import pickle
    X = np.random.default_rng(0).normal(size=(4, 13)).astype(global_dtype)
    for features in ("paired", "phase"):
        ff = Fastfood(n_components=70, features=features, random_state=0).fit(X)
        ff2 = pickle.loads(pickle.dumps(ff))
        assert "B_packed_" in vars(ff2) and "B_" not in vars(ff2)
        np.testing.assert_array_equal(ff2.B_, ff.B_)
        np.testing.assert_array_equal(ff2.transform(X), ff.transform(X))


def test_input_not_modified_and_strided_readonly_accepted():
    X = np.random.default_rng(0).normal(size=(8, 20))
    Xs = np.asfortranarray(X)[:, ::2]
    Xs.setflags(write=False)
    before = Xs.copy()
    ff = Fastfood(n_components=32, random_state=0).fit(Xs)
    np.testing.assert_array_equal(ff.transform(Xs), ff.transform(np.ascontiguousarray(before)))
    np.testing.assert_array_equal(Xs, before)


# ------------------------------------------------------------------------------ FFT variant
def test_fft_projection_definition():
    """FastfoodFFT (the former projection='fft'): V = Pi R B / sigma with R the real DFT of rows
    of length sqrt(d)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 6))
    ff = FastfoodFFT(n_components=20, features="phase", sigma=2.0, random_state=0).fit(X)
    d = ff.d_padded_
    assert not hasattr(ff, "G_") and not hasattr(ff, "S_") and not hasattr(ff, "kernel_")
    j, k = np.arange(d)[:, None], np.arange(d)[None, :]
    rows = [np.ones(d)]
    for f in range(1, d // 2):
        rows += [math.sqrt(2) * np.cos(2 * np.pi * f * k[0] / d),
                 -math.sqrt(2) * np.sin(2 * np.pi * f * k[0] / d)]
    rows.append(np.cos(np.pi * k[0]))
    R = np.array(rows)
    np.testing.assert_allclose(R @ R.T, d * np.eye(d), atol=1e-10)
    del j
    V = np.vstack([R[ff.P_[b]] * ff.B_[b] for b in range(ff.n_blocks_)])[:ff.n_freq_] / 2.0
    np.testing.assert_allclose(ff._project(X), _pad(X, d) @ V.T, atol=1e-12)
    np.testing.assert_allclose(ff.transform(X), math.sqrt(2 / 20) * np.cos(
        _pad(X, d) @ V.T + ff.offsets_), atol=1e-12)


# ----------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("params, match", [
    ({"sigma": 0.0}, r"'sigma' parameter of Fastfood must be .*Got 0.0"),
    ({"sigma": -1.0}, r"'sigma' parameter of Fastfood must be .*Got -1.0"),
    ({"n_components": 0}, r"'n_components' parameter of Fastfood must be .*Got 0"),
    ({"kernel": "rbf_typo"}, r"unknown kernel 'rbf_typo'; valid names are \['gaussian', "
                             r"'matern', 'ballsum'\]"),
    ({"features": "both"}, r"'features' parameter of Fastfood must be .*Got 'both'"),
    ({"scaling": "dct"}, r"'scaling' parameter of Fastfood must be .*Got 'dct'"),
    ({"kernel": "laplacian"}, r"kernel='laplacian' cannot be approximated by Fastfood.*"
                              r"spherically symmetric.*RandomFourierFeatures"),
    ({"kernel": "cauchy"}, r"kernel='cauchy' cannot be approximated by Fastfood.*"
                           r"spherically symmetric spectrum"),
    ({"t": 0}, r"'t' parameter of Fastfood must be .*Got 0"),
    ({"radial": lambda n, d, rng: np.ones(n - 1)}, r"radial\(n=64, d=16, rng\) must return 64"),
    ({"radial": lambda n, d, rng: -np.ones(n)}, r"negative or non-finite"),
    ({"sigma": float("inf")}, r"'sigma' parameter of Fastfood must be .*Got inf"),
    ({"sigma": float("nan")}, r"'sigma' parameter of Fastfood must be .*Got nan"),
    ({"n_threads": 0}, r"'n_threads' parameter of Fastfood must be .*Got 0"),
])
def test_bad_parameters(params, match):
    """Every bad parameter raises at fit with a message naming it and the value received."""
    with pytest.raises(ValueError, match=match):
        Fastfood(**params).fit(np.zeros((2, 16)))


def test_fft_variant_is_not_a_public_option():
    with pytest.raises(TypeError, match="projection"):
        Fastfood(projection="fft")


def test_kernel_instance_and_radial_precedence():
    from randfeat.kernels import GaussianKernel
    X = np.zeros((1, 5))
    ff = Fastfood(n_components=16, kernel=GaussianKernel(sigma=3.0), random_state=0).fit(X)
    assert ff.sigma_ == 3.0 and isinstance(ff.kernel_, GaussianKernel)
    ff = Fastfood(n_components=16, kernel="ballsum", kernel_params={"t": 3}, sigma=2.0,
                  random_state=0).fit(X)
    assert (ff.kernel_.dim, ff.kernel_.t, ff.kernel_.sigma) == (8, 3, 2.0)
    # the deprecated t= is the same path, with a FutureWarning
    with pytest.warns(FutureWarning, match=r"kernel_params=\{'t': 3\}"):
        old = Fastfood(n_components=16, kernel="ballsum", t=3, sigma=2.0, random_state=0).fit(X)
    np.testing.assert_array_equal(old.transform(X), ff.transform(X))
    with pytest.raises(ValueError, match="disagree"), pytest.warns(FutureWarning):
        Fastfood(kernel="ballsum", t=2, kernel_params={"t": 3}).fit(X)
    with pytest.raises(ValueError, match=r"dim=5 but Fastfood samples in the padded dimension"):
        Fastfood(kernel=BallSumKernel(dim=5)).fit(X)
    ff = Fastfood(n_components=16, radial=lambda n, d, rng: np.full(n, 2.0), random_state=0)
    ff.fit(X)
    assert ff.kernel_ is None
    V = _reference_V(ff)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 2.0, rtol=1e-12)


def test_bad_input():
    ff = Fastfood(n_components=16, random_state=0)
    with pytest.raises(ValueError, match="NaN"):
        ff.fit(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="infinity|inf"):
        ff.fit(np.array([[1.0, np.inf]]))
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        ff.transform(np.ones((1, 3)))
    ff.fit(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"X has 4 features, but Fastfood is expecting 3"):
        ff.transform(np.ones((1, 4)))
    with pytest.raises(ValueError, match="NaN"):
        ff.transform(np.array([[1.0, np.nan, 0.0]]))
    with pytest.raises(ValueError, match="0 sample"):
        ff.transform(np.ones((0, 3)))
