"""Side-by-side timings of randfeat's feature maps against their peers, in one run.

Each section is one function ``bench_<name>(...)`` returning a list of row dicts and printing a
table with time ratios (peer time / randfeat time: > 1 means randfeat is faster).  Timings are
the minimum over ``repeat`` calls, randfeat and the peer interleaved call by call so that load
from other processes hits both alike.  Threads: ``threadpoolctl`` limits BLAS for both, and
randfeat gets the same count as ``n_threads``.

Usage::

    python benchmarks/bench_features.py                 # every section, default grid
    python benchmarks/bench_features.py --section rff --quick
    python benchmarks/bench_features.py --section rff --dims 64 1024 --widths 1000 16384

Sections: ``rff`` (RandomFourierFeatures vs scikit-learn's RBFSampler at equal output width and
dtype, both feature maps).  Other engineers add further ``bench_*`` sections (Fastfood).
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

SECTIONS = {}


def section(fn):
    SECTIONS[fn.__name__.removeprefix("bench_")] = fn
    return fn


def _interleaved_min(fns, repeat):
    """Minimum wall time of each callable, calls interleaved round-robin (one warm-up each)."""
    for fn in fns:
        fn()
    best = [math.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _print_table(title, header, rows):
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[h]) for h in header) + " |")


@section
def bench_rff(dims=(64, 256, 1024), widths=(1000, 4096, 16384), batch=1000,
              dtypes=("float32", "float64"), threads=(1, 2), repeat=5, seed=0):
    """RandomFourierFeatures (paired and phase) vs sklearn RBFSampler, equal output width."""
    from sklearn.kernel_approximation import RBFSampler

    from randfeat import RandomFourierFeatures

    rows = []
    rng = np.random.default_rng(seed)
    for dt in dtypes:
        for d in dims:
            X = rng.normal(size=(batch, d)).astype(dt)
            gamma = 1.0 / d
            sigma = 1.0 / math.sqrt(2 * gamma)
            for D in widths:
                rbf = RBFSampler(gamma=gamma, n_components=D, random_state=0).fit(X)
                for nt in threads:
                    paired = RandomFourierFeatures(D, sigma=sigma, random_state=0,
                                                   n_threads=nt).fit(X)
                    phase = RandomFourierFeatures(D, sigma=sigma, features="phase",
                                                  random_state=0, n_threads=nt).fit(X)
                    with threadpool_limits(limits=nt, user_api="blas"):
                        t_rbf, t_pair, t_phase = _interleaved_min(
                            [lambda: rbf.transform(X), lambda: paired.transform(X),
                             lambda: phase.transform(X)], repeat)
                    rows.append({
                        "dtype": dt, "d": d, "width": D, "threads": nt,
                        "RBFSampler ms": f"{1e3 * t_rbf:.2f}",
                        "RFF paired ms": f"{1e3 * t_pair:.2f}",
                        "ratio paired": f"{t_rbf / t_pair:.2f}",
                        "RFF phase ms": f"{1e3 * t_phase:.2f}",
                        "ratio phase": f"{t_rbf / t_phase:.2f}",
                    })
                    print(rows[-1], flush=True)
    _print_table(f"RFF vs RBFSampler (batch {batch} rows; ratio = RBFSampler time / randfeat time)",
                 list(rows[0]), rows)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--section", action="append", choices=sorted(SECTIONS),
                   help="section(s) to run (default: all)")
    p.add_argument("--quick", action="store_true", help="small grid, fewer repeats")
    p.add_argument("--dims", type=int, nargs="+")
    p.add_argument("--widths", type=int, nargs="+")
    p.add_argument("--repeat", type=int)
    args = p.parse_args(argv)
    import sklearn

    print(f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"scikit-learn {sklearn.__version__}")
    for name in args.section or sorted(SECTIONS):
        kw = {}
        if args.quick:
            kw.update(dims=(64, 1024), widths=(1000, 16384), repeat=2)
        if args.dims:
            kw["dims"] = tuple(args.dims)
        if args.widths:
            kw["widths"] = tuple(args.widths)
        if args.repeat:
            kw["repeat"] = args.repeat
        SECTIONS[name](**kw)


if __name__ == "__main__":
    main()
