"""Double descent of random-Fourier-feature ridge regression, the whole curve against Liao,
Couillet & Mahoney's deterministic equivalent (NeurIPS 2020)."""

from __future__ import annotations

import math

import numpy as np

from analysis import learning_curve as lc
from analysis import montecarlo as mc
from analysis import plots, power, rmt, stats

NAME = "double_descent"
TITLE = ("Double descent of RFF ridge: peak at 2N = n, growing as lambda -> 0, gone at a tuned "
         "lambda; the whole curve against Liao et al.'s deterministic equivalent")
CLAIM = ("Liao, Couillet & Mahoney (NeurIPS 2020, Thms 1-3): for ridge regression on N [cos, sin] "
         "pairs of random Fourier features of n samples, the training and test MSE are, as n, p, "
         "N grow together, equal to deterministic functions of the data (K_cos, K_sin, the fixed "
         "point (delta_cos, delta_sin)); as lambda -> 0 the test MSE has a peak at the "
         "interpolation threshold 2N = n that grows as lambda decreases, and at a tuned lambda "
         "there is no peak.")
SOURCE = ("Liao, Couillet & Mahoney, 'A random matrix analysis of random Fourier features: "
          "beyond the Gaussian kernel, a precise phase transition, and the corresponding double "
          "descent', NeurIPS 2020 (arXiv:2006.05013), Thms 1-3, §4; docs/theory/"
          "learning_curve.md")
DESIGN = ("Two datasets, each a fixed training set of n rows and a test set of 2n rows, "
          "normalised to mean squared norm 1 (Gaussian kernel sigma = 1, Liao et al.'s scaling): "
          "a two-class Gaussian mixture in p = n/2 dimensions (y = +-1) and Adult (a9a, 123 "
          "binary features, y = +-1; skipped when RANDFEAT_DATA has no a9a).  For each 2N/n on a "
          "grid of [0.1, 4], R independently seeded randfeat.RandomFourierFeatures(2N, sigma=1) "
          "maps; ridge without intercept at alpha = n lambda / N (sum scale: Liao's lambda), "
          "fitted by randfeat.RidgeStatistics for 2N < n and by the dual (Z Z' + alpha I)^-1 y in "
          "NumPy for 2N >= n (analysis.learning_curve), for lambda in {1e-3, 1e-1, lambda*}, "
          "lambda* the minimiser over a grid of the equivalent's test MSE at 2N = n.  Equivalent: "
          "analysis.rmt.LiaoEquivalent (independent of randfeat).  Verdict: every (dataset, "
          "lambda, 2N/n, train/test) mean within TOL of the equivalent (relative, floor 1 % of "
          "E y^2) plus z standard errors (Bonferroni); at lambda = 1e-3 the equivalent's test "
          "curve peaks at 2N = n and the simulated one peaks within one grid step with the "
          "threshold significantly above 2N/n = 0.5 and 2; the peak is significantly higher at "
          "1e-3 than at 1e-1; at lambda* the threshold is not above 2N/n = 0.75 beyond TOL + z "
          "se.")
COST = 3
ALPHA = 1e-3
TOL = 0.1  # finite-n gap allowed between the simulated means and the equivalent (relative)
FLOOR = 0.01  # absolute floor of the tolerance, in units of E y^2 (train MSE near 0)
EPS0 = 0.1  # bandwidth error at which the equivalent's sensitivity is evaluated
LAM_TUNE = [1e-2, 1e-1, 3e-1, 1.0, 3.0]

PARAMS = {
    "smoke": dict(n=120, n_test=240, R=8, ratios=[0.25, 0.5, 0.75, 1.0, 2.0, 4.0],
                  lambdas=[1e-3, 1e-1], datasets=["synthetic"]),
    "quick": dict(n=160, n_test=320, R=12, ratios=[0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.5, 2.0,
                                                   4.0],
                  lambdas=[1e-3, 1e-1], datasets=["synthetic", "adult"]),
    "full": dict(n=400, n_test=800, R=40, ratios=[0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95, 1.0,
                                                  1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0],
                 lambdas=[1e-3, 1e-2, 1e-1], datasets=["synthetic", "adult"]),
}


def make_data(name, n, n_test, rng):
    """``(X, y, Xt, yt)`` of one dataset (a seam; see DESIGN)."""
    if name == "synthetic":
        X, y = lc.mixture(n + n_test, max(2, n // 2), rng)
        Xa, Xb = lc.normalise(X[:n], X[n:])
        return Xa, y[:n], Xb, y[n:]
    return lc.load_real(name, n, n_test, rng)


def build_map(n_components, random_state):
    """The map under test: randfeat's paired RFF, Gaussian kernel, sigma = 1."""
    import randfeat

    return randfeat.RandomFourierFeatures(n_components, kernel="gaussian", sigma=1.0,
                                          random_state=random_state, n_threads=1)


def pairs(ratio, n):
    return max(1, int(round(ratio * n / 2)))


def simulate(X, y, Xt, yt, N, lams, random_state):
    """Train and test MSE of one map with N pairs for each lambda: array (len(lams), 2)."""
    n = len(y)
    rff = build_map(2 * N, random_state).fit(X)
    Z, Zt = rff.transform(X), rff.transform(Xt)
    alphas = [n * lam / N for lam in lams]
    P, Pt = lc.ridge_predictions(Z, y, Zt, alphas)
    return np.stack([np.mean((P - y) ** 2, axis=1), np.mean((Pt - yt) ** 2, axis=1)], axis=1)


def run(params, seed, progress=None):
    n, n_test, R = params["n"], params["n_test"], params["R"]
    ratios = list(params["ratios"])
    out = dict(n=n, n_test=n_test, R=R, ratios=ratios, parts=[], skipped=[], errors=[])
    for name in params["datasets"]:
        rng = np.random.default_rng(mc.seed_sequences(seed, NAME, name, "data", n=1)[0])
        try:
            X, y, Xt, yt = make_data(name, n, n_test, rng)
        except lc.DataMissing as exc:
            out["skipped"].append(str(exc))
            continue
        eq = rmt.LiaoEquivalent(X, y, Xt, yt)
        N1 = pairs(1.0, n)
        tune = []
        for lam in LAM_TUNE:
            tune.append(eq.mse(N1, lam)[1])
        lam_star = LAM_TUNE[int(np.argmin(tune))]
        lams = list(params["lambdas"]) + [lam_star]
        theory = np.zeros((len(lams), len(ratios), 2))
        for i, lam in enumerate(lams):
            eq._d = None
            for j, r in enumerate(ratios):
                tr, te, _ = eq.mse(pairs(r, n), lam)
                theory[i, j] = tr, te
        # sensitivity to a bandwidth error (frequencies x (1 + EPS0)): the equivalent on X (1 + e)
        eq_e = rmt.LiaoEquivalent(X * (1 + EPS0), y, Xt * (1 + EPS0), yt)
        shifted = np.array([eq_e.mse(pairs(r, n), lams[1])[1] for r in ratios])
        sims = np.zeros((R, len(lams), len(ratios), 2))
        for j, r in enumerate(ratios):
            N = pairs(r, n)
            seeds = mc.seed_sequences(seed, NAME, name, "maps", N, n=R)
            data = (X, y, Xt, yt)
            sims[:, :, j, :] = mc.replicate(
                lambda rs, N=N, data=data, lams=lams: simulate(*data, N, lams, rs), seeds,
                progress)
        out["parts"].append(dict(dataset=name, lambdas=lams, lam_star=lam_star,
                                 tune=dict(lambdas=LAM_TUNE, test=tune),
                                 y2=float(np.mean(y ** 2)), yt2=float(np.mean(yt ** 2)),
                                 theory=theory.tolist(), sims=sims.tolist(),
                                 shifted_test=shifted.tolist()))
    return out


def analyse(res):
    """Per part: means, standard errors, tolerances, the comparisons and the claims."""
    parts = res["parts"]
    ratios = np.asarray(res["ratios"], float)
    n_cmp = sum(2 * len(p["lambdas"]) * len(ratios) for p in parts) + 5 * len(parts)
    level = stats.bonferroni(ALPHA, max(n_cmp, 1))
    z = stats.z_threshold(level)
    z1 = stats.z_threshold(level, two_sided=False)
    fails, rows, worst, eps_det = [], [], None, []
    i1 = int(np.argmin(np.abs(ratios - 1.0)))
    for p in parts:
        th = np.asarray(p["theory"])
        S = np.asarray(p["sims"])
        R = S.shape[0]
        m, se = S.mean(axis=0), S.std(axis=0, ddof=1) / math.sqrt(R)
        floor = FLOOR * np.array([p["y2"], p["yt2"]])
        allowed = TOL * np.maximum(th, floor) + z * se
        dev = np.abs(m - th)
        score = dev / allowed
        for i, lam in enumerate(p["lambdas"]):
            for j, r in enumerate(ratios):
                for k, what in enumerate(("train", "test")):
                    ok = dev[i, j, k] <= allowed[i, j, k]
                    rec = dict(dataset=p["dataset"], lam=lam, ratio=float(r), what=what,
                               mean=float(m[i, j, k]), se=float(se[i, j, k]),
                               theory=float(th[i, j, k]), score=float(score[i, j, k]), ok=ok)
                    rows.append(rec)
                    if worst is None or rec["score"] > worst["score"]:
                        worst = rec
                    if not ok:
                        fails.append(f"{p['dataset']} lambda={lam:g} 2N/n={r:g} {what} MSE "
                                     f"{m[i, j, k]:.4g} ± {se[i, j, k]:.2g} vs equivalent "
                                     f"{th[i, j, k]:.4g} (> {TOL:.0%} + {z:.1f} se)")
        name = p["dataset"]
        te_th, te_m, te_se = th[0, :, 1], m[0, :, 1], se[0, :, 1]
        # claims at the smallest lambda
        if ratios[int(np.argmax(te_th))] != ratios[i1]:
            fails.append(f"{name}: the equivalent's test MSE at lambda={p['lambdas'][0]:g} peaks "
                         f"at 2N/n = {ratios[int(np.argmax(te_th))]:g}, not at 1")
        jm = int(np.argmax(te_m))
        if abs(jm - i1) > 1:
            fails.append(f"{name}: simulated test MSE at lambda={p['lambdas'][0]:g} peaks at "
                         f"2N/n = {ratios[jm]:g}, not within one grid step of 1")
        for r_cmp in (0.5, 2.0):
            jc = int(np.argmin(np.abs(ratios - r_cmp)))
            gap = te_m[i1] - te_m[jc]
            if gap <= z1 * math.hypot(te_se[i1], te_se[jc]):
                fails.append(f"{name}: no significant peak: test MSE at 2N = n {te_m[i1]:.3g} "
                             f"vs {te_m[jc]:.3g} at 2N/n = {ratios[jc]:g}")
        # growth as lambda -> 0 (lambda[0] < lambda[1])
        hi, lo = m[0, i1, 1], m[1, i1, 1]
        if hi - lo <= z1 * math.hypot(se[0, i1, 1], se[1, i1, 1]):
            fails.append(f"{name}: the peak does not grow as lambda decreases "
                         f"({hi:.3g} at {p['lambdas'][0]:g} vs {lo:.3g} at {p['lambdas'][1]:g})")
        # gone at the tuned lambda
        js = int(np.argmin(np.abs(ratios - 0.75)))
        ms = m[-1, :, 1]
        if ms[i1] - ms[js] * (1 + TOL) > z1 * math.hypot(se[-1, i1, 1], se[-1, js, 1]):
            fails.append(f"{name}: a peak remains at the tuned lambda*={p['lam_star']:g} "
                         f"({ms[i1]:.3g} at 2N = n vs {ms[js]:.3g} at 2N/n = 0.75)")
        # detectable bandwidth error (linear in e from the equivalent at EPS0, lambda[1] curve)
        sh = np.abs(np.asarray(p["shifted_test"]) - th[1, :, 1]) / EPS0
        need = allowed[1, :, 1] + lc.z90() * se[1, :, 1] + dev[1, :, 1]
        with np.errstate(divide="ignore"):
            e = np.where(sh > 0, need / sh, np.inf)
        eps_det.append(float(np.min(e)))
    return dict(level=level, z=z, fails=fails, rows=rows, worst=worst, eps=eps_det,
                i1=i1)


def verdict(res):
    A = analyse(res)
    fails = list(A["fails"]) + [f"error: {e}" for e in res.get("errors") or []]
    det = []
    if A["eps"] and all(math.isfinite(e) for e in A["eps"]):
        det = [power.effect("bandwidth error of the map (frequencies x (1 + e))",
                            min(A["eps"]), "relative",
                            where=f"lambda = {res['parts'][0]['lambdas'][1]:g}, "
                                  "the whole test curve")]
    w = A["worst"]
    if not res["parts"]:
        verdict_ = "vacuous"
        summ = "no dataset could run: " + "; ".join(res.get("skipped") or [])
    else:
        verdict_ = "fail" if fails else ("vacuous" if res.get("skipped") else "pass")
        summ = (f"{len(A['rows'])} means within {TOL:.0%} + z se of Liao et al.'s equivalent; "
                f"worst {w['dataset']} lambda={w['lam']:g} 2N/n={w['ratio']:g} {w['what']}: "
                f"{w['mean']:.4g} ± {w['se']:.2g} vs {w['theory']:.4g} "
                f"({w['score']:.2f} of the allowance); peaks at 2N = n, growing as lambda -> 0, "
                "gone at lambda*") if not fails else f"violations: {fails[:4]}"
    lines = ["| dataset | lambda | 2N/n | train: sim ± se / equivalent | test: sim ± se / "
             "equivalent |", "|---|---|---|---|---|"]
    by = {}
    for r in A["rows"]:
        by.setdefault((r["dataset"], r["lam"], r["ratio"]), {})[r["what"]] = r
    for (d, lam, r), v in by.items():
        lines.append(f"| {d} | {lam:g} | {r:g} | {v['train']['mean']:.4g} ± "
                     f"{v['train']['se']:.2g} / {v['train']['theory']:.4g} | "
                     f"{v['test']['mean']:.4g} ± {v['test']['se']:.2g} / "
                     f"{v['test']['theory']:.4g} |")
    notes = [f"n = {res['n']} training rows, {res['n_test']} test rows, R = {res['R']} maps per "
             "point; Liao's lambda is the penalty of (1/n)|y - Sigma'beta|^2 + lambda|beta|^2 "
             "with unnormalised [cos, sin] features (randfeat: alpha = n lambda / N, sum scale).",
             f"Tolerance: {TOL:.0%} of the equivalent (floor {FLOOR:.0%} of E y^2) plus z = "
             f"{A['z']:.2f} standard errors: the equivalent is exact as n, p, N -> infinity; at "
             f"n = {res['n']} the gap is a few per cent (docs/theory/learning_curve.md).",
             "Solver: randfeat.RidgeStatistics for 2N < n; the dual in NumPy for 2N >= n (no "
             "library solver is right there near lambda = 0; a solver='dual' would replace it)."]
    notes += [f"skipped: {s}" for s in res.get("skipped") or []]
    stat = {"worst_score": w["score"] if w else None, "failed": fails,
            "per_comparison_level": A["level"], "detectable_bandwidth_error": A["eps"],
            "lambda_star": {p["dataset"]: p["lam_star"] for p in res["parts"]}}
    return dict(verdict=verdict_, statistic=stat, tightness=None, summary=summ,
                table="\n".join(lines), notes=notes, detectable=det,
                power=power.statement(det))


def audit(effect):
    """A bandwidth error: every RandomFourierFeatures fitted inside has its frequencies scaled
    by 1 + size (``analysis.learning_curve.scale_frequencies``)."""
    return lc.scale_frequencies(1.0 + float(effect["size"]))


def plot(res, v):
    parts = res["parts"]
    fig, axes = plots.figure(ncols=max(1, len(parts)), width=5.2, height=4.0)
    ratios = np.asarray(res["ratios"], float)
    for ax, p in zip(axes, parts, strict=False):
        th, S = np.asarray(p["theory"]), np.asarray(p["sims"])
        m, se = S.mean(axis=0), S.std(axis=0, ddof=1) / math.sqrt(S.shape[0])
        for i, lam in enumerate(p["lambdas"]):
            c = plots.COLORS[i % len(plots.COLORS)]
            lab = f"lambda={lam:g}" + (" (tuned)" if i == len(p["lambdas"]) - 1 else "")
            ax.plot(ratios, th[i, :, 1], "-", color=c, lw=1.3, label=lab + ": test, equivalent")
            ax.errorbar(ratios, m[i, :, 1], yerr=2 * se[i, :, 1], fmt="o", ms=3, color=c,
                        capsize=2, lw=0.8)
            ax.plot(ratios, np.maximum(th[i, :, 0], 1e-6), ":", color=c, lw=1)
            ax.plot(ratios, np.maximum(m[i, :, 0], 1e-6), "x", color=c, ms=3)
        ax.axvline(1.0, color="0.5", lw=0.8, ls="--")
        lc.log_axes(ax)
        plots.finish(ax, "2N / n (features / samples)", "MSE",
                     f"{p['dataset']}: test (dots +-2 se, lines) and train (x, dotted)",
                     fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
