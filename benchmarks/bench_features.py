"""Side-by-side timings of randfeat's feature maps against their peers, in one run.

Each section is one function ``bench_<name>(...)`` returning a list of row dicts and printing a
table with time ratios (peer time / randfeat time: > 1 means randfeat is faster).  Timings are
minima: one-vector latencies round-robin over the methods (many calls per round, so load from
other processes hits all alike); batches each in its own block of calls, in two passes of
opposite order (see ``_timing.py``: interleaving libraries call by call times each right
after the other's idle threads).  Threads: ``threadpoolctl`` limits BLAS for both, and randfeat
gets the same count as ``n_threads``.

Usage::

    python benchmarks/bench_features.py                 # every section, default grid
    python benchmarks/bench_features.py --section rff --quick
    python benchmarks/bench_features.py --section rff --dims 64 1024 --widths 1000 16384

Sections: ``rff`` (RandomFourierFeatures vs scikit-learn's RBFSampler at equal output width and
dtype, both feature maps); ``fastfood`` (one-vector float64 latency and parameter memory) and
``fastfood_batch`` (1000 float32 rows, 2 threads) of randfeat's Fastfood vs RBFSampler and
scikit-learn-extra's Fastfood at the (d, n) of the Fastfood paper's Table 1, where n is the number
of rows of the frequency matrix and every peer gives n output columns; for these two sections
``--dims``/``--widths`` are zipped into (d, n) pairs.
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

from _timing import blocked_min as _blocked_min  # noqa: E402 - benchmarks/_timing.py
from _timing import print_table as _print_table  # noqa: E402

SECTIONS = {}


def section(fn):
    SECTIONS[fn.__name__.removeprefix("bench_")] = fn
    return fn


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
                        t_rbf, t_pair, t_phase = _blocked_min(
                            [lambda rbf=rbf, X=X: rbf.transform(X),
                             lambda paired=paired, X=X: paired.transform(X),
                             lambda phase=phase, X=X: phase.transform(X)], repeat)
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


# --------------------------------------------------------------------------------------------
# Fastfood
# --------------------------------------------------------------------------------------------
FASTFOOD_SIZES = ((1024, 16384), (4096, 32768), (8192, 65536))   # (d, n) of LSS Table 1
FASTFOOD_LATENCY_TARGET = {(1024, 16384): 24, (4096, 32768): 89, (8192, 65536): 199}
FASTFOOD_BATCH_TARGET = {(1024, 16384): 3, (8192, 65536): 20}


def _fastfood_sizes(dims, widths):
    if dims is None and widths is None:
        return FASTFOOD_SIZES
    if dims is None or widths is None or len(dims) != len(widths):
        raise SystemExit("fastfood sections: give --dims and --widths of equal length "
                         "(they are zipped into (d, n) pairs)")
    return tuple(zip(dims, widths, strict=True))


def _fastfood_peers(d, n, X, sigma, n_threads):
    """(RBFSampler, sklearn-extra Fastfood or None, randfeat phase, randfeat paired), all with
    n rows of the frequency matrix; all but 'paired' give n output columns."""
    from sklearn.kernel_approximation import RBFSampler

    from randfeat import Fastfood
    try:
        from sklearn_extra.kernel_approximation import Fastfood as SkxFastfood
    except ImportError:
        SkxFastfood = None
    rbf = RBFSampler(gamma=1 / (2 * sigma**2), n_components=n, random_state=0).fit(X)
    skx = None
    if SkxFastfood is not None:
        skx = SkxFastfood(sigma=sigma, n_components=n, tradeoff_mem_accuracy="mem",
                          random_state=0).fit(X)
    ff = Fastfood(n, features="phase", sigma=sigma, random_state=0, n_threads=n_threads).fit(X)
    ffp = Fastfood(2 * n, features="paired", sigma=sigma, random_state=0,
                   n_threads=n_threads).fit(X)
    for est in (rbf, skx, ff):
        if est is not None:
            assert est.transform(X[:1]).shape == (1, n), est
    return rbf, skx, ff, ffp


def _interleaved_min_budget(fns, repeat, budget=0.05, max_inner=200):
    """Minimum wall time of each callable, round-robin over ``repeat`` rounds (one warm-up
    each): each round calls every fn enough times to fill ``budget``
    seconds (at least once, at most ``max_inner``): sub-millisecond calls get many samples per
    round, so a busy machine cannot hide their true (minimum) time behind a few preemptions."""
    inner = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()
        inner.append(max(1, min(max_inner, int(budget / max(time.perf_counter() - t0, 1e-7)))))
    best = [math.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            for _ in range(inner[i]):
                t0 = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _rbf_nbytes(rbf):
    return rbf.random_weights_.nbytes + rbf.random_offset_.nbytes


def _ratio(a, b, target=None):
    return f"{a / b:.1f}" + ("" if target is None else f" (target {target})")


@section
def bench_fastfood(dims=None, widths=None, repeat=5, seed=0, **_):
    """Fastfood one-vector latency (float64) and parameter memory vs RBFSampler and
    scikit-learn-extra's Fastfood.  n = rows of V (W); every peer gives n output columns
    (phase-shift features); randfeat's paired map with n rows (2n columns) is listed too."""
    rows = []
    for d, n in _fastfood_sizes(dims, widths):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(1, d))
        sigma = math.sqrt(d / 2)                   # gamma = 1/d, as in the rff section
        rbf, skx, ff, ffp = _fastfood_peers(d, n, X, sigma, 1)
        fns = [lambda rbf=rbf, X=X: rbf.transform(X), lambda ff=ff, X=X: ff.transform(X),
               lambda ffp=ffp, X=X: ffp.transform(X)]
        if skx is not None:
            fns.append(lambda skx=skx, X=X: skx.transform(X))
        t = _interleaved_min_budget(fns, repeat)
        t_skx = t[3] if skx is not None else math.nan
        rows.append({
            "d": d, "n": n,
            "RBFSampler ms": f"{1e3 * t[0]:.2f}",
            "skl-extra Fastfood ms": f"{1e3 * t_skx:.2f}",
            "Fastfood ms": f"{1e3 * t[1]:.3f}",
            "Fastfood paired (2n cols) ms": f"{1e3 * t[2]:.3f}",
            "vs RBFSampler": _ratio(t[0], t[1], FASTFOOD_LATENCY_TARGET.get((d, n))),
            "vs skl-extra": _ratio(t_skx, t[1], 10),
            "RBFSampler MB": f"{_rbf_nbytes(rbf) / 1e6:.1f}",
            "Fastfood MB": f"{ff.parameter_nbytes_ / 1e6:.3f}",
            "memory ratio": f"{_rbf_nbytes(rbf) / ff.parameter_nbytes_:.0f}"
                            + (" (target 1000)" if d >= 4096 else ""),
        })
        print(rows[-1], flush=True)
        del rbf, skx, ff, ffp, fns    # fns holds them too (default arguments)
    _print_table("Fastfood: one vector, float64 (ratio = peer time / randfeat time; "
                 "memory = random parameters, float64)", list(rows[0]), rows)
    return rows


@section
def bench_fastfood_batch(dims=None, widths=None, repeat=3, batch=1000, n_threads=2, seed=0,
                         **_):
    """Fastfood on batches of ``batch`` float32 rows with ``n_threads`` threads (BLAS limited to
    the same count) vs RBFSampler float32 and scikit-learn-extra's Fastfood (float64 only)."""
    rows = []
    for d, n in _fastfood_sizes(dims, widths):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(batch, d)).astype(np.float32)
        sigma = math.sqrt(d / 2)
        rbf, skx, ff, _ffp = _fastfood_peers(d, n, X, sigma, n_threads)
        del _ffp
        assert rbf.transform(X[:2]).dtype == ff.transform(X[:2]).dtype == np.float32
        fns = [lambda rbf=rbf, X=X: rbf.transform(X), lambda ff=ff, X=X: ff.transform(X)]
        if skx is not None:
            fns.append(lambda skx=skx, X=X: skx.transform(X))
        with threadpool_limits(limits=n_threads):
            t = _blocked_min(fns, min(repeat, 3))
        t_skx = t[2] if skx is not None else math.nan
        rows.append({
            "d": d, "n": n, "threads": n_threads,
            "RBFSampler f32 s": f"{t[0]:.3f}",
            "skl-extra Fastfood (f64) s": f"{t_skx:.3f}",
            "Fastfood f32 s": f"{t[1]:.4f}",
            "vs RBFSampler": _ratio(t[0], t[1], FASTFOOD_BATCH_TARGET.get((d, n))),
            "vs skl-extra": _ratio(t_skx, t[1], 10),
            "memory ratio f32": f"{_rbf_nbytes(rbf) / ff.parameter_nbytes_:.0f}",
        })
        print(rows[-1], flush=True)
        del rbf, skx, ff, fns    # fns holds them too (default arguments)
    _print_table(f"Fastfood: batch of {batch} rows, float32, {n_threads} threads "
                 "(ratio = peer time / randfeat time)", list(rows[0]), rows)
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
