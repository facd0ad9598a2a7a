"""Benchmark: randfeat's ridge learners against scikit-learn's RBFSampler + Ridge pipeline.

Issue 17 ("Learners against the pipeline users have today").  For each data set and feature
count ``D`` it fits, side by side:

* **pipeline**: ``make_pipeline(RBFSampler(gamma, n_components=D), RidgeClassifier(alpha))``
  (``Ridge`` for the regression set), the way users combine random features and a linear model
  today: the ``N x D`` feature matrix is materialised, then ``Ridge``'s Cholesky solver forms
  its Gram;
* **randfeat**: ``RandomFeatureRidgeClassifier`` / ``RandomFeatureRidge`` with
  ``RandomFourierFeatures(D, sigma, features="phase")`` (the same kernel and the same feature
  map as ``RBFSampler``: ``gamma = 1 / (2 sigma^2)``), the same single ``alpha`` in the same
  (scikit-learn's) scale, ``gram_dtype`` as given (default "auto", the learners' default: float32
  statistics -- each chunk's ``ZᵀZ`` by one single-precision ``syrk``, summed over chunks in
  float64 -- where alpha is above its floor, as at alpha = 1 on every data set here), streaming
  ``chunk_size`` rows at a time; ``--solver pcg``: Nyström-preconditioned conjugate gradients on
  the kept (float32) feature matrix instead (``random_state = r`` for its test matrix too).

Both get the same standardised float64 inputs (Adult: the a9a CSR matrix as loaded).  Every fit
runs in a **fresh subprocess** (data loaded from a cache, libraries imported, then the fit): the
fit's wall time (``time.perf_counter``), its **peak resident memory** (the kernel's ``VmHWM``,
reset through ``/proc/self/clear_refs`` just before the fit and read after it; "fit peak" is that
peak minus the process's resident size before the fit, i.e. the memory the fit itself needs),
and the test error (classification error in %, or RMSE for the regression set).  Repeats are
interleaved (pipeline, randfeat, pipeline, randfeat, ...) and repeat ``r`` uses
``random_state = r`` for both, so the error spread over repeats is the seed-to-seed spread.
``--threads T`` sets the BLAS threads of both (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``
in the child's environment) and randfeat's ``n_threads``; by default both use every CPU.  The
machine's load average is printed.

Usage::

    python benchmarks/bench_learners.py              # adult, cpu_act, kddcup99; D = 1000, 4000
    python benchmarks/bench_learners.py --threads 1  # BLAS and randfeat on one thread each
    python benchmarks/bench_learners.py --datasets adult --D 1000 --repeats 5
    python benchmarks/bench_learners.py --json out.json
    python benchmarks/bench_learners.py --datasets cpu_act --D 4000 --solver pcg --threads 1
    python benchmarks/bench_learners.py --selection --datasets cpu_act --D 4000

``--selection [loo,gcv,evidence,holdout]`` times randfeat's choice of alpha instead (issue 32):
per repeat, in fresh processes and interleaved, the **default call**
``RandomFeatureRidge(RandomFourierFeatures(D, sigma))`` first (leave-one-out over the default
grid of 9 alphas), then a **single-alpha** fit (``alphas=alpha``: the Gram pass and one Cholesky
factorisation), then every listed criterion explicitly; each with the time of its phases (the
Gram pass, the eigendecomposition, the leave-one-out pass, the solves), the flop counts of the
passes, and the ratio to the single-alpha fit of the same repeat.  ``--gram-dtype`` is then the
learners' own default unless given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

MiB = 2.0 ** 20
# sigma of the Gaussian kernel and alpha (scikit-learn's scale) per data set
SETTINGS = {
    "adult": dict(sigma=3.0, alpha=1.0, task="binary"),
    "cpu_act": dict(sigma=3.0, alpha=1.0, task="regression"),
    "kddcup99": dict(sigma=5.0, alpha=1.0, task="binary"),
}


def prepare(name, cache):
    """Train/test split (randfeat.datasets.paper_split), standardised with the training rows'
    mean and std (dense sets; Adult stays the binary CSR matrix), saved to ``cache``."""
    import scipy.sparse as sp

    from randfeat.datasets import load_dataset, paper_split

    path = Path(cache) / f"{name}.npz"
    if path.exists():
        return path
    data = load_dataset(name)
    Xtr, Xte, ytr, yte = paper_split(data, random_state=0)
    if not sp.issparse(Xtr):
        mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
        np.savez(path, Xtr=Xtr, Xte=Xte, ytr=ytr, yte=yte, sparse=False)
    else:
        Xtr, Xte = Xtr.tocsr(), Xte.tocsr()
        np.savez(path, sparse=True, ytr=ytr, yte=yte,
                 **{f"{k}_{p}": getattr(M, p) for k, M in (("Xtr", Xtr), ("Xte", Xte))
                    for p in ("data", "indices", "indptr")},
                 Xtr_shape=Xtr.shape, Xte_shape=Xte.shape)
    return path


CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import scipy.sparse as sp

def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return -1

a = np.load({path!r})
if bool(a["sparse"]):
    mk = lambda k: sp.csr_matrix((a[k + "_data"], a[k + "_indices"], a[k + "_indptr"]),
                                 shape=tuple(a[k + "_shape"]))
    Xtr, Xte = mk("Xtr"), mk("Xte")
else:
    Xtr, Xte = a["Xtr"], a["Xte"]
ytr, yte = a["ytr"], a["yte"]
method, D, sigma, alpha, task, seed = {method!r}, {D}, {sigma}, {alpha}, {task!r}, {seed}
if method == "pipeline":
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import Ridge, RidgeClassifier
    from sklearn.pipeline import make_pipeline
    lin = RidgeClassifier(alpha=alpha) if task == "binary" else Ridge(alpha=alpha)
    model = make_pipeline(RBFSampler(gamma=1.0 / (2 * sigma ** 2), n_components=D,
                                     random_state=seed), lin)
else:
    from randfeat import RandomFourierFeatures
    from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier
    cls = RandomFeatureRidgeClassifier if task == "binary" else RandomFeatureRidge
    model = cls(RandomFourierFeatures(D, sigma=sigma, features="phase", random_state=seed),
                alphas=alpha, gram_dtype={gram_dtype!r}, chunk_size={chunk_size!r},
                solver={solver!r}, random_state=seed,
                n_threads={threads})
before = rss("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak resident size (VmHWM) to the current one
t0 = time.perf_counter()
model.fit(Xtr, ytr)
wall = time.perf_counter() - t0
peak = rss("VmHWM")
pred = model.predict(Xte)
if task == "binary":
    err = 100.0 * float(np.mean(pred != yte))
else:
    err = float(np.sqrt(np.mean((pred - yte) ** 2)))
print(json.dumps(dict(wall=wall, peak=peak, before=before, err=err)))
"""


SELECTION_CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
a = np.load({path!r})
Xtr, Xte, ytr, yte = a["Xtr"], a["Xte"], a["ytr"], a["yte"]
import randfeat.linear._fit as F
import randfeat.linear._selection as S
import randfeat.linear._statistics as ST
from randfeat import RandomFourierFeatures
from randfeat.linear import RandomFeatureRidge
phases = {{}}

def timed(owner, name, label):
    real = getattr(owner, name)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - t0
    setattr(owner, name, wrapper)

timed(F.InMemoryRows, "statistics", "gram pass")
timed(F.InMemoryRows, "loo", "loo pass")
timed(S.Spectrum, "from_statistics", "eigendecomposition")
timed(ST.RidgeStatistics, "_path", "solves")
method, D, sigma, alpha, seed = {method!r}, {D}, {sigma}, {alpha}, {seed}
feats = RandomFourierFeatures(D, sigma=sigma, features="phase", random_state=seed)
kw = {{}} if {gram_dtype!r} is None else dict(gram_dtype={gram_dtype!r})
if method == "default":
    model = RandomFeatureRidge(feats)
elif method == "single":
    model = RandomFeatureRidge(feats, alphas=alpha, **kw)
else:
    model = RandomFeatureRidge(feats, selection=method, random_state=seed, **kw)
t0 = time.perf_counter()
model.fit(Xtr, ytr)
wall = time.perf_counter() - t0
rmse = float(np.sqrt(np.mean((model.predict(Xte) - yte) ** 2)))
print(json.dumps(dict(wall=wall, phases=phases, err=rmse, alpha=float(model.alpha_),
                      n=int(Xtr.shape[0]), gram_dtype=model.gram_dtype)))
"""


def run_selection_child(path, method, D, seed, args, settings):
    code = SELECTION_CHILD.format(root=str(ROOT), path=str(path), method=method, D=D,
                                  sigma=settings["sigma"], alpha=settings["alpha"], seed=seed,
                                  gram_dtype=args.gram_dtype)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if args.threads is not None:
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(args.threads)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return dict(error=out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def flops(n, D, L=9):
    """Flop counts of the passes (multiply-adds counted as 2): the Gram's syrk n D^2, a Cholesky
    factorisation D^3 / 3, a symmetric eigendecomposition with vectors about 9 D^3 (tridiagonal
    reduction 4/3 D^3, the rest the eigenvectors' back-transformation and the tridiagonal
    solver), the leave-one-out pass's rotation 2 n D^2 (one gemm) and its 2 n D L (K + 1) per
    grid (K = 1)."""
    return {"gram (syrk) n D^2": n * D * D, "cholesky D^3/3": D ** 3 / 3,
            "eigendecomposition ~9 D^3": 9 * D ** 3, "loo rotation 2 n D^2": 2 * n * D * D,
            "loo per-alpha 4 n D L": 4 * n * D * L}


def selection_main(args):
    """The ``--selection`` mode (module docstring)."""
    import randfeat

    cfg = randfeat.show_config(as_dict=True)
    simd = cfg.get("simd", {}).get("selected")
    blas = [f"{p['internal_api']} {p.get('version')} ({p.get('architecture')})"
            for p in cfg.get("threadpools", []) if p.get("user_api") == "blas"]
    from _timing import load_average

    crit = [c for c in args.selection.split(",") if c]
    methods = ["default", "single"] + [c for c in crit if c != "default"]
    cache = Path(tempfile.gettempdir()) / "randfeat_bench_learners"
    cache.mkdir(exist_ok=True)
    print(f"randfeat {randfeat.__version__}; cpu: {cfg['machine'].get('cpu')} "
          f"({cfg['machine'].get('usable_cpus')} usable); simd: {simd}; BLAS: "
          f"{', '.join(blas)}; load average {load_average()}; BLAS threads "
          f"{args.threads or 'all'}; {args.repeats} interleaved repeats, each fit in a fresh "
          f"process; methods {methods}", flush=True)
    results = dict(config=cfg, loadavg_start=os.getloadavg(), methods=methods, runs=[])
    table = []
    for name in args.datasets.split(","):
        st = SETTINGS[name]
        if st["task"] != "regression":
            print(f"{name}: --selection times the regressor; skipped (a classification set)")
            continue
        path = prepare(name, cache)
        for D in (int(s) for s in args.D.split(",")):
            per = {m: [] for m in methods}
            load = []
            for r in range(args.repeats):
                for m in methods:
                    load.append(os.getloadavg()[0])
                    res = run_selection_child(path, m, D, r, args, st)
                    res.update(method=m, dataset=name, D=D, seed=r, load=load[-1])
                    results["runs"].append(res)
                    if "error" in res:
                        print(f"{name} D={D} {m} seed {r}: FAILED {res['error']}", flush=True)
                        continue
                    per[m].append(res)
                    ph = ", ".join(f"{k} {v:.2f} s" for k, v in res["phases"].items())
                    print(f"{name} D={D} {m} seed {r}: {res['wall']:.2f} s ({ph}); alpha "
                          f"{res['alpha']:.3g}, test RMSE {res['err']:.4f}, load {load[-1]:.1f}",
                          flush=True)
            n = per["single"][0]["n"] if per["single"] else 0
            row = dict(dataset=name, D=D, n=n, load=(min(load), max(load)), flops=flops(n, D))
            for m in methods:
                if not per[m] or not per["single"]:
                    continue
                ratios = [a["wall"] / b["wall"] for a, b in zip(per[m], per["single"],
                                                               strict=False)]
                row[m] = dict(wall=summary(per[m], "wall"),
                              ratio=(float(min(ratios)), float(np.median(ratios))),
                              phases={k: float(np.median([x["phases"].get(k, 0.0)
                                                          for x in per[m]]))
                                      for k in {k for x in per[m] for k in x["phases"]}},
                              err=float(np.mean([x["err"] for x in per[m]])),
                              alpha=[x["alpha"] for x in per[m]])
            table.append(row)
    results["table"] = table
    results["loadavg_end"] = os.getloadavg()
    print("\n| data set (n) | D | fit | time min / median | ratio to single alpha (min / "
          "median, paired by repeat) | phases (median) | test RMSE | load |")
    print("|---" * 8 + "|")
    for row in table:
        for m in methods:
            x = row.get(m)
            if not x:
                continue
            ph = "; ".join(f"{k} {v:.2f} s" for k, v in sorted(x["phases"].items()))
            print(f"| {row['dataset']} ({row['n']:,}) | {row['D']} | {m} | {x['wall'][0]:.2f} / "
                  f"{x['wall'][1]:.2f} s | {x['ratio'][0]:.2f}x / {x['ratio'][1]:.2f}x | {ph} | "
                  f"{x['err']:.4f} | {row['load'][0]:.1f}-{row['load'][1]:.1f} |")
        fl = "; ".join(f"{k}: {v:.2e}" for k, v in row["flops"].items())
        print(f"|   | | flops | {fl} |" + " |" * 4)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def run_child(path, method, D, seed, args, settings):
    code = CHILD.format(root=str(ROOT), path=str(path), method=method, D=D,
                        sigma=settings["sigma"], alpha=settings["alpha"],
                        task=settings["task"], seed=seed, gram_dtype=args.gram_dtype,
                        chunk_size=args.chunk_size, threads=args.threads,
                        solver=args.solver)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if args.threads is not None:
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = str(args.threads)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return dict(error=out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def precision(name, D, seeds, cache):
    """gram_dtype="float32" against "float64" on the same fit (same features, same chunks): the
    largest Gram entry error relative to the largest entry, the relative coefficient
    difference, the largest decision-function difference on the test rows and both test errors,
    per seed (in this process)."""
    import scipy.sparse as sp

    from randfeat import RandomFourierFeatures
    from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier, RidgeStatistics

    st = SETTINGS[name]
    a = np.load(prepare(name, cache))
    if bool(a["sparse"]):
        def mk(k):
            return sp.csr_matrix((a[k + "_data"], a[k + "_indices"], a[k + "_indptr"]),
                                 shape=tuple(a[k + "_shape"]))
        Xtr, Xte = mk("Xtr"), mk("Xte")
    else:
        Xtr, Xte = a["Xtr"], a["Xte"]
    ytr, yte = a["ytr"], a["yte"]
    cls = RandomFeatureRidgeClassifier if st["task"] == "binary" else RandomFeatureRidge
    out = []
    for seed in seeds:
        f = RandomFourierFeatures(D, sigma=st["sigma"], features="phase", random_state=seed)
        fits, grams = {}, {}
        for g in ("float64", "float32"):
            m = cls(f, alphas=st["alpha"], gram_dtype=g).fit(Xtr, ytr)
            fits[g] = m
            stats = RidgeStatistics(g)
            cs = m._chunk_rows()
            for s0 in range(0, Xtr.shape[0], cs):
                stats.partial_fit(m.features_.transform(Xtr[s0:s0 + cs]),
                                  np.zeros(min(cs, Xtr.shape[0] - s0)))
            grams[g] = stats.gram_
        m64, m32 = fits["float64"], fits["float32"]
        d64 = m64.decision_function(Xte) if st["task"] == "binary" else m64.predict(Xte)
        d32 = m32.decision_function(Xte) if st["task"] == "binary" else m32.predict(Xte)

        def err(m):
            p = m.predict(Xte)
            return (100.0 * float(np.mean(p != yte)) if st["task"] == "binary"
                    else float(np.sqrt(np.mean((p - yte) ** 2))))

        out.append(dict(
            seed=seed, gram_rel=float(np.abs(grams["float32"] - grams["float64"]).max()
                                      / np.abs(grams["float64"]).max()),
            coef_rel=float(np.linalg.norm(m32.coef_ - m64.coef_) / np.linalg.norm(m64.coef_)),
            decision_max=float(np.abs(d32 - d64).max()),
            decision_scale=float(np.abs(d64).max()),
            sign_flips=int(np.sum(np.sign(d32) != np.sign(d64))) if st["task"] == "binary"
            else 0, err64=err(m64), err32=err(m32)))
        r = out[-1]
        print(f"precision {name} D={D} seed {seed}: max |G32 - G64| / max |G64| = "
              f"{r['gram_rel']:.1e}; ||w32 - w64|| / ||w64|| = {r['coef_rel']:.1e}; max decision "
              f"difference {r['decision_max']:.1e} (max |decision| {r['decision_scale']:.2f}), "
              f"{r['sign_flips']} test predictions changed; test error float64 "
              f"{r['err64']:.3f}, float32 {r['err32']:.3f}", flush=True)
    return out


def pipeline_bytes(n, D):
    """The pipeline's two N x D float64 matrices (features, and Ridge's centred copy)."""
    return 2 * 8 * n * D


def summary(rows, key):
    v = np.array([r[key] for r in rows])
    return float(v.min()), float(np.median(v))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="adult,cpu_act,kddcup99")
    ap.add_argument("--D", default="1000,4000", help="comma-separated feature counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gram-dtype", default="auto", choices=["auto", "float32", "float64"])
    ap.add_argument("--chunk-size", type=lambda v: v if v == "auto" else int(v), default="auto",
                    help="rows per chunk, or 'auto' (randfeat's default)")
    ap.add_argument("--solver", default="auto", choices=["auto", "cholesky", "pcg"],
                    help="randfeat's solver ('auto': Cholesky for these dense features)")
    ap.add_argument("--threads", type=int, default=None,
                    help="BLAS threads of both and randfeat's n_threads (default: all CPUs)")
    ap.add_argument("--max-gib", type=float, default=None,
                    help="skip a pipeline fit whose two N x D float64 matrices exceed this many "
                         "GiB (default: 80%% of the memory available now)")
    ap.add_argument("--only", choices=["pipeline", "randfeat"], default=None,
                    help="run one side only (e.g. randfeat where the pipeline cannot run)")
    ap.add_argument("--precision", action="store_true",
                    help="only compare gram_dtype float32 with float64 (same process, seeds "
                         "0 .. repeats - 1) on every data set and D")
    ap.add_argument("--selection", nargs="?", const="loo,gcv,evidence,holdout", default=None,
                    help="time the choice of alpha (default call first, then a single alpha, "
                         "then these criteria; default: loo,gcv,evidence,holdout) instead of "
                         "the pipeline comparison")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.selection is not None:
        if "--gram-dtype" not in " ".join(sys.argv if argv is None else argv):
            args.gram_dtype = None          # the learners' own default
        if "--datasets" not in " ".join(sys.argv if argv is None else argv):
            args.datasets = "cpu_act"
        if "--D" not in (sys.argv if argv is None else argv):
            args.D = "4000"
        return selection_main(args)
    import psutil

    avail = psutil.virtual_memory().available
    max_bytes = args.max_gib * 2 ** 30 if args.max_gib else 0.8 * avail
    cache = Path(tempfile.gettempdir()) / "randfeat_bench_learners"
    cache.mkdir(exist_ok=True)
    if args.precision:
        res = {f"{name} D={D}": precision(name, D, range(args.repeats), cache)
               for name in args.datasets.split(",") for D in (int(s) for s in args.D.split(","))}
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
        return 0
    results = dict(loadavg_start=os.getloadavg(), cpus=os.cpu_count(), threads=args.threads,
                   gram_dtype=args.gram_dtype, chunk_size=args.chunk_size,
                   solver=args.solver, runs=[])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; randfeat "
          f"gram_dtype={args.gram_dtype}, chunk_size={args.chunk_size}, solver={args.solver}, "
          f"threads={args.threads or 'all'}; {args.repeats} interleaved repeats (seed = "
          f"repeat), every fit in a fresh process", flush=True)
    table = []
    for name in args.datasets.split(","):
        st = SETTINGS[name]
        path = prepare(name, cache)
        with np.load(path) as a:
            n_tr = int(a["Xtr_shape"][0]) if bool(a["sparse"]) else a["Xtr"].shape[0]
        for D in (int(s) for s in args.D.split(",")):
            methods = ["pipeline", "randfeat"] if args.only is None else [args.only]
            need = pipeline_bytes(n_tr, D)
            skipped = None
            if "pipeline" in methods and need > max_bytes:
                skipped = (f"pipeline not run: its two {n_tr} x {D} float64 matrices need "
                           f"{need / 2 ** 30:.1f} GiB, above {max_bytes / 2 ** 30:.1f} GiB "
                           f"(80% of the {avail / 2 ** 30:.1f} GiB available)")
                methods.remove("pipeline")
                print(f"{name} D={D}: {skipped}", flush=True)
            runs = {m: [] for m in methods}
            load = []
            for r in range(args.repeats):
                for m in methods:
                    load.append(os.getloadavg()[0])
                    res = run_child(path, m, D, r, args, st)
                    res.update(method=m, dataset=name, D=D, seed=r)
                    results["runs"].append(res)
                    if "error" in res:
                        print(f"{name} D={D} {m} seed {r}: FAILED {res['error']}", flush=True)
                        continue
                    runs[m].append(res)
                    own = (res["peak"] - res["before"]) / MiB
                    print(f"{name} D={D} {m} seed {r}: {res['wall']:.2f} s, peak RSS "
                          f"{res['peak'] / MiB:.0f} MiB (fit {own:.0f} MiB), test "
                          f"{'error' if st['task'] == 'binary' else 'RMSE'} "
                          f"{res['err']:.3f}", flush=True)
            row = dict(dataset=name, D=D, n_train=n_tr, load=(min(load), max(load)),
                       skipped=skipped)
            for m, rs in runs.items():
                if rs:
                    for r in rs:
                        r["fit_peak"] = r["peak"] - r["before"]
                    row[m] = dict(wall=summary(rs, "wall"), peak=summary(rs, "peak"),
                                  fit_peak=summary(rs, "fit_peak"),
                                  err_mean=float(np.mean([r["err"] for r in rs])),
                                  err_sd=float(np.std([r["err"] for r in rs], ddof=1))
                                  if len(rs) > 1 else float("nan"))
            table.append(row)
    results["table"] = table
    results["loadavg_end"] = os.getloadavg()
    print()
    print("| data set (N train) | D | fit time min / median, pipeline | randfeat | speed-up "
          "(min / median) | peak RSS of the fit, pipeline | randfeat | ratio | fit's own peak "
          "(above the RSS before fit), pipeline | randfeat | ratio | test error, pipeline | "
          "randfeat | load |")
    print("|---" * 14 + "|")
    for row in table:
        p, q = row.get("pipeline"), row.get("randfeat")

        def t(x):
            return f"{x['wall'][0]:.2f} / {x['wall'][1]:.2f} s" if x else "-"

        def e(x, unit=" %" if SETTINGS[row["dataset"]]["task"] == "binary" else ""):
            if not x:
                return "-"
            return f"{x['err_mean']:.3f}{unit} (sd {x['err_sd']:.3f})"

        def mem(x, k):
            return f"{x[k][1] / MiB:.0f} MiB" if x else "-"

        sp_ = (f"{p['wall'][0] / q['wall'][0]:.2f}x / {p['wall'][1] / q['wall'][1]:.2f}x"
               if p and q else "-")
        r1 = f"1/{p['peak'][1] / q['peak'][1]:.1f}" if p and q else "-"
        r2 = f"1/{p['fit_peak'][1] / q['fit_peak'][1]:.1f}" if p and q else "-"
        print(f"| {row['dataset']} ({row['n_train']:,}) | {row['D']} | {t(p)} | {t(q)} | {sp_} | "
              f"{mem(p, 'peak')} | {mem(q, 'peak')} | {r1} | {mem(p, 'fit_peak')} | "
              f"{mem(q, 'fit_peak')} | {r2} | {e(p)} | {e(q)} | {row['load'][0]:.1f}-"
              f"{row['load'][1]:.1f} |")
        if row["skipped"]:
            print(f"|   | | {row['skipped']} |" + " |" * 11)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
