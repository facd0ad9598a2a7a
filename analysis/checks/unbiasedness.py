"""Check 1 — unbiasedness E[z(x)'z(y)] = k(x, y) of every randfeat map."""

from __future__ import annotations

import contextlib

import numpy as np

from analysis import bounds, maps, plots, stats
from analysis import montecarlo as mc
from analysis import pooled as pooled_design
from analysis import power as _power

NAME = "unbiasedness"
TITLE = "Unbiasedness of z(x)'z(y)"
CLAIM = ("E[z(x)'z(y)] = k(x, y): Bochner's theorem for random Fourier features (RR 2007 §3, "
         "both the paired map of Algorithm 1 and the phase-shift map), Fastfood rows marginally "
         "N(0, sigma^-2 I) (LSS 2013 Lemma 3) and its ball-sum spectrum (LSS §3.4), and random "
         "binning's collision probability (RR 2007 §4, Algorithm 2).")
SOURCE = "RR 2007 §3 eq. (2), §4; LSS 2013 Lemma 3, §3.4; THEORY §2.1–2.2, §3.4, §4.2, §4.6"
DESIGN = ("For each map, R independently seeded fitted maps (one replicate = one fit with its own "
          "random_state spawned from a SeedSequence). Each replicate evaluates k-hat(x0, x0 + "
          "Delta_i) from the estimator's transform for m fixed differences Delta_i along fixed "
          "random directions with ||Delta_i||/sigma on a grid, x0 != 0 (matters for the "
          "phase-shift map). z = (mean_R k-hat - k)/se with the exact variance (THEORY §2.3, "
          "§3.5) where known (RFF, binning) and the sample variance otherwise (Fastfood: rows "
          "dependent). Truth k from analysis.truth (closed forms written independently of "
          "randfeat.kernels); the library's own kernel objects are cross-checked against it "
          "(|diff| <= 1e-8). Structured inputs beside the random directions (same R fits, "
          "same Bonferroni family): Fastfood gets axes, the constant vector, a 2-sparse and an "
          "alternating-sign vector (sample variance); binning gets lattice inputs anchored at "
          "x0 = 0, the point every grid's edges are laid out from (axes, -axis, constant, "
          "2-sparse, axis differences of 0.25 to 2 kernel widths; exact variance), where a "
          "missing or biased random shift shows first. Quick mode has every RFF kernel in both "
          "feature maps, Fastfood paired, phase and ball-sum, binning; the headline is the "
          "worst map (largest |z|) with its input. Power (computed, audited): the bandwidth "
          "error sigma -> sigma (1 + e) of the best- and of the worst-resolved map detected with "
          "probability >= 0.98 (exact kernel, this run's standard errors).")
COST = 2  # relative run time, used to schedule --jobs
ALPHA = 1e-5

_RFF = [dict(family="rff", kernel=k, features=f) for k in ("gaussian", "laplacian", "cauchy")
        for f in ("paired", "phase")]
_QUICK_MAPS = _RFF + [
    dict(family="rff", kernel="matern", nu=1.5, features="paired"),
    dict(family="fastfood", kernel="gaussian", features="paired"),
    dict(family="fastfood", kernel="gaussian", features="phase"),
    dict(family="fastfood", kernel="ballsum", t=2, features="paired"),
    dict(family="binning", kernel="laplacian"),
    dict(family="binning", kernel="rational", a=1.5),
]
_FULL_MAPS = _QUICK_MAPS + [
    dict(family="rff", kernel="matern", nu=0.5, features="paired"),
    dict(family="rff", kernel="matern", nu=2.5, features="phase"),
    dict(family="fastfood", kernel="ballsum", t=1, features="paired"),
]
PARAMS = {
    "smoke": dict(maps=_QUICK_MAPS[:1] + _QUICK_MAPS[7:9] + _QUICK_MAPS[10:11], d=3, sigma=1.3,
                  radii=[0.3, 1.0, 2.0], R=60, size=16),
    "quick": dict(maps=_QUICK_MAPS, d=3, sigma=1.3, radii=[0.1, 0.3, 0.6, 1.0, 1.5, 2.5], R=400,
                  size=32, pool_fits=40, pool_groups=125, adv_radius=1.0),
    "full": dict(maps=_FULL_MAPS, d=5, sigma=1.3, radii=[0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.0,
                                                         3.0], R=4000, size=64,
                 pool_fits=40, pool_groups=250, adv_radius=1.0),
}


def _design(params):
    geo = np.random.default_rng(20070101)  # fixed geometry (design, not randomness)
    d, sigma = params["d"], params["sigma"]
    x0 = geo.uniform(-0.5, 0.5, size=d)
    dirs = geo.standard_normal((len(params["radii"]), d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    deltas = dirs * (np.asarray(params["radii"]) * sigma)[:, None]
    return x0, deltas


def _exact_var(spec, k, k2, size):
    """Exact variance of one replicate's estimate, or None (Fastfood: rows are dependent)."""
    if spec["family"] == "rff":
        f = spec.get("features", "paired")
        v = bounds.var_rff_paired(k, k2) if f == "paired" else bounds.var_rff_phase(k, k2)
        return v / size
    if spec["family"] == "binning":
        return bounds.var_binning(k) / size
    return None


def _adversarial(d, radius):
    """Structured differences for a structured map in dimension d: coordinate axes, the
    constant vector, a 2-sparse vector and an alternating-sign (Hadamard-row-like) vector."""
    e = np.eye(d)
    dirs = {"axis e_0": e[0], f"axis e_{d - 1}": e[d - 1], "constant": np.ones(d),
            "2-sparse (e_0 + e_1)": e[0] + e[min(1, d - 1)],
            "alternating signs": (-1.0) ** np.arange(d)}
    names = list(dirs)
    U = np.array([dirs[n] / np.linalg.norm(dirs[n]) for n in names])
    return names, U * radius


def _adversarial_binning(d, radius):
    """Inputs that sit on the lattice a binning map is anchored to: x0 = 0 (a cell edge of every
    grid when the shifts are missing or biased), differences along the axes (edges are
    axis-aligned), the constant vector, a 2-sparse vector, and axis differences of one and
    two kernel widths (multiples of the typical pitch).  Returns (x0, names, deltas)."""
    e = np.eye(d)
    dirs = {"axis e_0": e[0] * radius, f"axis e_{d - 1}": e[d - 1] * radius,
            "constant": np.ones(d) / np.sqrt(d) * radius,
            "2-sparse (e_0 + e_1)": (e[0] + e[min(1, d - 1)]) / np.sqrt(2) * radius,
            "-axis e_0": -e[0] * radius,
            "axis e_0, 1.5 widths": 1.5 * e[0] * radius, "axis e_0, 2 widths": 2 * e[0] * radius,
            "axis e_0, small": e[0] * 0.25 * radius}
    names = list(dirs)
    return np.zeros(d), names, np.array([dirs[n] for n in names])


def run(params, seed, progress=None):
    x0, deltas = _design(params)
    X, Y = x0[None, :], x0[None, :] + deltas
    out, errors = [], []
    for spec0 in params["maps"]:
        spec = dict(spec0, sigma=params["sigma"])
        lab = maps.label(spec)
        seeds = mc.seed_sequences(seed, NAME, lab, n=params["R"])
        khat = mc.replicate(
            lambda rs, spec=spec: maps.estimates(spec, params["size"], rs, X, Y), seeds, progress)
        k = maps.true_k(spec, deltas)
        k2 = maps.true_k(spec, 2 * deltas)
        ev = _exact_var(spec, k, k2, params["size"])
        z, mean, se = stats.z_test_mean(khat, k, exact_var=ev)
        lib_diff = None
        if spec["family"] != "binning":
            try:
                lk = maps.library_kernel(dict(spec, dim=maps.padded_dim(params["d"])))
                lib_diff = float(np.max(np.abs(np.asarray(lk.k(deltas)) - k)))
            except Exception as exc:  # report, do not hide (the verdict fails on it)
                lib_diff = f"error: {exc!r}"
                errors.append(f"{lab}: library kernel: {exc!r}")
        row = dict(spec=spec, label=lab, k=k.tolist(), mean=mean.tolist(), se=se.tolist(),
                   z=z.tolist(), exact_var=ev is not None, lib_kernel_maxdiff=lib_diff)
        if spec["family"] == "fastfood" and params.get("adv_radius"):
            # structured inputs for the structured map: axes, the constant vector, sparse
            names, dl = _adversarial(params["d"], params["adv_radius"] * params["sigma"])
            ps = mc.seed_sequences(seed, NAME, lab, "adversarial", n=params["R"])
            kh = mc.replicate(lambda rs, spec=spec, dl=dl: maps.estimates(
                spec, params["size"], rs, X, x0[None, :] + dl), ps, progress)
            ka = maps.true_k(spec, dl)
            za, ma, sa = stats.z_test_mean(kh, ka)
            row["adv"] = dict(inputs=names, k=ka.tolist(), mean=ma.tolist(), se=sa.tolist(),
                              z=za.tolist())
        if spec["family"] == "binning" and params.get("adv_radius"):
            # lattice inputs for the binning map: the origin, axes, constant vector (edges of
            # the grids are axis-aligned and anchored at the shifts)
            xa, names, dl = _adversarial_binning(params["d"],
                                                 params["adv_radius"] * params["sigma"])
            ps = mc.seed_sequences(seed, NAME, lab, "adversarial", n=params["R"])
            kh = mc.replicate(lambda rs, spec=spec, dl=dl, xa=xa: maps.estimates(
                spec, params["size"], rs, xa[None, :], xa[None, :] + dl), ps, progress)
            ka = maps.true_k(spec, dl)
            za, ma, sa = stats.z_test_mean(kh, ka, exact_var=_exact_var(spec, ka, None,
                                                                        params["size"]))
            row["adv"] = dict(inputs=names, k=ka.tolist(), mean=ma.tolist(), se=sa.tolist(),
                              z=za.tolist())
        out.append(row)
        if params.get("pool_fits") and spec["family"] != "fastfood":
            # pooled design (analysis.pooled): pool_fits fits x pool_groups groups of `size`
            # i.i.d. terms, for the power to see a 2 % bandwidth error
            K = params["pool_groups"]
            ps = mc.seed_sequences(seed, NAME, lab, "pooled", n=params["pool_fits"])
            kh = mc.replicate(lambda rs, spec=spec, K=K: pooled_design.group_estimates(
                spec, params["size"], K, rs, X, Y), ps, progress).reshape(-1, len(deltas))
            z, mean, se = stats.z_test_mean(kh, k, exact_var=ev)
            out.append(dict(spec=spec, label=lab + " pooled", pooled=True,
                            n_rep=int(kh.shape[0]), k=k.tolist(), mean=mean.tolist(),
                            se=se.tolist(), z=z.tolist(), exact_var=ev is not None,
                            lib_kernel_maxdiff=None))
    return dict(errors=errors, radii=list(params["radii"]), R=params["R"], size=params["size"],
                d=params["d"],
                sigma=params["sigma"], maps=out)


def verdict(res):
    m = sum(len(r["z"]) + len(r.get("adv", {}).get("z", [])) for r in res["maps"])
    zc = stats.z_threshold(stats.bonferroni(ALPHA, m))
    rows, fails, notes = [], [], []
    worst, worst_map, worst_where = 0.0, "", ""
    radii = list(res["radii"])
    for r in res["maps"]:
        names = [f"||Delta||/sigma={x:g}" for x in radii] + r.get("adv", {}).get("inputs", [])
        z = np.abs(np.asarray(r["z"] + r.get("adv", {}).get("z", [])))
        j = int(np.argmax(z))
        if z[j] > worst:
            worst, worst_map, worst_where = float(z[j]), r["label"], names[j]
        bad = bool(z.max() > zc)
        lib = r["lib_kernel_maxdiff"]
        lib_bad = isinstance(lib, str) or (lib is not None and lib > 1e-8)
        if bad:
            fails.append(r["label"])
        if lib_bad:
            fails.append(r["label"] + " (library kernel != truth)")
            notes.append(f"{r['label']}: randfeat.kernels k differs from the closed form: {lib}")
        bias = np.asarray(r["mean"]) - np.asarray(r["k"])
        if "adv" in r:
            za = np.abs(np.asarray(r["adv"]["z"]))
            ba = np.abs(np.asarray(r["adv"]["mean"]) - np.asarray(r["adv"]["k"]))
            where = ("x0 = 0 (the lattice anchor), " if r["spec"]["family"] == "binning"
                     else "")
            notes.append(f"{r['label']}, adversarial inputs at ||Delta|| = sigma, {where}"
                         f"({', '.join(r['adv']['inputs'])}): max |bias| {ba.max():.4f}, max |z| "
                         f"{za.max():.2f} ({'exact' if r['exact_var'] else 'sample'} variance; "
                         "included in the test above)")
        rows.append(f"| {r['label']} | {'exact' if r['exact_var'] else 'sample'} | "
                    f"{np.max(np.abs(bias)):.4f} | {np.max(r['se']):.4f} | {z.max():.2f} "
                    f"({names[j]}) | "
                    f"{'-' if lib is None else (lib if isinstance(lib, str) else f'{lib:.1e}')} | "
                    f"{'FAIL' if bad or lib_bad else 'ok'} |")
    table = ("| map | variance | max abs bias | max se | max abs z (where) | library k vs truth "
             "| |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    det, bw = _detectable(res, zc)
    summary = (f"worst map {worst_map}: |z| = {worst:.2f} at {worst_where} (threshold {zc:.2f}; "
               f"{m} (map, Delta) comparisons over {len(res['maps'])} map rows, family "
               f"false-alarm {ALPHA:g}, Bonferroni)")
    if fails:
        summary = f"BIASED: {', '.join(fails)}; " + summary
    return dict(verdict="fail" if fails else "pass",
                statistic={"max_abs_z": worst, "worst_map": worst_map,
                           "worst_input": worst_where, "z_threshold": zc,
                           "n_comparisons": m, "failed": fails,
                           "detectable_bandwidth_error": bw},
                tightness=None, summary=summary, table=table, notes=notes,
                detectable=det, power=_power.statement(det))


def _bandwidth_by_map(res, zc):
    """Per map (its one-fit and pooled rows together), the smallest relative bandwidth error
    sigma -> sigma (1 + e) whose exact kernel moves by >= mean_detectable(se) at some tested
    Delta (bisection on the exact kernel, analysis.truth): detected with probability >=
    stats.POWER by that comparison alone."""
    radii = np.asarray(res["radii"])
    _, deltas = _design(dict(d=res["d"], sigma=res["sigma"], radii=list(radii)))
    need, spec_of = {}, {}
    for r in res["maps"]:
        base = r["label"].replace(" pooled", "")
        se = np.asarray(r["se"])
        if not r["exact_var"]:   # estimated: its upper 95 % limit (selection among points)
            se = stats.se_upper(se, r.get("n_rep", res["R"]))
        n = stats.mean_detectable(se, zc)
        need[base] = n if base not in need else np.minimum(need[base], n)
        spec_of[base] = r["spec"]
    out = {}
    for base, n in need.items():
        spec = spec_of[base]
        k = maps.true_k(spec, deltas)

        def seen(e, spec=spec, k=k, n=n):
            kk = maps.true_k(dict(spec, sigma=spec["sigma"] * (1 + e)), deltas)
            return bool(np.any(np.abs(kk - k) >= n))
        out[base] = stats.bisect_smallest(seen, 0.0, 0.5, steps=30)
    return out


def _detectable(res, zc):
    """Two effects: a bandwidth error of the best-resolved map, and of the worst-resolved one
    (among those where an error below 50 % is resolved)."""
    bw = _bandwidth_by_map(res, zc)
    fin = {k: v for k, v in bw.items() if np.isfinite(v)}
    det = []
    if fin:
        best = min(fin, key=fin.get)
        worst = max(fin, key=fin.get)
        for lab in dict.fromkeys([best, worst]):
            det.append(_power.effect(f"bandwidth error (sigma too large) of map '{lab}'",
                                     fin[lab], "relative",
                                     where="best-resolved map" if lab == best
                                     else "worst-resolved map",
                                     probability=stats.POWER))
    return det, bw


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the named map is built with sigma (1 + size) (seam:
    ``analysis.maps.build``; every other map unchanged)."""
    name = effect["effect"]
    if not name.startswith("bandwidth error") or "'" not in name:
        raise ValueError(f"unbiasedness.audit: unknown effect {name!r}")
    with maps.sigma_scaled(name.split("'")[1], 1.0 + float(effect["size"])):
        yield


def plot(res, v):
    zc = v["statistic"]["z_threshold"]
    labels = [r["label"] for r in res["maps"]]
    radii = list(res["radii"])
    adv_names = list(dict.fromkeys(n for r in res["maps"] for n in r.get("adv", {}).get(
        "inputs", [])))
    cols = [f"{x:g}" for x in radii] + adv_names
    Z = np.full((len(labels), len(cols)), np.nan)
    for i, r in enumerate(res["maps"]):
        Z[i, :len(radii)] = r["z"]
        for n, z in zip(r.get("adv", {}).get("inputs", []), r.get("adv", {}).get("z", []),
                        strict=True):
            Z[i, cols.index(n)] = z
    fig, axes = plots.figure(ncols=2, width=6.0, height=0.28 * len(labels) + 2.2)
    ax, bx = axes
    im = ax.imshow(Z, cmap="RdBu_r", vmin=-zc, vmax=zc, aspect="auto")
    ax.set_xticks(np.arange(len(cols)), cols, rotation=60, ha="right", fontsize=6)
    ax.set_yticks(np.arange(len(labels)), labels, fontsize=6)
    ax.axvline(len(radii) - 0.5, color="k", lw=0.8)
    for i, j in zip(*np.nonzero(np.abs(np.nan_to_num(Z)) > zc), strict=True):
        ax.text(j, i, "X", ha="center", va="center", fontsize=7, color="k")
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.set_label(f"z = (mean k-hat - k) / se (colour saturates at ±z* = {zc:.2f})", fontsize=7)
    ax.set_title("z per (map, input): random directions at ||Delta||/sigma (left of the line), "
                 "structured inputs (right); X = beyond z*", fontsize=8)
    worst = np.nanmax(np.abs(Z), axis=1)
    y = np.arange(len(labels))
    colors = ["tab:red" if w > zc else "tab:blue" for w in worst]
    bx.scatter(worst, y, color=colors, s=18, zorder=3)
    for i in range(len(labels)):
        bx.plot([0, worst[i]], [i, i], color=colors[i], lw=1)
    bx.axvline(zc, label=f"Bonferroni threshold z* = {zc:.2f}", **plots.BOUND_STYLE)
    bx.set_yticks(y, labels, fontsize=6)
    bx.invert_yaxis()
    bx.set_xlim(0, max(zc, float(np.nanmax(worst))) * 1.15)
    plots.finish(bx, "max |z| over inputs (standard errors)", "",
                 f"worst input per map (worst: {v['statistic']['worst_map']}, "
                 f"|z| = {v['statistic']['max_abs_z']:.2f})", fontsize=7)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
