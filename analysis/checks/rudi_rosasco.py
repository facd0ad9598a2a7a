"""Rudi & Rosasco (NIPS 2017): ridge on O(sqrt(n) log n) random features with lambda = n^-1/2
already has the excess risk of exact kernel ridge; the knee in the number of features, vs n."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from analysis import maps, plots, stats
from analysis import montecarlo as mc

NAME = "rudi_rosasco"
TITLE = ("Rudi-Rosasco: features needed by RF ridge (lambda = n^-1/2) grow between the effective "
         "dimension and sqrt(n) log n")
CLAIM = ("Rudi & Rosasco (NIPS 2017, Thm 1 [R]): for kernel ridge regression with random "
         "features, lambda = n^{-1/2} and m = O(sqrt(n) log n) random features give the same "
         "O(n^{-1/2}) excess risk as exact kernel ridge; beyond that, more features do not help.  "
         "So the number of features m_knee(n) at which the excess risk stops improving grows no "
         "faster than sqrt(n) log n (upper side).  It also grows: R&R's condition is m >~ "
         "N_inf(lambda) log(1/lambda) >= N(lambda), the effective dimension (degrees of "
         "freedom) of exact ridge, which grows as lambda = n^{-1/2} falls, and fewer features "
         "than N(lambda) cannot reproduce the exact estimator (lower side: m_knee grows at least "
         "like N(lambda_n)).")
SOURCE = ("Rudi & Rosasco NIPS 2017 (arXiv:1602.04474) Thm 1 and §4 (N_inf, N(lambda)); "
          "LITERATURE §B.9; issue 15")
DESIGN = ("Synthetic target in the RKHS: x uniform on [-1, 1]^2, f* = sum of 10 Gaussian bumps "
          "k(x, c_j) a_j (sigma = 0.3, c_j uniform, a_j ~ N(0, 1), fixed per seed), y = f* + "
          "N(0, 0.5^2).  R_data training sets of n_max points; the smaller n of the grid are "
          "their first n rows (nested).  Exact kernel ridge (randfeat.kernel_ridge."
          "ExactKernelRidge, alpha = n^{-1/2} per sample, the R&R objective) per (n, set); for "
          "each set R paired RandomFourierFeatures maps with M = max(sizes) frequencies, the "
          "same maps for every n, and ridge on their first m frequencies for m on a "
          "half-octave grid (the library map with m frequencies and the same seed: iid draws "
          "are prefixes, tested), solved from the centred Gram of the M-frequency features "
          "(same penalty, intercept and scaling as randfeat.RandomFeatureRidge, tested); "
          "excess risk E = mean over 1000 test points of (f-hat - f*)^2.  Knee m_knee(n): the "
          "first m at which the mean over sets and maps of E_RF(m) / E_exact falls to 1.2 "
          "(log-linear interpolation).  Exponent: least-squares slope of log m_knee on log n, "
          "standard error by a bootstrap over the training sets.  References over the same n "
          "grid: the slope of log(sqrt(n) log n) (upper) and of log N(lambda_n), N(lambda) = "
          "sum_i mu_i / (mu_i + lambda) with mu_i the eigenvalues of the kernel integral "
          "operator of this design (product of 1-d Gauss-Legendre quadratures, 300 nodes).  "
          "Verdict (one-sided z at the Bonferroni level over the two sides): fail when the "
          "exponent is significantly above the sqrt(n) log n slope + 0.1, significantly below "
          "the N(lambda) slope, or a knee lies outside the grid.")
COST = 2
ALPHA = 1e-4
POWER = 0.9
KNEE = 1.2  # "excess risk stopped improving": within 20% of exact kernel ridge
TOL_UP = 0.1  # slack above the sqrt(n) log n exponent (finite-n curvature)
SIGMA = 0.3
NOISE = 0.5
N_TEST = 1000
N_BOOT = 400

PARAMS = {
    "smoke": dict(ns=[100, 200, 400], R_data=2, R=3, sizes=[4, 8, 16, 32, 64, 128]),
    "quick": dict(ns=[200, 400, 800, 1600], R_data=8, R=4,
                  sizes=[4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181]),
    "full": dict(ns=[200, 400, 800, 1600, 3200], R_data=12, R=8,
                 sizes=[4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256, 362, 512]),
}


def gauss(A, B):
    d2 = (A ** 2).sum(1)[:, None] + (B ** 2).sum(1)[None] - 2 * A @ B.T
    return np.exp(-np.maximum(d2, 0.0) / (2 * SIGMA ** 2))


def build_map(m, random_state):
    """Unfitted paired RFF map with m frequencies (hook: the tests break it on purpose)."""
    import randfeat

    return randfeat.RandomFourierFeatures(2 * m, kernel="gaussian", sigma=SIGMA,
                                          random_state=random_state, n_threads=1)


def frequencies_used(m, n):
    """How many of the map's frequencies the learner of nominal width m uses with n training
    points: m (a seam: the tests replace it by a learner whose width depends on n)."""
    return m


def rf_excess(W, X, y, Xt, ft, ns, sizes):
    """Excess risk mean((f-hat - f*)^2) over the test points of ridge on the first m
    frequencies of W (paired features [cos, sin] / sqrt(m)), per (n, m): array (len(ns),
    len(sizes)).  Training rows are the first n of X (nested); alpha = n^{-1/2} per sample,
    unpenalised intercept: (Zc'Zc / n + alpha I) w = Zc'(y - ybar) / n."""
    M = len(W)
    P = X @ W.T
    Z = np.hstack([np.cos(P), np.sin(P)])
    Pt = Xt @ W.T
    Zt = np.hstack([np.cos(Pt), np.sin(Pt)])
    H = Zt.T @ Zt / len(Xt)  # test moments: the error is a quadratic form in w
    tbar, q = Zt.mean(0), Zt.T @ ft / len(Xt)
    f1, f2 = float(ft.mean()), float(np.mean(ft ** 2))
    S = np.zeros((2 * M, 2 * M))
    s, sy, sy0 = np.zeros(2 * M), np.zeros(2 * M), 0.0
    out = np.empty((len(ns), len(sizes)))
    lo = 0
    for i, n in enumerate(ns):
        Zb, yb = Z[lo:n], y[lo:n]
        lo = n
        S += Zb.T @ Zb
        s += Zb.sum(0)
        sy += Zb.T @ yb
        sy0 += float(yb.sum())
        zbar, ybar = s / n, sy0 / n
        G = S - n * np.outer(zbar, zbar)
        b = sy - n * zbar * ybar
        alpha = n ** -0.5
        for j, m0 in enumerate(sizes):
            m = int(min(M, max(1, frequencies_used(m0, n))))
            idx = np.r_[0:m, M:M + m]
            A = G[np.ix_(idx, idx)] / (m * n)
            A[np.diag_indices(2 * m)] += alpha
            u = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, lower=True),
                                       b[idx] / (math.sqrt(m) * n)) / math.sqrt(m)
            c = ybar - float(zbar[idx] @ u)  # f-hat(x) = z(x)[idx]' u + c
            out[i, j] = (float(u @ H[np.ix_(idx, idx)] @ u) + 2 * c * float(tbar[idx] @ u)
                         - 2 * float(q[idx] @ u) + c * c - 2 * c * f1 + f2)
    return out


def effective_dimension(lams, nodes=300):
    """N(lambda) = sum_i mu_i / (mu_i + lambda), mu_i the eigenvalues of the integral operator
    of the Gaussian kernel (SIGMA) under the uniform law on [-1, 1]^2: products of the 1-d
    eigenvalues (the kernel and the law factorise), each by Gauss-Legendre quadrature."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    w = w / 2.0
    K = np.exp(-(x[:, None] - x[None]) ** 2 / (2 * SIGMA ** 2))
    mu = np.linalg.eigvalsh(np.sqrt(w)[:, None] * K * np.sqrt(w)[None])
    mu = mu[mu > 1e-300]
    M = np.outer(mu, mu).ravel()
    return np.array([float(np.sum(M / (M + lam))) for lam in np.atleast_1d(lams)])


def run(params, seed, progress=None):
    from randfeat.kernel_ridge import ExactKernelRidge

    ns, sizes = list(params["ns"]), list(params["sizes"])
    rng = np.random.default_rng(mc.seed_sequences(seed, NAME, "target", n=1)[0])
    C, a = rng.uniform(-1, 1, (10, 2)), rng.standard_normal(10)
    Xt = rng.uniform(-1, 1, (N_TEST, 2))
    ft = gauss(Xt, C) @ a
    sets = []
    for k, ss in enumerate(mc.seed_sequences(seed, NAME, "data", n=params["R_data"])):
        r = np.random.default_rng(ss)
        X = r.uniform(-1, 1, (max(ns), 2))
        y = gauss(X, C) @ a + NOISE * r.standard_normal(max(ns))
        e0 = [float(np.mean((ExactKernelRidge("gaussian", sigma=SIGMA, alphas=n ** -0.5,
                                              alpha_scale="mean")
                             .fit(X[:n], y[:n]).predict(Xt) - ft) ** 2)) for n in ns]
        seeds = mc.seed_sequences(seed, NAME, "maps", k, n=params["R"])
        mc.check_distinct(seeds)
        e_rf = []
        for s2 in seeds:
            est = build_map(max(sizes), mc.random_state_of(s2)).fit(X[:2])
            e_rf.append(rf_excess(maps.rff_frequencies(est), X, y, Xt, ft, ns, sizes).tolist())
            if progress is not None:
                progress.tick()
        mc.check_not_degenerate(np.asarray(e_rf), "maps")
        sets.append(dict(e_exact=e0, e_rf=e_rf))  # e_rf: (R, len(ns), len(sizes))
    return dict(ns=ns, sizes=sizes, sets=sets, sigma=SIGMA, noise=NOISE)


def knee(sizes, ratio, level=KNEE):
    """First m at which ratio(m) <= level, interpolated in log m; None if never reached; the first
    grid point if already there."""
    ratio = np.asarray(ratio, float)
    below = np.nonzero(ratio <= level)[0]
    if not len(below):
        return None
    i = below[0]
    if i == 0:
        return float(sizes[0])
    t = (ratio[i - 1] - level) / (ratio[i - 1] - ratio[i])
    return float(math.exp(math.log(sizes[i - 1]) + t * (math.log(sizes[i])
                                                          - math.log(sizes[i - 1]))))


def _ratios(sets):
    """Per training set the mean over maps of E_RF / E_exact: array (R_data, len(ns), len(m))."""
    return np.array([np.mean(np.asarray(s["e_rf"]), axis=0) / np.asarray(s["e_exact"])[:, None]
                     for s in sets])


def _slope(ns, y):
    x = np.log(ns) - np.mean(np.log(ns))
    return float(np.sum(x * np.log(y)) / np.sum(x * x))


def knees_and_slope(ns, sizes, ratios):
    """Knees of the set-averaged ratio curve per n and the slope of log knee on log n (nan when a
    knee is missing)."""
    r = ratios.mean(axis=0)
    k = [knee(sizes, r[i]) for i in range(len(ns))]
    if any(v is None for v in k):
        return k, float("nan")
    return k, _slope(np.asarray(ns, float), np.asarray(k, float))


def references(ns):
    """Slopes over the n grid of log(sqrt(n) log n) and of log N(n^{-1/2})."""
    ns = np.asarray(ns, float)
    return dict(rr=_slope(ns, np.sqrt(ns) * np.log(ns)),
                neff=_slope(ns, effective_dimension(ns ** -0.5)),
                N=effective_dimension(ns ** -0.5).tolist())


def analyse(res):
    from scipy.stats import norm

    ns, sizes = np.asarray(res["ns"], float), res["sizes"]
    ratios = _ratios(res["sets"])
    level = stats.bonferroni(ALPHA, 2)
    z = stats.z_threshold(level, two_sided=False)
    k, slope = knees_and_slope(ns, sizes, ratios)
    boot_rng = np.random.default_rng(0)  # fixed: the verdict is a function of the result
    nset = len(ratios)
    boot = np.array([knees_and_slope(ns, sizes, ratios[boot_rng.integers(0, nset, nset)])[1]
                     for _ in range(N_BOOT)])
    ok = np.isfinite(boot)
    se = float(np.std(boot[ok], ddof=1)) if ok.sum() > 2 else float("nan")
    ref = references(ns)
    upper, lower = ref["rr"] + TOL_UP, ref["neff"]
    fails = []
    missing = [int(n) for n, v in zip(ns, k, strict=True) if v is None]
    if missing:
        fails.append(f"no knee inside the grid (m <= {sizes[-1]}) for n = {missing}")
    elif not math.isfinite(se) or se <= 0:
        fails.append("no bootstrap spread of the exponent (degenerate or too few sets)")
    else:
        if slope - z * se > upper:
            fails.append(f"m_knee grows like n^{slope:.2f} ± {se:.2f}, faster than sqrt(n) "
                         f"log n (slope {ref['rr']:.2f} on this grid, + {TOL_UP})")
        if slope + z * se < lower:
            fails.append(f"m_knee grows like n^{slope:.2f} ± {se:.2f}, slower than the "
                         f"effective dimension N(n^-1/2) (slope {lower:.2f} on this grid)")
    z90 = float(norm.ppf(POWER))
    det_up = upper + (z + z90) * se if math.isfinite(se) else float("nan")
    det_lo = lower - (z + z90) * se if math.isfinite(se) else float("nan")
    per_set = []
    for i in range(nset):
        kk = [knee(sizes, ratios[i, j]) for j in range(len(ns))]
        per_set.append(kk)
    return dict(level=level, z=z, knees=k, slope=slope, se=se, boot_frac=float(ok.mean()),
                ref=ref, upper=upper, lower=lower, fails=fails, missing=missing,
                det_up=det_up, det_lo=det_lo, ratios=ratios, per_set=per_set)


def verdict(res):
    A = analyse(res)
    ns = res["ns"]
    lines = ["| n | lambda = n^-1/2 | exact KRR excess risk (mean over sets) | knee m (pooled) | "
             "knee m per set (min-max) | N(lambda) | sqrt(n) log n |",
             "|---|---|---|---|---|---|---|"]
    e0 = np.array([s["e_exact"] for s in res["sets"]])
    for j, n in enumerate(ns):
        per = [p[j] for p in A["per_set"] if p[j] is not None]
        rng_txt = f"{min(per):.0f}-{max(per):.0f}" if per else "none"
        kn = f"{A['knees'][j]:.1f}" if A["knees"][j] is not None else "none"
        lines.append(f"| {n} | {n ** -0.5:.4f} | {e0[:, j].mean():.4g} | {kn} | {rng_txt} "
                     f"({sum(p[j] is None for p in A['per_set'])} none) | "
                     f"{A['ref']['N'][j]:.1f} | {math.sqrt(n) * math.log(n):.0f} |")
    lines += ["", "| exponent of | value | allowed |", "|---|---|---|",
              f"| m_knee (measured, ± bootstrap se) | {A['slope']:.3f} ± {A['se']:.3f} | "
              f"[{A['lower']:.3f}, {A['upper']:.3f}] ± {A['z']:.2f} se |",
              f"| sqrt(n) log n on this grid | {A['ref']['rr']:.3f} | upper reference "
              f"(+ {TOL_UP}) |",
              f"| N(n^-1/2) on this grid | {A['ref']['neff']:.3f} | lower reference |"]
    fails = A["fails"]
    summ = (f"knee exponent {A['slope']:.2f} ± {A['se']:.2f} in n, inside [N(lambda) "
            f"{A['ref']['neff']:.2f}, sqrt(n) log n {A['ref']['rr']:.2f} + {TOL_UP}]; knees "
            + ", ".join(f"{k:.0f}" for k in A["knees"]) + f" at n = {ns}") if not fails else \
        f"violations: {fails}"
    power = (f"a knee exponent of {A['det_up']:.2f} or more (e.g. a knee growing like n) or of "
             f"{A['det_lo']:.2f} or less (e.g. a knee that does not grow) is rejected with "
             f"probability >= {POWER} (normal approximation with the bootstrap se "
             f"{A['se']:.3f}, one-sided z = {A['z']:.2f}); a knee beyond m = {res['sizes'][-1]} "
             "at any n always fails")
    nmaps = len(res["sets"][0]["e_rf"])
    notes = [f"Knee = first m (frequencies; 2m columns) with mean E_RF / E_exact <= {KNEE}, the "
             f"mean over {len(res['sets'])} training sets x {nmaps} maps per n.",
             "The maps are the same for every n and the smaller training sets are prefixes of "
             "the largest (common random numbers: the exponent is a within-set comparison).",
             "RF ridge can beat exact ridge slightly at moderate m (the random features add "
             "regularisation), so the ratio may dip below 1 before settling at 1.",
             f"Bootstrap over training sets: {N_BOOT} resamples, {100 * A['boot_frac']:.0f}% "
             "with a knee at every n."]
    return dict(verdict="fail" if fails else "pass",
                statistic={"knee_exponent": A["slope"], "knee_exponent_se": A["se"],
                           "knees": A["knees"], "ns": ns,
                           "exponent_sqrt_n_log_n": A["ref"]["rr"],
                           "exponent_effective_dimension": A["ref"]["neff"],
                           "detectable_exponent_above": A["det_up"],
                           "detectable_exponent_below": A["det_lo"],
                           "per_comparison_level": A["level"], "failed": fails},
                tightness=None, summary=summ, table="\n".join(lines), notes=notes, power=power)


def plot(res, v=None):
    v = verdict(res) if v is None else v
    A = analyse(res)
    fig, axes = plots.figure(ncols=2, width=5.0)
    ax, bx = axes
    ns = res["ns"]
    sizes = np.array(res["sizes"], float)
    r = A["ratios"]
    for i, n in enumerate(ns):
        c = plots.COLORS[i % len(plots.COLORS)]
        ax.plot(sizes, r[:, i].mean(axis=0), "o-", color=c, ms=3, label=f"n={n}")
        plots.band(ax, sizes, r[:, i].min(axis=0), r[:, i].max(axis=0), c, alpha=0.12)
        if A["knees"][i]:
            ax.axvline(A["knees"][i], color=c, ls=":", lw=0.8)
    ax.axhline(KNEE, color="k", lw=1, ls="--", label=f"knee level {KNEE}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots.finish(ax, "m (frequencies)", "excess risk RF ridge / exact KRR",
                 "excess-risk ratio vs m (lambda = n^-1/2; band: sets)", fontsize=6)
    ng = np.array(ns, float)
    for p in A["per_set"]:
        ok = [j for j, v_ in enumerate(p) if v_ is not None]
        bx.plot(ng[ok], [p[j] for j in ok], ".", color="0.6", ms=3)
    if all(k is not None for k in A["knees"]):
        k = np.array(A["knees"], float)
        bx.plot(ng, k, "o", color=plots.COLORS[0],
                label=f"knee (pooled): n^{A['slope']:.2f} ± {A['se']:.2f}")
        g = np.exp(np.mean(np.log(k)))
        for ref, lab, st in ((np.sqrt(ng) * np.log(ng), "c sqrt(n) log n", "--"),
                             (np.asarray(A["ref"]["N"]), "c N(n^-1/2)", ":")):
            bx.plot(ng, ref * g / np.exp(np.mean(np.log(ref))), st, color="k", label=lab)
    bx.set_xscale("log")
    bx.set_yscale("log")
    plots.finish(bx, "n (training points)", "knee m", "knee vs n (grey: per set)", fontsize=7)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
