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

_BLAS_CONTROLLERS = None
_LOCK = threading.Lock()


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
