"""Fused Fastfood kernel.  Private: use :class:`randfeat.Fastfood`, which validates and allocates.

One call transforms every row of ``X`` through all blocks of the Fastfood matrix

    V_b = scale * diag(S_b) H diag(G_b) Pi_b H diag(B_b),     scale = 1 / (sigma sqrt(d))

(Le, Sarlos & Smola 2013, eq. 7) and writes the features straight into the output row: per row
and block, x is copied into a per-thread scratch buffer with the signs B applied (bit-packed, see
below; zero padded to d = 2**log_d), transformed by the in-place FWHT, gathered through the
permutation (``(Pi u)_k = u[P[k]]``) and multiplied by G, transformed again, multiplied by
S*scale and stored in the output row; once all blocks are done the row is turned in place into
[cos, sin] * mult (``mode`` 0) or cos(. + offset) * mult (``mode`` 1) by the vectorised
trigonometric kernels of ``src/rff_trig.c`` (shared with RandomFourierFeatures), or left as the
raw projections V x (``mode`` 2, used by tests).

Signs.  ``Bbits`` holds one bit per sign, 1 for B = -1 (``np.packbits(B < 0, axis=1,
bitorder="little")``: sign k of a block is bit k % 8 of byte k // 8; a block's row has
ceil(d / 8) bytes).  They are applied eight at a time by ``src/fastfood_block.c``: each byte
indexes a 256 x 8 table of +-1.0 (8 or 16 KB, filled at import) and the eight values of x are
multiplied by that table row -- one branch-free vector product, bit-identical to multiplying by
int8 signs (x * (+-1) is exact).  The d_in % 8 tail reads its bits one by one.

Elementwise passes.  Signs, the gather ``w = G Pi u`` and the output scaling ``S w * scale``
are C loops in ``src/fastfood_block.c`` compiled for x86-64-v4 / v3 / baseline and picked at
run time (vector gathers and 512/256-bit products; the same IEEE operations in the same order
on every path; measurements in benchmarks/README.md).

Loop order is row-outer (each thread streams its rows through all blocks): the per-row working
set -- parameters about n*(1/8 + 4 + 2*sizeof(floating)) bytes (<= 0.8 MB at n = 65536 in
float32), two d-long scratch vectors and the output row -- stays in this CPU's 1 MB L2 / shared
L3, and every output value is written once, so a block-outer tiling was not needed at the
benchmark sizes.
Entry points: ``transform_paired`` ([cos, sin] * mult), ``transform_phase`` (cos(. + offset) *
mult) and ``project`` (the raw projections V x, used by tests and analysis).  Memory: the caller
allocates every array; the per-thread scratch (two d-long vectors per thread) is allocated by
the one row loop of ``_rowmaps.pxd`` (the rule of ``_policy.pxd``) and reused for every row; a
row's result depends on that row only, so the output is bit-identical for every thread count.
"""
from cython cimport floating

from randfeat._lib._cpu cimport (ff_gather_double, ff_gather_float, ff_scale_double,
                                 ff_scale_float, ff_signs_double, ff_signs_float, fwht_inplace)
from randfeat._lib._rowmaps cimport PAIRED, PHASE, PROJECTIONS, Output, finish_row, run_rows


cdef inline void _apply_signs(floating *u, const floating *x, const unsigned char *bits,
                              Py_ssize_t n) noexcept nogil:
    """u[k] = x[k] * (-1 if bit k of ``bits`` else 1) for k < n (``src/fastfood_block.c``)."""
    if floating is float:
        ff_signs_float(u, x, bits, n)
    else:
        ff_signs_double(u, x, bits, n)


cdef int _row(const floating *x, Py_ssize_t d_in, int log_d,
              const unsigned char *Bbits, Py_ssize_t bits_stride, const int *P,
              const floating *G, const floating *S,
              const floating *offsets, floating scale, floating mult,
              Py_ssize_t n_blocks, Py_ssize_t n_freq, Output what,
              floating *out, floating *u, floating *w) noexcept nogil:
    """All blocks of one row: u, w are scratch buffers of d = 2**log_d values.  ``Bbits`` has
    ``bits_stride`` bytes per block; G has d entries per block, S only the n_freq used rows.
    Returns 1 when a projection was not finite (overflow: the row's features are NaN), -1 when
    the FWHT kernel refused the length (its error code; the row is then not computed)."""
    cdef Py_ssize_t d = (<Py_ssize_t>1) << log_d
    cdef Py_ssize_t b, k, m, start
    cdef const int *Pb
    cdef const floating *Gb
    cdef const floating *Sb
    for b in range(n_blocks):
        start = b * d
        m = n_freq - start
        if m > d:
            m = d
        Pb = P + start
        Gb = G + start
        Sb = S + start
        # u = B x (zero padded), then u = H u
        _apply_signs(u, x, Bbits + b * bits_stride, d_in)
        for k in range(d_in, d):
            u[k] = 0
        if fwht_inplace(u, log_d) != 0:
            return -1
        # w = G Pi u, then w = H w
        if floating is float:
            ff_gather_float(w, u, Pb, Gb, d)
        else:
            ff_gather_double(w, u, Pb, Gb, d)
        if fwht_inplace(w, log_d) != 0:
            return -1
        # z = scale * S w (first m rows of this block) straight into the output row
        if floating is float:
            ff_scale_float(out + start, w, Sb, scale, m)
        else:
            ff_scale_double(out + start, w, Sb, scale, m)
    return finish_row(out, n_freq, offsets, mult, what)


cdef struct Args:
    # One call's operands (pointers into the caller's arrays), read by every row.
    const void *X
    Py_ssize_t d_in
    int log_d
    const unsigned char *Bbits
    Py_ssize_t bits_stride
    const int *P
    const void *G
    const void *S
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
    cdef float *u = <float *>scratch
    return _row(<const float *>a.X + i * a.d_in, a.d_in, a.log_d, a.Bbits, a.bits_stride, a.P,
                <const float *>a.G, <const float *>a.S, <const float *>a.offsets,
                <float>a.scale, <float>a.mult, a.n_blocks, a.n_freq, a.what,
                <float *>a.out + i * a.ldo, u, u + ((<Py_ssize_t>1) << a.log_d))


cdef int _row_double(const void *args, Py_ssize_t i, void *scratch) noexcept nogil:
    cdef const Args *a = <const Args *>args
    cdef double *u = <double *>scratch
    return _row(<const double *>a.X + i * a.d_in, a.d_in, a.log_d, a.Bbits, a.bits_stride,
                a.P, <const double *>a.G, <const double *>a.S, <const double *>a.offsets,
                a.scale, a.mult, a.n_blocks, a.n_freq, a.what,
                <double *>a.out + i * a.ldo, u, u + ((<Py_ssize_t>1) << a.log_d))


cdef Py_ssize_t _run(str where, const floating[:, ::1] X, const unsigned char[:, ::1] Bbits,
                     const int[:, ::1] P, const floating[:, ::1] G, const floating[::1] S,
                     const floating *offsets, floating[:, ::1] out, int log_d, double scale,
                     double mult, Output what, int n_threads) except -1:
    """Checks (the parameter shapes are re-checked because reading past them would be out of
    bounds), then every row through ``_rowmaps.run_rows``."""
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1], n_freq = S.shape[0]
    cdef Py_ssize_t n_blocks = Bbits.shape[0], d, width
    cdef Args a
    if log_d < 0 or log_d > 30:
        raise ValueError(f"{where}: log_d={log_d} is outside 0..30 (the FWHT's largest length "
                         "is 2**30)")
    d = (<Py_ssize_t>1) << log_d
    if (Bbits.shape[1] != (d + 7) // 8 or P.shape[0] != n_blocks or P.shape[1] != d
            or G.shape[0] != n_blocks or G.shape[1] != d or n_blocks * d < n_freq or d_in > d):
        raise ValueError(
            f"{where}: inconsistent parameter shapes for d={d}, n_freq={n_freq}: "
            f"Bbits ({Bbits.shape[0]}, {Bbits.shape[1]}), P ({P.shape[0]}, {P.shape[1]}), "
            f"G ({G.shape[0]}, {G.shape[1]}), S ({S.shape[0]},), "
            f"X ({X.shape[0]}, {X.shape[1]})")
    width = 2 * n_freq if what == PAIRED else n_freq
    if out.shape[0] != n or out.shape[1] != width:
        raise ValueError(f"{where}: out ({out.shape[0]}, {out.shape[1]}) must be ({n}, {width}) "
                         f"for n_freq={n_freq} (S has n_freq entries), X ({n}, {d_in})")
    if n == 0 or n_freq == 0:
        return 0
    a.X = &X[0, 0]
    a.d_in = d_in
    a.log_d = log_d
    a.Bbits = &Bbits[0, 0]
    a.bits_stride = Bbits.shape[1]
    a.P = &P[0, 0]
    a.G = &G[0, 0]
    a.S = &S[0]
    a.offsets = offsets
    a.scale = scale
    a.mult = mult
    a.n_blocks = n_blocks
    a.n_freq = n_freq
    a.what = what
    a.out = &out[0, 0]
    a.ldo = out.shape[1]
    # one row per item; a row costs about n_blocks * d * (2 log d + 6) operations
    return run_rows(where, _row_float if floating is float else _row_double, &a, n, n_threads,
                    n * n_blocks * d, 2 * d, n_blocks * d * (2 * log_d + 6),
                    2 * d * sizeof(floating))


def transform_paired(const floating[:, ::1] X, const unsigned char[:, ::1] Bbits,
                     const int[:, ::1] P, const floating[:, ::1] G, const floating[::1] S,
                     floating[:, ::1] out, int log_d, double scale, double mult,
                     int n_threads):
    """out = mult * [cos(V X^T), sin(V X^T)]^T for every row of X (rows in parallel).

    Shapes: X (n, d_in) with d_in <= d = 2**log_d; Bbits (n_blocks, ceil(d / 8)) uint8, the
    packed signs; P, G (n_blocks, d) with n_blocks * d >= n_freq; S (n_freq,); out
    (n, 2 n_freq).  ``scale`` = 1/(sigma sqrt(d)) multiplies the projections, ``mult`` every
    feature.  Returns the number of rows with a non-finite projection (overflow; their features
    are NaN), 0 normally.  Raises ValueError for inconsistent shapes, n_threads outside
    1..1024 or log_d outside 0..30, MemoryError when the per-thread scratch cannot be
    allocated, RuntimeError when the FWHT kernel refuses a row, KeyboardInterrupt on Ctrl-C
    (within about a millisecond of work)."""
    return _run("fastfood transform_paired", X, Bbits, P, G, S, NULL, out, log_d, scale, mult,
                PAIRED, n_threads)


def transform_phase(const floating[:, ::1] X, const unsigned char[:, ::1] Bbits,
                    const int[:, ::1] P, const floating[:, ::1] G, const floating[::1] S,
                    const floating[::1] offsets, floating[:, ::1] out, int log_d,
                    double scale, double mult, int n_threads):
    """out = mult * cos(V X^T + offsets)^T, out (n, n_freq), offsets (n_freq,); otherwise as
    ``transform_paired``."""
    if offsets.shape[0] != S.shape[0]:
        raise ValueError(f"fastfood transform_phase: {offsets.shape[0]} offsets for "
                         f"n_freq={S.shape[0]} (S has n_freq entries)")
    return _run("fastfood transform_phase", X, Bbits, P, G, S,
                &offsets[0] if offsets.shape[0] else NULL, out, log_d, scale, mult,
                PHASE, n_threads)


def project(const floating[:, ::1] X, const unsigned char[:, ::1] Bbits, const int[:, ::1] P,
            const floating[:, ::1] G, const floating[::1] S, floating[:, ::1] out, int log_d,
            double scale, int n_threads):
    """out = (V X^T)^T, the raw projections, out (n, n_freq); otherwise as
    ``transform_paired``."""
    return _run("fastfood project", X, Bbits, P, G, S, NULL, out, log_d, scale, 1.0,
                PROJECTIONS, n_threads)
