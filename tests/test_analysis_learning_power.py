"""Computed power statements of the learning checks and of lemma1 (contract version 3), audited;
and the holes of issue 27 that made them pass when they should not.

Audit protocol (analysis/audit.py): per seed, run the quick design, read the verdict's
``detectable`` effects, rerun inside ``mod.audit(effect)`` and count "fail".  CI runs two seeds
per check (every effect detected at both); ``-m slow`` runs seeds 0-49 (>= 45 detected), as
``python -m analysis --audit --seed 0-49 --only NAME`` does."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
randfeat = pytest.importorskip("randfeat")

from analysis import audit as audit_mod  # noqa: E402
from analysis import montecarlo as mc  # noqa: E402
from analysis.checks import load, validate_verdict  # noqa: E402

CHECKS = ["kernel_interpolation_limit", "rudi_rosasco", "features_needed", "sup_error_rate",
          "lemma1"]


@pytest.fixture
def one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _audit(name, seeds):
    mod = load(name)
    entry = audit_mod.audit_module(mod, seeds)
    assert entry["control"]["pass"] == len(seeds), entry["control"]
    assert entry["effects"], "no effect stated"
    return entry


@pytest.mark.parametrize("name", CHECKS)
def test_audit_ci_sample(name, one_thread):
    """Every stated effect, injected at its stated size, is detected at seeds 0 and 1."""
    entry = _audit(name, [0, 1])
    for e in entry["effects"]:
        assert e["detected"] == e["n"], e


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKS + ["learner_paths"])
def test_audit_seeds_0_49(name, one_thread):
    entry = _audit(name, list(range(50)))
    for e in entry["effects"]:
        assert e["detected"] >= 45 and e["n"] == 50, e


# ------------------------------------------------------------------ kernel_interpolation_limit
def test_exact_target_at_1_1_sigma_fails(global_random_seed, one_thread):
    """A 10 % bandwidth mismatch between the RF ridge and its exact target (the target fitted
    with 1.1 sigma) fails the quick design."""
    mod = load("kernel_interpolation_limit")
    with mod.audit(dict(effect="bandwidth error of the exact target (or of the map)", size=0.1,
                        unit="relative")):
        v = mod.verdict(mod.run(mod.PARAMS["quick"], global_random_seed))
    assert v["verdict"] == "fail", v["summary"]
    assert any("bandwidth direction" in f for f in v["statistic"]["failed"]), v["summary"]


def test_kernel_interpolation_limit_refuses_identical_replicates(monkeypatch, one_thread):
    """Every replicate given the same random state, or a map that ignores its random state:
    the run is an error (a "fail" in the runner), never a pass."""
    mod = load("kernel_interpolation_limit")
    params = dict(mod.PARAMS["smoke"])
    monkeypatch.setattr(mc, "random_state_of", lambda ss: 3)
    with pytest.raises(mc.DegenerateRunError):
        mod.run(params, 0)
    monkeypatch.undo()
    real = mod.build_map
    monkeypatch.setattr(mod, "build_map", lambda D, random_state: real(D, 0))
    with pytest.raises(mc.DegenerateRunError, match="identical|repeat"):
        mod.run(params, 0)


# ------------------------------------------------------------------ lemma1
@pytest.mark.parametrize("how", ["random_state_of", "seed_sequences"])
def test_lemma1_with_one_seed_for_every_replicate_fails(monkeypatch, how, one_thread):
    mod = load("lemma1")
    if how == "random_state_of":
        monkeypatch.setattr(mc, "random_state_of", lambda ss: 11)
    else:
        monkeypatch.setattr(mc, "seed_sequences",
                            lambda seed, *names, n: [mc.seed_sequence(seed, "one")] * n)
    res = mod.run(mod.PARAMS["smoke"], 0)
    v = validate_verdict(mod, mod.verdict(res), res)
    assert v["verdict"] == "fail" and res["errors"], v["summary"]
    assert "not independent" in v["summary"]


def test_runner_reports_lemma1_with_repeated_seeds_as_fail(monkeypatch, tmp_path):
    from analysis.__main__ import main

    monkeypatch.setattr(mc, "random_state_of", lambda ss: 11)
    assert main(["--smoke", "--out", str(tmp_path), "--quiet", "--only", "lemma1",
                 "--jobs", "1", "--no-cache"]) == 1


# ------------------------------------------------------------------ rudi_rosasco
def test_rudi_rosasco_at_lambda_1_over_n_fails(monkeypatch, global_random_seed, one_thread):
    """The learners run at lambda = 1/n instead of R&R's n^-1/2: their fits differ from the
    claim's estimator and the check fails (the knee exponent alone did not see it)."""
    mod = load("rudi_rosasco")
    monkeypatch.setattr(mod, "penalty", lambda n: 1.0 / n)
    v = mod.verdict(mod.run(mod.PARAMS["smoke"], global_random_seed))
    assert v["verdict"] == "fail"
    assert any("lambda = n^-1/2" in f for f in v["statistic"]["failed"]), v["summary"]


def test_rudi_rosasco_exact_learner_with_wrong_penalty_fails(monkeypatch, global_random_seed,
                                                             one_thread):
    """Only the exact learner off (ExactKernelRidge reading alpha 10 % too large)."""
    mod = load("rudi_rosasco")
    real = randfeat.ExactKernelRidge.fit

    def fit(self, X, y):
        a = self.alphas
        self.alphas = a * 1.1
        try:
            return real(self, X, y)
        finally:
            self.alphas = a

    monkeypatch.setattr(randfeat.ExactKernelRidge, "fit", fit)
    v = mod.verdict(mod.run(mod.PARAMS["smoke"], global_random_seed))
    assert any("exact kernel ridge differs" in f for f in v["statistic"]["failed"])


# ------------------------------------------------------------------ features_needed
def test_features_needed_power_holds_where_it_is_stated(global_random_seed, one_thread):
    """The run states the bandwidth error it detects; injected at that size (through
    RandomFourierFeatures.fit) the same run fails."""
    mod = load("features_needed")
    res = mod.run(mod.PARAMS["quick"], global_random_seed)
    v = validate_verdict(mod, mod.verdict(res), res)
    (eff,) = v["detectable"]
    assert eff["size"] <= 0.1
    with mod.audit(eff):
        v2 = mod.verdict(mod.run(mod.PARAMS["quick"], global_random_seed))
    assert v2["verdict"] == "fail"


def test_features_needed_learner_exactness_sees_a_wrong_penalty(monkeypatch, global_random_seed,
                                                                one_thread):
    mod = load("features_needed")
    real = randfeat.RandomFeatureRidge.fit

    def fit(self, X, y, sample_weight=None):
        a = self.alphas
        self.alphas = a * 1.01
        try:
            return real(self, X, y, sample_weight=sample_weight)
        finally:
            self.alphas = a

    monkeypatch.setattr(randfeat.RandomFeatureRidge, "fit", fit)
    v = mod.verdict(mod.run(mod.PARAMS["smoke"], global_random_seed))
    assert any("differs from numpy's dual solve" in f for f in v["statistic"]["failed"])


def test_features_needed_missing_data_is_vacuous(tmp_path, one_thread):
    mod = load("features_needed")
    params = dict(mod.PARAMS["smoke"], datasets=["synthetic", "cpu_act"],
                  data_home=str(tmp_path))
    res = mod.run(params, 0)
    v = validate_verdict(mod, mod.verdict(res), res)
    assert res["skipped"] and v["verdict"] == "vacuous"


# ------------------------------------------------------------------ sup_error_rate
def test_sup_error_rate_figure_fits_on_its_range(one_thread):
    """Panel B draws the sqrt-log model over the upper half of the a grid (where it is fitted
    and tested), not extrapolated to the small sets where sup ~ a^2."""
    mod = load("sup_error_rate")
    res = mod.run(mod.PARAMS["smoke"], 0)
    v = mod.verdict(res)
    fig = mod.plot(res, v)
    bx = fig.axes[1]
    a = np.array([s["a"] for s in res["diam"]], float)
    lo = a[a >= np.median(a)][0]
    fitted = [ln for ln in bx.lines if "fitted" in str(ln.get_label())]
    assert fitted and np.min(fitted[0].get_xdata()) >= lo - 1e-12
    assert bx.get_yscale() == "log"
