"""RR07 Figure 3: Binning+LS — test error vs training size, error vs P, time vs P (THEORY §3.7).

Rahimi & Recht (NIPS 2007), Figure 3, drawn on Forest CoverType.  Here on Forest (class 2 vs
rest) when ``covtype.data.gz`` is in the data folder, otherwise on the largest classification
set at hand (KDDCUP99 10%, binary normal vs attack), named in the title.  Laplacian kernel,
sigma chosen once by validation (P = 30, search subsample), alpha by validation inside every fit.
Left: test error vs number of training points (P = 50).  Middle: test error vs P at the full
training size.  Right: training + testing time vs P.  Mean ± std over ``reps`` repetitions
(split seed and feature seed vary).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from paper_figures._data import _subsample, dataset_available, prepare
from paper_figures._features import derive_seed
from paper_figures._learning import make_learner, select_sigma
from paper_figures._output import md_table, progress

CODE_VERSION = 2  # 2: RR07 protocol v3 preprocessing (as Table 1: binary kept, skewed log1p)
ALPHAS = (1e-6, 1e-4, 1e-2)
PREPROCESS = "robust"


def params(cfg):
    cands = ["covtype_binary", "kddcup99", "adult"]
    if cfg.datasets:
        cands = [c for c in cands if c in cfg.datasets] or cands
    ds, missing = None, {}
    for c in cands:
        ok, msg = dataset_available(c, cfg.data_dir)
        if ok:
            ds = c
            break
        missing[c] = msg.split(". ")[0]
    q = cfg.quick
    return dict(dataset=ds, missing=missing, data_dir=str(cfg.data_dir), seed=cfg.seed,
                reps=cfg.reps or (1 if q else 2), quick=q,
                max_train=3000 if q else None, max_test=3000 if q else 50000,
                sizes_P=50, Ps=[10, 30, 50] if q else [10, 20, 30, 40, 50],
                search_rows=1000 if q else 4000, alphas=list(ALPHAS), preprocess=PREPROCESS)


def _fit(d, P, sigma, seed, alphas):
    model = make_learner("binning", d["task"], n=P, sigma=sigma, seed=seed, alphas=alphas)
    t0 = time.perf_counter()
    model.fit(d["Xtr"], d["ytr"])
    t1 = time.perf_counter()
    pred = model.predict(d["Xte"])
    t2 = time.perf_counter()
    return 100.0 * float(np.mean(pred != d["yte"])), t1 - t0, t2 - t0


def compute(p):
    if p["dataset"] is None:
        return dict(skipped="no classification dataset at hand", missing=p["missing"])
    ds = p["dataset"]
    pre = p.get("preprocess", "standard")
    d0 = prepare(ds, p["data_dir"], split_seed=0, max_train=p["max_train"],
                   max_test=p["max_test"], preprocess=pre)
    sigma, scores = select_sigma("binning", d0, n=30, seed=derive_seed(p["seed"], "fig3"),
                                   search_rows=p["search_rows"])
    N = d0["n_train"]
    sizes = sorted({int(s) for s in np.unique(np.round(np.logspace(1, np.log10(N), 9)))})
    err_size = np.full((len(sizes), p["reps"]), np.nan)
    err_P = np.full((len(p["Ps"]), p["reps"]), np.nan)
    fit_P = np.full_like(err_P, np.nan)
    tot_P = np.full_like(err_P, np.nan)
    jobs = ([("size", i, r) for r in range(p["reps"]) for i in range(len(sizes))]
            + [("P", j, r) for r in range(p["reps"]) for j in range(len(p["Ps"]))])
    data = {0: d0}
    for kind, i, r in progress(jobs, desc="rr07_fig3"):
        if r not in data:
            data[r] = prepare(ds, p["data_dir"], split_seed=r, max_train=p["max_train"],
                                max_test=p["max_test"], preprocess=pre)
        d = data[r]
        seed = derive_seed(p["seed"], "fig3", kind, i, r)
        if kind == "size":
            rng = np.random.default_rng(seed)
            idx = _subsample(d["ytr"], sizes[i], rng, True)
            sub = dict(d, Xtr=d["Xtr"][idx], ytr=d["ytr"][idx])
            err_size[i, r] = _fit(sub, p["sizes_P"], sigma, seed, p["alphas"])[0]
        else:
            err_P[i, r], fit_P[i, r], tot_P[i, r] = _fit(d, p["Ps"][i], sigma, seed, p["alphas"])
    return dict(dataset=ds, sigma=sigma, sigma_scores=scores, sizes=sizes, err_size=err_size,
                Ps=p["Ps"], err_P=err_P, fit_P=fit_P, total_P=tot_P, n_train=N,
                n_test=d0["n_test"], missing=p["missing"])


def render(result, p, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(out_dir) / "rr07_fig3.png"
    md = Path(out_dir) / "rr07_fig3.md"
    if "skipped" in result:
        md.write_text(f"# RR07 Figure 3\n\nNot drawn: {result['skipped']}.\n")
        return [md]

    def ms(a):
        a = np.asarray(a, float)
        return a.mean(1), (a.std(1, ddof=1) if a.shape[1] > 1 else np.zeros(len(a)))

    names = {"covtype_binary": "Forest CoverType (class 2 vs rest)",
             "kddcup99": "KDDCUP99 10% (normal vs attack) — Forest not at hand",
             "adult": "Adult (a9a) — Forest and KDDCUP99 not at hand"}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    m, s = ms(result["err_size"])
    axes[0].errorbar(result["sizes"], m, yerr=s, fmt="o-", capsize=3)
    axes[0].set(xscale="log", xlabel="training set size", ylabel="test error (%)",
                title=f"error vs training size (P={p['sizes_P']})")
    m, s = ms(result["err_P"])
    axes[1].errorbar(result["Ps"], m, yerr=s, fmt="o-", capsize=3)
    axes[1].set(xlabel="P (grids)", ylabel="test error (%)", title="error vs P")
    mf, sf = ms(result["fit_P"])
    mt, st = ms(result["total_P"])
    axes[2].errorbar(result["Ps"], mt, yerr=st, fmt="o-", capsize=3, label="train + test")
    axes[2].errorbar(result["Ps"], mf, yerr=sf, fmt="s--", capsize=3, label="train")
    axes[2].set(xlabel="P (grids)", ylabel="seconds", title="time vs P")
    axes[2].legend()
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"RR07 Fig. 3 (Binning+LS) on {names[result['dataset']]}; "
                 f"{result['n_train']} train / {result['n_test']} test"
                 + (" — QUICK MODE (subsampled)" if p["quick"] else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    rows = [[P, f"{np.mean(e):.3f} ± {np.std(e, ddof=1) if len(e) > 1 else 0:.3f}",
             f"{np.mean(f):.2f}", f"{np.mean(t):.2f}"]
            for P, e, f, t in zip(result["Ps"], result["err_P"], result["fit_P"],
                                  result["total_P"], strict=True)]
    srows = [[n, f"{np.mean(e):.3f}"] for n, e in zip(result["sizes"], result["err_size"],
                                                                strict=True)]
    md.write_text(
        f"# RR07 Figure 3 — Binning+LS on {names[result['dataset']]}\n\n"
        + ("**QUICK MODE** (subsampled)\n\n" if p["quick"] else "")
        + "Paper (Forest): error falls from ~50% to ~3% with training size, from ~6% to ~2.5% "
          "as P goes 10→50; training+testing time ~400–1200 s over P = 10..50.\n\n"
        + md_table(["P", "test error % (mean ± std)", "train s", "train+test s"], rows)
        + "\n\n" + md_table(["training size", f"test error % (P={p['sizes_P']})"], srows)
        + "\n\nMissing larger sets: " + "; ".join(f"{k}: {v}" for k, v in
                                                 result["missing"].items())
        + f"\n\nSizes: {result['n_train']} training rows ("
        + ("subsampled" if p["max_train"] else "every training row of the split")
        + f"), {result['n_test']} test rows"
        + (f" (test split subsampled to at most {p['max_test']})" if p["max_test"] else "")
        + f"; {p['reps']} repetitions (split and feature seeds vary).  Times: wall-clock "
          "seconds of one process (single BLAS thread) — comparable across P, not with the "
          "paper's machine."
        + f"\n\nsigma = {result['sigma']:.3g} (L1, chosen by validation with P = 30); alphas "
          f"{list(p['alphas'])} by validation in every fit; inputs preprocessed "
          f"'{p.get('preprocess', 'standard')}' (README).  Compute time of the figure (search + "
          f"all fits + predictions): {result.get('compute_seconds', float('nan')):.0f} s.\n")
    return [path, md]
