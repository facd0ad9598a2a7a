"""Check 4 — RR Claim 1: uniform convergence of random Fourier features over a compact set."""

from __future__ import annotations

import contextlib
import math
from unittest import mock

import numpy as np

from analysis import bounds, maps, plots, report, stats, supsearch
from analysis import montecarlo as mc
from analysis import power as _power

NAME = "claim1"
TITLE = "RR Claim 1: sup over M of |z(x)'z(y) - k(x, y)| (paired RFF, Gaussian)"
CLAIM = ("'Let M be a compact subset of R^d with diameter diam(M). Then, for the mapping z defined "
         "in Algorithm 1, Pr[sup_{x,y in M} |z(x)'z(y) - k(y, x)| >= eps] <= "
         "2^8 (sigma_p diam(M)/eps)^2 exp(-D eps^2 / (4(d + 2))), where sigma_p^2 = E_p[w'w]' "
         "(D = number of frequencies of the paired map); hence D = Omega(d/eps^2 "
         "log(sigma_p diam(M)/eps)) suffices for constant failure probability.")
SOURCE = "RR 2007 §3, Claim 1 (proof in the appendix); THEORY §2.5, §2.8, §5 (P4)"
DESIGN = ("Gaussian kernel, sigma = 1 (sigma_p = sqrt(d)), M = [0, a]^d (diam = a sqrt(d)), "
          "paired RandomFourierFeatures; R independent D-frequency maps per (d, a, D): the "
          "frequencies of a fitted map are i.i.d., so one fit with n D frequencies (read from "
          "frequencies_ and checked against transform) holds n independent D-frequency maps, its "
          "consecutive groups of D (each fit seeded from its own SeedSequence child). k-hat(x, y) "
          "= z(0)'z(x - y) for this map, so the sup over M x M is the sup over the difference box "
          "[-a, a]^d (half of it by symmetry). d <= 2: certified branch-and-bound "
          "(supsearch.certified_sup) with the per-draw Lipschitz constant L = mean_j ||w_j|| + "
          "sup ||grad k|| and the second-order bound |f(c)| + ||grad f(c)|| r + M2 r^2/2 with M2 = "
          "mean_j ||w_j||^2 + 1/sigma^2 >= ||Hess f||: an interval [lower, upper] of width <= "
          "max(tol, 5% of lower). d > 2: random candidates + L-BFGS-B multistart, a LOWER bound. "
          "The verdict: per (d, a, D) the TAIL TEST of the bound at its own eps, eps_b(D) = "
          "the eps where the bound equals delta = 0.05: the bound is contradicted if the one-sided "
          "Clopper-Pearson lower limit of P(sup >= eps_b) (counting the certified LOWER ends) "
          "exceeds delta, Bonferroni over the non-vacuous sizes (eps_b < 2; no error reaches 2). "
          "Power (computed, audited): the factor f by which the bound could be too tight in eps "
          "(eps_b -> eps_b / f) that the tail tests reject with probability >= 0.98, from R, the "
          "Bonferroni level and a lower confidence limit of the sup's quantile "
          "(stats.tail_tightening). Reported beside it: D_emp = "
          "the D where the empirical 95% quantile of the sup (upper end) reaches eps, from "
          "log-log interpolation over the D grid; D_bound = the D at which Claim 1's bound "
          "equals delta (closed-form inversion); over-prediction = D_bound / D_emp with a "
          "bootstrap interval.")
COST = 5  # relative run time, used to schedule --jobs
TIGHTNESS = ("D_emp / D_bound: the D at which the empirical 95% quantile of the sup error reaches "
             "eps over the D at which Claim 1's bound reaches delta = 0.05 (median over settings "
             "and eps; 1 = bound attained)")
ALPHA = 1e-5
DELTA = 0.05

ERR_MAX = 2.0  # |k-hat - k| < 2 always (|k-hat| <= 1, 0 < k <= 1): a bound eps >= 2 is vacuous

PARAMS = {
    "smoke": dict(settings=[dict(d=1, a=1.0)], sizes=[4, 32, 256], R=40, eps=[0.25, 0.5],
                  tol=0.01, n_candidates=1000),
    "quick": dict(settings=[dict(d=1, a=1.0), dict(d=1, a=4.0),
                            dict(d=2, a=1.0, sizes=[4, 16, 64, 256], R=100)],
                  sizes=[4, 16, 64, 256, 1024], R=1000, eps=[0.1, 0.25, 0.5], tol=0.001,
                  n_candidates=1000, n_starts=2),
    "full": dict(settings=[dict(d=1, a=1.0), dict(d=1, a=4.0),
                           dict(d=2, a=1.0, sizes=[4, 16, 64, 256, 1024], R=200),
                           dict(d=2, a=3.0, sizes=[4, 16, 64, 256, 1024], R=100),
                           dict(d=5, a=1.0, sizes=[4, 16, 64, 256, 1024], R=60),
                           dict(d=10, a=1.0, sizes=[16, 64, 256, 1024], R=40)],
                 sizes=[4, 16, 64, 256, 1024, 4096], R=2000,
                 eps=[0.05, 0.1, 0.25, 0.5], tol=0.0005, n_candidates=5000, n_starts=5),
}
SIGMA = 1.0
GRAD_K_MAX = math.exp(-0.5) / SIGMA  # sup ||grad exp(-||x||^2/2)|| at ||x|| = 1
FIT_FREQ = 1 << 14  # frequencies per fitted map; its groups of D frequencies are the replicates


def bound_eps(delta, D, d, sigma_p, diam):
    """The eps at which Claim 1's bound equals delta (a seam: tests swap in a too-tight bound)."""
    return bounds.claim1_eps(delta, D, d, sigma_p, diam)


def _sups(spec, D, n, rs, d, a, params, rng):
    """Certified (d <= 2) or searched (d > 2) sups of n independent D-frequency estimates: one
    fitted map with n D i.i.d. frequencies (its frequencies_ verified against its transform by
    maps.rff_frequencies), split into n consecutive groups of D (each group is the paired map
    of Algorithm 1 with D frequencies)."""
    est = maps.build(spec, n * D, rs)
    est.fit(np.zeros((1, d)))
    W_all = maps.rff_frequencies(est)
    out = []
    for g in range(n):
        W = W_all[g * D:(g + 1) * D]

        def f(delta, W=W):
            delta = np.atleast_2d(delta)
            return (np.cos(delta @ W.T).mean(axis=1)
                    - np.exp(-(delta ** 2).sum(axis=1) / (2 * SIGMA ** 2)))

        if d <= 2:
            L = float(np.linalg.norm(W, axis=1).mean()) + GRAD_K_MAX
            M2 = float((W ** 2).sum(axis=1).mean()) + 1.0 / SIGMA ** 2

            def grad_m(x, W=W):
                g_ = -(np.sin(x @ W.T) @ W) / len(W)
                kx = np.exp(-(x ** 2).sum(axis=1) / (2 * SIGMA ** 2))
                return g_ + x * kx[:, None] / SIGMA ** 2

            r = supsearch.certified_sup(f, L, a, d, grad=grad_m, M2=M2, tol=params["tol"])
            out.append((r["lower"], r["upper"]))
            continue

        def grad(x, W=W):
            return -(W.T @ np.sin(W @ x)) / len(W) + x * math.exp(-x @ x / 2) / SIGMA ** 2

        r = supsearch.search_sup(f, grad, a, d, rng, n_candidates=params["n_candidates"],
                                 n_starts=params.get("n_starts", 5))
        out.append((r["lower"], r["lower"]))
    return out


def run(params, seed, progress=None):
    spec = dict(family="rff", kernel="gaussian", features="paired", sigma=SIGMA)
    out = []
    for st in params["settings"]:
        d, a = st["d"], st["a"]
        R = st.get("R", params["R"])
        per_size = []
        for D in st.get("sizes", params["sizes"]):
            per = max(1, FIT_FREQ // D)
            seeds = mc.seed_sequences(seed, NAME, d, a, D, n=-(-R // per))
            mc.check_distinct(seeds)
            lo, up = [], []
            for ss in seeds:
                rng = np.random.default_rng(ss.spawn(1)[0])
                n = min(per, R - len(lo))
                for l_, u_ in _sups(spec, D, n, mc.random_state_of(ss), d, a, params, rng):
                    lo.append(l_)
                    up.append(u_)
                if progress is not None:
                    progress.tick(n)
            mc.check_not_degenerate(np.asarray(up)[:, None], "sup values")
            per_size.append(dict(D=D, lower=lo, upper=up))
        out.append(dict(d=d, a=a, diam=a * math.sqrt(d), sigma_p=math.sqrt(d) / SIGMA,
                        certified=d <= 2, R=R, sizes=per_size))
    lap = None
    try:
        from randfeat.kernels import get_kernel

        lap = float(get_kernel("laplacian", 1.0).sigma_p2(3))
    except Exception as exc:  # recorded (the verdict fails on it)
        lap = repr(exc)
    errors = [] if isinstance(lap, float) else [f"Laplacian sigma_p^2: {lap}"]
    return dict(R=params["R"], eps=params["eps"], delta=DELTA, settings=out,
                laplacian_sigma_p2=lap, errors=errors)


def _d_needed(Ds, q, eps, fit):
    """Smallest D where the empirical quantile curve q(D) reaches eps: log-log interpolation
    between the bracketing grid points; outside the grid, the log-log fit (flagged)."""
    inside = stats.loglog_crossing(Ds, q, eps)
    if inside is not None:
        return inside, False
    return math.exp((math.log(eps) - fit["intercept"]) / fit["slope"]), True


def _tail_tests(res):
    """One tail test of Claim 1 per (setting, D): P(sup >= eps_bound(D, delta)) <= delta, from
    the R certified lower ends (report.tail_test); Bonferroni over the non-vacuous ones (the
    vacuous ones, eps_bound >= 2, are known from the design)."""
    pts = [(st, s) for st in res["settings"] for s in st["sizes"]]
    eb = [float(bound_eps(DELTA, s["D"], st["d"], st["sigma_p"], st["diam"])) for st, s in pts]
    m = sum(e < ERR_MAX for e in eb)
    level = stats.bonferroni(ALPHA, m)
    tests = []
    for (st, s), e in zip(pts, eb, strict=True):
        t = report.tail_test(s["lower"], e, DELTA, level, exceed=">=", err_max=ERR_MAX)
        tests.append(dict(t, d=st["d"], a=st["a"], D=s["D"], certified=st["certified"]))
    return tests, level


def analyse(res):
    """Per (setting, eps): D_emp, D_bound, over-prediction (with bootstrap CI) and slope."""
    rows = []
    for st in res["settings"]:
        Ds = np.array([s["D"] for s in st["sizes"]], float)
        q_up = np.array([np.quantile(s["upper"], 1 - DELTA) for s in st["sizes"]])
        med = np.array([np.median(s["upper"]) for s in st["sizes"]])
        fit = stats.loglog_slope(Ds, q_up)
        for eps in res["eps"]:
            d_emp, extrap = _d_needed(Ds, q_up, eps, fit)
            ci = stats.bootstrap_needed_size(
                Ds, [s["upper"] for s in st["sizes"]], eps,
                lambda g, qq, e: _d_needed(g, qq, e, stats.loglog_slope(g, qq))[0], q=1 - DELTA)
            d_bound = bounds.claim1_D(DELTA, eps, st["d"], st["sigma_p"], st["diam"])
            d_vac = bounds.claim1_vacuous_below(eps, st["d"], st["sigma_p"], st["diam"])
            rows.append(dict(d=st["d"], a=st["a"], diam=st["diam"], eps=eps, D_emp=d_emp,
                             extrapolated=extrap,
                             D_bound=d_bound, D_vacuous_below=d_vac, over=d_bound / d_emp,
                             over_ci=report.over_ci(d_bound, ci),
                             slope=fit["slope"], slope_se=fit["se"], certified=st["certified"],
                             q_up=q_up.tolist(), median=med.tolist(),
                             relaxation_ok=st["sigma_p"] * st["diam"] / eps >= 1))
    return rows


def verdict(res):
    rows = analyse(res)
    tests, level = _tail_tests(res)
    notes = []
    nv = [t for t in tests if not t["vacuous"]]
    fails = [f"d={t['d']} a={t['a']:g} D={t['D']}" for t in tests if t["violated"]]
    table = (report.needed_size_table(rows, "D") + "\n\n*Tail tests of the bound* (delta = "
             f"{DELTA}): P(sup >= eps_bound) <= delta contradicted if the Clopper-Pearson lower "
             f"limit > delta (level {level:.1e} each)\n\n" + report.tail_table(tests, "D", ">="))
    cert = [r for r in rows if r["certified"] and not r["extrapolated"]]
    overs = [r["over"] for r in cert] or [r["over"] for r in rows]
    slopes = sorted({round(r["slope"], 3) for r in rows})
    lap = res.get("laplacian_sigma_p2")
    lap_ok = isinstance(lap, float) and math.isinf(lap)
    if not lap_ok:
        fails.append("Laplacian sigma_p^2 not infinite")
    notes.append(f"Claim 1 needs sigma_p < inf: randfeat.kernels Laplacian sigma_p2(3) = {lap} "
                 f"({'infinite: the bound is correctly inapplicable' if lap_ok else 'WRONG'}).")
    notes.append("d <= 2: sup certified to within tol (branch and bound); d > 2: random search + "
                 "L-BFGS-B, a lower bound on the sup, so D_emp and the over-prediction factor are "
                 "then lower/upper estimates respectively. The tail tests count the LOWER ends "
                 "(conservative).")
    notes.append("Empirical sup error slopes in D (log-log, expected about -1/2 up to log "
                 "factors): "
                 + ", ".join(f"{s:.2f}" for s in slopes))
    verdict_ = "fail" if fails else ("pass" if nv else "vacuous")
    pool = cert or rows
    rmin = min(pool, key=lambda r: r["over"])
    rmax = max(pool, key=lambda r: r["over"])
    slack = np.array([t["slack"] for t in nv], float)
    det = _detectable(res, tests)
    power = _power.statement(det)
    summ = (f"Claim 1 over-predicts the D needed by {rmin['over']:.0f}x"
            f"{report.ci_txt(rmin['over_ci'])} to {rmax['over']:.0f}x"
            f"{report.ci_txt(rmax['over_ci'])} (95% bootstrap CIs; certified, interpolated "
            f"settings, delta = {DELTA}); tail tests at the bound's eps: {len(nv)} non-vacuous, "
            + ("none violated" if not fails else f"VIOLATED: {fails}")
            + (f" (its eps {slack.min():.1f}x to {slack.max():.1f}x the empirical "
               f"{1 - DELTA:g} quantile)" if len(slack) else ""))
    return dict(verdict=verdict_,
                statistic={"over_prediction_min": min(overs), "over_prediction_max": max(overs),
                           "over_prediction_min_ci95": rmin["over_ci"],
                           "over_prediction_max_ci95": rmax["over_ci"],
                           "over_prediction_median": float(np.median(overs)),
                           "slopes": slopes, "tail_tests": len(nv),
                           "tail_slack_min": float(slack.min()) if len(slack) else None,
                           "detectable_failure_probability": max(t["p1"] for t in nv) if nv
                           else None,
                           "detectable_too_tight_median": float(np.median(
                               [t["too_tight"] for t in nv])) if nv else None,
                           "per_comparison_level": level, "failed": fails},
                tightness=float(1.0 / np.median(overs)), tightness_ci=report.tightness_ci(pool),
                summary=summ, table=table, notes=notes, detectable=det, power=power)


def plot(res, v):
    rows = analyse(res)
    fig, axes = plots.figure(ncols=2, width=5.6)
    ax, bx = axes
    for i, st in enumerate(res["settings"]):
        c = plots.COLORS[i % len(plots.COLORS)]
        Ds = np.array([s["D"] for s in st["sizes"]], float)
        up = np.array([s["upper"] for s in st["sizes"]])
        q = np.quantile(up, 1 - DELTA, axis=1)
        lab = f"d={st['d']}, a={st['a']:g}{'' if st['certified'] else ' (lower bd)'}"
        ax.plot(Ds, np.median(up, axis=1), "o-", color=c, label=lab + " median")
        ax.plot(Ds, q, "^--", color=c, ms=4, lw=0.8, label="95% quantile")
        plots.band(ax, Ds, up.min(axis=1), up.max(axis=1), c, alpha=0.12)
    for eps in res["eps"]:
        ax.axhline(eps, color="gray", lw=0.6, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plots.finish(ax, "D (frequencies)", "sup over M x M of |k-hat - k| (kernel units)",
                 "empirical sup error (band: min-max over fits)", fontsize=6)
    plots.needed_vs_eps(bx, res["settings"], rows, emp_key="D_emp", bound_key="D_bound",
                        bound_label="Claim 1 (delta=0.05)", ylabel="D needed (frequencies)",
                        title="D for P(sup >= eps) <= 0.05: bound (dashed) vs empirical")
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig


def _detectable(res, tests):
    """:func:`analysis.stats.sup_tail_detectable` of this run (sizes ``D``)."""
    return stats.sup_tail_detectable(res["settings"], tests, "D", DELTA, ALPHA)


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the bound's eps divided by the factor (seam: ``bound_eps`` of this
    module), a bound that many times too tight."""
    if not effect["effect"].startswith("bound too tight"):
        raise ValueError(f"{NAME}.audit: unknown effect {effect['effect']!r}")
    f = float(effect["size"])
    real = bound_eps
    with mock.patch(f"{__name__}.bound_eps", lambda *a: real(*a) / f):
        yield
