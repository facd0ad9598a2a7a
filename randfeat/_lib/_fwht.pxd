# C-level FWHT, shared by every Cython module that needs it (e.g. _fastfood).
cdef extern from "fwht.h" nogil:
    int rf_fwht_float(float *x, int log_n) noexcept
    int rf_fwht_double(double *x, int log_n) noexcept
    const char *rf_fwht_isa() noexcept

from cython cimport floating

cdef inline int fwht_inplace(floating *x, int log_n) noexcept nogil:
    """Unnormalised in-place FWHT of the 2**log_n contiguous values at x."""
    if floating is float:
        return rf_fwht_float(x, log_n)
    else:
        return rf_fwht_double(x, log_n)
