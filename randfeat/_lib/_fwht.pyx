"""Compiled FWHT loops.  Private: use :func:`randfeat.fwht`, which validates and allocates."""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED

cdef extern from "fwht.h" nogil:
    int rf_all_finite_float(const float *x, Py_ssize_t n) noexcept
    int rf_all_finite_double(const double *x, Py_ssize_t n) noexcept


def openmp_enabled():
    """Whether this extension was compiled with OpenMP."""
    return bool(RANDFEAT_OPENMP_ENABLED)


def isa():
    """Name of the SIMD code path selected at run time for this CPU."""
    return rf_fwht_isa().decode("ascii")


cdef inline int _row(floating *x, int log_n, Py_ssize_t n, floating scale,
                     bint do_scale, bint check) noexcept nogil:
    """Transform one row; return 1 if the result holds a non-finite value (when checked)."""
    cdef Py_ssize_t j
    fwht_inplace(x, log_n)
    if do_scale:
        for j in range(n):
            x[j] = x[j] * scale
    if check:
        if floating is float:
            return rf_all_finite_float(x, n) == 0
        else:
            return rf_all_finite_double(x, n) == 0
    return 0


def fwht_rows(floating[:, ::1] x, int log_n, int n_threads, double scale=1.0,
              bint check_finite=False):
    """Transform every row of the C-contiguous 2-D array ``x`` in place, rows in parallel.

    Each row is multiplied by ``scale`` when it is not 1.  Returns the number of rows whose result
    holds NaN or infinity when ``check_finite`` (else 0).  A row's result depends on that row only,
    so the output is bit-identical for every thread count.
    """
    cdef Py_ssize_t i, n_rows = x.shape[0], n = x.shape[1]
    cdef int n_thr = n_threads
    cdef Py_ssize_t n_bad = 0
    cdef floating s = <floating>scale
    cdef bint do_scale = scale != 1.0
    if n_rows == 0 or n == 0:
        return 0
    if n_thr > n_rows:
        n_thr = <int>n_rows
    if n_thr < 1:
        n_thr = 1
    with nogil:
        if n_thr == 1:
            for i in range(n_rows):
                n_bad = n_bad + _row(&x[i, 0], log_n, n, s, do_scale, check_finite)
        else:
            for i in prange(n_rows, schedule="static", num_threads=n_thr):
                n_bad += _row(&x[i, 0], log_n, n, s, do_scale, check_finite)
    return n_bad
