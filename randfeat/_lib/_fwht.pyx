"""Compiled FWHT loops.  Private: use :func:`randfeat.fwht`, which validates and allocates."""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._cpu cimport FWHT_CHECK, FWHT_SCALE, fwht_ex_double, fwht_ex_float
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)

from randfeat._lib._cpu import kernel_isas, openmp_enabled, set_isa  # noqa: F401

cdef enum:
    MIN_WORK = 16384  # smallest number of values worth a thread of its own (~10 µs of work)
    MAX_LOG_N = 30    # the kernel's largest length is 2**30 (src/fwht.c returns -1 above)



def isa():
    """Name of the FWHT's SIMD code path ("scalar", "avx2", "avx512"); ``set_isa`` (from
    ``_cpu``, the one dispatcher of every kernel) changes it."""
    return kernel_isas()["fwht"]


cdef inline int _row(floating *x, const floating *src, int log_n, floating scale,
                     int flags) noexcept nogil:
    """Transform one row (read from ``src``: ``x`` itself, or a disjoint row) into ``x``, the
    scale and the finiteness check fused into the last pass (``src/fwht.h``); return -1 when the
    kernel refused it (its error code), 1 if the result holds a non-finite value (when checked),
    else 0."""
    if floating is float:
        return fwht_ex_float(x, src, log_n, scale, flags)
    else:
        return fwht_ex_double(x, src, log_n, scale, flags)


def fwht_rows(floating[:, ::1] x, int log_n, int n_threads, double scale=1.0,
              bint check_finite=False, const floating[:, ::1] src=None):
    """Transform every row of the C-contiguous 2-D array ``x`` in place, rows in parallel; or,
    with ``src`` (of ``x``'s shape and dtype, C-contiguous, sharing no memory with ``x``), write
    the transform of ``src``'s rows to ``x`` (the first pass reads ``src``: no separate copy).

    Each row is multiplied by ``scale`` when it is not 1.  Returns the number of rows whose result
    holds NaN or infinity when ``check_finite`` (else 0); the check is fused into the pass that
    writes the result.  A row's result depends on that row only,
    so the output is bit-identical for every thread count.  Raises ValueError when the rows are
    not 2**log_n long or longer than 2**30 (the kernel's limit), RuntimeError if the kernel still
    refuses a row, KeyboardInterrupt on Ctrl-C (within about a millisecond of work; the rows
    already transformed stay transformed).
    """
    cdef Py_ssize_t i, n_rows = x.shape[0], n = x.shape[1]
    cdef Py_ssize_t n_bad = 0, n_err = 0
    cdef floating s = <floating>scale
    cdef int flags = (FWHT_SCALE if scale != 1.0 else 0) | (FWHT_CHECK if check_finite else 0)
    cdef const floating *sp   # the rows read: src's, or x's own (in place)
    cdef int nt, r
    cdef Interrupt intr
    check_threads(n_threads)
    if log_n < 0 or log_n > MAX_LOG_N:
        raise ValueError(f"fwht: vectors of length 2**{log_n} are not supported; the largest "
                         f"length is 2**{MAX_LOG_N}")
    if n != (<Py_ssize_t>1) << log_n:
        raise ValueError(f"fwht_rows: rows have {n} values, expected 2**{log_n}")
    if src is not None:
        if src.shape[0] != n_rows or src.shape[1] != n:
            raise ValueError(f"fwht_rows: src has shape ({src.shape[0]}, {src.shape[1]}), "
                             f"expected ({n_rows}, {n})")
    if n_rows == 0 or n == 0:
        return 0
    sp = &x[0, 0]
    if src is not None:
        sp = &src[0, 0]
        if <const void *>sp < <const void *>(&x[0, 0] + n_rows * n) and \
                <const void *>(&x[0, 0]) < <const void *>(sp + n_rows * n):
            raise ValueError("fwht_rows: src and x overlap; pass disjoint arrays (or no src "
                             "for in place)")
    # At least MIN_WORK values per thread: starting a thread costs more than a smaller share of
    # work (results do not depend on the thread count, so this changes only the speed).
    nt = effective_threads(n_threads, min(n_rows, (n_rows * n) // MIN_WORK), n_rows * n,
                           MIN_WORK)
    ensure_threads(nt)
    interrupt_init(&intr, n * (log_n + 1))
    with nogil:
        if nt == 1:
            for i in range(n_rows):
                if interrupted(&intr):
                    break
                r = _row(&x[i, 0], sp + i * n, log_n, s, flags)
                if r < 0:
                    n_err = n_err + 1
                else:
                    n_bad = n_bad + r
        else:
            for i in prange(n_rows, schedule="static", num_threads=nt):
                if interrupted(&intr):
                    continue
                r = _row(&x[i, 0], sp + i * n, log_n, s, flags)
                if r < 0:
                    n_err += 1
                else:
                    n_bad += r
    raise_if_interrupted(&intr)
    if n_err:
        raise RuntimeError(f"fwht: the compiled kernel refused {n_err} of {n_rows} rows of "
                           f"length 2**{log_n}")
    return n_bad
