"""The BLAS's thread count, read and never changed.

It serves one rule of the library: the same ``random_state`` gives the same output whatever
``n_threads`` is.  Work is spread over threads only where the arithmetic of every element does not
depend on how it is spread (independent rows, or independent pieces whose results are combined
in a fixed order).  ``n_threads`` governs randfeat's own kernels; the BLAS's threads belong to
the user, who sets them with :func:`threadpoolctl.threadpool_limits` or ``OPENBLAS_NUM_THREADS``
(as in scikit-learn): randfeat reads them (:func:`blas_threads`) and never changes them.
"""

from __future__ import annotations

import threading

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
