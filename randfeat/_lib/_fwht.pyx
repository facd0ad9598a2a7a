"""Compiled FWHT loops.  Private: use :func:`randfeat.fwht`, which validates and allocates."""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._cpu cimport (FWHT_SCALE, FWHT_STREAM, all_finite_double, all_finite_float,
                                 fwht_ex_double, fwht_ex_float)
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)

from randfeat._lib._cpu import kernel_isas, openmp_enabled, set_isa  # noqa: F401

cdef enum:
    MIN_WORK = 16384  # smallest number of values worth a thread of its own (~10 µs of work)
    MAX_LOG_N = 30    # the kernel's largest length is 2**30 (src/fwht.c returns -1 above)
    # A batch of at least this many bytes is written by streaming (non-temporal) stores: it
    # cannot stay in the cache (32 MiB of L3 on the machine of benchmarks/README.md), so the
    # result goes to memory without evicting the rows still to be read.
    STREAM_MIN_BYTES = 16 << 20
    AUTO = -1



def isa():
    """Name of the FWHT's SIMD code path ("scalar", "avx2", "avx512"); ``set_isa`` (from
    ``_cpu``, the one dispatcher of every kernel) changes it."""
    return kernel_isas()["fwht"]


cdef inline int _row(floating *x, int log_n, Py_ssize_t n, floating scale,
                     int flags, bint check) noexcept nogil:
    """Transform one row (flags: FWHT_SCALE fuses the scale into the last pass; FWHT_STREAM, a
    memory hint, changes no value); return -1 when the kernel refused it (its error code), 1 if the
    result holds a non-finite value (when checked), else 0."""
    cdef int rc
    if floating is float:
        rc = fwht_ex_float(x, log_n, scale, flags)
    else:
        rc = fwht_ex_double(x, log_n, scale, flags)
    if rc != 0:
        return -1
    if check:
        if floating is float:
            return all_finite_float(x, n) == 0
        else:
            return all_finite_double(x, n) == 0
    return 0


def fwht_rows(floating[:, ::1] x, int log_n, int n_threads, double scale=1.0,
              bint check_finite=False, int hints=AUTO):
    """Transform every row of the C-contiguous 2-D array ``x`` in place, rows in parallel.

    Each row is multiplied by ``scale`` when it is not 1.  ``hints`` picks the kernel's memory
    hint, which changes no value: -1 (auto: streaming stores for a batch of at least 16 MiB
    when ``check_finite`` is off), 0 (none) or 4 (streaming stores); the benchmark compares
    them.  Returns the number of rows whose result
    holds NaN or infinity when ``check_finite`` (else 0).  A row's result depends on that row only,
    so the output is bit-identical for every thread count.  Raises ValueError when the rows are
    not 2**log_n long or longer than 2**30 (the kernel's limit), RuntimeError if the kernel still
    refuses a row, KeyboardInterrupt on Ctrl-C (within about a millisecond of work; the rows
    already transformed stay transformed).
    """
    cdef Py_ssize_t i, n_rows = x.shape[0], n = x.shape[1]
    cdef Py_ssize_t n_bad = 0, n_err = 0
    cdef floating s = <floating>scale
    cdef int flags = FWHT_SCALE if scale != 1.0 else 0
    cdef int nt, r
    cdef Interrupt intr
    check_threads(n_threads)
    if log_n < 0 or log_n > MAX_LOG_N:
        raise ValueError(f"fwht: vectors of length 2**{log_n} are not supported; the largest "
                         f"length is 2**{MAX_LOG_N}")
    if n != (<Py_ssize_t>1) << log_n:
        raise ValueError(f"fwht_rows: rows have {n} values, expected 2**{log_n}")
    if n_rows == 0 or n == 0:
        return 0
    if hints == AUTO:
        # (not when each row is checked right after: the check would read it back from memory)
        if n_rows * n * <Py_ssize_t>sizeof(floating) >= STREAM_MIN_BYTES and not check_finite:
            flags |= FWHT_STREAM
    elif hints == 0 or hints == FWHT_STREAM:
        flags |= hints
    else:
        raise ValueError(f"fwht_rows: hints must be -1 (auto), 0 or 4, got {hints}")
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
                r = _row(&x[i, 0], log_n, n, s, flags, check_finite)
                if r < 0:
                    n_err = n_err + 1
                else:
                    n_bad = n_bad + r
        else:
            for i in prange(n_rows, schedule="static", num_threads=nt):
                if interrupted(&intr):
                    continue
                r = _row(&x[i, 0], log_n, n, s, flags, check_finite)
                if r < 0:
                    n_err += 1
                else:
                    n_bad += r
    raise_if_interrupted(&intr)
    if n_err:
        raise RuntimeError(f"fwht: the compiled kernel refused {n_err} of {n_rows} rows of "
                           f"length 2**{log_n}")
    return n_bad
