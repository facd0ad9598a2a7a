"""Compiled trigonometric part of random Fourier features.

Private: use :class:`randfeat.RandomFourierFeatures`, which validates, draws the random
parameters and computes the projection ``X @ W.T`` through BLAS.  These loops only apply the
fused cos/sin (or phase-shifted cos) to that projection, in place, rows spread over threads;
each row's result depends on that row only, so the output is bit-identical for any thread count.
The per-row work is in ``src/rff_trig.c`` (vectorised sin/cos, chosen at run time for the CPU).
"""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED

cdef extern from "rff_trig.h" nogil:
    void rf_rff_paired_double(double *row, Py_ssize_t m, double scale) noexcept
    void rf_rff_paired_float(float *row, Py_ssize_t m, float scale) noexcept
    void rf_rff_phase_double(double *row, const double *b, Py_ssize_t m, double scale) noexcept
    void rf_rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept
    const char *rf_rff_trig_isa() noexcept


def openmp_enabled():
    """Whether this extension was compiled with OpenMP."""
    return bool(RANDFEAT_OPENMP_ENABLED)


def isa():
    """Name of the SIMD code path of the sin/cos loops selected at run time for this CPU."""
    return rf_rff_trig_isa().decode("ascii")


cdef inline void _paired_row(floating *row, Py_ssize_t m, floating scale) noexcept nogil:
    if floating is float:
        rf_rff_paired_float(row, m, scale)
    else:
        rf_rff_paired_double(row, m, scale)


cdef inline void _phase_row(floating *row, const floating *b, Py_ssize_t m,
                            floating scale) noexcept nogil:
    if floating is float:
        rf_rff_phase_float(row, b, m, scale)
    else:
        rf_rff_phase_double(row, b, m, scale)


cdef inline int _threads(int n_threads, Py_ssize_t n_rows, Py_ssize_t work) noexcept nogil:
    """Never more threads than rows; one thread when the whole job is tiny."""
    if n_threads > n_rows:
        n_threads = <int>n_rows
    if work < 8192:
        n_threads = 1
    return n_threads if n_threads > 1 else 1


def paired_inplace(floating[:, ::1] buf, Py_ssize_t m, double scale, int n_threads):
    """``buf[:, :m]`` holds the projection; write ``scale*cos`` there and ``scale*sin`` into
    ``buf[:, m:2m]``.  ``buf`` must have exactly ``2m`` columns."""
    cdef Py_ssize_t i, n_rows = buf.shape[0]
    cdef floating s = <floating>scale
    cdef int nt
    if buf.shape[1] != 2 * m:
        raise ValueError(f"paired_inplace: buffer has {buf.shape[1]} columns, expected {2 * m}")
    if n_rows == 0 or m == 0:
        return
    nt = _threads(n_threads, n_rows, n_rows * m)
    with nogil:
        if nt == 1:
            for i in range(n_rows):
                _paired_row(&buf[i, 0], m, s)
        else:
            for i in prange(n_rows, schedule='static', num_threads=nt):
                _paired_row(&buf[i, 0], m, s)


def phase_inplace(floating[:, ::1] buf, const floating[::1] offset, double scale, int n_threads):
    """``buf[i, j] = scale * cos(buf[i, j] + offset[j])`` in place."""
    cdef Py_ssize_t i, n_rows = buf.shape[0], m = buf.shape[1]
    cdef floating s = <floating>scale
    cdef int nt
    if offset.shape[0] != m:
        raise ValueError(f"phase_inplace: {offset.shape[0]} offsets for {m} columns")
    if n_rows == 0 or m == 0:
        return
    nt = _threads(n_threads, n_rows, n_rows * m)
    with nogil:
        if nt == 1:
            for i in range(n_rows):
                _phase_row(&buf[i, 0], &offset[0], m, s)
        else:
            for i in prange(n_rows, schedule='static', num_threads=nt):
                _phase_row(&buf[i, 0], &offset[0], m, s)
