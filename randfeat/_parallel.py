"""Thread helpers shared by the estimators: a BLAS thread limit and an ordered parallel map.

Both serve one rule of the library: the same ``random_state`` gives the same output whatever
``n_threads`` is.  Work is spread over threads only where the arithmetic of every element does not
depend on how it is spread (independent rows, or independent pieces whose results are combined
in a fixed order), and BLAS runs single-threaded inside such regions (OpenBLAS's own threading
changes the rounding of ``syrk``/``potrf`` results with the thread count).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

_BLAS_LIBS = None


class blas_limit:
    """Limit every loaded BLAS to ``n_threads`` threads for the duration of a ``with`` block.

    threadpoolctl finds the libraries once per process; entering the block then costs a couple of
    ctypes calls (nothing is changed when the BLAS already runs with ``n_threads``).  The limit
    is process-wide, as with :func:`threadpoolctl.threadpool_limits`.
    """

    def __init__(self, n_threads):
        global _BLAS_LIBS
        if _BLAS_LIBS is None:
            from threadpoolctl import ThreadpoolController

            _BLAS_LIBS = ThreadpoolController().select(user_api="blas").lib_controllers
        self.n_threads = n_threads
        self.restore = []

    def __enter__(self):
        for lib in _BLAS_LIBS:
            old = lib.num_threads
            if old != self.n_threads:
                lib.set_num_threads(self.n_threads)
                self.restore.append((lib, old))
        return self

    def __exit__(self, *exc):
        for lib, old in self.restore:
            lib.set_num_threads(old)
        self.restore = []
        return False


class OrderedPool:
    """``n_threads`` worker threads whose results come back in submission order.

    Inside its ``with`` block every BLAS runs single-threaded (:class:`blas_limit`), so a
    product computed by a worker has the same bits whatever ``n_threads`` is.
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
        self._blas = blas_limit(1)

    def __enter__(self):
        self._blas.__enter__()
        if self.n_threads > 1:
            self._ex = ThreadPoolExecutor(self.n_threads, thread_name_prefix="randfeat")
        return self

    def __exit__(self, *exc):
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None
        return self._blas.__exit__(*exc)

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
