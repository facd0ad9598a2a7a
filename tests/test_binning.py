"""Tests of randfeat.binning: random binning features (Rahimi & Recht 2007, §4) — THEORY §3, P6.

Statistical design (THEORY §5).  The P grids of one fit are iid, so for a pair (x, y) the
per-grid indicators 1[c_p(x) = c_p(y)] are iid Bernoulli(k(x, y)) and z(x)^T z(y) is their mean:
exact variance k(1 - k)/P.  Every statistical check is a two-sided z-test (or ratio test) with
threshold 5 standard errors: false-alarm probability ~5.7e-7 per check under the normal
approximation (P >= 20,000 Bernoulli draws, or R = 2,000 replicate blocks); each test function
runs at most ~30 checks, so its family-wise false-alarm rate is below 2e-5 (Bonferroni), and
below 2e-3 over the 100 seeds of RANDFEAT_TESTS_SEEDS=all.  KS tests reject at p < 1e-6.
Seeds come from ``global_random_seed`` through spawned SeedSequences.
"""

import copy
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate, stats
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from randfeat import RandomBinningFeatures
from randfeat.kernels import (
    CustomBinningKernel,
    InversePowerBinningKernel,
    LaplacianKernel,
    StretchedExponentialBinningKernel,
    get_kernel,
)

Z_MAX = 5.0

KERNELS = {
    "laplacian": dict(kernel="laplacian"),
    "inverse_power": dict(kernel="inverse_power", kernel_params={"a": 1.5}),
    "stretched_exponential": dict(kernel="stretched_exponential", kernel_params={"q": 0.5}),
    "hat (custom)": dict(kernel=CustomBinningKernel(lambda size, rng: np.ones(size),
                                                    profile=lambda t: np.maximum(0.0, 1 - t))),
}

UNIT_KERNELS = [
    LaplacianKernel(sigma=1.7),
    InversePowerBinningKernel(a=1.5, sigma=1.7),
    InversePowerBinningKernel(a=0.3, sigma=0.5),
    StretchedExponentialBinningKernel(q=0.5, sigma=1.7),
    StretchedExponentialBinningKernel(q=0.8, sigma=0.6),
]


def _seeds(seed, n):
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n)]


def _pairs(kern, rng, scales=(0.002, 0.02, 0.1, 0.3, 0.7, 1.5, 3.0)):
    """Pairs (x, y) in d = 3 at a range of distances; rows 2i, 2i+1 form pair i."""
    d = 3
    direction = np.array([1.0, 0.5, 0.25])
    X = []
    for s in scales:
        x = rng.normal(size=d) * 2.0
        X += [x, x + s * kern.sigma * direction * rng.choice([-1, 1], size=d)]
    X = np.array(X)
    k = np.array([kern.gram(X[2 * i:2 * i + 1], X[2 * i + 1:2 * i + 2])[0, 0]
                  for i in range(len(scales))])
    return X, k


def _kernel(est):
    """The exact kernel an (unfitted) estimator approximates."""
    return get_kernel(est.kernel, est.sigma, require="binning", **(est.kernel_params or {}))


def _train_columns(Z, P):
    """(n, P) column matrix of a CSR whose rows all have P entries (grid order)."""
    assert np.all(np.diff(Z.indptr) == P)
    return Z.indices.reshape(-1, P)


def _shared(cols):
    """(n_pairs, P) per-grid indicators of rows 2i and 2i+1 sharing a cell."""
    return cols[0::2] == cols[1::2]


# ------------------------------------------------------------------------------------------------
# statistical checks


@pytest.mark.parametrize("name", list(KERNELS))
def test_unbiased_over_distances(name, global_random_seed):
    """E[z(x)^T z(y)] = k(x, y) at seven distances: z-test with the exact variance k(1-k)/P."""
    seed_data, seed_grid = _seeds(global_random_seed, 2)
    P = 20_000
    kw = dict(KERNELS[name])
    if isinstance(kw["kernel"], CustomBinningKernel):  # an instance carries its own sigma
        kw["kernel"] = kw["kernel"].rescaled(1.7)
    else:
        kw["sigma"] = 1.7
    est = RandomBinningFeatures(P, random_state=seed_grid, **kw)
    X, k = _pairs(_kernel(est), np.random.default_rng(seed_data))
    Z = est.fit_transform(X)
    shared = _shared(_train_columns(Z, P))
    est_k = shared.mean(axis=1)
    # the sparse inner product is the same number
    np.testing.assert_allclose((Z[0::2].multiply(Z[1::2])).sum(axis=1).A1, est_k, rtol=1e-12)
    assert k.min() < 0.1 and k.max() > 0.85  # the distances span the kernel's range
    degenerate = (k == 0) | (k == 1)  # e.g. the hat kernel beyond its support: no variance
    np.testing.assert_array_equal(est_k[degenerate], k[degenerate])
    k, est_k = k[~degenerate], est_k[~degenerate]
    z = (est_k - k) / np.sqrt(k * (1 - k) / P)
    assert np.all(np.abs(z) < Z_MAX), (k, est_k, z)


@pytest.mark.parametrize("name", ["laplacian", "inverse_power", "stretched_exponential"])
def test_exact_variance(name, global_random_seed):
    """Var[z(x)^T z(y)] = k(1-k)/P: R = 2,000 independent blocks of P = 20 grids, ratio test.

    s^2 / (k(1-k)/P) has standard error sqrt(2/(R-1) + kappa/R), kappa the excess kurtosis of
    the mean of P Bernoulli(k), (1 - 6k(1-k)) / (P k(1-k)); fail beyond 5 standard errors.
    """
    seed_data, seed_grid = _seeds(global_random_seed, 2)
    R, P = 2000, 20
    est = RandomBinningFeatures(R * P, sigma=1.3, random_state=seed_grid, **KERNELS[name])
    X, k = _pairs(_kernel(est), np.random.default_rng(seed_data), scales=(0.1, 0.4, 1.0, 2.0))
    shared = _shared(_train_columns(est.fit_transform(X), R * P))
    blocks = shared.reshape(len(k), R, P).mean(axis=2)
    for i, ki in enumerate(k):
        v = ki * (1 - ki) / P
        kappa = (1 - 6 * ki * (1 - ki)) / (P * ki * (1 - ki))
        se = math.sqrt(2 / (R - 1) + kappa / R)
        ratio = blocks[i].var(ddof=1) / v
        assert abs(ratio - 1) < Z_MAX * se, (ki, ratio, se)


@pytest.mark.parametrize("kern", UNIT_KERNELS, ids=repr)
def test_pitch_law_ks(kern, global_random_seed):
    """Sampled pitches follow p(delta) = delta k''(delta): KS test against its CDF (p > 1e-6)."""
    rng = np.random.default_rng(_seeds(global_random_seed, 1)[0])
    delta = kern.sample_pitch(4000, rng)
    assert delta.shape == (4000,) and np.all(delta > 0)
    assert stats.kstest(delta, kern.pitch_cdf).pvalue > 1e-6
    if isinstance(kern, LaplacianKernel):  # Gamma(2, sigma), not truncated (pitfall 9)
        assert stats.kstest(delta, stats.gamma(2, scale=kern.sigma).cdf).pvalue > 1e-6
        assert delta.max() > 4 * kern.sigma  # tail present: P(delta > 4 sigma) = 5 e^-4 ~ 0.09


def test_laplacian_estimator_pitches_are_gamma(global_random_seed):
    """The estimator's widths_ are Gamma(2, sigma) (not truncated; THEORY pitfall 9)."""
    est = RandomBinningFeatures(500, sigma=2.5, random_state=global_random_seed)
    est.fit(np.zeros((1, 8)))
    assert stats.kstest(est.widths_.ravel(), stats.gamma(2, scale=2.5).cdf).pvalue > 1e-6
    assert np.all((est.shifts_ >= 0) & (est.shifts_ < est.widths_))


@pytest.mark.parametrize("kern", UNIT_KERNELS, ids=repr)
def test_lemma1_numerically(kern):
    """Lemma 1: int_0^inf p(delta) max(0, 1 - D/delta) d delta = k(D), and p is a density."""
    s = kern.sigma
    total, _ = integrate.quad(kern.pitch_pdf, 0, np.inf, limit=200)
    assert total == pytest.approx(1.0, abs=1e-7)
    for D in np.array([0.01, 0.2, 1.0, 3.0, 10.0]) * s:
        val, _ = integrate.quad(lambda t, D=D: kern.pitch_pdf(t) * (1 - D / t), D, np.inf,
                                limit=200)
        assert val == pytest.approx(float(kern.profile(D)), rel=1e-6, abs=1e-9)
        cdf, _ = integrate.quad(kern.pitch_pdf, 0, D, limit=200)
        assert float(kern.pitch_cdf(D)) == pytest.approx(cdf, abs=1e-7)


def test_kernel_functions():
    lap = LaplacianKernel(sigma=2.0)
    D = np.array([0.5, -1.0, 0.25])
    assert float(lap.k(D)) == pytest.approx(math.exp(-1.75 / 2))
    X = np.array([[0.0, 1.0], [2.0, -1.0]])
    np.testing.assert_allclose(lap.gram(X), np.exp(-np.abs(X[:, None] - X[None]).sum(-1) / 2))
    ip = InversePowerBinningKernel(a=2.0, sigma=0.5)
    assert float(ip.k(np.array([0.5, 1.0]))) == pytest.approx(2.0 ** -2 * 3.0 ** -2)
    se = StretchedExponentialBinningKernel(q=1.0, sigma=1.0)
    np.testing.assert_allclose(se.profile([0, 1, 2]), np.exp(-np.array([0, 1.0, 2.0])))
    assert get_kernel("laplacian", 3.0, require="binning") == LaplacianKernel(sigma=3.0)
    assert get_kernel(InversePowerBinningKernel(a=2, sigma=2), require="binning").sigma == 2.0


def test_heavy_tailed_and_infinite_pitches():
    """Tiny a: pitches up to ~1e308 are fine; an infinite pitch (allowed from a custom sampler)
    has shift 0 and never separates points (the hat kernel of an infinite pitch is 1)."""
    X = np.random.default_rng(0).normal(size=(50, 2))
    est = RandomBinningFeatures(200, kernel="inverse_power", kernel_params={"a": 0.002},
                                random_state=0)
    Z = est.fit_transform(X)
    assert est.widths_.max() > 1e300 and Z.nnz == 50 * 200
    inf_pitch = RandomBinningFeatures(
        30, kernel=lambda size, rng: np.where(rng.random(size) < 0.5, np.inf, 1.0),
        random_state=0)
    Z = inf_pitch.fit_transform(X)
    assert np.isinf(inf_pitch.widths_).any()
    assert np.all(inf_pitch.shifts_[np.isinf(inf_pitch.widths_)] == 0)
    all_inf = np.isinf(inf_pitch.widths_).all(axis=1)
    assert all_inf.any()
    assert np.all(inf_pitch.n_cells_[all_inf] == 1)  # one cell holds every point


@pytest.mark.parametrize("kernel", ["gaussian", "rbf", "cauchy", "matern"])
def test_non_convex_kernels_refused(kernel):
    with pytest.raises(ValueError, match=r"cannot be approximated by random binning.*"
                                         r"p\(delta\) = delta \* k''\(delta\).*convex"):
        RandomBinningFeatures(kernel=kernel).fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"cannot be approximated by random binning"):
        RandomBinningFeatures(kernel=get_kernel(kernel)).fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"unknown kernel 'sinc'; valid names are \['laplacian'"):
        RandomBinningFeatures(kernel="sinc").fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"q must be in \(0, 1\]"):
        StretchedExponentialBinningKernel(q=2.0)


# ------------------------------------------------------------------------------------------------
# structure and exactness


def _reference_columns(est, X, train):
    """NumPy + dict reference of exact mode: per-grid first-seen column ids of the cells of
    ``train``; (n, P) columns of X (-1 for unseen cells)."""
    n, P = X.shape[0], est.widths_.shape[0]
    inv = 1.0 / est.widths_
    out = np.full((n, P), -1, dtype=np.int64)
    offset = 0
    big = np.finfo(np.float64).max
    for p in range(P):
        with np.errstate(over="ignore", invalid="ignore"):
            ct = np.clip(np.floor((train.astype(np.float64) - est.shifts_[p]) * inv[p]), -big, big)
            cx = np.clip(np.floor((X.astype(np.float64) - est.shifts_[p]) * inv[p]), -big, big)
        table = {}
        for row in ct:
            table.setdefault(tuple(row + 0.0), len(table))
        for i, row in enumerate(cx):
            out[i, p] = offset + table.get(tuple(row + 0.0), -1 - offset)
        assert est.n_cells_[p] == len(table)
        offset += len(table)
    return out


@pytest.mark.parametrize("sigma,d", [(0.7, 3), (0.05, 40), (5.0, 12)])
def test_exact_mode_matches_numpy_dict_reference(sigma, d, global_dtype):
    """Columns equal a NumPy floor + dict-of-tuples implementation, for training and new points
    (d = 40 with a small sigma needs multi-word keys)."""
    rng = np.random.default_rng(7)
    Xtr = rng.normal(size=(400, d)).astype(global_dtype)
    Xnew = np.vstack([Xtr[:150] + rng.normal(size=(150, d)) * 0.02 * sigma,
                      rng.normal(size=(150, d)) * 1.5]).astype(global_dtype)
    est = RandomBinningFeatures(25, sigma=sigma, random_state=3, n_threads=2)
    Z = est.fit_transform(Xtr)
    P = 25
    assert Z.dtype == global_dtype and Z.format == "csr" and Z.has_sorted_indices
    ref_tr = _reference_columns(est, Xtr, Xtr)
    np.testing.assert_array_equal(_train_columns(Z, P), ref_tr)
    if sigma == 0.05:
        assert est._fitted.cells.layout.n_words > 1  # multi-word keys exercised
    ref_new = _reference_columns(est, Xnew, Xtr)
    Znew = est.transform(Xnew)
    dense_cols = np.full((Xnew.shape[0], P), -1, dtype=np.int64)
    for i in range(Xnew.shape[0]):
        idx = Znew.indices[Znew.indptr[i]:Znew.indptr[i + 1]]
        grid = np.searchsorted(est.column_offsets_, idx, side="right") - 1
        dense_cols[i, grid] = idx
    np.testing.assert_array_equal(dense_cols, ref_new)
    assert (ref_new < 0).any() and (ref_new >= 0).any()  # both seen and unseen cells occur


def test_training_rows_have_exactly_P_entries_of_inv_sqrt_P(global_dtype):
    X = np.random.default_rng(0).uniform(-3, 3, size=(1000, 5)).astype(global_dtype)
    P = 37
    est = RandomBinningFeatures(P, sigma=0.8, random_state=0)
    Z = est.fit(X).transform(X)
    assert Z.shape == (1000, est.n_columns_)
    assert np.all(np.diff(Z.indptr) == P)
    np.testing.assert_array_equal(Z.data, np.full(Z.nnz, 1 / np.sqrt(P), dtype=global_dtype))
    cols = _train_columns(Z, P)
    lo, hi = est.column_offsets_[:-1], est.column_offsets_[1:]
    assert np.all((cols >= lo) & (cols < hi))  # entry p lies in grid p's block
    assert est.n_columns_ == est.n_cells_.sum() == est.column_offsets_[-1]
    # every column is used by some training row (only occupied bins are kept)
    assert np.unique(cols).size == est.n_columns_
    np.testing.assert_allclose(Z.multiply(Z).sum(axis=1).A1, 1.0, rtol=1e-6)
    Zft = RandomBinningFeatures(P, sigma=0.8, random_state=0).fit_transform(X)
    assert (Zft != Z).nnz == 0


def test_unseen_cells_contribute_nothing():
    X = np.random.default_rng(0).normal(size=(200, 3))
    est = RandomBinningFeatures(50, sigma=0.5, random_state=0).fit(X)
    far = est.transform(X[:3] + 1e6)
    assert far.nnz == 0 and far.shape == (3, est.n_columns_)
    near = est.transform(X[:5] + 0.05)
    assert np.all(np.diff(near.indptr) <= 50)


def test_huge_finite_values_no_overflow():
    """Cells of |x| up to DBL_MAX: no overflow, exact identity of cells (checked against NumPy)."""
    big = np.finfo(np.float64).max
    X = np.array([[1e300, 0.0], [-1e300, 1.0], [1e300, 0.0], [1e299, 0.0], [big, -big],
                  [-big, big], [1e300 * (1 + 2e-16), 0.0], [0.5, 0.5]])
    for sigma in (1.0, 1e-3, 1e10):
        est = RandomBinningFeatures(40, sigma=sigma, random_state=1)
        Z = est.fit_transform(X)
        assert np.all(np.isfinite(Z.data))
        cols = _train_columns(Z, 40)
        np.testing.assert_array_equal(cols, _reference_columns(est, X, X))
        np.testing.assert_array_equal(cols[0], cols[2])          # identical rows share cells
        assert not np.any(cols[0] == cols[1]) and not np.any(cols[0] == cols[3])
        assert not est._fitted.cells.layout.array("fast").all()  # generic layout used
        np.testing.assert_array_equal(_train_columns(est.transform(X), 40), cols)


def test_float32_uses_float64_cells():
    X64 = np.random.default_rng(0).normal(size=(500, 4))
    X32 = X64.astype(np.float32)
    a = RandomBinningFeatures(30, random_state=5).fit(X32)
    b = RandomBinningFeatures(30, random_state=5).fit(X32.astype(np.float64))
    np.testing.assert_array_equal(a.widths_, b.widths_)
    Za, Zb = a.transform(X32), b.transform(X32.astype(np.float64))
    assert Za.dtype == np.float32 and Zb.dtype == np.float64
    np.testing.assert_array_equal(Za.indices, Zb.indices)
    np.testing.assert_array_equal(Za.indptr, Zb.indptr)


# ------------------------------------------------------------------------------------------------
# hashing mode


def test_hashing_mode_structure_and_vs_exact():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    Xnew = rng.normal(size=(100, 4)) * 3
    P, K = 20, 16
    ex = RandomBinningFeatures(P, sigma=0.6, random_state=9).fit(X)
    hs = RandomBinningFeatures(P, sigma=0.6, hash_size=K, random_state=9).fit(X)
    np.testing.assert_array_equal(ex.widths_, hs.widths_)  # same grids for one seed
    np.testing.assert_array_equal(ex.shifts_, hs.shifts_)
    assert hs.n_columns_ == P * K and np.all(hs.n_cells_ == K)
    for data in (X, Xnew):
        Zh = hs.transform(data)
        assert Zh.shape == (data.shape[0], P * K)
        cols = _train_columns(Zh, P)  # every row, seen or not: exactly P entries
        assert np.all(cols // K == np.arange(P))
        np.testing.assert_allclose(Zh.data, 1 / np.sqrt(P))
    # same cell in exact mode => same hashed column (hashing only adds collisions)
    ce = _train_columns(ex.transform(X), P)
    ch = _train_columns(hs.transform(X), P)
    for p in range(P):
        same_e = ce[:, p][:, None] == ce[:, p][None, :]
        same_h = ch[:, p][:, None] == ch[:, p][None, :]
        assert np.all(same_h[same_e])
        assert same_h.sum() > same_e.sum()  # K = 16 < #cells: some collisions
    # streaming: no data-dependent state
    hs2 = RandomBinningFeatures(P, sigma=0.6, hash_size=K, random_state=9).fit(Xnew)
    assert (hs2.transform(X) != hs.transform(X)).nnz == 0
    assert (hs.fit_transform(X) != hs.transform(X)).nnz == 0


def test_hashing_collision_bias(global_random_seed):
    """Hashing mode: E[z(x)^T z(y)] = k + (1 - k)/K (Var = E(1-E)/P); z-test, K = 4."""
    seed_data, seed_grid = _seeds(global_random_seed, 2)
    P, K = 20_000, 4
    est = RandomBinningFeatures(P, sigma=1.1, hash_size=K, random_state=seed_grid)
    X, k = _pairs(_kernel(est), np.random.default_rng(seed_data))
    shared = _shared(_train_columns(est.fit(X).transform(X), P))
    E = k + (1 - k) / K
    z = (shared.mean(axis=1) - E) / np.sqrt(E * (1 - E) / P)
    assert np.all(np.abs(z) < Z_MAX), (k, shared.mean(axis=1), z)
    debiased = (K * shared.mean(axis=1) - 1) / (K - 1)
    z2 = (debiased - k) / (np.sqrt(E * (1 - E) / P) * K / (K - 1))
    assert np.all(np.abs(z2) < Z_MAX)


# ------------------------------------------------------------------------------------------------
# estimator contract


def _state(est):
    return {k: copy.deepcopy(v) for k, v in vars(est).items()}


def _assert_same_state(a, b):
    assert a.keys() == b.keys()
    for k in a:
        va, vb = a[k], b[k]
        if isinstance(va, tuple):
            for x, y in zip(va, vb, strict=True):
                np.testing.assert_array_equal(x, y)
        elif isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb)
        else:
            assert va == vb, k


@pytest.mark.parametrize("hash_size", [None, 8])
def test_transform_is_pure_and_input_untouched(hash_size):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    est = RandomBinningFeatures(10, sigma=0.5, hash_size=hash_size, random_state=0).fit(X)
    before = _state(est)
    Xnew = np.asfortranarray(rng.normal(size=(100, 4)) * 2)
    Xnew_copy = Xnew.copy()
    Xro = Xnew.copy()
    Xro.setflags(write=False)
    Z1 = est.transform(Xnew)
    Z2 = est.transform(Xro)
    Z3 = est.transform(np.ascontiguousarray(np.repeat(Xnew, 2, axis=0)[::2]))
    _assert_same_state(before, _state(est))
    np.testing.assert_array_equal(Xnew, Xnew_copy)
    assert (Z1 != Z2).nnz == 0 and (Z1 != Z3).nnz == 0


@pytest.mark.parametrize("hash_size", [None, 13])
def test_bit_identical_for_any_thread_count(hash_size):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    Xnew = rng.normal(size=(1000, 6)) * 1.3
    outs = []
    for n_threads in (1, 2, 3, -1):
        est = RandomBinningFeatures(23, sigma=0.9, hash_size=hash_size, random_state=4,
                                    n_threads=n_threads)
        outs.append((est.fit_transform(X), est.transform(Xnew), est.n_cells_))
    for Za, Zn, nc in outs[1:]:
        for A, B in ((Za, outs[0][0]), (Zn, outs[0][1])):
            np.testing.assert_array_equal(A.indices, B.indices)
            np.testing.assert_array_equal(A.indptr, B.indptr)
            np.testing.assert_array_equal(A.data, B.data)
        np.testing.assert_array_equal(nc, outs[0][2])


def test_known_answer_pins_random_stream():
    """Pin a few outputs so a change of the random stream or of the column order shows up."""
    X = np.arange(12.0).reshape(4, 3) / 4
    est = RandomBinningFeatures(3, random_state=0)
    Z = est.fit_transform(X)
    np.testing.assert_allclose(est.widths_[0], [1.83431007, 2.63769797, 1.06635807], rtol=1e-7)
    assert est.n_cells_.tolist() == [4, 4, 4]
    assert Z.indices.tolist() == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]


def test_pickle_and_feature_names():
    X = np.random.default_rng(0).normal(size=(100, 3))
    for hs in (None, 5):
        est = RandomBinningFeatures(7, hash_size=hs, random_state=0).fit(X)
        est2 = pickle.loads(pickle.dumps(est))
        assert (est2.transform(X) != est.transform(X)).nnz == 0
        names = est.get_feature_names_out()
        assert len(names) == est.n_columns_ and names[0] == "randombinningfeatures0"
        assert est.n_features_in_ == 3


def test_custom_sampler_callable_and_object():
    X = np.random.default_rng(0).normal(size=(200, 3))
    lap = RandomBinningFeatures(20, random_state=3).fit(X)
    custom = RandomBinningFeatures(20, random_state=3,
                                   kernel=lambda size, rng: rng.gamma(2.0, 1.0, size=size)).fit(X)
    np.testing.assert_array_equal(lap.widths_, custom.widths_)
    assert (lap.transform(X) != custom.transform(X)).nnz == 0
    with pytest.raises(ValueError, match="has no exact profile"):
        custom.kernel_.gram(X[:2])
    # a kernel instance carries its own sigma; sigma must then stay None (one rule for all maps)
    obj = RandomBinningFeatures(20, kernel=InversePowerBinningKernel(a=2.0, sigma=1.5))
    obj.fit(X)
    assert obj.kernel_ == InversePowerBinningKernel(a=2.0, sigma=1.5)
    with pytest.raises(ValueError, match="sigma=2.0 was given together with the kernel instance"):
        RandomBinningFeatures(20, sigma=2.0, kernel=obj.kernel).fit(X)
    lap = RandomBinningFeatures(20, kernel=LaplacianKernel(1.0), random_state=3).fit(X)
    ref = RandomBinningFeatures(20, kernel="laplacian", random_state=3).fit(X)
    np.testing.assert_array_equal(lap.widths_, ref.widths_)
    bad = RandomBinningFeatures(5, kernel=lambda size, rng: -np.ones(size))
    with pytest.raises(ValueError, match="positive pitches"):
        bad.fit(X)


def test_bad_input_messages():
    X = np.random.default_rng(0).normal(size=(20, 4))
    est = RandomBinningFeatures(5, random_state=0)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        est.transform(X)
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        est.fit(Xnan)
    est.fit(X)
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        est.transform(Xinf)
    with pytest.raises(ValueError, match="X has 3 features, but RandomBinningFeatures is "
                                         "expecting 4 features as input"):
        est.transform(X[:, :3])
    with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\)"):
        RandomBinningFeatures().fit(np.zeros((0, 3)))
    with pytest.raises(InvalidParameterError, match="The 'n_grids' parameter of "
                                                    "RandomBinningFeatures must be an int in the "
                                                    r"range \[1, inf\)\. Got 0 instead"):
        RandomBinningFeatures(0).fit(X)
    with pytest.raises(InvalidParameterError, match="The 'sigma' parameter"):
        RandomBinningFeatures(sigma=-1.0).fit(X)
    with pytest.raises(InvalidParameterError, match="The 'hash_size' parameter"):
        RandomBinningFeatures(hash_size=0).fit(X)
    with pytest.raises(ValueError, match=r"unknown kernel 'lapalcian'; valid names are "
                                         r"\['laplacian', 'inverse_power', "
                                         r"'stretched_exponential'\]"):
        RandomBinningFeatures(kernel="lapalcian").fit(X)
    with pytest.raises(ValueError, match=r"kernel 'inverse_power' does not take parameters "
                                         r"\['q'\] \(accepted: \['a'\]\)"):
        RandomBinningFeatures(kernel="inverse_power", kernel_params={"q": 1}).fit(X)
    with pytest.raises(ValueError, match=r"a must be a positive finite number, got -1\.0"):
        RandomBinningFeatures(kernel="inverse_power", kernel_params={"a": -1}).fit(X)
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.transform(X.astype(np.complex128))
    # scipy.sparse input is accepted (it used to be refused): the dense array's output
    assert (est.transform(sp.csr_matrix(X)) != est.transform(X)).nnz == 0


def test_box_bounds_are_exact_float_boundaries():
    """[xa, xb) is exactly the set of float64 x whose cell coordinate lies in [lo, hi]."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)) * np.array([1e-3, 1.0, 1e3, 1e8, 1.0])
    est = RandomBinningFeatures(
        60, kernel=lambda size, rng: np.where(rng.random(size) < 0.1, np.inf,
                                              rng.gamma(2.0, 1.0, size)),
        random_state=0).fit(X)
    u, r, lo, hi, xa, xb, fast = (est._fitted.cells.layout.array(k)
                                  for k in ("u", "r", "lo", "hi", "xa", "xb", "fast"))
    fast = fast.astype(bool)
    assert fast.all() and np.isinf(est.widths_).any()

    def cell(x):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.floor((x - u) * r)

    finite_a = np.isfinite(xa) & (xa > -np.finfo(np.float64).max)
    assert np.all(cell(xa)[finite_a] >= lo[finite_a])
    with np.errstate(over="ignore"):
        below = np.nextafter(xa, -np.inf)
    assert np.all(cell(below)[finite_a] < lo[finite_a])
    finite_b = np.isfinite(xb)
    assert np.all(cell(xb)[finite_b] > hi[finite_b])
    assert np.all(cell(np.nextafter(xb, -np.inf))[finite_b] <= hi[finite_b])
    inf_pitch = np.isinf(est.widths_)
    assert np.all(xa[inf_pitch] == -np.inf) or np.all(xa[inf_pitch] <= -np.finfo(float).max)
    assert np.all(xb[inf_pitch] == np.inf)  # infinite pitch: every x is in the box
