"""Time randfeat's FWHT against its peers, side by side in one run.

For every dtype (float32, float64), length d = 2**k and thread count, a batch of ~64 MiB of
random vectors (rows of a C-contiguous, 64-byte aligned array) is transformed in place by each
implementation in turn; the repetitions are interleaved (implementation A, B, C, ..., A, B, C, ...)
so that machine noise hits every one alike, and each time is reported as ns per vector (best of
the repetitions; the median is kept in the CSV).  Between two timed calls the batch is rescaled
by 1/sqrt(d) (untimed) so the values stay O(1).

Implementations
---------------
randfeat      ``randfeat.fwht(x, out=x, check_finite=False, n_threads=t)`` -- the public API
randfeat-kern the compiled row loop alone (``randfeat._lib._fwht.fwht_rows``): API minus Python
FFHT          FALCONN-LIB/FFHT's C kernel ``fht_float/fht_double`` called per row by the same
              compiled row loop as randfeat-kern (so both pay the same per-row overhead and can
              use the same threads).  Point the benchmark at a locally built shared library with
              ``RANDFEAT_BENCH_FFHT_LIB=/path/to/libffht.so`` (or ``--ffht-lib``), e.g. built in a
              scratch clone with ``gcc -O3 -march=native -shared -fPIC fht.c fast_copy.c -o
              libffht.so``.  Without it, ``import ffht`` (FFHT's own Python module) is tried and
              called once per row from Python (1 thread).  Neither found: "skipped".
pyfwht        pyfwht 2.0.1 ``fwht_f64_batch`` (float64 only; its own threading)
sklearn-extra scikit-learn-extra 0.3.0 ``utils._cyfht.fht2`` (single-threaded)
numpy         a naive NumPy radix-2 butterfly over the whole batch (single-threaded; on a batch
              8x smaller, as it is slow)

Ratios are peer time / randfeat-kern time (> 1: randfeat is faster).  A peer that cannot be
imported is reported as skipped.  Single-threaded peers are timed once, at 1 thread.

Usage::

    python benchmarks/bench_fwht.py            # d = 2**8 .. 2**20, 1 and 2 threads (minutes)
    python benchmarks/bench_fwht.py --quick    # fewer sizes, 16 MiB batches (seconds)
    python benchmarks/bench_fwht.py --log-sizes 10 16 --threads 1 --csv out.csv
"""

from __future__ import annotations

import argparse
import ctypes
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

import randfeat
from randfeat._lib import _fwht

DTYPES = {"float32": np.float32, "float64": np.float64}


# --------------------------------------------------------------------------- helpers

def aligned_empty(shape, dtype, align=64):
    """C-contiguous empty array whose data pointer is a multiple of ``align`` bytes."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def naive_numpy_fwht(x):
    """In-place radix-2 FWHT of every row of a 2-D C-contiguous array, with NumPy slicing."""
    n_rows, n = x.shape
    h = 1
    while h < n:
        v = x.reshape(n_rows, n // (2 * h), 2, h)
        a = v[:, :, 0, :].copy()
        b = v[:, :, 1, :]
        v[:, :, 0, :] += b
        np.subtract(a, b, out=b)
        h *= 2
    return x


class Peer:
    """One implementation: name, supported dtypes, thread-aware or not, and a runner factory."""

    def __init__(self, name, make, dtypes=("float32", "float64"), threaded=True,
                 batch_fraction=1, note=""):
        self.name, self.make, self.dtypes = name, make, dtypes
        self.threaded, self.batch_fraction, self.note = threaded, batch_fraction, note


def _ffht_peer(lib_path):
    """FFHT through ctypes (C row loop) when a library is given, else ``import ffht``."""
    lib_path = lib_path or os.environ.get("RANDFEAT_BENCH_FFHT_LIB")
    if lib_path:
        try:
            lib = ctypes.CDLL(os.path.abspath(lib_path))
            addr = {"float32": ctypes.cast(lib.fht_float, ctypes.c_void_p).value,
                    "float64": ctypes.cast(lib.fht_double, ctypes.c_void_p).value}
        except (OSError, AttributeError) as exc:
            return None, f"FFHT library {lib_path!r} not loadable: {exc}"

        def make(x, log_n, n_thr, dt):
            f = addr[dt]
            return lambda: _fwht.apply_rows_cfunc(x, log_n, n_thr, f)
        return Peer("FFHT", make, note=f"C kernel from {lib_path}, randfeat's row loop"), None
    try:
        import ffht  # noqa: PLC0415
        probe = np.zeros(8, np.float32)
        ffht.fht(probe)
    except Exception as exc:  # ImportError, or its removed NumPy C-API under NumPy 2
        return None, (f"FFHT: no RANDFEAT_BENCH_FFHT_LIB and `import ffht` failed "
                      f"({type(exc).__name__}: {exc})")

    def make(x, log_n, n_thr, dt):
        rows = list(x)

        def run():
            for r in rows:
                ffht.fht(r)
        return run
    return Peer("FFHT", make, threaded=False, note="`import ffht`, one Python call per row"), None


def _pyfwht_peer():
    try:
        from pyfwht import _pyfwht  # noqa: PLC0415
    except Exception as exc:
        return None, f"pyfwht: {type(exc).__name__}: {exc}"

    def make(x, log_n, n_thr, dt):
        rows = list(x)  # views: transformed in place
        n = x.shape[1]
        return lambda: _pyfwht.fwht_f64_batch(rows, n)
    return Peer("pyfwht", make, dtypes=("float64",), threaded=False,
                note="fwht_f64_batch; float64 only"), None


def _sklearn_extra_peer():
    try:
        from sklearn_extra.utils import _cyfht  # noqa: PLC0415
    except Exception as exc:
        return None, f"sklearn-extra: {type(exc).__name__}: {exc}"

    def make(x, log_n, n_thr, dt):
        return lambda: _cyfht.fht2(x)
    return Peer("sklearn-extra", make, threaded=False, note="_cyfht.fht2 (in place)"), None


def build_peers(ffht_lib=None, with_numpy=True):
    peers = [
        Peer("randfeat", lambda x, log_n, t, dt: (
            lambda: randfeat.fwht(x, out=x, check_finite=False, n_threads=t)),
            note="public API fwht(x, out=x, check_finite=False)"),
        Peer("randfeat-kern", lambda x, log_n, t, dt: (lambda: _fwht.fwht_rows(x, log_n, t)),
             note="compiled row loop only"),
    ]
    skipped = []
    for p, why in (_ffht_peer(ffht_lib), _pyfwht_peer(), _sklearn_extra_peer()):
        if p is None:
            skipped.append(why)
        else:
            peers.append(p)
    if with_numpy:
        peers.append(Peer("numpy", lambda x, log_n, t, dt: (lambda: naive_numpy_fwht(x)),
                          threaded=False, batch_fraction=8, note="naive radix-2 butterfly"))
    return peers, skipped


# --------------------------------------------------------------------------- timing

def time_case(peers, dt, log_n, n_thr, batch_bytes, repeats, rng):
    """Interleaved timings of every applicable peer: {name: [ns per vector, ...]}."""
    d = 1 << log_n
    itemsize = np.dtype(DTYPES[dt]).itemsize
    n_rows = max(4, batch_bytes // (d * itemsize))
    active = [p for p in peers if dt in p.dtypes and (p.threaded or n_thr == 1)]
    bufs, runs = {}, {}
    for p in active:
        rows = max(2, n_rows // p.batch_fraction)
        x = aligned_empty((rows, d), DTYPES[dt])
        x[...] = rng.standard_normal((rows, d), dtype=np.float32)
        bufs[p.name] = x
        runs[p.name] = p.make(x, log_n, n_thr, dt)
    rescale = DTYPES[dt](1.0 / np.sqrt(d))
    times = {p.name: [] for p in active}
    for rep in range(repeats):
        order = active[rep % len(active):] + active[:rep % len(active)]
        for p in order:
            x = bufs[p.name]
            np.multiply(x, rescale, out=x)  # untimed: keep values O(1)
            t0 = time.perf_counter()
            runs[p.name]()
            dt_s = time.perf_counter() - t0
            times[p.name].append(dt_s / x.shape[0] * 1e9)
    return times


def fmt_ns(ns):
    if ns is None:
        return "—"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.1f} µs"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="d = 2^8, 2^10, 2^13, 2^16; 16 MiB batches; 3 repetitions")
    ap.add_argument("--log-sizes", type=int, nargs=2, metavar=("LO", "HI"), default=None,
                    help="log2 of the smallest and largest d (default 8 20)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=list(DTYPES))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch-mib", type=float, default=None, help="batch size (default 64)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repetitions (7)")
    ap.add_argument("--ffht-lib", default=None,
                    help="path of a ctypes-loadable FFHT .so (else $RANDFEAT_BENCH_FFHT_LIB)")
    ap.add_argument("--no-numpy", action="store_true", help="skip the naive NumPy peer")
    ap.add_argument("--csv", default=None, help="also write every timing to this CSV file")
    args = ap.parse_args(argv)

    if args.quick:
        logs = [8, 10, 13, 16]
        batch_mib, repeats = 16, 3
    else:
        lo, hi = args.log_sizes or (8, 20)
        logs = list(range(lo, hi + 1))
        batch_mib, repeats = 64, 7
    if args.log_sizes and args.quick:
        logs = [k for k in logs if args.log_sizes[0] <= k <= args.log_sizes[1]]
    batch_mib = args.batch_mib or batch_mib
    repeats = args.repeats or repeats

    peers, skipped = build_peers(args.ffht_lib, with_numpy=not args.no_numpy)
    print(f"# FWHT benchmark  {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"# machine: {platform.machine()}, {_cpu_name()}, {os.cpu_count()} CPUs; "
          f"randfeat {randfeat.__version__} ISA={_fwht.isa()} OpenMP={_fwht.openmp_enabled()}; "
          f"numpy {np.__version__}")
    print(f"# batch {batch_mib:g} MiB, {repeats} interleaved repetitions, best-of reported; "
          "ratio = peer / randfeat-kern (> 1: randfeat faster)")
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
                best = {k: min(v) for k, v in t.items()}
                for k, v in t.items():
                    records.append((dt, n_thr, 1 << log_n, k, min(v), statistics.median(v)))
                ref = best["randfeat-kern"]
                cells = [f"2^{log_n}"] + [fmt_ns(best.get(n)) for n in names]
                cells += [f"{best[n] / ref:.2f}" for n in others]
                print("| " + " | ".join(cells) + " |")
                sys.stdout.flush()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("dtype,n_threads,d,impl,best_ns,median_ns\n")
            for r in records:
                f.write(",".join(str(v) for v in r) + "\n")
        print(f"\n# wrote {args.csv}")


def _cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
