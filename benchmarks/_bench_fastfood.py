"""Fastfood speed and memory vs scikit-learn's RBFSampler and scikit-learn-extra's Fastfood.

Run from the repository root (after ``python setup.py build_ext --inplace``)::

    python benchmarks/bench_features.py fastfood            # all sections
    python benchmarks/bench_features.py fastfood --quick    # small sizes, smoke test

"n" is the number of frequencies = rows of the frequency matrix V (W for RBFSampler).  Every
method is run with n rows AND n output columns (phase-shift features cos(Vx + b)):
RBFSampler(n_components=n), sklearn_extra Fastfood(n_components=n, tradeoff_mem_accuracy="mem"),
randfeat Fastfood(n_components=n, features="phase").  randfeat's paired map with the same n rows
(n_components=2n, 2n columns) is listed as well.  Times are medians of repeated calls to
``transform`` on an already fitted estimator, all methods timed side by side in one run.
"""

from __future__ import annotations

import argparse
import gc
import math
import time

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from threadpoolctl import threadpool_limits

from randfeat.fastfood import Fastfood

try:  # benchmark peer only
    from sklearn_extra.kernel_approximation import Fastfood as SkxFastfood
except ImportError:  # pragma: no cover
    SkxFastfood = None

SIZES = [(1024, 16384), (4096, 32768), (8192, 65536)]
QUICK_SIZES = [(256, 2048), (1024, 4096)]
PAPER_SPEEDUP = {(1024, 16384): 24, (4096, 32768): 89, (8192, 65536): 199}
BATCH_TARGET = {(1024, 16384): 3, (8192, 65536): 20}


def _median_time(f, *, min_reps=3, max_reps=200, budget=2.0):
    f()                                           # warm up (allocations, page faults)
    times = []
    t_start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps
                                     or time.perf_counter() - t_start < budget):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), len(times)


def _rbf_nbytes(est):
    return est.random_weights_.nbytes + est.random_offset_.nbytes


def bench_fastfood_latency(sizes, sigma=8.0, seed=0):
    """One-vector latency, float64 (each library at its default threads)."""
    rows = []
    for d, n in sizes:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(1, d))
        res = {"d": d, "n": n}
        ff = Fastfood(n_components=n, features="phase", sigma=sigma, random_state=0).fit(X)
        ffp = Fastfood(n_components=2 * n, features="paired", sigma=sigma,
                       random_state=0).fit(X)
        res["ff"], _ = _median_time(lambda: ff.transform(X))
        res["ff_paired"], _ = _median_time(lambda: ffp.transform(X))
        res["ff_nbytes"] = ff.parameter_nbytes_
        if SkxFastfood is not None:
            skx = SkxFastfood(n_components=n, sigma=sigma, tradeoff_mem_accuracy="mem",
                              random_state=0).fit(X)
            assert skx.transform(X).shape == (1, n)
            res["skx"], _ = _median_time(lambda: skx.transform(X), max_reps=50)
            del skx
        rbf = RBFSampler(n_components=n, gamma=1 / (2 * sigma**2), random_state=0).fit(X)
        assert rbf.transform(X).shape == ff.transform(X).shape == (1, n)
        res["rbf"], res["rbf_reps"] = _median_time(lambda: rbf.transform(X), max_reps=30,
                                                   budget=3.0)
        res["rbf_nbytes"] = _rbf_nbytes(rbf)
        del rbf
        gc.collect()
        rows.append(res)
        _print_latency_row(res)
    return rows


def _print_latency_row(r):
    skx = r.get("skx", math.nan)
    target = PAPER_SPEEDUP.get((r["d"], r["n"]))
    print(f"| {r['d']} | {r['n']} | {r['rbf'] * 1e3:.2f} | {skx * 1e3:.2f} | "
          f"{r['ff'] * 1e3:.3f} | {r['ff_paired'] * 1e3:.3f} | {r['rbf'] / r['ff']:.0f}x"
          f"{'' if target is None else f' (target {target}x)'} | {skx / r['ff']:.0f}x | "
          f"{r['rbf_nbytes'] / r['ff_nbytes']:.0f}x |", flush=True)


def bench_fastfood_batch(sizes, n_rows=1000, n_threads=2, sigma=8.0, seed=0):
    """Batches of ``n_rows`` rows in float32 with ``n_threads`` threads (BLAS limited too)."""
    rows = []
    with threadpool_limits(limits=n_threads):
        for d, n in sizes:
            rng = np.random.default_rng(seed)
            X = rng.normal(size=(n_rows, d)).astype(np.float32)
            res = {"d": d, "n": n}
            ff = Fastfood(n_components=n, features="phase", sigma=sigma, random_state=0,
                          n_threads=n_threads).fit(X)
            res["ff"], _ = _median_time(lambda: ff.transform(X), budget=3.0)
            res["ff_nbytes"] = ff.parameter_nbytes_
            if SkxFastfood is not None:   # float64 only (it converts float32 input)
                skx = SkxFastfood(n_components=n, sigma=sigma, tradeoff_mem_accuracy="mem",
                                  random_state=0).fit(X)
                res["skx"], _ = _median_time(lambda: skx.transform(X), max_reps=3, budget=1.0)
                del skx
                gc.collect()
            rbf = RBFSampler(n_components=n, gamma=1 / (2 * sigma**2), random_state=0).fit(X)
            out = rbf.transform(X)
            assert out.dtype == ff.transform(X[:2]).dtype == np.float32
            assert out.shape == (n_rows, n)
            del out
            res["rbf"], _ = _median_time(lambda: rbf.transform(X), max_reps=3, budget=1.0)
            res["rbf_nbytes"] = _rbf_nbytes(rbf)
            del rbf
            gc.collect()
            rows.append(res)
            _print_batch_row(res)
    return rows


def _print_batch_row(r):
    skx = r.get("skx", math.nan)
    target = BATCH_TARGET.get((r["d"], r["n"]))
    print(f"| {r['d']} | {r['n']} | {r['rbf']:.3f} | {skx:.3f} | {r['ff']:.4f} | "
          f"{r['rbf'] / r['ff']:.1f}x{'' if target is None else f' (target {target}x)'} | "
          f"{skx / r['ff']:.0f}x | {r['rbf_nbytes'] / r['ff_nbytes']:.0f}x |", flush=True)


def main_fastfood(quick=False, sections=("latency", "batch")):
    sizes = QUICK_SIZES if quick else SIZES
    from randfeat._lib import _fwht
    print(f"\n## Fastfood (FWHT isa: {_fwht.isa()}; n = rows of V; phase features, "
          "n output columns for every method)\n")
    if "latency" in sections:
        print("### One vector, float64 (seconds x 1e3 = ms)\n")
        print("| d | n | RBFSampler ms | sklearn-extra Fastfood ms | randfeat Fastfood ms | "
              "randfeat paired (2n cols) ms | speed-up vs RBFSampler | vs sklearn-extra | "
              "param. memory RBFSampler / randfeat |")
        print("|---|---|---|---|---|---|---|---|---|")
        bench_fastfood_latency(sizes)
    if "batch" in sections:
        print("\n### Batch of 1000 rows, float32, 2 threads (seconds)\n")
        print("| d | n | RBFSampler f32 s | sklearn-extra Fastfood (f64 only) s | "
              "randfeat Fastfood f32 s | speed-up vs RBFSampler | vs sklearn-extra | "
              "param. memory RBFSampler f32 / randfeat f32 |")
        print("|---|---|---|---|---|---|---|---|")
        bench_fastfood_batch(sizes)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sections", default="latency,batch")
    a = p.parse_args()
    main_fastfood(quick=a.quick, sections=tuple(a.sections.split(",")))
