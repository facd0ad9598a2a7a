"""Fused Fastfood kernel.  Private: use :class:`randfeat.Fastfood`, which validates and allocates.

One call transforms every row of ``X`` through all blocks of the Fastfood matrix

    V_b = scale * diag(S_b) H diag(G_b) Pi_b H diag(B_b),     scale = 1 / (sigma sqrt(d))

(Le, Sarlos & Smola 2013, eq. 7) and writes the trigonometric features straight into the output row:
per row and block, x is copied into a per-thread scratch buffer with the signs B applied (zero
padded to d = 2**log_d), transformed by the in-place FWHT, gathered through the permutation
(``(Pi u)_k = u[P[k]]``) and multiplied by G, transformed again, multiplied by S*scale, then
cos/sin (``mode`` 0), cos(. + offset) (``mode`` 1) or the raw projections (``mode`` 2, for tests).
Scratch buffers (one per thread, allocated by the caller) are reused for every row; a row's result depends on that row
only, so the output is bit-identical for every thread count.
"""
from cython cimport floating
from cython.parallel cimport prange
from libc.string cimport memcpy

from randfeat._lib._fwht cimport fwht_inplace
from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED, omp_get_thread_num

cdef extern from "rf_sincos.h" nogil:
    void rf_double_sincos(const double *x, Py_ssize_t n, double *c, double *s,
                          double mult) noexcept
    void rf_float_sincos(const float *x, Py_ssize_t n, float *c, float *s, float mult) noexcept
    void rf_double_cos_shift(const double *x, const double *b, Py_ssize_t n, double *c,
                             double mult) noexcept
    void rf_float_cos_shift(const float *x, const float *b, Py_ssize_t n, float *c,
                            float mult) noexcept


def openmp_enabled():
    """Whether this extension was compiled with OpenMP."""
    return bool(RANDFEAT_OPENMP_ENABLED)


cdef inline void _sincos(const floating *z, Py_ssize_t n, floating *c, floating *s,
                         floating mult) noexcept nogil:
    if floating is float:
        rf_float_sincos(z, n, c, s, mult)
    else:
        rf_double_sincos(z, n, c, s, mult)


cdef inline void _cos_shift(const floating *z, const floating *b, Py_ssize_t n, floating *c,
                            floating mult) noexcept nogil:
    if floating is float:
        rf_float_cos_shift(z, b, n, c, mult)
    else:
        rf_double_cos_shift(z, b, n, c, mult)


cdef void _row(const floating *x, Py_ssize_t d_in, int log_d,
               const signed char *B, const int *P, const floating *G, const floating *S,
               const floating *offsets, floating scale, floating mult,
               Py_ssize_t n_blocks, Py_ssize_t n_freq, int mode,
               floating *out, floating *u, floating *w) noexcept nogil:
    """All blocks of one row: u, w are scratch buffers of d = 2**log_d values."""
    cdef Py_ssize_t d = (<Py_ssize_t>1) << log_d
    cdef Py_ssize_t b, k, m, start
    cdef const signed char *Bb
    cdef const int *Pb
    cdef const floating *Gb
    cdef const floating *Sb
    for b in range(n_blocks):
        start = b * d
        m = n_freq - start
        if m > d:
            m = d
        Bb = B + start
        Pb = P + start
        Gb = G + start
        Sb = S + start
        # u = B x (zero padded), then u = H u
        for k in range(d_in):
            u[k] = x[k] if Bb[k] > 0 else -x[k]
        for k in range(d_in, d):
            u[k] = 0
        fwht_inplace(u, log_d)
        # w = G Pi u, then w = H w
        for k in range(d):
            w[k] = u[Pb[k]] * Gb[k]
        fwht_inplace(w, log_d)
        # z = scale * S w (first m rows of this block)
        for k in range(m):
            w[k] = w[k] * Sb[k] * scale
        if mode == 0:
            _sincos(w, m, out + start, out + n_freq + start, mult)
        elif mode == 1:
            _cos_shift(w, offsets + start, m, out + start, mult)
        else:
            memcpy(out + start, w, m * sizeof(floating))


def fastfood_transform(const floating[:, ::1] X, const signed char[:, ::1] B,
                       const int[:, ::1] P, const floating[:, ::1] G,
                       const floating[:, ::1] S, const floating[::1] offsets,
                       floating[:, ::1] out, floating[:, ::1] scratch, int log_d, double scale, double mult,
                       Py_ssize_t n_freq, int mode, int n_threads):
    """Fill ``out`` with the Fastfood features of every row of ``X`` (rows in parallel).

    Shapes (checked by the caller): X (n, d_in) with d_in <= d = 2**log_d; B, P, G, S
    (n_blocks, d) with n_blocks * d >= n_freq; offsets (n_freq,) (mode 1; ignored otherwise);
    out (n, 2 * n_freq) for mode 0, (n, n_freq) for modes 1 and 2; scratch
    (n_threads, 2 * d), one row per thread.  ``mult`` multiplies every
    trigonometric feature (1/sqrt(n_freq) or sqrt(2/n_freq)).
    """
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1]
    cdef Py_ssize_t d = (<Py_ssize_t>1) << log_d
    cdef Py_ssize_t n_blocks = B.shape[0]
    cdef Py_ssize_t i
    cdef int n_thr = n_threads
    cdef floating sc = <floating>scale
    cdef floating mu = <floating>mult
    cdef int t
    cdef const floating *off = &offsets[0] if offsets.shape[0] > 0 else NULL
    if n == 0 or n_freq == 0:
        return
    if n_thr > n:
        n_thr = <int>n
    if n_thr > scratch.shape[0]:
        n_thr = <int>scratch.shape[0]
    if n_thr < 1:
        n_thr = 1
    if n_thr == 1:
        with nogil:
            for i in range(n):
                _row(&X[i, 0], d_in, log_d, &B[0, 0], &P[0, 0], &G[0, 0], &S[0, 0], off,
                     sc, mu, n_blocks, n_freq, mode, &out[i, 0], &scratch[0, 0],
                     &scratch[0, d])
        return
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            # this thread's scratch row (allocated once by the caller, reused for every row)
            t = omp_get_thread_num()
            _row(&X[i, 0], d_in, log_d, &B[0, 0], &P[0, 0], &G[0, 0], &S[0, 0], off,
                 sc, mu, n_blocks, n_freq, mode, &out[i, 0], &scratch[t, 0], &scratch[t, d])
