"""Tests of the orthogonal (ORF, ORF') and quasi-Monte Carlo frequency samplers
(randfeat._sampling) and of RandomFourierFeatures(sampling=...).

Statistical tests draw from ``global_random_seed`` (default 42; all of 0-99 with
``RANDFEAT_TESTS_SEEDS=all``).  Replicates are the independent blocks of ONE sample: ORF blocks
are iid (independent Q and radii per block), so per-block estimates are iid and their sample
variance gives a valid z-test.  Every z-check fails at |z| > 5 (two-sided normal tail 5.7e-7 per
comparison; R >= 2000 replicates of a bounded statistic); the largest family has 12
comparisons, so the family-wise false-alarm rate is < 1e-5 per seed.  Each statistical test
also runs its negative control (a deliberately biased sampler) through the same helper and
asserts that it is rejected.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from randfeat import RandomFourierFeatures
from randfeat._sampling import (
    SAMPLINGS,
    haar_orthogonal,
    orthogonal_frequencies,
    qmc_frequencies,
    sample_frequencies,
)
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
    get_kernel,
)

Z_FAIL = 5.0


def _biased_columns(kernel, n, d, rng):
    """The widely copied biased ORF (LITERATURE §F): columns of diag(s) Q as frequencies."""
    n_blocks = -(-n // d)
    out = []
    for _ in range(n_blocks):
        Q = haar_orthogonal(d, rng)
        s = kernel.sample_radius(d, d, rng)
        out.append((s[:, None] * Q).T)
    return np.vstack(out)[:n]


def _off_axis(d, rng):
    """A unit direction with every coordinate of size ~1/sqrt(d) (far from the axes)."""
    v = np.where(rng.random(d) < 0.5, -1.0, 1.0) * (1.0 + 0.3 * rng.random(d))
    return v / np.linalg.norm(v)


def _block_z(W, d, deltas, k):
    """z statistics of the mean of the per-block estimates (1/d) sum_j cos(w_j' Delta)."""
    R = W.shape[0] // d
    c = np.cos(W[:R * d] @ deltas.T).reshape(R, d, -1).mean(axis=1)   # (R, n_delta)
    return (c.mean(axis=0) - k) / (c.std(axis=0, ddof=1) / math.sqrt(R))


# ------------------------------------------------------------------------------ structure
@pytest.mark.parametrize("d", [1, 2, 3, 7, 16])
def test_haar_blocks_are_orthogonal(d):
    Q = haar_orthogonal(d, np.random.default_rng(0), n_blocks=3)
    for b in range(3):
        np.testing.assert_allclose(Q[b] @ Q[b].T, np.eye(d), atol=1e-12)


def test_haar_is_haar_not_lapack_signs(global_random_seed):
    """Sign correction: E[Q] = 0 for Haar Q (without it LAPACK's positive diag(R) gives
    E[Q_11] > 0, ~0.8 at d = 2).  z-test over 4000 matrices, |z| > 5 fails (5.7e-7)."""
    Q = haar_orthogonal(3, np.random.default_rng(global_random_seed), n_blocks=4000)
    m, s = Q.mean(axis=0), Q.std(axis=0, ddof=1) / math.sqrt(4000)
    assert np.all(np.abs(m / s) < Z_FAIL)
    # and the uncorrected factor is rejected by the same test
    G = np.random.default_rng(global_random_seed).standard_normal((4000, 3, 3))
    Q0 = np.linalg.qr(G)[0]
    m0, s0 = Q0.mean(axis=0), Q0.std(axis=0, ddof=1) / math.sqrt(4000)
    assert np.any(np.abs(m0 / s0) > Z_FAIL)


@pytest.mark.parametrize("d", [3, 8])
def test_haar_joint_law_trace_moments(d, global_random_seed):
    """Joint law: for Haar Q on O(d), E tr Q = 0, E (tr Q)^2 = 1 and E tr(Q^2) = 1
    (Diaconis & Shahshahani 1994), which a non-Haar law of the whole matrix breaks even when
    every row is uniform on the sphere.  z-tests over 4000 matrices with the sample standard
    deviation, |z| > 5 fails (5.7e-7 each, 6 comparisons).  Negative control: LAPACK's
    uncorrected Q (E tr Q < 0) is rejected by the same statistics."""
    def zs(Q):
        t = np.trace(Q, axis1=1, axis2=2)
        t2 = np.trace(Q @ Q, axis1=1, axis2=2)
        return [(x.mean() - mu) / (x.std(ddof=1) / math.sqrt(len(x)))
                for x, mu in ((t, 0.0), (t * t, 1.0), (t2, 1.0))]

    Q = haar_orthogonal(d, np.random.default_rng(global_random_seed), n_blocks=4000)
    assert max(abs(z) for z in zs(Q)) < Z_FAIL
    G = np.random.default_rng(global_random_seed).standard_normal((4000, d, d))
    assert max(abs(z) for z in zs(np.linalg.qr(G)[0])) > Z_FAIL


def test_haar_rows_uniform_on_the_sphere(global_random_seed):
    """Every row of a block is uniform on the sphere: its squared first coordinate is
    Beta(1/2, (d-1)/2).  KS tests on the first and the last row of 4000 blocks (they come from
    d and 1 reflectors), d = 3; p < 1e-6 fails (2 comparisons).  Negative control: normalised
    Laplace vectors (not rotation invariant) are rejected (largest p over seeds 0-99:
    7.6e-10)."""
    d = 3
    rng = np.random.default_rng(global_random_seed)
    Q = haar_orthogonal(d, rng, n_blocks=4000)
    law = stats.beta(0.5, (d - 1) / 2).cdf
    for k in (0, d - 1):
        assert stats.kstest(Q[:, k, 0] ** 2, law).pvalue > 1e-6
    x = rng.laplace(size=(4000, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert stats.kstest(x[:, 0] ** 2, law).pvalue < 1e-6


@pytest.mark.parametrize("d,n", [(16, 40), (200, 400), (513, 600)])
def test_haar_same_bits_for_any_blas_threads(d, n):
    """The frequencies do not depend on the BLAS thread count (threaded gemm in LAPACK's
    dorgqr rounded differently at d = 513; the kernel uses no BLAS), nor on ``n_threads``."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    outs = []
    for nt in (1, 2):
        with threadpoolctl.threadpool_limits(nt):
            outs.append(orthogonal_frequencies(GaussianKernel(1.0), n, d,
                                               np.random.default_rng(7)))
    for nt in (2, 3):   # the OpenMP path runs from n d^2 >= 2^23 (d = 513 here)
        outs.append(orthogonal_frequencies(GaussianKernel(1.0), n, d, np.random.default_rng(7),
                                           n_threads=nt))
    for W in outs[1:]:
        np.testing.assert_array_equal(outs[0], W)
    assert np.abs(outs[0][:d] @ outs[0][:d].T / np.linalg.norm(outs[0][:d], axis=1) ** 2
                  - np.eye(d)).max() < 1e-12 * d


def test_sobol_generator_is_scipys_sequence_scrambled(global_random_seed):
    """The compiled Sobol' generator: with identity scrambling it gives scipy's unscrambled
    points (centred in their cells).  Scrambled, in every pair of coordinates tested, each
    elementary box of area 2^-m holds as many of the first 2^m points as the corresponding box
    of the unscrambled points (linear matrix scrambling with a digital shift maps elementary
    intervals onto elementary intervals: the net structure is invariant), which a wrong matrix
    (not unit lower-triangular) or a wrong Gray-code step breaks; iid points fail it."""
    from randfeat._lib._orthogonal import sobol_points
    from scipy.stats import qmc

    from randfeat._sampling import _sobol_directions, _sobol_uniforms

    s, m = 40, 8
    plain = qmc.Sobol(s, scramble=False).random(2 ** m)
    out = np.empty((2 ** m, s))
    sobol_points(np.ascontiguousarray(_sobol_directions(s)), np.zeros(s, np.uint32), 30, out)
    np.testing.assert_array_equal(out, plain + 2.0 ** -31)

    def occupancy(u):
        return [np.sort(np.unique(np.floor(u[:, 0] * 2 ** a) * 2 ** (m - a)
                                  + np.floor(u[:, 1] * 2 ** (m - a)),
                                  return_counts=True)[1]).tolist() for a in range(m + 1)]

    u = _sobol_uniforms(2 ** m, s, np.random.default_rng(global_random_seed))
    assert np.all((u > 0) & (u < 1))
    pairs = [(0, 1), (3, 17), (38, 39), (5, 30)]
    for j, k in pairs:
        assert occupancy(u[:, [j, k]]) == occupancy(plain[:, [j, k]])
    iid = np.random.default_rng(global_random_seed).random((2 ** m, 2))
    assert occupancy(iid) != occupancy(plain[:, [0, 1]])


def test_ndtri_kernel_matches_scipy():
    """The compiled inverse normal CDF (AS241) against scipy.special.ndtri: relative error
    below 4e-15 over the central region, both tails and the branch points; clipping to
    [lo, 1 - lo] and the per-row multiplier."""
    from randfeat._lib._orthogonal import ndtri_rows

    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(20000), 10.0 ** -rng.uniform(0, 300, 2000),
                        1 - 10.0 ** -rng.uniform(1, 15, 2000),
                        [0.075, 0.925, 0.5, np.exp(-25.0), 1 - np.exp(-25.0) / 2, 2.0 ** -53]])
    u = p.reshape(1, -1)
    out = np.empty_like(u)
    ndtri_rows(u, np.ones(1), 0.0, 1e-300, out)
    ref = special.ndtri(p)
    rel = np.abs(out[0] - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 4e-15
    assert out[0, -4] == 0.0
    u2 = np.array([[0.0, 1.0, 0.3], [0.7, -1.0, 2.0]])
    out2 = np.empty_like(u2)
    ndtri_rows(u2, np.array([2.0, -1.0]), 0.0, 2.0 ** -53, out2)
    lo = special.ndtri(2.0 ** -53)
    np.testing.assert_allclose(out2, [[2 * lo, -2 * lo, 2 * special.ndtri(0.3)],
                                      [-special.ndtri(0.7), -lo, lo]], rtol=4e-15)


@pytest.mark.parametrize("n,d", [(1, 4), (4, 4), (5, 4), (37, 8), (64, 16), (3, 1)])
@pytest.mark.parametrize("norm", ["radial", "unit"])
def test_orthogonal_shapes_and_block_structure(n, d, norm):
    k = GaussianKernel(2.0)
    W = orthogonal_frequencies(k, n, d, np.random.default_rng(1), norm=norm)
    assert W.shape == (n, d) and W.dtype == np.float64
    for b in range(-(-n // d)):
        Wb = W[b * d:(b + 1) * d]
        G = Wb @ Wb.T
        np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-12)
    if norm == "unit":
        np.testing.assert_allclose(np.linalg.norm(W, axis=1), math.sqrt(d) / 2.0, rtol=1e-12)


def test_orthogonal_radii_follow_the_radial_law(global_random_seed):
    """Row lengths * sigma ~ chi_d (Gaussian) and the Student-t radius (Matérn 3/2): KS tests
    at level 1e-6 each; and the rows of a block are orthogonal."""
    rng = np.random.default_rng(global_random_seed)
    d = 6
    W = orthogonal_frequencies(GaussianKernel(0.5), 3000, d, rng)
    assert stats.kstest(np.linalg.norm(W, axis=1) * 0.5, stats.chi(d).cdf).pvalue > 1e-6
    W = orthogonal_frequencies(MaternKernel(1.0, nu=1.5), 3000, d, rng)
    r2 = np.sum(W * W, axis=1) / d                    # ||t||^2/d ~ F(d, 2 nu) for Student-t
    assert stats.kstest(r2, stats.f(d, 3.0).cdf).pvalue > 1e-6


@pytest.mark.parametrize("d", [2, 3, 8])
def test_orf_unbiased_off_axes_and_biased_columns_rejected(d, global_random_seed):
    """ORF is unbiased (Yu et al. Thm 1) at Delta off the coordinate axes; the `diag(s) @ Q`
    columns construction is not (LITERATURE §F) and the same z-test must reject it.  2500 blocks,
    4 distances per map: the ORF family is 4 comparisons at |z| > 5."""
    rng = np.random.default_rng(global_random_seed)
    kern = GaussianKernel(1.3)
    u = _off_axis(d, rng)
    z = np.array([0.5, 1.0, 2.0, 3.0])
    deltas = z[:, None] * u[None, :] * kern.sigma
    k = kern.k(deltas)
    R = 2500
    W = orthogonal_frequencies(kern, R * d, d, rng)
    assert np.all(np.abs(_block_z(W, d, deltas, k)) < Z_FAIL)
    Wb = _biased_columns(kern, R * d, d, rng)
    assert np.max(np.abs(_block_z(Wb, d, deltas, k))) > Z_FAIL


@pytest.mark.parametrize("kern", [MaternKernel(0.7, nu=1.5), MaternKernel(1.0, nu=0.5),
                                  BallSumKernel(1.0, t=2)])
def test_orf_unbiased_other_radial_kernels(kern, global_random_seed):
    """ORF with the kernel's own radial law is unbiased for Matérn and ball-sum (3 distances
    each, |z| > 5)."""
    rng = np.random.default_rng(global_random_seed)
    d = 4
    u = _off_axis(d, rng)
    deltas = np.array([0.4, 1.0, 2.0])[:, None] * u[None, :] * kern.sigma
    W = orthogonal_frequencies(kern, 2500 * d, d, rng)
    assert np.all(np.abs(_block_z(W, d, deltas, kern.k(deltas))) < Z_FAIL)


def _sphere_cf(r, d):
    """E cos(r u_1), u uniform on S^{d-1}: Gamma(d/2)(2/r)^{d/2-1}J_{d/2-1}(r)."""
    nu = d / 2 - 1
    return np.exp(special.gammaln(d / 2) + nu * np.log(2 / r)) * special.jv(nu, r)


def test_orf_unit_estimates_the_bessel_kernel(global_random_seed):
    """ORF' rows have length sqrt(d)/sigma and a uniform direction, so E k-hat is the sphere's
    characteristic function at sqrt(d) z (Yu et al. Thm 2; Demni & Kadri 2023), not the
    Gaussian kernel: unbiased for the former, and rejected for the latter at z = 2 (d = 4)."""
    rng = np.random.default_rng(global_random_seed)
    d, sigma = 4, 1.0
    u = _off_axis(d, rng)
    z = np.array([0.5, 1.0, 2.0])
    deltas = z[:, None] * u[None, :]
    W = orthogonal_frequencies(GaussianKernel(sigma), 2500 * d, d, rng, norm="unit")
    assert np.all(np.abs(_block_z(W, d, deltas, _sphere_cf(math.sqrt(d) * z, d))) < Z_FAIL)
    assert abs(_block_z(W, d, deltas, GaussianKernel(sigma).k(deltas))[2]) > Z_FAIL


def test_orf_variance_below_iid(global_random_seed):
    """Yu et al. Thm 1: at D = d the ORF variance is below the iid one (ratio ~0.41 at d = 4,
    z = 1, from the exact curve of analysis.orf_theory).  F-test of the variance ratio < 1 at
    level 1e-6 over 3000 blocks each."""
    rng = np.random.default_rng(global_random_seed)
    d, R = 4, 3000
    delta = _off_axis(d, rng)[None, :]
    k = GaussianKernel(1.0)
    Wo = orthogonal_frequencies(k, R * d, d, rng)
    Wi = k.sample(R * d, d, rng)
    vo = np.cos(Wo @ delta.T).reshape(R, d).mean(axis=1).var(ddof=1)
    vi = np.cos(Wi @ delta.T).reshape(R, d).mean(axis=1).var(ddof=1)
    assert stats.f(R - 1, R - 1).cdf(vo / vi) < 1e-6


# ---------------------------------------------------------------------------------- QMC
@pytest.mark.parametrize("kern", [GaussianKernel(0.8), LaplacianKernel(1.5), CauchyKernel(0.6),
                                  MaternKernel(1.2, nu=2.5), BallSumKernel(1.0, t=1),
                                  BallSumKernel(1.0, t=1, dim=5)])
@pytest.mark.parametrize("method", ["sobol", "halton"])
def test_qmc_marginals_follow_the_spectral_law(kern, method, global_random_seed):
    """Scrambled points are uniform on the cube, so each frequency has the spectral law: KS
    test of the first coordinate against iid draws of the kernel's own sampler (two-sample,
    level 1e-6)."""
    rng = np.random.default_rng(global_random_seed)
    d = 3
    W = qmc_frequencies(kern, 1024, d, rng, method=method)
    ref = kern.sample(20000, d, rng)
    assert W.shape == (1024, d) and np.isfinite(W).all()
    for j in range(d):
        assert stats.ks_2samp(W[:, j], ref[:, j]).pvalue > 1e-6


@pytest.mark.parametrize("n, s", [(1, 3), (7, 5), (1000, 16), (4096, 40), (30, 1030)])
def test_halton_points_are_scipys_for_the_same_permutations(n, s):
    """randfeat's compiled scrambled Halton against scipy's own van der Corput kernel: each
    digit table holds distinct digits times b^-(k+1) (a partial random permutation), and with
    those permutations completed to whole ones scipy's scrambled sequence gives the same points
    within 1e-15 (scipy sums the digits in another order).  Covers the base 2 coordinate (53
    positions), bases above n (one table entry per constant position) and d > 1000."""
    from scipy.stats._qmc_cy import _cy_van_der_corput_scrambled

    import randfeat._sampling as S
    from randfeat._lib import _orthogonal as _ok

    bases, ndig, toff, tab = S._halton_digit_tables(n, s, np.random.default_rng(1))
    out = np.empty((n, s))
    _ok.halton_points(bases, ndig, toff, tab, out)
    assert np.all((out >= 0) & (out < 1))
    for j in list(range(min(s, 12))) + [s - 1]:
        b, K = int(bases[j]), int(ndig[j])
        perms = np.empty((K, b), dtype=np.int64)
        w = 1.0 / b
        for k in range(K):
            t = tab[toff[j, k]:toff[j, k + 1]]
            head = np.rint(t / w).astype(np.int64)
            np.testing.assert_array_equal(head * w, t)
            assert len(set(head.tolist())) == head.size and head.min() >= 0 and head.max() < b
            perms[k] = np.concatenate([head, np.setdiff1d(np.arange(b), head)])
            w = w / b
        ref = np.asarray(_cy_van_der_corput_scrambled(n, b, 0, perms, 1))
        np.testing.assert_allclose(out[:, j], ref, rtol=0, atol=1e-15)
    # the same generator state gives the same points; the stream is one rng.random call
    a = S._halton_uniforms(n, s, np.random.default_rng(5))
    b2 = S._halton_uniforms(n, s, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b2)


@pytest.mark.parametrize("method", ["sobol", "halton"])
def test_qmc_unbiased_off_axes(method, global_random_seed):
    """Scrambled QMC estimates are unbiased: 400 independently scrambled sets of 64 points,
    z-test at |z| > 5 for 3 distances."""
    rng = np.random.default_rng(global_random_seed)
    d = 3
    kern = GaussianKernel(1.0)
    u = _off_axis(d, rng)
    deltas = np.array([0.5, 1.0, 2.0])[:, None] * u[None, :]
    est = np.stack([np.cos(qmc_frequencies(kern, 64, d, rng, method) @ deltas.T).mean(axis=0)
                    for _ in range(400)])
    zs = (est.mean(axis=0) - kern.k(deltas)) / (est.std(axis=0, ddof=1) / math.sqrt(400))
    assert np.all(np.abs(zs) < Z_FAIL)


def test_qmc_error_below_iid_at_low_dimension(global_random_seed):
    """At d = 2 and 256 frequencies, the mean squared error of k-hat at a fixed pair is far
    below iid's (QMC rate ~ (log s)^d/s vs s^{-1/2} for the error).  One-sided F-test over 200
    sets each, level 1e-6 (measured ratio ~0.02-0.05)."""
    rng = np.random.default_rng(global_random_seed)
    kern = GaussianKernel(1.0)
    delta = np.array([[0.9, -0.7]])
    k = kern.k(delta)[0]
    e_q = [np.cos(qmc_frequencies(kern, 256, 2, rng, "sobol") @ delta.T).mean() - k
           for _ in range(200)]
    e_i = [np.cos(kern.sample(256, 2, rng) @ delta.T).mean() - k for _ in range(200)]
    ratio = np.mean(np.square(e_q)) / np.mean(np.square(e_i))
    assert stats.f(200, 200).cdf(ratio / 0.5) < 1e-6


def test_qmc_errors():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="inverse CDF.*t=1"):
        qmc_frequencies(BallSumKernel(1.0, t=2), 8, 3, rng)
    with pytest.raises(ValueError, match="method must be"):
        qmc_frequencies(GaussianKernel(), 8, 3, rng, method="lattice")
    with pytest.raises(ValueError, match="dim=2"):
        qmc_frequencies(BallSumKernel(1.0, dim=2), 8, 3, rng)
    assert qmc_frequencies(GaussianKernel(), 0, 3, rng).shape == (0, 3)


# ----------------------------------------------------------------- RandomFourierFeatures
X5 = np.random.default_rng(0).normal(size=(5, 6))


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("features", ["paired", "phase"])
def test_rff_sampling_width_dtype_seed(sampling, features, global_dtype):
    X = X5.astype(global_dtype)
    rff = RandomFourierFeatures(30, sampling=sampling, features=features, random_state=3)
    Z = rff.fit_transform(X)
    assert Z.shape == (5, 30) and Z.dtype == global_dtype
    n_freq = 15 if features == "paired" else 30
    W = sample_frequencies(GaussianKernel(1.0), n_freq, 6, np.random.default_rng(3), sampling)
    np.testing.assert_array_equal(rff.frequencies_, W.astype(global_dtype))
    Z2 = RandomFourierFeatures(30, sampling=sampling, features=features,
                               random_state=3).fit_transform(X.astype(np.float64))
    np.testing.assert_allclose(Z, Z2, rtol=1e-4 if global_dtype == np.float32 else 0,
                               atol=1e-4 if global_dtype == np.float32 else 0)


@pytest.mark.parametrize("sampling", ["orthogonal", "qmc_sobol", "qmc_halton"])
def test_rff_sampling_identical_for_any_n_threads(sampling, global_dtype):
    X = np.random.default_rng(1).normal(size=(700, 20)).astype(global_dtype)
    outs = [RandomFourierFeatures(600, sampling=sampling, random_state=0,
                                  n_threads=t).fit_transform(X) for t in (1, 2, 3)]
    for Z in outs[1:]:
        np.testing.assert_array_equal(Z, outs[0])


def test_rff_sampling_random_state_kinds():
    a = RandomFourierFeatures(8, sampling="orthogonal", random_state=5).fit(X5).frequencies_
    b = RandomFourierFeatures(8, sampling="orthogonal",
                              random_state=np.random.default_rng(5)).fit(X5).frequencies_
    c = RandomFourierFeatures(8, sampling="orthogonal", random_state=6).fit(X5).frequencies_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    q1 = RandomFourierFeatures(8, sampling="qmc_sobol", random_state=5).fit(X5).frequencies_
    q2 = RandomFourierFeatures(8, sampling="qmc_sobol", random_state=5).fit(X5).frequencies_
    np.testing.assert_array_equal(q1, q2)


def test_rff_sampling_input_not_modified():
    X = X5.copy()
    X.flags.writeable = False
    RandomFourierFeatures(8, sampling="orthogonal", random_state=0).fit_transform(X)
    np.testing.assert_array_equal(X, X5)


def test_rff_sampling_errors():
    for kern in ("laplacian", "cauchy", LaplacianKernel(2.0)):
        with pytest.raises(ValueError, match="radial.*'gaussian', 'matern', 'ballsum'"):
            RandomFourierFeatures(8, kernel=kern, sampling="orthogonal").fit(X5)
    with pytest.raises(ValueError, match="Gaussian kernel only"):
        RandomFourierFeatures(8, kernel="matern", sampling="orthogonal_unit").fit(X5)
    with pytest.raises(ValueError, match="sampling"):
        RandomFourierFeatures(8, sampling="sobol").fit(X5)
    with pytest.raises(ValueError, match="inverse CDF"):
        RandomFourierFeatures(8, kernel=get_kernel("ballsum", t=3), sampling="qmc_halton").fit(X5)


@pytest.mark.parametrize("sampling", ["orthogonal", "qmc_sobol"])
def test_rff_sampling_approximates_the_kernel(sampling):
    """A wide map approximates the Gram matrix (deterministic seed; the error of 8192
    frequencies is ~0.01, far below the tolerance)."""
    X = np.random.default_rng(2).normal(size=(30, 5))
    Z = RandomFourierFeatures(16384, sigma=2.0, sampling=sampling, random_state=0).fit_transform(X)
    assert np.abs(Z @ Z.T - GaussianKernel(2.0)(X)).max() < 0.06
