"""Fused structured orthogonal random features (SORF).  Private: use
:class:`randfeat.StructuredOrthogonalFeatures`, which validates and allocates.

One call transforms every row of ``X`` through all blocks of the SORF matrix (Yu et al.,
NIPS 2016, §4)

    W_b = (sqrt(d) / sigma) Hn D1_b Hn D2_b Hn D3_b = scale * H D1_b H D2_b H D3_b,
    scale = 1 / (sigma d),

(Hn = H / sqrt(d) the normalised Walsh-Hadamard matrix, H the unnormalised one applied by the
in-place FWHT of ``_fwht.pxd``, Di_b diagonals of random signs) and writes the features straight
into the output row: per row and block, x is copied into a per-thread scratch buffer times
``scale`` and D3 (zero padded to d = 2**log_d), transformed by the FWHT, multiplied by D2,
transformed, multiplied by D1, transformed, and its first m values are stored in the output row.
Once all blocks are done the row is turned in place into [cos, sin] * mult (``mode`` 0) or
cos(. + offset) * mult (``mode`` 1) by the trigonometric kernels of ``src/rff_trig.c`` (shared with
RandomFourierFeatures and Fastfood), or left as the projections W x (``mode`` 2, used by tests).

Signs are int8 (+-1), ``signs[b, i, k]`` for D(i+1) of block b; x * (+-1) is exact, and the
scale is applied once, before the transforms.  A row's result depends on that row only and each
thread has its own scratch row, so the output is bit-identical for every thread count.
"""
from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._fwht cimport fwht_inplace
from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED, omp_get_thread_num

from randfeat._lib._rff_trig cimport paired_row, phase_row


def openmp_enabled():
    """Whether this extension was compiled with OpenMP."""
    return bool(RANDFEAT_OPENMP_ENABLED)


cdef inline void _mul_signs(floating *u, const signed char *s, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(d):
        u[k] = u[k] * <floating>s[k]


cdef int _row(const floating *x, Py_ssize_t d_in, int log_d, const signed char *signs,
              const floating *offsets, floating scale, floating mult,
              Py_ssize_t n_blocks, Py_ssize_t n_freq, int mode,
              floating *out, floating *u) noexcept nogil:
    """All blocks of one row; ``u`` is a scratch buffer of d = 2**log_d values, ``signs`` has
    3 d entries per block (D1, D2, D3).  Returns 1 when a projection was not finite."""
    cdef Py_ssize_t d = (<Py_ssize_t>1) << log_d
    cdef Py_ssize_t b, k, m, start
    cdef const signed char *sb
    for b in range(n_blocks):
        start = b * d
        m = n_freq - start
        if m > d:
            m = d
        sb = signs + 3 * start
        # u = scale * D3 x (zero padded), then H D2 H D1 H
        for k in range(d_in):
            u[k] = (x[k] * scale) * <floating>sb[2 * d + k]
        for k in range(d_in, d):
            u[k] = 0
        fwht_inplace(u, log_d)
        _mul_signs(u, sb + d, d)
        fwht_inplace(u, log_d)
        _mul_signs(u, sb, d)
        fwht_inplace(u, log_d)
        for k in range(m):
            out[start + k] = u[k]
    if mode == 0:
        return paired_row(out, n_freq, mult)
    elif mode == 1:
        return phase_row(out, offsets, n_freq, mult)
    return 0


def sorf_transform(const floating[:, ::1] X, const signed char[:, :, ::1] signs,
                   const floating[::1] offsets, floating[:, ::1] out,
                   floating[:, ::1] scratch, int log_d, double scale, double mult,
                   Py_ssize_t n_freq, int mode, int n_threads):
    """Fill ``out`` with the SORF features of every row of ``X`` (rows in parallel).

    Shapes (checked by the caller; re-checked here because reading past them would be out of
    bounds): X (n, d_in), d_in <= d = 2**log_d; signs (n_blocks, 3, d) int8 with
    n_blocks * d >= n_freq; offsets (n_freq,) for mode 1 (ignored otherwise); out
    (n, 2 * n_freq) for mode 0, (n, n_freq) for modes 1 and 2; scratch (n_threads, d).
    ``scale`` = 1/(sigma d) multiplies the projections, ``mult`` every trigonometric feature.
    Returns the number of rows with a non-finite projection (their features are NaN).
    """
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1]
    cdef Py_ssize_t d = (<Py_ssize_t>1) << log_d
    cdef Py_ssize_t n_blocks = signs.shape[0]
    cdef Py_ssize_t i
    if (signs.shape[1] != 3 or signs.shape[2] != d or n_blocks * d < n_freq or d_in > d):
        raise ValueError(
            f"sorf_transform: inconsistent parameter shapes for d={d}, n_freq={n_freq}: signs "
            f"({signs.shape[0]}, {signs.shape[1]}, {signs.shape[2]}), X ({n}, {d_in})")
    if (out.shape[0] != n or out.shape[1] != (2 * n_freq if mode == 0 else n_freq)
            or scratch.shape[1] < d or (mode == 1 and offsets.shape[0] != n_freq)
            or mode < 0 or mode > 2):
        raise ValueError(
            f"sorf_transform: inconsistent buffers for mode={mode}, n_freq={n_freq}, d={d}: "
            f"out ({out.shape[0]}, {out.shape[1]}), scratch ({scratch.shape[0]}, "
            f"{scratch.shape[1]}), offsets ({offsets.shape[0]},), X ({n}, {d_in})")
    cdef int n_thr = n_threads
    cdef floating sc = <floating>scale
    cdef floating mu = <floating>mult
    cdef int t
    cdef Py_ssize_t n_bad = 0
    cdef const floating *off = &offsets[0] if offsets.shape[0] > 0 else NULL
    if n == 0 or n_freq == 0:
        return 0
    if n_thr > n:
        n_thr = <int>n
    if n_thr > scratch.shape[0]:
        n_thr = <int>scratch.shape[0]
    if n_thr < 1:
        n_thr = 1
    if n_thr == 1:
        with nogil:
            for i in range(n):
                n_bad += _row(&X[i, 0], d_in, log_d, &signs[0, 0, 0], off, sc, mu, n_blocks,
                              n_freq, mode, &out[i, 0], &scratch[0, 0])
        return n_bad
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            t = omp_get_thread_num()
            n_bad += _row(&X[i, 0], d_in, log_d, &signs[0, 0, 0], off, sc, mu, n_blocks,
                          n_freq, mode, &out[i, 0], &scratch[t, 0])
    return n_bad
