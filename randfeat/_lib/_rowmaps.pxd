# The one row loop of the row-by-row feature maps (Fastfood, SORF): each row of X goes through
# all blocks of the structured matrix in a per-thread scratch buffer, then through the
# trigonometric part, and nothing else is shared between rows -- so rows run in a ``prange``
# and the output is bit-identical for every thread count.
#
# A map provides one ``RowFn`` per dtype (``row(args, i, scratch)``: row i of the output from
# row i of X, with the map's parameters in ``args``) and calls ``run_rows``, which applies the
# one thread policy, the one Ctrl-C rule and the one memory rule of ``_policy.pxd``.
from randfeat._lib._cpu cimport paired_row, phase_row
from randfeat._lib._openmp cimport omp_get_thread_num
from randfeat._lib._policy cimport (Interrupt, Scratch, check_threads, effective_threads,
                                    ensure_threads, interrupt_init, interrupted,
                                    raise_if_interrupted, scratch_alloc, scratch_free,
                                    scratch_row)

from cython cimport floating
from cython.parallel cimport prange


cdef enum Output:
    # What a row map writes (one entry point each on the Python side).
    PAIRED = 0        # scale [cos(p), sin(p)], 2 n_freq columns
    PHASE = 1         # scale cos(p + offset), n_freq columns
    PROJECTIONS = 2   # the projections p themselves, n_freq columns


ctypedef int (*RowFn)(const void *args, Py_ssize_t i, void *scratch) noexcept nogil
# Row i: 0 done, 1 done but a projection was not finite (its features are NaN), -1 the FWHT
# kernel refused the row (not computed).


cdef inline int finish_row(floating *out, Py_ssize_t n_freq, const floating *offsets,
                           floating mult, Output what) noexcept nogil:
    """The trigonometric part of one output row holding the n_freq projections, in place
    (vectorised kernels of ``src/rff_trig.c``, shared with RandomFourierFeatures)."""
    if what == PAIRED:
        return paired_row(out, n_freq, mult)
    elif what == PHASE:
        return phase_row(out, offsets, n_freq, mult)
    return 0


cdef inline Py_ssize_t run_rows(str where, RowFn row, const void *args, Py_ssize_t n,
                                int n_threads, Py_ssize_t work, Py_ssize_t min_work,
                                Py_ssize_t work_per_row, Py_ssize_t scratch_bytes) except -1:
    """Run ``row`` for i in 0..n-1 over the threads ``effective_threads(n_threads, n, work,
    min_work)``, each with its own ``scratch_bytes`` of scratch (``scratch_alloc``).  Ctrl-C is
    noticed about every millisecond of work (``work_per_row`` per row).  Returns the number of
    rows with a non-finite projection; raises ValueError (n_threads), MemoryError (scratch),
    RuntimeError (the FWHT kernel refused rows) or the pending KeyboardInterrupt."""
    cdef Py_ssize_t i, n_bad = 0, n_err = 0
    cdef int r, nt
    cdef Scratch scr
    cdef Interrupt intr
    check_threads(n_threads)
    if n == 0:
        return 0
    nt = effective_threads(n_threads, n, work, min_work)
    ensure_threads(nt)
    scratch_alloc(&scr, nt, scratch_bytes, where)
    interrupt_init(&intr, work_per_row)
    try:
        with nogil:
            if nt == 1:
                for i in range(n):
                    if interrupted(&intr):
                        break
                    r = row(args, i, scratch_row(&scr, 0))
                    if r < 0:
                        n_err = n_err + 1
                    else:
                        n_bad = n_bad + r
            else:
                for i in prange(n, schedule="static", num_threads=nt):
                    if interrupted(&intr):
                        continue
                    # this thread's scratch row (allocated once per call, reused for every row)
                    r = row(args, i, scratch_row(&scr, omp_get_thread_num()))
                    if r < 0:
                        n_err += 1
                    else:
                        n_bad += r
    finally:
        scratch_free(&scr)
    raise_if_interrupted(&intr)
    if n_err:
        raise RuntimeError(f"{where}: the FWHT kernel refused {n_err} of {n} rows")
    return n_bad
