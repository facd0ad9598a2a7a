# C-level trigonometric parts of random Fourier features (src/rff_trig.c), shared by the Cython
# modules that need them (_fourier, _fastfood; each lists src/rff_trig.c in setup.py).
# The row functions return 1 when the row held a non-finite projection (see rff_trig.h); the
# callers count such rows so that the Python layer can raise instead of returning NaN features.
cdef extern from "rff_trig.h" nogil:
    int rf_rff_paired_double(double *row, Py_ssize_t m, double scale) noexcept
    int rf_rff_paired_float(float *row, Py_ssize_t m, float scale) noexcept
    int rf_rff_paired_split_double(double *c, double *s, Py_ssize_t m, double scale) noexcept
    int rf_rff_paired_split_float(float *c, float *s, Py_ssize_t m, float scale) noexcept
    int rf_rff_phase_double(double *row, const double *b, Py_ssize_t m, double scale) noexcept
    int rf_rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept
    const char *rf_rff_trig_isa() noexcept

from cython cimport floating


cdef inline int paired_row(floating *row, Py_ssize_t m, floating scale) noexcept nogil:
    """row[:m] = scale cos(row[:m]), row[m:2m] = scale sin(...)."""
    if floating is float:
        return rf_rff_paired_float(row, m, scale)
    else:
        return rf_rff_paired_double(row, m, scale)


cdef inline int paired_split(floating *c, floating *sn, Py_ssize_t m,
                             floating scale) noexcept nogil:
    """c[:m] = scale cos(c[:m]), sn[:m] = scale sin(...) (sn anywhere outside c[:m])."""
    if floating is float:
        return rf_rff_paired_split_float(c, sn, m, scale)
    else:
        return rf_rff_paired_split_double(c, sn, m, scale)


cdef inline int phase_row(floating *row, const floating *b, Py_ssize_t m,
                          floating scale) noexcept nogil:
    """row[:m] = scale cos(row[:m] + b[:m])."""
    if floating is float:
        return rf_rff_phase_float(row, b, m, scale)
    else:
        return rf_rff_phase_double(row, b, m, scale)
