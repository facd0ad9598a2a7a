"""Benchmark: out-of-core random-feature ridge regression on a dask cluster (randfeat.dask).

Problem (issue 18): ``N`` rows x 16 float32 features generated lazily from a seed with
``dask.array.random`` (the data never exist in the client), target
``y = sum_j sin(x_j), j < 4, + 0.1 noise``; random Fourier features with ``D = 1024`` (float32
features; each chunk's ZᵀZ by one ``syrk`` in ``--gram-dtype``, float32 by default, summed in
float64); ``RandomFeatureRidge`` with one alpha.  As float32
features the problem would take ``4 N D`` bytes (41 GB at N = 10^7); the dask fit never forms
them: each task featurises ``chunk_size`` rows of its block at a time and returns the block's
sufficient statistics (ZᵀZ, Zᵀy, sums, count: ~8 MiB at D = 1024), which a fixed tree of
pairwise sums reduces.

Measured, for each number of worker processes in ``--workers`` (a fresh ``LocalCluster``, one
thread per worker; distributed's nannies start the workers with ``OPENBLAS_NUM_THREADS=1``, so
BLAS is single-threaded in every task):

* wall time of ``fit`` and the time per million rows;
* peak resident memory of the whole cluster: the summed RSS of this process (client and
  scheduler) and all its child processes (nannies and workers), sampled every 0.1 s; shared pages
  are counted once per process, so this over-estimates;
* where the time goes: task time summed over the workers by task kind (from the scheduler's task
  stream: data generation, featurise + statistics, merges), and the client's final solve; plus a
  single-threaded split of one ``chunk_size`` block into transform and statistics.

Then ``--subset`` rows (several blocks) are fitted both on dask and in memory (the ordinary
``RandomFeatureRidge.fit`` on the computed NumPy arrays; both with ``gram_dtype="float64"``, the
precision the tolerance is stated for), and the coefficients compared against
the tolerance stated in :mod:`randfeat.dask`: ``||w_dask - w|| <= 100 eps kappa ||w||`` with
``kappa`` the condition number of ``A + n alpha I``.

Usage::

    python benchmarks/bench_dask.py --n-rows 1000000              # a smaller run first
    python benchmarks/bench_dask.py                               # N = 10^7, 1 and 2 workers
    python benchmarks/bench_dask.py --workers 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

GiB = 2.0 ** 30


class PeakRSS:
    """Peak of the summed RSS of this process and all its descendants (sampled)."""

    def __init__(self, every=0.1):
        import psutil

        self._psutil = psutil
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        me = self._psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied):
                pass
        self.peak = max(self.peak, total)
        return total

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def __enter__(self):
        self.peak = 0
        self.sample()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.sample()


def make_data(n_rows, chunk_rows, seed):
    """Lazy X (n_rows, 16) float32 and y (n_rows,) float64 from ``seed``."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n_rows, 16), chunks=(chunk_rows, 16), dtype=np.float32)
    noise = rng.standard_normal((n_rows,), chunks=(chunk_rows,))
    y = da.sin(X[:, :4].astype(np.float64)).sum(axis=1) + 0.1 * noise
    return X, y


def model(D, alpha, seed, gram_dtype="float32"):
    from randfeat import RandomFourierFeatures
    from randfeat.linear import RandomFeatureRidge

    return RandomFeatureRidge(RandomFourierFeatures(D, sigma=4.0, random_state=seed),
                              alphas=alpha, alpha_scale="mean", chunk_size=4096,
                              gram_dtype=gram_dtype)


def task_times(stream):
    """Seconds of compute and of transfer per task kind, summed over the workers."""
    from distributed.utils import key_split

    out = defaultdict(float)
    for t in stream:
        kind = key_split(t["key"])
        for ss in t.get("startstops", ()):
            act = ss["action"]
            out[f"{kind} ({act})" if act != "compute" else kind] += ss["stop"] - ss["start"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def run_fit(n_workers, args):
    import distributed

    X, y = make_data(args.n_rows, args.chunk_rows, args.seed)
    with PeakRSS() as mem:
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0",
                                      memory_limit=args.worker_memory) as cluster, \
                distributed.Client(cluster) as client:
            client.run(lambda: None)  # workers up before the clock starts
            idle = mem.sample()
            m = model(args.D, args.alpha, args.seed, args.gram_dtype)
            with distributed.get_task_stream(client) as ts:
                t0 = time.perf_counter()
                m.fit(X, y)
                wall = time.perf_counter() - t0
            stream = ts.data
    times = task_times(stream)
    return dict(n_workers=n_workers, wall_s=wall, s_per_million_rows=wall / (args.n_rows / 1e6),
                peak_rss_gib=mem.peak / GiB, idle_rss_gib=idle / GiB, task_seconds=times,
                coef_norm=float(np.linalg.norm(m.coef_)), alpha=m.alpha_)


def block_split(args):
    """Single-threaded seconds of one ``chunk_size`` block: the RFF transform, and its addition to
    the statistics (``RidgeStatistics._update``: the ``syrk`` of ``gram_dtype`` and the float64
    ``gemm``), as a task runs them (min of 5)."""
    from threadpoolctl import threadpool_limits

    from randfeat.linear import RidgeStatistics

    m = model(args.D, args.alpha, args.seed, args.gram_dtype)
    rff = m.features.fit(np.zeros((1, 16), np.float32))
    rff.n_threads = 1
    rng = np.random.default_rng(0)
    Xb = rng.standard_normal((m.chunk_size, 16)).astype(np.float32)
    Yb = rng.standard_normal((m.chunk_size, 1))
    st = RidgeStatistics(args.gram_dtype)
    with threadpool_limits(1):
        best_t, best_g = np.inf, np.inf
        for _ in range(5):
            t0 = time.perf_counter()
            Z = rff.transform(Xb)
            t1 = time.perf_counter()
            st._update(Z, Yb)
            t2 = time.perf_counter()
            best_t, best_g = min(best_t, t1 - t0), min(best_g, t2 - t1)
    return dict(rows=m.chunk_size, transform_s=best_t, gram_s=best_g,
                gflops=m.chunk_size * args.D ** 2 / best_g / 1e9)


def compare_subset(args):
    """dask fit vs in-memory fit on the first ``--subset`` rows."""
    import dask
    import distributed

    X, y = make_data(args.n_rows, args.chunk_rows, args.seed)
    n = min(args.subset, args.n_rows)
    Xs = X[:n].rechunk((max(1, n // 7), 16))  # several (uneven) blocks
    ys = y[:n].rechunk((Xs.chunks[0],))
    Xm, ym = dask.compute(Xs, ys, scheduler="threads")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        dk = model(args.D, args.alpha, args.seed, "float64").fit(Xs, ys)
    mem = model(args.D, args.alpha, args.seed, "float64").fit(Xm, ym)
    # kappa of A + n alpha I (A the centred Gram), accumulated in chunks
    rff = mem.features_
    D = args.D
    G, s = np.zeros((D, D)), np.zeros(D)
    for a in range(0, n, 8192):
        Z = np.asarray(rff.transform(Xm[a:a + 8192]), dtype=np.float64)
        G += Z.T @ Z
        s += Z.sum(axis=0)
    A = G - np.outer(s, s) / n
    A[np.diag_indices_from(A)] += n * mem.alpha_
    kappa = float(np.linalg.cond(A))
    eps = float(np.finfo(np.float64).eps)
    rel = float(np.linalg.norm(dk.coef_ - mem.coef_) / np.linalg.norm(mem.coef_))
    return dict(rows=n, blocks=len(Xs.chunks[0]), kappa=kappa, bound=100 * eps * kappa,
                rel_coef_diff=rel, intercept_diff=float(abs(dk.intercept_ - mem.intercept_)),
                within=rel <= 100 * eps * kappa)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-rows", type=int, default=10_000_000)
    ap.add_argument("--chunk-rows", type=int, default=262_144,
                    help="rows per dask block (a multiple of chunk_size = 4096: no neighbour "
                         "reads)")
    ap.add_argument("--D", type=int, default=1024)
    ap.add_argument("--alpha", type=float, default=1e-4)
    ap.add_argument("--gram-dtype", default="float32", choices=["float32", "float64"],
                    help="precision of each chunk's Z^T Z in the timed fits (summed in float64)")
    ap.add_argument("--workers", default="1,2", help="comma-separated numbers of workers")
    ap.add_argument("--worker-memory", default="1.5GiB", help="dask memory_limit per worker")
    ap.add_argument("--subset", type=int, default=100_000,
                    help="rows of the dask vs in-memory comparison (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    import dask
    import distributed

    import randfeat

    res = dict(n_rows=args.n_rows, n_features=16, D=args.D, chunk_rows=args.chunk_rows,
               gram_dtype=args.gram_dtype,
               alpha=args.alpha, features_gb_float32=4 * args.n_rows * args.D / 1e9,
               dask=dask.__version__, distributed=distributed.__version__,
               randfeat=randfeat.__file__, cpus=os.cpu_count(),
               loadavg_start=os.getloadavg(), fits=[])
    print(f"N = {args.n_rows:,} x 16 float32, RFF D = {args.D} (as float32 features "
          f"{res['features_gb_float32']:.1f} GB), chunks of {args.chunk_rows:,} rows; "
          f"load average {res['loadavg_start'][0]:.1f} on {os.cpu_count()} cores", flush=True)
    res["block_split"] = bs = block_split(args)
    print(f"one {bs['rows']}-row block, 1 thread: transform {bs['transform_s'] * 1e3:.1f} ms, "
          f"statistics ({args.gram_dtype} syrk + gemm) {bs['gram_s'] * 1e3:.1f} ms "
          f"({bs['gflops']:.1f} GFLOP/s, counting N D^2 flops per syrk)", flush=True)
    for w in (int(s) for s in args.workers.split(",")):
        r = run_fit(w, args)
        res["fits"].append(r)
        print(f"{w} worker(s): fit {r['wall_s']:.1f} s = {r['s_per_million_rows']:.2f} s per "
              f"million rows; peak RSS of the cluster {r['peak_rss_gib']:.2f} GiB (idle "
              f"{r['idle_rss_gib']:.2f}); task seconds: "
              + ", ".join(f"{k} {v:.1f}" for k, v in r["task_seconds"].items()), flush=True)
    if len(res["fits"]) > 1:
        t = {r["n_workers"]: r["wall_s"] for r in res["fits"]}
        if 1 in t and 2 in t:
            res["speedup_2_vs_1"] = t[1] / t[2]
            print(f"speed-up 2 vs 1 worker: {res['speedup_2_vs_1']:.2f}x", flush=True)
    if args.subset:
        c = compare_subset(args)
        res["subset"] = c
        print(f"subset {c['rows']:,} rows in {c['blocks']} blocks: ||w_dask - w|| / ||w|| = "
              f"{c['rel_coef_diff']:.2e}, bound 100 eps kappa = {c['bound']:.2e} (kappa "
              f"{c['kappa']:.3g}): {'within' if c['within'] else 'OUTSIDE'}; |b_dask - b| = "
              f"{c['intercept_diff']:.1e}", flush=True)
    res["loadavg_end"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0 if not args.subset or res["subset"]["within"] else 1


if __name__ == "__main__":
    sys.exit(main())
