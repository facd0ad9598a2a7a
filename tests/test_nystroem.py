"""Nystroem: the exact formula, weight invariance, the landmark laws (uniform: every subset;
leverage: successive sampling), leverage sampling's gain, the sigma/gamma rule, precomputed
kernels, conventions."""

import itertools
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chi2 as chi2_law
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import laplacian_kernel, pairwise_kernels, rbf_kernel

from randfeat import Nystroem
from randfeat.kernels import CauchyKernel, GaussianKernel, MaternKernel
from randfeat.nystroem import successive_sampling


def _X(n=60, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _formula(K, idx):
    """K_nS K_SS^+ K_Sn from the full kernel matrix (numpy's pinv, independent of the map)."""
    return K[:, idx] @ np.linalg.pinv(K[np.ix_(idx, idx)], rcond=1e-10, hermitian=True) \
        @ K[idx, :]


@pytest.mark.parametrize("kernel, kw, ref", [
    ("rbf", dict(sigma=1.5), lambda X: rbf_kernel(X, gamma=1 / (2 * 1.5**2))),
    ("rbf", dict(gamma=0.3), lambda X: rbf_kernel(X, gamma=0.3)),
    ("laplacian", dict(gamma=0.4), lambda X: laplacian_kernel(X, gamma=0.4)),
    (CauchyKernel(2.0), {}, lambda X: CauchyKernel(2.0)(X)),
    ("matern", dict(sigma=1.2, kernel_params={"nu": 2.5}),
     lambda X: MaternKernel(1.2, nu=2.5)(X)),
    ("polynomial", dict(degree=3, coef0=1.0, gamma=0.2),
     lambda X: pairwise_kernels(X, metric="polynomial", degree=3, coef0=1.0, gamma=0.2)),
    ("cosine", {}, lambda X: pairwise_kernels(X, metric="cosine")),
])
def test_exact_formula(kernel, kw, ref):
    X = _X()
    ny = Nystroem(12, kernel=kernel, random_state=3, **kw).fit(X)
    Z = ny.transform(X)
    K = ref(X)
    np.testing.assert_allclose(Z @ Z.T, _formula(K, ny.component_indices_), atol=1e-8)
    np.testing.assert_array_equal(ny.components_, X[ny.component_indices_])
    # K - ZZ' is positive semi-definite
    assert np.linalg.eigvalsh(K - Z @ Z.T).min() > -1e-8


def test_weights_do_not_change_the_map():
    """K S W (W S'K S W)^+ W S'K does not depend on the positive diagonal W (the range of
    K^{1/2} S W is that of K^{1/2} S), nor on repeated landmarks: the law the leverage
    sampling relies on."""
    X = _X(30)
    K = rbf_kernel(X, gamma=0.3)
    idx = np.array([3, 7, 11, 20, 25])
    base = _formula(K, idx)
    rng = np.random.default_rng(0)
    S = np.zeros((30, 5))
    S[idx, np.arange(5)] = 1
    for _ in range(5):
        W = np.diag(rng.uniform(0.1, 10, 5))
        C = K @ S @ W
        np.testing.assert_allclose(C @ np.linalg.pinv(W @ S.T @ K @ S @ W) @ C.T, base,
                                   atol=1e-8)
    dup = np.concatenate([idx, idx[:2]])
    np.testing.assert_allclose(_formula(K, dup), base, atol=1e-8)


def test_uniform_landmarks_are_a_uniform_subset(global_random_seed):
    """n = 6, m = 2: the 15 subsets are equally likely (chi-square over R = 2000 fits, level
    1e-6), and the mean error ||K - ZZ'||_F^2 is the average over the 15 subsets
    (z-test, |z| < 5)."""
    X = _X(6, 2, seed=1)
    K = rbf_kernel(X, gamma=0.5)
    subsets = list(itertools.combinations(range(6), 2))
    errs = {s: np.sum((K - _formula(K, list(s))) ** 2) for s in subsets}
    R = 2000
    seeds = np.random.SeedSequence([global_random_seed, 6]).spawn(R)
    counts = dict.fromkeys(subsets, 0)
    e = np.empty(R)
    for r, s in enumerate(seeds):
        ny = Nystroem(2, sigma=1.0, random_state=s).fit(X)
        key = tuple(sorted(ny.component_indices_.tolist()))
        counts[key] += 1
        Z = ny.transform(X)
        e[r] = np.sum((K - Z @ Z.T) ** 2)
    obs = np.array(list(counts.values()))
    stat = np.sum((obs - R / 15) ** 2 / (R / 15))
    assert chi2_law.sf(stat, 14) > 1e-6, stat
    vals = np.array(list(errs.values()))
    z = (e.mean() - vals.mean()) / math.sqrt(vals.var() / R)
    assert abs(z) < 5, z


def _successive_inclusion(w, m):
    """Exact inclusion probabilities of successive sampling, by enumerating ordered draws."""
    n = len(w)
    pi = np.zeros(n)
    for seq in itertools.permutations(range(n), m):
        p, left = 1.0, w.sum()
        for i in seq:
            p *= w[i] / left
            left -= w[i]
        pi[list(seq)] += p
    return pi


def test_successive_sampling_law(global_random_seed):
    """The Gumbel-top-m rule has the law of successive sampling: inclusion frequencies over
    R = 20000 draws match the enumerated probabilities (chi-square-type z per index, |z| < 5)."""
    w = np.array([0.05, 0.4, 0.1, 0.9, 0.2, 0.02, 0.6])
    m, R = 3, 20000
    pi = _successive_inclusion(w, m)
    rng = np.random.default_rng(global_random_seed)
    hits = np.zeros(len(w))
    for _ in range(R):
        hits[successive_sampling(w, m, rng)] += 1
    z = (hits / R - pi) / np.sqrt(pi * (1 - pi) / R)
    assert np.abs(z).max() < 5, z
    # zero weights come last, uniformly
    out = successive_sampling(np.array([0.0, 1.0, 0.0, 2.0]), 3, np.random.default_rng(0))
    assert set(out[:2].tolist()) == {1, 3} and out[2] in (0, 2)


def test_leverage_sampling_finds_a_small_far_cluster():
    """500 points near 0 and 5 points far away (sigma = 1, m = 20): uniform landmarks miss the
    far cluster with probability (1 - 5/505)^20 = 0.82 and leave its block of K unexplained;
    the far points' ridge leverage scores (lambda = 1e-3) sum to 2.6 of d_eff = 19.5, so
    leverage sampling takes one of them with probability ~0.9.  Over the fixed seeds 0-19
    (deterministic): the far cluster is among the landmarks in >= 15 fits (uniform: 4, about
    the expected 3.6) and the mean trace error tr(K - ZZ') is >= 3 times smaller (measured:
    0.55 against 4.04)."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(500, 2)) * 0.3, rng.normal(size=(5, 2)) * 0.1 + 20])
    far = np.arange(500, 505)
    K = rbf_kernel(X, gamma=0.5)
    err = {"uniform": [], "leverage": []}
    hits = dict.fromkeys(err, 0)
    for seed in range(20):
        for sampling in err:
            ny = Nystroem(20, sigma=1.0, sampling=sampling, ridge=1e-3,
                          random_state=seed).fit(X)
            Z = ny.transform(X)
            err[sampling].append(np.trace(K - Z @ Z.T))
            hits[sampling] += bool(np.isin(ny.component_indices_, far).any())
            if sampling == "leverage":
                assert ny.ridge_ == 1e-3
                assert ny.leverage_scores_[far].sum() > 1.0
    assert hits["leverage"] >= 15 and hits["uniform"] <= 8, hits
    assert np.mean(err["leverage"]) * 3 < np.mean(err["uniform"]), err


def test_leverage_auto_ridge_and_scores_close_to_exact():
    """With ridge="auto" the recursion picks lambda itself (ridge_), and the estimated scores
    are within a factor of the exact ridge leverage scores at that lambda for most rows."""
    X = _X(400, 3, seed=2)
    ny = Nystroem(40, sigma=1.0, sampling="leverage", random_state=0).fit(X)
    lam = ny.ridge_
    assert lam > 0
    K = rbf_kernel(X, gamma=0.5)
    exact = np.diag(K @ np.linalg.inv(K + lam * np.eye(400)))
    ratio = ny.leverage_scores_ / np.minimum(1, exact)
    assert np.mean((ratio > 1 / 3) & (ratio < 3)) > 0.9, np.quantile(ratio, [0.05, 0.5, 0.95])
    assert len(set(ny.component_indices_.tolist())) == 40


def test_sigma_gamma_rule():
    X = _X()
    a = Nystroem(10, kernel="rbf", gamma=0.2, random_state=0).fit(X)
    b = Nystroem(10, kernel="gaussian", sigma=1 / math.sqrt(0.4), random_state=0).fit(X)
    assert a.kernel_ == b.kernel_ == GaussianKernel(1 / math.sqrt(0.4))
    np.testing.assert_allclose(a.transform(X), b.transform(X), atol=1e-12)
    c = Nystroem(10, kernel="laplacian", gamma=0.5, random_state=0).fit(X)
    assert c.sigma_ == 2.0
    assert Nystroem(10, random_state=0).fit(X).sigma_ == 1.0          # not sklearn's 1/d
    with pytest.raises(ValueError, match="either sigma .* or gamma"):
        Nystroem(10, sigma=1.0, gamma=0.5).fit(X)
    with pytest.raises(ValueError, match="gamma is accepted for kernel='rbf'"):
        Nystroem(10, kernel="cauchy", gamma=0.5).fit(X)
    with pytest.raises(ValueError, match="length scale of shift-invariant"):
        Nystroem(10, kernel="polynomial", sigma=1.0).fit(X)
    with pytest.raises(ValueError, match="takes no coef0 or degree"):
        Nystroem(10, kernel="rbf", degree=2).fit(X)
    with pytest.raises(ValueError, match="takes no degree"):
        Nystroem(10, kernel="sigmoid", degree=2).fit(X)
    with pytest.raises(ValueError, match="was given together with the kernel instance"):
        Nystroem(10, kernel=GaussianKernel(2.0), sigma=1.0).fit(X)
    med = Nystroem(10, sigma="median", random_state=0).fit(X)
    from scipy.spatial.distance import pdist
    assert med.sigma_ == pytest.approx(np.median(pdist(X)))
    # the Laplacian's median is an L1 distance (its exponent), as in every randfeat map
    lap = Nystroem(10, kernel="laplacian", sigma="median", random_state=0).fit(X)
    assert lap.sigma_ == pytest.approx(np.median(pdist(X, "cityblock")))
    from randfeat import RandomFourierFeatures
    assert lap.sigma_ == RandomFourierFeatures(8, kernel="laplacian", sigma="median").fit(X).sigma_


def test_precomputed_matches_the_kernel_on_data():
    X = _X(50)
    Xnew = _X(7, seed=9)
    ny = Nystroem(10, sigma=1.3, random_state=4).fit(X)
    g = 1 / (2 * 1.3**2)
    pre = Nystroem(10, kernel="precomputed", random_state=4).fit(rbf_kernel(X, gamma=g))
    np.testing.assert_array_equal(pre.component_indices_, ny.component_indices_)
    np.testing.assert_allclose(pre.transform(rbf_kernel(Xnew, X, gamma=g)), ny.transform(Xnew),
                               atol=1e-10)
    with pytest.raises(ValueError, match="square training kernel matrix"):
        Nystroem(10, kernel="precomputed").fit(X)
    with pytest.raises(ValueError, match="50 features"):
        pre.transform(rbf_kernel(Xnew, X[:40], gamma=g))


def test_conventions(global_dtype):
    X = _X(1300, 5).astype(global_dtype)
    ny = Nystroem(30, sigma=2.0, random_state=0, n_threads=1).fit(X)
    Z = ny.transform(X)
    assert Z.dtype == global_dtype and ny.normalization_.dtype == global_dtype
    for nt in (2, 3, None):
        np.testing.assert_array_equal(ny.set_params(n_threads=nt).transform(X), Z)
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.5] = 0
    tol = 1e-4 if global_dtype == np.float32 else 1e-10
    for kern in ("rbf", "laplacian", "polynomial", "chi2"):
        data = np.abs(Xs) if kern == "chi2" else Xs
        est = Nystroem(15, kernel=kern, random_state=0).fit(sp.csr_matrix(data))
        np.testing.assert_allclose(est.transform(sp.csr_matrix(data)), est.transform(data),
                                   rtol=tol, atol=tol)
    ny2 = pickle.loads(pickle.dumps(ny))
    for k in ("components_", "normalization_", "component_indices_"):
        assert not getattr(ny2, k).flags.writeable
    np.testing.assert_array_equal(ny2.transform(X), Z)
    ny.set_params(sigma=3.0)
    with pytest.raises(NotFittedError, match="parameters changed"):
        ny.transform(X)
    with pytest.warns(UserWarning, match="n_components > n_samples"):
        assert Nystroem(10).fit(X[:4]).transform(X[:4]).shape == (4, 4)
    bad = np.array(X[:5])
    bad[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        Nystroem(3).fit(X[:10]).transform(bad)


def test_leverage_with_a_callable_kernel():
    """The diagonal of a Python kernel is evaluated once per row (not on blocks of pairs), and
    the map is the exact formula for its landmarks."""
    X = np.random.default_rng(0).random((300, 3))
    calls = []

    def k(x, y):
        calls.append(1)
        return float(np.minimum(x, y).sum())

    ny = Nystroem(10, kernel=k, sampling="leverage", random_state=0).fit(X)
    assert len(calls) < 300 * 40          # recursion's blocks and the diagonal: O(n m)
    K = pairwise_kernels(X[:40], X, metric=k)
    Kfull = pairwise_kernels(X, metric=k)
    Z = ny.transform(X[:40])
    idx = ny.component_indices_
    ref = K[:, idx] @ np.linalg.pinv(Kfull[np.ix_(idx, idx)], hermitian=True) @ K[:, idx].T
    np.testing.assert_allclose(Z @ Z.T, ref, atol=1e-8)


def test_float32_keeps_the_float64_spectrum():
    """float32 data: K_SS and its pseudo-inverse are computed in float64 (then cast), so Z Z' is
    float64's within float32 rounding.  A cut of K_SS's spectrum at float32's roundoff
    (m eps_32 lambda_max) dropped real directions: Z Z' was off by 0.054 at this design
    (scikit-learn's float32 Nystroem: 1.6e-5 from its float64)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 10))
    a = Nystroem(500, sigma=3.0, random_state=0).fit(X)
    b = Nystroem(500, sigma=3.0, random_state=0).fit(X.astype(np.float32))
    np.testing.assert_array_equal(a.component_indices_, b.component_indices_)
    Za = a.transform(X[:300])
    Zb = b.transform(X[:300].astype(np.float32)).astype(np.float64)
    assert np.abs(Za @ Za.T - Zb @ Zb.T).max() < 1e-4
