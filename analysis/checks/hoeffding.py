"""Check 3 — pointwise Hoeffding tails against the empirical tails."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
from scipy import stats as _st

from analysis import bounds, maps, plots, stats
from analysis import montecarlo as mc
from analysis import pooled as pooled_design
from analysis import power as _power

NAME = "hoeffding"
TITLE = "Pointwise tail P(|k-hat - k| >= eps) vs Hoeffding"
CLAIM = ("P[|z(x)'z(y) - k(x, y)| >= eps] <= 2 exp(-D eps^2 / 2) for the paired map with D "
         "frequencies (printed in RR 2007 §3: 'since z_w(x)'z_w(y) is bounded between -1 and 1'); "
         "<= 2 exp(-D eps^2 / 8) for the phase-shift map with D features (terms in [-2, 2]); "
         "<= 2 exp(-2 P eps^2) for binning with P grids (terms in [0, 1]).")
SOURCE = "RR 2007 §3 (after eq. (2)); THEORY §2.4, §3.5; Hoeffding 1963 Thm 2"
DESIGN = ("Fixed pair with ||Delta||/sigma = 1 (Gaussian k = 0.607; binning: Laplacian L1 "
          "kernel), d = 3. For each D on a grid, R independent D-term estimates give |k-hat - "
          "k| (pooled design, analysis.pooled: the terms of one fitted map -- frequencies, "
          "phase features, grids -- are i.i.d., so one fit with K D terms holds K independent "
          "estimates, its consecutive groups; each fit seeded from its own SeedSequence "
          "child). At each eps of a grid, the empirical tail p-hat is compared with the bound: the "
          "bound is contradicted only if the one-sided Clopper-Pearson LOWER limit of p exceeds "
          "it (Bonferroni over all (map, D, eps)); where the bound is >= 1 the comparison is "
          "vacuous. Tightness: eps_emp(1 - delta) / eps_bound(delta) at delta = 0.05, eps_emp the "
          "empirical 95% quantile of |k-hat - k|, eps_bound from inverting the bound; also for "
          "Bernstein with the exact variance (THEORY §2.4).")
COST = 1  # relative run time, used to schedule --jobs
TIGHTNESS = ("eps_emp / eps_bound at delta = 0.05 for the paired map: the empirical 95% quantile "
             "of |k-hat - k| over the eps at which Hoeffding's bound equals 0.05 (mean over D; 1 ="
             " bound attained)")
ALPHA = 1e-5
DELTA = 0.05
FIT_TERMS = 1 << 13  # terms per fitted map; its consecutive groups of D terms are the replicates

_MAPS = [dict(family="rff", kernel="gaussian", features="paired"),
         dict(family="rff", kernel="gaussian", features="phase"),
         dict(family="binning", kernel="laplacian")]
PARAMS = {
    "smoke": dict(maps=_MAPS, d=3, sizes=[8, 32], R=200, n_eps=8),
    "quick": dict(maps=_MAPS, d=3, sizes=[4, 16, 64, 256], R=4000, n_eps=12),
    "full": dict(maps=_MAPS, d=3, sizes=[4, 8, 16, 32, 64, 128, 256, 512, 1024], R=20000,
                 n_eps=20),
}


def _width_b(spec, k):
    """(Hoeffding range, Bernstein |term - mean| bound) for the map's terms (THEORY §2.4, §3.5)."""
    if spec["family"] == "binning":
        return 1.0, max(k, 1 - k)
    if spec["features"] == "paired":
        return 2.0, 2.0
    return 4.0, 3.0


def _per_term_var(spec, k, k2):
    if spec["family"] == "binning":
        return float(bounds.var_binning(k))
    if spec["features"] == "paired":
        return float(bounds.var_rff_paired(k, k2))
    return float(bounds.var_rff_phase(k, k2))


def run(params, seed, progress=None):
    d = params["d"]
    geo = np.random.default_rng(20070103)
    x0 = geo.uniform(-0.5, 0.5, size=d)
    u = geo.standard_normal(d)
    u /= np.linalg.norm(u)
    out = []
    for spec0 in params["maps"]:
        spec = dict(spec0, sigma=1.0)
        delta = u * (1.0 if spec["family"] != "binning" else 1.0 / np.abs(u).sum())
        k = float(maps.true_k(spec, delta[None, :])[0])
        k2 = float(maps.true_k(spec, 2 * delta[None, :])[0])
        width, b = _width_b(spec, k)
        V = _per_term_var(spec, k, k2)
        per_size = []
        for size in params["sizes"]:
            lab = maps.label(spec) + f" size={size}"
            K = max(1, FIT_TERMS // size)
            seeds = mc.seed_sequences(seed, NAME, lab, "pooled", n=-(-params["R"] // K))
            est = mc.replicate(lambda rs, spec=spec, size=size, delta=delta, K=K:
                               pooled_design.group_estimates(spec, size, K, rs, x0[None, :],
                                                             (x0 + delta)[None, :]),
                               seeds, progress).reshape(-1)[:params["R"]]
            err = np.abs(est - k)
            e_bound = float(bounds.hoeffding_eps(size, DELTA, width))
            eps = np.linspace(0.25, 1.5, params["n_eps"]) * e_bound
            cnt = (err[None, :] >= eps[:, None]).sum(axis=1)
            lo, q, hi = stats.quantile_ci(err, 1 - DELTA, 0.05)
            per_size.append(dict(size=size, eps=eps.tolist(), count=cnt.tolist(),
                                 bound=bounds.hoeffding(size, eps, width).tolist(),
                                 bernstein=bounds.bernstein(size, eps, V, b).tolist(),
                                 eps_emp=q, eps_emp_ci=[lo, hi], eps_hoeffding=e_bound,
                                 eps_bernstein=float(bounds.bernstein_eps(size, DELTA, V, b)),
                                 rmse=float(np.sqrt(np.mean(err ** 2))),
                                 rmse_theory=float(np.sqrt(V / size))))
        out.append(dict(label=maps.label(spec), k=k, V=V, width=width, b=b, sizes=per_size))
    return dict(R=params["R"], maps=out, delta=DELTA)


def verdict(res):
    R = res["R"]
    m = sum(len(s["eps"]) for mp in res["maps"] for s in mp["sizes"])
    level = stats.bonferroni(ALPHA, m)
    fails, lines, notes = [], [], []
    n_nonvac = 0
    worst = 0.0  # max of CP lower / bound over non-vacuous comparisons
    worst_at = ""
    ratios, cis = {}, {}
    for mp in res["maps"]:
        for s in mp["sizes"]:
            cnt = np.asarray(s["count"])
            bnd = np.asarray(s["bound"])
            lo = stats.clopper_pearson_lower(cnt, R, level)
            up = stats.clopper_pearson_upper(cnt, R, 0.05)
            nv = bnd < 1
            n_nonvac += int(nv.sum())
            if nv.any():
                j = int(np.argmax(np.where(nv, lo / bnd, -1.0)))
                if lo[j] / bnd[j] > worst:
                    worst = float(lo[j] / bnd[j])
                    worst_at = f"{mp['label']} D={s['size']} eps={s['eps'][j]:.3f}"
            bad = nv & (lo > bnd)
            if bad.any():
                fails.append(f"{mp['label']} size {s['size']}")
            th = s["eps_emp"] / s["eps_hoeffding"]
            tb = s["eps_emp"] / s["eps_bernstein"]
            ci = [x / s["eps_hoeffding"] for x in s.get("eps_emp_ci", [np.nan, np.nan])]
            ratios.setdefault(mp["label"], []).append(th)
            cis.setdefault(mp["label"], []).append(ci)
            i = int(np.argmin(np.abs(bnd - 0.05))) if nv.any() else 0
            lines.append(f"| {mp['label']} | {s['size']} | {th:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] | "
                         f"{tb:.3f} | "
                         f"{s['rmse']:.4f} / {s['rmse_theory']:.4f} | eps={s['eps'][i]:.3f}: "
                         f"p-hat {cnt[i] / R:.4f} (95% upper {up[i]:.4f}) vs bound {bnd[i]:.4f} | "
                         f"{'FAIL' if bad.any() else 'ok'} |")
    table = ("| map | D or P | tightness Hoeffding eps_emp/eps_bound [95% CI] | Bernstein | RMSE "
             "emp / exact | example eps | |\n|---|---|---|---|---|---|---|\n" + "\n".join(lines))
    mean_ratio = {k: float(np.mean(v)) for k, v in ratios.items()}
    # the largest ratio (the size where the bound is tightest) with its order-statistic interval
    max_ratio = {k: (float(np.max(v)), cis[k][int(np.argmax(v))]) for k, v in ratios.items()}
    # interval of the mean over sizes: the means of the per-size 95% limits
    mean_ci = {k: [float(np.mean([c[0] for c in v])), float(np.mean([c[1] for c in v]))]
               for k, v in cis.items()}
    pk = [k for k in mean_ratio if "paired" in k]
    tight_ci = mean_ci[pk[0]] if pk and all(np.isfinite(mean_ci[pk[0]])) else None
    paired = [v for k, v in mean_ratio.items() if "paired" in k]
    tight = paired[0] if paired else float(np.mean(list(mean_ratio.values())))
    verdict_ = "fail" if fails else ("pass" if n_nonvac else "vacuous")
    notes.append("Tightness ratios (mean over D): " + ", ".join(
        f"{k}: {v:.3f}" for k, v in mean_ratio.items()) + " — the Hoeffding eps at delta = 0.05 is "
        "1/ratio times the empirical 95% quantile.")
    det = _detectable(res, level)
    if fails:
        head = (f"empirical tail ABOVE its bound (Clopper-Pearson lower limit > bound) for "
                f"{', '.join(fails)}")
    elif n_nonvac:
        head = (f"no empirical tail above its bound ({n_nonvac} non-vacuous comparisons; largest "
                f"CP lower limit / bound {worst:.2f} at {worst_at})")
    else:
        head = "every bound >= 1 on the grid: nothing to contradict (vacuous)"
    summary = (head + "; eps_emp/eps_Hoeffding at delta=0.05, max over sizes [95% CI]: " +
               ", ".join(f"{k.replace('rff gaussian ', '')} {v:.2f} [{c[0]:.2f}, {c[1]:.2f}]"
                         for k, (v, c) in max_ratio.items()))
    return dict(verdict=verdict_,
                statistic={"tightness_by_map": mean_ratio, "max_cp_lower_over_bound": worst,
                           "tightness_max_ci95": {k: [v, c] for k, (v, c) in max_ratio.items()},
                           "non_vacuous_comparisons": n_nonvac, "n_comparisons": m,
                           "per_comparison_level": level, "failed": fails},
                tightness=tight, tightness_ci=tight_ci, summary=summary, table=table,
                notes=notes, detectable=det, power=_power.statement(det))


def _detectable(res, level):
    """The smallest factor f by which Hoeffding's bound could be too tight in eps (a bound
    stating P(|k-hat - k| >= eps) <= 2 exp(-2 D (f eps)^2 / width^2)) that this run rejects with
    probability >= stats.POWER at one (map, D, eps): there the count of R exceedances must
    reach c(f), the smallest count whose Clopper-Pearson lower limit exceeds the tightened
    bound, and a true exceedance probability p rejects with probability P(Binomial(R, p) >=
    c(f)); p is taken at its one-sided 95 % lower confidence limit from this run's count
    (conservative).  Bisection in f, over every comparison."""
    R = res["R"]
    cells = []
    for mp in res["maps"]:
        for s in mp["sizes"]:
            for e, c in zip(s["eps"], s["count"], strict=True):
                if c > 0:
                    cells.append((s["size"], e, float(stats.clopper_pearson_lower(c, R, 0.05)),
                                  mp["width"]))
    if not cells:
        return []

    def seen(f):
        for size, e, p_lo, width in cells:
            b = float(bounds.hoeffding(size, f * e, width))
            if b >= 1:
                continue
            c = stats.binomial_needed_count(R, b, level)
            if c <= R and _st.binom.sf(c - 1, R, p_lo) >= stats.POWER:
                return True
        return False
    f = stats.bisect_smallest(seen, 1.0, 100.0, steps=30, log=True)
    if not np.isfinite(f):
        return []
    return [_power.effect("Hoeffding bound too tight in eps (it states the tail of f eps at eps) "
                          "by a factor", f, "factor", where=f"best-resolved (map, D, eps) of "
                          f"R = {R}", probability=stats.POWER)]


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the bound the check tests is Hoeffding's at f eps instead of eps
    (seam: ``analysis.bounds.hoeffding``), i.e. a bound too tight by the factor f."""
    if not effect["effect"].startswith("Hoeffding bound too tight"):
        raise ValueError(f"hoeffding.audit: unknown effect {effect['effect']!r}")
    f = float(effect["size"])
    real = bounds.hoeffding
    with mock.patch.object(bounds, "hoeffding", lambda D, eps, width: real(D, f * np.asarray(
            eps, float), width)):
        yield


def plot(res, v):
    R = res["R"]
    fig, axes = plots.figure(ncols=len(res["maps"]) + 1, width=4.2)
    floor = 0.5 / R  # where an empirical tail of 0 (no exceedance in R fits) is drawn
    for ax, mp in zip(axes, res["maps"], strict=False):
        for j, s in enumerate(mp["sizes"]):
            c = plots.COLORS[j % len(plots.COLORS)]
            eps = np.asarray(s["eps"])
            cnt = np.asarray(s["count"])
            lo, hi = stats.clopper_pearson(cnt, R, 0.05)
            ph = np.where(cnt > 0, cnt / R, floor)
            pos = cnt > 0
            ax.plot(eps[pos], ph[pos], "o-", ms=3, color=c, label=f"empirical, size {s['size']}")
            ax.plot(eps[~pos], ph[~pos], "v", ms=4, mfc="none", color=c)
            plots.band(ax, eps, np.maximum(lo, floor), hi, c)
            ax.plot(eps, np.minimum(s["bound"], 2), "--", color=c, lw=1.2)
            ax.plot(eps, np.minimum(s["bernstein"], 2), ":", color=c, lw=1.2)
        ax.axhline(floor, color="gray", lw=0.8, ls="-.",
                   label=f"none of {R} observed (drawn at 0.5/R = {floor:.1e}, open triangles)")
        ax.plot([], [], "k--", lw=1.2, label="Hoeffding bound")
        ax.plot([], [], "k:", lw=1.2, label="Bernstein bound")
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_ylim(0.3 / R, 2.5)
        plots.finish(ax, "eps (kernel units)", "P(|k-hat - k| >= eps) (95% CP band)",
                     mp["label"], legend=False)
    # one legend for the three tail panels, below them (never over the data)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=7,
               fontsize=7, frameon=False)
    ax = axes[-1]
    for i, mp in enumerate(res["maps"]):
        c = plots.COLORS[i]
        sz = [s["size"] for s in mp["sizes"]]
        ax.plot(sz, [s["eps_emp"] / s["eps_hoeffding"] for s in mp["sizes"]], "o-", color=c,
                label=f"{mp['label']} / Hoeffding")
        ax.plot(sz, [s["eps_emp"] / s["eps_bernstein"] for s in mp["sizes"]], "s:", color=c,
                label=f"{mp['label']} / Bernstein")
        lo = [s["eps_emp_ci"][0] / s["eps_hoeffding"] for s in mp["sizes"]]
        hi = [s["eps_emp_ci"][1] / s["eps_hoeffding"] for s in mp["sizes"]]
        plots.band(ax, sz, lo, hi, c)
    ax.axhline(1.0, label="bound is tight", **plots.BOUND_STYLE)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.45)
    plots.finish(ax, "D (frequencies / features) or P (grids)",
                 "eps_emp(0.95) / eps_bound(0.05)", "tightness ratio (band: 95% CI, Hoeffding)",
                 fontsize=6, loc="upper left", ncol=2)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
