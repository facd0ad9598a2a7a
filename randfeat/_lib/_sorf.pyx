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
Once all blocks are done the row is turned in place into [cos, sin] * mult (``mode`` 0) or
cos(. + offset) * mult (``mode`` 1) by the trigonometric kernels of ``src/rff_trig.c`` (shared with
RandomFourierFeatures and Fastfood), or left as the projections W x (``mode`` 2, used by tests).

Signs are int8 (+-1), ``signs[b, i, k]`` for D(i+1) of block b; x * (+-1) is exact, and the
scale is applied once, before the transforms.  A row's result depends on that row only and each
thread has its own scratch row, so the output is bit-identical for every thread count.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._cpu cimport fwht_inplace, paired_row, phase_row
from randfeat._lib._openmp cimport omp_get_thread_num
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)

from randfeat._lib._cpu import openmp_enabled  # noqa: F401


cdef inline void _mul_signs(floating *u, const signed char *s, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(d):
        u[k] = u[k] * <floating>s[k]


cdef int _row(const floating *x, Py_ssize_t d_in, int log_d, const signed char *signs,
              const floating *offsets, floating scale, floating mult,
              Py_ssize_t n_blocks, Py_ssize_t n_freq, int mode,
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
    if mode == 0:
        return paired_row(out, n_freq, mult)
    elif mode == 1:
        return phase_row(out, offsets, n_freq, mult)
    return 0


def sorf_transform(const floating[:, ::1] X, const signed char[:, :, ::1] signs,
                   const floating[::1] offsets, floating[:, ::1] out,
                   scratch, int log_d, double scale, double mult,
                   Py_ssize_t n_freq, int mode, int n_threads):
    """Fill ``out`` with the SORF features of every row of ``X`` (rows in parallel).

    Shapes (checked by the caller; re-checked here because reading past them would be out of
    bounds): X (n, d_in), d_in <= d = 2**log_d; signs (n_blocks, 3, d) int8 with
    n_blocks * d >= n_freq; offsets (n_freq,) for mode 1 (ignored otherwise); out
    (n, 2 * n_freq) for mode 0, (n, n_freq) for modes 1 and 2.  ``scratch`` is None (this
    function allocates one row of d values per thread, the thread count set by the policy of
    ``_policy.pxd``) or such a C-contiguous array of X's dtype (then at most as many threads as
    it has rows).  ``scale`` = 1/(sigma d) multiplies the projections, ``mult`` every
    trigonometric feature.  Returns the number of rows with a non-finite projection (their
    features are NaN).  Raises ValueError for n_threads outside 1..1024 or log_d outside 0..30,
    RuntimeError when the FWHT kernel refuses a row, KeyboardInterrupt on Ctrl-C (within about
    a millisecond of work).
    """
    cdef Py_ssize_t n = X.shape[0], d_in = X.shape[1]
    cdef Py_ssize_t d
    cdef Py_ssize_t n_blocks = signs.shape[0]
    cdef Py_ssize_t i
    check_threads(n_threads)
    if log_d < 0 or log_d > 30:
        raise ValueError(f"sorf_transform: log_d={log_d} is outside 0..30 (the FWHT's largest "
                         "length is 2**30)")
    d = (<Py_ssize_t>1) << log_d
    if (signs.shape[1] != 3 or signs.shape[2] != d or n_blocks * d < n_freq or d_in > d):
        raise ValueError(
            f"sorf_transform: inconsistent parameter shapes for d={d}, n_freq={n_freq}: signs "
            f"({signs.shape[0]}, {signs.shape[1]}, {signs.shape[2]}), X ({n}, {d_in})")
    if (out.shape[0] != n or out.shape[1] != (2 * n_freq if mode == 0 else n_freq)
            or (mode == 1 and offsets.shape[0] != n_freq) or mode < 0 or mode > 2):
        raise ValueError(
            f"sorf_transform: inconsistent buffers for mode={mode}, n_freq={n_freq}, d={d}: "
            f"out ({out.shape[0]}, {out.shape[1]}), offsets ({offsets.shape[0]},), "
            f"X ({n}, {d_in})")
    cdef floating sc = <floating>scale
    cdef floating mu = <floating>mult
    cdef int t, r, nt
    cdef Py_ssize_t n_bad = 0, n_err = 0
    cdef const floating *off = &offsets[0] if offsets.shape[0] > 0 else NULL
    cdef floating[:, ::1] scr
    cdef Interrupt intr
    if n == 0 or n_freq == 0:
        return 0
    # one row per item; a row costs about n_blocks * d * (3 log d + 4) operations
    nt = effective_threads(n_threads, n, n * n_blocks * d, 2 * d)
    if scratch is None:
        scr = np.empty((nt, d), dtype=np.float32 if floating is float else np.float64)
    else:
        scr = scratch
        if scr.shape[1] < d or scr.shape[0] < 1:
            raise ValueError(f"sorf_transform: scratch ({scr.shape[0]}, {scr.shape[1]}) needs "
                             f"at least one row of {d} values")
        if nt > scr.shape[0]:
            nt = <int>scr.shape[0]
    ensure_threads(nt)
    interrupt_init(&intr, n_blocks * d * (3 * log_d + 4))
    with nogil:
        if nt == 1:
            for i in range(n):
                if interrupted(&intr):
                    break
                r = _row(&X[i, 0], d_in, log_d, &signs[0, 0, 0], off, sc, mu, n_blocks,
                         n_freq, mode, &out[i, 0], &scr[0, 0])
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
                r = _row(&X[i, 0], d_in, log_d, &signs[0, 0, 0], off, sc, mu, n_blocks,
                         n_freq, mode, &out[i, 0], &scr[t, 0])
                if r < 0:
                    n_err += 1
                else:
                    n_bad += r
    raise_if_interrupted(&intr)
    if n_err:
        raise RuntimeError(f"sorf_transform: the FWHT kernel refused {n_err} of {n} rows "
                           f"(length 2**{log_d})")
    return n_bad
