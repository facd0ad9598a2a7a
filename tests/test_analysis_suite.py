"""End-to-end and component tests of the analysis package (python -m analysis).

The smoke grids are tiny: they exercise the pipeline (run -> cache -> verdict -> figure -> report),
they are not meaningful checks of the theory (the quick suite is).
"""

import json
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")
randfeat = pytest.importorskip("randfeat")
if not all(hasattr(randfeat, n) for n in ("RandomFourierFeatures", "Fastfood",
                                           "RandomBinningFeatures")):
    pytest.skip("the randfeat estimators are not all available", allow_module_level=True)

from analysis import maps, supsearch  # noqa: E402
from analysis.__main__ import main  # noqa: E402
from analysis.checks import CHECKS, claim2, load, unbiasedness  # noqa: E402


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis")
    status = main(["--smoke", "--out", str(out), "--quiet", "--seed", "3"])
    return out, status


def test_smoke_suite_writes_report(smoke_report):
    out, status = smoke_report
    assert status == 0
    rep = json.loads((out / "report.json").read_text())
    assert [r["name"] for r in rep["checks"]] == CHECKS
    for r in rep["checks"]:
        assert set(r) >= {"name", "claim", "verdict", "statistic", "tightness", "summary",
                          "false_alarm", "figure"}
        assert r["verdict"] in ("pass", "fail", "vacuous")
        assert r["claim"] and isinstance(r["statistic"], dict)
        png = out / r["figure"]
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    for name in CHECKS:
        assert f"## {name}" in md and f"({name}.png)" in md
    for r in rep["checks"]:
        if r["name"] in ("claim1", "claim2", "hoeffding", "fastfood_variance",
                         "fastfood_concentration"):
            assert r["tightness"] is not None


def test_cache_is_used(smoke_report, capsys):
    out, _ = smoke_report
    assert main(["--smoke", "--out", str(out), "--seed", "3", "--only", "lemma1", "variance"]) == 0
    err = capsys.readouterr().err
    assert err.count("cached") == 2
    rep = json.loads((out / "report.json").read_text())
    assert all(r["cached"] for r in rep["checks"])


def test_exit_status_on_failure(tmp_path, monkeypatch):
    mod = load("lemma1")
    real = mod.verdict

    def failing(res):
        v = real(res)
        v["verdict"] = "fail"
        return v

    monkeypatch.setattr(mod, "verdict", failing)
    assert main(["--smoke", "--out", str(tmp_path), "--quiet", "--only", "lemma1"]) == 1


def test_unbiasedness_detects_bandwidth_bug(monkeypatch):
    """Negative control: the classic factor-2 bandwidth bug (w ~ N(0, gamma I) instead of
    N(0, 2 gamma I), THEORY §6.1) must FAIL the unbiasedness check."""
    real_build = maps.build

    def buggy(spec, size, rs, n_threads=1):
        return real_build(dict(spec, sigma=spec["sigma"] * math.sqrt(2)), size, rs, n_threads)

    monkeypatch.setattr(maps, "build", buggy)
    params = dict(unbiasedness.PARAMS["smoke"],
                  maps=[dict(family="rff", kernel="gaussian", features="paired")], R=200)
    res = unbiasedness.run(params, 0)
    assert unbiasedness.verdict(res)["verdict"] == "fail"


def test_certified_sup_contains_true_max():
    """Branch and bound on known smooth functions (true sup 0.1): the certified interval
    contains it, with the first-order (Lipschitz) and the second-order bound."""
    def f1(x):
        return 0.1 * np.sin(7 * x[:, 0])

    def g1(x):
        return 0.7 * np.cos(7 * x)

    def f2(x):
        return 0.1 * np.sin(7 * x[:, 0]) * np.cos(3 * x[:, 1])

    def g2(x):
        return np.stack([0.7 * np.cos(7 * x[:, 0]) * np.cos(3 * x[:, 1]),
                         -0.3 * np.sin(7 * x[:, 0]) * np.sin(3 * x[:, 1])], axis=1)

    for d, f, g in ((1, f1, g1), (2, f2, g2)):
        r1 = supsearch.certified_sup(f, 1.0, 1.0, d, tol=1e-3)
        r2 = supsearch.certified_sup(f, 1.0, 1.0, d, grad=g, M2=6.0, tol=1e-3)
        for r in (r1, r2):
            assert r["lower"] <= 0.1 + 1e-12 <= r["upper"] + 1e-12
            assert r["upper"] - r["lower"] <= 0.01


def test_claim2_khat_matrix_matches_brute_force():
    spec = dict(family="binning", kernel="laplacian", sigma=0.8)
    x = np.linspace(0, 2, 61)
    est = maps.build(spec, 50, 7)
    Z = est.fit(x[:, None]).transform(x[:, None])
    C = claim2._cells(Z, 50)
    K = claim2.khat_matrix_1d(C)
    np.testing.assert_allclose(K, (Z @ Z.T).toarray(), atol=1e-12)


def test_seed_sweep_mode(tmp_path):
    assert main(["--smoke", "--out", str(tmp_path), "--quiet", "--seed", "0-1",
                 "--only", "lemma1"]) == 0
    sweep = json.loads((tmp_path / "seed_sweep.json").read_text())
    assert set(sweep["verdicts"]["lemma1"]) == {"0", "1"}


def test_every_check_with_a_tightness_states_its_meaning():
    """A check whose verdict reports a tightness number defines TIGHTNESS (what the ratio is and
    what 1 means), so report.md never prints a bare ratio."""
    import inspect
    import re

    for name in CHECKS:
        mod = load(name)
        src = inspect.getsource(mod)
        if re.search(r"tightness=(?!None)[A-Za-z0-9_(]", src):
            assert isinstance(getattr(mod, "TIGHTNESS", None), str), name
