"""Mutants: each class of bug is injected through a small explicit seam (a monkeypatched fit,
scaling, formula or seed function of ``analysis``; no source file is edited) and the named check
must FAIL on it, while the same design passes on the correct library (the control).

Seams
-----
``randfeat.Fastfood.fit``             wrapped: the fitted signs B, permutation Pi or G mutated
``analysis.maps.build``               bandwidth off by a factor
``analysis.bounds.var_*``             a variance formula off by a factor
``analysis.montecarlo.random_state_of``  seeds reused / squeezed

Each mutant's detection probability is ~1 at the designs below (effects of 1.9x-16x in variance
against a detectable 1.6x; see the check's ``power``), so the tests hold for every seed 0-99;
the controls' false-alarm rate is the check's ALPHA (1e-5).  Runtime: a few seconds each.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis import bounds, maps
from analysis import montecarlo as mc
from analysis.checks import fastfood_variance, unbiasedness, variance

# ---------------------------------------------------------------- Fastfood structure mutants


def _no_B(est):
    est.B_packed_ = np.zeros_like(est.B_packed_)          # every sign +1


def _no_Pi(est):
    est.P_ = np.tile(np.arange(est.d_padded_, dtype=est.P_.dtype), (est.n_blocks_, 1))


def _shared_G(est):
    """Every block uses block 0's G; S_ = s / ||G_0|| as fit would compute it from the shared G
    (the library's row lengths s_i unchanged; the paper's V' rows all get length ||G_0||)."""
    d = est.d_padded_
    G, S = est.G_.copy(), est.S_.copy()
    nrm = np.linalg.norm(G, axis=1)
    for b in range(1, est.n_blocks_):
        if est.scaling != "none":      # Fastfood(scaling="none") is the paper's V' (S = 1)
            S[b * d:(b + 1) * d] *= nrm[b] / nrm[0]
        G[b] = G[0]
    est.G_, est.S_ = G, S


FASTFOOD_MUTANTS = {"without B": _no_B, "without Pi": _no_Pi, "one G for all blocks": _shared_G}

#: a small design of the check (d = 16, one and four blocks, random and adversarial inputs)
FF_PARAMS = dict(d=16, radii=[0.5, 1.0], adv_radii=[3.0], blocks=[1, 4], R=400, rff=False,
                 law_draws=4000)


def _patch_fit(monkeypatch, mutate):
    """The bug sits in Fastfood.fit (the paper's V' is Fastfood(scaling="none"))."""
    import randfeat

    real_fit = randfeat.Fastfood.fit

    def fit(self, X, y=None):
        real_fit(self, X, y)
        mutate(self)
        return self

    monkeypatch.setattr(randfeat.Fastfood, "fit", fit)


def test_fastfood_variance_control_passes(global_random_seed):
    res = fastfood_variance.run(FF_PARAMS, global_random_seed)
    v = fastfood_variance.verdict(res)
    assert v["verdict"] == "pass", v["summary"]


@pytest.mark.parametrize("mutant", list(FASTFOOD_MUTANTS))
def test_fastfood_variance_fails_on_structure_mutant(monkeypatch, global_random_seed, mutant):
    _patch_fit(monkeypatch, FASTFOOD_MUTANTS[mutant])
    res = fastfood_variance.run(FF_PARAMS, global_random_seed)
    v = fastfood_variance.verdict(res)
    assert v["verdict"] == "fail", (mutant, v["summary"])
    assert v["statistic"]["law_failed"], mutant


def test_structure_mutants_are_invisible_to_random_directions(monkeypatch):
    """Why the adversarial inputs exist: on random directions alone, without Pi the check has
    nothing to see (the exact law changes by < 3 % there)."""
    from analysis import fastfood_law

    geo = np.random.default_rng(5)
    U = geo.standard_normal((4, 16))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    with_pi, _ = fastfood_law.block_variance(U, n_draws=4000, random_state=1)
    no_pi, _ = fastfood_law.block_variance(U, n_draws=4000, random_state=1, permute=False)
    assert np.all(np.abs(no_pi / with_pi - 1) < 0.03)
    s = fastfood_law.adversarial_directions(16)["2-sparse (e_0 + e_1)"] * 3.0
    w, _ = fastfood_law.block_variance(s[None], n_draws=4000, random_state=1)
    n, _ = fastfood_law.block_variance(s[None], n_draws=4000, random_state=1, permute=False)
    assert n[0] / w[0] > 1.8


# ---------------------------------------------------------------- Monte Carlo mutants


def test_reused_seeds_are_an_error(monkeypatch):
    """Replicates that reuse each seed twice: the Monte Carlo layer refuses the run."""
    real = mc.seed_sequences

    def twice(seed, *names, n):
        ss = real(seed, *names, n=(n + 1) // 2)
        return [s for s in ss for _ in range(2)][:n]

    monkeypatch.setattr(mc, "seed_sequences", twice)
    params = dict(unbiasedness.PARAMS["smoke"], R=40)
    with pytest.raises(mc.DegenerateRunError, match="repeat"):
        unbiasedness.run(params, 0)


def test_identical_replicates_are_an_error(monkeypatch):
    """Every replicate seeded alike (a seed function that drops the spawn key): zero variance
    across replicates is an error, not a pass (refused where the random states are made,
    ``montecarlo.random_states``, before any replicate runs)."""
    monkeypatch.setattr(mc, "random_state_of", lambda ss: np.random.SeedSequence(ss.entropy))
    params = dict(unbiasedness.PARAMS["smoke"], R=40)
    with pytest.raises(mc.DegenerateRunError, match="identical|random state of an earlier one"):
        unbiasedness.run(params, 0)


@pytest.mark.parametrize("check", ["fastfood_variance", "variance"])
def test_checks_that_catch_errors_fail_on_identical_replicates(monkeypatch, check):
    """fastfood_variance and variance run parts inside try/except (a part that cannot run is
    reported, not fatal); an identical-replicates run (every fit seeded alike) is then recorded
    in result["errors"] and the verdict is "fail", never "pass" (ANALYSIS_CONTRACT item 3)."""
    import importlib

    mod = importlib.import_module(f"analysis.checks.{check}")
    params = dict(mod.PARAMS["smoke"])
    if check == "variance":
        params.update(maps=[])
    monkeypatch.setattr(mc, "random_state_of", lambda ss: np.random.SeedSequence(ss.entropy))
    res = mod.run(params, 0)
    joined = " ".join(res["errors"])
    assert res["errors"] and ("identical" in joined or "random state of an earlier" in joined)
    assert mod.verdict(res)["verdict"] == "fail"


# ---------------------------------------------------------------- scaling and formula mutants


def test_unbiasedness_fails_on_2_percent_bandwidth_error(monkeypatch, global_random_seed):
    """sigma -> 1.02 sigma in the estimator (analysis.maps.build seam): the pooled design of the
    quick parameters detects it (power statement: 1.2 % at probability 0.9; at 2 % the miss
    probability is < 1e-6)."""
    real_build = maps.build

    def build(spec, size, rs, n_threads=1):
        return real_build(dict(spec, sigma=spec.get("sigma", 1.0) * 1.02), size, rs, n_threads)

    params = dict(unbiasedness.PARAMS["quick"],
                  maps=[dict(family="rff", kernel="gaussian", features="paired")], R=50)
    res = unbiasedness.run(params, global_random_seed)
    assert unbiasedness.verdict(res)["verdict"] == "pass"           # control
    monkeypatch.setattr(maps, "build", build)
    res = unbiasedness.run(params, global_random_seed)
    v = unbiasedness.verdict(res)
    assert v["verdict"] == "fail", v["summary"]


@pytest.mark.parametrize("formula,spec,R", [
    ("var_binning", dict(family="binning", kernel="laplacian"), 200),
    ("var_rff_paired", dict(family="rff", kernel="gaussian", features="paired"), 50)])
def test_variance_fails_on_10_percent_formula_error(monkeypatch, global_random_seed, formula,
                                                    spec, R):
    """A variance formula 10 % too high (analysis.bounds seam; e.g. binning's k(1 - k) -> 1.1
    k(1 - k)): the variance check fails (pooled design: 4.6 % detectable at probability 0.9).
    R is the number of one-fit replicates of the unpooled comparisons: with R = 50 the binning
    control failed at seed 79 (sample kurtosis of 50 discrete estimates far below the truth,
    so the scaled chi-square law's nu was several times too large); R = 200 passes at seeds
    0-99."""
    params = dict(variance.PARAMS["quick"], maps=[spec], cauchy1d=False, R=R, ff_R=50)
    res = variance.run(params, global_random_seed)
    assert variance.verdict(res)["verdict"] == "pass"               # control
    real = getattr(bounds, formula)
    monkeypatch.setattr(bounds, formula, lambda *a: 1.1 * real(*a))
    res = variance.run(params, global_random_seed)
    v = variance.verdict(res)
    assert v["verdict"] == "fail", v["summary"]


def test_fastfood_concentration_sees_but_cannot_flag_missing_B(monkeypatch):
    """A documented hole: Theorem 6's threshold is ~10x the observed quantiles, so Fastfood
    without B passes fastfood_concentration; its adversarial inputs do see the bug (the largest
    quantile / threshold ratio more than doubles, from Hadamard-row inputs), and
    fastfood_variance fails it (above).  Deterministic seed: this documents magnitudes."""
    from analysis.checks import fastfood_concentration as fc

    params = dict(fc.PARAMS["quick"], dims=[64], R=300)
    ctrl = fc.verdict(fc.run(params, 0))
    _patch_fit(monkeypatch, _no_B)
    mut = fc.verdict(fc.run(params, 0))
    assert ctrl["verdict"] == mut["verdict"] == "pass"
    s0, s1 = ctrl["statistic"], mut["statistic"]
    assert s1["max_quantile_over_threshold"] > 2 * s0["max_quantile_over_threshold"]


# ---------------------------------------------------------------- binning pitch-law mutants


def _pitch_sampler_class():
    """The class whose ``sample_pitch`` every binning kernel inherits (found, not named: the
    kernel classes are moving between randfeat.binning and randfeat.kernels)."""
    import importlib

    for modname in ("randfeat.kernels", "randfeat.binning"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        for obj in vars(mod).values():
            if (isinstance(obj, type) and "sample_pitch" in obj.__dict__
                    and "_unit_sample" in obj.__dict__):
                return obj
    pytest.skip("no binning kernel base class with sample_pitch found")


@pytest.mark.parametrize("mutant,check", [("pitches 10% too large", "lemma1"),
                                          ("pitches 10% too large", "unbiasedness"),
                                          ("Gamma(1) pitches for the Laplacian", "unbiasedness")])
def test_binning_pitch_mutants_fail(monkeypatch, global_random_seed, mutant, check):
    """A wrong pitch law in the sampler (seam: the kernels' ``sample_pitch``): the library's own
    pitches fail lemma1's KS test (power: 5.2 % scale at probability 0.9) and the kernel becomes
    biased (unbiasedness, pooled design)."""
    from analysis.checks import lemma1

    cls = _pitch_sampler_class()
    real = cls.sample_pitch
    if mutant.startswith("pitches"):
        def sample_pitch(self, size, rng):
            return 1.1 * real(self, size, rng)
    else:
        def sample_pitch(self, size, rng):
            return rng.exponential(1.0, size) * self.sigma   # Gamma(1) instead of Gamma(2)
    monkeypatch.setattr(cls, "sample_pitch", sample_pitch)
    if check == "lemma1":
        params = dict(lemma1.PARAMS["quick"], kernels=[dict(name="laplacian", sigma=0.7)])
        v = lemma1.verdict(lemma1.run(params, global_random_seed))
    else:
        params = dict(unbiasedness.PARAMS["quick"], maps=[dict(family="binning",
                                                               kernel="laplacian")], R=50)
        v = unbiasedness.verdict(unbiasedness.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]


# ---------------------------------------------------------------- too-tight bound mutants

#: small designs of the bound checks (1-D, certified sups, non-vacuous tail tests)
C1_PARAMS = dict(settings=[dict(d=1, a=1.0)], sizes=[64, 256, 1024], R=300, eps=[0.1, 0.25],
                 tol=0.001, n_candidates=1000)
C2_PARAMS = dict(settings=[dict(d=1, a=1.0)], sizes=[16, 256, 512], R=200, eps=[0.1, 0.25],
                 n_points=100, n_pairs=500)


@pytest.mark.parametrize("check,size_key", [("claim1", "D"), ("claim2", "P")])
def test_bound_check_fails_on_too_tight_bound(monkeypatch, global_random_seed, check, size_key):
    """A bound whose eps is half the true 95% quantile of the sup error (the quantile from an
    independent pilot run of the same design; seam: the check's ``bound_eps``), i.e. a bound 2x
    too tight: the tail tests must fail it.  The check states it detects a bound ~1.1-1.6x too
    tight with probability >= 0.9 (its ``power``); at 2x the exceedance probability is ~0.5
    against a detectable 0.15, so the miss probability is < 1e-9.  The control (the real bound,
    same data) passes at the check's false-alarm rate 1e-5."""
    import importlib

    mod = importlib.import_module(f"analysis.checks.{check}")
    params = C1_PARAMS if check == "claim1" else C2_PARAMS
    res = mod.run(params, global_random_seed)
    v = mod.verdict(res)
    assert v["verdict"] == "pass", v["summary"]                     # control
    pilot = mod.run(params, 10_000 + global_random_seed)
    q95 = {s[size_key]: float(np.quantile(s["upper"], 0.95))
           for s in pilot["settings"][0]["sizes"]}
    monkeypatch.setattr(mod, "bound_eps", lambda delta, size, *a: 0.5 * q95[size])
    v = mod.verdict(res)
    assert v["verdict"] == "fail", v["summary"]
    assert "VIOLATED" in v["summary"]


# ---------------------------------------------------------------- orthogonal / structured / QMC


def _chi_d_minus_1(monkeypatch):
    """ORF row lengths chi_{d-1}/sigma instead of chi_d/sigma (seam: the Gaussian kernel's
    ``sample_radius``, which ORF's radial law calls)."""
    from randfeat.kernels import _spectral

    def sample_radius(self, n, d, rng=None):
        return np.sqrt(rng.chisquare(max(d - 1, 1), n)) / self.sigma

    monkeypatch.setattr(_spectral.GaussianKernel, "sample_radius", sample_radius)


def _iid_rows(monkeypatch, mod):
    """The orthogonal map replaced by iid frequencies (seam: the check's ``make_map``)."""
    import randfeat

    def make_map(*args, sigma=1.0):
        def make(n_components, random_state):
            return randfeat.RandomFourierFeatures(n_components, sigma=sigma, sampling="iid",
                                                  random_state=random_state, n_threads=1)
        return make

    monkeypatch.setattr(mod, "make_map", make_map)


def test_orf_unbiasedness_fails_on_wrong_radial_law(monkeypatch, global_random_seed):
    """chi_{d-1} radii bias ORF by up to ~40 se at d = 2-4 (power statement: a bias of ~0.02
    kernel units at probability 0.9); the control passes at the check's rate 1e-5."""
    from analysis.checks import orf_unbiasedness as ou

    params = dict(ds=[2, 3, 4], zs=[0.5, 1.0, 2.0], R=2000)
    assert ou.verdict(ou.run(params, global_random_seed))["verdict"] == "pass"
    _chi_d_minus_1(monkeypatch)
    v = ou.verdict(ou.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any(f.startswith("ORF d=") for f in v["statistic"]["failed"])


@pytest.mark.parametrize("mutant", ["iid rows", "chi_{d-1} radii"])
def test_orf_variance_fails_on_mutant(monkeypatch, global_random_seed, mutant):
    """iid rows have Var ratio 1 where the exact ORF curve is 0.05-0.9 (up to 20x off);
    chi_{d-1} radii move the ratio by ~50 % at d = 2-4 (detectable: ~25 %)."""
    from analysis.checks import orf_variance as ov

    params = dict(ds=[2, 4, 16], ms=[1], zs=[0.5, 1.0], R=1500)
    assert ov.verdict(ov.run(params, global_random_seed))["verdict"] == "pass"
    if mutant == "iid rows":
        _iid_rows(monkeypatch, ov)
    else:
        _chi_d_minus_1(monkeypatch)
    v = ov.verdict(ov.run(params, global_random_seed))
    assert v["verdict"] == "fail", (mutant, v["summary"])


def test_sorf_fails_on_iid_rows(monkeypatch, global_random_seed):
    """iid rows in place of SORF: no variance reduction (ratio 1 against a detectable
    ~0.9), so the variance comparisons fail."""
    from analysis.checks import sorf

    params = dict(ds=[16, 64], zs=[0.5, 1.0], R=4000)
    assert sorf.verdict(sorf.run(params, global_random_seed))["verdict"] == "pass"
    _iid_rows(monkeypatch, sorf)
    v = sorf.verdict(sorf.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any(f.startswith("variance") for f in v["statistic"]["failed"])


def _sorf_mutant(monkeypatch, mutant):
    """Seam: StructuredOrthogonalFeatures.fit wrapped; the fitted ``sigma_`` (rows of length
    sqrt(d)/sigma_) or sign diagonals ``signs_`` (n_blocks, 3, d) changed after the real fit."""
    import randfeat

    real_fit = randfeat.StructuredOrthogonalFeatures.fit

    def fit(self, X, y=None):
        real_fit(self, X, y)
        if mutant == "frequencies 5% too long":
            self.sigma_ = self.sigma_ / 1.05
            base, scales = self._ard   # what transform reads since the ARD work (issue 31)
            self._ard = (base / 1.05, scales)
        else:
            i = {"without D1": 0, "without D2": 1, "without D3": 2}[mutant]
            s = self.signs_.copy()
            s[:, i, :] = 1
            self.signs_ = s
        return self

    monkeypatch.setattr(randfeat.StructuredOrthogonalFeatures, "fit", fit)


_CONTROL = {}


def _control(check, params, seed):
    """The control run of ``check`` (correct library) at ``seed``, computed once per session."""
    import importlib

    mod = importlib.import_module(f"analysis.checks.{check}")
    key = (check, repr(params), seed)
    if key not in _CONTROL:
        _CONTROL[key] = mod.verdict(mod.run(params, seed))
    return _CONTROL[key]


@pytest.mark.parametrize("mutant", ["frequencies 5% too long", "without D2", "without D1",
                                    "without D3"])
def test_sorf_fails_on_mutant(monkeypatch, global_random_seed, mutant):
    """SORF with frequencies 5 % too long or a sign diagonal dropped: the exact law (mean and
    variance by enumeration, analysis.sorf_law) fails it in quick mode -- Thm 3's bound, which
    is >= 50x the bias, could not (it passed both before this check had the law).  Measured at
    seed 0: mean |z| > 30 for 5 %, > 40 without D2, against the threshold 5.3; the power
    statement resolves a length error of ~0.01 %."""
    from analysis.checks import sorf

    params = sorf.PARAMS["quick"]
    assert _control("sorf", params, global_random_seed)["verdict"] == "pass"
    _sorf_mutant(monkeypatch, mutant)
    v = sorf.verdict(sorf.run(params, global_random_seed))
    assert v["verdict"] == "fail", (mutant, v["summary"])
    assert any(f.startswith(("mean ", "variance d=", "deterministic")) for f in
               v["statistic"]["failed"]), v["statistic"]["failed"]


def test_sorf_sign_diagonals_are_rademacher_too():
    """The unit test that also catches a dropped diagonal (kept: the two are independent)."""
    from test_sorf import _rademacher_p

    import randfeat

    est = randfeat.StructuredOrthogonalFeatures(4096, random_state=0).fit(np.zeros((1, 16)))
    s = est.signs_.copy()
    s[:, 1, :] = 1
    assert min(_rademacher_p(s)) < 1e-6
    assert min(_rademacher_p(est.signs_)) > 1e-6


# ---------------------------------------------------------------- exact laws added with issue 27


def _matern_wrong_dof(monkeypatch, how):
    """QMC Matern radii with the wrong degrees of freedom: the chi-square quantile that
    randfeat's QMC sampler calls (its module's ``stats.chi2.ppf``; seam:
    randfeat._sampling.stats replaced by a namespace) uses df + 1 or df / 2 (nu instead of
    2 nu) instead of 2 nu."""
    import types

    from scipy import stats as st

    import randfeat._sampling as S

    f = (lambda df: df + 1) if how == "2 nu + 1" else (lambda df: df / 2)

    class Chi2:
        @staticmethod
        def ppf(q, df):
            return st.chi2.ppf(q, f(df))

    monkeypatch.setattr(S, "stats", types.SimpleNamespace(chi2=Chi2))


@pytest.mark.parametrize("how", ["2 nu + 1", "nu"])
def test_qmc_gram_fails_on_wrong_matern_degrees_of_freedom(monkeypatch, global_random_seed,
                                                          how):
    """qmc_gram's law part (PIT moments of the radii against d F(d, 2 nu) and the mean of the
    estimate) fails QMC Matern maps whose radii have 2 nu + 1 or nu degrees of freedom; before
    this part the check covered the Gaussian only and passed them."""
    from analysis.checks import qmc_gram as qg

    params = qg.PARAMS["quick"]
    assert _control("qmc_gram", params, global_random_seed)["verdict"] == "pass"
    _matern_wrong_dof(monkeypatch, how)
    v = qg.verdict(qg.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert v["statistic"]["failed"] and all("matern" in f for f in v["statistic"]["failed"])


def test_unbiasedness_fails_on_fastfood_phase_without_sqrt2(monkeypatch, global_random_seed):
    """The Fastfood phase map missing the sqrt(2) of sqrt(2/n) cos(Vx + b) (seam:
    Fastfood.transform wrapped, output / sqrt 2 for features="phase"): its estimate is halved,
    which the quick design of unbiasedness (the Fastfood phase map is in quick mode now) fails.
    The quick parameters restricted to that map (control: the same design passes)."""
    import randfeat

    params = dict(unbiasedness.PARAMS["quick"],
                  maps=[dict(family="fastfood", kernel="gaussian", features="phase")])
    assert _control("unbiasedness", params, global_random_seed)["verdict"] == "pass"
    real = randfeat.Fastfood.transform

    def transform(self, X):
        Z = real(self, X)
        return Z / np.sqrt(2.0) if self.features == "phase" else Z

    monkeypatch.setattr(randfeat.Fastfood, "transform", transform)
    v = unbiasedness.verdict(unbiasedness.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert v["statistic"]["worst_map"] == "fastfood gaussian phase"


def test_orf_variance_fails_on_orf_unit_without_orthogonality(monkeypatch, global_random_seed):
    """ORF' whose rows have the right length sqrt(d)/sigma and uniform directions but are NOT
    orthogonal within a block (seam: RandomFourierFeatures.fit wrapped, frequencies_ replaced
    for sampling="orthogonal_unit"): the mean is unchanged (orf_unbiasedness cannot see it),
    the covariance term of the exact ORF' variance is gone, which orf_variance's ORF' rows
    fail in quick mode."""
    import randfeat
    from analysis.checks import orf_unbiasedness as ou
    from analysis.checks import orf_variance as ov

    params = ov.PARAMS["quick"]
    assert _control("orf_variance", params, global_random_seed)["verdict"] == "pass"
    real = randfeat.RandomFourierFeatures.fit

    def fit(self, X, y=None):
        real(self, X, y)
        if self.sampling == "orthogonal_unit":
            W = np.asarray(self.frequencies_)
            g = np.random.default_rng(self.random_state).standard_normal(W.shape)
            g *= (np.sqrt(W.shape[1]) / self.sigma_) / np.linalg.norm(g, axis=1,
                                                                         keepdims=True)
            self.frequencies_ = g.astype(W.dtype)
        return self

    monkeypatch.setattr(randfeat.RandomFourierFeatures, "fit", fit)
    v = ov.verdict(ov.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert all(f.startswith("ORF'") for f in v["statistic"]["failed"])
    assert ou.verdict(ou.run(dict(ds=[3, 8], zs=[1.0, 2.0], R=1000), global_random_seed))[
        "verdict"] == "pass"


def test_binning_law_fails_on_grids_sharing_pitches(monkeypatch, global_random_seed):
    """Grids in pairs sharing one pitch vector (each grid still has pitch ~ p and a uniform
    shift, so every collision probability -- the mean -- is right; seam:
    RandomBinningFeatures._sample_grids): the collision counts are over-dispersed, which the
    Binomial law test of binning_law fails in quick mode; unbiasedness passes it."""
    import randfeat
    from analysis.checks import binning_law as bl

    params = bl.PARAMS["quick"]
    assert _control("binning_law", params, global_random_seed)["verdict"] == "pass"
    real = randfeat.RandomBinningFeatures._sample_grids

    def sample_grids(self, d):
        kern, widths, shifts, inv, salt, rng = real(self, d)
        w, s = widths.copy(), shifts.copy()
        m = (w.shape[0] // 2) * 2
        s[1:m:2] = shifts[1:m:2] / widths[1:m:2] * widths[0:m:2]
        w[1:m:2] = widths[0:m:2]
        return kern, w, s, 1.0 / w, salt, rng

    monkeypatch.setattr(randfeat.RandomBinningFeatures, "_sample_grids", sample_grids)
    v = bl.verdict(bl.run(params, global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any("Binomial law" in f for f in v["statistic"]["failed"])
    u = dict(unbiasedness.PARAMS["quick"], maps=[dict(family="binning", kernel="laplacian")],
             R=100)
    assert unbiasedness.verdict(unbiasedness.run(u, global_random_seed))["verdict"] == "pass"


MAP_CHECKS = ["unbiasedness", "variance", "hoeffding", "claim1", "claim2", "fastfood_variance",
              "fastfood_concentration", "orf_variance", "orf_unbiasedness", "sorf", "qmc_gram",
              "binning_law"]


@pytest.mark.parametrize("check", MAP_CHECKS)
def test_power_is_computed_from_detectable(monkeypatch, check):
    """Every map check returns ``detectable`` (valid effects) and ``power`` =
    analysis.power.statement(detectable), computed, never written by hand: replacing the
    statement function by a fixed string changes the check's ``power`` with it (a validator
    that recomputes the statement then refuses any fixed string)."""
    import importlib

    from analysis import power

    mod = importlib.import_module(f"analysis.checks.{check}")
    res = mod.run(mod.PARAMS["smoke"], 1)
    v = mod.verdict(res)
    assert not power.check_detectable(v["detectable"])
    assert v["power"] == power.statement(v["detectable"])
    monkeypatch.setattr(power, "statement", lambda det: "FIXED STRING")
    assert mod.verdict(res)["power"] == "FIXED STRING"


@pytest.mark.parametrize("mutant", ["iid points", "no scrambling"])
def test_qmc_gram_fails_on_mutant(monkeypatch, global_random_seed, mutant):
    """QMC maps that are iid in disguise (seam: the check's ``make_map``): the advantage over
    iid cannot be confirmed (power: an error above ~0.65x iid's fails); unscrambled (seam:
    randfeat._sampling._qmc_uniforms, scipy's unscrambled points): every fit gives the same
    points, a degenerate run (an error, not a pass)."""
    from analysis.checks import qmc_gram as qg

    params = dict(ds=[2, 4], Ds=[32, 128, 512, 2048], D_test=128, n=64, R=20)
    assert qg.verdict(qg.run(params, global_random_seed))["verdict"] == "pass"
    if mutant == "iid points":
        real = qg.make_map
        monkeypatch.setattr(qg, "make_map", lambda s, sigma: real("iid", sigma))
    else:
        from scipy.stats import qmc

        import randfeat._sampling as S

        def uniforms(method, n, s, rng):
            eng = (qmc.Sobol if method == "sobol" else qmc.Halton)(s, scramble=False)
            return np.ascontiguousarray(eng.random(n) + 0.5 / n), 0.0

        monkeypatch.setattr(S, "_qmc_uniforms", uniforms)
        with pytest.raises(mc.DegenerateRunError, match="identical"):
            qg.run(params, global_random_seed)
        return
    v = qg.verdict(qg.run(params, global_random_seed))
    assert v["verdict"] == "fail", (mutant, v["summary"])


# ---------------------------------------------------------------- binning shift mutants


@pytest.mark.parametrize("mutant", ["no shift", "shifts U[0, 0.9 delta)"])
def test_unbiasedness_fails_on_binning_shift_mutant(monkeypatch, global_random_seed, mutant):
    """The random shift u ~ U[0, delta) missing or biased (seam: the fitted grids of
    RandomBinningFeatures._sample_grids): the lattice becomes anchored at the origin, so the
    lattice inputs (x0 = 0, axes, constant vector; analysis.checks.unbiasedness) see a bias of
    0.04 (0.9 delta, ~6 se at R = 200) to 0.5 (no shift, ~100 se); the random-direction pooled
    design (x0 within half a width of the origin) sees both too (0.9 delta: ~20 se).  Control:
    the check's rate 1e-5."""
    import randfeat

    params = dict(unbiasedness.PARAMS["quick"], maps=[dict(family="binning",
                                                           kernel="laplacian")],
                  R=200, pool_fits=20)
    assert unbiasedness.verdict(unbiasedness.run(params, global_random_seed))["verdict"] \
        == "pass"
    real = randfeat.RandomBinningFeatures._sample_grids
    f = 0.0 if mutant == "no shift" else 0.9

    def sample_grids(self, d):
        kern, widths, shifts, inv, salt, rng = real(self, d)
        return kern, widths, shifts * f, inv, salt, rng

    monkeypatch.setattr(randfeat.RandomBinningFeatures, "_sample_grids", sample_grids)
    res = unbiasedness.run(params, global_random_seed)
    v = unbiasedness.verdict(res)
    assert v["verdict"] == "fail", v["summary"]
    if mutant == "no shift":
        adv = next(r["adv"] for r in res["maps"] if "adv" in r)
        assert np.max(np.abs(adv["z"])) > v["statistic"]["z_threshold"]


def test_orf_checks_cannot_flag_a_missing_qr_sign_correction(monkeypatch):
    """Orthogonal blocks from numpy's QR of a Gaussian matrix WITHOUT the sign correction
    Q diag(sign R_ii) (non-Haar; seam: randfeat._sampling._haar_fill, which turns the drawn
    normals and row lengths into the blocks) pass orf_unbiasedness and orf_variance (measured:
    max |z| ~1.2 against 5.2; variance within ~1.1x of the exact curve).  Deterministic seed.

    No kernel statistic can see this bug, and none needs to: the uncorrected Q is the Haar Q
    with some columns negated, i.e. some frequencies ω replaced by -ω, and every kernel
    estimate cos(ωᵀΔ) is even in ω (for the phase map, -b is uniform as b is).  Shown exactly
    below; the Haar law itself is tested in tests/test_orthogonal.py
    (test_haar_is_haar_not_lapack_signs, test_haar_joint_law_trace_moments)."""
    G = np.random.default_rng(0).standard_normal((50, 6, 6))
    Q0, R = np.linalg.qr(G)
    Qh = Q0 * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
    W0 = Q0.transpose(0, 2, 1).reshape(-1, 6)
    Wh = Qh.transpose(0, 2, 1).reshape(-1, 6)
    flips = np.sign(np.sum(W0 * Wh, axis=1))
    assert np.any(flips < 0) and np.any(flips > 0)
    np.testing.assert_array_equal(W0, Wh * flips[:, None])
    deltas = np.random.default_rng(1).normal(size=(20, 6))
    np.testing.assert_allclose(np.cos(W0 @ deltas.T), np.cos(Wh @ deltas.T), rtol=0,
                               atol=1e-15)

    import randfeat._sampling as S
    from analysis.checks import orf_unbiasedness as ou
    from analysis.checks import orf_variance as ov

    calls = []

    def no_sign(n, d, g, scale, n_threads=1):
        calls.append(n)
        nb = -(-n // d)
        G = np.random.default_rng(np.abs(g[:4] * 2 ** 40).astype(np.int64)).standard_normal(
            (nb, d, d))
        Q, _ = np.linalg.qr(G)                    # LAPACK signs, no correction
        W = Q.transpose(0, 2, 1).reshape(nb * d, d)[:n]
        return W * np.asarray(scale, float)[:, None]

    monkeypatch.setattr(S, "_haar_fill", no_sign)
    assert ou.verdict(ou.run(dict(ds=[2, 3, 4, 8], zs=[0.5, 1.0, 2.0], R=2000), 0))[
        "verdict"] == "pass"
    assert ov.verdict(ov.run(dict(ds=[2, 4, 16], ms=[1], zs=[0.5, 1.0], R=1500), 0))[
        "verdict"] == "pass"
    assert calls, "the seam was not used: randfeat's ORF no longer goes through _haar_fill"
