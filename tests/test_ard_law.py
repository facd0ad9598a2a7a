"""The law of every map with ARD length scales (issue 31): the estimate z(x)'z(y) has the mean of
the ARD kernel k(x, y) = k_1((x - y)/sigma), checked by Monte Carlo, and two mutants -- sigma
squared instead of sigma, and sigma applied to the wrong axis (its coordinates reversed) --
injected through the public seams ``ShiftInvariantKernel.ard_split`` (every map that splits
its kernel: RFF, Fastfood, SORF) and ``BinningKernel.sample_pitch`` (random binning) are
rejected by the same test.

Exact values are computed here, independently of the ARD code: the unit-scale kernel at
(x - y) / sigma, and for SORF the exact mean and variance of a block's estimate by enumerating
its 2^12 sign patterns (d = 4).

Statistical design.  Pairs (x, y) with x - y = z * sigma * u, u a unit direction off the axes
(drawn per seed), so ||(x - y)/sigma|| = z.  Every check is a two-sided z-test failing at
|z| > 5 (normal tail 5.7e-7 per check):

* RFF, iid frequencies: exact variance (1 + k(2 Delta) - 2 k^2)/D (paired) or
  (1 + k(2 Delta)/2 - k^2)/D (phase), THEORY §2.3, with the ARD kernel;
* random binning: exact variance k(1 - k)/P (the P grids' collision indicators are iid
  Bernoulli(k));
* SORF (d = 4): exact mean and variance of a block's estimate (enumeration), mean of R iid blocks;
* RFF, sampling="leverage": the mean of R = 300 independently seeded fits (each its own pool)
  against the kernel, with the sample variance (exactly unbiased: importance weights);
* ORF, ORF', Fastfood (blocks share their random matrices; no closed form for the
  within-block covariance): the sample variance of R >= 2,000 iid blocks, as in
  tests/test_orthogonal.py and tests/test_fastfood.py; QMC: R = 300 independently scrambled
  fits.  With these R the normal approximation is accurate for a bounded statistic
  (t with 299 degrees of freedom: tail 1.0e-6 at 5).

The largest family (RFF iid: 8 kernels x 2 maps x 5 distances = 80 checks) has a family-wise
false-alarm rate below 5e-5 per seed (Bonferroni), all families together below 1e-4 per seed
and below 0.01 over the 100 seeds of RANDFEAT_TESTS_SEEDS=all.  The mutants move the ARD kernel
value by 0.05-0.6 at the tested distances, 10 to 100 standard errors: each is rejected at every
seed (checked for seeds 0-99).
"""

import copy
import itertools
import math

import numpy as np
import pytest
import scipy.linalg
from scipy import special

from randfeat import (
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat.kernels import (
    BallSumKernel,
    BinningKernel,
    CauchyKernel,
    CustomBinningKernel,
    GaussianKernel,
    InversePowerBinningKernel,
    LaplacianKernel,
    MaternKernel,
    ShiftInvariantKernel,
    StretchedExponentialBinningKernel,
)

Z_MAX = 5.0
SIGMA = np.array([0.8, 1.5, 3.0, 6.0])
RADII = np.array([0.25, 0.5, 1.0, 2.0, 3.0])          # ||Delta / sigma||


def _seed(seed, *tag):
    return np.random.SeedSequence([seed, *tag])


def _direction(rng, d):
    """A unit direction with every coordinate of size ~1/sqrt(d) (far from the axes)."""
    v = np.where(rng.random(d) < 0.5, -1.0, 1.0) * (1.0 + 0.3 * rng.random(d))
    return v / np.linalg.norm(v)


def _pairs(seed, sigma, radii):
    """x (n, d), y = x - Delta with Delta = r sigma u (||Delta / sigma|| = r), and Delta."""
    rng = np.random.default_rng(_seed(seed, 99))
    d = sigma.shape[0]
    u = _direction(rng, d)
    delta = radii[:, None] * u[None, :] * sigma[None, :]
    x = rng.normal(size=(len(radii), d)) * sigma
    return x, x - delta, delta


# ------------------------------------------------------------------------------ mutants
def _squared(self, _real=ShiftInvariantKernel.ard_split):
    base, scales = _real(self)
    return base, (None if scales is None else scales ** 2)


def _reversed(self, _real=ShiftInvariantKernel.ard_split):
    base, scales = _real(self)
    return base, (None if scales is None else np.ascontiguousarray(scales[::-1]))


MUTANTS = {"sigma squared": _squared, "sigma on the wrong axis": _reversed}


def _pitch_squared(self, size, rng, _real=BinningKernel.sample_pitch):
    p = _real(self, size, rng)
    return p * self.sigma if self.ard else p


def _pitch_reversed(self, size, rng, _real=BinningKernel.sample_pitch):
    p = _real(self, size, rng)
    return p / self.sigma * self.sigma[::-1] if self.ard else p


PITCH_MUTANTS = {"sigma squared": _pitch_squared, "sigma on the wrong axis": _pitch_reversed}

# A mutant is a bug of the library itself: it lives in randfeat.kernels (kernels refuse ARD
# scales when a public method that applies sigma comes from elsewhere, see
# randfeat.kernels._base._check_ard_capable).
for _f in (_squared, _reversed, _pitch_squared, _pitch_reversed):
    _f.__module__ = "randfeat.kernels._base"


def _check(z, mutant):
    z = np.abs(np.asarray(z))
    if mutant is None:
        assert z.max() < Z_MAX, z
    else:
        assert z.max() > Z_MAX, (mutant, z)


# ------------------------------------------------------------------------------ RFF iid
def _ard_kernels():
    return [GaussianKernel(SIGMA), LaplacianKernel(SIGMA), CauchyKernel(SIGMA),
            MaternKernel(SIGMA, nu=0.5), MaternKernel(SIGMA, nu=1.5),
            MaternKernel(SIGMA, nu=2.5), BallSumKernel(SIGMA, t=1), BallSumKernel(SIGMA, t=2)]


KIDS = ["gauss", "lap", "cauchy", "mat05", "mat15", "mat25", "ball1", "ball2"]


def _unit(kern):
    """The same kernel at unit length scale (the reference: evaluated on Delta / sigma)."""
    params = dict(kern._params())
    params["sigma"] = 1.0
    return type(kern)(**params)


def _rff_z(kern, features, seed, D=20_000, dtype=np.float64):
    x, y, delta = _pairs(seed, SIGMA, RADII)
    rff = RandomFourierFeatures(D, kernel=kern, features=features,
                                random_state=_seed(seed, 1)).fit(x.astype(dtype))
    est = (rff.transform(x.astype(dtype)).astype(np.float64)
           * rff.transform(y.astype(dtype))).sum(axis=1)
    unit = _unit(kern)
    k, k2 = unit.k(delta / SIGMA), unit.k(2 * delta / SIGMA)
    var = (1 + k2 - 2 * k**2) / D if features == "paired" else (1 + k2 / 2 - k**2) / D
    return (est - k) / np.sqrt(var)


@pytest.mark.parametrize("features", ["paired", "phase"])
@pytest.mark.parametrize("kern", _ard_kernels(), ids=KIDS)
def test_rff_iid_unbiased_for_the_ard_kernel(kern, features, global_random_seed):
    """RFF with ARD length scales: E z(x)'z(y) = k_1((x - y)/sigma), exact variance, 5
    distances; float32 too for the Gaussian and the Laplacian."""
    _check(_rff_z(kern, features, global_random_seed), None)
    if isinstance(kern, (GaussianKernel, LaplacianKernel)):
        _check(_rff_z(kern, features, global_random_seed, dtype=np.float32), None)


@pytest.mark.parametrize("mutant", list(MUTANTS))
@pytest.mark.parametrize("kern", [GaussianKernel(SIGMA), LaplacianKernel(SIGMA)],
                         ids=["gauss", "lap"])
def test_rff_iid_mutants_rejected(kern, mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_rff_z(kern, "paired", global_random_seed), mutant)


# ------------------------------------------------------------------------------ block tests
def _paired_terms(est, x, y):
    """Per-frequency terms cos(w_j'(x - y)) (n_pairs, m) of an even paired map."""
    Zx, Zy = est.transform(x), est.transform(y)
    m = Zx.shape[1] // 2
    return (Zx[:, :m] * Zy[:, :m] + Zx[:, m:] * Zy[:, m:]) * m


def _block_z(terms, d, k):
    """z of the mean of the per-block means (blocks of d consecutive frequencies, iid), with
    their sample variance."""
    R = terms.shape[1] // d
    blk = terms[:, :R * d].reshape(terms.shape[0], R, d).mean(axis=2)
    return (blk.mean(axis=1) - k) / (blk.std(axis=1, ddof=1) / math.sqrt(R))


def _sphere_cf(r, d):
    """E cos(r u_1), u uniform on S^{d-1}: Gamma(d/2)(2/r)^{d/2-1}J_{d/2-1}(r)."""
    nu = d / 2 - 1
    return np.exp(special.gammaln(d / 2) + nu * np.log(2 / r)) * special.jv(nu, r)


def _orf_z(kern, sampling, seed, R=2500):
    d = SIGMA.shape[0]
    x, y, delta = _pairs(seed, SIGMA, RADII[:4])
    rff = RandomFourierFeatures(2 * R * d, kernel=kern, sampling=sampling,
                                random_state=_seed(seed, 2)).fit(x)
    if sampling == "orthogonal_unit":   # rows of length sqrt(d) in the scaled coordinates
        k = _sphere_cf(math.sqrt(d) * RADII[:4], d)
    else:
        k = _unit(kern).k(delta / SIGMA)
    return _block_z(_paired_terms(rff, x, y), d, k)


ORF_CASES = [("orthogonal", GaussianKernel(SIGMA)), ("orthogonal", MaternKernel(SIGMA, nu=2.5)),
             ("orthogonal", BallSumKernel(SIGMA, t=2)), ("orthogonal_unit", GaussianKernel(SIGMA))]
ORF_IDS = ["orf-gauss", "orf-mat25", "orf-ball2", "orfunit-gauss"]


@pytest.mark.parametrize("sampling, kern", ORF_CASES, ids=ORF_IDS)
def test_rff_orthogonal_ard_law(sampling, kern, global_random_seed):
    """ORF with ARD scales is unbiased for the ARD kernel (blocks orthogonal in x / sigma); ORF'
    estimates the sphere's characteristic function at sqrt(d) ||Delta / sigma||.  4 distances,
    2,500 iid blocks."""
    _check(_orf_z(kern, sampling, global_random_seed), None)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_rff_orthogonal_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_orf_z(GaussianKernel(SIGMA), "orthogonal", global_random_seed), mutant)


def _qmc_z(kern, sampling, seed, R=300, m=64):
    x, y, delta = _pairs(seed, SIGMA, RADII[:4])
    seeds = np.random.SeedSequence([seed, 3]).spawn(R)
    est = np.empty((R, len(x)))
    for i, s in enumerate(seeds):
        rff = RandomFourierFeatures(2 * m, kernel=kern, sampling=sampling,
                                    random_state=s).fit(x)
        est[i] = (rff.transform(x) * rff.transform(y)).sum(axis=1)
    k = _unit(kern).k(delta / SIGMA)
    return (est.mean(axis=0) - k) / (est.std(axis=0, ddof=1) / math.sqrt(R))


@pytest.mark.parametrize("sampling", ["qmc_sobol", "qmc_halton"])
@pytest.mark.parametrize("kern", [GaussianKernel(SIGMA), LaplacianKernel(SIGMA)],
                         ids=["gauss", "lap"])
def test_rff_qmc_ard_unbiased(kern, sampling, global_random_seed):
    """Scrambled QMC frequencies with ARD scales: unbiased for the ARD kernel (300 independently
    scrambled fits of 64 points, 4 distances)."""
    _check(_qmc_z(kern, sampling, global_random_seed), None)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_rff_qmc_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_qmc_z(GaussianKernel(SIGMA), "qmc_sobol", global_random_seed), mutant)


# ------------------------------------------------------------------------------ RFF leverage
def _lev_z(kern, seed, R=300, D=256):
    """Leverage-weighted RFF with ARD scales, fitted on the pairs' rows: R independently seeded
    fits (each draws its own pool), the mean estimate against the ARD kernel with the sample
    variance (t with R - 1 degrees of freedom).  Exactly unbiased whatever the density
    (importance weights p/q), so the mean is the kernel at (x - y) / sigma."""
    x, y, delta = _pairs(seed, SIGMA, RADII)
    X = np.vstack([x, y])
    n = len(RADII)
    est = np.empty((R, n))
    for r in range(R):
        rff = RandomFourierFeatures(D, kernel=kern, sampling="leverage",
                                    random_state=_seed(seed, 7, r)).fit(X)
        Z = rff.transform(X)
        est[r] = (Z[:n] * Z[n:]).sum(axis=1)
    k = _unit(kern).k(delta / SIGMA)
    return (est.mean(axis=0) - k) / (est.std(axis=0, ddof=1) / math.sqrt(R))


@pytest.mark.parametrize("kern", [GaussianKernel(SIGMA), LaplacianKernel(SIGMA)],
                         ids=["gauss", "lap"])
def test_rff_leverage_ard_unbiased(kern, global_random_seed):
    """sampling="leverage" with ARD scales (the unit-scale density on X / sigma, frequencies
    divided by sigma) is unbiased for the ARD kernel: 2 kernels x 5 distances, |z| < 5."""
    _check(_lev_z(kern, global_random_seed), None)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_rff_leverage_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_lev_z(GaussianKernel(SIGMA), global_random_seed), mutant)


SIGMA6 = np.array([0.8, 1.5, 3.0, 6.0, 1.2, 4.0])


def _fastfood_z(kern, seed, R=2500):
    """Fastfood on d = 6 features (padded to 8): blocks of 8 frequencies are iid."""
    x, y, delta = _pairs(seed, SIGMA6, RADII[:4])
    ff = Fastfood(2 * R * 8, kernel=kern, random_state=_seed(seed, 4)).fit(x)
    assert ff.d_padded_ == 8
    k = _unit(kern).k(delta / SIGMA6)
    return _block_z(_paired_terms(ff, x, y), 8, k)


@pytest.mark.parametrize("kern", [GaussianKernel(SIGMA6), MaternKernel(SIGMA6, nu=1.5)],
                         ids=["gauss", "mat15"])
def test_fastfood_ard_unbiased(kern, global_random_seed):
    """Fastfood with ARD scales (x / sigma, then the unit-scale V): unbiased for the ARD kernel
    (LSS Lemma 3 in the scaled coordinates); 4 distances, 2,500 iid blocks."""
    _check(_fastfood_z(kern, global_random_seed), None)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_fastfood_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_fastfood_z(GaussianKernel(SIGMA6), global_random_seed), mutant)


# ------------------------------------------------------------------------------ SORF (exact)
def _sorf_block_law(deltas):
    """Exact mean and variance of one SORF block's estimate (1/d) sum_r cos(w_r' Delta) at unit
    length scale, d = 4: the 2^12 equally likely sign diagonals D1, D2, D3 enumerated,
    W = sqrt(d) Hn D1 Hn D2 Hn D3 (Yu et al. 2016, §4)."""
    d = 4
    Hn = scipy.linalg.hadamard(d).astype(np.float64) / math.sqrt(d)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))       # (16, d)
    est = []
    for s1, s2, s3 in itertools.product(signs, repeat=3):
        W = math.sqrt(d) * Hn @ np.diag(s1) @ Hn @ np.diag(s2) @ Hn @ np.diag(s3)
        est.append(np.cos(W @ deltas.T).mean(axis=0))
    est = np.array(est)                                                   # (4096, n)
    return est.mean(axis=0), est.var(axis=0)


def _sorf_z(seed, R=5000):
    x, y, delta = _pairs(seed, SIGMA, RADII[:4])
    est = StructuredOrthogonalFeatures(2 * R * 4, sigma=SIGMA,
                                       random_state=_seed(seed, 5)).fit(x)
    blk = _paired_terms(est, x, y).reshape(len(x), R, 4).mean(axis=2)
    mean, var = _sorf_block_law(delta / SIGMA)
    return (blk.mean(axis=1) - mean) / np.sqrt(var / R), mean


def test_sorf_ard_exact_law(global_random_seed):
    """SORF with ARD scales: the mean of 5,000 iid blocks against the exact mean of a block at
    (x - y) / sigma, with its exact variance (enumeration of the sign patterns, d = 4); the
    exact mean is itself within Yu et al.'s Theorem 3 bound 6 z / sqrt(d) of the ARD Gaussian
    kernel (SORF is biased; at d = 4 the bound is loose, so it is context)."""
    z, mean = _sorf_z(global_random_seed)
    _check(z, None)
    assert np.all(np.abs(mean - np.exp(-RADII[:4] ** 2 / 2)) <= 6 * RADII[:4] / 2)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_sorf_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(ShiftInvariantKernel, "ard_split", MUTANTS[mutant])
    _check(_sorf_z(global_random_seed)[0], mutant)


# ------------------------------------------------------------------------------ binning
BINNING_KERNELS = [
    LaplacianKernel(SIGMA), InversePowerBinningKernel(a=1.5, sigma=SIGMA),
    StretchedExponentialBinningKernel(q=0.5, sigma=SIGMA),
    CustomBinningKernel(lambda size, rng: np.ones(size),
                        profile=lambda t: np.maximum(0.0, 1.0 - t), sigma=SIGMA * 2),
]
BIDS = ["lap", "invpow", "stretched", "hat"]
#: distances ||Delta / sigma||_2 at which the binning kernels span (0.05, 0.95)
BIN_RADII = np.array([0.05, 0.15, 0.4, 0.8, 1.3])


def _binning_z(kern, seed, P=20_000):
    x, y, delta = _pairs(seed, SIGMA, BIN_RADII)
    X = np.empty((2 * len(x), x.shape[1]))
    X[0::2], X[1::2] = x, y
    est = RandomBinningFeatures(P, kernel=kern, random_state=_seed(seed, 6))
    Z = est.fit_transform(X)
    cols = Z.indices.reshape(-1, P)
    shared = (cols[0::2] == cols[1::2]).mean(axis=1)
    unit = copy.copy(kern)
    unit.sigma = 1.0                                                  # the unit-scale profile
    k = unit.k(delta / kern.sigma)
    ok = (k > 0) & (k < 1)
    np.testing.assert_array_equal(shared[~ok], k[~ok])               # no variance there
    return (shared[ok] - k[ok]) / np.sqrt(k[ok] * (1 - k[ok]) / P)


@pytest.mark.parametrize("kern", BINNING_KERNELS, ids=BIDS)
def test_binning_ard_unbiased_exact_variance(kern, global_random_seed):
    """Random binning with ARD scales (pitches of coordinate m times sigma_m): the fraction of
    P = 20,000 grids where x and y share a cell has mean prod_m kappa(|Delta_m| / sigma_m) and
    the exact variance k(1 - k)/P; 5 distances."""
    _check(_binning_z(kern, global_random_seed), None)


@pytest.mark.parametrize("mutant", list(PITCH_MUTANTS))
def test_binning_mutants_rejected(mutant, monkeypatch, global_random_seed):
    monkeypatch.setattr(BinningKernel, "sample_pitch", PITCH_MUTANTS[mutant])
    _check(_binning_z(LaplacianKernel(SIGMA), global_random_seed), mutant)
