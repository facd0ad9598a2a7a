"""Thread helpers shared by the estimators: the BLAS's thread count (read, never changed) and an
ordered parallel map.

Both serve one rule of the library: the same ``random_state`` gives the same output whatever
``n_threads`` is.  Work is spread over threads only where the arithmetic of every element does not
depend on how it is spread (independent rows, or independent pieces whose results are combined
in a fixed order).  ``n_threads`` governs randfeat's own kernels; the BLAS's threads belong to
the user, who sets them with :func:`threadpoolctl.threadpool_limits` or ``OPENBLAS_NUM_THREADS``
(as in scikit-learn): randfeat reads them (:func:`blas_threads`) and never changes them.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor

_BLAS_LIBS = None
_BLAS_CONTROLLERS = None
_LOCK = threading.Lock()
_HOLDERS = 0      # ``with blas_limit(1)`` blocks running now, in any thread
_SAVED = []       # (library, its thread count) saved by the first of them


def blas_threads():
    """The largest thread count of the BLAS libraries loaded in this process, as
    :mod:`threadpoolctl` reports it: 1 when every BLAS is single-threaded (the user called
    ``threadpool_limits(1)``, set ``OPENBLAS_NUM_THREADS=1``, ...), 1 also when no BLAS is
    found.  Reads only (a few ctypes calls); the libraries are found once per process, on the
    first call (randfeat's compiled modules have loaded SciPy's BLAS by then).

    Examples
    --------
    >>> from threadpoolctl import threadpool_limits
    >>> from randfeat._parallel import blas_threads
    >>> with threadpool_limits(limits=1, user_api="blas"):
    ...     blas_threads()
    1
    """
    global _BLAS_CONTROLLERS
    if _BLAS_CONTROLLERS is None:
        from threadpoolctl import ThreadpoolController

        with _LOCK:
            if _BLAS_CONTROLLERS is None:
                _BLAS_CONTROLLERS = list(
                    ThreadpoolController().select(user_api="blas").lib_controllers)
    counts = [lib.num_threads for lib in _BLAS_CONTROLLERS]
    return max((int(c) for c in counts if c is not None), default=1)


class blas_limit:
    """DEPRECATED, internal: do not use in new code (randfeat no longer changes the BLAS's
    thread count; :func:`blas_threads` reads it).  Kept only until the last callers are gone;
    it will be deleted.

    Run every loaded BLAS single-threaded while at least one ``with blas_limit(1)`` block is
    running, in any Python thread.

    OpenBLAS threads inside a gemm even when it is called from an OpenMP worker, and its own
    threading changes the bits of a product (it cuts the output differently), so randfeat's
    kernels need a single-threaded BLAS.  No BLAS that scipy ships offers a per-thread setting
    (OpenBLAS's ``openblas_set_num_threads_local`` sets the process-wide count), so the count
    is process-wide, as with :func:`threadpoolctl.threadpool_limits`.  The blocks are
    reference-counted under a lock: the first to enter saves the counts and sets 1, the last
    to leave restores them, so several threads transforming at once never see a BLAS that
    another thread's exit made multi-threaded again (which changed their output bits), and the
    process gets its BLAS threads back when no randfeat call is running.  (Changing the BLAS
    thread count from another thread while a block runs is overridden at its end.)  Works from
    any Python thread (see ``_blas_setters``).  The libraries are found once per process;
    entering costs a lock and, for the first block only, a couple of ctypes calls.
    """

    def __init__(self, n_threads=1):
        if n_threads != 1:
            raise ValueError(f"blas_limit supports n_threads=1 only, got {n_threads!r}")
        self.n_threads = 1
        self._entered = 0

    def __enter__(self):
        global _BLAS_LIBS, _HOLDERS
        with _LOCK:
            if _BLAS_LIBS is None:
                _BLAS_LIBS = _blas_setters()
            if _HOLDERS == 0:
                for get, set_ in _BLAS_LIBS:
                    old = get()
                    if old != 1:
                        set_(1)
                        _SAVED.append((set_, old))
            _HOLDERS += 1
            self._entered += 1
        return self

    def __exit__(self, *exc):
        global _HOLDERS
        with _LOCK:
            if self._entered:
                self._entered -= 1
                _HOLDERS -= 1
                if _HOLDERS == 0:
                    for set_, old in reversed(_SAVED):
                        set_(old)
                    _SAVED.clear()
        return False


def _blas_setters():
    """(get, set) thread-count functions of every loaded BLAS.

    threadpoolctl finds the libraries.  For OpenBLAS with its own (pthreads) thread pool we call
    ``openblas_get/set_num_threads`` ourselves: threadpoolctl (>= 3.6) lets only the first
    Python thread that set a limit change it and silently ignores the others, so a transform
    run from a worker thread got a multi-threaded BLAS (and other bits).  Other BLAS (MKL, BLIS,
    OpenBLAS on OpenMP, whose limit is per thread) go through threadpoolctl."""
    import ctypes

    from threadpoolctl import ThreadpoolController

    out = []
    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        fns = None
        if lib.internal_api == "openblas" and getattr(lib, "threading_layer", "") != "openmp":
            dll = ctypes.CDLL(lib.filepath, mode=getattr(ctypes, "RTLD_NOLOAD", 0)
                              | ctypes.RTLD_LOCAL)
            for pre in ("", "scipy_"):
                for suf in ("", "64_", "_64"):
                    g = getattr(dll, f"{pre}openblas_get_num_threads{suf}", None)
                    st = getattr(dll, f"{pre}openblas_set_num_threads{suf}", None)
                    if g is not None and st is not None and fns is None:
                        g.restype, g.argtypes = ctypes.c_int, []
                        st.restype, st.argtypes = None, [ctypes.c_int]
                        fns = (g, st)
        if fns is None:
            fns = (lambda lib=lib: lib.num_threads, lib.set_num_threads)
        out.append(fns)
    return out


class OrderedPool:
    """``n_threads`` worker threads whose results come back in submission order.

    The BLAS keeps the thread count the process gives it (this pool never changes it): a
    worker's BLAS call has the same bits whatever ``n_threads`` is only if its shape does not
    depend on ``n_threads``.
    ``map(fn, items)`` yields ``fn(item)`` for every item *in the order of items*, keeping at
    most ``n_threads + 1`` results alive (so a caller summing large per-item results holds a
    bounded number of them).  Combining the results in that fixed order makes a reduction
    bit-identical for every thread count.  The workers run ``fn`` under the caller's
    scikit-learn configuration (which is per thread).  With ``n_threads == 1`` everything runs in
    the calling thread.  ``fn`` must release the GIL for the work to overlap (NumPy/BLAS calls and
    randfeat's kernels do).
    """

    def __init__(self, n_threads):
        self.n_threads = max(1, int(n_threads))
        self._ex = None

    def __enter__(self):
        if self.n_threads > 1:
            self._ex = ThreadPoolExecutor(self.n_threads, thread_name_prefix="randfeat")
        return self

    def __exit__(self, *exc):
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None
        return False

    def map(self, fn, items):
        if self._ex is None:
            for item in items:
                yield fn(item)
            return
        from sklearn import config_context, get_config

        cfg = get_config()

        def run(item):
            with config_context(**cfg):
                return fn(item)

        it = iter(items)
        pending = deque()
        for item in it:
            pending.append(self._ex.submit(run, item))
            if len(pending) >= self.n_threads:
                break
        while pending:
            result = pending.popleft().result()
            for item in it:
                pending.append(self._ex.submit(run, item))
                break
            yield result
