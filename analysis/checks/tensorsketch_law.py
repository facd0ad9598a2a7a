"""Check — TensorSketch (randfeat.PolynomialCountSketch) is unbiased for the polynomial kernel
with its exact variance, on random, sparse, disjoint and heavy-hitter pairs."""

from __future__ import annotations

import contextlib

import numpy as np

from analysis import montecarlo as mc
from analysis import plots, power, stats
from analysis.checks import _maps_common as common

NAME = "tensorsketch_law"
TITLE = "TensorSketch: unbiased, with its exact variance (random, sparse, heavy-hitter pairs)"
CLAIM = ("PolynomialCountSketch (TensorSketch: p count sketches combined by FFT) gives "
         "E[z(x)'z(y)] = <x~, y~>^p = (gamma <x, y> + c0)^p and Var = D^-2 [(D^2 - 2D + c) "
         "rho^2p + (D - c)((rho^2 + N - Q)^p + (2 rho^2 - Q)^p) + c (2 rho^2 + N - 2Q)^p] - "
         "rho^2p, rho = <x~, y~>, N = |x~|^2 |y~|^2, Q = sum x~_k^2 y~_k^2, c = 2 (D even) or 1 "
         "(D odd) (derived by Parseval in docs/theory/dot-product-sketches.md §2.2).")
SOURCE = ("Pham & Pagh, KDD 2013 (the map); exact variance: docs/theory/dot-product-sketches.md "
          "§2.2 (ours; Pham & Pagh and Avron, Nguyen & Woodruff 2014 give bounds)")
DESIGN = ("R independently seeded fits of PolynomialCountSketch per configuration (degree, width "
          "D even and odd, coef0), each transforming fixed pairs: random, sparse with overlapping "
          "supports, disjoint supports (rho = 0, the mean test of pure noise) and a heavy hitter "
          "(one shared coordinate carrying most of the norm: Q ~ N). Per pair: two-sided z-test "
          "of the mean with the exact variance, and the scaled chi-square variance test (degrees "
          "of freedom from the sample kurtosis) against the exact variance; Bonferroni over all "
          "comparisons at ALPHA. The bound of Avron et al. is not used (context only).")
COST = 2
ALPHA = 1e-5

_CONFIGS = [dict(degree=2, n_components=16, gamma=1.0, coef0=0.0),
            dict(degree=3, n_components=15, gamma=0.5, coef0=1.0)]
PARAMS = {
    "smoke": dict(configs=_CONFIGS[:1], d=10, R=200),
    "quick": dict(configs=_CONFIGS, d=10, R=1500),
    "full": dict(configs=_CONFIGS + [dict(degree=4, n_components=32, gamma=1.0, coef0=0.0),
                                     dict(degree=2, n_components=7, gamma=2.0, coef0=0.5)],
                 d=10, R=8000),
}


def pairs(d, geo):
    """The fixed pairs (name -> (x, y)), drawn from a fixed generator."""
    x = 0.5 * geo.standard_normal(d)
    out = {"random": (x, x + 0.4 * geo.standard_normal(d))}
    xs, ys = np.zeros(d), np.zeros(d)
    xs[[0, 3, 6]] = [0.9, -0.6, 0.5]
    ys[[3, 6, 8]] = [0.7, 0.8, -0.6]
    out["sparse"] = (xs, ys)
    xd, yd = np.zeros(d), np.zeros(d)
    xd[: d // 2] = 0.4 * geo.standard_normal(d // 2)
    yd[d // 2:] = 0.4 * geo.standard_normal(d - d // 2)
    out["disjoint"] = (xd, yd)
    xh = 0.05 * geo.standard_normal(d)
    xh[2] = 1.1
    out["heavy hitter"] = (xh, xh + 0.05 * geo.standard_normal(d))
    return out


def law(x, y, degree, D, gamma=1.0, coef0=0.0):
    """Exact (mean, variance) of one TensorSketch estimate (docs/theory §2.2), for the
    augmented vectors x~ = [sqrt(gamma) x, sqrt(c0)]."""
    if coef0:
        x = np.append(np.sqrt(gamma) * x, np.sqrt(coef0))
        y = np.append(np.sqrt(gamma) * y, np.sqrt(coef0))
    else:
        x, y = np.sqrt(gamma) * x, np.sqrt(gamma) * y
    rho = float(x @ y)
    N = float((x @ x) * (y @ y))
    Q = float(np.sum(x * x * y * y))
    p = degree
    c = 2 if D % 2 == 0 else 1
    m2 = ((D * D - 2 * D + c) * rho ** (2 * p) + (D - c) * ((rho * rho + N - Q) ** p
          + (2 * rho * rho - Q) ** p) + c * (2 * rho * rho + N - 2 * Q) ** p) / D**2
    return rho**p, m2 - rho ** (2 * p)


def make_map(cfg):
    """The estimator under test (public randfeat API)."""
    import randfeat

    def make(rs):
        return randfeat.PolynomialCountSketch(random_state=rs, n_threads=1, **cfg)
    return make


def label(cfg):
    return (f"p={cfg['degree']} D={cfg['n_components']} gamma={cfg['gamma']:g} "
            f"c0={cfg['coef0']:g}")


def run(params, seed, progress=None):
    geo = np.random.default_rng(20130811)
    P = pairs(params["d"], geo)
    names = list(P)
    XY = np.vstack([v for pr in P.values() for v in pr])
    rows, errors = [], []
    for cfg in params["configs"]:
        lab = label(cfg)
        try:
            seeds = mc.seed_sequences(seed, NAME, lab, n=params["R"])
            est = common.pair_estimates(make_map(cfg), XY, seeds, progress)
        except mc.DegenerateRunError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded: a broken run never passes
            errors.append(f"{lab}: {type(exc).__name__}: {exc}")
            continue
        laws = [law(*P[n], cfg["degree"], cfg["n_components"], cfg["gamma"], cfg["coef0"])
                for n in names]
        rows += common.law_rows(est, [m for m, _ in laws], [v for _, v in laws], names, lab)
    return dict(R=params["R"], rows=rows, errors=errors, skipped=[])


def _level(res):
    return stats.bonferroni(ALPHA, max(1, 2 * len(res["rows"])))


def verdict(res):
    rows = res["rows"]
    level = _level(res)
    fails = common.decide(rows, level)
    w = common.worst(rows)
    detectable = [e for e in (common.bias_effect(rows, level, "the kernel estimate"),
                              common.variance_effect(rows, level, "the kernel estimate"))
                  if e is not None]
    errs = list(res.get("errors", []))
    table = ("| configuration / pair | exact mean | sample mean | z | exact var | var ratio | "
             "p (var) |\n|---|---|---|---|---|---|---|\n" + "\n".join(
                 f"| {r['label']} | {r['k']:.4g} | {r['mean']:.4g} | {r['z']:.2f} | "
                 f"{r['v']:.3g} | {r['ratio']:.3f} | {r['p_var']:.2g} |" for r in rows))
    if errs:
        v, summary = "fail", "ERROR in " + "; ".join(errs)
    elif fails:
        v, summary = "fail", "differs from the exact law: " + "; ".join(fails)
    else:
        v = "pass"
        summary = (f"unbiased with the exact variance at all {len(rows)} (configuration, pair) "
                   f"points; worst |z| = {abs(w['worst_z']):.2f} at {w['worst_z_at']}, farthest "
                   f"variance ratio {w['worst_ratio']:.3f} at {w['worst_ratio_at']} (level "
                   f"{level:.1g} per comparison)")
    return dict(verdict=v, statistic=dict(w, failed=fails, per_comparison_level=level,
                                          n_comparisons=2 * len(rows), errors=errs),
                tightness=None, summary=summary, table=table, notes=[],
                detectable=detectable, power=power.statement(detectable))


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect`` through randfeat.PolynomialCountSketch's public fit/transform."""
    import randfeat

    with common.sketch_audit(randfeat.PolynomialCountSketch, effect):
        yield


def plot(res, v):
    fig, (ax, bx) = plots.figure(ncols=2, width=5.2)
    rows = res["rows"]
    zc = stats.z_threshold(v["statistic"]["per_comparison_level"])
    xs = np.arange(len(rows))
    ax.bar(xs, [r["z"] for r in rows], color=[plots.COLORS[i % 10] for i in xs])
    for s in (-1, 1):
        ax.axhline(s * zc, **plots.BOUND_STYLE)
    ax.set_xticks(xs, [r["label"] for r in rows], rotation=80, fontsize=5)
    plots.finish(ax, "", "z of the mean (exact variance)", "mean vs (gamma<x,y> + c0)^p",
                 legend=False)
    ratio = np.array([r["ratio"] for r in rows])
    err = np.array([zc * r["ratio"] * np.sqrt(2.0 / r["nu"]) for r in rows])
    bx.errorbar(xs, ratio, yerr=err, fmt="o", ms=3, capsize=2)
    bx.axhline(1.0, label="exact variance", **plots.BOUND_STYLE)
    bx.set_xticks(xs, [r["label"] for r in rows], rotation=80, fontsize=5)
    plots.finish(bx, "", "sample variance / exact variance (ratio)",
                 f"R = {res['R']} fits per configuration")
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
