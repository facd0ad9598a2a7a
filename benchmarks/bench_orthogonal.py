"""Timings of the orthogonal / structured / quasi-Monte Carlo feature maps.

Sections:

``transform``  transform time of ``StructuredOrthogonalFeatures`` (SORF) against ``Fastfood``,
               ``RandomFourierFeatures`` (dense iid frequencies) and scikit-learn's
               ``RBFSampler``, all at the same output width n (SORF / Fastfood / RFF: paired map,
               n/2 frequencies; RBFSampler: n phase features, i.e. n frequencies), on a batch of
               float32 rows and on one float64 vector, one thread.  Ratios are
               ``peer time / SORF time`` (> 1: SORF is faster).
``fit``        fit time of ``RandomFourierFeatures(sampling=...)`` for ``orthogonal`` (ORF,
               one QR per d x d block: O(D d^2)), ``orthogonal_unit`` (ORF'), ``qmc_sobol`` and
               ``qmc_halton`` (scipy.stats.qmc) against ``sampling="iid"``; ratios are
               ``time / iid time``.

Timings are minima over ``repeat`` calls, each method timed in its own block of calls in two
passes of opposite order (load drifts hit both ends alike).  BLAS is limited to one thread.

Usage::

    python benchmarks/bench_orthogonal.py               # both sections, default grid
    python benchmarks/bench_orthogonal.py --quick       # smaller grid (~1 min on a loaded machine)
    python benchmarks/bench_orthogonal.py --section fit
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

# run from a source checkout without installing: use the in-place build of this tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _blocked_min(fns, repeat):
    """Minimum wall time of each callable: one warm-up call, then ``repeat`` timed calls in a
    block, in two passes (forward, then reverse order)."""
    best = [math.inf] * len(fns)
    for order in (range(len(fns)), reversed(range(len(fns)))):
        for i in order:
            fns[i]()
            for _ in range(repeat):
                t0 = time.perf_counter()
                fns[i]()
                best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _print_table(title, header, rows):
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[h]) for h in header) + " |")


def _ms(t):
    return f"{t * 1e3:.3g}"


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


def bench_fit(pairs, repeat=3, seed=0):
    import randfeat

    rng = np.random.default_rng(seed)
    samplings = ("iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton")
    rows = []
    for d, D in pairs:
        X = rng.standard_normal((8, d))
        ests = [randfeat.RandomFourierFeatures(2 * D, sigma=1.0, sampling=s, random_state=0,
                                               n_threads=1) for s in samplings]
        ts = _blocked_min([lambda e=e, X=X: e.fit(X) for e in ests], repeat)
        row = {"d": d, "D (frequencies)": D}
        for s, t in zip(samplings, ts, strict=True):
            row[f"{s} ms"] = _ms(t)
        for s, t in zip(samplings[1:], ts[1:], strict=True):
            row[f"{s}/iid"] = f"{t / ts[0]:.2f}"
        rows.append(row)
    header = ["d", "D (frequencies)", *[f"{s} ms" for s in samplings],
              *[f"{s}/iid" for s in samplings[1:]]]
    _print_table("fit (RandomFourierFeatures(sampling=...), ratio to iid)", header, rows)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--section", choices=("transform", "fit", "all"), default="all")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    import randfeat

    print(f"# bench_orthogonal — randfeat {randfeat.__version__}, numpy {np.__version__}, "
          f"Python {platform.python_version()}, {platform.machine()}")
    try:
        print(f"load average: {' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")
    except OSError:  # pragma: no cover
        pass
    if args.quick:
        tpairs = [(64, 4096), (1024, 16384)]
        fpairs = [(16, 1024), (256, 4096)]
        rep = args.repeat or 3
    else:
        tpairs = [(16, 1024), (64, 4096), (256, 4096), (1024, 16384), (4096, 32768)]
        fpairs = [(16, 1024), (64, 4096), (256, 4096), (1024, 8192)]
        rep = args.repeat or 5
    with threadpool_limits(1):
        if args.section in ("transform", "all"):
            bench_transform(tpairs, repeat=rep)
        if args.section in ("fit", "all"):
            bench_fit(fpairs, repeat=max(1, rep // 2 + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
