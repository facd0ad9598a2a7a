"""Yang, Li, Mahdavi, Jin & Zhou (NIPS 2012): with a large eigengap the Nystrom method's excess
error decays like 1/m, against 1/sqrt(m) for random Fourier features."""

from __future__ import annotations

import math

import numpy as np

from analysis import learning_curve as lc
from analysis import montecarlo as mc
from analysis import plots, power, stats

NAME = "nystrom_vs_rff"
TITLE = ("Nystrom vs RFF: with an eigengap Nystrom's predictor error falls at least like 1/m, "
         "RFF's like 1/sqrt(m)")
CLAIM = ("Yang, Li, Mahdavi, Jin & Zhou (NIPS 2012, Thms 1-2): the error of ridge regression on m "
         "random Fourier features relative to exact kernel ridge falls like 1/sqrt(m) (a Monte "
         "Carlo average of m frequencies), while with a large gap in the kernel's eigenvalues the "
         "Nystrom method with m landmarks reaches O(1/m); without a gap Nystrom's guarantee is "
         "also of order 1/sqrt(m).")
SOURCE = ("Yang, Li, Mahdavi, Jin & Zhou, 'Nystrom Method vs Random Fourier Features: A "
          "Theoretical and Empirical Comparison', NIPS 2012; docs/theory/learning_curve.md; issue "
          "33")
DESIGN = ("Gaussian kernel sigma = 1, n training and 200 test points in d = 3, y = sin 2x_1 + cos "
          "x_2 + x_3 + N(0, 0.1^2): 'gap' = 8 Gaussian clusters (spread 0.3) at the corners of "
          "[-4, 4]^3 (8 large eigenvalues, then a drop by an order of magnitude), 'no gap' = "
          "uniform in [-1, 1]^3 with sigma = 0.3 (a smooth decay).  For each m, R independently "
          "seeded randfeat.RandomFeatureRidge(map, alphas=1e-3, alpha_scale='mean') with map = "
          "randfeat.RandomFourierFeatures(m) or randfeat.Nystroem(m) against "
          "randfeat.ExactKernelRidge(alphas=1e-3, alpha_scale='mean'): r = RMS over the test "
          "points of (f_m - f) / RMS(f - mean f).  Rate: weighted least-squares slope of log mean "
          "r^2 / 2 on log m (delta-method se from the replicates).  Verdict (Bonferroni): RFF "
          "slope within [-0.5 - 0.35, -0.5 + 0.15] + z se on both data (the Monte Carlo law, "
          "steeper before its asymptote); Nystrom with the gap at most -1 + z se (at least 1/m) "
          "and below the RFF slope by 0.5 or more; the no-gap Nystrom slope is reported (context)."
          "  Skipped when randfeat has no Nystroem.")
COST = 1.5
ALPHA = 1e-3
LAM = 1e-3
RFF_SLOPE = (-0.85, -0.35)
FLOOR_SAFETY = 1.5
BW_GRID = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)

PARAMS = {
    "smoke": dict(n=200, rff_ms=[32, 64, 128, 256], nys_ms=[16, 32, 64, 128], R=3),
    "quick": dict(n=400, rff_ms=[32, 64, 128, 256, 512], nys_ms=[16, 32, 64, 128, 256], R=6),
    "full": dict(n=800, rff_ms=[32, 64, 128, 256, 512, 1024, 2048],
                 nys_ms=[16, 32, 64, 128, 256, 512], R=20),
}
N_TEST = 200


def make_data(name, n, rng):
    """``(X, y, Xt, sigma)`` (a seam; see DESIGN)."""
    d = 3
    m = n + N_TEST
    if name == "gap":  # 8 clusters at the corners of [-4, 4]^3 (8 sigma apart)
        C = 4.0 * np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], float)
        X = C[rng.integers(0, len(C), m)] + 0.3 * rng.standard_normal((m, d))
        sigma = 1.0
    else:
        X = rng.uniform(-1.0, 1.0, (m, d))
        sigma = 0.3
    y = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + X[:, 2] + 0.1 * rng.standard_normal(m)
    return X[:n], y[:n], X[n:], sigma


def build_map(method, m, sigma, random_state):
    """The maps under test (randfeat's public classes)."""
    import randfeat

    if method == "rff":
        return randfeat.RandomFourierFeatures(m, kernel="gaussian", sigma=sigma,
                                              random_state=random_state, n_threads=1)
    return randfeat.Nystroem(m, kernel="gaussian", sigma=sigma, random_state=random_state,
                             n_threads=1)


def run(params, seed, progress=None):
    import randfeat

    n, R = params["n"], params["R"]
    out = dict(n=n, R=R, lam=LAM, parts=[], skipped=[], errors=[])
    methods = ["rff", "nys"]
    if not hasattr(randfeat, "Nystroem"):
        out["skipped"].append("randfeat.Nystroem is not available in this randfeat (the Nystrom "
                              "part needs it)")
        methods = ["rff"]
    for name in ("gap", "no gap"):
        rng = np.random.default_rng(mc.seed_sequences(seed, NAME, name, "data", n=1)[0])
        X, y, Xt, sigma = make_data(name, n, rng)
        f = randfeat.ExactKernelRidge("gaussian", sigma=sigma, alphas=LAM,
                                      alpha_scale="mean").fit(X, y).predict(Xt)
        scale = float(np.sqrt(np.mean((f - f.mean()) ** 2)))
        # the limit of a map with a bandwidth error e: exact ridge at sigma / (1 + e)
        bw = [float(np.sqrt(np.mean((randfeat.ExactKernelRidge(
            "gaussian", sigma=sigma / (1 + e), alphas=LAM, alpha_scale="mean").fit(X, y)
            .predict(Xt) - f) ** 2))) / scale for e in BW_GRID]
        eig = np.sort(np.linalg.eigvalsh(randfeat.kernels.GaussianKernel(sigma)(X)))[::-1]
        part = dict(dataset=name, sigma=sigma, eig=eig[:40].tolist(), bw=bw, methods={})
        for meth in methods:
            ms = params["rff_ms" if meth == "rff" else "nys_ms"]
            rows = []
            for m in ms:
                seeds = mc.seed_sequences(seed, NAME, name, meth, m, n=R)

                def one(rs, m=m, meth=meth, ctx=(X, y, Xt, f, scale, sigma)):
                    X_, y_, Xt_, f_, scale_, sigma_ = ctx
                    fm = randfeat.RandomFeatureRidge(build_map(meth, m, sigma_, rs), alphas=LAM,
                                                     alpha_scale="mean", n_threads=1,
                                                     gram_dtype="float64")
                    return np.sqrt(np.mean((fm.fit(X_, y_).predict(Xt_) - f_) ** 2)) / scale_

                rows.append(mc.replicate(one, seeds, progress).tolist())
            part["methods"][meth] = dict(ms=list(ms), r=rows)
        out["parts"].append(part)
    return out


def slope_fit(ms, r, floor=0.0):
    """Weighted least-squares slope of log sqrt(mean r^2 + floor) on log m, its se (delta
    method), and the fitted RMS values; ``floor`` a squared bias added to every mean r^2."""
    ms = np.asarray(ms, float)
    r2 = [np.asarray(v, float) ** 2 for v in r]
    m = np.array([v.mean() for v in r2]) + floor
    v = np.array([max(v_.var(ddof=1), 1e-300) / (len(v_) * (v_.mean() + floor) ** 2)
                  for v_ in r2])
    x, yv, w = np.log(ms), np.log(m), 1.0 / np.maximum(v, 1e-12)
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    b = np.sum(w * (x - xm) * (yv - np.sum(w * yv) / np.sum(w))) / sxx
    return dict(slope=0.5 * float(b), se=0.5 * math.sqrt(1.0 / sxx), rms=np.sqrt(m).tolist())


def analyse(res):
    n_tests = 4 * len(res["parts"])
    level = stats.bonferroni(ALPHA, max(n_tests, 1))
    z = stats.z_threshold(level, two_sided=False)
    fails, rows, eps = [], [], []
    for p in res["parts"]:
        fits = {k: slope_fit(v["ms"], v["r"]) for k, v in p["methods"].items()}
        rf = fits["rff"]
        lo, hi = RFF_SLOPE
        if rf["slope"] - z * rf["se"] > hi or rf["slope"] + z * rf["se"] < lo:
            fails.append(f"{p['dataset']}: RFF error falls like m^{rf['slope']:.2f} ± "
                         f"{rf['se']:.2f}, outside [{lo}, {hi}] (1/sqrt(m) and its "
                         "pre-asymptotic steepening)")
        rows.append(dict(dataset=p["dataset"], method="rff", **rf))
        ny = fits.get("nys")
        if ny is not None:
            rows.append(dict(dataset=p["dataset"], method="nys", **ny))
            if p["dataset"] == "gap":
                if ny["slope"] - z * ny["se"] > -1.0:
                    fails.append(f"gap: Nystrom error falls like m^{ny['slope']:.2f} ± "
                                 f"{ny['se']:.2f}, slower than 1/m")
                if ny["slope"] - rf["slope"] - z * math.hypot(ny["se"], rf["se"]) > -0.5:
                    fails.append(f"gap: Nystrom's rate {ny['slope']:.2f} not 0.5 below RFF's "
                                 f"{rf['slope']:.2f}")
        # power (gap data): the smallest relative bias b of the Nystrom limit that flattens its
        # rate above -1 (z + z_0.9 se); its bandwidth error from the exact ridge at sigma/(1+e)
        if ny is None or p["dataset"] != "gap":
            continue
        v = p["methods"]["nys"]
        target = -1.0 + (z + lc.z90()) * ny["se"]

        def excess(b, v=v, target=target):
            return slope_fit(v["ms"], v["r"], floor=b * b)["slope"] - target

        b_lo, b_hi = 0.0, 10.0
        if excess(b_hi) < 0:
            eps.append(math.inf)
            continue
        for _ in range(60):
            mid = 0.5 * (b_lo + b_hi)
            b_lo, b_hi = (mid, b_hi) if excess(mid) < 0 else (b_lo, mid)
        # the wrong-bandwidth map also approximates a rougher kernel less well at small m (its
        # curve starts higher, which steepens the fit): ask for 1.5 times the floor
        b_hi *= FLOOR_SAFETY
        dist = np.asarray(p["bw"], float)
        idx = np.nonzero(dist >= b_hi)[0]
        if not len(idx):
            eps.append(math.inf)
            continue
        i = int(idx[0])
        if i == 0:
            eps.append(float(BW_GRID[0]))
        else:
            t = (math.log(b_hi) - math.log(dist[i - 1])) / (math.log(dist[i])
                                                             - math.log(dist[i - 1]))
            eps.append(float(math.exp(math.log(BW_GRID[i - 1])
                                      + t * (math.log(BW_GRID[i]) - math.log(BW_GRID[i - 1])))))
    return dict(fails=fails, rows=rows, level=level, z=z, eps=eps)


def verdict(res):
    A = analyse(res)
    fails = list(A["fails"]) + [f"error: {e}" for e in res.get("errors") or []]
    det = []
    fin = [e for e in A["eps"] if math.isfinite(e)]
    if fin:
        det = [power.effect("bandwidth error of the Nystrom map (sigma / (1 + e))", min(fin),
                            "relative", where="Nystrom rate with the gap")]
    v_ = "fail" if fails else ("vacuous" if res.get("skipped") else "pass")
    by = {(r["dataset"], r["method"]): r for r in A["rows"]}

    def rate(key):
        r = by.get(key)
        return f"m^{r['slope']:.2f} ± {r['se']:.2f}" if r else "n/a"

    summ = (f"gap: Nystrom {rate(('gap', 'nys'))} vs RFF {rate(('gap', 'rff'))}; no gap: "
            f"Nystrom {rate(('no gap', 'nys'))} vs RFF {rate(('no gap', 'rff'))}")
    if fails:
        summ = f"violations: {fails[:3]}"
    elif res.get("skipped"):
        summ += "; " + "; ".join(res["skipped"])
    lines = ["| data | method | rate (slope of the RMS error in m) ± se | RMS error at the "
             "smallest / largest m |", "|---|---|---|---|"]
    for r in A["rows"]:
        lines.append(f"| {r['dataset']} | {r['method']} | {r['slope']:.3f} ± {r['se']:.3f} | "
                     f"{r['rms'][0]:.3g} / {r['rms'][-1]:.3g} |")
    eig = {p["dataset"]: p["eig"] for p in res["parts"]}
    notes = [f"n = {res['n']}, R = {res['R']} maps per m, per-sample ridge {res['lam']:g}; error "
             "= RMS over 200 test points of (f_m - f_exact) / RMS(f_exact - mean).",
             "Kernel eigenvalues (first 12): " + "; ".join(
                 f"{k}: " + ", ".join(f"{x:.3g}" for x in v[:12]) for k, v in eig.items())]
    notes += [f"skipped: {s}" for s in res.get("skipped") or []]
    stat = {"slopes": {f"{r['dataset']}/{r['method']}": r["slope"] for r in A["rows"]},
            "failed": fails, "per_comparison_level": A["level"],
            "detectable_bandwidth_error": A["eps"]}
    return dict(verdict=v_, statistic=stat, tightness=None, summary=summ, table="\n".join(lines),
                notes=notes, detectable=det, power=power.statement(det))


def audit(effect):
    """A bandwidth error of the Nystrom map: every randfeat.Nystroem fitted inside uses sigma /
    (1 + size) (its features then approximate the kernel of that bandwidth)."""
    from unittest import mock

    import randfeat

    cls = randfeat.Nystroem
    real = cls.fit
    f = 1.0 + float(effect["size"])

    def fit(self, X, y=None):
        self.sigma = float(self.sigma) / f  # kept: the fitted parameters must match transform's
        return real(self, X, y)

    return mock.patch.object(cls, "fit", fit)


def plot(res, v):
    A = analyse(res)
    fig, axes = plots.figure(ncols=2, width=4.6)
    by = {(r["dataset"], r["method"]): r for r in A["rows"]}
    for ax, p in zip(axes, res["parts"], strict=False):
        for j, (meth, lab) in enumerate((("rff", "RFF"), ("nys", "Nystrom"))):
            if meth not in p["methods"]:
                continue
            c = plots.COLORS[j]
            ms = np.asarray(p["methods"][meth]["ms"], float)
            r = np.asarray(p["methods"][meth]["r"], float)
            fit = by[(p["dataset"], meth)]
            ax.plot(ms, fit["rms"], "o-", color=c, ms=3,
                    label=f"{lab}: m^{fit['slope']:.2f} ± {fit['se']:.2f}")
            plots.band(ax, ms, r.min(axis=1), r.max(axis=1), c, alpha=0.15)
        ms = np.asarray(p["methods"]["rff"]["ms"], float)
        r0 = by[(p["dataset"], "rff")]["rms"][0]
        ax.plot(ms, r0 * (ms / ms[0]) ** -0.5, "k:", lw=1, label="1/sqrt(m)")
        ax.plot(ms, r0 * (ms / ms[0]) ** -1.0, "k--", lw=1, label="1/m")
        lc.log_axes(ax)
        plots.finish(ax, "m (features / landmarks)", "RMS(f_m - f_exact) / RMS(f_exact)",
                     f"{p['dataset']} (band: min-max over maps)", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
