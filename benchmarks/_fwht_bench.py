"""Timing harness of ``benchmarks/bench_fwht.py`` (not part of the installed package).

See ``benchmarks/bench_fwht.py`` for the method and the peers.  The FFHT peer's row loop is
``benchmarks/_rowloop.c``, compiled here with the system C compiler into a scratch directory
(randfeat itself never calls an address it is given).
"""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

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


_ROWLOOP = None


def _rowloop():
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
        lib.rf_bench_copy.restype = None
        lib.rf_bench_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long,
                                      ctypes.c_int]
        _ROWLOOP = lib
    return _ROWLOOP


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
        try:
            loop = _rowloop()
        except (OSError, subprocess.CalledProcessError) as exc:
            return None, f"FFHT: cannot compile benchmarks/_rowloop.c ({exc})"

        def make(x, log_n, n_thr, dt):
            f = addr[dt]
            fn = loop.rf_bench_rows_float if dt == "float32" else loop.rf_bench_rows_double
            ptr = x.ctypes.data_as(fn.argtypes[0])
            rows = x.shape[0]
            return lambda: fn(ptr, rows, log_n, n_thr, f)
        return Peer("FFHT", make, note=f"C kernel from {lib_path}, a C OpenMP row loop "
                    "(benchmarks/_rowloop.c)"), None
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


def _pyfwht_peer():
    try:  # it announces its backend on stdout, from C
        import importlib  # noqa: PLC0415

        _pyfwht = _quiet_call(importlib.import_module, "pyfwht._pyfwht")
    except Exception as exc:
        return None, f"pyfwht: {type(exc).__name__}: {exc}"

    _quiet_call(_pyfwht.fwht_f64_batch, [np.zeros(8)], 8)  # it announces its backend once

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


def oocache_peers():
    """The peers of ``bench_fwht.py --oocache``: randfeat's kernel and API at 1 and 2 threads,
    and the memory floor, a copy of the same bytes into a second batch (``np.copyto`` at 1
    thread; memcpy of two halves by 2 OpenMP threads, ``benchmarks/_rowloop.c``).  Each peer's
    thread count is fixed (``time_case``'s ``n_thr`` is ignored).  Returns (peers, skipped)."""

    def fixed(t):
        return lambda x, log_n, _t, dt: (lambda: _fwht.fwht_rows(x, log_n, t))

    def copy_np(x, log_n, _t, dt):
        dst = aligned_empty(x.shape, x.dtype)
        return lambda: np.copyto(dst, x)

    peers = [Peer("kern-1t", fixed(1), note="randfeat._lib._fwht.fwht_rows(x, log_n, 1)"),
             Peer("api-1t", lambda x, log_n, _t, dt: (
                 lambda: randfeat.fwht(x, out=x, check_finite=False, n_threads=1)),
                 note="randfeat.fwht(x, out=x, check_finite=False, n_threads=1)"),
             Peer("copy-1t", copy_np, note="np.copyto(y, x), y a second aligned batch"),
             Peer("kern-2t", fixed(2), note="fwht_rows(x, log_n, 2)")]
    skipped = []
    try:
        lib = _rowloop()
    except (OSError, subprocess.CalledProcessError) as exc:
        skipped.append(f"copy-2t: cannot compile benchmarks/_rowloop.c ({exc})")
    else:
        def copy_c(t):
            def make(x, log_n, _t, dt):
                dst = aligned_empty(x.shape, x.dtype)
                args = (dst.ctypes.data, x.ctypes.data, x.nbytes, t)
                return lambda dst=dst, x=x: lib.rf_bench_copy(*args)  # keeps dst, x alive
            return make
        peers.append(Peer("copy-2t", copy_c(2), note="memcpy of two halves by 2 OpenMP "
                          "threads (benchmarks/_rowloop.c)"))
        peers.append(Peer("memcpy-1t", copy_c(1), note="the same C copy on 1 thread (check "
                          "that it matches np.copyto)"))
    return peers, skipped


# --------------------------------------------------------------------------- timing

def time_case(peers, dt, log_n, n_thr, batch_bytes, repeats, rng, chunk_bytes=4 << 20):
    """Interleaved timings of every applicable peer.

    Each peer transforms its own batch of ``batch_bytes`` (rows of length 2**log_n) in place,
    in consecutive chunks of about ``chunk_bytes`` that are timed one by one, so a repetition
    streams through the whole batch exactly as one call would, but a chunk during which the
    process was preempted (shared machine) can be discarded.  Returns
    ``{name: (best, per_rep)}`` in ns per vector: ``best`` sums, over the chunks, each chunk's
    fastest time across the repetitions; ``per_rep`` lists each repetition's total.
    """
    d = 1 << log_n
    itemsize = np.dtype(DTYPES[dt]).itemsize
    n_rows = max(4, batch_bytes // (d * itemsize))
    chunk_rows = max(1, chunk_bytes // (d * itemsize))
    active = [p for p in peers if dt in p.dtypes and (p.threaded or n_thr == 1)]
    bufs, runs = {}, {}
    for p in active:
        rows = max(2, n_rows // p.batch_fraction)
        x = aligned_empty((rows, d), DTYPES[dt])
        x[...] = rng.standard_normal((rows, d), dtype=np.float32)
        bufs[p.name] = x
        runs[p.name] = [p.make(x[i:i + chunk_rows], log_n, n_thr, dt)
                        for i in range(0, rows, chunk_rows)]
    rescale = DTYPES[dt](1.0 / np.sqrt(d))
    chunk_times = {p.name: [] for p in active}
    for rep in range(repeats):
        order = active[rep % len(active):] + active[:rep % len(active)]
        for p in order:
            x = bufs[p.name]
            np.multiply(x, rescale, out=x)  # untimed: keep values O(1)
            ts = []
            for run in runs[p.name]:
                t0 = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t0)
            chunk_times[p.name].append(ts)
    out = {}
    for name, reps in chunk_times.items():
        rows = bufs[name].shape[0]
        best = sum(min(col) for col in zip(*reps, strict=True)) / rows * 1e9
        out[name] = (best, [sum(r) / rows * 1e9 for r in reps])
    return out


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


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
