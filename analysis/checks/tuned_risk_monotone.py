"""Simon, Karkada, Ghosh & Belkin (2023), "More is better": at the optimal ridge for each
number of features, the test risk of random-feature ridge regression does not increase with
the number of features."""

from __future__ import annotations

import math

import numpy as np

from analysis import learning_curve as lc
from analysis import montecarlo as mc
from analysis import plots, power, stats

NAME = "tuned_risk_monotone"
TITLE = "More is better: the test risk at the optimal ridge does not increase with D"
CLAIM = ("Simon, Karkada, Ghosh & Belkin (2023, 'More is better in modern machine learning: when "
         "infinite overparameterization is optimal and overfitting is obligatory'): for random-"
         "feature ridge regression, the test risk at the optimal ridge is a non-increasing "
         "function of the number of features (and of samples); the double-descent peak is an "
         "artefact of a fixed, too small ridge.")
SOURCE = ("Simon, Karkada, Ghosh & Belkin, arXiv:2311.14646 (ICLR 2024), the 'more is better' "
          "theorem for RF regression at optimal ridge; docs/theory/learning_curve.md")
DESIGN = ("Two datasets, a fixed training set of n rows and 2n test rows each, normalised to mean "
          "squared norm 1: the two-class Gaussian mixture in p = n/2 dimensions (y = +-1) and "
          "cpu_act (21 features as z-scores clipped at +-5, standardised target; skipped without "
          "RANDFEAT_DATA).  For each D = 2N on a doubling grid, R independently seeded "
          "randfeat.RandomFourierFeatures(D, sigma=1) maps; ridge without intercept on a grid of "
          "per-sample penalties (4 per decade), fitted by randfeat.RidgeStatistics for D < n and "
          "by the dual in NumPy for D >= n (analysis.learning_curve).  Tuned risk: cross-fitted "
          "(the penalty chosen on the mean test risk of one half of the maps, the risk read on "
          "the other half, and vice versa; no selection bias downwards).  Verdict: one-sided z "
          "test of every increment R*(D_k+1) - R*(D_k) <= TOL R*(D_k) (the penalty grid's slack), "
          "Bonferroni over increments and datasets.")
COST = 1.5
ALPHA = 1e-3
TOL = 0.01  # slack of the penalty grid (4 per decade) on the tuned risk
EPS_GRID = (0.1, 0.2, 0.4, 0.8)  # bandwidth errors at the largest D, for the power

PARAMS = {
    "smoke": dict(n=64, n_test=128, Ds=[8, 32, 128], R=6, datasets=["synthetic"]),
    "quick": dict(n=128, n_test=256, Ds=[16, 32, 64, 128, 256, 512], R=16,
                  datasets=["synthetic", "cpu_act"]),
    "full": dict(n=256, n_test=512, Ds=[16, 32, 64, 128, 256, 512, 1024, 2048], R=40,
                 datasets=["synthetic", "cpu_act"]),
}
ALPHAS = 10.0 ** np.arange(-6.0, 1.01, 0.25)


def make_data(name, n, n_test, rng):
    """``(X, y, Xt, yt)`` (a seam; see DESIGN)."""
    if name == "synthetic":
        X, y = lc.mixture(n + n_test, max(2, n // 2), rng)
        Xa, Xb = lc.normalise(X[:n], X[n:])
        return Xa, y[:n], Xb, y[n:]
    return lc.load_real(name, n, n_test, rng)


def build_map(D, random_state):
    """The map under test."""
    import randfeat

    return randfeat.RandomFourierFeatures(D, kernel="gaussian", sigma=1.0,
                                          random_state=random_state, n_threads=1)


def risks(X, y, Xt, yt, D, random_state):
    """Test MSE of one map of width D for every penalty of ALPHAS (per sample)."""
    rff = build_map(D, random_state).fit(X)
    _, Pt = lc.ridge_predictions(rff.transform(X), y, rff.transform(Xt), len(y) * ALPHAS)
    return np.mean((Pt - yt) ** 2, axis=1)


def run(params, seed, progress=None):
    n, R, Ds = params["n"], params["R"], list(params["Ds"])
    out = dict(n=n, R=R, Ds=Ds, alphas=ALPHAS.tolist(), parts=[], skipped=[], errors=[])
    for name in params["datasets"]:
        rng = np.random.default_rng(mc.seed_sequences(seed, NAME, name, "data", n=1)[0])
        try:
            X, y, Xt, yt = make_data(name, n, params["n_test"], rng)
        except lc.DataMissing as exc:
            out["skipped"].append(str(exc))
            continue
        curves = []
        for D in Ds:
            seeds = mc.seed_sequences(seed, NAME, name, "maps", D, n=R)
            curves.append(mc.replicate(lambda rs, D=D, data=(X, y, Xt, yt): risks(*data, D, rs),
                                       seeds, progress).tolist())
        # the largest width with a bandwidth error e (frequencies x (1 + e)), for the power
        shifted = []
        for e in EPS_GRID:
            seeds = mc.seed_sequences(seed, NAME, name, "maps", Ds[-1], n=R)  # same draws
            with lc.scale_frequencies(1.0 + e):
                shifted.append(mc.replicate(
                    lambda rs, data=(X, y, Xt, yt): risks(*data, Ds[-1], rs), seeds).tolist())
        out["parts"].append(dict(dataset=name, curves=curves, shifted=shifted,
                                 y2=float(np.mean(yt ** 2))))
    return out


def tuned(C):
    """Cross-fitted tuned risk of one width: per replicate of each half, the risk at the
    penalty chosen on the other half's mean curve.  Returns (estimate, se, chosen alphas)."""
    C = np.asarray(C, float)
    R = C.shape[0]
    h = R // 2
    A, B = C[:h], C[h:]
    ia, ib = int(np.argmin(A.mean(axis=0))), int(np.argmin(B.mean(axis=0)))
    vals = np.concatenate([B[:, ia], A[:, ib]])
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(len(vals))), (ia, ib)


def analyse(res):
    Ds = res["Ds"]
    k = len(Ds) - 1
    level = stats.bonferroni(ALPHA, max(1, k * len(res["parts"])))
    z = stats.z_threshold(level, two_sided=False)
    fails, parts, eps = [], [], []
    for p in res["parts"]:
        est = [tuned(c) for c in p["curves"]]
        m = np.array([e[0] for e in est])
        se = np.array([e[1] for e in est])
        inc = []
        for i in range(k):
            d = m[i + 1] - m[i]
            s = math.hypot(se[i], se[i + 1])
            thr = TOL * m[i] + z * s
            inc.append(dict(D=Ds[i + 1], inc=float(d), se=float(s), thr=float(thr),
                            score=float((d - TOL * m[i]) / s) if s > 0 else 0.0))
            if d > thr:
                fails.append(f"{p['dataset']}: tuned risk increases from D={Ds[i]} "
                             f"({m[i]:.4g}) to D={Ds[i + 1]} ({m[i + 1]:.4g}), +{d:.3g} > "
                             f"{TOL:.0%} + z se {z * s:.2g}")
        # power: the smallest bandwidth error at the largest width that makes the last
        # increment exceed its threshold by z_0.9 se (linear interpolation over EPS_GRID)
        sh = [tuned(c) for c in p["shifted"]]
        need = [(sm - m[-2]) - TOL * m[-2] - (z + lc.z90()) * math.hypot(se[-2], ss)
                for sm, ss, _ in sh]
        e_det = math.inf
        prev_e, prev_v = 0.0, (m[-1] - m[-2]) - TOL * m[-2] - (z + lc.z90()) * math.hypot(
            se[-2], se[-1])
        for e, v in zip(EPS_GRID, need, strict=True):
            if v >= 0:
                e_det = e if prev_v >= 0 else prev_e + (e - prev_e) * (-prev_v) / (v - prev_v)
                break
            prev_e, prev_v = e, v
        eps.append(e_det)
        parts.append(dict(dataset=p["dataset"], m=m.tolist(), se=se.tolist(), inc=inc,
                          chosen=[ALPHAS[e[2][0]] for e in est],
                          shifted=[s_[0] for s_ in sh]))
    return dict(fails=fails, parts=parts, level=level, z=z, eps=eps)


def verdict(res):
    A = analyse(res)
    fails = list(A["fails"]) + [f"error: {e}" for e in res.get("errors") or []]
    det = []
    finite = [e for e in A["eps"] if math.isfinite(e)]
    if finite:
        det = [power.effect("bandwidth error at the largest D (frequencies x (1 + e))",
                            min(finite), "relative", where=f"D = {res['Ds'][-1]}")]
    allinc = [(p["dataset"], r) for p in A["parts"] for r in p["inc"]]
    if not res["parts"]:
        v_, summ = "vacuous", "no dataset could run: " + "; ".join(res.get("skipped") or [])
    else:
        worst = max(allinc, key=lambda t: t[1]["score"])
        v_ = "fail" if fails else ("vacuous" if res.get("skipped") else "pass")
        summ = (f"tuned risk non-increasing in D on {len(A['parts'])} dataset(s); largest "
                f"increment {worst[0]} at D={worst[1]['D']}: {worst[1]['inc']:+.3g} ± "
                f"{worst[1]['se']:.2g} (threshold {worst[1]['thr']:.2g})") if not fails \
            else f"violations: {fails[:3]}"
    lines = ["| dataset | D | tuned risk ± se | alpha* (per sample) | increment from previous D "
             "(threshold) |", "|---|---|---|---|---|"]
    for p in A["parts"]:
        for i, D in enumerate(res["Ds"]):
            inc = "" if i == 0 else (f"{p['inc'][i - 1]['inc']:+.3g} "
                                     f"({p['inc'][i - 1]['thr']:.2g})")
            lines.append(f"| {p['dataset']} | {D} | {p['m'][i]:.4g} ± {p['se'][i]:.2g} | "
                         f"{p['chosen'][i]:.2g} | {inc} |")
    notes = [f"n = {res['n']} training rows, R = {res['R']} maps per D, penalties 1e-6..10 per "
             "sample (4 per decade); tuned risk cross-fitted over the two halves of the maps.",
             f"Power: the tuned risk at D = {res['Ds'][-1]} recomputed with the frequencies "
             f"scaled by 1 + e, e in {list(EPS_GRID)}; the detectable e makes the last increment "
             "exceed its threshold by z_0.9 se (linear interpolation)."]
    notes += [f"skipped: {s}" for s in res.get("skipped") or []]
    stat = {"failed": fails, "per_comparison_level": A["level"],
            "detectable_bandwidth_error": A["eps"]}
    return dict(verdict=v_, statistic=stat, tightness=None, summary=summ,
                table="\n".join(lines), notes=notes, detectable=det, power=power.statement(det))


def audit(effect):
    """A bandwidth error at the largest width only: every RandomFourierFeatures of the width
    named in ``effect["where"]`` ("D = <width>") fitted inside has its frequencies scaled by
    1 + size."""
    width = int(str(effect["where"]).split("=")[1])
    return lc.scale_frequencies(1.0 + float(effect["size"]),
                                when=lambda est: est.n_components == width)


def plot(res, v):
    A = analyse(res)
    fig, axes = plots.figure(ncols=max(1, len(A["parts"])), width=4.6)
    Ds = np.asarray(res["Ds"], float)
    for ax, p, raw in zip(axes, A["parts"], res["parts"], strict=False):
        C = np.asarray(raw["curves"])
        for j in range(0, len(ALPHAS), 4):
            ax.plot(Ds, C[:, :, j].mean(axis=1), "-", color="0.75", lw=0.7)
        ax.errorbar(Ds, p["m"], yerr=2 * np.asarray(p["se"]), fmt="o-", color=plots.COLORS[0],
                    ms=3, label="tuned risk (cross-fitted, ±2 se)")
        ax.plot([Ds[-1]] * len(p["shifted"]), p["shifted"], "x", color=plots.COLORS[3],
                label=f"D={int(Ds[-1])} with bandwidth errors {list(EPS_GRID)}")
        lc.log_axes(ax)
        plots.finish(ax, "D (features)", "test MSE",
                     f"{p['dataset']}: tuned risk (grey: fixed penalties)", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
