"""Benchmark: the default fit (leave-one-out over the default grid) against a single alpha, at 1
and 2 BLAS threads, in one process (issues 32 and 34).

``RandomFeatureRidge(RandomFourierFeatures(D, sigma="scale", random_state=0))`` -- the default
call, ``selection="loo"``, ``gram_dtype="auto"`` -- and the same with ``alphas=1.0``, on the
training rows of a data set (``randfeat.datasets.paper_split``, standardised with their mean and
std), each under ``threadpoolctl.threadpool_limits(b, user_api="blas")`` for b in ``--blas``.
Unlike ``bench_learners.py --selection`` (a fresh process per fit, the bench's own sigma), the
fits run **in one process, interleaved** (default@2, single@2, default@1, single@1, then again),
so that a load that comes and goes on a shared machine falls on every configuration alike; the
minimum over ``--repeats`` is reported, with the paired ratios of each repeat, the time of the
phases of every fit (the Gram pass, the eigendecomposition, the leave-one-out pass, the solve:
cumulative times of the learners' steps in a profile of the fit), the machine
(``randfeat.show_config``) and the load average.  The default call is timed first.

Usage::

    RANDFEAT_DATA=/path/to/data python benchmarks/bench_selection_threads.py
    python benchmarks/bench_selection_threads.py --D 2000 --repeats 3 --blas 1,2
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout


def load(name):
    from randfeat.datasets import load_dataset, paper_split
    Xtr, _, ytr, _ = paper_split(load_dataset(name), random_state=0)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, ytr


#: the phases of a fit: (file of the learners' package, function) -> label; read from a profile
#: of the fit (cProfile's cumulative times), so that only the public API is imported
PHASES = {("_fit.py", "statistics"): "gram pass", ("_fit.py", "loo"): "loo pass",
          ("_selection.py", "from_statistics"): "eigendecomposition",
          ("_statistics.py", "_path"): "solve"}


def profiled_fit(model, X, y):
    """Fit ``model`` under cProfile: ``(wall time, {phase: seconds})``."""
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    model.fit(X, y)
    prof.disable()
    wall = time.perf_counter() - t0
    phases = {}
    for (path, _, func), row in pstats.Stats(prof).stats.items():
        label = PHASES.get((os.path.basename(path), func))
        if label is not None and os.sep + "linear" + os.sep in path:
            phases[label] = phases.get(label, 0.0) + row[3]    # cumulative time
    return wall, phases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="cpu_act")
    ap.add_argument("--D", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--blas", default="2,1", help="BLAS thread limits, comma-separated")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from threadpoolctl import threadpool_info, threadpool_limits

    import randfeat
    from randfeat import RandomFourierFeatures
    from randfeat.linear import RandomFeatureRidge

    warnings.simplefilter("ignore")
    X, y = load(args.dataset)
    cfg = randfeat.show_config(as_dict=True)
    blas_libs = [(p.get("prefix"), p.get("version"), p.get("num_threads"))
                 for p in threadpool_info() if p["user_api"] == "blas"]
    print(f"{args.dataset}: n={X.shape[0]}, d={X.shape[1]}, D={args.D}; CPU "
          f"{cfg['machine']['cpu']}, SIMD {cfg['simd'].get('available')}, BLAS {blas_libs}; "
          f"load {os.getloadavg()}")
    configs = [(kind, int(b)) for b in args.blas.split(",") for kind in ("default", "single")]
    runs = {f"{k}@{b}": [] for k, b in configs}
    for r in range(args.repeats):
        for kind, b in configs:
            kw = {} if kind == "default" else {"alphas": 1.0}
            model = RandomFeatureRidge(RandomFourierFeatures(args.D, sigma="scale",
                                                             random_state=0), **kw)
            with threadpool_limits(limits=b, user_api="blas"):
                wall, phases = profiled_fit(model, X, y)
            key = f"{kind}@{b}"
            runs[key].append(dict(wall=wall, phases=dict(phases), alpha=float(model.alpha_),
                                  gram_dtype=model.gram_dtype_))
            print(f"repeat {r} {key:>10}: {wall:7.2f} s  "
                  + "  ".join(f"{k} {v:.2f}" for k, v in phases.items()), flush=True)
    best = {k: min(x["wall"] for x in v) for k, v in runs.items()}
    print(f"\nminimum of {args.repeats} (load {os.getloadavg()}):")
    for k, v in best.items():
        print(f"  {k:>10}: {v:7.2f} s")
    for b in args.blas.split(","):
        d, s = runs[f"default@{b}"], runs[f"single@{b}"]
        paired = [x["wall"] / z["wall"] for x, z in zip(d, s, strict=True)]
        ratio = best[f"default@{b}"] / best[f"single@{b}"]
        print(f"  {b} BLAS thread(s): default / single = {ratio:.2f}"
              f" (paired: {', '.join(f'{p:.2f}' for p in paired)})")
    bl = args.blas.split(",")
    if "1" in bl and "2" in bl:
        for kind in ("default", "single"):
            print(f"  {kind}: 2 threads / 1 thread = "
                  f"{best[f'{kind}@2'] / best[f'{kind}@1']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(args=vars(args), runs=runs, best=best),
                                              indent=1))


if __name__ == "__main__":
    main()
