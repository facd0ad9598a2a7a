"""Sup error of random Fourier features over a set: rate in D, growth with diam(M), paired vs
phase map in sup norm, and the tightness of three published uniform bounds on the same runs."""

from __future__ import annotations

import contextlib
import math
import sys
from unittest import mock

import numpy as np

from analysis import bounds, maps, plots, power, stats, supsearch
from analysis import montecarlo as mc

NAME = "sup_error_rate"
TITLE = "Sup error over M vs D and diam(M); paired vs phase; RR / S&S / Sriperumbudur-Szabo bounds"
CLAIM = ("Sriperumbudur & Szabo (2015): sup_{x,y in S} |k-hat_m - k| = O_p(sqrt(log |S|) / "
         "sqrt(m)) with tail (h(d,|S|,sigma) + sqrt(2 tau)) / sqrt(m) w.p. >= 1 - e^{-tau}, "
         "h = 32 sqrt(2d log(2|S|+1)) + 32 sqrt(2d log(sigma+1)) + 16 sqrt(2d/log(2|S|+1)): "
         "slope -1/2 in m (RR's extra sqrt(log m) removed) and growth at most sqrt(log diam). "
         "Sutherland & Schneider (2015): the paired (sin/cos) map has lower variance than the "
         "phase-shift map at equal embedding dimension for the Gaussian kernel, and "
         "P(sup |f| >= eps) <= 66 (sigma_p l / eps)^2 exp(-D_emb eps^2 / (8 (d + 2))). "
         "RR Claim 1: <= 2^8 (sigma_p diam / eps)^2 exp(-D eps^2 / (4 (d + 2))).")
SOURCE = ("Sriperumbudur & Szabo NIPS 2015 (arXiv:1506.02155) Thm 1 [R]; Sutherland & Schneider "
          "UAI 2015 (arXiv:1506.02785) Prop. 1-3 [R]; RR 2007 Claim 1; THEORY §2.5-2.8, "
          "Sriperumbudur & Szabó, NIPS 2015; Sutherland & Schneider, UAI 2015")
DESIGN = ("Gaussian kernel sigma = 1, d = 1, paired RandomFourierFeatures with m frequencies "
          "(k-hat depends on Delta only, so the sup over M x M, M = [0, a], is the sup over "
          "Delta in [0, a]), certified by branch and bound (supsearch.certified_sup with the "
          "per-draw Lipschitz and Hessian bounds; w read from the fitted map and checked "
          "against transform).  (A) a = 2, m on a grid, R maps each: least-squares slope of "
          "log sup on log m over all (map, m) pairs, with its standard error; pass when "
          "|slope + 1/2| <= 0.1 + z se.  (B) m fixed, one map per replicate evaluated on the "
          "nested sets M = [0, a], a = 0.5 ... a_max: per map, the least-squares exponent of "
          "sup in a over the upper half of the a grid; fail only when its mean over maps is "
          "significantly (one-sided z, Bonferroni level) above 0.25 (polynomial growth; "
          "sqrt(log diam) predicts ~0.1 there) - "
          "with the Srip.-Szabo and Claim 1 epsilons at the same diam.  (C) M = [0, 1], "
          "equal embedding width W: paired (W/2 frequencies) vs phase (W features; k-hat then "
          "depends on (x, y), so the sup is taken over a 201 x 201 grid of M x M for both "
          "maps); one-sided sign test of 'phase sup > paired sup' (fail only if the "
          "Clopper-Pearson upper limit of P(phase > paired) is below 1/2).  (D) on the runs "
          "of (A): each bound's eps at delta = 0.05 against the empirical 95% quantile "
          "(tightness eps_bound / q95); a bound is contradicted when the Clopper-Pearson lower "
          "limit of P(sup >= eps_bound) (certified lower ends) exceeds delta.")
COST = 2
TIGHTNESS = ("q95 / eps_bound of Sriperumbudur-Szabo at its tightest m (empirical 95% quantile "
             "of the sup over the bound's eps at delta = 0.05; 1 = bound attained)")
ALPHA = 1e-4
POWER = 0.9
DELTA = 0.05
SLOPE_TOL = 0.1
DIAM_EXPONENT_MAX = 0.25
SIGMA = 1.0

PARAMS = {
    "smoke": dict(a=2.0, sizes=[16, 64, 256], R=4, diam_m=64, diam_a=[0.5, 2.0, 8.0], R_diam=4,
                  widths=[64, 256], R_pair=6, grid=101, tol=0.002),
    "quick": dict(a=2.0, sizes=[16, 64, 256, 1024, 4096], R=20, diam_m=256,
                  diam_a=[0.5, 2.0, 8.0, 32.0, 128.0, 512.0], R_diam=20, widths=[64, 256, 1024],
                  R_pair=40, grid=201, tol=0.001),
    "full": dict(a=2.0, sizes=[16, 64, 256, 1024, 4096, 16384], R=60, diam_m=256,
                 diam_a=[0.5, 2.0, 8.0, 32.0, 128.0, 512.0, 2048.0], R_diam=40,
                 widths=[64, 256, 1024, 4096], R_pair=80, grid=401, tol=0.0005),
}


def build_map(W, features, random_state):
    """Unfitted map of embedding width W (hook: the tests break it on purpose)."""
    spec = dict(family="rff", kernel="gaussian", features=features, sigma=SIGMA)
    size = W // 2 if features == "paired" else W
    return maps.build(spec, size, random_state)


def map_frequencies(m, random_state):
    """Frequencies (m, 1) of a fitted paired map with m frequencies (read from the fitted map and
    verified against its transform by maps.rff_frequencies)."""
    est = build_map(2 * m, "paired", random_state)
    est.fit(np.zeros((1, 1)))
    return maps.rff_frequencies(est)


def certified_sup_1d(m, a, random_state, tol, W=None):
    """Certified [lower, upper] of sup_{Delta in [0, a]} |k-hat(Delta) - k(Delta)|, paired map
    (frequencies W if given, else drawn with random_state)."""
    if W is None:
        W = map_frequencies(m, random_state)

    def f(delta):
        return np.cos(delta @ W.T).mean(axis=1) - np.exp(-(delta ** 2).sum(axis=1) / 2)

    def grad(x):
        g = -(np.sin(x @ W.T) @ W) / len(W)
        return g + x * np.exp(-(x ** 2).sum(axis=1) / 2)[:, None]

    L = float(np.abs(W).mean()) + math.exp(-0.5)
    M2 = float((W ** 2).mean()) + 1.0
    r = supsearch.certified_sup(f, L, a, 1, grad=grad, M2=M2, tol=tol)
    return r["lower"], r["upper"]


def grid_sup(features, W, a, grid, random_state):
    """max over a grid^2 of M x M (M = [0, a]) of |z(x)'z(y) - k(x - y)|, from transform."""
    x = np.linspace(0.0, a, grid)[:, None]
    est = build_map(W, features, random_state).fit(x)
    Z = np.asarray(est.transform(x), float)
    K = np.exp(-0.5 * (x - x.T) ** 2 / SIGMA ** 2)
    return float(np.abs(Z @ Z.T - K).max())


# ------------------------------------------------------------------ published bounds (eps at delta)
def eps_claim1(m, delta, d, sigma_p, diam):
    return bounds.claim1_eps(delta, m, d, sigma_p, diam)


def eps_sutherland(m, delta, d, sigma_p, diam):
    """S&S paired bound with D_emb = 2m: 66 (sigma_p l/eps)^2 exp(-2m eps^2 / (8(d+2))) = delta
    (valid for eps <= sigma_p l) [R: recalled constant, THEORY §2.6]."""
    def b(e):
        return 66.0 * (sigma_p * diam / e) ** 2 * math.exp(-2.0 * m * e * e / (8.0 * (d + 2)))
    return bounds.invert_decreasing(b, delta, 1e-8, 1e4)


def eps_sriperumbudur(m, delta, d, sigma_p, diam):
    """Sriperumbudur & Szabo Thm 1: (h(d, |S|, sigma) + sqrt(2 log(1/delta))) / sqrt(m)
    [R, THEORY §2.7]."""
    L = math.log(2 * diam + 1)
    h = (32 * math.sqrt(2 * d * L) + 32 * math.sqrt(2 * d * math.log(sigma_p + 1))
         + 16 * math.sqrt(2 * d / L))
    return (h + math.sqrt(2 * math.log(1 / delta))) / math.sqrt(m)


BOUNDS = {"RR Claim 1": eps_claim1, "Sutherland-Schneider": eps_sutherland,
          "Sriperumbudur-Szabo": eps_sriperumbudur}


def run(params, seed, progress=None):
    tol = params["tol"]
    rate = []
    for m in params["sizes"]:
        lo, up = [], []
        for rs in mc.random_states(mc.seed_sequences(seed, NAME, "rate", m, n=params["R"])):
            l_, u_ = certified_sup_1d(m, params["a"], rs, tol)
            lo.append(l_)
            up.append(u_)
            if progress is not None:
                progress.tick()
        mc.check_not_degenerate(np.asarray(up)[:, None], f"sups (m = {m})")
        rate.append(dict(m=m, lower=lo, upper=up))
    # (B) one map per replicate, nested sets M = [0, a] (common random numbers across a)
    diam = [dict(a=a, lower=[], upper=[]) for a in params["diam_a"]]
    for rs in mc.random_states(mc.seed_sequences(seed, NAME, "diam", n=params["R_diam"])):
        W = map_frequencies(params["diam_m"], rs)
        for row in diam:
            l_, u_ = certified_sup_1d(params["diam_m"], row["a"], None, tol, W=W)
            row["lower"].append(l_)
            row["upper"].append(u_)
        if progress is not None:
            progress.tick()
    mc.check_not_degenerate(np.asarray([row["upper"] for row in diam]).T, "sups over M")
    pair = []
    for W in params["widths"]:
        pp, ph = [], []
        for ss in mc.seed_sequences(seed, NAME, "pair", W, n=params["R_pair"]):
            r1, r2 = mc.random_states(ss.spawn(2))
            pp.append(grid_sup("paired", W, 1.0, params["grid"], r1))
            ph.append(grid_sup("phase", W, 1.0, params["grid"], r2))
            if progress is not None:
                progress.tick()
        mc.check_not_degenerate(np.c_[pp, ph], f"grid sups (W = {W})")
        pair.append(dict(W=W, paired=pp, phase=ph))
    return dict(a=params["a"], d=1, sigma_p=1.0 / SIGMA, rate=rate, diam_m=params["diam_m"],
                diam=diam, pair=pair, delta=DELTA)


def analyse(res):
    n_cmp = 1 + 1 + len(res["pair"]) + len(BOUNDS) * len(res["rate"])
    level = stats.bonferroni(ALPHA, n_cmp)
    z = stats.z_threshold(level)
    out = dict(level=level, z=z, fails=[])
    # (A) slope in m, OLS over all (map, m) pairs of log sup (upper end)
    x = np.concatenate([np.full(len(s["upper"]), math.log(s["m"])) for s in res["rate"]])
    y = np.log(np.concatenate([s["upper"] for s in res["rate"]]))
    fit = stats.loglog_slope(np.exp(x), np.exp(y))
    out["slope"], out["slope_se"] = fit["slope"], fit["se"]
    out["slope_ok"] = abs(fit["slope"] + 0.5) <= SLOPE_TOL + z * fit["se"]
    if not out["slope_ok"]:
        out["fails"].append(f"(A) slope {fit['slope']:.3f} ± {fit['se']:.3f}")
    # (B) growth with diam: per-map exponent of sup in a over the upper half of the a grid
    a = np.array([s["a"] for s in res["diam"]])
    up_d = np.array([s["upper"] for s in res["diam"]])  # (n_a, R)
    med = np.median(up_d, axis=1)
    half = a >= np.median(a)
    xa = np.log(a[half]) - np.log(a[half]).mean()
    expo = (xa[:, None] * np.log(up_d[half])).sum(axis=0) / (xa ** 2).sum()  # OLS slope per map
    e_mean, e_se = float(expo.mean()), float(expo.std(ddof=1) / math.sqrt(len(expo)))
    out["diam_exponent"], out["diam_exponent_se"] = e_mean, e_se
    out["diam_median"] = med.tolist()
    # one-sided: fail only when the exponent is significantly above DIAM_EXPONENT_MAX
    out["diam_ok"] = e_mean - stats.z_threshold(level, two_sided=False) * e_se <= DIAM_EXPONENT_MAX
    if not out["diam_ok"]:
        out["fails"].append(f"(B) sup grows like diam^{e_mean:.2f} ± {e_se:.2f}")
    # sqrt(log) model: sup^2 = c0 + c1 log(a) on the upper half
    c1, c0 = np.polyfit(np.log(a[half]), med[half] ** 2, 1)
    out["sqrtlog_fit"] = dict(c0=float(c0), c1=float(c1))
    out["diam_eps"] = {name: [fn(res["diam_m"], DELTA, 1, res["sigma_p"], float(ai))
                              for ai in a] for name, fn in BOUNDS.items()}
    # (C) paired vs phase
    prow = []
    for p in res["pair"]:
        pp, ph = np.asarray(p["paired"]), np.asarray(p["phase"])
        cnt, R = int(np.sum(ph > pp)), len(pp)
        up = float(stats.clopper_pearson_upper(cnt, R, level))
        ok = up >= 0.5
        if not ok:
            out["fails"].append(f"(C) W={p['W']}: phase beats paired ({cnt}/{R})")
        prow.append(dict(W=p["W"], med_paired=float(np.median(pp)),
                         med_phase=float(np.median(ph)),
                         ratio=float(np.median(ph / pp)), count=cnt, R=R, cp_upper=up, ok=ok))
    out["pair"] = prow
    # (D) bounds on the runs of (A)
    diam_M = res["a"]  # M = [0, a] in d = 1
    brow = []
    for s in res["rate"]:
        q95 = float(np.quantile(s["upper"], 1 - DELTA))
        for name, fn in BOUNDS.items():
            e = float(fn(s["m"], DELTA, 1, res["sigma_p"], diam_M))
            cnt = int(np.sum(np.asarray(s["lower"]) >= e))
            lo = float(stats.clopper_pearson_lower(cnt, len(s["lower"]), level))
            viol = lo > DELTA
            if viol:
                out["fails"].append(f"(D) {name} at m={s['m']}: {cnt}/{len(s['lower'])} sups "
                                    f">= eps_bound {e:.3g}")
            brow.append(dict(bound=name, m=s["m"], eps=e, q95=q95, tight=e / q95, count=cnt,
                             violated=viol))
    out["bounds"] = brow
    out["power"] = _power(res, out)
    return out


def distinct_frequencies(m, delta):
    """How many distinct frequencies the audit's map of nominal width m keeps for a slope
    deviation delta: round(m^(1 - 2 delta)), at least 1."""
    return max(1, int(round(m ** (1 - 2 * delta))))


def slope_detectable(res, z, z90, se):
    """The slope deviation delta that part A detects with probability >= POWER, for the
    deviation the audit injects (a map of m frequencies with only distinct_frequencies(m, delta)
    distinct ones, whose sup behaves like that of the smaller map: E log sup = c - (1/2) log k).
    Expected shift of the fitted slope: s(delta) = (1 - OLS slope of log k(m) on log m) / 2 on
    this design's (map, m) pairs, the integer rounding of k included; standard error: the
    design's, inflated by max_m sd(log sup at m) / pooled sd (the smaller maps' sups may be as
    variable as the most variable m of the run).  Solves s(delta) = SLOPE_TOL + (z + z90) se'
    by bisection; None if no delta < 1/2 reaches it."""
    ms = np.array([s_["m"] for s_ in res["rate"]], float)
    nrep = np.array([len(s_["upper"]) for s_ in res["rate"]], float)
    sds = np.array([np.std(np.log(s_["upper"]), ddof=1) for s_ in res["rate"]])
    pooled = math.sqrt(float(np.sum((nrep - 1) * sds ** 2) / np.sum(nrep - 1)))
    se_alt = se * float(np.max(sds)) / pooled
    need = SLOPE_TOL + (z + z90) * se_alt
    x = np.repeat(np.log(ms), nrep.astype(int))

    def shift(delta):
        k = np.array([distinct_frequencies(int(m), delta) for m in ms], float)
        yk = np.repeat(np.log(k), nrep.astype(int))
        b = float(np.sum((x - x.mean()) * (yk - yk.mean())) / np.sum((x - x.mean()) ** 2))
        return 0.5 * (1 - b)

    grid = np.linspace(0.0, 0.49, 491)
    sh = np.array([shift(d) for d in grid])
    ok = np.nonzero(sh >= need)[0]
    # the smallest delta from which every larger grid delta reaches the need (rounding makes
    # the shift a step function)
    for i in ok:
        if np.all(sh[i:] >= need):
            return float(grid[i])
    return None


def _power(res, A):
    """Smallest deviations each part detects with probability >= POWER at its level (normal
    approximation for A and B with the design's se; exact binomial for C and D)."""
    from scipy.stats import binom, norm

    z90 = float(norm.ppf(POWER))
    level, z = A["level"], A["z"]
    out = dict(slope=slope_detectable(res, z, z90, A["slope_se"]),
               diam=DIAM_EXPONENT_MAX + (stats.z_threshold(level, two_sided=False) + z90)
               * A["diam_exponent_se"])
    # C: the check fails when the Clopper-Pearson upper limit of P(phase > paired) is < 1/2;
    # the largest failing count c, then the P(phase > paired) = p with P(Bin(R, p) <= c) = POWER
    R = len(res["pair"][0]["paired"]) if res["pair"] else 0
    cs = [c for c in range(R + 1) if stats.clopper_pearson_upper(c, R, level) < 0.5]
    if cs:
        from scipy.optimize import brentq

        c = max(cs)
        out["pair_p"] = float(brentq(lambda p: binom.cdf(c, R, p) - POWER, 1e-12, 1 - 1e-12))
    else:
        out["pair_p"] = None
    # D: a true exceedance probability >= p1 of eps_bound is detected; as a factor: the bound
    # must lie below the (1 - p1) quantile of the sup, i.e. q95 / q_(1-p1) below the true 95%
    # quantile (median over m of the empirical quantiles)
    Rr = len(res["rate"][0]["lower"])
    p1 = stats.binomial_detectable_ratio(DELTA, Rr, level) * DELTA
    out["bound_p1"] = float(p1)
    if p1 < 1:
        f = [float(np.quantile(s_["lower"], 1 - DELTA) / np.quantile(s_["lower"], 1 - p1))
             for s_ in res["rate"]]
        out["bound_factor"] = float(np.median(f))
    else:
        out["bound_factor"] = None
    return out


def verdict(res):
    A = analyse(res)
    tight = {}
    for name in BOUNDS:
        ts = [b["tight"] for b in A["bounds"] if b["bound"] == name]
        tight[name] = (float(min(ts)), float(max(ts)))
    lines = ["| part | quantity | value | verdict |", "|---|---|---|---|",
             f"| A | slope of log sup vs log m (a={res['a']:g}) | {A['slope']:.3f} ± "
             f"{A['slope_se']:.3f} | {'ok' if A['slope_ok'] else 'FAIL'} |",
             f"| B | mean per-map exponent of sup in diam (upper half of the a grid, "
             f"m={res['diam_m']}) | "
             f"{A['diam_exponent']:.3f} ± {A['diam_exponent_se']:.3f} | "
             f"{'ok' if A['diam_ok'] else 'FAIL'} |"]
    for p in A["pair"]:
        lines.append(f"| C | W={p['W']}: median sup paired / phase (ratio phase/paired) | "
                     f"{p['med_paired']:.4f} / {p['med_phase']:.4f} ({p['ratio']:.2f}x; phase "
                     f"larger in {p['count']}/{p['R']}) | {'ok' if p['ok'] else 'FAIL'} |")
    lines.append("")
    lines.append("| m | empirical q95 of sup | " + " | ".join(
        f"{n} eps (tightness eps/q95)" for n in BOUNDS) + " |")
    lines.append("|---|---|" + "---|" * len(BOUNDS))
    for s in res["rate"]:
        bs = [b for b in A["bounds"] if b["m"] == s["m"]]
        lines.append(f"| {s['m']} | {bs[0]['q95']:.4f} | " + " | ".join(
            f"{b['eps']:.3g} ({b['tight']:.0f}x){' VIOLATED' if b['violated'] else ''}"
            for b in bs) + " |")
    lines.append("")
    lines.append("| a (diam) | median sup | " + " | ".join(f"{n} eps" for n in BOUNDS) + " |")
    lines.append("|---|---|" + "---|" * len(BOUNDS))
    for i, s in enumerate(res["diam"]):
        lines.append(f"| {s['a']:g} | {A['diam_median'][i]:.4f} | " + " | ".join(
            f"{A['diam_eps'][n][i]:.3g}" for n in BOUNDS) + " |")
    P = A["power"]
    det = []
    if P["slope"] is not None:
        det.append(power.effect("slope of the sup error in m off -1/2 (a map with m^(1 - 2 "
                                "delta) distinct frequencies)", P["slope"], "absolute",
                                where=f"part A, M = [0, {res['a']:g}], normal approximation "
                                      "with the design's se"))
    context_power = (
        f"(B) a growth exponent in diam of {P['diam']:.2f} or more; "
        + (f"(C) P(phase sup > paired sup) of {P['pair_p']:.2f} or less; "
           if P["pair_p"] is not None else "(C) none (too few pairs); ")
        + (f"(D) a bound whose true failure probability is {P['bound_p1']:.2f} or more instead "
           f"of delta = {DELTA}, i.e. about {P['bound_factor']:.2f}x below the true 95% "
           "quantile of the sup" if P["bound_factor"] is not None else
           "(D) no bound violation detectable with these R")
        + f" - by formula at the per-comparison level {A['level']:.1e} (B: normal "
        "approximation; C, D: exact binomial); not audited (no public seam injects these "
        "deviations at a stated size), so not part of the power statement")
    fails = A["fails"]
    summ = (f"sup error slope {A['slope']:.2f} ± {A['slope_se']:.2f} in m; grows like "
            f"diam^{A['diam_exponent']:.2f} (sqrt-log); phase/paired sup ratio "
            + ", ".join(f"{p['ratio']:.2f}" for p in A["pair"])
            + "; bounds over-state eps by " + ", ".join(
                f"{n} {lo:.0f}-{hi:.0f}x" for n, (lo, hi) in tight.items())
            ) if not fails else f"violations: {fails}"
    notes = [f"sqrt(log) model on the upper half of the diam grid: median sup^2 = "
             f"{A['sqrtlog_fit']['c0']:.2e} + {A['sqrtlog_fit']['c1']:.2e} log(a) "
             f"(for a stationary Gaussian field the sup^2 grows like 2 Var log a = log(a)/m "
             f"= {1 / res['diam_m']:.2e} log a).",
             "S&S and Sriperumbudur-Szabo constants are recalled [R] (THEORY §2.6-2.7); the S&S "
             "form used is the relaxed 66 (sigma_p l/eps)^2 exp(-D_emb eps^2/(8(d+2))), "
             "D_emb = 2m.",
             "Part C uses a grid of M x M (a lower bound of the sup, the same for both maps); "
             "A, B and D use certified sups (intervals of width <= max(tol, 5% of the value)).",
             "Power of the other parts: " + context_power]
    return dict(verdict="fail" if fails else "pass",
                statistic={"slope": A["slope"], "slope_se": A["slope_se"],
                           "diam_exponent": A["diam_exponent"],
                           "phase_over_paired": [p["ratio"] for p in A["pair"]],
                           "tightness_min": {n: t[0] for n, t in tight.items()},
                           "detectable_parts": P,
                           "per_comparison_level": A["level"], "failed": fails},
                tightness=float(1.0 / tight["Sriperumbudur-Szabo"][0]), summary=summ,
                table="\n".join(lines), notes=notes, detectable=det,
                power=power.statement(det))


@contextlib.contextmanager
def audit(effect):
    """A sup error whose slope in m is -1/2 + size: the paired map of m frequencies that has
    only k = m^(1 - 2 size) distinct ones, each repeated (its k-hat is the k-frequency map's,
    sup ~ k^(-1/2) = m^(-1/2 + size)); seam: ``map_frequencies``."""
    me = sys.modules[__name__]
    real = map_frequencies
    d = float(effect["size"])
    if not effect["effect"].startswith("slope of the sup error"):
        raise ValueError(f"{NAME}.audit: unknown effect {effect['effect']!r}")

    def fewer(m, random_state):
        k = distinct_frequencies(m, d)
        W = real(k, random_state)
        return W[np.arange(m) % k]

    with mock.patch.object(me, "map_frequencies", fewer):
        yield


def plot(res, v=None):
    v = verdict(res) if v is None else v
    A = analyse(res)
    fig, axes = plots.figure(ncols=3, width=4.4)
    ax, bx, cx = axes
    ms = np.array([s["m"] for s in res["rate"]], float)
    up = np.array([s["upper"] for s in res["rate"]])
    ax.plot(ms, np.median(up, axis=1), "o-", color=plots.COLORS[0], label="median sup")
    ax.plot(ms, np.quantile(up, 1 - DELTA, axis=1), "^-", color=plots.COLORS[0], ms=4,
            label="95% quantile")
    plots.band(ax, ms, up.min(axis=1), up.max(axis=1), plots.COLORS[0], alpha=0.15)
    for i, name in enumerate(BOUNDS):
        ax.plot(ms, [b["eps"] for b in A["bounds"] if b["bound"] == name], "--",
                color=plots.COLORS[i + 1], label=f"{name} (delta=0.05)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots.finish(ax, "m (frequencies)", "sup_{M x M} |k-hat - k|",
                 f"(A, D) M=[0,{res['a']:g}], slope {A['slope']:.2f}", fontsize=6)
    a = np.array([s["a"] for s in res["diam"]], float)
    dup = np.array([s["upper"] for s in res["diam"]])
    med = np.median(dup, axis=1)
    bx.plot(a, med, "o-", color=plots.COLORS[0], label="median sup")
    plots.band(bx, a, dup.min(axis=1), dup.max(axis=1), plots.COLORS[0], alpha=0.15)
    # what the check fits and tests: the upper half of the a grid (small sets are in the
    # k-hat(0) = k(0) = 1 regime, sup ~ a^2, not the asymptotic sqrt-log one)
    half = a >= np.median(a)
    ah = np.geomspace(a[half][0], a[half][-1], 50)
    fit = A["sqrtlog_fit"]
    bx.axvspan(a[half][0], a[half][-1], color="0.92", zorder=0, label="fit range (upper half)")
    bx.plot(ah, np.sqrt(np.maximum(fit["c0"] + fit["c1"] * np.log(ah), 0.0)), "-", color="k",
            lw=1.2, label="sqrt(c0 + c1 log a), fitted")
    a0 = a[half][0]
    bx.plot(ah, med[half][0] * (ah / a0) ** DIAM_EXPONENT_MAX, "--", color=plots.COLORS[3],
            lw=1, label=f"a^{DIAM_EXPONENT_MAX} (fail above: polynomial growth)")
    bx.plot(ah, med[half][0] * (ah / a0) ** A["diam_exponent"], ":", color=plots.COLORS[2],
            lw=1.2, label=f"a^{A['diam_exponent']:.2f} (mean per-map exponent)")
    bx.set_xscale("log")
    bx.set_yscale("log")
    plots.finish(bx, "a = diam(M) (M = [0, a])", "sup error",
                 f"(B) growth with diam, m={res['diam_m']}", fontsize=6)
    Ws = np.array([p["W"] for p in res["pair"]], float)
    for j, key in enumerate(("paired", "phase")):
        vals = np.array([p[key] for p in res["pair"]])
        cx.plot(Ws, np.median(vals, axis=1), "o-", color=plots.COLORS[j], label=key)
        plots.band(cx, Ws, np.quantile(vals, 0.1, axis=1), np.quantile(vals, 0.9, axis=1),
                   plots.COLORS[j])
    cx.set_xscale("log")
    cx.set_yscale("log")
    plots.finish(cx, "embedding width W", "sup over grid of M x M", "(C) paired vs phase, "
                 "M=[0,1]", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
