"""The audit of the map checks' power statements (ANALYSIS_CONTRACT item 2).

Protocol, per seed s: ``res = run(params, s)``; ``det = verdict(res)["detectable"]``; for each
effect e of det: ``with mod.audit(e): v = verdict(run(params, s))``; detected iff
``v["verdict"] == "fail"``.  Every effect is stated with probability stats.POWER = 0.98, so at
the 50 seeds of the slow test the number detected is Binomial(50, >= 0.98) and >= 45 holds with
probability >= 0.999 per effect.  CI runs the protocol at seeds 0-2 on small designs (a few
seconds per check; the statement is computed from the design it runs, whatever its size): every
effect must be detected there.  The slow test runs the quick designs at seeds 0-49 (hours on
two cores; the measured rates are in the helper's report).
"""

import importlib

import pytest

pytest.importorskip("matplotlib")

from analysis import power  # noqa: E402

#: small designs for CI (each check's own power statement is computed from them)
SMALL = {
    "unbiasedness": dict(maps=[dict(family="rff", kernel="gaussian", features="paired"),
                               dict(family="fastfood", kernel="gaussian", features="phase"),
                               dict(family="binning", kernel="laplacian")],
                         d=3, sigma=1.3, radii=[0.3, 1.0, 2.5], R=60, size=32, pool_fits=6,
                         pool_groups=125, adv_radius=1.0),
    "variance": dict(maps=[dict(family="rff", kernel="gaussian", features="paired"),
                           dict(family="binning", kernel="laplacian")], d=3, sigma=1.0,
                     radii=[0.5, 1.0], R=120, size=8, cauchy1d=False, ff_d=8, ff_R=120,
                     pool_fits=6, pool_groups=500),
    "hoeffding": dict(maps=[dict(family="rff", kernel="gaussian", features="paired"),
                            dict(family="binning", kernel="laplacian")], d=3, sizes=[16, 64],
                      R=1000, n_eps=8),
    "claim1": dict(settings=[dict(d=1, a=1.0)], sizes=[64, 256], R=200, eps=[0.1, 0.25],
                   tol=0.001, n_candidates=1000),
    "claim2": dict(settings=[dict(d=1, a=1.0)], sizes=[16, 256], R=200, eps=[0.1, 0.25],
                   n_points=60, n_pairs=500),
    "fastfood_variance": dict(d=8, radii=[0.5, 1.0, 2.0], adv_radii=[1.0], blocks=[1],
                              R=400, rff=False, law_draws=4000),
    "fastfood_concentration": dict(dims=[16], radii=[0.5, 1.0], adv_radii=[1.0],
                                   deltas=[0.1, 0.025], R=400),
    "orf_variance": dict(ds=[2, 16], ms=[1], zs=[0.5, 1.0], R=400, unit_ms=[1]),
    "orf_unbiasedness": dict(ds=[3, 8], zs=[1.0, 2.0], R=1000),
    "sorf": dict(law_ds=[4], law_zs=[0.5, 1.0, 2.0], adv_zs=[1.0], law_R=4000, ds=[16],
                 zs=[0.5, 1.0], R=500),
    "qmc_gram": dict(ds=[2], Ds=[32, 128, 512, 2048], D_test=128, n=32, R=20,
                     law_kernels=[dict(kernel="gaussian"), dict(kernel="matern", nu=1.5)],
                     d_law=3, n_law=128, R_law=30, law_radii=[0.5, 1.5]),
    "binning_law": dict(kernels=[dict(kernel="laplacian")], P=16, K=512, n_fits=2,
                        hash_size=4, hash_P=1024, n_hash_fits=20),
}
CHECKS = list(SMALL)


def audit(name, params, seeds):
    """Run the protocol; returns {seed: (control verdict, [(effect, detected)])}."""
    mod = importlib.import_module(f"analysis.checks.{name}")
    out = {}
    for s in seeds:
        v0 = mod.verdict(mod.run(params, s))
        got = []
        for e in v0["detectable"]:
            with mod.audit(e):
                v = mod.verdict(mod.run(params, s))
            got.append((e, v["verdict"] == "fail"))
        out[s] = (v0["verdict"], got)
    return out


@pytest.mark.parametrize("name", CHECKS)
def test_audit_small_design(name):
    out = audit(name, SMALL[name], [0, 1, 2])
    for s, (ctrl, got) in out.items():
        assert ctrl == "pass", (name, s)
        assert got, f"{name}: no detectable effect at seed {s}"
        for e, det in got:
            assert det, (name, s, power.statement([e]))


def test_every_map_check_has_an_audit():
    from analysis.checks import CHECKS as ALL

    for name in CHECKS:
        assert name in ALL
        assert callable(importlib.import_module(f"analysis.checks.{name}").audit)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKS)
def test_audit_quick_design_seeds_0_49(name):
    mod = importlib.import_module(f"analysis.checks.{name}")
    out = audit(name, mod.PARAMS["quick"], range(50))
    assert all(c == "pass" for c, _ in out.values())
    n_eff = {len(got) for _, got in out.values()}
    for j in range(max(n_eff)):
        hits = [got[j][1] for _, got in out.values() if len(got) > j]
        assert sum(hits) >= 45 * len(hits) / 50, (name, j, sum(hits), len(hits))
