"""Check 7 — Fastfood's variance against LSS Theorems 4/5 and the i.i.d. RFF variance."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np

from analysis import bounds, fastfood_law, maps, plots, stats
from analysis import montecarlo as mc
from analysis import power as _power

NAME = "fastfood_variance"
TITLE = "Fastfood variance vs ||v||: LSS Theorem 4 (one block) and Theorem 5 (stacked blocks)"
CLAIM = ("LSS Theorem 5: for n/d stacked independent blocks, Var[phi'(x)'phi'(x')] <= (2/n)(1 - "
         "e^{-||v||^2})^2 + C(||v||)/n with C(alpha) = 6 alpha^4 (e^{-alpha^2} + alpha^2/3), v = "
         "(x - x')/sigma; Theorem 4: for one block, Var[sum_j psi_j(v)] <= (d/2)(1 - "
         "e^{-||v||^2})^2 + d C(||v||). (i.i.d. RFF with n frequencies: (1 - "
         "e^{-||v||^2})^2/(2n).)")
SOURCE = ("LSS 2013 Thm 4 & 5 (arXiv:1408.3060 Thm 9, Cor 10); Yu et al. 2016 Lemma 1; "
          "THEORY §4.3–4.4, P9")
DESIGN = ("Gaussian kernel, sigma = 1, input dimension d (a power of two, no padding). Fastfood "
          "with n = d rows (one block) and n = 4d rows (4 stacked blocks), paired features, with "
          "the library's S (chi_d row lengths) and with S set to 1 after fit (the paper's V' for "
          "which Thm 4 is proved); i.i.d. paired RandomFourierFeatures with the same n next to "
          "it. Inputs: differences v along fixed random directions with ||v|| on a grid, and "
          "the adversarial directions of analysis.fastfood_law (coordinate axis, Hadamard row, "
          "constant vector, 2-, 4- and unequal sparse vectors, and the worst direction of a "
          "search over 100+ structured and random candidates) at ||v|| in adv_radii. R "
          "independently seeded fits give k-hat(0, v). (1) Bounds: contradicted only if the "
          "one-sided lower confidence limit of the variance (scaled chi-square with sample "
          "kurtosis) exceeds the Thm 4/5 bound. (2) Law: for V' the variance is known exactly "
          "(analysis.fastfood_law: E over B, Pi of a closed form given B, Pi; independent of "
          "randfeat); two-sided scaled chi-square test of Var = exact at every input and n. "
          "Bonferroni over all comparisons, ALPHA split equally between (1) and (2). Reported: "
          "tightness Var/bound (95% interval) and the inflation Var_Fastfood / Var_iid(n).")
COST = 3  # relative run time, used to schedule --jobs
TIGHTNESS = ("max over inputs and maps of Var[k-hat] / LSS Theorem 5 bound (1 = bound attained)")
ALPHA = 1e-5

PARAMS = {
    "smoke": dict(d=8, radii=[0.5, 1.0, 2.0], adv_radii=[0.5, 3.0], blocks=[1, 2], R=300,
                  rff=True, law_draws=2000),
    "quick": dict(d=16, radii=[0.25, 0.5, 1.0, 1.5, 2.0, 3.0], adv_radii=[0.5, 3.0],
                  blocks=[1, 4], R=2000, rff=True, law_draws=20000),
    "full": dict(d=64, radii=[0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0],
                 adv_radii=[0.25, 1.0, 3.0], blocks=[1, 4, 16], R=8000, rff=True,
                 law_draws=40000),
}


def inputs(params):
    """The differences v (rows), their radii ||v|| and names: random directions on the radius
    grid, then every adversarial direction (and the searched worst one) at every adv radius."""
    d = params["d"]
    geo = np.random.default_rng(20130101)
    U = geo.standard_normal((len(params["radii"]), d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    rows = [(f"random #{i}", float(r), U[i] * r) for i, r in enumerate(params["radii"])]
    for r in params.get("adv_radii", []):
        dirs = dict(fastfood_law.adversarial_directions(d))
        wname, w, _ = fastfood_law.worst_direction(d, r, random_state=20130102)
        dirs[f"worst by search ({wname})"] = w
        rows += [(k, float(r), u * r) for k, u in dirs.items()]
    names, radii, V = zip(*rows, strict=True)
    return list(names), np.asarray(radii), np.asarray(V)


def run(params, seed, progress=None):
    d = params["d"]
    names, a, V = inputs(params)
    X = np.zeros((1, d))
    out = []
    variants = [dict(family="fastfood", kernel="gaussian", features="paired", sigma=1.0),
                dict(family="fastfood", kernel="gaussian", features="paired", sigma=1.0,
                     radial="none")]
    law, law_se = fastfood_law.block_variance(V, n_draws=params["law_draws"],
                                              random_state=mc.seed_sequence(seed, NAME, "law"))
    errors = []
    for nb in params["blocks"]:
        n = nb * d
        specs = list(variants)
        if params["rff"]:
            specs.append(dict(family="rff", kernel="gaussian", features="paired", sigma=1.0))
        for spec in specs:
            lab = maps.label(spec)
            seeds = mc.seed_sequences(seed, NAME, lab, n, n=params["R"])
            try:
                kh = mc.replicate(lambda rs, spec=spec, n=n: maps.estimates(spec, n, rs, X, V),
                                  seeds, progress)
            except Exception as exc:  # recorded: the verdict is "fail" (contract item 3)
                out.append(dict(label=lab, n=n, error=repr(exc)))
                errors.append(f"{lab} n={n}: {exc!r}")
                continue
            lo, s2, hi = stats.variance_limits(kh, 0.025)
            c = kh - kh.mean(axis=0)
            row = dict(label=lab, n=n, blocks=nb, s2=s2.tolist(), ci=[lo.tolist(), hi.tolist()],
                       mean=kh.mean(axis=0).tolist(), m4=(c ** 4).mean(axis=0).tolist())
            if spec.get("radial") == "none":
                # the exact variance of the paper's V' (independent blocks divide it by nb); its
                # own Monte Carlo error (over B, Pi) is allowed for conservatively: H0 is tested
                # at the value within law +- 4 se_law closest to the sample variance
                v0 = np.clip(s2, (law - 4 * law_se) / nb, (law + 4 * law_se) / nb)
                p, _, nu = stats.variance_pvalue(kh, v0)
                ratio = s2 / (law / nb)
                row.update(law=(law / nb).tolist(), law_se=(law_se / nb).tolist(),
                           p_law=p.tolist(), ratio_law=ratio.tolist(), nu=nu.tolist())
            out.append(row)
    return dict(d=d, radii=a.tolist(), inputs=names, R=params["R"], rows=out, errors=errors,
                iid=bounds.var_rff_gaussian(a).tolist(), k=np.exp(-a ** 2 / 2).tolist())


def _lower_limit(s2, m4, R, level):
    from scipy import stats as st

    s2 = np.asarray(s2)
    kappa = np.asarray(m4) / s2 ** 2
    nu = 2.0 * (R - 1) / np.maximum(kappa - (R - 3) / (R - 1), 2.0 / (R - 1))
    return s2 * nu / st.chi2.isf(level, nu)


def _nu(s2, m4, R):
    kappa = np.asarray(m4) / np.asarray(s2) ** 2
    return 2.0 * (R - 1) / np.maximum(kappa - (R - 3) / (R - 1), 2.0 / (R - 1))


def verdict(res):
    d, R = res["d"], res["R"]
    a = np.asarray(res["radii"])
    names = res.get("inputs", [f"random #{i}" for i in range(len(a))])
    ff = [r for r in res["rows"] if "error" not in r and r["label"].startswith("fastfood")]
    law_rows = [r for r in ff if "p_law" in r]
    m_bound = 2 * len(a) * len(ff)  # Thm 5 (all) + Thm 4 (one block) comparisons, generously
    m_law = len(a) * len(law_rows)
    level = stats.bonferroni(ALPHA / 2, m_bound)
    level_law = stats.bonferroni(ALPHA / 2, max(m_law, 1))
    fails, law_fails, lines, notes = [], [], [], []
    tight, tight_ci, infl = {}, {}, {}
    nus, worst_law = [], (0.0, "")
    i1 = int(np.argmin(np.abs(a - 1.0)))
    for r in res["rows"]:
        if "error" in r:
            notes.append(f"{r['label']} n={r['n']}: not run ({r['error']})")
            continue
        s2 = np.asarray(r["s2"])
        iid = np.asarray(res["iid"]) / r["n"]
        ratio_iid = s2 / iid
        if not r["label"].startswith("fastfood"):
            lines.append(f"| {r['label']} | {r['n']} | - | - | {ratio_iid[i1]:.2f} | - | - |")
            continue
        lo = _lower_limit(s2, r["m4"], R, level)
        nus.extend(_nu(s2, r["m4"], R).tolist())
        b5 = bounds.fastfood_thm5_var(a, r["n"])
        bad = lo > b5
        t5 = s2 / b5
        b4 = bounds.fastfood_thm4_var_mean(a, d) if r["blocks"] == 1 else None
        if b4 is not None:
            bad = bad | (lo > b4)
        if bad.any():
            fails.append(f"{r['label']} n={r['n']} at " + "; ".join(
                f"{names[i]} ||v||={a[i]:g}" for i in np.nonzero(bad)[0]))
        key = f"{r['label']} n={r['n']}"
        j = int(np.argmax(t5))
        tight[key] = float(t5[j])
        tight_ci[key] = [float(r["ci"][0][j] / b5[j]), float(r["ci"][1][j] / b5[j])]
        infl[key] = float(ratio_iid[i1])
        law_cell = "-"
        if "p_law" in r:
            p = np.asarray(r["p_law"])
            ratio = np.asarray(r["ratio_law"])
            badl = p < level_law
            if badl.any():
                law_fails.append(f"{r['label']} n={r['n']}: Var/exact = " + "; ".join(
                    f"{ratio[i]:.2f} at {names[i]} ||v||={a[i]:g}" for i in np.nonzero(badl)[0]))
            k = int(np.argmax(np.abs(np.log(ratio))))
            if abs(np.log(ratio[k])) > abs(np.log(max(worst_law[0], 1e-300))) or not worst_law[1]:
                worst_law = (float(ratio[k]), f"{names[k]} ||v||={a[k]:g} n={r['n']}")
            law_cell = (f"{ratio.min():.3f}-{ratio.max():.3f} (min p {p.min():.1e})"
                        + (" FAIL" if badl.any() else ""))
        lines.append(f"| {r['label']} | {r['n']} | {t5[j]:.3f} [{tight_ci[key][0]:.3f}, "
                     f"{tight_ci[key][1]:.3f}] | "
                     f"{'-' if b4 is None else f'{np.max(s2 / b4):.3f}'} | {ratio_iid[i1]:.2f} | "
                     f"{law_cell} | {'FAIL' if bad.any() else 'ok'} |")
    table = ("| map | rows n | max Var/Thm 5 bound [95% CI] | max Var/Thm 4 bound | Var / iid Var "
             "at ‖v‖=1 | Var / exact V' variance (range over inputs) | bounds |\n"
             "|---|---|---|---|---|---|---|\n" + "\n".join(lines))
    notes.append("Theorem 4/5 are proved for V' (no S); the library's V (with S) is checked "
                 "against the same bounds (the paper omits the 'near-identical argument').")
    notes.append(f"Inputs: {len(a)} differences — " + ", ".join(
        sorted({n.split(' (')[0] if not n.startswith('worst') else n for n in names})) + ".")
    det = _detectable(law_rows, level_law)
    if tight:
        kmax = max(tight, key=tight.get)
        summ = (f"Var/Thm-5 bound max {tight[kmax]:.3f} [95% CI {tight_ci[kmax][0]:.3f}, "
                f"{tight_ci[kmax][1]:.3f}] ({kmax})")
    else:
        summ = "no Fastfood rows"
    if law_rows:
        summ += (f"; V' variance / exact law over {m_law} comparisons: farthest "
                 f"{worst_law[0]:.3f} ({worst_law[1]})"
                 + (f"; LAW VIOLATED: {law_fails}" if law_fails else ""))
    if fails:
        summ += f"; BOUND VIOLATED: {fails}"
    if infl:
        summ += "; inflation over iid RFF at ||v||=1: " + ", ".join(
            f"{k.replace('fastfood gaussian paired', 'FF')} {v:.2f}" for k, v in infl.items())
    if res.get("errors"):
        summ = f"ERRORS (parts that could not run): {res['errors']}; " + summ
    return dict(verdict="fail" if fails or law_fails or not ff or res.get("errors") else "pass",
                statistic={"tightness_thm5": tight, "tightness_thm5_ci95": tight_ci,
                           "inflation_at_1": infl, "per_comparison_level": level,
                           "per_comparison_level_law": level_law, "failed": fails,
                           "law_failed": law_fails, "worst_law_ratio": worst_law[0]},
                tightness=max(tight.values()) if tight else None,
                tightness_ci=tight_ci[max(tight, key=tight.get)] if tight else None,
                summary=summ, table=table, notes=notes, detectable=det,
                power=_power.statement(det))


def _detectable(law_rows, level_law):
    """A variance of the V' map above / below its exact law at every input: the two-sided
    scaled chi-square test of one input rejects with probability >= stats.POWER when the true
    ratio is beyond stats.variance_detectable_ratio(nu, level), applied to the law moved by the
    allowance of 4 standard errors of its own Monte Carlo (the test's H0 is the value within
    law +- 4 se closest to the sample variance); the median over inputs (robust to the noise
    of the estimated degrees of freedom; the injection reaches every input)."""
    ups, downs = [], []
    for r in law_rows:
        law, se = np.asarray(r["law"]), np.asarray(r["law_se"])
        for nu, lw, s in zip(r["nu"], law, se, strict=True):
            up, down = stats.variance_detectable_ratio(nu, level_law, power=stats.POWER)
            ups.append(up * (lw + 4 * s) / lw)
            downs.append(down * (lw - 4 * s) / lw)
    best_up = float(np.median(ups)) if ups else np.inf
    best_down = float(np.median(downs)) if downs else 0.0
    det = []
    if np.isfinite(best_up):
        det.append(_power.effect("variance of the V' map above its exact law at every input",
                                 best_up - 1.0, "relative", where="median over inputs",
                                 probability=stats.POWER))
    if best_down > 0:
        det.append(_power.effect("variance of the V' map below its exact law at every input",
                                 1.0 - best_down, "relative", where="median over inputs",
                                 probability=stats.POWER))
    return det


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the exact law the map is tested against (seam:
    ``analysis.fastfood_law.block_variance``) is divided (above) or multiplied (below) by the
    factor, i.e. the map's variance is off by that factor relative to the law."""
    name, size = effect["effect"], float(effect["size"])
    if "above its exact law" in name:
        f = 1.0 / (1.0 + size)
    elif "below its exact law" in name:
        f = 1.0 / (1.0 - size)
    else:
        raise ValueError(f"fastfood_variance.audit: unknown effect {name!r}")
    real = fastfood_law.block_variance

    def block_variance(*a, **k):
        var, se = real(*a, **k)
        return var * f, se * f
    with mock.patch.object(fastfood_law, "block_variance", block_variance):
        yield


def plot(res, v):
    a = np.asarray(res["radii"])
    names = res.get("inputs", [f"random #{i}" for i in range(len(a))])
    rnd = np.array([n.startswith("random") for n in names])
    adv_names = sorted({n for n in names if not n.startswith("random")})
    marks = dict(zip(adv_names, "s^vDP*Xhp<>", strict=False))
    fig, axes = plots.figure(ncols=2, width=5.6)
    fig.set_size_inches(13.5, 4.2)
    blocks = sorted({r["n"] for r in res["rows"] if "error" not in r})
    aa = np.linspace(a.min(), a.max(), 200)
    for ax, n in zip(axes, blocks[:2], strict=False):
        for i, r in enumerate([r for r in res["rows"] if "error" not in r and r["n"] == n]):
            c = plots.COLORS[i]
            s2 = np.asarray(r["s2"])
            lo, hi = np.asarray(r["ci"][0]), np.asarray(r["ci"][1])
            o = np.argsort(a[rnd])
            ax.plot(a[rnd][o], s2[rnd][o], "o-", color=c, label=r["label"] + " (random dirs)",
                    ms=3)
            plots.band(ax, a[rnd][o], lo[rnd][o], hi[rnd][o], c)
            for nm in adv_names:
                idx = [j for j, x in enumerate(names) if x == nm]
                ax.plot(a[idx] * (1 + 0.03 * (i - 1)), s2[idx], marks.get(nm, "x"), color=c,
                        ms=4, mfc="none")
            if "law" in r:
                ax.plot(a[rnd][o], np.asarray(r["law"])[rnd][o], ":", color=c, lw=1.5,
                        label="exact V' variance (fastfood_law)")
        for nm in adv_names:
            ax.plot([], [], marks.get(nm, "x"), color="k", mfc="none", ls="none", label=nm)
        ax.plot(aa, bounds.fastfood_thm5_var(aa, n), label="LSS Thm 5 bound", **plots.BOUND_STYLE)
        if n == res["d"]:
            ax.plot(aa, bounds.fastfood_thm4_var_mean(aa, res["d"]), color="k", ls="-.",
                    label="LSS Thm 4 bound / d^2")
        ax.plot(aa, bounds.var_rff_gaussian(aa) / n, color="gray", lw=1, label="iid RFF exact")
        ax.set_yscale("log")
        plots.finish(ax, "||v|| = ||x - x'|| / sigma (dimensionless)",
                     "Var[k-hat] (kernel units^2)",
                     f"d = {res['d']}, n = {n} rows ({n // res['d']} block(s)); bands 95%; "
                     "open markers: adversarial inputs", legend=n == blocks[-1], fontsize=6,
                     outside=True)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
