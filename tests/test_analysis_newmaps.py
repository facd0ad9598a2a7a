"""The analysis checks of the arc-cosine and positive random features (arccos_features,
positive_features, positive_vs_trig): their exact laws against independent computations, the
contract (v3: computed detectable effects, audit seams), mutants that must fail through public
seams while the control passes, and the audit protocol.

Seeds: the controls are the checks' own designs (false-alarm rate ALPHA = 1e-5 each); the
mutants are effects of 20 % to several-fold on the mean or variance against detectable effects
below 1 % / 25 %, so they fail at every seed.  Audit in CI: seeds 0-1, every stated effect must
be detected; behind ``slow``: seeds 0-49, at least 45 of 50 per effect (the statement is
probability >= 0.9), and the quick designs pass at seeds 0-99.
"""

from __future__ import annotations

import contextlib
import math
from unittest import mock

import numpy as np
import pytest

import randfeat
from analysis import arccos_law, orf_theory, power, prf_law
from analysis.checks import load, validate_module, validate_verdict

CHECKS = ["arccos_features", "positive_features", "positive_vs_trig"]

# small designs for the mutant tests (a few hundred ms each)
SMALL = {
    "arccos_features": dict(d=5, orders=[0, 1, 2], fits=3, K=300, orth_fits=2, orth_K=200),
    "positive_features": dict(d=4, configs=load("positive_features").PARAMS["quick"]["configs"],
                              fits=2, K=300),
    "positive_vs_trig": dict(a_fits=2, a_K=300, b_fits=6, b_K=1000),
}


# ------------------------------------------------------------------------- exact laws
@pytest.mark.parametrize("n", range(5))
def test_arccos_closed_forms_match_quadrature(n):
    for th in np.linspace(0, math.pi, 13):
        q = arccos_law.J_quadrature(n, th)
        assert float(arccos_law.J(n, th)) == pytest.approx(q, rel=1e-10, abs=1e-12)
        assert arccos_law.J_stable(n, th) == pytest.approx(q, rel=1e-10, abs=1e-300)
    # near pi the stable value keeps its relative precision (J_n ~ e^{2n+1} c_n)
    e = 1e-3
    assert arccos_law.J_stable(n, math.pi - e) > 0
    if n >= 1:
        lead = {1: 1 / 3, 2: 4 / 15}.get(n)
        if lead:
            assert arccos_law.J_stable(n, math.pi - e) == pytest.approx(lead * e ** (2 * n + 1),
                                                                         rel=1e-5)


def test_arccos_law_agrees_with_the_library_kernel():
    """Two independent implementations (analysis: closed form + quadrature near pi; randfeat:
    closed form + series near pi) of k_n agree, also near theta = 0 and pi."""
    from analysis.checks.arccos_features import pairs

    for _, x, y in pairs(5):
        for n in (0, 1, 2):
            lib = randfeat.kernels.ArcCosineKernel(n)(x[None], y[None])[0, 0]
            assert lib == pytest.approx(arccos_law.k(n, x, y), rel=1e-9, abs=1e-14)


def test_prf_trig_orthogonal_covariance_matches_quadrature():
    """The closed form 1F1(d; d/2; -t/2) - e^{-t} against Yu et al.'s covariance computed by
    2-D quadrature in analysis.orf_theory (Gaussian kernel, u - v of norm z)."""
    for d in (2, 5, 16):
        for z in (0.3, 2.0):
            u = np.zeros(d)
            u[0] = z / 2
            _, _, C = prf_law.term_law("trigonometric", "gaussian", u, -u, d)
            assert C == pytest.approx(float(orf_theory.orf_cov(z, d)), rel=1e-8, abs=1e-12)


def test_prf_positive_orthogonal_covariance_by_monte_carlo(global_random_seed):
    """C = Lambda^2 [1F1(d; d/2; s/2) - e^s] against the covariance of two rows of 10^5 Haar
    blocks with chi radii (randfeat's orthogonal sampler), |z| < 6."""
    from randfeat._sampling import orthogonal_frequencies
    from randfeat.kernels import GaussianKernel

    rng = np.random.default_rng(global_random_seed)
    d, N = 4, 100_000
    u = np.array([0.5, 0.1, -0.2, 0.3])
    v = np.array([0.2, -0.4, 0.1, 0.3])
    _, V1, C = prf_law.term_law("positive", "softmax", u, v, d)
    W = orthogonal_frequencies(GaussianKernel(1.0), N * d, d, rng).reshape(N, d, d)
    lam = math.exp(-(u @ u + v @ v) / 2)
    T = lam * np.exp(W @ (u + v))
    prod = T[:, 0] * T[:, 1]
    z = (prod.mean() - math.exp(2 * u @ v) - C) / (prod.std() / math.sqrt(N))
    assert abs(z) < 6, z
    assert C < 0


def test_theorem2_bound_holds_for_the_exact_covariance():
    """Context: Theorem 2 (C <= -2/(d+2) (SM - Lambda)^2) holds for the exact law on a grid."""
    for d in (1, 2, 3, 4, 8, 16, 64):
        for s in np.linspace(0.05, 20, 60):
            r = math.sqrt(s) / 2
            u = np.zeros(max(d, 2))
            u[0] = r
            _, _, C = prf_law.term_law("positive", "softmax", u, u, d)
            assert C <= prf_law.thm2_cov_bound("softmax", u, u, d) * (1 - 1e-12)


# ------------------------------------------------------------------------- the contract
@pytest.mark.parametrize("name", CHECKS)
def test_contract_v3(name):
    mod = load(name)
    validate_module(mod)
    assert callable(mod.audit)
    res = mod.run(mod.PARAMS["smoke"], 0)
    assert res["errors"] == [] and res["skipped"] == []
    v = validate_verdict(mod, mod.verdict(res))
    assert power.check_detectable(v["detectable"]) == []
    assert v["power"] == power.statement(v["detectable"])
    assert 1 <= len(v["detectable"]) <= 3
    fig = mod.plot(res, v)
    assert fig.axes


@pytest.mark.parametrize("name", CHECKS)
def test_an_error_in_a_part_fails_the_check(name, monkeypatch):
    mod = load(name)
    cls = (randfeat.ArcCosineFeatures if name == "arccos_features"
           else randfeat.PositiveRandomFeatures)

    def boom(self, X):
        raise RuntimeError("injected")

    monkeypatch.setattr(cls, "transform", boom)
    res = mod.run(mod.PARAMS["smoke"], 0)
    assert res["errors"] and "injected" in res["errors"][0]
    v = mod.verdict(res)
    assert v["verdict"] == "fail" and "ERRORS" in v["summary"]


# ------------------------------------------------------------------------- mutants
@contextlib.contextmanager
def _transform(cls, new):
    real = cls.transform

    def transform(self, X):
        return new(self, X, real)

    with mock.patch.object(cls, "transform", transform):
        yield


def _relu(self, X, order):
    W = self.frequencies_
    P = np.asarray(X, float) @ W.T
    return math.sqrt(2.0 / W.shape[0]) * (P > 0) * np.where(P > 0, P, 0) ** order


ARCCOS_MUTANTS = {
    "order-1 features used for order 2":
        lambda self, X, real: _relu(self, X, 1) if self.order == 2 else real(self, X),
    "sqrt(1/D) instead of sqrt(2/D)": lambda self, X, real: real(self, X) / math.sqrt(2.0),
    "no Heaviside (w'x)^n for order 1":
        lambda self, X, real: (math.sqrt(2.0 / self.frequencies_.shape[0])
                               * (np.asarray(X, float) @ self.frequencies_.T)
                               if self.order == 1 else real(self, X)),
}


def _sq(X):
    return (np.asarray(X, float) ** 2).sum(axis=1)


def _no_norm_term(self, X, real):
    """The positive features without exp(-c ||u||^2): rows times exp(+c ||u||^2)."""
    Z = real(self, X)
    if self.estimator == "trigonometric":
        return Z
    c = 0.5 if self.kernel == "softmax" else 1.0
    return Z * np.exp(c * _sq(X) / self.sigma_ ** 2)[:, None]


def _trig_without_factor(self, X, real):
    """Trigonometric softmax features without e^{||u||^2/2} (the Gaussian kernel's RFF)."""
    Z = real(self, X)
    if self.estimator == "trigonometric" and self.kernel == "softmax":
        return Z * np.exp(-0.5 * _sq(X) / self.sigma_ ** 2)[:, None]
    return Z


PRF_MUTANTS = {"missing exp(-||x||^2/2)": _no_norm_term,
               "trigonometric without exp(||x||^2/2)": _trig_without_factor}


@contextlib.contextmanager
def _unit_rows():
    """Orthogonal frequencies of length sqrt(d) (ORF': the regularised softmax kernel, biased
    for SM) instead of chi_d radii."""
    real = randfeat.PositiveRandomFeatures.fit

    def fit(self, X, y=None):
        real(self, X, y)
        if self.sampling == "orthogonal":
            W = np.array(self.frequencies_, dtype=float)
            W *= math.sqrt(W.shape[1]) / (self.sigma_ * np.linalg.norm(W, axis=1,
                                                                         keepdims=True))
            W = W.astype(self.frequencies_.dtype)
            W.flags.writeable = False
            self.__dict__["frequencies_"] = W
        return self

    with mock.patch.object(randfeat.PositiveRandomFeatures, "fit", fit):
        yield


@contextlib.contextmanager
def _iid_for_orthogonal():
    """sampling='orthogonal' silently drawing iid frequencies."""
    real = randfeat.PositiveRandomFeatures._build

    def build(self, X):
        if self.sampling != "orthogonal":
            return real(self, X)
        self.sampling = "iid"
        try:
            return real(self, X)
        finally:
            self.sampling = "orthogonal"

    with mock.patch.object(randfeat.PositiveRandomFeatures, "_build", build):
        yield


def _verdict(name, seed):
    mod = load(name)
    return mod.verdict(mod.run(SMALL[name], seed))


@pytest.mark.parametrize("name", CHECKS)
def test_control_passes_on_the_small_design(name, global_random_seed):
    v = _verdict(name, global_random_seed)
    assert v["verdict"] == "pass", v["summary"]


@pytest.mark.parametrize("mutant", list(ARCCOS_MUTANTS))
def test_arccos_check_fails_on_mutant(mutant, global_random_seed):
    with _transform(randfeat.ArcCosineFeatures, ARCCOS_MUTANTS[mutant]):
        v = _verdict("arccos_features", global_random_seed)
    assert v["verdict"] == "fail", v["summary"]


@pytest.mark.parametrize("mutant", list(PRF_MUTANTS))
@pytest.mark.parametrize("name", ["positive_features", "positive_vs_trig"])
def test_prf_checks_fail_on_mutant(name, mutant, global_random_seed):
    with _transform(randfeat.PositiveRandomFeatures, PRF_MUTANTS[mutant]):
        v = _verdict(name, global_random_seed)
    assert v["verdict"] == "fail", v["summary"]


@pytest.mark.parametrize("seam", [_unit_rows, _iid_for_orthogonal], ids=["unit rows", "iid"])
@pytest.mark.parametrize("name", ["positive_features", "positive_vs_trig"])
def test_prf_checks_fail_on_broken_orthogonal_sampling(name, seam, global_random_seed):
    with seam():
        v = _verdict(name, global_random_seed)
    assert v["verdict"] == "fail", v["summary"]


# ------------------------------------------------------------------------- audit protocol
def _audit(name, seeds):
    """The contract's protocol on the quick design: {effect unit: (detected, n)}."""
    mod = load(name)
    out = {}
    for s in seeds:
        v = mod.verdict(mod.run(mod.PARAMS["quick"], s))
        assert v["verdict"] == "pass", (s, v["summary"])
        for e in v["detectable"]:
            with mod.audit(e):
                va = mod.verdict(mod.run(mod.PARAMS["quick"], s))
            k, n = out.get(e["unit"], (0, 0))
            out[e["unit"]] = (k + (va["verdict"] == "fail"), n + 1)
    return out


@pytest.mark.parametrize("name", CHECKS)
def test_audit_small_sample(name):
    out = _audit(name, [0, 1])
    assert set(out) == {"relative", "factor"}
    for unit, (k, n) in out.items():
        assert k == n, (unit, k, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKS)
def test_audit_seeds_0_49(name):
    out = _audit(name, range(50))
    for unit, (k, n) in out.items():
        assert n == 50 and k >= 45, (unit, k, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKS)
def test_quick_design_passes_at_seeds_0_99(name):
    mod = load(name)
    bad = []
    for s in range(100):
        v = mod.verdict(mod.run(mod.PARAMS["quick"], s))
        if v["verdict"] != "pass":
            bad.append((s, v["summary"]))
    assert not bad, bad
