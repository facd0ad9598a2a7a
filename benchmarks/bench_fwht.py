"""Time randfeat's FWHT against its peers, side by side in one run.

For every dtype (float32, float64), length d = 2**k and thread count, a batch of ~64 MiB of
random vectors (rows of a C-contiguous, 64-byte aligned array) is transformed in place by each
implementation in turn; the repetitions are interleaved (implementation A, B, C, ..., A, B, C, ...)
so that machine noise hits every one alike.  Each pass over the batch is timed in consecutive
chunks of 4 MiB (the memory traffic is that of one pass over the whole batch); the reported time
is the sum over chunks of each chunk's fastest repetition, in ns per vector, so a chunk during
which the process was preempted on a shared machine does not count.  The CSV keeps every
repetition's total as well.  Between two timed calls the batch is rescaled
by 1/sqrt(d) (untimed) so the values stay O(1).

Implementations
---------------
randfeat      ``randfeat.fwht(x, out=x, check_finite=False, n_threads=t)`` -- the public API
randfeat-kern the compiled row loop alone (``randfeat._lib._fwht.fwht_rows``): API minus Python
FFHT          FALCONN-LIB/FFHT's C kernel ``fht_float/fht_double`` called per row by a C OpenMP
              row loop (``benchmarks/_rowloop.c``, compiled by the benchmark with the system C
              compiler), so it pays a per-row overhead like randfeat-kern's and can use the
              same threads.  Point the benchmark at a shared library you built
              yourself from FFHT's ``fht.c`` + ``fast_copy.c`` (it must export ``fht_float`` and
              ``fht_double``) with ``RANDFEAT_BENCH_FFHT_LIB=/path/to/libffht.so`` (or
              ``--ffht-lib``).  Without it, ``import ffht`` (FFHT's own Python module) is tried
              and called once per row from Python (1 thread).  Neither found: "skipped".
pyfwht        pyfwht 2.0.1 ``fwht_f64_batch`` (float64 only; its own threading)
sklearn-extra scikit-learn-extra 0.3.0 ``utils._cyfht.fht2`` (single-threaded)
numpy         a naive NumPy radix-2 butterfly over the whole batch (single-threaded; on a batch
              8x smaller, as it is slow)

Ratios > 1 mean randfeat is faster.  A peer that cannot be
imported is reported as skipped.  Single-threaded peers are timed once, at 1 thread.

Out of cache (``--oocache``)
----------------------------
The kernel against the memory floor, a copy of the same bytes, in the same run: for d = 2**12 ..
2**20 (``--log-sizes`` to change), float32 and float64, the peers ``kern-1t`` and ``kern-2t``
(``fwht_rows`` on 1 and 2 threads), ``api-1t`` (``randfeat.fwht(x, out=x, check_finite=False,
n_threads=1)``), ``copy-1t`` (``np.copyto`` of the 64 MiB batch into a second one), ``copy-2t``
(memcpy of two halves by 2 OpenMP threads, ``benchmarks/_rowloop.c``) and ``memcpy-1t`` (the same
C copy on 1 thread) are interleaved as above.  Reported: each peer's min (sum of the chunks'
bests), the ratios kern/copy (1 thread), kern 1t/2t and copy 1t/2t (the copy's own 2-thread gain
shows what the memory allows), each as ratio of the mins with the ratio of the medians of the
whole passes in brackets, and the 1-minute load average after each row.

``--oocache --whole-batch`` times whole passes instead: ``fwht_rows`` on the whole 64 MiB batch
at 1 and 2 threads and ``np.copyto`` of it, interleaved, the batch rescaled and then the caches
flushed (a copy of 96 MiB elsewhere; both untimed) before each call; reported: the min over the
repetitions of each.  (Without the flush the rescaling pass leaves half the batch in the L3
and the kernel looks ~20 % faster at d = 2^20.)  The chunked harness above picks each 4 MiB
chunk's best repetition, and a 4 MiB chunk (8 MiB with the copy's destination) fits in this
host's 32 MiB L3, so its ratios can be optimistic; a whole pass over 64 MiB cannot be cached.

Usage::

    python benchmarks/bench_fwht.py            # d = 2**8 .. 2**20, 1 and 2 threads (minutes)
    python benchmarks/bench_fwht.py --quick    # fewer sizes, 16 MiB batches (seconds)
    python benchmarks/bench_fwht.py --log-sizes 10 16 --threads 1 --csv out.csv
    python benchmarks/bench_fwht.py --oocache  # kernel vs copy, d = 2**12 .. 2**20 (~3 min)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:  # run from a checkout without installing
    import randfeat  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _fwht_bench import (  # benchmarks/
    DTYPES,
    aligned_empty,
    build_peers,
    cpu_name,
    fmt_ns,
    oocache_peers,
    time_case,
)

import randfeat
from randfeat._lib import _cpu, _fwht


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="d = 2^8, 2^10, 2^13, 2^16; 16 MiB batches; 3 repetitions")
    ap.add_argument("--log-sizes", type=int, nargs=2, metavar=("LO", "HI"), default=None,
                    help="log2 of the smallest and largest d (default 8 20)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=list(DTYPES))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch-mib", type=float, default=None, help="batch size (default 64)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repetitions (11)")
    ap.add_argument("--ffht-lib", default=None,
                    help="path of a ctypes-loadable FFHT .so (else $RANDFEAT_BENCH_FFHT_LIB)")
    ap.add_argument("--no-numpy", action="store_true", help="skip the naive NumPy peer")
    ap.add_argument("--csv", default=None, help="also write every timing to this CSV file")
    ap.add_argument("--oocache", action="store_true",
                    help="out-of-cache mode: the kernel against a copy of the same bytes, "
                         "d = 2^12..2^20, 1 and 2 threads (see the module docstring)")
    ap.add_argument("--whole-batch", action="store_true",
                    help="with --oocache: time whole passes over the batch (no 4 MiB chunks, "
                         "no best-of per chunk; see the module docstring)")
    args = ap.parse_args(argv)
    if args.oocache and args.whole_batch:
        return oocache_whole(args)
    if args.oocache:
        return oocache(args)

    if args.quick:
        logs = [8, 10, 13, 16]
        batch_mib, repeats = 16, 3
    else:
        lo, hi = args.log_sizes or (8, 20)
        logs = list(range(lo, hi + 1))
        batch_mib, repeats = 64, 11
    if args.log_sizes and args.quick:
        logs = [k for k in logs if args.log_sizes[0] <= k <= args.log_sizes[1]]
    batch_mib = args.batch_mib or batch_mib
    repeats = args.repeats or repeats

    peers, skipped = build_peers(args.ffht_lib, with_numpy=not args.no_numpy)
    print(f"# FWHT benchmark  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"# machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPUs; "
          f"randfeat {randfeat.__version__} ISA={_cpu.isa()} OpenMP={_cpu.openmp_enabled()}; "
          f"numpy {np.__version__}")
    print(f"# batch {batch_mib:g} MiB timed in 4 MiB chunks, {repeats} interleaved repetitions; "
          "time = sum over chunks of each chunk's best; ratio X/kern = X's time / randfeat-kern's "
          "(> 1: randfeat faster)")
    for p in peers:
        print(f"#   {p.name:14s} {p.note}" + ("" if p.threaded else " [single-threaded]"))
    for why in skipped:
        print(f"#   skipped: {why}")
    sys.stdout.flush()

    rng = np.random.default_rng(0)
    records = []
    for n_thr in args.threads:
        for dt in args.dtypes:
            names = [p.name for p in peers if dt in p.dtypes and (p.threaded or n_thr == 1)]
            others = [n for n in names if n != "randfeat-kern"]
            print(f"\n## {dt}, {n_thr} thread{'s' if n_thr > 1 else ''} (ns per vector)\n")
            head = ["d"] + names + [f"{n}/kern" for n in others]
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for log_n in logs:
                t = time_case(peers, dt, log_n, n_thr, int(batch_mib * 2**20), repeats, rng)
                best = {k: v[0] for k, v in t.items()}
                for k, (b, per_rep) in t.items():
                    records.append((dt, n_thr, 1 << log_n, k, b, statistics.median(per_rep),
                                    " ".join(f"{x:.1f}" for x in per_rep)))
                cells = [f"2^{log_n}"] + [fmt_ns(best.get(n)) for n in names]
                cells += [f"{best[n] / best['randfeat-kern']:.2f}" for n in others]
                print("| " + " | ".join(cells) + " |")
                sys.stdout.flush()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("dtype,n_threads,d,impl,best_ns,median_rep_ns,rep_ns\n")
            for r in records:
                f.write(",".join(str(v) for v in r) + "\n")
        print(f"\n# wrote {args.csv}")


def _load():
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:  # pragma: no cover - not Linux
        return "?"


def oocache(args):
    """The kernel against the memory floor: see the module docstring (``--oocache``)."""
    lo, hi = args.log_sizes or (12, 20)
    logs = list(range(lo, hi + 1))
    batch_mib = args.batch_mib or 64
    repeats = args.repeats or 11
    peers, skipped = oocache_peers()
    print(f"# FWHT out of cache  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"# machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPUs; "
          f"randfeat {randfeat.__version__} ISA={_cpu.isa()} OpenMP={_cpu.openmp_enabled()}; "
          f"numpy {np.__version__}")
    print(f"# batch {batch_mib:g} MiB timed in 4 MiB chunks, {repeats} interleaved repetitions "
          "of every peer; min = sum over chunks of each chunk's best, med = median over the "
          "repetitions of the whole pass; load = 1-min load average after the row")
    for p in peers:
        print(f"#   {p.name:10s} {p.note}")
    for why in skipped:
        print(f"#   skipped: {why}")
    names = [p.name for p in peers]
    has2 = "copy-2t" in names
    rng = np.random.default_rng(0)
    records = []
    for dt in args.dtypes:
        print(f"\n## {dt} (time per vector; ratios of the mins, of the medians in brackets)\n")
        head = ["d", "kern 1t", "API 1t", "copy 1t", "kern/copy 1t", "API/copy 1t", "kern 2t"]
        head += ["copy 2t", "kern 1t/2t", "copy 1t/2t", "memcpy/copy 1t"] if has2 else []
        head += ["load"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for log_n in logs:
            t = time_case(peers, dt, log_n, 1, int(batch_mib * 2**20), repeats, rng)
            mn = {k: v[0] for k, v in t.items()}
            md = {k: statistics.median(v[1]) for k, v in t.items()}
            for k, (b, per_rep) in t.items():
                records.append((dt, 1 << log_n, k, b, md[k],
                                " ".join(f"{x:.1f}" for x in per_rep)))

            def ratio(a, b, mn=mn, md=md):
                return f"{mn[a] / mn[b]:.2f} ({md[a] / md[b]:.2f})"
            cells = [f"2^{log_n}", fmt_ns(mn["kern-1t"]), fmt_ns(mn["api-1t"]),
                     fmt_ns(mn["copy-1t"]), ratio("kern-1t", "copy-1t"),
                     ratio("api-1t", "copy-1t"), fmt_ns(mn["kern-2t"])]
            if has2:
                cells += [fmt_ns(mn["copy-2t"]), ratio("kern-1t", "kern-2t"),
                          ratio("copy-1t", "copy-2t"), ratio("memcpy-1t", "copy-1t")]
            cells.append(_load())
            print("| " + " | ".join(cells) + " |")
            sys.stdout.flush()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("dtype,d,impl,best_ns,median_rep_ns,rep_ns\n")
            for r in records:
                f.write(",".join(str(v) for v in r) + "\n")
        print(f"\n# wrote {args.csv}")


def oocache_whole(args):
    """``--oocache --whole-batch``: whole passes over the batch, kernel (1 and 2 threads) and
    ``np.copyto``, interleaved; min over ``--repeats`` (default 7) of each."""
    lo, hi = args.log_sizes or (12, 20)
    batch = int((args.batch_mib or 64) * 2**20)
    repeats = args.repeats or 7
    print(f"# FWHT out of cache, whole passes  "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; load {_load()}")
    print(f"# machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPUs; "
          f"randfeat {randfeat.__version__} ISA={_cpu.isa()}; numpy {np.__version__}; "
          f"batch {batch / 2**20:g} MiB, {repeats} interleaved repetitions, min of each")
    print("\n| dtype | d | kern 1t ms | copy ms | kern/copy 1t | kern 2t ms | kern 1t/2t | load |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    flush_src = np.ones(96 << 17)                            # 96 MiB: 3x a 32 MiB L3
    flush_dst = np.empty_like(flush_src)
    for dt in args.dtypes:
        for log_n in range(lo, hi + 1):
            d = 1 << log_n
            rows = max(1, batch // (d * np.dtype(dt).itemsize))
            x = aligned_empty((rows, d), dt)
            x[...] = rng.standard_normal((rows, d))
            y = aligned_empty((rows, d), dt)
            s = np.asarray(1.0 / np.sqrt(d), dtype=dt)
            t = {"k1": [], "c": [], "k2": []}
            for _ in range(repeats):
                for k in ("k1", "c", "k2"):
                    x *= s                                   # untimed: keeps the values O(1)
                    np.copyto(flush_dst, flush_src)          # untimed: evicts x from the L3
                    t0 = time.perf_counter()
                    if k == "c":
                        np.copyto(y, x)
                    else:
                        _fwht.fwht_rows(x, log_n, 1 if k == "k1" else 2)
                    t[k].append(time.perf_counter() - t0)
            k1, c, k2 = min(t["k1"]), min(t["c"]), min(t["k2"])
            print(f"| {dt} | 2^{log_n} | {k1 * 1e3:.2f} | {c * 1e3:.2f} | {k1 / c:.2f} | "
                  f"{k2 * 1e3:.2f} | {k1 / k2:.2f} | {_load()} |", flush=True)


if __name__ == "__main__":
    main()
