"""Timings of the orthogonal / structured / quasi-Monte Carlo feature maps.

Sections:

``transform``  transform time of ``StructuredOrthogonalFeatures`` (SORF) against ``Fastfood``,
               ``RandomFourierFeatures`` (dense iid frequencies) and scikit-learn's
               ``RBFSampler``, all at the same output width n (SORF / Fastfood / RFF: paired map,
               n/2 frequencies; RBFSampler: n phase features, i.e. n frequencies), on a batch of
               float32 rows and on one float64 vector, one thread.  Ratios are
               ``peer time / SORF time`` (> 1: SORF is faster).
``fit``        fit time of ``RandomFourierFeatures(sampling=...)`` for ``orthogonal`` (ORF,
               one Householder accumulation per d x d block: (4/3) D d^2 flops),
               ``orthogonal_unit`` (ORF'), ``qmc_sobol`` and ``qmc_halton`` (scrambled points
               from scipy.stats.qmc, compiled normal quantile) against ``sampling="iid"``;
               ratios are ``time / iid time``, min and median; ``--threads 1 2`` repeats it
               with ``n_threads`` = BLAS limit = 2.
``fit_transform``  transform time of the maps fitted with each sampling (the same GEMM path),
               1000 float32 rows, one thread; ratio to iid.

Timings (``_timing.py``): each method timed in its own block of calls in two passes of
opposite order (load drifts hit both ends alike); minima, and medians where printed.  BLAS is
limited to one thread unless stated.

Usage::

    python benchmarks/bench_orthogonal.py               # both sections, default grid
    python benchmarks/bench_orthogonal.py --quick       # smaller grid (~1 min on a loaded machine)
    python benchmarks/bench_orthogonal.py --section fit --threads 1 2
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

# run from a source checkout without installing: use the in-place build of this tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import blocked_min as _blocked_min  # noqa: E402 - benchmarks/_timing.py
from _timing import blocked_min_median, load_average  # noqa: E402
from _timing import ms as _ms  # noqa: E402
from _timing import print_table as _print_table  # noqa: E402


def bench_transform(pairs, batch=1000, repeat=5, seed=0):
    from sklearn.kernel_approximation import RBFSampler

    import randfeat

    rng = np.random.default_rng(seed)
    rows = []
    for d, n in pairs:
        Xb = rng.standard_normal((batch, d)).astype(np.float32)
        x1 = rng.standard_normal((1, d))
        sigma = math.sqrt(d)
        maps = {
            "SORF": randfeat.StructuredOrthogonalFeatures(n, sigma=sigma, random_state=0,
                                                          n_threads=1),
            "Fastfood": randfeat.Fastfood(n, kernel="gaussian", sigma=sigma, features="paired",
                                          random_state=0, n_threads=1),
            "RFF": randfeat.RandomFourierFeatures(n, sigma=sigma, features="paired",
                                                  random_state=0, n_threads=1),
            "RBFSampler": RBFSampler(gamma=1.0 / (2 * sigma ** 2), n_components=n,
                                     random_state=0),
        }
        names = list(maps)
        for X, what in ((Xb, f"{batch} x float32"), (x1, "1 x float64")):
            fitted = [maps[k].fit(X) for k in names]
            ts = _blocked_min([lambda e=e, X=X: e.transform(X) for e in fitted], repeat)
            row = {"d": d, "n (columns)": n, "input": what}
            for k, t in zip(names, ts, strict=True):
                row[f"{k} ms"] = _ms(t)
            for k, t in zip(names[1:], ts[1:], strict=True):
                row[f"{k}/SORF"] = f"{t / ts[0]:.2f}"
            rows.append(row)
    header = ["d", "n (columns)", "input", *[f"{k} ms" for k in names],
              *[f"{k}/SORF" for k in names[1:]]]
    _print_table("transform (1 thread; ratio > 1: SORF faster)", header, rows)
    return rows


def bench_fit(pairs, repeat=3, seed=0, threads=(1,)):
    """Fit time of RandomFourierFeatures(sampling=...) against sampling="iid", min and median
    of ``2 * repeat`` calls (blocked, two passes); ``n_threads`` (and the BLAS limit) = each
    of ``threads``.  iid draws with NumPy on one thread whatever ``n_threads``."""
    import randfeat

    rng = np.random.default_rng(seed)
    samplings = ("iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton")
    rows = []
    for nt in threads:
        for d, D in pairs:
            X = rng.standard_normal((8, d))
            ests = [randfeat.RandomFourierFeatures(2 * D, sigma=1.0, sampling=s, random_state=0,
                                                   n_threads=nt) for s in samplings]
            with threadpool_limits(nt):
                ts = blocked_min_median([lambda e=e, X=X: e.fit(X) for e in ests], repeat)
            row = {"threads": nt, "d": d, "D (frequencies)": D}
            for s, (tmin, tmed) in zip(samplings, ts, strict=True):
                row[f"{s} ms (min/med)"] = f"{_ms(tmin)} / {_ms(tmed)}"
            for s, (tmin, tmed) in zip(samplings[1:], ts[1:], strict=True):
                row[f"{s}/iid"] = f"{tmin / ts[0][0]:.2f} / {tmed / ts[0][1]:.2f}"
            rows.append(row)
            print(row, flush=True)
    header = ["threads", "d", "D (frequencies)", *[f"{s} ms (min/med)" for s in samplings],
              *[f"{s}/iid" for s in samplings[1:]]]
    _print_table("fit (RandomFourierFeatures(sampling=...); ratio to iid, min / median)",
                 header, rows)
    return rows


def bench_fit_transform(pairs, batch=1000, repeat=3, seed=0):
    """Transform time of RandomFourierFeatures fitted with each sampling (the same GEMM path:
    only the frequencies differ), 1000 float32 rows, one thread; ratio to iid."""
    import randfeat

    rng = np.random.default_rng(seed)
    samplings = ("iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton")
    rows = []
    for d, D in pairs:
        X = rng.standard_normal((batch, d)).astype(np.float32)
        ests = [randfeat.RandomFourierFeatures(2 * D, sigma=math.sqrt(d), sampling=s,
                                               random_state=0, n_threads=1).fit(X)
                for s in samplings]
        with threadpool_limits(1):
            ts = blocked_min_median([lambda e=e, X=X: e.transform(X) for e in ests], repeat)
        row = {"d": d, "D (frequencies)": D, "iid ms (min/med)": f"{_ms(ts[0][0])} / "
               f"{_ms(ts[0][1])}"}
        for s, (tmin, tmed) in zip(samplings[1:], ts[1:], strict=True):
            row[f"{s}/iid"] = f"{tmin / ts[0][0]:.2f} / {tmed / ts[0][1]:.2f}"
        rows.append(row)
    header = ["d", "D (frequencies)", "iid ms (min/med)", *[f"{s}/iid" for s in samplings[1:]]]
    _print_table(f"transform of the fitted maps ({batch} x float32, 1 thread; ratio to iid, "
                 "min / median)", header, rows)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--section", choices=("transform", "fit", "fit_transform", "all"),
                    default="all")
    ap.add_argument("--threads", type=int, nargs="+", default=[1],
                    help="n_threads (and BLAS limit) of the fit section, e.g. 1 2")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    import randfeat

    print(f"# bench_orthogonal — randfeat {randfeat.__version__}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}")
    print(f"load average: {load_average()}")
    if args.quick:
        tpairs = [(64, 4096), (1024, 16384)]
        fpairs = [(16, 1024), (256, 4096)]
        rep = args.repeat or 3
    else:
        tpairs = [(16, 1024), (64, 4096), (256, 4096), (1024, 16384), (4096, 32768)]
        fpairs = [(16, 1024), (32, 2048), (64, 4096), (128, 4096), (256, 4096), (512, 8192),
                  (1024, 8192)]
        rep = args.repeat or 5
    with threadpool_limits(1):
        if args.section in ("transform", "all"):
            bench_transform(tpairs, repeat=rep)
        if args.section in ("fit_transform", "all"):
            bench_fit_transform(fpairs, repeat=max(1, rep // 2 + 1))
    if args.section in ("fit", "all"):
        bench_fit(fpairs, repeat=max(1, rep // 2 + 1), threads=args.threads)
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
