"""RR07 Table 1: Fourier+LS and Binning+LS — test error and training time (THEORY.md §3.7).

Rahimi & Recht (NIPS 2007), Table 1.  Fourier+LS: Gaussian kernel, random Fourier features with
the paper's D *frequencies* (Algorithm 1's paired map [cos, sin] -> 2D output columns).
Binning+LS: Laplacian (L1, product) kernel, random binning features with the paper's P grids.
Both with ridge regression / least-squares classification (:mod:`randfeat.linear`).  Error:
classification error in %, regression error = ||y_hat - y|| / ||y|| in % ("RMS error normalised by
the norm of the ground truth").  Protocol (splits, bandwidth and alpha by validation, timing):
``paper_figures/__init__.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper_figures import _output
from paper_figures._data import dataset_available, prepare
from paper_figures._features import METHOD_LABELS, derive_seed
from paper_figures._learning import describe_timing, fit_timed, select_sigma, timing_conditions
from paper_figures._metrics import mean_std, rr_error
from paper_figures._output import md_table, progress

NESTED_CACHE = True  # per-row caches: --render-only assembles them
CODE_VERSION = 5  # 2: sigma grid extension at the edge, CPU seconds; 3: protocol v3 (below);
# 4: timing conditions recorded per row; 5: learners spread chunks and alphas over threads
# (randfeat.linear n_threads), learner threads recorded

# Protocol v3 (README, "RR07 protocol"): robust preprocessing (binary columns kept 0/1,
# heavy-tailed counts log1p, rest standardised), sigma searched on up to 20,000 training rows
# over a sqrt(2)-spaced grid of multiples of the median distance (extended x2 at the edge up to
# three times), alpha grid 10**arange(-10, 1).
PREPROCESS = "robust"
SEARCH_ROWS = 20000
SIGMA_FACTORS = tuple(float(2.0 ** (k / 2)) for k in range(-6, 3))  # 1/8 ... 2
MAX_EXTEND = 3
ALPHAS = tuple(10.0 ** np.arange(-10, 1))

# (paper label, dataset, task, D, P, Fourier err %, Fourier time s, Binning err %, Binning time s)
PAPER = [
    ("CPU", "cpu_act", 300, 350, 3.6, 20.0, 5.3, 180.0),
    ("Census", "census", 500, 30, 5.0, 36.0, 7.5, 19 * 60.0),
    ("Adult", "adult", 500, 30, 14.9, 9.0, 15.3, 90.0),
    ("Forest Cover", "covtype_binary", 5000, 50, 11.6, 71 * 60.0, 2.2, 25 * 60.0),
    ("KDDCUP99", "kddcup99", 50, 10, 7.3, 90.0, 7.3, 35 * 60.0),
]

NOTES = {
    "census": "house_16H stand-in (16 dims, 22,784 rows) — NOT RR07's 119-dim Census; "
              "errors are not comparable",
    "kddcup99": "10% subset (494k rows) with a random 80/20 split, RR07 used all 4.9M rows "
                "and a separate test set; the time comparison favours us by the 10x smaller "
                "training set",
    "adult": "a9a official train/test split; noise = spread over feature seeds only",
    "cpu_act": "random 80/20 split (6,554 train); RR07 used ~6,500 training points",
    "covtype_binary": "class 2 vs rest, random 90/10 split (522,910 train)",
}


def params(cfg):
    rows = []
    for label, ds, D, P, *_ in PAPER:
        ok, msg = dataset_available(ds, cfg.data_dir)
        if cfg.datasets and ds not in cfg.datasets:
            continue
        rows.append(dict(label=label, dataset=ds, D=D, P=P, available=ok, missing=msg))
    q = cfg.quick
    return dict(rows=rows, data_dir=str(cfg.data_dir), cache_dir=str(cfg.out),
                reps=cfg.reps or (1 if q else 3), seed=cfg.seed,
                max_train=2000 if q else None, max_test=2000 if q else None,
                search_rows=1000 if q else SEARCH_ROWS,
                factors=[0.25, 0.5, 1.0, 2.0] if q else list(SIGMA_FACTORS),
                alphas=list(ALPHAS), max_extend=MAX_EXTEND, preprocess=PREPROCESS, quick=q)


def compute(p):
    """One cached computation per (dataset, method) row (resumable; run datasets in parallel
    processes with ``--datasets``); the table's result is their list."""
    from paper_figures._cache import cached

    common = {k: v for k, v in p.items() if k != "rows"}
    jobs = [(r, m) for r in p["rows"] if r["available"] for m in ("fourier", "binning")]
    out = []
    for row, method in progress(jobs, desc="rr07_table1"):
        q = dict(common, dataset=row["dataset"], method=method,
                 n=2 * row["D"] if method == "fourier" else row["P"])
        r = cached(p["cache_dir"], "rr07_table1_row" + ("_quick" if p["quick"] else ""),
                   q, _compute_row, code_version=CODE_VERSION, log=lambda m: None)
        if r is not None:  # None: --render-only and not computed yet
            out.append(r)
    return dict(results=out)


def _compute_row(p):
    ds, method, n = p["dataset"], p["method"], p["n"]
    timing = timing_conditions()
    pre = p.get("preprocess", "standard")
    d0 = prepare(ds, p["data_dir"], split_seed=0, max_train=p["max_train"],
                   max_test=p["max_test"], preprocess=pre)
    s0 = derive_seed(p["seed"], "rr07_table1", ds, method)
    sigma, scores = select_sigma(method, d0, n=n, seed=s0, factors=p["factors"],
                                   search_rows=p["search_rows"], alphas=p["alphas"],
                                   max_extend=p.get("max_extend", 2))
    errs, times, cpus, alphas, seeds = [], [], [], [], []
    for r in range(p["reps"]):
        d = d0 if r == 0 else prepare(ds, p["data_dir"], split_seed=r,
                                        max_train=p["max_train"], max_test=p["max_test"],
                                        preprocess=pre)
        seed = derive_seed(p["seed"], "rr07_table1", ds, method, r)
        pred, fit_s, model, cpu_s = fit_timed(method, d, n=n, sigma=sigma, seed=seed,
                                                alphas=p["alphas"])
        errs.append(rr_error(d["task"], d["yte"], pred))
        times.append(fit_s)
        cpus.append(cpu_s)
        alphas.append(model.alpha_)
        seeds.append(seed)
    return dict(dataset=ds, method=method, n=n, sigma=sigma, sigma_scores=scores,
                errors=errs, fit_seconds=times, fit_cpu_seconds=cpus, alphas=alphas,
                seeds=seeds, n_train=d0["n_train"], n_test=d0["n_test"], task=d0["task"],
                preprocess=pre, preprocess_info=d0["preprocess_info"], timing=timing)


def render(result, p, out_dir):
    out_dir = Path(out_dir)
    res = {(r["dataset"], r["method"]): r for r in result["results"]}
    header = ["dataset", "method", "D / P", "paper error %", "ours error % (mean ± std)",
              "ratio ours/paper", "error target", "paper time s", "ours fit s wall (mean)",
              "ours fit s CPU (mean)", "speed-up paper/ours (wall; CPU)",
              "time target (≥10x; wall / CPU)", "sigma", "alpha", "n train / test", "note"]
    rows, summary = [], []
    paper = {row[1]: row for row in PAPER}
    for row in p["rows"]:
        label, ds, D, P, fe, ft, be, bt = paper[row["dataset"]]
        for method, size, pe, pt in (("fourier", f"D={D}", fe, ft), ("binning", f"P={P}", be, bt)):
            name = METHOD_LABELS[method]
            if not row["available"]:
                rows.append([label, name, size, fmt(pe), "data missing", "–", "not run", fmt(pt),
                             "–", "–", "–", "not run", "–", "–", "–",
                             row["missing"].split(". ")[0]])
                continue
            if (ds, method) not in res:
                rows.append([label, name, size, fmt(pe), "not computed yet", "–", "–", fmt(pt),
                             "–", "–", "–", "–", "–", "–", "–", "row still running"])
                continue
            r = res[(ds, method)]
            m, s = mean_std(r["errors"])
            t = float(np.mean(r["fit_seconds"]))
            c = float(np.mean(r.get("fit_cpu_seconds", [np.nan])))
            tol = 2 * s if np.isfinite(s) else 0.0
            err_ok = m <= pe + tol
            time_ok = pt / t >= 10
            cpu_ok = np.isfinite(c) and pt / c >= 10
            note = NOTES.get(ds, "") + "; " + describe_timing(r.get("timing"))
            grid = sorted(float(k) for k in r["sigma_scores"])
            if grid and r["sigma"] in (grid[0], grid[-1]):
                note += "; sigma at the edge of the searched grid"
            if not p["quick"] and not (time_ok and cpu_ok):
                note += "; " + _why_slow(r, pt, wall_met=time_ok)
            if ds == "census" or p["quick"]:
                verdict = "n/a (" + ("quick mode" if p["quick"] else "different data") + ")"
            else:
                verdict = "met" if err_ok else "NOT met"
            rows.append([label, name, size, fmt(pe), f"{fmt(m)} ± {fmt(s)}", fmt(m / pe),
                         verdict, fmt(pt), fmt(t), fmt(c),
                         f"{pt / t:.0f}x; " + (f"{pt / c:.0f}x" if np.isfinite(c) else "–"),
                         ("met" if time_ok else "NOT met") + " / "
                         + ("met" if cpu_ok else "NOT met" if np.isfinite(c) else "–"),
                         f"{r['sigma']:.3g}",
                         ",".join(f"{a:.0e}" for a in r["alphas"]),
                         f"{r['n_train']} / {r['n_test']}", note])
            summary.append((label, name, err_ok, time_ok))
    txt = ["# RR07 Table 1 — random features + least squares (reproduction)\n",
           _banner(p),
           "Error: classification error (%) or regression ||ŷ−y||/||y|| (%), on the test split. "
           f"Mean ± std over {p['reps']} repetitions (random-split datasets: split seed r and "
           "feature seed vary; fixed-split datasets: feature seed only — for Adult the sampling "
           "noise of the fixed 16,281-row test set, sqrt(p(1-p)/n) ≈ 0.28 points at 15%, is "
           "larger but not used in the verdict). Error target: mean ≤ paper + 2·std. "
           "Time: wall-clock of the final fit (features + accumulation + alpha validation + "
           "solve; not the bandwidth search) and the CPU time of the fitting process (all its "
           "threads) vs the paper's 2007 time; target ≥ 10x faster. The CPUs the process could "
           "use, the threads and the load average when each row was computed are in its "
           "note (the learners spread chunks of rows and the alphas over every CPU the process "
           "may use, each thread with single-threaded BLAS); wall time is "
           "the honest figure on an otherwise idle machine, CPU time on a shared one (runs "
           "under a load average of 10–20 had wall times up to 25x the CPU times). "
           "Preprocessing (README, protocol v3): binary columns kept 0/1, non-negative columns "
           "with skewness > 2 → log1p, then standardised. Fourier: Gaussian kernel, D "
           "frequencies → 2D paired cos/sin columns; streaming normal equations in float64. "
           "Binning: Laplacian (L1) kernel, P grids, LSQR. sigma (on ≤ 20,000 training rows) and "
           "alpha (20% validation split of the training set) chosen by validation, never on the "
           "test split (see README).\n",
           md_table(header, rows), "",
           "Compute time of the rows shown (bandwidth search + all repetitions, summed over the "
           "per-row computations, which may come from separate runs): "
           + ", ".join(f"{r['dataset']} {r['method']} {r['compute_seconds']:.0f} s"
                       for r in result["results"] if "compute_seconds" in r)
           + f"; total {sum(r.get('compute_seconds', 0.0) for r in result['results']):.0f} s."]
    path = out_dir / "rr07_table1.md"
    path.write_text("\n".join(txt) + "\n")
    return [path]


def fmt(x):
    return _output.fmt(x, 2)


def _why_slow(r, paper_s, wall_met=False):
    """The reason a row misses the 10x time target (wall-clock, or only the CPU time summed over
    threads when ``wall_met``), from its own sizes (the table says why)."""
    n = r["n_train"]
    what = ("wall time met; CPU time (all threads) above a tenth of the paper's time"
            if wall_met else "time target missed")
    if r["method"] == "fourier":
        gflop = n * r["n"] ** 2 / 1e9      # Z'Z by syrk: n * D_out^2 flops (one triangle)
        return (f"{what}: the normal equations alone need n·(2D)² = {gflop:.0f} "
                f"GFlop for ZᵀZ in float64 (BLAS syrk, near this machine's peak), i.e. "
                f"{gflop / (paper_s / 10):.0f} GFlop/s to fit in a tenth of the paper's time "
                "on one core; "
                "see README (training time, Adult)")
    return (f"{what}: LSQR iterations over the {n}-row sparse matrix of "
            f"{r['n']} grids, per alpha")


def _banner(p):
    if p["quick"]:
        return (f"**QUICK MODE**: training/test sets subsampled to ≤ {p['max_train']} / "
                f"{p['max_test']} rows, {p['reps']} repetition(s), bandwidth search on ≤ "
                f"{p['search_rows']} rows — a smoke run, NOT comparable with the paper.\n")
    return ""
