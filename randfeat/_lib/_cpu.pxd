# The compiled core of randfeat: the one extension that owns the C kernels (src/fwht.c,
# src/rff_trig.c, src/fastfood_block.c) and their one SIMD dispatcher (src/rf_isa.c).  The other
# extensions (_fwht, _fourier, _fastfood) link no C source; they call these functions, whose
# pointers Cython fetches from this module when they are imported (one indirect call per row or
# block).  So ``set_isa`` reaches every kernel, and each C source is compiled once.
from cython cimport floating

# FWHT (src/fwht.h): 0, or -1 when log_n is outside [0, 30]
cdef int fwht_float(float *x, int log_n) noexcept nogil
cdef int fwht_double(double *x, int log_n) noexcept nogil
# out of place (src NULL: in place), scaled (flags & FWHT_SCALE) and/or checked for NaN/Inf
# (flags & FWHT_CHECK): -1 refused, 1 non-finite result (when checked), else 0
cdef enum:
    FWHT_SCALE = 1
    FWHT_CHECK = 2
cdef int fwht_ex_float(float *x, const float *src, int log_n, float s, int flags) noexcept nogil
cdef int fwht_ex_double(double *x, const double *src, int log_n, double s,
                        int flags) noexcept nogil

# RFF trigonometric parts (src/rff_trig.h): 1 when a projection was not finite, else 0
cdef int rff_paired_split_float(float *c, float *s, Py_ssize_t m, float scale) noexcept nogil
cdef int rff_paired_split_double(double *c, double *s, Py_ssize_t m, double scale) noexcept nogil
cdef int rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept nogil
cdef int rff_phase_double(double *row, const double *b, Py_ssize_t m,
                          double scale) noexcept nogil

# Fastfood passes (src/fastfood_block.h)
cdef void ff_signs_float(float *u, const float *x, const unsigned char *bits,
                         Py_ssize_t n) noexcept nogil
cdef void ff_signs_double(double *u, const double *x, const unsigned char *bits,
                          Py_ssize_t n) noexcept nogil
cdef void ff_gather_float(float *w, const float *u, const int *P, const float *G,
                          Py_ssize_t d) noexcept nogil
cdef void ff_gather_double(double *w, const double *u, const int *P, const double *G,
                           Py_ssize_t d) noexcept nogil
cdef void ff_scale_float(float *out, const float *w, const float *S, float scale,
                         Py_ssize_t m) noexcept nogil
cdef void ff_scale_double(double *out, const double *w, const double *S, double scale,
                          Py_ssize_t m) noexcept nogil


cdef inline int fwht_inplace(floating *x, int log_n) noexcept nogil:
    """Unnormalised in-place FWHT of the 2**log_n contiguous values at x (0, or -1: refused)."""
    if floating is float:
        return fwht_float(x, log_n)
    else:
        return fwht_double(x, log_n)


cdef inline int paired_row(floating *row, Py_ssize_t m, floating scale) noexcept nogil:
    """row[:m] = scale cos(row[:m]), row[m:2m] = scale sin(...)."""
    if floating is float:
        return rff_paired_split_float(row, row + m, m, scale)
    else:
        return rff_paired_split_double(row, row + m, m, scale)


cdef inline int paired_split(floating *c, floating *sn, Py_ssize_t m,
                             floating scale) noexcept nogil:
    """c[:m] = scale cos(c[:m]), sn[:m] = scale sin(...) (sn anywhere outside c[:m])."""
    if floating is float:
        return rff_paired_split_float(c, sn, m, scale)
    else:
        return rff_paired_split_double(c, sn, m, scale)


cdef inline int phase_row(floating *row, const floating *b, Py_ssize_t m,
                          floating scale) noexcept nogil:
    """row[:m] = scale cos(row[:m] + b[:m])."""
    if floating is float:
        return rff_phase_float(row, b, m, scale)
    else:
        return rff_phase_double(row, b, m, scale)
