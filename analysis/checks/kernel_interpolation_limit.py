"""Random-feature ridge tends to exact kernel ridge / the kernel interpolant as D grows."""

from __future__ import annotations

import contextlib
import math
import sys
from unittest import mock

import numpy as np

from analysis import montecarlo as mc
from analysis import plots, power, stats

NAME = "kernel_interpolation_limit"
TITLE = "RF ridge -> exact kernel ridge / kernel interpolant as D grows (lambda -> 0 and fixed)"
CLAIM = ("A random-feature regressor is a one-hidden-layer network with a frozen random first "
         "layer; for fixed training data its ridge fit converges, as the number of features D "
         "grows, to kernel ridge regression with the kernel k, and its ridgeless (lambda -> 0) "
         "fit to the kernel interpolant k(x, X) K^{-1} y; the distance between the two "
         "predictors falls like D^{-1/2} in the root-mean-square sense (a Monte Carlo average "
         "of D frequencies inside a smooth map K_D -> predictor).")
SOURCE = ("RR 2007 §3 (z(x)'z(y) -> k); the encyclopedia reading of RF regression as a network "
          "with frozen first layer; Rudi & Rosasco, NIPS 2017; THEORY §2.3 (variance 1/D)")
DESIGN = ("Fixed training data per seed: n = 36 points on a jittered 6 x 6 grid of [0, 1]^2 "
          "(so K is well conditioned), y = sin(2 pi x1) cos(pi x2) + N(0, 0.1^2); 200 uniform "
          "held-out points.  Gaussian kernel sigma = 0.1.  For lambda in {1e-10 (the ridgeless "
          "limit: both systems are solved at a per-sample penalty far below every eigenvalue of "
          "K/n), 1e-3} and each D (paired RandomFourierFeatures, D frequencies), R independently "
          "seeded maps are fitted with randfeat.RandomFeatureRidge(alphas=lambda, "
          "alpha_scale='mean') and compared with the exact target f = "
          "randfeat.ExactKernelRidge(alphas=lambda) (same kernel, sigma, lambda, intercept; "
          "exact_predictor): d = f_D - f on the held-out points.  (1) Rate: r = RMS(d) / RMS(f "
          "- mean f); log-log slope of the root mean square of r on D (D >= fit_from) by "
          "weighted least squares, se from the replicate spread (delta method); pass when "
          "|slope + 1/2| <= tol + z se and the largest-D distance is below the smallest-D one.  "
          "(2) Exact limit, in the directions a kernel or penalty error moves the predictor: "
          "g_sigma = d f / d log sigma and g_lambda = d f / d log lambda (central differences "
          "of the exact ridge, h = 1 %), t = <d, g> / |g| per map.  As D grows, E t = b + c/D + "
          "O(D^-2) (c/D: the ridge map's own curvature; b = 0 exactly when f_D converges to f) "
          "and Var t is proportional to 1/D (an average of D iid frequencies); b is estimated by "
          "weighted least squares of t on 1/D over D >= bias_from with the pooled variance, and "
          "the verdict fails when |b| > t_q se (Student t, Bonferroni over every test).  A "
          "bandwidth error e of the target or of the map gives b = <f_sigma(1+e) - f, g> / |g|, "
          "computed exactly from exact ridge fits (the power statement); lambda = 1e-10 has no "
          "penalty direction (the interpolant does not depend on lambda).")
COST = 3
ALPHA = 1e-4
POWER = 0.9
BW_GRID = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0)
PEN_GRID = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 2.0, 3.0, 5.0, 9.0)
TOL = 0.15  # allowed departure of the finite-D slope from the asymptotic -1/2 (model slack)
SIGMA = 0.1
H = 0.01  # relative step of the central differences of the exact predictor
PENALTY_FROM = 1e-6  # lambdas below this have no penalty direction (ridgeless: f independent)

PARAMS = {
    "smoke": dict(grid=4, sizes=[32, 64, 128], R=4, lambdas=[1e-10, 1e-3], fit_from=32,
                  bias_from=32, n_test=100),
    "quick": dict(grid=6, sizes=[32, 64, 128, 256, 512], R=40, lambdas=[1e-10, 1e-3],
                  fit_from=64, bias_from=128, n_test=200),
    "full": dict(grid=6, sizes=[32, 64, 128, 256, 512, 1024, 2048], R=40,
                 lambdas=[1e-10, 1e-6, 1e-3], fit_from=128, bias_from=256, n_test=500),
}


def make_data(grid, n_test, rng):
    """Jittered grid of [0, 1]^2 (training) and uniform held-out points."""
    G = np.stack(np.meshgrid(np.arange(grid), np.arange(grid)), -1).reshape(-1, 2)
    X = (G + 0.5 + rng.uniform(-0.2, 0.2, size=G.shape)) / grid
    y = np.sin(2 * np.pi * X[:, 0]) * np.cos(np.pi * X[:, 1]) + 0.1 * rng.standard_normal(len(X))
    return X, y, rng.uniform(size=(n_test, 2))


def build_map(D, random_state):
    """The random-feature map under test (a hook: the tests break it on purpose)."""
    import randfeat

    return randfeat.RandomFourierFeatures(2 * D, kernel="gaussian", sigma=SIGMA,
                                          random_state=random_state, n_threads=1)


def exact_predictor(X, y, Xt, sigma, lam):
    """The exact target: randfeat.ExactKernelRidge (Gaussian kernel, ``sigma``, per-sample
    penalty ``lam``, intercept) fitted on (X, y), predicted at Xt.  The public seam of the
    audit (a target with a wrong bandwidth or penalty)."""
    import randfeat

    return randfeat.ExactKernelRidge("gaussian", sigma=sigma, alphas=lam,
                                     alpha_scale="mean").fit(X, y).predict(Xt)


def rf_predictor(D, random_state, lam, X, y, Xt):
    """Random-feature ridge through the public learner: RandomFeatureRidge on ``build_map(D,
    random_state)``, per-sample penalty ``lam`` (alpha_scale="mean"), predicted at Xt."""
    import randfeat

    model = randfeat.RandomFeatureRidge(build_map(D, random_state), alphas=lam,
                                        alpha_scale="mean", n_threads=1, gram_dtype="float64")
    return model.fit(X, y).predict(Xt)


def _direction(fp, fm):
    g = (np.asarray(fp) - np.asarray(fm)) / (2 * math.log1p(H))
    n = float(np.linalg.norm(g))
    return g / n, n


def run(params, seed, progress=None):
    data_ss = mc.seed_sequences(seed, NAME, "data", n=1)[0]
    X, y, Xt = make_data(params["grid"], params["n_test"], np.random.default_rng(data_ss))
    out = []
    for lam in params["lambdas"]:
        f = exact_predictor(X, y, Xt, SIGMA, lam)
        scale = float(np.sqrt(np.mean((f - f.mean()) ** 2)))
        # directions of the exact predictor's derivatives in log sigma and log lambda
        g_bw, n_bw = _direction(exact_predictor(X, y, Xt, SIGMA * (1 + H), lam),
                                exact_predictor(X, y, Xt, SIGMA / (1 + H), lam))
        dirs = {"bandwidth": g_bw}
        norms = {"bandwidth": n_bw}
        if lam >= PENALTY_FROM:
            dirs["penalty"], norms["penalty"] = _direction(
                exact_predictor(X, y, Xt, SIGMA, lam * (1 + H)),
                exact_predictor(X, y, Xt, SIGMA, lam / (1 + H)))
        # the limits a map (or target) with a bandwidth / penalty error e converges to: their
        # projections b(e) on the directions (exact ridge fits; for the power statement), the
        # two signs of e, and the relative distance (context)
        shifts = {}
        for kind, g in dirs.items():
            rows = []
            for e in (BW_GRID if kind == "bandwidth" else PEN_GRID):
                b = []
                for c in (1 + e, 1 / (1 + e)):
                    fe = (exact_predictor(X, y, Xt, SIGMA * c, lam) if kind == "bandwidth"
                          else exact_predictor(X, y, Xt, SIGMA, lam * c))
                    b.append(float((fe - f) @ g))
                rows.append(b)
            shifts[kind] = rows
        per = []
        for D in params["sizes"]:
            preds = []
            for rs in mc.random_states(mc.seed_sequences(seed, NAME, D, n=params["R"])):
                preds.append(rf_predictor(D, rs, lam, X, y, Xt))
                if progress is not None:
                    progress.tick()
            preds = np.asarray(preds)
            mc.check_not_degenerate(preds, f"RF ridge predictors (D = {D}, lambda = {lam:g})")
            d = preds - f
            per.append(dict(D=D, r=(np.sqrt(np.mean(d ** 2, axis=1)) / scale).tolist(),
                            t={k: (d @ g).tolist() for k, g in dirs.items()}))
        out.append(dict(lam=lam, scale=scale, sizes=per, shifts=shifts, dir_norm=norms,
                        grid={"bandwidth": list(BW_GRID), "penalty": list(PEN_GRID)}))
    return dict(n=len(X), n_test=len(Xt), sigma=SIGMA, fit_from=params["fit_from"],
                bias_from=params["bias_from"], R=params["R"], runs=out)


def slope_fit(sizes, fit_from):
    """Weighted log-log fit of rms(r) on D over D >= fit_from.  Var(log mean r^2) ~ var(r^2) /
    (R mean(r^2)^2) (delta method); slope of log rms = half the slope of log mean r^2."""
    Ds = np.array([s["D"] for s in sizes], float)
    r2 = [np.asarray(s["r"], float) ** 2 for s in sizes]
    m = np.array([v.mean() for v in r2])
    v = np.array([v.var(ddof=1) / (len(v) * v.mean() ** 2) for v in r2])
    sel = Ds >= fit_from
    x, yv, w = np.log(Ds[sel]), np.log(m[sel]), 1.0 / np.maximum(v[sel], 1e-12)
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    b = np.sum(w * (x - xm) * (yv - np.sum(w * yv) / np.sum(w))) / sxx
    a = np.sum(w * yv) / np.sum(w) - b * xm
    se = math.sqrt(1.0 / sxx)
    return dict(slope=0.5 * b, se=0.5 * se, intercept=0.5 * a, rms=np.sqrt(m).tolist())


def limit_fit(sizes, kind, bias_from):
    """The limit b of E t = b + c / D (weighted least squares over D >= bias_from, weights D:
    Var t = s^2 / D, s^2 pooled over the D with dof sum (R - 1)); returns dict(b, se, c, dof,
    s2, means)."""
    Ds = np.array([s["D"] for s in sizes if s["D"] >= bias_from], float)
    T = [np.asarray(s["t"][kind], float) for s in sizes if s["D"] >= bias_from]
    dof = sum(len(t) - 1 for t in T)
    s2 = sum(D * float(((t - t.mean()) ** 2).sum()) for D, t in zip(Ds, T, strict=True)) / dof
    x = np.concatenate([np.full(len(t), 1.0 / D) for D, t in zip(Ds, T, strict=True)])
    w = np.concatenate([np.full(len(t), D) for D, t in zip(Ds, T, strict=True)])
    yv = np.concatenate(T)
    A = np.vstack([np.ones_like(x), x]).T
    M = A.T @ (w[:, None] * A)
    coef = np.linalg.solve(M, A.T @ (w * yv))
    cov = s2 * np.linalg.inv(M)
    return dict(b=float(coef[0]), c=float(coef[1]), se=float(math.sqrt(cov[0, 0])), dof=int(dof),
                s2=float(s2), D=Ds.tolist(), means=[float(t.mean()) for t in T])


def detectable_error(run_, kind, need):
    """Smallest relative error e (either sign: the harder of sigma (1 + e) and sigma / (1 + e),
    or the same for lambda) whose exact limit shift |b(e)| reaches ``need``; interpolated in
    (log e, log |b|) on the run's grid of errors (BW_GRID, PEN_GRID), None beyond it."""
    E = np.asarray(run_["grid"][kind], float)
    b = np.min(np.abs(np.asarray(run_["shifts"][kind], float)), axis=1)
    hit = np.nonzero(b >= need)[0]
    if not len(hit):
        return None
    i = int(hit[0])
    if i == 0:
        return float(E[0])
    t = (math.log(need) - math.log(b[i - 1])) / (math.log(b[i]) - math.log(b[i - 1]))
    return float(math.exp(math.log(E[i - 1]) + t * (math.log(E[i]) - math.log(E[i - 1]))))


def _n_tests(res):
    return sum(1 + len(r["sizes"][0]["t"]) for r in res["runs"])


def analyse(res):
    from scipy import stats as st

    runs = res["runs"]
    level = stats.bonferroni(ALPHA, _n_tests(res))
    z = stats.z_threshold(level)
    rows, fails = [], []
    for run_ in runs:
        fit = slope_fit(run_["sizes"], res["fit_from"])
        ok_slope = abs(fit["slope"] + 0.5) <= TOL + z * fit["se"]
        ok_dec = fit["rms"][-1] < fit["rms"][0]
        if not (ok_slope and ok_dec):
            fails.append(f"lambda={run_['lam']:g}: slope {fit['slope']:.3f} ± {fit['se']:.3f}"
                         + ("" if ok_dec else ", not decreasing"))
        lim = {}
        for kind in run_["sizes"][0]["t"]:
            L = limit_fit(run_["sizes"], kind, res["bias_from"])
            tq = float(st.t.isf(level / 2, L["dof"]))
            t90 = float(st.t.isf(1 - POWER, L["dof"]))
            L["tq"] = tq
            L["ok"] = abs(L["b"]) <= tq * L["se"]
            L["need"] = (tq + t90) * L["se"]
            L["det"] = detectable_error(run_, kind, L["need"])
            # relative to the predictor's spread: b / (sqrt(n_test) RMS(f - mean f))
            L["b_rel"] = L["b"] / (math.sqrt(res["n_test"]) * run_["scale"])
            if not L["ok"]:
                fails.append(f"lambda={run_['lam']:g}: RF ridge converges off the exact target "
                             f"in the {kind} direction (limit {L['b']:.4f} ± {L['se']:.4f}, "
                             f"|z| {abs(L['b']) / L['se']:.1f} > {tq:.2f})")
            lim[kind] = L
        rows.append(dict(lam=run_["lam"], slope=fit["slope"], se=fit["se"],
                         lo=fit["slope"] - z * fit["se"], hi=fit["slope"] + z * fit["se"],
                         rms_first=fit["rms"][0], rms_last=fit["rms"][-1],
                         ok=ok_slope and ok_dec, lim=lim))
    # detectable: per kind, the smallest stated error over the lambdas (the audit injects it
    # into the target at every lambda)
    det = []
    for kind, label in (("bandwidth", "bandwidth error of the exact target (or of the map)"),
                        ("penalty", "penalty error of the exact target (or of the learner)")):
        cands = [(r["lim"][kind]["det"], r["lam"]) for r in rows
                 if kind in r["lim"] and r["lim"][kind]["det"] is not None]
        if cands:
            e, _ = min(cands)
            lams = ", ".join(f"{r['lam']:g}" for r in rows if kind in r["lim"])
            det.append(power.effect(label, e, "relative",
                                    where=f"the smaller over lambda in {{{lams}}}, D >= "
                                          f"{res['bias_from']}"))
    return dict(rows=rows, fails=fails, level=level, z=z, detectable=det)


def verdict(res):
    A = analyse(res)
    rows, fails, level = A["rows"], A["fails"], A["level"]
    sizes = [s["D"] for s in res["runs"][0]["sizes"]]
    table = ("| lambda | rel. RMS distance at D=" + f"{sizes[0]} | at D={sizes[-1]} | slope "
             f"(D >= {res['fit_from']}) ± se | {1 - level:.6f} interval | limit off f along "
             "d f/d log sigma (± se) | along d f/d log lambda | verdict |\n"
             "|---|---|---|---|---|---|---|---|\n"
             + "\n".join(
                 f"| {r['lam']:g} | {r['rms_first']:.4f} | {r['rms_last']:.4f} | "
                 f"{r['slope']:.3f} ± {r['se']:.3f} | [{r['lo']:.3f}, {r['hi']:.3f}] | "
                 + " | ".join(
                     (f"{r['lim'][k]['b']:.4f} ± {r['lim'][k]['se']:.4f} (|z| "
                      f"{abs(r['lim'][k]['b']) / r['lim'][k]['se']:.1f})" if k in r["lim"]
                      else "-") for k in ("bandwidth", "penalty"))
                 + f" | {'ok' if r['ok'] and all(L['ok'] for L in r['lim'].values()) else 'FAIL'}"
                 " |" for r in rows))
    summ = ("RF ridge -> exact ridge at slope "
            + ", ".join(f"{r['slope']:.2f} ± {r['se']:.2f} (lambda={r['lam']:g})" for r in rows)
            + " (expected -1/2); limit on the exact target (largest |z| "
            + f"{max(abs(L['b']) / L['se'] for r in rows for L in r['lim'].values()):.1f}, "
            + max(((abs(L['b']) / L['se'], f"{k} direction, lambda={r['lam']:g}")
                   for r in rows for k, L in r["lim"].items()))[1] + ")"
            ) if not fails else f"violations: {fails}"
    notes = [f"Distances relative to the RMS spread of the exact predictor on the held-out "
             f"points; n = {res['n']} training points, sigma = {res['sigma']}, R = {res['R']} "
             "maps per D.",
             "lambda = 1e-10 stands for the ridgeless limit: RandomFeatureRidge needs alpha > 0; "
             "with more columns than rows its solution is then the minimum-norm interpolant to "
             "round-off, and ExactKernelRidge's is the kernel interpolant.",
             f"Tolerance on the slope: +-{TOL} (finite-D curvature) plus z = {A['z']:.2f} "
             "standard errors.",
             "Limit test: t = <f_D - f, g>/|g| per map, E t = b + c/D fitted over D >= "
             f"{res['bias_from']}; c/D is the ridge map's own O(1/D) bias (measured c: "
             + ", ".join(f"{L['c']:.3g} ({k}, lambda={r['lam']:g})" for r in rows
                         for k, L in r["lim"].items()) + ")."]
    det = A["detectable"]
    return dict(verdict="fail" if fails else "pass",
                statistic={"slopes": {str(r["lam"]): float(r["slope"]) for r in rows},
                           "slope_se": {str(r["lam"]): r["se"] for r in rows},
                           "rms_last": {str(r["lam"]): float(r["rms_last"]) for r in rows},
                           "limit_z": {f"{k} {r['lam']:g}": L["b"] / L["se"]
                                       for r in rows for k, L in r["lim"].items()},
                           "detectable_error": {f"{k} {r['lam']:g}": L["det"]
                                                for r in rows for k, L in r["lim"].items()},
                           "per_comparison_level": level, "failed": fails},
                tightness=None, summary=summ, table=table, notes=notes, detectable=det,
                power=power.statement(det))


@contextlib.contextmanager
def audit(effect):
    """A target with a bandwidth (or penalty) error of exactly ``effect["size"]``: the exact
    predictor fitted with sigma (1 + e) (or lambda (1 + e)) while the random-feature ridge keeps
    sigma (seam: ``exact_predictor``)."""
    real = exact_predictor
    e = float(effect["size"])
    if effect["effect"].startswith("bandwidth"):
        def wrong(X, y, Xt, sigma, lam):
            return real(X, y, Xt, sigma * (1 + e), lam)
    elif effect["effect"].startswith("penalty"):
        def wrong(X, y, Xt, sigma, lam):
            return real(X, y, Xt, sigma, lam * (1 + e))
    else:
        raise ValueError(f"{NAME}.audit: unknown effect {effect['effect']!r}")
    with mock.patch.object(sys.modules[__name__], "exact_predictor", wrong):
        yield


def plot(res, v=None):
    v = verdict(res) if v is None else v
    A = analyse(res)
    fig, axes = plots.figure(ncols=2, width=5.0)
    ax, bx = axes
    for i, run_ in enumerate(res["runs"]):
        c = plots.COLORS[i % len(plots.COLORS)]
        Ds = np.array([s["D"] for s in run_["sizes"]], float)
        r = np.array([s["r"] for s in run_["sizes"]])
        fit = slope_fit(run_["sizes"], res["fit_from"])
        ax.plot(Ds, fit["rms"], "o-", color=c,
                label=f"lambda={run_['lam']:g}: slope {fit['slope']:.2f} ± {fit['se']:.2f}")
        plots.band(ax, Ds, np.quantile(r, 0.1, axis=1), np.quantile(r, 0.9, axis=1), c)
        ax.plot(Ds, np.exp(fit["intercept"]) * Ds ** -0.5, ":", color=c, lw=1)
        for j, (kind, L) in enumerate(A["rows"][i]["lim"].items()):
            cc = plots.COLORS[(2 * i + j + 2) % len(plots.COLORS)]
            T = np.array([s["t"][kind] for s in run_["sizes"]])
            sd = T.std(axis=1, ddof=1) / math.sqrt(T.shape[1])
            bx.errorbar(1.0 / Ds, T.mean(axis=1), yerr=2 * sd, fmt="o", color=cc, ms=3,
                        label=f"{kind}, lambda={run_['lam']:g}: limit {L['b']:.3f} ± "
                              f"{L['se']:.3f}")
            xx = np.linspace(0, 1.0 / res["bias_from"], 20)
            bx.plot(xx, L["b"] + L["c"] * xx, "-", color=cc, lw=1)
    bx.axhline(0, **plots.BOUND_STYLE)
    for e in A["detectable"]:
        if e["effect"].startswith("bandwidth"):
            need = min(r["lim"]["bandwidth"]["need"] for r in A["rows"])
            bx.axhspan(-need, need, color="0.85", zorder=0,
                       label=f"detection limit (a {100 * e['size']:.2g}% bandwidth error)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots.finish(ax, "D (frequencies of the paired map; 2D features)",
                 "RMS_test(f_D - f_exact) / RMS(f_exact)",
                 "RF ridge vs exact kernel ridge on held-out points (band: 10-90% over maps; "
                 "dotted: D^-1/2)", fontsize=6)
    plots.finish(bx, "1 / D", "t = <f_D - f, g> / |g| (mean ± 2 se over maps)",
                 "limit along d f / d log sigma, d f / d log lambda (line: b + c/D)", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
