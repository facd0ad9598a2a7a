"""Timing harness of ``benchmarks/bench_fwht.py`` (not part of the installed package).

Public randfeat API only (``randfeat.fwht``, ``randfeat.show_config``).  The FFHT peer's row loop
and the arithmetic-bound probe are ``benchmarks/_rowloop.c``, compiled here with the system C
compiler into a scratch directory (randfeat itself never calls an address it is given).
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import statistics
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

import randfeat

DTYPES = {"float32": np.float32, "float64": np.float64}


# --------------------------------------------------------------------------- helpers

def aligned_empty(shape, dtype, align=64, offset=0):
    """C-contiguous empty array whose data start ``offset`` bytes after a multiple of ``align``."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + 2 * align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align + offset
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def load_average():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not on this platform
        return "n/a"


def machine():
    """The machine class of a result: CPU model, the FWHT's SIMD path and schedule that ran
    (``randfeat.show_config``), OpenMP, versions."""
    cfg = randfeat.show_config(as_dict=True)
    s = cfg["simd"]
    return {"cpu": cfg["machine"]["cpu"], "arch": cfg["machine"]["arch"],
            "cpus": os.cpu_count(), "simd": s["kernels"]["fwht"],
            "schedule": s.get("fwht_schedule", "add"), "available": s["available"],
            "openmp": cfg["openmp"]["enabled"], "randfeat": cfg["randfeat"]["version"],
            "numpy": np.__version__, "python": platform.python_version()}


def fmt_ns(ns):
    if ns is None or not math.isfinite(ns):
        return "—"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.1f} µs"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


# --------------------------------------------------------------------------- C helpers

_ROWLOOP = None


def rowloop():
    """ctypes handle of benchmarks/_rowloop.c, compiled once per process (OpenMP if the compiler
    has it); raises OSError/CalledProcessError when no C compiler works."""
    global _ROWLOOP
    if _ROWLOOP is None:
        src = Path(__file__).with_name("_rowloop.c")
        out = Path(tempfile.mkdtemp(prefix="randfeat-bench-")) / "rowloop.so"
        cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
        base = cc + ["-O3", "-fPIC", "-shared", str(src), "-o", str(out)]
        try:
            subprocess.run(base[:-2] + ["-fopenmp"] + base[-2:], check=True, capture_output=True)
        except subprocess.CalledProcessError:
            subprocess.run(base, check=True, capture_output=True)
        lib = ctypes.CDLL(str(out))
        for name, ct in (("rf_bench_rows_float", ctypes.c_float),
                         ("rf_bench_rows_double", ctypes.c_double)):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_long
            fn.argtypes = [ctypes.POINTER(ct), ctypes.c_long, ctypes.c_int, ctypes.c_int,
                           ctypes.c_void_p]
        for name, ct in (("rf_bench_rows_oop_float", ctypes.c_float),
                         ("rf_bench_rows_oop_double", ctypes.c_double)):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_long
            fn.argtypes = [ctypes.POINTER(ct), ctypes.POINTER(ct), ctypes.c_long, ctypes.c_int,
                           ctypes.c_int, ctypes.c_void_p]
        lib.rf_bench_copy.restype = None
        lib.rf_bench_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long,
                                      ctypes.c_int]
        lib.rf_bench_add_peak.restype = ctypes.c_double
        lib.rf_bench_add_peak.argtypes = [ctypes.c_int, ctypes.c_long,
                                          ctypes.POINTER(ctypes.c_float)]
        _ROWLOOP = lib
    return _ROWLOOP


def add_peak(simd, repeats=15, iters=1_000_000):
    """Peak float32 additions per ns of one core at the vector width of ``simd`` ("avx512":
    512 bits, "avx2": 256 bits; "scalar": 128-bit SSE2 is not probed, returns None): the best of
    ``repeats`` runs of 12 independent add chains (``_rowloop.c``).  float64: half as many."""
    width = {"avx512": 512, "avx2": 256}.get(simd)
    if width is None:
        return None
    try:
        lib = rowloop()
    except (OSError, subprocess.CalledProcessError):
        return None
    sink = ctypes.c_float()
    best = math.inf
    n = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = lib.rf_bench_add_peak(width, iters, ctypes.byref(sink))
        best = min(best, time.perf_counter() - t0)
    return n / best / 1e9 if n else None


# --------------------------------------------------------------------------- variants

class Variant:
    """One row of a table: ``make(x, out, log_n, n_thr)`` returns the timed callable for a
    batch ``x`` and a spare batch ``out`` of the same shape; ``in_place`` variants transform
    ``x`` (so it is rescaled, untimed, before each call); ``layout`` is how its batch is
    allocated ("aligned": 64-byte aligned, "numpy": NumPy's own allocation)."""

    def __init__(self, name, make, *, in_place=False, layout="aligned",
                 dtypes=("float32", "float64"), note="", group=None):
        self.name, self.make, self.in_place, self.layout = name, make, in_place, layout
        self.dtypes, self.note, self.group = dtypes, note, group


def randfeat_variants():
    """The default call first, then each opt-out as its own row."""
    f = randfeat.fwht
    return [
        Variant("`fwht(x)` (default)", lambda x, o, k, t: (lambda: f(x, n_threads=t)),
                layout="numpy", group="alloc",
                note="the default call: a new result, check_finite=True, x a NumPy array"),
        Variant("`check_finite=False`",
                lambda x, o, k, t: (lambda: f(x, n_threads=t, check_finite=False)),
                layout="numpy", group="alloc", note="opt-out: no NaN/inf check"),
        Variant("`out=x` (in place)", lambda x, o, k, t: (lambda: f(x, out=x, n_threads=t)),
                in_place=True, layout="numpy",
                note="opt-out: in place on a NumPy array (its data need not be 64-byte aligned)"),
        Variant("`out=x`, aligned", lambda x, o, k, t: (lambda: f(x, out=x, n_threads=t)),
                in_place=True, note="opt-out: in place on a 64-byte aligned batch"),
        Variant("`out=x`, aligned, `check_finite=False`",
                lambda x, o, k, t: (lambda: f(x, out=x, n_threads=t, check_finite=False)),
                in_place=True, note="all opt-outs: the fastest call (what FFHT does)"),
        Variant("`out=y` pre-allocated", lambda x, o, k, t: (lambda: f(x, out=o, n_threads=t)),
                note="opt-out: a pre-allocated aligned result y"),
    ]


def ffht_variants(lib_path):
    """FFHT's C kernels (in place, and out of place into a pre-allocated result) through
    ``_rowloop.c``'s C row loop; (variants, skip_reason)."""
    lib_path = lib_path or os.environ.get("RANDFEAT_BENCH_FFHT_LIB")
    if not lib_path:
        return [], ("FFHT: no library given (RANDFEAT_BENCH_FFHT_LIB or --ffht-lib; see "
                    "benchmarks/README.md)")
    try:
        lib = ctypes.CDLL(os.path.abspath(lib_path))
        addr = {"float32": ctypes.cast(lib.fht_float, ctypes.c_void_p).value,
                "float64": ctypes.cast(lib.fht_double, ctypes.c_void_p).value}
        oop = {"float32": ctypes.cast(lib.fht_float_oop, ctypes.c_void_p).value,
               "float64": ctypes.cast(lib.fht_double_oop, ctypes.c_void_p).value}
    except (OSError, AttributeError) as exc:
        return [], f"FFHT library {lib_path!r} not loadable: {exc}"
    try:
        loop = rowloop()
    except (OSError, subprocess.CalledProcessError) as exc:
        return [], f"FFHT: cannot compile benchmarks/_rowloop.c ({exc})"

    def make_ip(x, o, log_n, n_thr):
        dt = x.dtype.name
        fn = loop.rf_bench_rows_float if dt == "float32" else loop.rf_bench_rows_double
        ptr, rows, f = x.ctypes.data_as(fn.argtypes[0]), x.shape[0], addr[dt]
        return lambda: fn(ptr, rows, log_n, n_thr, f)

    def make_oop(x, o, log_n, n_thr):
        dt = x.dtype.name
        fn = loop.rf_bench_rows_oop_float if dt == "float32" else loop.rf_bench_rows_oop_double
        src, dst = x.ctypes.data_as(fn.argtypes[0]), o.ctypes.data_as(fn.argtypes[0])
        rows, f = x.shape[0], oop[dt]
        return lambda: fn(src, dst, rows, log_n, n_thr, f)

    note = f"FALCONN-LIB/FFHT C kernels from {lib_path}, called per row by a C OpenMP loop"
    return [Variant("FFHT in place", make_ip, in_place=True, note=note + " (fht_*)"),
            Variant("FFHT into `y`", make_oop, note=note + " (fht_*_oop into a pre-allocated "
                    "aligned result)")], None


def _quiet_call(f, *args):
    """Call f with the process's C-level stdout and stderr sent to /dev/null."""
    import sys  # noqa: PLC0415

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            return f(*args)
    finally:
        try:
            ctypes.CDLL(None).fflush(None)  # flush C stdio while it still goes to /dev/null
        except (OSError, AttributeError, TypeError):  # pragma: no cover - non-POSIX
            pass
        for fd, s in zip((1, 2), saved, strict=True):
            os.dup2(s, fd)
            os.close(s)


def pyfwht_variants():
    """pyfwht's CPU backend, one call per row (its batch call ``fwht_f64_batch`` chooses the
    backend itself and, in a build with CUDA on a machine without a GPU driver, fails)."""
    try:  # it announces its backend on stdout, from C
        import importlib  # noqa: PLC0415

        mod = _quiet_call(importlib.import_module, "pyfwht._pyfwht")
        cpu = mod.Backend.CPU
        _quiet_call(mod.fwht_f64_backend, np.zeros(8), cpu)
        import pyfwht  # noqa: PLC0415
        version = getattr(pyfwht, "__version__", "?")
    except Exception as exc:
        return [], f"pyfwht: {type(exc).__name__}: {exc}"

    def make(x, o, log_n, n_thr):
        rows = list(x)  # views: transformed in place
        f = mod.fwht_f64_backend

        def run():
            for r in rows:
                f(r, cpu)
        return run
    return [Variant("pyfwht in place", make, in_place=True, dtypes=("float64",),
                    note=f"pyfwht {version} fwht_f64_backend(row, Backend.CPU), one Python call "
                    "per row (float64 only)")], None


def floor_variants():
    def copy(x, o, log_n, n_thr):
        return lambda: np.copyto(o, x)
    return [Variant("copy floor", copy, note="np.copyto(y, x): one read and one write of the "
                    "batch, the memory floor of an out-of-place call")]


# --------------------------------------------------------------------------- timing

def _prep(v, x, s):
    """Untimed, before each call: rescale an in-place variant's batch (keeps values O(1)), and
    touch an out-of-place one's input the same way (multiply by 1), so every variant starts
    from the same cache state."""
    np.multiply(x, s if v.in_place else x.dtype.type(1), out=x)


def time_variants(variants, dt, log_n, n_thr, batch_bytes, rounds, rng, flush=None,
                  chunk_bytes=None):
    """Whole calls on a batch of ``batch_bytes``, interleaved: ``rounds`` rounds, each calls
    every variant once (the order rotates by one each round; variants of one group stay
    adjacent, in alternating order).  Each variant has its own input
    and spare batches.  ``flush``: (src, dst) arrays copied (untimed) before every call, to evict
    the caches.  ``chunk_bytes``: instead of one call on the whole batch, one call per
    consecutive chunk of about that size, each timed alone (on a loaded machine a chunk during
    which the process was preempted can then be dropped: see :func:`summarize`).  Returns
    ``({name: [[seconds per chunk call, ...] per round]}, rows per batch)``."""
    d = 1 << log_n
    dtype = DTYPES[dt]
    rows = max(1, batch_bytes // (d * np.dtype(dtype).itemsize))
    active = [v for v in variants if dt in v.dtypes]
    data = rng.standard_normal((rows, d)).astype(dtype)
    s = dtype(1.0 / math.sqrt(d))
    bufs, runs = {}, {}
    for v in active:
        x = np.empty((rows, d), dtype) if v.layout == "numpy" else aligned_empty((rows, d), dtype)
        x[...] = data
        o = aligned_empty((rows, d), dtype)
        o[...] = 0
        bufs[v.name] = (x, o)
        step = rows if not chunk_bytes else max(1, chunk_bytes // (d * np.dtype(dtype).itemsize))
        runs[v.name] = [v.make(x[i:i + step], o[i:i + step], log_n, n_thr)
                        for i in range(0, rows, step)]
        runs[v.name][0]()  # warm-up (and first-call set-up)
    times = {v.name: [] for v in active}
    units = []  # variants of one group stay adjacent (see below)
    for v in active:
        for u in units:
            if v.group is not None and u[0].group == v.group:
                u.append(v)
                break
        else:
            units.append([v])
    for r in range(rounds):
        # rotate the units; inside a group, alternate the order: the rows that allocate their
        # result (group "alloc") then follow each other half of the time, so that each one finds
        # the memory just freed by the other as often (a result that reuses memory still in the
        # cache is faster than one in memory that is not)
        order = units[r % len(units):] + units[:r % len(units)]
        order = [v for u in order for v in (u if r % 2 == 0 else u[::-1])]
        for v in order:
            _prep(v, bufs[v.name][0], s)
            if flush is not None:
                np.copyto(flush[1], flush[0])
            ts = []
            for run in runs[v.name]:
                t0 = time.perf_counter()
                res = run()
                ts.append(time.perf_counter() - t0)
                del res  # a new result is freed after the timing (freeing may unmap pages)
            times[v.name].append(ts)
    return times, rows


def summarize(ts, rows):
    """(best, median) time per vector in ns: best = the sum over the chunks of each chunk's
    fastest round (with one chunk, the fastest round); median = the median round's total."""
    best = sum(min(col) for col in zip(*ts, strict=True))
    return best / rows * 1e9, statistics.median(sum(r) for r in ts) / rows * 1e9
