"""Fused structured orthogonal random features (SORF).  Private: use
:class:`randfeat.StructuredOrthogonalFeatures`, which validates and allocates.

One call transforms every row of ``X`` through all blocks of the SORF matrix (Yu et al.,
NIPS 2016, §4)

    W_b = (sqrt(d) / sigma) Hn D1_b Hn D2_b Hn D3_b = scale * H D1_b H D2_b H D3_b,
    scale = 1 / (sigma d),

(Hn = H / sqrt(d) the normalised Walsh-Hadamard matrix, H the unnormalised one applied by the
in-place FWHT of ``_cpu.pxd``, Di_b diagonals of random signs) and writes the features straight
into the output row: per row and block, x is copied into a per-thread scratch buffer times
``scale`` and D3 (zero padded to d = 2**log_d), transformed by the FWHT, multiplied by D2,
transformed, multiplied by D1, transformed, and its first m values are stored in the output row.
Once all blocks are done the row is turned in place into [cos, sin] * mult (``transform_paired``)
or cos(. + offset) * mult (``transform_phase``) by the trigonometric kernels of
``src/rff_trig.c`` (shared with RandomFourierFeatures and Fastfood), or left as the projections
W x (``project``, used by tests).

Signs are int8 (+-1), ``signs[b, i, k]`` for D(i+1) of block b; x * (+-1) is exact, and the
scale is applied once, before the transforms.  The caller allocates every array; the
per-thread scratch row (d values) is allocated by the one row loop of ``_rowmaps.pxd`` (the rule
of ``_policy.pxd``).  A row's result depends on that row only and each thread has its own
scratch row, so the output is bit-identical for every thread count.
"""
from cython cimport floating

from randfeat._lib._cpu cimport fwht_inplace
from randfeat._lib._rowmaps cimport PAIRED, PHASE, PROJECTIONS, Output, finish_row, run_rows

from randfeat._lib._cpu import openmp_enabled  # noqa: F401


cdef inline void _mul_signs(floating *u, const signed char *s, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(d):
        u[k] = u[k] * <floating>s[k]


cdef int _row(const floating *x, Py_ssize_t d_in, int log_d, const signed char *signs,
              const floating *offsets, floating scale, floating mult,
              Py_ssize_t n_blocks, Py_ssize_t n_freq, Output what,
              floating *out, floating *u) noexcept nogil:
    """All blocks of one row; ``u`` is a scratch buffer of d = 2**log_d values, ``signs`` has
    3 d entries per block (D1, D2, D3).  Returns 1 when a projection was not finite, -1 when
    the FWHT kernel refused the row."""
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
        if fwht_inplace(u, log_d) != 0:
            return -1
        _mul_signs(u, sb + d, d)
        if fwht_inplace(u, log_d) != 0:
            return -1
        _mul_signs(u, sb, d)
        if fwht_inplace(u, log_d) != 0:
            return -1
        for k in range(m):
            out[start + k] = u[k]
    return finish_row(out, n_freq, offsets, mult, what)


cdef struct Args:
    # One call's operands (pointers into the caller's arrays), read by every row.
    const void *X
    Py_ssize_t d_in
    int log_d
    const signed char *signs
    const void *offsets        # PHASE only, else NULL
    double scale
    double mult
    Py_ssize_t n_blocks
    Py_ssize_t n_freq
    Output what
    void *out
    Py_ssize_t ldo             # output row stride (values)


cdef int _row_float(const void *args, Py_ssize_t i, void *scratch) noexcept nogil:
    cdef const Args *a = <const Args *>args
    return _row(<const float *>a.X + i * a.d_in, a.d_in, a.log_d, a.signs,
                <const float *>a.offsets, <float>a.scale, <float>a.mult, a.n_blocks, a.n_freq,
                a.what, <float *>a.out + i * a.ldo, <float *>scratch)


cdef int _row_double(const void *args, Py_ssize_t i, void *scratch) noexcept nogil:
    cdef const Args *a = <const Args *>args
    return _row(<const double *>a.X + i * a.d_in, a.d_in, a.log_d, a.signs,
                <const double *>a.offsets, a.scale, a.mult, a.n_blocks, a.n_freq, a.what,
                <double *>a.out + i * a.ldo, <double *>scratch)


cdef Py_ssize_t _run(str where, const floating[:, ::1] X, const signed char[:, :, ::1] signs,
                     const floating *offsets, floating[:, ::1] out, Py_ssize_t n_freq,
                     int log_d, double scale, double mult, Output what,
                     int n_threads) except -1:
    """Checks (re-checked here because reading past the arrays would be out of bounds), then
    every row through ``_rowmaps.run_rows``."""
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1], n_blocks = signs.shape[0], d
    cdef Args a
    if log_d < 0 or log_d > 30:
        raise ValueError(f"{where}: log_d={log_d} is outside 0..30 (the FWHT's largest length "
                         "is 2**30)")
    d = (<Py_ssize_t>1) << log_d
    if (signs.shape[1] != 3 or signs.shape[2] != d or n_blocks * d < n_freq or d_in > d):
        raise ValueError(
            f"{where}: inconsistent parameter shapes for d={d}, n_freq={n_freq}: signs "
            f"({signs.shape[0]}, {signs.shape[1]}, {signs.shape[2]}), X ({n}, {d_in})")
    if out.shape[0] != n:
        raise ValueError(f"{where}: out has {out.shape[0]} rows for {n} rows of X")
    if n == 0 or n_freq == 0:
        return 0
    a.X = &X[0, 0]
    a.d_in = d_in
    a.log_d = log_d
    a.signs = &signs[0, 0, 0]
    a.offsets = offsets
    a.scale = scale
    a.mult = mult
    a.n_blocks = n_blocks
    a.n_freq = n_freq
    a.what = what
    a.out = &out[0, 0]
    a.ldo = out.shape[1]
    # one row per item; a row costs about n_blocks * d * (3 log d + 4) operations
    return run_rows(where, _row_float if floating is float else _row_double, &a, n, n_threads,
                    n * n_blocks * d, 2 * d, n_blocks * d * (3 * log_d + 4),
                    d * sizeof(floating))


def transform_paired(const floating[:, ::1] X, const signed char[:, :, ::1] signs,
                     floating[:, ::1] out, int log_d, double scale, double mult,
                     int n_threads):
    """out = mult * [cos(W X^T), sin(W X^T)]^T for every row of X (rows in parallel).

    Shapes: X (n, d_in), d_in <= d = 2**log_d; signs (n_blocks, 3, d) int8 with
    n_blocks * d >= n_freq; out (n, 2 n_freq) (n_freq is read from it).  ``scale`` =
    1/(sigma d) multiplies the projections, ``mult`` every feature.  Returns the number of rows
    with a non-finite projection (their features are NaN).  Raises ValueError for inconsistent
    shapes, n_threads outside 1..1024 or log_d outside 0..30, MemoryError when the per-thread
    scratch cannot be allocated, RuntimeError when the FWHT kernel refuses a row,
    KeyboardInterrupt on Ctrl-C (within about a millisecond of work)."""
    if out.shape[1] % 2:
        raise ValueError(f"sorf transform_paired: out has {out.shape[1]} columns; the paired "
                         "map needs an even number (2 n_freq)")
    return _run("sorf transform_paired", X, signs, NULL, out, out.shape[1] // 2, log_d, scale,
                mult, PAIRED, n_threads)


def transform_phase(const floating[:, ::1] X, const signed char[:, :, ::1] signs,
                    const floating[::1] offsets, floating[:, ::1] out, int log_d,
                    double scale, double mult, int n_threads):
    """out = mult * cos(W X^T + offsets)^T, out (n, n_freq), offsets (n_freq,); otherwise as
    ``transform_paired``."""
    if offsets.shape[0] != out.shape[1]:
        raise ValueError(f"sorf transform_phase: {offsets.shape[0]} offsets for "
                         f"{out.shape[1]} output columns")
    return _run("sorf transform_phase", X, signs, &offsets[0] if offsets.shape[0] else NULL,
                out, out.shape[1], log_d, scale, mult, PHASE, n_threads)


def project(const floating[:, ::1] X, const signed char[:, :, ::1] signs,
            floating[:, ::1] out, int log_d, double scale, int n_threads):
    """out = (W X^T)^T, the projections, out (n, n_freq); otherwise as ``transform_paired``."""
    return _run("sorf project", X, signs, NULL, out, out.shape[1], log_d, scale, 1.0,
                PROJECTIONS, n_threads)
