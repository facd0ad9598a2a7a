"""Compiled random Fourier feature maps.

Private: use :class:`randfeat.RandomFourierFeatures`, which validates, draws the random
parameters and allocates.  ``transform_paired``/``transform_phase`` cut the projection X W^T
into gemm blocks (``Blocks``, ``_plan_blocks``): the larger of the two dimensions (rows of X or
frequencies) into at most ``max_blocks`` blocks of at least ``chunk`` values, one block when the
whole job is below the threading threshold.  The blocks depend on the shapes and
``max_blocks`` only, never on the thread count, and a row's result depends only on its block,
so the output is bit-identical for any thread count.  Two ways to run them, chosen by the
caller (``blas_single_threaded``); neither changes the BLAS's thread count, which is the
user's (threadpoolctl):

* fused (the process's BLAS is single-threaded): ONE parallel region; each OpenMP thread
  projects its blocks by a BLAS gemm straight into the output buffer, then applies the cos/sin
  while the block is still in cache.  One thread pool, one hand-off per call.  BLAS picks its
  micro-kernels by matrix shape, so cutting differently can change float64 results by an ulp:
  the caller passes a ``max_blocks`` fixed for the machine, ``min(8, os.cpu_count())``, or the
  thread count when ``gemm_cut_invariant`` finds the BLAS insensitive to the cut for that dtype.
* BLAS-threaded (default): block after block, one gemm from the calling thread with the BLAS's
  own threads, then the cos/sin of the block's rows over the OpenMP threads.  The caller passes
  a ``max_blocks`` that depends on nothing but the machine-independent rule it chose.

``paired_inplace``/``phase_inplace`` apply only the trigonometric part to a given projection.
The per-row work is in ``src/rff_trig.c`` (vectorised sin/cos, chosen at run time for the CPU),
compiled into ``_cpu`` (the one owner of the C kernels).
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange

from scipy.linalg.cython_blas cimport dgemm, sgemm

from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupt_now, interrupted,
                                    raise_if_interrupted)
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


cdef struct Blocks:
    # How one map's projection is cut into gemm blocks (``_plan_blocks``).
    bint by_rows          # True: blocks of rows of X, each with every frequency;
                          # False: blocks of frequencies, each with every row
    Py_ssize_t length     # rows (or frequencies) per block; the last block may be shorter
    Py_ssize_t count      # number of blocks


cdef Blocks _plan_blocks(Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t chunk,
                         Py_ssize_t max_blocks) noexcept nogil:
    """Cut the larger L of n (rows) and m (frequencies) into at most ``max_blocks`` blocks of at
    least ``chunk`` (512) -- more when a block would exceed 2**32 of work (Ctrl-C is noticed
    between blocks) --, or keep one block when the job is too small to be threaded: every
    gemm call re-packs the whole operand that is not split, so every extra block costs time on
    one thread (measured in benchmarks/README.md).  Depends on the shapes and
    ``max_blocks`` only, never on the thread count, so the result is identical for any number
    of threads."""
    cdef Blocks bl
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
    bl.by_rows = n > m
    bl.length = b
    bl.count = (L + b - 1) // b
    return bl


cdef inline Py_ssize_t _block_start(const Blocks *bl, Py_ssize_t c) noexcept nogil:
    return c * bl.length


cdef inline Py_ssize_t _block_size(const Blocks *bl, Py_ssize_t c, Py_ssize_t n,
                                   Py_ssize_t m) noexcept nogil:
    cdef Py_ssize_t L = n if bl.by_rows else m
    cdef Py_ssize_t nc = L - c * bl.length
    return nc if nc < bl.length else bl.length


cdef inline Py_ssize_t _block_rows(const Blocks *bl, Py_ssize_t c, Py_ssize_t n,
                                   Py_ssize_t m) noexcept nogil:
    """Number of output rows block ``c`` touches."""
    return _block_size(bl, c, n, m) if bl.by_rows else n


cdef inline void _gemm_of_block(const floating *X, const floating *W, floating *out,
                                Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo,
                                const Blocks *bl, Py_ssize_t c) noexcept nogil:
    """The projections of block ``c``, straight into ``out`` (row stride ``ldo``)."""
    cdef Py_ssize_t r0 = _block_start(bl, c), nc = _block_size(bl, c, n, m)
    if bl.by_rows:   # rows r0 .. r0 + nc, all frequencies
        _gemm_block(X + r0 * d, W, out + r0 * ldo, <int>nc, <int>m, <int>d, <int>ldo)
    else:            # frequencies r0 .. r0 + nc, all rows
        _gemm_block(X, W + r0 * d, out + r0, <int>n, <int>nc, <int>d, <int>ldo)


cdef inline Py_ssize_t _trig_of_block_row(floating *out, const floating *offset, Py_ssize_t n,
                                          Py_ssize_t m, Py_ssize_t ldo, const Blocks *bl,
                                          Py_ssize_t c, Py_ssize_t k, bint paired,
                                          floating s) noexcept nogil:
    """The trigonometric part, in place, of the k-th output row that block ``c`` touches
    (paired: cos over out[i, :m], sin into out[i, m:2m]; phase: cos(. + offset)).  Returns 1
    when one of its projections was not finite."""
    cdef Py_ssize_t r0 = _block_start(bl, c), nc = _block_size(bl, c, n, m)
    cdef floating *row
    if bl.by_rows:   # the whole row r0 + k
        row = out + (r0 + k) * ldo
        if paired:
            return paired_split(row, row + m, m, s)
        return phase_row(row, offset, m, s)
    row = out + k * ldo + r0     # frequencies r0 .. r0 + nc of row k
    if paired:
        return paired_split(row, row + m, nc, s)
    return phase_row(row, offset + r0, nc, s)


cdef Py_ssize_t _map_fused(const floating *X, const floating *W, const floating *offset,
                           floating *out, Py_ssize_t n, Py_ssize_t m, Py_ssize_t d,
                           Py_ssize_t ldo, const Blocks *bl, int nt, Interrupt *intr,
                           bint paired, floating s) noexcept nogil:
    """Blocks spread over ``nt`` OpenMP threads; each thread projects its block by a BLAS call
    (which must be single-threaded: the caller checks) and applies the trigonometric part
    while the block is in cache.  Returns the count of non-finite projections found (0: every
    feature is finite).  Ctrl-C is noticed between blocks (a block's gemm is one BLAS call)."""
    cdef Py_ssize_t c, k, n_bad = 0
    for c in prange(bl.count, schedule='static', num_threads=nt):
        if interrupted(intr):
            continue
        _gemm_of_block(X, W, out, n, m, d, ldo, bl, c)
        for k in range(_block_rows(bl, c, n, m)):
            n_bad += _trig_of_block_row(out, offset, n, m, ldo, bl, c, k, paired, s)
    return n_bad


cdef Py_ssize_t _map_blas_threads(const floating *X, const floating *W,
                                  const floating *offset, floating *out, Py_ssize_t n,
                                  Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo, const Blocks *bl,
                                  int nt, Interrupt *intr, bint paired,
                                  floating s) noexcept nogil:
    """Block after block: one BLAS call from the calling thread, with whatever threads the
    process's BLAS has, then the trigonometric part of the block's rows over ``nt`` OpenMP
    threads.  Returns the count of non-finite projections.  Ctrl-C is noticed between blocks
    and between rows of the trigonometric pass."""
    cdef Py_ssize_t c, k, n_bad = 0
    for c in range(bl.count):
        if interrupted(intr) or (c > 0 and interrupt_now(intr)):
            break
        _gemm_of_block(X, W, out, n, m, d, ldo, bl, c)
        for k in prange(_block_rows(bl, c, n, m), schedule='static', num_threads=nt):
            if interrupted(intr):
                continue
            n_bad += _trig_of_block_row(out, offset, n, m, ldo, bl, c, k, paired, s)
    return n_bad


cdef int _plan(str where, Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo,
               int chunk, int max_blocks, int n_threads, bint blas_single_threaded,
               Blocks *bl, int *nt, Interrupt *intr) except -1:
    """Checks and the thread plan of one map (with the GIL, before the ``nogil`` block)."""
    check_threads(n_threads)
    if chunk < 1:
        raise ValueError(f"{where}: chunk must be >= 1, got {chunk}")
    check_blas_dims(where, m, d, ldo)
    bl[0] = _plan_blocks(n, m, d, chunk, max_blocks)
    if blas_single_threaded:
        # threads over blocks; an item is a block's gemm and trigonometric part
        nt[0] = effective_threads(n_threads, bl.count, _work(n, m, d), _PARALLEL_MIN_WORK)
        interrupt_init(intr, _work(n, m, d) // bl.count)
    else:
        # threads over the rows of a block's trigonometric pass (16 units a value)
        nt[0] = effective_threads(n_threads, _block_rows(bl, 0, n, m),
                                  _block_rows(bl, 0, n, m) * (m if bl.by_rows else bl.length)
                                  * 16, _PARALLEL_MIN_WORK)
        interrupt_init(intr, 16 * (m if bl.by_rows else bl.length))
    ensure_threads(nt[0])
    return 0


cdef Py_ssize_t _run(const floating *X, const floating *W, const floating *offset,
                     floating *out, Py_ssize_t n, Py_ssize_t m, Py_ssize_t d, Py_ssize_t ldo,
                     const Blocks *bl, int nt, Interrupt *intr, bint paired, floating s,
                     bint blas_single_threaded) noexcept nogil:
    if blas_single_threaded:
        return _map_fused(X, W, offset, out, n, m, d, ldo, bl, nt, intr, paired, s)
    return _map_blas_threads(X, W, offset, out, n, m, d, ldo, bl, nt, intr, paired, s)


def transform_paired(const floating[:, ::1] X, const floating[:, ::1] W, floating[:, ::1] out,
                     double scale, int n_threads, int chunk=512, int max_blocks=8, *,
                     bint blas_single_threaded=False):
    """out = scale * [cos(X W^T), sin(X W^T)], out of shape (n, 2m), W of shape (m, d).

    ``blas_single_threaded``: the caller found every BLAS of the process single-threaded, so
    the blocks' gemm calls may run inside the OpenMP region (fused); otherwise (default) they
    are made from the calling thread with the BLAS's own threads and only the trigonometric
    part runs on ``n_threads`` threads.  This function never changes the BLAS's thread count.
    Returns 0, or a positive count when some projection was not finite (overflow)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = W.shape[0], n_bad
    if W.shape[1] != d or out.shape[0] != n or out.shape[1] != 2 * m:
        raise ValueError("transform_paired: inconsistent shapes X %s, W %s, out %s" % (
            (X.shape[0], X.shape[1]), (W.shape[0], W.shape[1]), (out.shape[0], out.shape[1])))
    cdef Blocks bl
    cdef int nt
    cdef Interrupt intr
    if n == 0 or m == 0:
        return 0
    _plan("transform_paired", n, m, d, 2 * m, chunk, max_blocks, n_threads,
          blas_single_threaded, &bl, &nt, &intr)
    with nogil:
        n_bad = _run(&X[0, 0], &W[0, 0], NULL, &out[0, 0], n, m, d, 2 * m, &bl, nt, &intr,
                     True, <floating>scale, blas_single_threaded)
    raise_if_interrupted(&intr)
    return n_bad


def transform_phase(const floating[:, ::1] X, const floating[:, ::1] W,
                    const floating[::1] offset, floating[:, ::1] out, double scale,
                    int n_threads, int chunk=512, int max_blocks=8, *,
                    bint blas_single_threaded=False):
    """out = scale * cos(X W^T + offset), out of shape (n, m), W of shape (m, d).
    ``blas_single_threaded`` as in ``transform_paired``.  Returns 0, or a positive count when
    some projection was not finite (overflow)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], m = W.shape[0], n_bad
    if (W.shape[1] != d or out.shape[0] != n or out.shape[1] != m
            or offset.shape[0] != m):
        raise ValueError("transform_phase: inconsistent shapes X %s, W %s, offset %s, out %s" % (
            (X.shape[0], X.shape[1]), (W.shape[0], W.shape[1]), offset.shape[0],
            (out.shape[0], out.shape[1])))
    cdef Blocks bl
    cdef int nt
    cdef Interrupt intr
    if n == 0 or m == 0:
        return 0
    _plan("transform_phase", n, m, d, m, chunk, max_blocks, n_threads, blas_single_threaded,
          &bl, &nt, &intr)
    with nogil:
        n_bad = _run(&X[0, 0], &W[0, 0], &offset[0], &out[0, 0], n, m, d, m, &bl, nt, &intr,
                     False, <floating>scale, blas_single_threaded)
    raise_if_interrupted(&intr)
    return n_bad
