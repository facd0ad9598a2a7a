"""Benchmark: randfeat.RandomBinningFeatures vs a straightforward NumPy + dict implementation.

Two problem shapes from Rahimi & Recht 2007, Table 1:

* ``covtype``: dense 522,000 x 54 (Forest Cover Type shape), P = 50 grids.  The real data is not
  available here, so X is synthetic: iid standard normal entries (i.e. standardised features).
* ``kdd``: 494,021 x 38 (KDDCUP99 10% shape), P = 10.  With ``--data-dir`` (or the environment
  variable ``RANDFEAT_DATA``) pointing at a folder holding ``kddcup.data_10_percent.gz``, its 38
  numeric columns (all but protocol_type, service, flag and the label) are loaded and
  standardised; otherwise iid standard normal synthetic data of that shape is used.

Kernel: Laplacian exp(-||x - y||_1 / sigma) with sigma = the median L1 distance between rows
(estimated on 2,000 random pairs), so that typical kernel values are around exp(-1): the
regime in which the features are informative (with sigma = 1 nearly every point would sit in a
cell of its own).  ``--sigma`` overrides it.

The baseline is what published research code does: per grid ``np.floor((X - u) / delta)`` as an
int64 matrix, then a Python ``dict`` from cell tuples to column ids (fit), and dictionary
look-ups of each row's tuple to build the CSR matrix (transform).  It is timed on a subsample of
rows (``--baseline-rows``, default 20,000) and extrapolated linearly per row (both of its phases
are linear in the rows); this is stated in the output.  randfeat runs on all rows (or on
``--quick`` subsamples), fit and transform timed separately, best of ``--repeat`` runs.

Usage::

    python benchmarks/bench_binning.py            # full shapes
    python benchmarks/bench_binning.py --quick    # 50,000 rows per problem
    python benchmarks/bench_binning.py --many-cells --repeat 5   # issue 17: sigma 100, 20, 2
    RANDFEAT_DATA=/work/shared/data python benchmarks/bench_binning.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from randfeat import RandomBinningFeatures, show_config


def effective_n_cpus():
    """The CPUs this process may use (randfeat's public configuration report)."""
    return show_config(as_dict=True)["machine"]["usable_cpus"]


# --------------------------------------------------------------------------------------------
# baseline: NumPy floor + Python dict of cell tuples (as in published random-binning code)


class NumpyDictBinning:
    def __init__(self, widths, shifts):
        self.widths = widths
        self.shifts = shifts

    def _cells(self, X, p):
        return np.floor((X - self.shifts[p]) / self.widths[p]).astype(np.int64)

    def fit(self, X):
        self.maps = []
        for p in range(self.widths.shape[0]):
            cells = self._cells(X, p)
            table = {}
            for row in cells:
                key = tuple(row)
                if key not in table:
                    table[key] = len(table)
            self.maps.append(table)
        return self

    def transform(self, X):
        n, P = X.shape[0], self.widths.shape[0]
        offset = 0
        rows, cols = [], []
        for p in range(P):
            cells = self._cells(X, p)
            table = self.maps[p]
            for i, row in enumerate(cells):
                c = table.get(tuple(row))
                if c is not None:
                    rows.append(i)
                    cols.append(offset + c)
            offset += len(table)
        data = np.full(len(rows), 1.0 / np.sqrt(P))
        return sp.csr_matrix((data, (rows, cols)), shape=(n, offset))


# --------------------------------------------------------------------------------------------


def load_kdd(data_dir):
    path = Path(data_dir) / "kddcup.data_10_percent.gz"
    if not path.exists():
        return None
    cols = [c for c in range(41) if c not in (1, 2, 3)]
    X = np.loadtxt(path, delimiter=",", usecols=cols, dtype=np.float64)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    return np.ascontiguousarray((X - X.mean(axis=0)) / sd)


def median_l1(X, rng, n_pairs=2000):
    i = rng.integers(0, X.shape[0], n_pairs)
    j = rng.integers(0, X.shape[0], n_pairs)
    return float(np.median(np.abs(X[i] - X[j]).sum(axis=1)))


def best_time(fn, repeat):
    """Best wall time over ``repeat`` runs, the CPU time (all threads) of that run, the output."""
    best, cpu, out = np.inf, np.inf, None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        t, c = time.perf_counter() - t0, time.process_time() - c0
        if t < best:
            best, cpu = t, c
    return best, cpu, out


def run_problem(name, X, P, sigma, args, rng):
    n, d = X.shape
    est = RandomBinningFeatures(n_grids=P, sigma=sigma, random_state=0, n_threads=args.n_threads)
    t_fit, c_fit, _ = best_time(lambda: est.fit(X), args.repeat)
    t_tr, c_tr, Z = best_time(lambda: est.transform(X), args.repeat)
    t_ft, c_ft, Z2 = best_time(lambda: est.fit_transform(X), args.repeat)
    ft_same = (Z != Z2).nnz == 0
    cells = est.n_cells_

    nb = min(n, args.baseline_rows)
    Xb = X[rng.choice(n, nb, replace=False)] if nb < n else X
    base = NumpyDictBinning(est.widths_, est.shifts_)
    t0, c0 = time.perf_counter(), time.process_time()
    base.fit(Xb)
    tb_fit, cb_fit = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    base.transform(Xb)
    tb_tr, cb_tr = time.perf_counter() - t0, time.process_time() - c0
    scale = n / nb
    tb_total = (tb_fit + tb_tr) * scale
    cb_total = (cb_fit + cb_tr) * scale

    # same grids -> identical occupancy on the subsample (a correctness cross-check)
    ref = RandomBinningFeatures(n_grids=P, sigma=sigma, random_state=0).fit(Xb)
    same_cells = np.array_equal(ref.n_cells_, [len(m) for m in base.maps])

    ours = t_fit + t_tr
    print(f"\n== {name}: {n} x {d}, P = {P}, sigma = {sigma:.4g}, dtype {X.dtype}, "
          f"n_threads = {est._n_threads()}")
    print(f"   randfeat fit {t_fit:.3f} s, transform {t_tr:.3f} s, fit+transform {ours:.3f} s "
          f"({n / ours:,.0f} rows/s); fit_transform {t_ft:.3f} s ({n / t_ft:,.0f} rows/s)")
    print(f"   NumPy+dict baseline on {nb} rows: fit {tb_fit:.2f} s, transform {tb_tr:.2f} s; "
          f"extrapolated x{scale:.2f} to {n} rows: {tb_total:.1f} s ({n / tb_total:,.0f} rows/s)")
    print(f"   speedup (fit+transform): {tb_total / ours:.0f}x; "
          f"(fit_transform): {tb_total / t_ft:.0f}x; "
          f"baseline/randfeat occupied cells agree on the subsample: {same_cells}; "
          f"fit_transform == fit().transform(): {ft_same}")
    print(f"   occupied cells per grid: min {cells.min()}, median {int(np.median(cells))}, "
          f"max {cells.max()}, total columns {est.n_columns_}; nnz {Z.nnz}")
    print(f"   CPU time (all threads): randfeat fit+transform {c_fit + c_tr:.2f} s, fit_transform "
          f"{c_ft:.2f} s; baseline (extrapolated) {cb_total:.1f} s -> CPU-time ratio "
          f"{cb_total / (c_fit + c_tr):.0f}x / {cb_total / c_ft:.0f}x")
    return dict(name=name, n=n, d=d, P=P, sigma=sigma, fit=t_fit, transform=t_tr, ft=t_ft,
                base_rows=nb, base=tb_total, speedup=tb_total / ours, speedup_ft=tb_total / t_ft,
                cpu_ratio=cb_total / (c_fit + c_tr),
                cells_min=int(cells.min()), cells_med=int(np.median(cells)),
                cells_max=int(cells.max()))


def _stats(times):
    return float(np.min(times)), float(np.median(times))


def run_many_cells(args):
    """Issue 17, "random binning when cells are many": 200,000 x 54 standard-normal rows,
    P = 20 grids, fit then transform at sigma = 100, 20 and 2, against the NumPy floor + dict
    baseline in the same run (min and median of the repeats; machine load recorded)."""
    n, d, P = (50_000 if args.quick else 200_000), 54, 20
    X = np.random.default_rng(0).standard_normal((n, d))
    nt = args.n_threads if args.n_threads else 2
    rows = []
    for sigma in (100.0, 20.0, 2.0):
        load0 = os.getloadavg()[0]
        ours, fits, trs = [], [], []
        for _ in range(args.repeat):
            est = RandomBinningFeatures(P, sigma=sigma, random_state=0, n_threads=nt)
            t0 = time.perf_counter()
            est.fit(X)
            t1 = time.perf_counter()
            Z = est.transform(X)
            t2 = time.perf_counter()
            ours.append(t2 - t0)
            fits.append(t1 - t0)
            trs.append(t2 - t1)
        cells = int(est.n_columns_)
        fitted = est._fitted.cells.nbytes
        per_grid = fitted - 16 * cells  # layout arrays, column offsets: per-grid parameters
        nb = min(n, args.baseline_rows)
        Xb = X[:nb]
        base = []
        for _ in range(args.baseline_repeat):
            b = NumpyDictBinning(est.widths_, est.shifts_)
            t0 = time.perf_counter()
            b.fit(Xb)
            b.transform(Xb)
            base.append((time.perf_counter() - t0) * n / nb)
        load1 = os.getloadavg()[0]
        # same grids -> same occupancy on the baseline rows (a correctness cross-check)
        ref = RandomBinningFeatures(P, sigma=sigma, random_state=0, n_threads=nt).fit(Xb)
        agree = bool(np.array_equal(ref.n_cells_, [len(m) for m in b.maps]))
        o_min, o_med = _stats(ours)
        b_min, b_med = _stats(base)
        rows.append(dict(sigma=sigma, o_min=o_min, o_med=o_med, fit=min(fits), tr=min(trs),
                         b_min=b_min, b_med=b_med, cells=cells, per_cell=fitted / cells,
                         entry=16 * cells / cells, per_grid=per_grid, nnz=Z.nnz, agree=agree,
                         load=(load0, load1)))
        r = rows[-1]
        print(f"sigma={sigma:g}: fit+transform min {o_min:.3f} s, median {o_med:.3f} s (fit "
              f"{r['fit']:.3f}, transform {r['tr']:.3f}); baseline (from {nb} rows, x{n / nb:.1f}) "
              f"min {b_min:.1f} s, median {b_med:.1f} s; ratio min/min {b_min / o_min:.0f}x, "
              f"median/median {b_med / o_med:.0f}x; {cells:,} cells, fitted "
              f"{fitted / cells:.2f} B/cell (16 B entries + {per_grid:,} B per-grid arrays); "
              f"load {load0:.1f} -> {load1:.1f}; cells agree with baseline: {agree}", flush=True)
    print(f"\n{n:,} x {d} N(0,1), P = {P}, n_threads = {nt}, {args.repeat} repeats (baseline "
          f"{args.baseline_repeat} on {min(n, args.baseline_rows):,} rows, extrapolated "
          f"linearly); CPUs available: {effective_n_cpus()}")
    print("| sigma | columns | fit+transform min / median (s) | NumPy+dict min / median (s) "
          "| ratio (min, median) | fitted bytes per cell (16 B entry + per-grid) | load 1-min |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['sigma']:g} | {r['cells']:,} | {r['o_min']:.3f} / {r['o_med']:.3f} | "
              f"{r['b_min']:.1f} / {r['b_med']:.1f} | {r['b_min'] / r['o_min']:.0f}x, "
              f"{r['b_med'] / r['o_med']:.0f}x | {r['per_cell']:.2f} (16 + "
              f"{r['per_grid'] / r['cells']:.2f}) | {r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="50,000 rows per problem")
    ap.add_argument("--data-dir", default=os.environ.get("RANDFEAT_DATA"),
                    help="folder with kddcup.data_10_percent.gz (default $RANDFEAT_DATA)")
    ap.add_argument("--baseline-rows", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--sigma", type=float, default=None)
    ap.add_argument("--only", choices=["covtype", "kdd"], default=None)
    ap.add_argument("--many-cells", action="store_true",
                    help="issue 17: 200,000 x 54, P = 20, sigma = 100, 20, 2 (2 threads)")
    ap.add_argument("--baseline-repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.many_cells:
        return run_many_cells(args)
    rng = np.random.default_rng(12345)
    print(f"randfeat random binning benchmark; CPUs available: {effective_n_cpus()}")

    problems = []
    if args.only in (None, "covtype"):
        n = 50_000 if args.quick else 522_000
        X = rng.standard_normal((n, 54))
        problems.append(("covtype-shape (synthetic N(0,1))", X, 50))
    if args.only in (None, "kdd"):
        X = load_kdd(args.data_dir) if args.data_dir else None
        label = "KDDCUP99 10% (real numeric columns, standardised)"
        if X is None:
            X = rng.standard_normal((494_021, 38))
            label = "KDDCUP99-10%-shape (synthetic N(0,1))"
        if args.quick:
            X = X[rng.choice(X.shape[0], 50_000, replace=False)]
        problems.append((label, np.ascontiguousarray(X), 10))

    results = []
    for name, X, P in problems:
        sigma = args.sigma if args.sigma else median_l1(X, rng)
        results.append(run_problem(name, X, P, sigma, args, rng))

    print("\n| problem | n x d | P | sigma | fit (s) | transform (s) | rows/s (fit+transform) "
          "| fit_transform (s) | NumPy+dict (s, extrapolated) | speedup fit+transform "
          "| speedup fit_transform | CPU-time ratio | occupied cells/grid (min/median/max) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['n']} x {r['d']} | {r['P']} | {r['sigma']:.3g} | "
              f"{r['fit']:.2f} | {r['transform']:.2f} | "
              f"{r['n'] / (r['fit'] + r['transform']):,.0f} | {r['ft']:.2f} | {r['base']:.0f} "
              f"(from {r['base_rows']} rows) | {r['speedup']:.0f}x | {r['speedup_ft']:.0f}x | "
              f"{r['cpu_ratio']:.0f}x | {r['cells_min']}/{r['cells_med']}/{r['cells_max']} |")


if __name__ == "__main__":
    main()
