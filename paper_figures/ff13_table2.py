"""FF13 Table 2: test RMSE of exact RBF, Nyström, RKS and three Fastfood variants (THEORY §4.9).

Le, Sarlós & Smola (ICML 2013), Table 2 (= arXiv:1408.3060 Table 3).  Ridge regression on
``n_out = 2048`` feature columns for every approximate method (Nyström: 2048 landmarks; RKS and
Fastfood: 1024 frequencies -> paired cos/sin columns, i.e. equal output width; FF13's "n = 2048
basis functions" do not say which).  Exact RBF: dense kernel ridge when the training set has at
most 8,000 rows (FF13 report it up to CPU's 6,554).  Bandwidths: one Gaussian sigma per dataset
chosen by validation with RKS features and shared by exact / Nyström / RKS / Fastfood RBF (same
kernel); Fastfood FFT and ball-sum choose their own.  alpha per method and fit by validation.
Fastfood ball-sum = LSS §3.4's "Matérn" recipe with t = 2 (the paper does not give t); it
approximates the ball-sum kernel, not the standard Matérn (THEORY §4.6), so it is compared with
the paper's "Fastfood Matérn" column.
"""

from __future__ import annotations

import numpy as np

from paper_figures import _metrics
from paper_figures._data import dataset_available, prepare
from paper_figures._features import METHOD_LABELS, derive_seed
from paper_figures._learning import ALPHAS, SIGMA_FACTORS, fit_timed, select_sigma
from paper_figures._metrics import bootstrap_se, mean_std
from paper_figures._output import fmt, progress, write_table_md

NESTED_CACHE = True  # per-row caches: --render-only assembles them
CODE_VERSION = 1

METHODS = ("exact", "nystrom", "rks", "ff_fft", "ff_rbf", "ff_ballsum")
# dataset -> (label, m, d, Exact RBF, Nyström, RKS, FF FFT, FF RBF, Exact Matérn, FF Matérn)
PAPER = {
    "insurance": ("Insurance", 5822, 85, 0.231, 0.232, 0.266, 0.266, 0.264, 0.234, 0.235),
    "wine": ("Wine Quality", 4080, 11, 0.819, 0.797, 0.740, 0.721, 0.740, 0.753, 0.720),
    "parkinsons": ("Parkinson", 4700, 21, 0.059, 0.058, 0.054, 0.052, 0.054, 0.053, 0.052),
    "cpu_act": ("CPU", 6554, 21, 7.271, 6.758, 7.103, 4.544, 7.366, 4.345, 4.211),
    "ct_slices": ("CT slices (axial)", 42800, 384, None, 60.683, 49.491, 58.425, 43.858, None,
                  14.868),
    "kegg": ("KEGG Network", 51686, 27, None, 17.872, 17.837, 17.826, 17.818, None, 17.846),
    "year_prediction_msd": ("Year Prediction", 463715, 90, None, 0.113, 0.123, 0.106, 0.115,
                            None, 0.116),
}
PAPER_COL = {"exact": 3, "nystrom": 4, "rks": 5, "ff_fft": 6, "ff_rbf": 7, "ff_ballsum": 9}
EXACT_MAX_ROWS = 8000
NOTES = {
    "parkinsons": "target total_UPDRS in raw units (FF13's 0.059 must be on a rescaled target "
                  "or another target: units differ, compare the RMSE/std column)",
    "kegg": "preprocessed (standardised) copy — RMSE in standardised units, FF13's are raw "
            "units: not comparable",
    "wine": "white wine, 80% = 3,918 training rows (FF13: 4,080)",
    "insurance": "official COIL 2000 split (5,822 train / 4,000 test)",
    "cpu_act": "80/20 random split (6,554 train) as FF13",
}
# FF13's Forest row (522,910 x 54, RMSE ~0.84) is a regression on the cover-type label; it is
# omitted with the dataset (covtype) listed as missing when not at hand.


def params(cfg):
    rows = []
    for ds in PAPER:
        if cfg.datasets and ds not in cfg.datasets:
            continue
        ok, msg = dataset_available(ds, cfg.data_dir)
        rows.append(dict(dataset=ds, available=ok, missing=msg))
    q = cfg.quick
    return dict(rows=rows, data_dir=str(cfg.data_dir), cache_dir=str(cfg.out),
                reps=cfg.reps or (1 if q else 3),
                seed=cfg.seed, n_out=256 if q else 2048, max_train=1500 if q else None,
                max_test=1500 if q else None, search_rows=800 if q else 2000,
                factors=[0.25, 0.5, 1.0, 2.0] if q else list(SIGMA_FACTORS),
                alphas=list(ALPHAS), quick=q, exact_max_rows=EXACT_MAX_ROWS)


def compute(p):
    """One cached computation per dataset (resumable; datasets can run in parallel processes
    with ``--datasets``), then the table's result is their concatenation."""
    from paper_figures._cache import cached

    out = []
    avail = [r["dataset"] for r in p["rows"] if r["available"]]
    common = {k: v for k, v in p.items() if k not in ("rows",)}
    for ds in progress(avail, desc="ff13_table2"):
        r = cached(p["cache_dir"], "ff13_table2_dataset" + ("_quick" if p["quick"] else ""),
                   dict(common, dataset=ds), _compute_dataset, code_version=CODE_VERSION,
                   log=lambda m: None)
        if r is not None:  # None: --render-only and not computed yet
            out += r["rows"]
    return dict(results=out)


def _compute_dataset(p):
    ds = p["dataset"]
    out = []
    d0 = prepare(ds, p["data_dir"], split_seed=0, max_train=p["max_train"],
                   max_test=p["max_test"])
    sig = {}
    for fam in ("rks", "ff_fft", "ff_ballsum"):
        seed = derive_seed(p["seed"], "ff13_table2", ds, fam, "search")
        sig[fam] = select_sigma(fam, d0, n=p["n_out"], seed=seed, factors=p["factors"],
                                  search_rows=p["search_rows"])
    for method in METHODS:
        if method == "exact" and d0["n_train"] > p["exact_max_rows"]:
            out.append(dict(dataset=ds, method=method, skipped=(
                f"{d0['n_train']} training rows > {p['exact_max_rows']}: dense kernel "
                "matrix not formed")))
            continue
        fam = method if method in ("ff_fft", "ff_ballsum") else "rks"
        sigma = sig[fam][0]
        rm, se, rel, rng_y, times, alphas, seeds = [], [], [], [], [], [], []
        for r in range(p["reps"]):
            d = d0 if r == 0 else prepare(ds, p["data_dir"], split_seed=r,
                                            max_train=p["max_train"], max_test=p["max_test"])
            seed = derive_seed(p["seed"], "ff13_table2", ds, method, r)
            pred, fit_s, model, _ = fit_timed(method, d, n=p["n_out"], sigma=sigma, seed=seed,
                                             alphas=p["alphas"])
            e = _metrics.rmse(d["yte"], pred)
            rm.append(e)
            se.append(bootstrap_se(_metrics.rmse, d["yte"], pred, seed=seed))
            rel.append(e / float(np.std(d["yte"])))
            rng_y.append(e / float(np.ptp(d["ytr"])))
            times.append(fit_s)
            alphas.append(model.alpha_)
            seeds.append(seed)
        out.append(dict(dataset=ds, method=method, sigma=sigma,
                        sigma_scores=sig[fam][1], rmse=rm, rmse_se=se, rmse_over_std=rel,
                        rmse_over_range=rng_y, fit_seconds=times, alphas=alphas, seeds=seeds,
                        n_train=d0["n_train"], n_test=d0["n_test"]))
    return dict(rows=out)


def render(result, p, out_dir):
    res = {(r["dataset"], r["method"]): r for r in result["results"]}
    header = ["dataset", "method", "paper RMSE", "ours RMSE (mean ± std)", "ratio ours/paper",
              "target", "test-set SE", "ours RMSE/std(y)", "fit s", "sigma", "n train / test",
              "note"]
    rows = []
    for row in p["rows"]:
        ds = row["dataset"]
        info = PAPER[ds]
        for method in METHODS:
            pv = info[PAPER_COL[method]]
            name = METHOD_LABELS[method]
            if not row["available"]:
                rows.append([info[0], name, fmt(pv), "data missing", "–", "not run", "–", "–",
                             "–", "–", "–", row["missing"].split(". ")[0]])
                continue
            if (ds, method) not in res:
                rows.append([info[0], name, fmt(pv), "not computed yet", "–", "–", "–", "–",
                             "–", "–", "–", "still running"])
                continue
            r = res[(ds, method)]
            if "skipped" in r:
                rows.append([info[0], name, fmt(pv), "not run", "–", "–", "–", "–", "–", "–",
                             "–", r["skipped"]])
                continue
            m, s = mean_std(r["rmse"])
            mr, _ = mean_std(r["rmse_over_std"])
            if pv is None:
                ratio, verdict = "–", "no paper value"
            else:
                ratio = fmt(m / pv)
                se = float(np.mean(r["rmse_se"])) if "rmse_se" in r else None
                tol = 2 * _metrics.noise(s, se)
                if p["quick"]:
                    verdict = "n/a (quick mode)"
                elif ds in ("kegg", "parkinsons"):
                    verdict = "n/a (units differ)"
                else:
                    verdict = "met" if m <= pv + tol else "NOT met"
            se_txt = fmt(float(np.mean(r["rmse_se"]))) if "rmse_se" in r else "–"
            rows.append([info[0], name, fmt(pv), f"{fmt(m)} ± {fmt(s)}", ratio, verdict,
                         se_txt, fmt(mr), fmt(float(np.mean(r["fit_seconds"])), 2),
                         f"{r['sigma']:.3g}", f"{r['n_train']} / {r['n_test']}",
                         NOTES.get(ds, "") + (
                             f"; RMSE / range(y_train) = {np.mean(r['rmse_over_range']):.3f} "
                             "(if FF13 scaled y to [0, 1])" if ds == "parkinsons"
                             and "rmse_over_range" in r else "")])
    banner = ""
    if p["quick"]:
        banner = (f"**QUICK MODE**: n_out = {p['n_out']} (paper: 2048), train/test subsampled to "
                  f"≤ {p['max_train']} / {p['max_test']} rows, {p['reps']} repetition(s) — "
                  "a smoke run, NOT comparable with the paper.\n")
    txt = ["# FF13 Table 2 — test RMSE (reproduction)\n", banner,
           f"Ridge regression on n_out = {p['n_out']} feature columns (Nyström: landmarks; RKS / "
           "Fastfood: n_out/2 frequencies, paired cos/sin). Mean ± std over "
           f"{p['reps']} repetitions (split seed and feature seed vary; insurance has a fixed "
           "split, so only the feature seed). Target: mean ≤ paper + 2·noise, noise = the larger "
           "of the std over repetitions and the test-set SE (bootstrap standard error of one "
           "model's test RMSE over 1,000 resamples of the test points: the noise of a fixed "
           "split, which the repetitions do not see). The paper column for "
           "Fastfood ball-sum is FF13's 'Fastfood Matérn' (t = 2 here; FF13 do not state t). "
           "FF13's Forest row is omitted (covtype not at hand; FF13 regress the class label).\n"]
    return write_table_md(out_dir, "ff13_table2", txt, header, rows, result)
