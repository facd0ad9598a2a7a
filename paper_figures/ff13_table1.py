"""FF13 Table 1: time and parameter memory per prediction, Fastfood vs RKS (THEORY §4.8).

Le, Sarlós & Smola (ICML 2013), Table 1 (= arXiv Table 2): computing the n basis functions of one
d-dimensional vector, Fastfood (Spiral FWHT) vs RKS (dense Eigen matrix), at (d, n) =
(1024, 16384), (4096, 32768), (8192, 65536).  Here: ``randfeat.Fastfood`` vs
``randfeat.RandomFourierFeatures`` (paired map, n frequencies -> 2n columns), float32 for both,
one thread each (``n_threads=1``, one BLAS thread), ``transform`` of a single row; the median of
``repeats`` timed calls after one warm-up call.  Memory = bytes of the fitted random parameters
(RKS: the d x n frequency matrix; Fastfood: ``parameter_nbytes_`` = B, Π, G, S).  When the RKS
matrix would need more than a third of the available RAM it is timed on n/8 frequencies and the
time multiplied by 8 (marked "extrapolated"; a matrix–vector product is linear in n).
"""

from __future__ import annotations

import time

import numpy as np

from paper_figures._features import _feature_classes, derive_seed
from paper_figures._output import progress, write_table_md

CODE_VERSION = 1
# (d, n, Fastfood s, RKS s, speedup, RAM improvement)
PAPER = [(1024, 16384, 0.00058, 0.0139, 24, 256), (4096, 32768, 0.00137, 0.1222, 89, 1024),
         (8192, 65536, 0.00269, 0.5351, 199, 2048)]


def _available_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - non-Linux
        pass
    return 8 << 30


def params(cfg):
    q = cfg.quick
    rows = [list(r[:2]) for r in (PAPER[:1] if q else PAPER)]
    return dict(rows=rows, repeats=10 if q else 30, seed=cfg.seed, quick=q, dtype="float32")


def _time_one(est, x, repeats):
    est.transform(x)  # warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        est.transform(x)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), float(np.min(ts))


def compute(p):
    RFF, FF, _ = _feature_classes()
    out = []
    for d, n in progress(p["rows"], desc="ff13_table1"):
        rng = np.random.default_rng(derive_seed(p["seed"], "ff13_table1", d, n))
        x = rng.standard_normal((1, d)).astype(p["dtype"])
        seed = derive_seed(p["seed"], "ff13_table1", "features", d, n)
        ff = FF(2 * n, sigma=np.sqrt(d), features="paired", random_state=seed,
                n_threads=1).fit(x)
        ff_med, ff_min = _time_one(ff, x, p["repeats"])
        ff_bytes = int(ff.parameter_nbytes_)
        del ff
        need = 3 * d * n * 8  # float64 draw + float32 copy + headroom
        scale = 1 if need < _available_bytes() / 3 else 8
        rks = RFF(2 * (n // scale), sigma=np.sqrt(d), features="paired", random_state=seed,
                  n_threads=1).fit(x)
        rks_med, rks_min = _time_one(rks, x, max(3, p["repeats"] // scale))
        rks_bytes = int(rks.frequencies_.nbytes * scale)
        del rks
        out.append(dict(d=d, n=n, ff_median=ff_med, ff_min=ff_min, rks_median=rks_med * scale,
                        rks_min=rks_min * scale, extrapolated=scale, ff_bytes=ff_bytes,
                        rks_bytes=rks_bytes, seed=seed))
    return dict(results=out)


def render(result, p, out_dir):
    header = ["d", "n", "paper Fastfood s", "ours Fastfood s", "paper RKS s", "ours RKS s",
              "paper speed-up", "ours speed-up", "ratio ours/paper speed-up",
              "paper RAM improvement", "ours RAM improvement (bytes RKS / Fastfood)"]
    paper = {(r[0], r[1]): r for r in PAPER}
    rows = []
    for r in result["results"]:
        _, _, pff, prks, psp, pram = paper[(r["d"], r["n"])]
        sp_ = r["rks_median"] / r["ff_median"]
        ram = r["rks_bytes"] / r["ff_bytes"]
        rows.append([r["d"], r["n"], f"{pff:.5f}", f"{r['ff_median']:.5f}", f"{prks:.4f}",
                     f"{r['rks_median']:.4f}" + (f" (extrapolated x{r['extrapolated']})"
                                                 if r["extrapolated"] > 1 else ""),
                     f"{psp}x", f"{sp_:.0f}x", f"{sp_ / psp:.2f}", f"{pram}x",
                     f"{ram:.0f}x ({r['rks_bytes'] / 2**20:.0f} MiB / "
                     f"{r['ff_bytes'] / 2**10:.0f} KiB)"])
    txt = ["# FF13 Table 1 — time and memory per prediction (reproduction)\n",
           "**QUICK MODE**: first (d, n) only, fewer repeats.\n" if p["quick"] else "",
           f"One {p['dtype']} vector, n frequencies (2n paired cos/sin outputs), n_threads=1, "
           f"median of {p['repeats']} timed transforms on this (shared) machine; the paper's "
           "times are 2013 hardware (Spiral FWHT vs Eigen). Memory: bytes of the random "
           "parameters at float32. Our RKS times are memory-bandwidth-bound matrix–vector "
           "products (the d x n float32 matrix is read once per call); on this shared machine "
           "they vary several-fold with the load of other processes, which inflates the "
           "speed-up column — compare the Fastfood column with the paper's directly.\n"]
    return write_table_md(out_dir, "ff13_table1", txt, header, rows, result)
