"""Avron et al. (ICML 2017): the spectral approximation (1 - Delta)(K + lambda I) <= Z Z' +
lambda I <= (1 + Delta)(K + lambda I) by iid and by leverage-weighted random Fourier features
(Li, Ton, Oglic & Sejdinovic, JMLR 2021)."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as tdist

from analysis import learning_curve as lc
from analysis import montecarlo as mc
from analysis import plots, power, rmt, stats

NAME = "spectral_approximation"
TITLE = ("Spectral approximation of K + lambda I: features needed for Delta = 1/2 grow like "
         "s_lambda with leverage weights, >= 3x fewer than iid at small lambda; weighted "
         "features unbiased")
CLAIM = ("Avron, Kapralov, Musco, Musco, Velingker & Zandieh (ICML 2017, Thms 7 and 8; Def. of "
         "the ridge leverage function) with Li, Ton, Oglic & Sejdinovic (JMLR 2021): random "
         "Fourier features sampled from the ridge leverage density and weighted by p/q give "
         "(1 - Delta)(K + lambda I) <= Z Z' + lambda I <= (1 + Delta)(K + lambda I) with "
         "O(s_lambda log s_lambda / Delta^2) features, s_lambda = tr K (K + lambda I)^-1 the "
         "statistical dimension, while iid features need O((n / lambda) log / Delta^2) in the "
         "worst case; so at small lambda weighted sampling needs far fewer features (the issue: "
         "at least 3x), and the number needed for Delta = 1/2 grows like s_lambda.  The weighted "
         "features are unbiased: E Z Z' = K.")
SOURCE = ("Avron et al., 'Random Fourier Features for Kernel Ridge Regression: Approximation "
          "Bounds and Statistical Guarantees', ICML 2017 (arXiv:1804.09893); Li, Ton, Oglic & "
          "Sejdinovic, 'Towards a Unified Analysis of Random Fourier Features', JMLR 22 (2021); "
          "docs/theory/learning_curve.md")
DESIGN = ("n points uniform on [-1, 1] (one dimension: the leverage density is computed by "
          "quadrature), Gaussian kernel sigma = 0.1, lambda on a grid (units of K).  For each "
          "lambda, R randfeat.RandomFourierFeatures(2 M, sampling='leverage', ridge=lambda) maps "
          "and R iid maps (shared by the lambdas); Delta(m) = max |eig((K + lambda I)^-1/2 (Z_m "
          "Z_m' - K) (K + lambda I)^-1/2)| exactly (eigendecomposition) for the first m "
          "frequencies of each map, m on a doubling grid.  D_1/2 = the m where the median over "
          "maps of Delta(m) falls to 1/2 (log interpolation), its 95% interval by a bootstrap "
          "over the maps.  Verdict: (exact law) the weighted features are unbiased: at m = M, "
          "z(x)'z(y) averaged over the maps against k(x - y) on 12 pairs incl. x = y, t-test "
          "with the maps' spread (Bonferroni); (claim) at the smallest lambda the bootstrap "
          "lower bound of D_1/2(iid) / D_1/2(leverage) is >= 3 (iid not reaching 1/2 by M_iid "
          "counts as D > M_iid); (claim) D_1/2(leverage) grows like s_lambda (with Avron's log "
          "factor): the slope of log D_1/2 on log(s log 16 s), 95% bootstrap interval meeting "
          "[0.5, 2]; "
          "Avron's sufficient numbers reported as context.")
COST = 2
ALPHA = 1e-3
SIGMA = 0.1
RATIO = 3.0
SLOPE_RANGE = (0.5, 2.0)
N_BOOT = 300
N_PAIRS = 12

PARAMS = {
    "smoke": dict(n=60, lambdas=[1.0, 1e-3], M=512, M_iid=2048, R=6),
    "quick": dict(n=100, lambdas=[10.0, 1.0, 1e-1, 1e-2, 1e-3], M=1024, M_iid=2048, R=12),
    "full": dict(n=200, lambdas=[10.0, 1.0, 1e-1, 1e-2, 1e-3, 1e-4], M=2048, M_iid=8192,
                 R=24),
}


def make_data(n, rng):
    """Training rows (a seam): n points uniform on [-1, 1]."""
    return np.sort(rng.uniform(-1.0, 1.0, n))[:, None]


def build_map(M, sampling, lam, random_state):
    """The map under test: M frequencies (2M paired features)."""
    import randfeat

    kw = dict(ridge=lam) if sampling == "leverage" else {}
    return randfeat.RandomFourierFeatures(2 * M, kernel="gaussian", sigma=SIGMA,
                                          sampling=sampling, random_state=random_state,
                                          n_threads=1, **kw)


def grid(M):
    """Frequencies at which Delta is computed: 4, 6, 8, 11, 16, ... (half-octaves) up to M."""
    g = sorted({int(round(2 ** (k / 2))) for k in range(4, 48)})
    return [m for m in g if m <= M]


def deltas(Z, mu, U, lam, ms):
    """Delta(m) for the first m frequencies of the paired features Z (n x 2M)."""
    M = Z.shape[1] // 2
    S = (U / np.sqrt(mu + lam)[None, :]).T
    T = S @ Z
    target = mu / (mu + lam)
    out, G, prev = [], np.zeros((len(mu), len(mu))), 0
    for m in ms:
        cols = np.r_[prev:m, M + prev:M + m]
        Tb = T[:, cols]
        G += Tb @ Tb.T
        prev = m
        E = G * (M / m)
        E[np.diag_indices_from(E)] -= target
        ev = np.linalg.eigvalsh(E)
        out.append(max(abs(ev[0]), abs(ev[-1])))
    return np.array(out)


def pair_index(n):
    """Fixed pairs (i, j) of rows: 3 diagonal, 9 at increasing distances."""
    idx = [(0, 0), (n // 2, n // 2), (n - 1, n - 1)]
    for k in range(1, N_PAIRS - 2):
        j = min(n - 1, int(round(k * k * n / 100)))
        idx.append((0, j) if j > 0 else (0, 1))
    return idx[:N_PAIRS]


def run(params, seed, progress=None):
    from randfeat.kernels import GaussianKernel

    n, M, R = params["n"], params["M"], params["R"]
    M_iid = params.get("M_iid", M)
    rng = np.random.default_rng(mc.seed_sequences(seed, NAME, "data", n=1)[0])
    X = make_data(n, rng)
    K = GaussianKernel(SIGMA)(X)
    mu, U = np.linalg.eigh(K)
    mu = np.clip(mu, 0.0, None)
    ms, ms_iid = grid(M), grid(M_iid)
    pairs = pair_index(n)
    pi, pj = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    out = dict(n=n, M=M, M_iid=M_iid, R=R, ms=ms, ms_iid=ms_iid,
               lambdas=list(params["lambdas"]), sigma=SIGMA,
               s_lambda=[float(np.sum(mu / (mu + lam))) for lam in params["lambdas"]],
               k_pairs=K[pi, pj].tolist(), pairs=pairs, iid=[], leverage=[],
               errors=[], skipped=[])

    def one(sampling, lam, rs):
        Mx, g = (M_iid, ms_iid) if sampling == "iid" else (M, ms)
        rff = build_map(Mx, sampling, lam, rs).fit(X)
        Z = rff.transform(X)
        lams = params["lambdas"] if sampling == "iid" else [lam]
        d = np.stack([deltas(Z, mu, U, lm, g) for lm in lams])
        est = np.einsum("ij,ij->i", Z[pi], Z[pj])
        return d, est

    seeds = mc.seed_sequences(seed, NAME, "iid", n=R)
    d, est = mc.replicate(lambda rs: one("iid", None, rs), seeds, progress)
    out["iid"] = dict(deltas=d.tolist(), est=est.tolist())  # (R, L, m), (R, pairs)
    for lam in params["lambdas"]:
        seeds = mc.seed_sequences(seed, NAME, "leverage", lam, n=R)
        d, est = mc.replicate(lambda rs, lam=lam: one("leverage", lam, rs), seeds, progress)
        out["leverage"].append(dict(deltas=d[:, 0].tolist(), est=est.tolist()))
    return out


def crossing(ms, med, level=0.5):
    """First m where ``med`` <= level, interpolated in log m; inf if never."""
    med = np.asarray(med, float)
    idx = np.nonzero(med <= level)[0]
    if not len(idx):
        return math.inf
    i = idx[0]
    if i == 0:
        return float(ms[0])
    t = (med[i - 1] - level) / (med[i - 1] - med[i])
    return float(math.exp(math.log(ms[i - 1]) + t * (math.log(ms[i]) - math.log(ms[i - 1]))))


def needed(ms, D, boot):
    """D_1/2 of the median curve of the maps ``D`` (R x m), a 95% bootstrap interval (order
    statistics: an infinite D_1/2 -- not reached by M -- sorts last) and the bootstrap draws;
    ``boot`` (N_BOOT x R) are the resampled map indices."""
    D = np.asarray(D, float)
    point = crossing(ms, np.median(D, axis=0))
    draws = np.array([crossing(ms, np.median(D[b], axis=0)) for b in boot])
    srt = np.sort(draws)
    lo, hi = srt[int(0.025 * (len(srt) - 1))], srt[int(math.ceil(0.975 * (len(srt) - 1)))]
    return point, float(lo), float(hi), draws


def avron(s, n, lam, delta=0.5, fail=0.5):
    """Avron et al.'s sufficient numbers of features (Thm 7: iid, Thm 8: leverage) for Delta
    with probability 1 - fail: (8/3) Delta^-2 L log(16 s / fail), L = n / lam or s."""
    c = 8.0 / 3.0 / delta ** 2 * math.log(16.0 * s / fail)
    return dict(iid=c * n / lam, leverage=c * s)


def analyse(res):
    ms = res["ms"]
    L = len(res["lambdas"])
    n_tests = 2 * N_PAIRS * L + 2
    level = stats.bonferroni(ALPHA, n_tests)
    boot_rng = np.random.default_rng(0)  # fixed: the verdict is a function of the result
    R = len(res["iid"]["deltas"])
    boot = boot_rng.integers(0, R, (N_BOOT, R))
    fails, rows, unb, e_det = [], [], [], []
    kp = np.asarray(res["k_pairs"])
    iid_d = np.asarray(res["iid"]["deltas"])
    for li, lam in enumerate(res["lambdas"]):
        lev = res["leverage"][li]
        di = needed(res.get("ms_iid", ms), iid_d[:, li], boot)
        dl = needed(ms, lev["deltas"], boot)
        ctx = avron(res["s_lambda"][li], res["n"], lam)
        rows.append(dict(lam=lam, s=res["s_lambda"][li], iid=di, lev=dl, avron=ctx))
        for what, est in (("iid", res["iid"]["est"]), ("leverage", lev["est"])):
            if what == "iid" and li > 0:
                continue
            E = np.asarray(est, float)
            R = E.shape[0]
            tq = float(tdist.ppf(1 - level / 2, R - 1))
            m, se = E.mean(axis=0), E.std(axis=0, ddof=1) / math.sqrt(R)
            zs = (m - kp) / se
            j = int(np.argmax(np.abs(zs)))
            unb.append(dict(what=what, lam=lam, z=float(zs[j]), t=tq, pair=j, mean=float(m[j]),
                            k=float(kp[j])))
            bad = np.nonzero(np.abs(zs) > tq)[0]
            for b in bad:
                fails.append(f"{what} (lambda={lam:g}) biased at pair {res['pairs'][b]}: "
                             f"{m[b]:.4f} vs k = {kp[b]:.4f} (t = {zs[b]:.1f})")
            if what == "leverage":
                # weights x (1 + e) shift every estimate by e k: detectable at the best pair
                ok = kp > 0.05
                e_det.append(float(np.min((tq + lc.z90() * 1.2) * se[ok] / kp[ok])))
    small = rows[-1]
    # an iid D_1/2 beyond M (not reached) is bounded below by M
    ratio_lo = min(small["iid"][1], float(res.get("M_iid", res["M"]))) / small["lev"][2]
    if not ratio_lo >= RATIO:
        fails.append(f"at lambda={small['lam']:g}: iid needs D_1/2 = {small['iid'][0]:.0f} "
                     f"[{small['iid'][1]:.0f}, {small['iid'][2]:.0f}], leverage "
                     f"{small['lev'][0]:.0f} [{small['lev'][1]:.0f}, {small['lev'][2]:.0f}]: "
                     f"ratio lower bound {ratio_lo:.2f} < {RATIO:g}")
    fin = [r for r in rows if math.isfinite(r["lev"][0])]
    # Avron et al.'s Thm 8: O(s log s) features; the slope is taken against s log s
    s_all = [r["s"] * math.log(16.0 * r["s"]) for r in rows]
    slope, slope_ci = float("nan"), (float("nan"), float("nan"))
    if len(fin) < len(rows):
        fails.append("leverage sampling did not reach Delta = 1/2 within M = "
                     f"{res['M']} at lambda = {[r['lam'] for r in rows if r not in fin]}")
    else:
        slope = rmt.log_slope(s_all, [r["lev"][0] for r in rows])
        # the maps of different lambdas are independent: resample each set, refit the slope
        bs = [rmt.log_slope(s_all, [r["lev"][3][b] for r in rows]) for b in range(N_BOOT)
              if all(math.isfinite(r["lev"][3][b]) for r in rows)]
        slope_ci = tuple(np.quantile(bs, [0.025, 0.975])) if bs else (slope, slope)
        if slope_ci[0] > SLOPE_RANGE[1] or slope_ci[1] < SLOPE_RANGE[0]:
            fails.append(f"D_1/2(leverage) grows like (s log s)^{slope:.2f} (95% interval "
                         f"[{slope_ci[0]:.2f}, {slope_ci[1]:.2f}]), outside {SLOPE_RANGE}")
    return dict(rows=rows, unb=unb, fails=fails, slope=slope, slope_ci=slope_ci,
                ratio_lo=ratio_lo, level=level, e_det=e_det)


def verdict(res):
    A = analyse(res)
    fails = list(A["fails"]) + [f"error: {e}" for e in res.get("errors") or []]
    det = []
    if A["e_det"]:
        det = [power.effect("scale error of the leverage weights (w x (1 + e))",
                            max(A["e_det"]), "relative", where=f"m = {res['M']} frequencies")]
    worst = max(A["unb"], key=lambda u: abs(u["z"]) / u["t"])
    small = A["rows"][-1]
    v_ = "fail" if fails else ("vacuous" if res.get("skipped") else "pass")
    summ = (f"weighted features unbiased (worst |t| = {abs(worst['z']):.1f} < {worst['t']:.1f}, "
            f"{worst['what']} lambda={worst['lam']:g}); at lambda={small['lam']:g} iid needs >= "
            f"{A['ratio_lo']:.1f}x the features of leverage sampling (D_1/2 "
            f"{small['iid'][0]:.0f} vs {small['lev'][0]:.0f}); D_1/2(leverage) ~ "
            f"(s log 16s)^{A['slope']:.2f} [{A['slope_ci'][0]:.2f}, {A['slope_ci'][1]:.2f}]") \
        if not fails else f"violations: {fails[:3]}"
    lines = ["| lambda | s_lambda | D_1/2 iid [95%] | D_1/2 leverage [95%] | ratio | D_1/2 / "
             "s_lambda (leverage) | Avron's sufficient m: iid / leverage |",
             "|---|---|---|---|---|---|---|"]
    for r in A["rows"]:
        lines.append(f"| {r['lam']:g} | {r['s']:.1f} | {r['iid'][0]:.0f} [{r['iid'][1]:.0f}, "
                     f"{r['iid'][2]:.0f}] | {r['lev'][0]:.0f} [{r['lev'][1]:.0f}, "
                     f"{r['lev'][2]:.0f}] | {r['iid'][0] / r['lev'][0]:.2f} | "
                     f"{r['lev'][0] / r['s']:.1f} | {r['avron']['iid']:.3g} / "
                     f"{r['avron']['leverage']:.3g} |")
    notes = [f"n = {res['n']} points on [-1, 1], sigma = {res['sigma']}, R = {res['R']} maps per "
             f"sampling, up to M = {res['M']} frequencies; 'inf' = Delta = 1/2 not reached.",
             "D counts frequencies (each gives a cos and a sin feature); Avron et al.'s numbers "
             "are for Delta = 1/2 with probability 1/2 (sufficient, not necessary: context)."]
    stat = {"ratio_lower_bound": A["ratio_lo"], "slope_vs_s_log_s": A["slope"],
            "slope_ci": list(A["slope_ci"]),
            "worst_unbiasedness_t": worst["z"], "failed": fails,
            "per_comparison_level": A["level"]}
    return dict(verdict=v_, statistic=stat, tightness=None, summary=summ, table="\n".join(lines),
                notes=notes, detectable=det, power=power.statement(det))


def audit(effect):
    """Every leverage-weighted RandomFourierFeatures fitted inside has its frequency_weights_
    multiplied by 1 + size (the features scale by sqrt(1 + size))."""
    from unittest import mock

    import randfeat

    real = randfeat.RandomFourierFeatures.fit
    f = 1.0 + float(effect["size"])

    def fit(self, X, y=None):
        out = real(self, X, y)
        w = getattr(self, "frequency_weights_", None)
        if w is not None:
            w = np.asarray(w) * f
            w.flags.writeable = False
            self.frequency_weights_ = w
        return out

    return mock.patch.object(randfeat.RandomFourierFeatures, "fit", fit)


def plot(res, v):
    A = analyse(res)
    fig, axes = plots.figure(ncols=2, width=4.8)
    ax, bx = axes
    ms = np.asarray(res["ms"], float)
    mi = np.asarray(res.get("ms_iid", res["ms"]), float)
    iid_d = np.asarray(res["iid"]["deltas"])
    for li, lam in enumerate(res["lambdas"]):
        c = plots.COLORS[li % len(plots.COLORS)]
        ax.plot(mi, np.median(iid_d[:, li], axis=0), "--", color=c, lw=1)
        ax.plot(ms, np.median(np.asarray(res["leverage"][li]["deltas"]), axis=0), "o-", color=c,
                ms=3, label=f"lambda={lam:g} (s={res['s_lambda'][li]:.0f})")
    ax.axhline(0.5, color="k", lw=0.8)
    lc.log_axes(ax)
    plots.finish(ax, "m (frequencies)", "median Delta", "Delta(m): leverage (solid), iid (dashed)",
                 fontsize=6)
    s = np.array([r["s"] for r in A["rows"]])
    for key, lab, c in (("lev", "leverage", plots.COLORS[0]), ("iid", "iid", plots.COLORS[3])):
        y = np.array([r[key][0] for r in A["rows"]])
        lo = np.array([r[key][1] for r in A["rows"]])
        hi = np.array([r[key][2] for r in A["rows"]])
        ok = np.isfinite(y)
        if ok.any():
            bx.errorbar(s[ok], y[ok], yerr=[y[ok] - lo[ok], np.where(np.isfinite(hi[ok]),
                                                                    hi[ok] - y[ok], 0)],
                        fmt="o-", color=c, ms=3, label=f"D_1/2 {lab}")
        if (~ok).any():
            bx.plot(s[~ok], [res.get("M_iid", res["M"])] * int((~ok).sum()), "^", color=c,
                    label=f"{lab}: > M")
    bx.plot(s, s * np.median([r["lev"][0] / r["s"] for r in A["rows"]
                              if math.isfinite(r["lev"][0])]), "k:", label="c s_lambda")
    lc.log_axes(bx)
    plots.finish(bx, "s_lambda = tr K (K + lambda I)^-1", "frequencies for Delta = 1/2",
                 "features needed vs statistical dimension", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
