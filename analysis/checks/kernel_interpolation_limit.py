"""Random-feature ridge tends to exact kernel ridge / the kernel interpolant as D grows."""

from __future__ import annotations

import math

import numpy as np

from analysis import montecarlo as mc
from analysis import plots, stats

NAME = "kernel_interpolation_limit"
TITLE = "RF ridge -> exact kernel ridge / kernel interpolant as D grows (lambda -> 0 and fixed)"
CLAIM = ("A random-feature regressor is a one-hidden-layer network with a frozen random first "
         "layer; for fixed training data its ridge fit converges, as the number of features D "
         "grows, to kernel ridge regression with the kernel k, and its ridgeless (lambda -> 0) "
         "fit to the kernel interpolant k(x, X) K^{-1} y; the distance between the two "
         "predictors falls like D^{-1/2} in the root-mean-square sense (a Monte Carlo average "
         "of D frequencies inside a smooth map K_D -> predictor).")
SOURCE = ("RR 2007 §3 (z(x)'z(y) -> k); the encyclopedia reading of RF regression as a network "
          "with frozen first layer (issue 15); LITERATURE §B.9; THEORY §2.3 (variance 1/D)")
DESIGN = ("Fixed training data per seed: n = 36 points on a jittered 6 x 6 grid of [0, 1]^2 "
          "(so K is well conditioned), y = sin(2 pi x1) cos(pi x2) + N(0, 0.1^2); 200 uniform "
          "held-out points.  Gaussian kernel sigma = 0.1.  For lambda in {1e-10 (the ridgeless "
          "limit: both systems are solved at a per-sample penalty far below every eigenvalue of "
          "K/n), 1e-3} and each D (paired RandomFourierFeatures, D frequencies), R independently "
          "seeded maps are fitted with randfeat.RandomFeatureRidge(alphas=lambda) and compared "
          "with randfeat.kernel_ridge.ExactKernelRidge(alphas=lambda) (same kernel, sigma, "
          "lambda, intercept): r = RMS over held-out points of (f_D - f) / RMS of (f - mean f). "
          "Statistic per D: root mean square of r over the R maps; its log-log slope on the "
          "upper part of the D grid (D >= fit_from) by weighted least squares, with a standard "
          "error from the replicate spread (delta method).  Verdict: pass when |slope + 1/2| <= "
          "tol + z se for both lambdas (z at the Bonferroni level) and the largest-D distance is "
          "below the smallest-D one.")
COST = 1.5
ALPHA = 1e-4
POWER = 0.9
BW_GRID = (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0)
TOL = 0.15  # allowed departure of the finite-D slope from the asymptotic -1/2 (model slack)
SIGMA = 0.1

PARAMS = {
    "smoke": dict(grid=4, sizes=[32, 64, 128], R=3, lambdas=[1e-10, 1e-3], fit_from=32,
                  n_test=100),
    "quick": dict(grid=6, sizes=[32, 64, 128, 256, 512], R=12, lambdas=[1e-10, 1e-3],
                  fit_from=64, n_test=200),
    "full": dict(grid=6, sizes=[32, 64, 128, 256, 512, 1024, 2048], R=30,
                 lambdas=[1e-10, 1e-6, 1e-3], fit_from=128, n_test=500),
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


def run(params, seed, progress=None):
    from randfeat.kernel_ridge import ExactKernelRidge
    from randfeat.linear import RandomFeatureRidge

    data_ss = mc.seed_sequences(seed, NAME, "data", n=1)[0]
    X, y, Xt = make_data(params["grid"], params["n_test"], np.random.default_rng(data_ss))
    out = []
    for lam in params["lambdas"]:
        f = ExactKernelRidge("gaussian", sigma=SIGMA, alphas=lam, alpha_scale="mean").fit(
            X, y).predict(Xt)
        scale = float(np.sqrt(np.mean((f - f.mean()) ** 2)))
        # the limit a map with a wrong bandwidth converges to: exact ridge at sigma (1 + e) or
        # sigma / (1 + e); its distance to f (the smaller of the two) is the bias floor such a
        # map leaves (for the power statement)
        bw = [min(float(np.sqrt(np.mean((ExactKernelRidge("gaussian", sigma=SIGMA * c,
                                                            alphas=lam, alpha_scale="mean")
                                           .fit(X, y).predict(Xt)
                                         - f) ** 2))) / scale for c in (1 + e, 1 / (1 + e)))
              for e in BW_GRID]
        per = []
        for D in params["sizes"]:
            r = []
            for ss in mc.seed_sequences(seed, NAME, D, n=params["R"]):
                rf = RandomFeatureRidge(build_map(D, mc.random_state_of(ss)), alphas=lam,
                                        alpha_scale="mean", n_threads=1).fit(X, y)
                r.append(float(np.sqrt(np.mean((rf.predict(Xt) - f) ** 2))) / scale)
                if progress is not None:
                    progress.tick()
            per.append(dict(D=D, r=r))
        out.append(dict(lam=lam, scale=scale, sizes=per, bw_eps=list(BW_GRID), bw_dist=bw))
    return dict(n=len(X), sigma=SIGMA, fit_from=params["fit_from"], R=params["R"], runs=out)


def slope_fit(sizes, fit_from, floor=0.0):
    """Weighted log-log fit of rms(r) on D over D >= fit_from.  Var(log mean r^2) ~ var(r^2) /
    (R mean(r^2)^2) (delta method); slope of log rms = half the slope of log mean r^2.
    ``floor``: a squared bias added to every mean r^2 with the same weights (what a map that
    converges to a predictor at relative distance sqrt(floor) from the exact one would show; used
    for the power statement)."""
    Ds = np.array([s["D"] for s in sizes], float)
    r2 = [np.asarray(s["r"], float) ** 2 for s in sizes]
    m = np.array([v.mean() for v in r2]) + floor
    v = np.array([v.var(ddof=1) / (len(v) * (v.mean() + floor) ** 2) for v in r2])
    sel = Ds >= fit_from
    x, yv, w = np.log(Ds[sel]), np.log(m[sel]), 1.0 / np.maximum(v[sel], 1e-12)
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    b = np.sum(w * (x - xm) * (yv - np.sum(w * yv) / np.sum(w))) / sxx
    a = np.sum(w * yv) / np.sum(w) - b * xm
    se = math.sqrt(1.0 / sxx)
    return dict(slope=0.5 * b, se=0.5 * se, intercept=0.5 * a, rms=np.sqrt(m).tolist())


def detectable(run_, fit_from, z):
    """Power of the verdict for one lambda (probability >= POWER at the check's level).

    slope: a true slope off -1/2 by TOL + (z + z_POWER) se is rejected with probability
    >= POWER (normal approximation of the fitted slope, se of the design);
    bias: the smallest relative distance b between the exact predictor and the predictor the
    map converges to (a wrong kernel) whose floor b^2 added to the measured mean r^2 bends the
    fitted slope that far (weights recomputed; bisection);
    bandwidth: the smallest relative bandwidth error whose exact-ridge limit is b away from f
    (interpolated on BW_GRID, either direction), None if beyond the grid."""
    from scipy.stats import norm

    fit = slope_fit(run_["sizes"], fit_from)
    dev = TOL + (z + float(norm.ppf(POWER))) * fit["se"]

    def excess(b):
        return slope_fit(run_["sizes"], fit_from, floor=b * b)["slope"] + 0.5 - dev

    lo, hi = 0.0, 10.0
    if excess(hi) < 0:
        b = float("inf")
    else:
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
        b = hi
    eps = None
    dist = np.asarray(run_.get("bw_dist", []), float)
    if len(dist) and np.any(dist >= b):
        i = int(np.nonzero(dist >= b)[0][0])
        E = np.asarray(run_["bw_eps"], float)
        if i == 0:
            eps = float(E[0])
        else:  # linear interpolation in (log eps, log dist)
            t = (math.log(b) - math.log(dist[i - 1])) / (math.log(dist[i]) - math.log(dist[i - 1]))
            eps = float(math.exp(math.log(E[i - 1]) + t * (math.log(E[i]) - math.log(E[i - 1]))))
    return dict(slope_dev=dev, bias=b, bandwidth=eps)


def verdict(res):
    runs = res["runs"]
    level = stats.bonferroni(ALPHA, len(runs))
    z = stats.z_threshold(level)
    rows, fails = [], []
    for run_ in runs:
        fit = slope_fit(run_["sizes"], res["fit_from"])
        ok_slope = abs(fit["slope"] + 0.5) <= TOL + z * fit["se"]
        ok_dec = fit["rms"][-1] < fit["rms"][0]
        ok = ok_slope and ok_dec
        if not ok:
            fails.append(f"lambda={run_['lam']:g}: slope {fit['slope']:.3f} ± {fit['se']:.3f}"
                         + ("" if ok_dec else ", not decreasing"))
        lo, hi = fit["slope"] - z * fit["se"], fit["slope"] + z * fit["se"]
        rows.append(dict(lam=run_["lam"], slope=fit["slope"], se=fit["se"], lo=lo, hi=hi,
                         rms_first=fit["rms"][0], rms_last=fit["rms"][-1], ok=ok,
                         det=detectable(run_, res["fit_from"], z)))
    sizes = [s["D"] for s in runs[0]["sizes"]]

    def bw_txt(e):
        return f"{100 * e:.0f}%" if e is not None else f"> {100 * BW_GRID[-1]:.0f}%"

    power = "; ".join(
        f"lambda={r['lam']:g}: slope off -1/2 by {r['det']['slope_dev']:.2f}, or a limit at "
        f"relative distance {r['det']['bias']:.3f} from exact ridge "
        f"({r['det']['bias'] / r['rms_last']:.1f}x the distance at D={sizes[-1]}; a bandwidth "
        f"error of {bw_txt(r['det']['bandwidth'])})" for r in rows) + (
        f" (probability >= {POWER} at the per-comparison level {level:.1e}; slope: normal "
        "approximation with the design's se; distance: a squared bias added to the measured "
        "mean r^2, slope refitted)")
    table = ("| lambda | rel. RMS distance at D=" + f"{sizes[0]} | at D={sizes[-1]} | slope "
             f"(D >= {res['fit_from']}) ± se | {1 - level:.6f} interval | verdict |\n"
             "|---|---|---|---|---|---|\n"
             + "\n".join(f"| {r['lam']:g} | {r['rms_first']:.4f} | {r['rms_last']:.4f} | "
                         f"{r['slope']:.3f} ± {r['se']:.3f} | [{r['lo']:.3f}, {r['hi']:.3f}] | "
                         f"{'ok' if r['ok'] else 'FAIL'} |" for r in rows))
    summ = ("RF ridge -> exact ridge at slope "
            + ", ".join(f"{r['slope']:.2f} ± {r['se']:.2f} (lambda={r['lam']:g})" for r in rows)
            + " (expected -1/2)") if not fails else f"violations: {fails}"
    notes = [f"Distances relative to the RMS spread of the exact predictor on the held-out "
             f"points; n = {res['n']} training points, sigma = {res['sigma']}, R = {res['R']} "
             "maps per D.",
             "lambda = 1e-10 stands for the ridgeless limit: RandomFeatureRidge needs alpha > 0; "
             "with more columns than rows its solution is then the minimum-norm interpolant to "
             "round-off, and ExactKernelRidge's is the kernel interpolant.",
             f"Tolerance on the slope: +-{TOL} (finite-D curvature) plus z = {z:.2f} standard "
             "errors."]
    return dict(verdict="fail" if fails else "pass",
                statistic={"slopes": {str(r["lam"]): float(r["slope"]) for r in rows},
                           "slope_se": {str(r["lam"]): r["se"] for r in rows},
                           "rms_last": {str(r["lam"]): float(r["rms_last"]) for r in rows},
                           "detectable_slope_dev": {str(r["lam"]): r["det"]["slope_dev"]
                                                    for r in rows},
                           "detectable_distance": {str(r["lam"]): r["det"]["bias"] for r in rows},
                           "detectable_bandwidth_error": {str(r["lam"]): r["det"]["bandwidth"]
                                                          for r in rows},
                           "per_comparison_level": level, "failed": fails},
                tightness=None, summary=summ, table=table, notes=notes, power=power)


def plot(res, v=None):
    v = verdict(res) if v is None else v
    fig, axes = plots.figure(ncols=1, width=6.0)
    ax = axes[0]
    for i, run_ in enumerate(res["runs"]):
        c = plots.COLORS[i % len(plots.COLORS)]
        Ds = np.array([s["D"] for s in run_["sizes"]], float)
        r = np.array([s["r"] for s in run_["sizes"]])
        fit = slope_fit(run_["sizes"], res["fit_from"])
        ax.plot(Ds, fit["rms"], "o-", color=c,
                label=f"lambda={run_['lam']:g}: slope {fit['slope']:.2f} ± {fit['se']:.2f}")
        plots.band(ax, Ds, np.quantile(r, 0.1, axis=1), np.quantile(r, 0.9, axis=1), c)
        ax.plot(Ds, np.exp(fit["intercept"]) * Ds ** -0.5, ":", color=c, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots.finish(ax, "D (frequencies of the paired map; 2D features)",
                 "RMS_test(f_D - f_exact) / RMS(f_exact)",
                 "RF ridge vs exact kernel ridge on held-out points (band: 10-90% over maps; "
                 "dotted: D^-1/2)", fontsize=7)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
