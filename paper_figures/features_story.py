"""The "10^4 vs 10^2" story: features needed for kernel accuracy 0.01 vs features needed to learn.

The variance of z(x)'z(y) is O(1/D), so a kernel approximation within eps = 0.01 needs D ~ 1e4
frequencies (D = 1/(2 eps^2) = 5,000 from the per-frequency variance <= 1/2; 73,778 by pointwise
Hoeffding at delta = 0.05; millions by RR Claim 1), while ridge regression on random features
reaches the test error of exact kernel ridge with far fewer (THEORY §2.8; issue 15).  This figure
measures both on the data sets at hand (CPU, Adult, LETTER, KDDCUP99 10%): left, the relative
excess test error of ridge on D random frequencies over exact kernel ridge (same Gaussian kernel,
sigma = median distance, lambda chosen by exact KRR's validation split) with the 1% line; right,
the max and RMS kernel error over 300 x 300 test x train pairs with eps = 0.01 and the bound D's.
The computation is analysis.checks.features_needed.run (its design string states the protocol).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper_figures._data import dataset_available
from paper_figures._output import fmt, md_table

CODE_VERSION = 1
CANDIDATES = ("cpu_act", "adult", "letter", "kddcup99")


def _available(name, data_dir):
    return dataset_available(name, data_dir)  # LETTER too: randfeat.datasets.load_letter


def params(cfg):
    cands = [c for c in CANDIDATES if not cfg.datasets or c in cfg.datasets]
    have, missing = [], {}
    for c in cands:
        ok, msg = _available(c, cfg.data_dir)
        if ok:
            have.append(c)
        else:
            missing[c] = str(msg).split(". ")[0]
    q = cfg.quick
    return dict(datasets=have, missing=missing, data_dir=str(cfg.data_dir), seed=cfg.seed,
                quick=q, n_train=400 if q else 1500, n_test=600 if q else 2000,
                sizes=([8, 32, 128, 512, 2048] if q else
                       [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]),
                R=cfg.reps or (2 if q else 3))


def compute(p):
    from analysis.checks import features_needed as fn

    if not p["datasets"]:
        return dict(skipped="no data set at hand", missing=p["missing"])
    res = fn.run(dict(datasets=p["datasets"], n_train=p["n_train"], n_test=p["n_test"],
                      sizes=p["sizes"], R=p["R"], data_home=p["data_dir"]), p["seed"])
    res["missing"] = p["missing"]
    return res


def render(result, p, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.checks import features_needed as fn

    path = Path(out_dir) / "features_story.png"
    md = Path(out_dir) / "features_story.md"
    title = "Features needed: kernel error 0.01 (bounds) vs learning (RF ridge within 1% of KRR)"
    if "skipped" in result:
        md.write_text(f"# {title}\n\nNot drawn: {result['skipped']}.\n")
        return [md]
    A = fn.analyse(result)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (ds, r) in enumerate(zip(A["present"], A["rows"], strict=True)):
        c = colors[i % len(colors)]
        Ds = np.array([s["D"] for s in ds["sizes"]], float)
        rel = np.maximum(np.array(r["rel"]), 1e-3)  # an exact tie (0) is drawn at 1e-3
        ax.plot(Ds, rel, "o-", color=c, label=f"{ds['name']} (D_learn "
                f"{r['D_learn'] or '> %d' % Ds[-1]})")
        if r["D_learn"]:
            ax.axvline(r["D_learn"], color=c, ls=":", lw=1)
        bx.plot(Ds, r["kmax"], "o-", color=c, label=f"{ds['name']}: max")
        bx.plot(Ds, r["krms"], "s--", color=c, ms=3, label=f"{ds['name']}: RMS")
    ax.axhline(fn.REL, color="k", lw=1, label="1% of exact KRR")
    ax.set(xscale="log", yscale="log", xlabel="D (frequencies; 2D features)",
           ylabel="|test error RF ridge - KRR| / KRR (median; 0 drawn at 1e-3)",
           title="learning: RF ridge vs exact kernel ridge")
    bx.axhline(fn.EPS, color="k", lw=1, label="eps = 0.01")
    bd = A["rows"][0]["bounds"]
    for j, name in enumerate(list(bd)[:2]):
        bx.axvline(bd[name], color="k", ls=["--", "-."][j], lw=1,
                   label=f"{name}: D = {bd[name]:,.0f}")
    bx.set(xscale="log", yscale="log", xlabel="D (frequencies; 2D features)",
           ylabel="kernel error on 300 x 300 test x train pairs",
           title="kernel approximation: error vs D")
    for a in (ax, bx):
        a.grid(True, which="major", alpha=0.3)
        a.legend(fontsize=6)
    fig.suptitle(title + (" — QUICK MODE (subsampled)" if p["quick"] else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    bnames = list(bd)
    rows = []
    for ds, r in zip(A["present"], A["rows"], strict=True):
        dl = r["D_learn"]
        rows.append([ds["name"], ds["n_train"], ds["d"], f"{ds['sigma']:.3g}", f"{ds['lam']:g}",
                     f"{ds['e_exact']:.4g}", dl or f"> {ds['sizes'][-1]['D']}",
                     r["D_learn10"] or f"> {ds['sizes'][-1]['D']}",
                     fmt(r["k_at_learn"])]
                    + [f"{r['bounds'][b]:,.0f}" + (f" ({r['bounds'][b] / dl:,.0f}x)" if dl else "")
                       for b in bnames]
                    + [f"{r['D_kmax']:,.0f}"])
    md.write_text(
        f"# {title}\n\n"
        + ("**QUICK MODE** (subsampled)\n\n" if p["quick"] else "")
        + md_table(["data", "n_train", "d", "sigma", "lambda", "exact KRR test error",
                      "D_learn (1%)", "D within 10%", "max kernel error at D_learn"]
                     + [f"D for eps=0.01: {b} (ratio to D_learn)" for b in bnames]
                     + ["empirical D for max kernel error 0.01"], rows)
        + "\n\nD = frequencies of the paired map (2D features).  Test error: RMSE (CPU), "
          "misclassification rate (Adult, KDDCUP99: +-1 targets; LETTER: one-vs-rest).  Exact "
          "kernel ridge on the same n_train-row subsample; random-feature ridge solved in the "
          f"dual (equal to randfeat.RandomFeatureRidge).  {p['R']} maps per D; test rows "
          f"{p['n_test']}; seed {p['seed']}."
        + ("\n\nMissing: " + "; ".join(f"{k}: {v}" for k, v in result["missing"].items())
           if result["missing"] else "")
        + f"\n\nCompute time: {result.get('compute_seconds', float('nan')):.0f} s.\n")
    return [path, md]
