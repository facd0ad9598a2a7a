"""Fused Fastfood kernel.  Private: use :class:`randfeat.Fastfood`, which validates and allocates.

One call transforms every row of ``X`` through all blocks of the Fastfood matrix

    V_b = scale * diag(S_b) H diag(G_b) Pi_b H diag(B_b),     scale = 1 / (sigma sqrt(d))

(Le, Sarlos & Smola 2013, eq. 7) and writes the features straight into the output row: per row
and block, x is copied into a per-thread scratch buffer with the signs B applied (zero padded to
d = 2**log_d), transformed by the in-place FWHT, gathered through the permutation
(``(Pi u)_k = u[P[k]]``) and multiplied by G, transformed again, multiplied by S*scale and stored
in the output row; once all blocks are done the row is turned in place into
[cos, sin] * mult (``mode`` 0) or cos(. + offset) * mult (``mode`` 1) by the vectorised
trigonometric kernels of ``src/rff_trig.c`` (shared with RandomFourierFeatures), or left as the
raw projections V x (``mode`` 2, used by tests).

Loop order is row-outer (each thread streams its rows through all blocks): the per-row working
set -- parameters n*(1 + 4 + 2*sizeof(floating)) bytes (<= 0.85 MB at n = 65536 in float32), two
d-long scratch vectors and the output row -- stays in this CPU's 1 MB L2 / shared L3, and every
output value is written once, so a block-outer tiling was not needed at the benchmark sizes.
Scratch buffers (one per thread, allocated by the caller) are reused for every row; a row's
result depends on that row only, so the output is bit-identical for every thread count.
"""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._fwht cimport fwht_inplace
from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED, omp_get_thread_num

cdef extern from "rff_trig.h" nogil:
    void rf_rff_paired_double(double *row, Py_ssize_t m, double scale) noexcept
    void rf_rff_paired_float(float *row, Py_ssize_t m, float scale) noexcept
    void rf_rff_phase_double(double *row, const double *b, Py_ssize_t m, double scale) noexcept
    void rf_rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept


def openmp_enabled():
    """Whether this extension was compiled with OpenMP."""
    return bool(RANDFEAT_OPENMP_ENABLED)


cdef inline void _paired(floating *row, Py_ssize_t m, floating mult) noexcept nogil:
    if floating is float:
        rf_rff_paired_float(row, m, mult)
    else:
        rf_rff_paired_double(row, m, mult)


cdef inline void _phase(floating *row, const floating *b, Py_ssize_t m,
                        floating mult) noexcept nogil:
    if floating is float:
        rf_rff_phase_float(row, b, m, mult)
    else:
        rf_rff_phase_double(row, b, m, mult)


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
        # z = scale * S w (first m rows of this block) straight into the output row
        for k in range(m):
            out[start + k] = w[k] * Sb[k] * scale
    # trigonometric part in place on the row (vectorised, shared with RandomFourierFeatures)
    if mode == 0:
        _paired(out, n_freq, mult)
    elif mode == 1:
        _phase(out, offsets, n_freq, mult)


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
