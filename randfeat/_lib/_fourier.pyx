"""Compiled random Fourier feature maps.

Private: use :class:`randfeat.RandomFourierFeatures`, which validates, draws the random
parameters and allocates.  ``transform_paired``/``transform_phase`` run the whole map in ONE
parallel region: the larger of the two dimensions (rows of X or frequencies) is cut into at most
``max_blocks`` blocks of at least ``chunk`` values, and into one block when the whole job is
below the threading threshold; each block is projected by a single-threaded BLAS gemm straight
into the output buffer and then goes through the fused cos/sin while it is still in cache.  One
thread pool, one hand-off per call (two pools -- BLAS threads, then OpenMP threads -- pay two,
which costs a lot on a busy machine).  The blocks depend on the shapes and ``max_blocks`` only,
never on the thread count, and a row's result depends only on its block, so the output is
bit-identical for any thread count.  (BLAS picks its micro-kernels by matrix shape, so cutting
differently changes float64 results by an ulp for some shapes: the caller passes a
``max_blocks`` fixed for the machine, ``min(8, os.cpu_count())``, or the thread count when
``gemm_cut_invariant`` finds the BLAS insensitive to the cut for that dtype.)  The caller must keep the
BLAS single-threaded during the call (threadpoolctl).
``paired_inplace``/``phase_inplace`` apply only the trigonometric part to a given projection.
The per-row work is in ``src/rff_trig.c`` (vectorised sin/cos, chosen at run time for the CPU),
compiled into ``_cpu`` (the one owner of the C kernels).
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange

from scipy.linalg.cython_blas cimport dgemm, sgemm

from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)
from randfeat._lib._cpu cimport paired_row, paired_split, phase_row

from randfeat._lib._cpu import kernel_isas


def isa():
    """Name of the SIMD code path of the sin/cos loops ("scalar", "avx2", "avx512"), selected at
    run time for this CPU by the one dispatcher of ``_cpu`` (``_cpu.set_isa`` changes it)."""
    return kernel_isas()["rff_trig"]


# Below this much work (n * m * (d + 16) multiply-adds and trig evaluations, a few ms on one
# core) the rows stay on the calling thread: waking a thread pool costs microseconds on an idle
# machine but a scheduler time slice (milliseconds) on a busy one.  The result does not depend on
# it (the blocks are fixed by the shapes).
cdef enum:
    _PARALLEL_MIN_WORK = 67108864


cdef inline Py_ssize_t _work(Py_ssize_t n, Py_ssize_t m, Py_ssize_t d) noexcept nogil:
    """The work of one map, in the unit of ``_PARALLEL_MIN_WORK``."""
    return n * m * (d + 16)


def is_blocked(Py_ssize_t n, Py_ssize_t m, Py_ssize_t d):
    """Whether a map of n rows, m frequencies and d features is big enough to be cut into
    blocks (below the threshold it runs as one block on the calling thread)."""
    return _work(n, m, d) >= _PARALLEL_MIN_WORK


cdef enum:
    # Largest BLAS dimension: the Fortran BLAS takes 32-bit ints.  Blocks are never longer than
    # this (a shape-only rule, so the output still does not depend on the thread count) and the
    # dimensions a gemm does not split must stay below it.
    _BLAS_INT_MAX = 2147483647
    _MAX_BLOCK = 1073741824
    # log2 of the largest work of one block (``_work`` units: 2**32, about 0.1-0.3 s of gemm on
    # one core), so that Ctrl-C, noticed between blocks, stops a long map within about a second
    _LOG_MAX_BLOCK_WORK = 32


cpdef int check_blas_dims(str where, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo) except -1:
    """Raise ValueError when a dimension that one gemm call takes whole overflows a BLAS int."""
    if m > _BLAS_INT_MAX or d > _BLAS_INT_MAX or ldo > _BLAS_INT_MAX:
        raise ValueError(
            f"{where}: {m} frequencies of {d} features (output row of {ldo} values) exceed the "
            f"BLAS's 32-bit dimensions (at most {_BLAS_INT_MAX}); use fewer components or "
            "features")
    return 0


def paired_inplace(floating[:, ::1] buf, Py_ssize_t m, double scale, int n_threads):
    """``buf[:, :m]`` holds the projection; write ``scale*cos`` there and ``scale*sin`` into
    ``buf[:, m:2m]``.  ``buf`` must have exactly ``2m`` columns.  Returns the number of rows
    with a non-finite projection (their features are NaN)."""
    cdef Py_ssize_t i, n_rows = buf.shape[0]
    cdef floating s = <floating>scale
    cdef int nt
    cdef Py_ssize_t n_bad = 0
    if buf.shape[1] != 2 * m:
        raise ValueError(f"paired_inplace: buffer has {buf.shape[1]} columns, expected {2 * m}")
    check_threads(n_threads)
    if n_rows == 0 or m == 0:
        return 0
    nt = effective_threads(n_threads, n_rows, n_rows * m * 16, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for i in prange(n_rows, schedule='static', num_threads=nt):
            n_bad += paired_row(&buf[i, 0], m, s)
    return n_bad


def phase_inplace(floating[:, ::1] buf, const floating[::1] offset, double scale, int n_threads):
    """``buf[i, j] = scale * cos(buf[i, j] + offset[j])`` in place.  Returns the number of rows
    with a non-finite projection (their features are NaN)."""
    cdef Py_ssize_t i, n_rows = buf.shape[0], m = buf.shape[1]
    cdef floating s = <floating>scale
    cdef int nt
    cdef Py_ssize_t n_bad = 0
    if offset.shape[0] != m:
        raise ValueError(f"phase_inplace: {offset.shape[0]} offsets for {m} columns")
    check_threads(n_threads)
    if n_rows == 0 or m == 0:
        return 0
    nt = effective_threads(n_threads, n_rows, n_rows * m * 16, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for i in prange(n_rows, schedule='static', num_threads=nt):
            n_bad += phase_row(&buf[i, 0], &offset[0], m, s)
    return n_bad


cdef inline void _gemm_block(const floating *X, const floating *W, floating *C, int nc, int m,
                             int d, int ldc) noexcept nogil:
    """Row-major C[:nc, :m] (row stride ldc) = X[:nc, :d] @ W[:m, :d].T via column-major gemm:
    C^T (m x nc) = (W^T)^T (X^T) with W^T, X^T the column-major views of W, X."""
    cdef char ta = b'T'
    cdef char tb = b'N'
    cdef float sone = 1.0, szero = 0.0
    cdef double done = 1.0, dzero = 0.0
    if floating is float:
        sgemm(&ta, &tb, &m, &nc, &d, &sone, <float *>W, &d, <float *>X, &d, &szero,
              <float *>C, &ldc)
    else:
        dgemm(&ta, &tb, &m, &nc, &d, &done, <double *>W, &d, <double *>X, &d, &dzero,
              <double *>C, &ldc)


def gemm_cut_invariant(const floating[:, ::1] X, const floating[:, ::1] W, Py_ssize_t row_cut,
                       Py_ssize_t col_cut):
    """Whether the single-threaded gemm used here gives exactly the same ``X W^T`` as the same
    product cut into two at row ``row_cut`` of X, and at row ``col_cut`` of W (the two ways the
    blocked transforms cut it).  A BLAS whose kernel computes every entry in the same order
    whatever the matrix sizes and the entry's position passes for every shape (OpenBLAS's
    single-precision kernels on x86-64 do; its double-precision ones do not)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = W.shape[0]
    if W.shape[1] != d or not (0 < row_cut < n) or not (0 < col_cut < m):
        raise ValueError("gemm_cut_invariant: need X (n, d), W (m, d), 0 < row_cut < n, "
                         "0 < col_cut < m")
    if n > _BLAS_INT_MAX:
        raise ValueError("gemm_cut_invariant: a probe of more than 2**31 - 1 rows")
    check_blas_dims("gemm_cut_invariant", m, d, m)
    dt = np.float32 if floating is float else np.float64
    full_a, rows_a, cols_a = np.empty((n, m), dt), np.empty((n, m), dt), np.empty((n, m), dt)
    cdef floating[:, ::1] full = full_a, rows = rows_a, cols = cols_a
    with nogil:
        _gemm_block(&X[0, 0], &W[0, 0], &full[0, 0], <int>n, <int>m, <int>d, <int>m)
        _gemm_block(&X[0, 0], &W[0, 0], &rows[0, 0], <int>row_cut, <int>m, <int>d, <int>m)
        _gemm_block(&X[row_cut, 0], &W[0, 0], &rows[row_cut, 0], <int>(n - row_cut), <int>m,
                    <int>d, <int>m)
        _gemm_block(&X[0, 0], &W[0, 0], &cols[0, 0], <int>n, <int>col_cut, <int>d, <int>m)
        _gemm_block(&X[0, 0], &W[col_cut, 0], &cols[0, col_cut], <int>n, <int>(m - col_cut),
                    <int>d, <int>m)
    return bool(np.array_equal(full_a, rows_a) and np.array_equal(full_a, cols_a))


cdef inline Py_ssize_t _block(Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t chunk,
                              Py_ssize_t max_blocks) noexcept nogil:
    """Block length; > 0: blocks of rows, < 0: blocks of frequencies (see module docstring).

    Split the larger L of n (rows) and m (frequencies) into at most ``max_blocks`` blocks of at
    least ``chunk`` (512) -- more when a block would exceed 2**32 of work (Ctrl-C is noticed
    between blocks) --, or keep one block when the job is too small to be threaded: every
    gemm call re-packs the whole operand that is not split, so every extra block costs time on
    one thread (a few to ~20 %, see benchmarks/README.md).  Depends on the shapes and
    ``max_blocks`` only, never
    on the thread count, so the result is identical for any number of threads."""
    cdef Py_ssize_t L = n if n > m else m
    cdef Py_ssize_t b
    if max_blocks < 1:
        max_blocks = 1
    if _work(n, m, d) < _PARALLEL_MIN_WORK:
        max_blocks = 1
    b = (L + max_blocks - 1) // max_blocks
    # no block of more than 2**_LOG_MAX_BLOCK_WORK of work (~0.1 s on one core): Ctrl-C is
    # noticed between blocks, so a long map stays interruptible within about a second
    cdef Py_ssize_t per = _work(n, m, d) // L        # the work of one row / frequency
    cdef Py_ssize_t cap = ((<Py_ssize_t>1) << _LOG_MAX_BLOCK_WORK) // (per if per > 0 else 1)
    if b > cap:
        b = cap
    if b < chunk:
        b = chunk
    if b > _MAX_BLOCK:
        b = _MAX_BLOCK
    return b if n > m else -b


cdef Py_ssize_t _map_block(const floating *X, const floating *W, const floating *offset,
                     floating *out, Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo,
                     Py_ssize_t blk, Py_ssize_t c, bint paired, floating s) noexcept nogil:
    """Block ``c``: the gemm of its rows (blk > 0) or frequencies (blk < 0) straight into
    ``out`` (row stride ``ldo``), then the trigonometric part in place while it is in cache.
    paired: cos over out[i, :m], sin into out[i, m:2m]; phase: cos(. + offset).  Returns the
    number of (row, block) pieces that held a non-finite projection."""
    cdef Py_ssize_t i, r0, nc, n_bad = 0
    if blk > 0:   # rows r0 .. r0 + nc, all frequencies
        r0 = c * blk
        nc = n - r0
        if nc > blk:
            nc = blk
        _gemm_block(X + r0 * d, W, out + r0 * ldo, <int>nc, <int>m, <int>d, <int>ldo)
        for i in range(r0, r0 + nc):
            if paired:
                n_bad += paired_split(out + i * ldo, out + i * ldo + m, m, s)
            else:
                n_bad += phase_row(out + i * ldo, offset, m, s)
    else:         # frequencies r0 .. r0 + nc, all rows
        r0 = c * (-blk)
        nc = m - r0
        if nc > -blk:
            nc = -blk
        _gemm_block(X, W + r0 * d, out + r0, <int>n, <int>nc, <int>d, <int>ldo)
        for i in range(n):
            if paired:
                n_bad += paired_split(out + i * ldo + r0, out + i * ldo + m + r0, nc, s)
            else:
                n_bad += phase_row(out + i * ldo + r0, offset + r0, nc, s)
    return n_bad


cdef inline Py_ssize_t _n_blocks(Py_ssize_t n, Py_ssize_t m, Py_ssize_t blk) noexcept nogil:
    if blk > 0:
        return (n + blk - 1) // blk
    return (m - blk - 1) // (-blk)


cdef Py_ssize_t _map(const floating *X, const floating *W, const floating *offset, floating *out,
               Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo, Py_ssize_t blk,
               int nt, Interrupt *intr, bint paired, floating s) noexcept nogil:
    """Both maps: blocks (``_block``) spread over ``nt`` threads (``_map_block``).  Returns the
    count of non-finite projections found (0: every feature is finite).  Ctrl-C is noticed
    between blocks (a block's gemm is one BLAS call)."""
    cdef Py_ssize_t c, n_bad = 0
    cdef Py_ssize_t n_chunks = _n_blocks(n, m, blk)
    for c in prange(n_chunks, schedule='static', num_threads=nt):
        if interrupted(intr):
            continue
        n_bad += _map_block(X, W, offset, out, n, m, d, ldo, blk, c, paired, s)
    return n_bad


cdef int _plan(str where, Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo,
               int chunk, int max_blocks, int n_threads, Py_ssize_t *blk, int *nt,
               Interrupt *intr) except -1:
    """Checks and the thread plan of one map (with the GIL, before the ``nogil`` block)."""
    check_threads(n_threads)
    if chunk < 1:
        raise ValueError(f"{where}: chunk must be >= 1, got {chunk}")
    check_blas_dims(where, m, d, ldo)
    blk[0] = _block(n, m, d, chunk, max_blocks)
    nb = _n_blocks(n, m, blk[0])
    nt[0] = effective_threads(n_threads, nb, _work(n, m, d), _PARALLEL_MIN_WORK)
    ensure_threads(nt[0])
    interrupt_init(intr, _work(n, m, d) // nb)
    return 0


def transform_paired(const floating[:, ::1] X, const floating[:, ::1] W, floating[:, ::1] out,
                     double scale, int n_threads, int chunk=512, int max_blocks=8):
    """out = scale * [cos(X W^T), sin(X W^T)], out of shape (n, 2m), W of shape (m, d).
    Returns 0, or a positive count when some projection was not finite (overflow)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = W.shape[0], n_bad
    if W.shape[1] != d or out.shape[0] != n or out.shape[1] != 2 * m:
        raise ValueError("transform_paired: inconsistent shapes X %s, W %s, out %s" % (
            (X.shape[0], X.shape[1]), (W.shape[0], W.shape[1]), (out.shape[0], out.shape[1])))
    cdef Py_ssize_t blk
    cdef int nt
    cdef Interrupt intr
    if n == 0 or m == 0:
        return 0
    _plan("transform_paired", n, m, d, 2 * m, chunk, max_blocks, n_threads, &blk, &nt, &intr)
    with nogil:
        n_bad = _map(&X[0, 0], &W[0, 0], NULL, &out[0, 0], n, m, d, 2 * m, blk, nt, &intr,
                     True, <floating>scale)
    raise_if_interrupted(&intr)
    return n_bad


def transform_phase(const floating[:, ::1] X, const floating[:, ::1] W,
                    const floating[::1] offset, floating[:, ::1] out, double scale,
                    int n_threads, int chunk=512, int max_blocks=8):
    """out = scale * cos(X W^T + offset), out of shape (n, m), W of shape (m, d).
    Returns 0, or a positive count when some projection was not finite (overflow)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = W.shape[0], n_bad
    if (W.shape[1] != d or out.shape[0] != n or out.shape[1] != m
            or offset.shape[0] != m):
        raise ValueError("transform_phase: inconsistent shapes X %s, W %s, offset %s, out %s" % (
            (X.shape[0], X.shape[1]), (W.shape[0], W.shape[1]), offset.shape[0],
            (out.shape[0], out.shape[1])))
    cdef Py_ssize_t blk
    cdef int nt
    cdef Interrupt intr
    if n == 0 or m == 0:
        return 0
    _plan("transform_phase", n, m, d, m, chunk, max_blocks, n_threads, &blk, &nt, &intr)
    with nogil:
        n_bad = _map(&X[0, 0], &W[0, 0], &offset[0], &out[0, 0], n, m, d, m, blk, nt, &intr,
                     False, <floating>scale)
    raise_if_interrupted(&intr)
    return n_bad
