"""Contract version 3 of the analysis checks (analysis/checks/__init__.py): computed power
statements, the audit seam and its runner (analysis/audit.py), no broken run passes, no repeated
replicates (analysis/montecarlo.py)."""

import contextlib
import json
import math
import sys
import types
from unittest import mock

import numpy as np
import pytest

import analysis.checks as checks
from analysis import montecarlo as mc
from analysis import power
from analysis.checks import ContractError, validate_verdict

# ------------------------------------------------------------------ a toy check (contract v3)
TOY_Z_POWER = 1.2815515655446004  # N(0,1) 0.9 quantile


def toy_shift():
    """The mean of the toy's draws: 0 (its public seam; the audit shifts it)."""
    return 0.0


def _toy_module(name="toy"):
    """A minimal check following contract version 3: R standard normal draws (mean toy_shift()),
    a two-sided z-test of mean 0 at level ALPHA; detectable: the smallest shift detected with
    probability >= 0.9, (z_{ALPHA/2} + z_{0.9}) / sqrt(R); audit: the seam shifted by it."""
    from analysis import stats

    mod = types.ModuleType(f"analysis.checks.{name}")
    mod.NAME, mod.TITLE, mod.CLAIM, mod.SOURCE, mod.DESIGN = name, "toy", "mean 0", "-", "z"
    mod.ALPHA = 1e-3
    mod.PARAMS = {m: {"R": 400} for m in ("smoke", "quick", "full")}
    here = sys.modules[__name__]

    def run(params, seed, progress=None):
        states = mc.random_states(mc.seed_sequences(seed, name, n=params["R"]))
        x = np.array([np.random.default_rng(rs).standard_normal() for rs in states])
        x = x + here.toy_shift()
        mc.check_not_degenerate(x[:, None])
        return {"x": x.tolist()}

    def verdict(res):
        x = np.asarray(res["x"])
        z_a = stats.z_threshold(mod.ALPHA)
        z = float(x.mean() * math.sqrt(len(x)))
        det = [power.effect("shift of the mean", (z_a + TOY_Z_POWER) / math.sqrt(len(x)),
                            "absolute")]
        return dict(verdict="fail" if abs(z) > z_a else "pass", statistic={"z": z},
                    tightness=None, summary=f"z = {z:.2f}", detectable=det,
                    power=power.statement(det))

    @contextlib.contextmanager
    def audit(effect):
        with mock.patch.object(here, "toy_shift", lambda: effect["size"]):
            yield

    def plot(res, v):
        return None

    mod.run, mod.verdict, mod.audit, mod.plot = run, verdict, audit, plot
    return mod


def _verdict(**kw):
    v = dict(verdict="pass", statistic={}, tightness=None, summary="", detectable=[], power="")
    v.update(kw)
    return v


# ------------------------------------------------------------------ the validator
def test_toy_module_follows_the_contract():
    mod = _toy_module()
    checks.validate_module(mod)
    res = mod.run(mod.PARAMS["quick"], 0)
    v = validate_verdict(mod, mod.verdict(res), res)
    assert v["verdict"] == "pass" and v["power"].startswith("detects shift of the mean of 0.")


def test_fixed_power_string_is_refused():
    """power must be analysis.power.statement(detectable): a hand-written or stale string fails,
    even one that was right for another run."""
    mod = _toy_module()
    res = mod.run(mod.PARAMS["quick"], 0)
    v = mod.verdict(res)
    for fixed in ("detects a shift of 0.1 with probability >= 0.9", v["power"] + " ", "", None):
        with pytest.raises(ContractError, match="analysis.power.statement"):
            validate_verdict(mod, dict(v, power=fixed), res)
    stale = mod.verdict(mod.run(dict(R=100), 0))["power"]
    with pytest.raises(ContractError, match="computed"):
        validate_verdict(mod, dict(v, power=stale), res)


def test_detectable_is_required_and_validated():
    mod = _toy_module()
    v = mod.verdict(mod.run(mod.PARAMS["quick"], 0))
    with pytest.raises(ContractError, match="'detectable' missing"):
        validate_verdict(mod, {k: x for k, x in v.items() if k != "detectable"})
    bad = [dict(v["detectable"][0], size=-1.0)]
    with pytest.raises(ContractError, match="size"):
        validate_verdict(mod, dict(v, detectable=bad, power=None))
    # an empty list is allowed (with the empty statement)
    validate_verdict(mod, dict(v, detectable=[], power=""))


def test_effects_without_an_audit_seam_are_refused():
    mod = _toy_module()
    v = mod.verdict(mod.run(mod.PARAMS["quick"], 0))
    del mod.audit
    with pytest.raises(ContractError, match="audit"):
        validate_verdict(mod, v)
    validate_verdict(mod, dict(v, detectable=[], power=""))  # nothing stated: nothing to audit


@pytest.mark.parametrize("errors,skipped,verdict,ok", [
    (["part B: ValueError('x')"], [], "pass", False),
    (["part B: ValueError('x')"], [], "vacuous", False),
    (["part B: ValueError('x')"], [], "fail", True),
    ([], ["dask not installed"], "pass", False),
    ([], ["dask not installed"], "vacuous", True),
    ([], ["dask not installed"], "fail", True),
    ([], [], "pass", True),
])
def test_no_pass_with_errors_or_skipped_parts(errors, skipped, verdict, ok):
    mod = _toy_module()
    res = {"x": [0.0, 1.0], "errors": errors, "skipped": skipped}
    v = _verdict(verdict=verdict)
    if ok:
        validate_verdict(mod, v, res)
    else:
        with pytest.raises(ContractError, match="errors|skipped"):
            validate_verdict(mod, v, res)


def test_result_errors_must_be_strings():
    mod = _toy_module()
    with pytest.raises(ContractError, match="list of str"):
        validate_verdict(mod, _verdict(verdict="fail"), {"errors": [ValueError("x")]})


def test_every_check_refuses_a_verdict_without_detectable():
    """Every check is on contract version 3: a verdict without ``detectable`` (and with a
    free-text power) is refused, whichever check it claims to come from."""
    assert not hasattr(checks, "_LEGACY_WITHOUT_DETECTABLE")
    old = _verdict()
    del old["detectable"]
    old["power"] = "free text"
    for name in checks.CHECKS:
        with pytest.raises(ContractError, match="detectable"):
            validate_verdict(checks.load(name), old)


# ------------------------------------------------------------------ replicates
def test_identical_replicates_are_refused(monkeypatch):
    seeds = mc.seed_sequences(0, "t", n=12)
    # every replicate given the same random state: refused before anything runs
    monkeypatch.setattr(mc, "random_state_of", lambda ss: 7)
    with pytest.raises(mc.DegenerateRunError, match="random state"):
        mc.random_states(seeds)
    with pytest.raises(mc.DegenerateRunError, match="random state"):
        mc.replicate(lambda rs: np.random.default_rng(rs).standard_normal(3), seeds)
    monkeypatch.setattr(mc, "random_state_of", lambda ss: None)
    with pytest.raises(mc.DegenerateRunError, match="None"):
        mc.random_states(seeds)
    monkeypatch.undo()
    # repeated seeds
    with pytest.raises(mc.DegenerateRunError, match="repeat"):
        mc.random_states(seeds[:6] + seeds[:6])


def test_repeated_replicate_outputs_are_refused():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 30))
    mc.check_not_degenerate(x)
    with pytest.raises(mc.DegenerateRunError, match="identical"):
        mc.check_not_degenerate(np.repeat(x[:1], 12, axis=0))
    y = x.copy()
    y[5] = y[2]  # one replicate repeats another (a reused state)
    with pytest.raises(mc.DegenerateRunError, match="repeat an earlier one"):
        mc.check_not_degenerate(y)
    # discrete outputs (fewer than MIN_DISTINCT_FOR_REPEATS values per row) may coincide
    z = rng.integers(0, 2, size=(40, 3)).astype(float)
    mc.check_not_degenerate(z)


# ------------------------------------------------------------------ the audit
def test_audit_of_a_toy_module_reports_the_rate():
    """The audit protocol on the toy check: the control passes, the stated shift is detected at
    >= 90 % of the seeds (its power is 0.9 by construction: the expected rate is ~0.9), and an
    effect half as large is not (the audit can fail)."""
    from analysis import audit

    mod = _toy_module()
    seeds = list(range(30))
    entry = audit.audit_module(mod, seeds, code="c0")
    assert entry["code"] == "c0" and entry["mode"] == "quick" and entry["seeds"] == seeds
    assert entry["control"]["pass"] == 30
    (eff,) = entry["effects"]
    assert eff["effect"] == "shift of the mean" and eff["n"] == 30
    assert eff["detected"] >= 24, eff  # P(Bin(30, 0.9) < 24) = 0.007
    # a seam that injects half the stated size: detected far less often
    real = mod.audit

    @contextlib.contextmanager
    def half(effect):
        with real(dict(effect, size=effect["size"] / 2)):
            yield

    mod.audit = half
    weak = audit.audit_module(mod, seeds, code="c0")["effects"][0]
    assert weak["detected"] < 0.6 * weak["n"], weak
    md = audit.render_markdown({"toy": audit.audit_module(_toy_module(), seeds[:3])})
    assert "| toy | shift of the mean" in md


def test_audit_runner_writes_json_and_markdown(tmp_path, monkeypatch):
    """run_audit (the engine of ``python -m analysis --audit``) on the toy module, through the
    runner's cache and loader, and the report record's ``audit`` / ``detectable`` keys."""
    from analysis import audit
    from analysis.__main__ import code_version

    mod = _toy_module()
    monkeypatch.setattr(checks, "load", lambda name: mod)
    status = audit.run_audit(["toy"], [0, 1, 2], tmp_path, mode="smoke", jobs=1)
    data = json.loads((tmp_path / "audit.json").read_text())
    e = data["toy"]
    assert e["code"] == code_version() and e["seeds"] == [0, 1, 2]
    assert e["effects"][0]["n"] == 3 and "| toy |" in (tmp_path / "audit.md").read_text()
    assert status == (0 if e["effects"][0]["detected"] == 3 else 1)
    assert audit.entry_for(tmp_path, "toy", code_version()) == e
    assert audit.entry_for(tmp_path, "toy", "another code") is None
    assert audit.entry_for(tmp_path, "other", code_version()) is None
    # a second audit of another check keeps this entry
    audit.write(tmp_path, {"other": dict(e, code="x")})
    assert set(json.loads((tmp_path / "audit.json").read_text())) == {"toy", "other"}


def test_runner_turns_exceptions_in_verdict_and_plot_into_fail(tmp_path, monkeypatch):
    """An exception raised by a check's verdict or plot is a "fail" with the exception, in the
    report and in a seed sweep, never a pass or a crash."""
    from analysis.__main__ import main

    mod = _toy_module("lemma1")  # run by the runner under a real check's name
    monkeypatch.setattr(checks, "load", lambda name: mod)

    def boom(res, v=None):
        raise RuntimeError("plot exploded")

    monkeypatch.setattr(mod, "plot", boom)
    assert main(["--smoke", "--out", str(tmp_path), "--quiet", "--only", "lemma1"]) == 1
    rec = json.loads((tmp_path / "report.json").read_text())["checks"][0]
    assert rec["verdict"] == "fail" and "plot exploded" in rec["statistic"]["error"]
    assert "detectable" in rec and "audit" in rec

    def bad_verdict(res):
        raise RuntimeError("verdict exploded")

    monkeypatch.setattr(mod, "verdict", bad_verdict)
    assert main(["--smoke", "--out", str(tmp_path / "sw"), "--quiet", "--only", "lemma1",
                 "--seed", "0-1", "--jobs", "1"]) == 1
    sweep = json.loads((tmp_path / "sw" / "seed_sweep.json").read_text())
    assert set(sweep["verdicts"]["lemma1"].values()) == {"fail"}
