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
Scratch buffers (one per thread, allocated by this function once per call after the thread
count is set by ``_policy.effective_threads``) are reused for every row; a row's result depends
on that row only, so the output is bit-identical for every thread count.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._cpu cimport (ff_gather_double, ff_gather_float, ff_scale_double,
                                 ff_scale_float, ff_signs_double, ff_signs_float, fwht_inplace,
                                 paired_row, phase_row)
from randfeat._lib._openmp cimport omp_get_thread_num
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)


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
               Py_ssize_t n_blocks, Py_ssize_t n_freq, int mode,
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
    # trigonometric part in place on the row (vectorised, shared with RandomFourierFeatures)
    if mode == 0:
        return paired_row(out, n_freq, mult)
    elif mode == 1:
        return phase_row(out, offsets, n_freq, mult)
    return 0


def fastfood_transform(const floating[:, ::1] X, const unsigned char[:, ::1] Bbits,
                       const int[:, ::1] P, const floating[:, ::1] G,
                       const floating[::1] S, const floating[::1] offsets,
                       floating[:, ::1] out, scratch, int log_d,
                       double scale, double mult,
                       Py_ssize_t n_freq, int mode, int n_threads):
    """Fill ``out`` with the Fastfood features of every row of ``X`` (rows in parallel).

    Shapes (checked by the caller; the parameter shapes are re-checked here because reading
    past them would be out of bounds): X (n, d_in) with d_in <= d = 2**log_d; Bbits
    (n_blocks, ceil(d / 8)) uint8, the packed signs; P, G (n_blocks, d) with
    n_blocks * d >= n_freq; S (n_freq,); offsets (n_freq,) (mode 1; ignored otherwise);
    out (n, 2 * n_freq) for mode 0, (n, n_freq) for modes 1 and 2.  ``scratch`` is None (this
    function allocates one (threads, 2 d) row per thread, the thread count set by the policy of
    ``_policy.pxd``) or such a C-contiguous array of X's dtype (then at most as many threads as
    it has rows).  ``mult`` multiplies every trigonometric feature (1/sqrt(n_freq) or
    sqrt(2/n_freq)).  Returns the number of rows with a non-finite projection (overflow; their
    features are NaN), 0 normally.  Raises ValueError for n_threads outside 1..1024 or
    log_d outside 0..30, RuntimeError when the FWHT kernel refuses a row, KeyboardInterrupt on
    Ctrl-C (within about a millisecond of work).
    """
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1]
    cdef Py_ssize_t d
    cdef Py_ssize_t n_blocks = Bbits.shape[0]
    cdef Py_ssize_t bits_stride = Bbits.shape[1]
    cdef Py_ssize_t i
    check_threads(n_threads)
    if log_d < 0 or log_d > 30:
        raise ValueError(f"fastfood_transform: log_d={log_d} is outside 0..30 (the FWHT's "
                         "largest length is 2**30)")
    d = (<Py_ssize_t>1) << log_d
    if (bits_stride != (d + 7) // 8 or P.shape[0] != n_blocks or P.shape[1] != d
            or G.shape[0] != n_blocks or G.shape[1] != d or S.shape[0] != n_freq
            or n_blocks * d < n_freq or d_in > d):
        raise ValueError(
            f"fastfood_transform: inconsistent parameter shapes for d={d}, n_freq={n_freq}: "
            f"Bbits ({Bbits.shape[0]}, {Bbits.shape[1]}), P ({P.shape[0]}, {P.shape[1]}), "
            f"G ({G.shape[0]}, {G.shape[1]}), S ({S.shape[0]},), "
            f"X ({X.shape[0]}, {X.shape[1]})")
    if (out.shape[0] != n or out.shape[1] != (2 * n_freq if mode == 0 else n_freq)
            or (mode == 1 and offsets.shape[0] != n_freq) or mode < 0 or mode > 2):
        raise ValueError(
            f"fastfood_transform: inconsistent buffers for mode={mode}, n_freq={n_freq}, "
            f"d={d}: out ({out.shape[0]}, {out.shape[1]}), "
            f"offsets ({offsets.shape[0]},), X ({n}, {d_in})")
    cdef floating sc = <floating>scale
    cdef floating mu = <floating>mult
    cdef int t, r, nt
    cdef Py_ssize_t n_bad = 0, n_err = 0
    cdef const floating *off = &offsets[0] if offsets.shape[0] > 0 else NULL
    cdef floating[:, ::1] scr
    cdef Interrupt intr
    if n == 0 or n_freq == 0:
        return 0
    # one row per item; a row costs about n_blocks * d * (2 log d + 6) operations
    nt = effective_threads(n_threads, n, n * n_blocks * d, 2 * d)
    if scratch is None:
        scr = np.empty((nt, 2 * d), dtype=np.float32 if floating is float else np.float64)
    else:
        scr = scratch
        if scr.shape[1] < 2 * d or scr.shape[0] < 1:
            raise ValueError(f"fastfood_transform: scratch ({scr.shape[0]}, {scr.shape[1]}) "
                             f"needs at least one row of {2 * d} values")
        if nt > scr.shape[0]:
            nt = <int>scr.shape[0]
    ensure_threads(nt)
    interrupt_init(&intr, n_blocks * d * (2 * log_d + 6))
    with nogil:
        if nt == 1:
            for i in range(n):
                if interrupted(&intr):
                    break
                r = _row(&X[i, 0], d_in, log_d, &Bbits[0, 0], bits_stride, &P[0, 0],
                         &G[0, 0], &S[0], off, sc, mu, n_blocks, n_freq, mode, &out[i, 0],
                         &scr[0, 0], &scr[0, d])
                if r < 0:
                    n_err = n_err + 1
                else:
                    n_bad = n_bad + r
        else:
            for i in prange(n, schedule="static", num_threads=nt):
                if interrupted(&intr):
                    continue
                # this thread's scratch row (allocated once per call, reused for every row)
                t = omp_get_thread_num()
                r = _row(&X[i, 0], d_in, log_d, &Bbits[0, 0], bits_stride, &P[0, 0], &G[0, 0],
                         &S[0], off, sc, mu, n_blocks, n_freq, mode, &out[i, 0],
                         &scr[t, 0], &scr[t, d])
                if r < 0:
                    n_err += 1
                else:
                    n_bad += r
    raise_if_interrupted(&intr)
    if n_err:
        raise RuntimeError(f"fastfood_transform: the FWHT kernel refused {n_err} of {n} rows "
                           f"(length 2**{log_d})")
    return n_bad
