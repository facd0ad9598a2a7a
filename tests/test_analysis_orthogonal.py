"""Tests of the orthogonal / structured / QMC analysis checks (analysis/checks/orf_*, sorf_*,
qmc_*) and of the exact ORF theory (analysis/orf_theory.py).

Each check is run on a small grid with ``global_random_seed`` and must pass with the correct map
(the check's own family false-alarm rate ALPHA <= 1e-5 per seed) and FAIL on a deliberately
broken map (negative control, swapped in with monkeypatch).  The broken maps are chosen far from
the claim (e.g. iid rows: variance ratio 1 where the exact ratio is 0.16), so their rejection has
power ~1 for every seed 0-99.
"""

import numpy as np
import pytest
from scipy import integrate, special

pytest.importorskip("matplotlib")
randfeat = pytest.importorskip("randfeat")

from analysis import orf_theory  # noqa: E402
from analysis.checks import load  # noqa: E402

# ---------------------------------------------------------------- exact theory (deterministic)

@pytest.mark.parametrize("d", [2, 3, 8])
def test_chi_cf_matches_direct_integral(d):
    """phi_d(t) = E cos(t chi_d) against adaptive quadrature of the chi_d density."""
    def integrand(r, t):
        return np.cos(t * r) * r ** (d - 1) * np.exp(-r * r / 2) / (
            2 ** (d / 2 - 1) * special.gamma(d / 2))

    for t in (0.3, 1.0, 2.5):
        ref = integrate.quad(integrand, 0, 40, args=(t,), limit=400)[0]
        assert orf_theory.chi_cf(np.array(t), d) == pytest.approx(ref, abs=1e-10)


def test_orf_theory_reproduces_theory_pilot_and_limits():
    """THEORY P14 pilot at z = 1, D = d: 0.156 (d = 16) and 0.098 (d = 64); D = 1 gives the
    iid ratio 1; eq. (3) approaches the exact curve as d grows."""
    assert orf_theory.orf_var_ratio(1.0, 16, 16) == pytest.approx(0.156, abs=0.003)
    assert orf_theory.orf_var_ratio(1.0, 64, 64) == pytest.approx(0.098, abs=0.002)
    assert orf_theory.orf_var_ratio(1.0, 16, 1) == pytest.approx(1.0)
    gaps = [abs(orf_theory.orf_var_ratio(1.0, d, d) - orf_theory.eq3_ratio(1.0, d, d))
            for d in (4, 16, 64)]
    assert gaps[0] > gaps[1] > gaps[2]


def test_orf_cov_against_monte_carlo():
    """C_d(z) against a large direct simulation of two rows of one Haar block (d = 3, z = 1.2).
    2e5 blocks; the tolerance is 6 standard errors (false alarm ~2e-9)."""
    rng = np.random.default_rng(7)
    d, z, n = 3, 1.2, 200_000
    G = rng.standard_normal((n, d, d))
    Q, R = np.linalg.qr(G)
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
    r = np.sqrt(rng.chisquare(d, size=(n, 2)))
    u = np.ones(d) / np.sqrt(d)
    a = Q[:, 0, :] @ u * r[:, 0] * z
    b = Q[:, 1, :] @ u * r[:, 1] * z
    prod = np.cos(a) * np.cos(b)
    mc = prod.mean() - np.exp(-z * z)
    se = prod.std() / np.sqrt(n)
    assert abs(mc - orf_theory.orf_cov(z, d)) < 6 * se


# ---------------------------------------------------------------- orf_variance

ORF_GRID = dict(ds=[4, 16], ms=[1, 2], zs=[1.0], R=400)


def _orf_variance_with(monkeypatch, sampling):
    mod = load("orf_variance")
    if sampling != "orthogonal":
        def broken(d, sigma=1.0):
            def make(n_components, random_state):
                return randfeat.RandomFourierFeatures(n_components, sigma=sigma,
                                                      sampling=sampling,
                                                      random_state=random_state, n_threads=1)
            return make
        monkeypatch.setattr(mod, "make_map", broken)
    return mod


def test_orf_variance_passes(global_random_seed, monkeypatch):
    mod = _orf_variance_with(monkeypatch, "orthogonal")
    v = mod.verdict(mod.run(ORF_GRID, global_random_seed))
    assert v["verdict"] == "pass", v["summary"]


@pytest.mark.parametrize("sampling", ["iid", "orthogonal_unit"])
def test_orf_variance_rejects_broken_map(sampling, global_random_seed, monkeypatch):
    """iid rows (ratio 1 instead of 0.41 / 0.16) and ORF' (fixed radii sqrt(d): a different
    variance) must FAIL."""
    mod = _orf_variance_with(monkeypatch, sampling)
    v = mod.verdict(mod.run(ORF_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]


# ---------------------------------------------------------------- orf_unbiasedness

UNB_GRID = dict(ds=[3, 8], zs=[1.0, 2.0], R=1500)


def test_orf_unbiasedness_passes(global_random_seed):
    mod = load("orf_unbiasedness")
    v = mod.verdict(mod.run(UNB_GRID, global_random_seed))
    assert v["verdict"] == "pass", v["summary"]


def test_orf_unbiasedness_rejects_biased_columns_map(global_random_seed, monkeypatch):
    """The map under test replaced by the `diag(s) @ Q`-columns construction (bias 0.03-0.13
    at z = 1-2, 9-20 standard errors at this R) must FAIL."""
    mod = load("orf_unbiasedness")
    real = mod.make_map
    monkeypatch.setattr(mod, "make_map", lambda sampling, sigma=1.0: (
        mod.make_control(sigma) if sampling == "orthogonal" else real(sampling, sigma)))
    v = mod.verdict(mod.run(UNB_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any(f.startswith("ORF d=") for f in v["statistic"]["failed"])


def test_orf_unbiasedness_rejects_wrong_bandwidth(global_random_seed, monkeypatch):
    """ORF with sigma off by sqrt(2) (the classic bandwidth bug) must FAIL."""
    mod = load("orf_unbiasedness")
    real = mod.make_map
    monkeypatch.setattr(mod, "make_map", lambda sampling, sigma=1.0: real(sampling, sigma * 2**0.5))
    v = mod.verdict(mod.run(UNB_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]


def test_orf_unbiasedness_vacuous_without_power(monkeypatch):
    """If the control were the correct map, the check must say it has no power (vacuous)."""
    mod = load("orf_unbiasedness")
    monkeypatch.setattr(mod, "make_control", lambda sigma=1.0: mod.make_map("orthogonal", sigma))
    v = mod.verdict(mod.run(dict(ds=[3], zs=[1.0, 2.0], R=300), 0))
    assert v["verdict"] == "vacuous", v["summary"]


# ---------------------------------------------------------------- sorf

SORF_GRID = dict(law_ds=[4], law_zs=[0.5, 1.0, 2.0], adv_zs=[1.0], law_R=4000, ds=[16, 64],
                 zs=[0.1, 0.25, 0.5, 1.0], R=1500)


def test_sorf_check_passes(global_random_seed):
    mod = load("sorf")
    v = mod.verdict(mod.run(SORF_GRID, global_random_seed))
    assert v["verdict"] == "pass", v["summary"]
    assert 0 < v["tightness"] < 0.2


def test_sorf_check_rejects_missing_normalisation(global_random_seed, monkeypatch):
    """Rows of length d/sigma instead of sqrt(d)/sigma (one Hadamard left unnormalised): the
    exact law's mean fails (by hundreds of standard errors)."""
    mod = load("sorf")
    real = mod.make_map
    monkeypatch.setattr(mod, "make_map", lambda d, sigma=1.0, features="paired": real(
        d, sigma / d ** 0.5, features))
    v = mod.verdict(mod.run(SORF_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any(f.startswith("mean d=4") for f in v["statistic"]["failed"])


def test_sorf_check_rejects_map_without_variance_reduction(global_random_seed, monkeypatch):
    """iid RFF in place of SORF: unbiased (Thm 3 holds) but variance ratio 1, not < 1 (and
    not the exact SORF law either)."""
    mod = load("sorf")

    def iid(d, sigma=1.0, features="paired"):
        return lambda n, rs: randfeat.RandomFourierFeatures(n, sigma=sigma, features=features,
                                                            random_state=rs, n_threads=1)
    monkeypatch.setattr(mod, "make_map", iid)
    v = mod.verdict(mod.run(SORF_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any(f.startswith("variance reduction") for f in v["statistic"]["failed"])
    assert any(f.startswith("variance d=4") for f in v["statistic"]["failed"])


# ---------------------------------------------------------------- qmc_gram

QMC_GRID = dict(ds=[2], Ds=[32, 128, 512, 2048], D_test=128, n=32, R=20)


def test_qmc_gram_passes(global_random_seed):
    """Measured margin: max p <= 1e-9 against the level 1.3e-6 (seeds 0-7)."""
    mod = load("qmc_gram")
    v = mod.verdict(mod.run(QMC_GRID, global_random_seed))
    assert v["verdict"] == "pass", v["summary"]


def test_qmc_gram_rejects_iid_in_disguise(global_random_seed, monkeypatch):
    """QMC samplings silently falling back to iid frequencies must FAIL."""
    mod = load("qmc_gram")
    real = mod.make_map
    monkeypatch.setattr(mod, "make_map", lambda s, sigma: real("iid", sigma))
    v = mod.verdict(mod.run(QMC_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]


def test_qmc_gram_rejects_wrong_inverse_cdf_scale(global_random_seed, monkeypatch):
    """QMC frequencies sqrt(2) too small (the bandwidth bug): an error floor above iid's error."""
    mod = load("qmc_gram")
    real = mod.make_map
    monkeypatch.setattr(mod, "make_map", lambda s, sigma: real(
        s, sigma if s == "iid" else sigma * 2 ** 0.5))
    v = mod.verdict(mod.run(QMC_GRID, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]


# ---------------------------------------------------------------- qmc_gram's exact spectral laws

@pytest.mark.parametrize("kernel", [dict(kernel="gaussian"), dict(kernel="laplacian"),
                                    dict(kernel="cauchy"), dict(kernel="matern", nu=0.5),
                                    dict(kernel="matern", nu=1.5), dict(kernel="matern", nu=2.5),
                                    dict(kernel="ballsum", t=1, dim=3)])
def test_qmc_law_statistics_reproduce_the_kernels(kernel):
    """The laws qmc_gram tests the QMC frequencies against are the kernels' spectral laws:
    frequencies drawn from them by scipy (a radius from the radial law times a uniform
    direction; for the product kernels and the Gaussian, independent coordinates from the
    folded law with random signs) reproduce analysis.truth's kernel, E cos(w' Delta) =
    k(Delta), within 6 standard errors (4e5 draws, seeded; false alarm ~2e-9 per comparison).
    Matern's coordinates are t_{2 nu} marginally but share their chi-square (multivariate t),
    the ball's are dependent too: their folded law is checked on the radial draws by a
    Kolmogorov-Smirnov test instead."""
    from analysis import maps

    mod = load("qmc_gram")
    d, n = 3, 400_000
    rng = np.random.default_rng(11)
    laws = mod.law_statistics(kernel, d)
    deltas = np.array([[0.3, -0.2, 0.5], [1.0, 0.4, -0.7], [0.0, 2.0, 0.1]])
    k = maps.true_k(dict(family="rff", sigma=1.0, **kernel), deltas)
    from scipy import stats as st

    radial_W = None
    for name, (_stat, law, _a) in laws.items():
        T = law.ppf(rng.random(n if name.startswith("radial") else n * d))
        if name.startswith("radial"):
            u = rng.standard_normal((n, d))
            W = u / np.linalg.norm(u, axis=1, keepdims=True) * np.sqrt(T)[:, None]
            radial_W = W
        elif kernel["kernel"] in ("matern", "ballsum"):
            assert st.kstest(np.abs(radial_W[:20000, 0]), law.cdf).pvalue > 1e-6
            continue
        else:
            W = (T * rng.choice([-1.0, 1.0], size=T.size)).reshape(n, d)
        c = np.cos(W @ deltas.T)
        se = c.std(axis=0) / np.sqrt(n)
        assert np.all(np.abs(c.mean(axis=0) - k) < 6 * se), (name, c.mean(axis=0), k)
