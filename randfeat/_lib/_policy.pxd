# The one thread policy and the one Ctrl-C rule of randfeat's compiled kernels.
#
# Every kernel that runs a ``prange`` decides its number of threads with ``effective_threads``
# and nothing else (no second clamp in Python), and every loop that may run longer than about a
# second notices Ctrl-C through an ``Interrupt``.  This file is self-contained (cimport it; no
# .pyx of its own) and its API is stable: other kernels copy it as is.
#
# Thread policy
# -------------
#     nt = effective_threads(requested, items, work, min_work)
# gives the number of threads for a loop over ``items`` independent items that costs ``work``
# in total (in the loop's own unit, e.g. values passed through):
#   * at most ``requested`` threads, and at most ``MAX_THREADS`` (a guard: the Python layer
#     rejects larger requests with a clear error, see ``check_threads``);
#   * never more threads than items;
#   * one thread when ``work < min_work`` (waking a thread pool costs microseconds on an idle
#     machine and a scheduler time slice on a busy one; below ``min_work`` that loses);
#   * never fewer than one;
#   * one thread in a process created by fork() (see below).
# ``ensure_threads(nt)`` then checks, once per size and thread, that the OS can start them
# (a failed thread creation would make the OpenMP runtime abort the process), and
# ``check_threads(n)`` rejects requests above ``MAX_THREADS`` with a clear ValueError.
#
# Fork: GNU OpenMP cannot run a parallel region in a child created by fork() from a process
# that has used it (the child waits forever for the parent's pool threads).  A pthread_atfork
# handler marks the child, and ``effective_threads`` then returns 1 for the rest of its life:
# workers of ``multiprocessing`` with the "fork" start method compute on one thread each (use
# "forkserver" or "spawn" for multi-threaded workers).  Results are the same bits either way.
# Results never depend on it: the kernels only spread independent items over threads, so their
# output is bit-identical for every thread count.
#
# Ctrl-C in long loops
# --------------------
# Python runs signal handlers only between bytecodes, so a compiled call that holds no GIL for
# ten seconds sees Ctrl-C ten seconds late.  A loop notices it within a few milliseconds so:
#
#     cdef Interrupt intr
#     interrupt_init(&intr, work_per_item)            # before ``with nogil``
#     with nogil:
#         for i in prange(n, num_threads=nt, schedule="static"):
#             if interrupted(&intr):                  # cheap; every thread calls it per item
#                 continue                            # skip the rest once stopped
#             ... the work of item i ...
#     raise_if_interrupted(&intr)                     # after ``with nogil``: re-raise
#
# ``interrupted`` lets the master thread (OpenMP thread 0, which is the calling Python thread)
# take the GIL every ``CHECK_WORK`` units of work (about a millisecond) and run
# ``PyErr_CheckSignals``; when a handler raises (KeyboardInterrupt by default) it sets the shared
# stop flag, which every thread reads (atomically) before its next item.  The exception stays
# pending in the calling thread; ``raise_if_interrupted`` (a ``cdef ... except -1`` called with
# the GIL) then makes the ``def`` wrapper raise it.  Python handles signals only in the main
# thread, so calls from other Python threads never stop (as for pure Python code).  Results of
# a call that is not interrupted are unchanged: the check only reads a flag.
#
# Sequential loops (one thread) use the same calls: ``omp_get_thread_num()`` is 0 there.
#
# Who allocates memory (one rule for every kernel)
# -------------------------------------------------
# The Python layer (the estimator modules) allocates, validates and owns every array that
# crosses the boundary: inputs, fitted parameters and the output.  A kernel never takes a
# scratch buffer as an argument.  When it needs working memory for intermediate values (e.g. the
# d-long vectors Fastfood and SORF push through the FWHT) it allocates ONE block of per-thread
# scratch, after its thread count is fixed, with ``scratch_alloc`` (64-byte aligned rows, one per
# thread; MemoryError naming the kernel and the size when it fails) and frees it with
# ``scratch_free`` before returning, also on error and on Ctrl-C.  ``_rowmaps.run_rows`` does
# both for the row maps.  The C sources (fwht.c, rff_trig.c, fastfood_block.c) never allocate:
# they work in the buffers they are given.

from cpython.exc cimport PyErr_Occurred, PyErr_SetNone
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport uintptr_t


cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int rf_policy_thread_num(void) { return omp_get_thread_num(); }
    #else
    static int rf_policy_thread_num(void) { return 0; }
    #endif
    #if defined(__unix__) || defined(__APPLE__)
    #include <pthread.h>
    /* Fork safety.  GNU OpenMP keeps its worker threads in a pool; a child created by fork()
       has none of them but a pool that says they exist, so its first parallel region with 2+
       threads waits for them forever.  A process created by fork therefore runs every kernel
       on one thread (pthread_atfork child handler, registered when the extension loads). */
    static int rf_policy_forked = 0;
    static void rf_policy_on_fork_child(void) { rf_policy_forked = 1; }
    __attribute__((constructor)) static void rf_policy_register_atfork(void)
    {
        pthread_atfork(NULL, NULL, rf_policy_on_fork_child);
    }
    static int rf_policy_in_fork_child(void) { return rf_policy_forked; }

    /* Whether this OS thread can start a team of n threads: the OpenMP runtime kills the process
       when it fails to create one (EAGAIN from RLIMIT_NPROC, no memory for stacks), so we try
       first.  The largest team this thread has verified is remembered (its OpenMP pool keeps
       the threads); for a larger one, n - verified threads are created and held at once with
       the default attributes (as the runtime does), then released.  Returns the number of
       threads that could run together (n on success). */
    static __thread int rf_policy_verified = 1;
    static pthread_mutex_t rf_policy_gate = PTHREAD_MUTEX_INITIALIZER;
    static void *rf_policy_wait(void *arg)
    {
        (void)arg;
        pthread_mutex_lock(&rf_policy_gate);
        pthread_mutex_unlock(&rf_policy_gate);
        return NULL;
    }
    static int rf_policy_try_start(int n)
    {
        pthread_t ids[1024];
        int want, got = 0;
        if (n <= rf_policy_verified) return n;
        want = n - rf_policy_verified;
        if (want > 1024) want = 1024;
        pthread_mutex_lock(&rf_policy_gate);
        while (got < want && pthread_create(&ids[got], NULL, rf_policy_wait, NULL) == 0) got++;
        pthread_mutex_unlock(&rf_policy_gate);
        for (int i = 0; i < got; i++) pthread_join(ids[i], NULL);
        if (got < want) return rf_policy_verified + got;
        rf_policy_verified = n;
        return n;
    }
    #else
    static int rf_policy_in_fork_child(void) { return 0; }
    static int rf_policy_try_start(int n) { return n; }
    #endif
    #if defined(_MSC_VER)
    static int rf_policy_load(const int *p) { return *(const volatile int *)p; }
    static void rf_policy_store(int *p, int v) { *(volatile int *)p = v; }
    #else
    static int rf_policy_load(const int *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static void rf_policy_store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    #endif
    """
    # declared without ``except -1``: the exception it sets must stay pending (not be reported
    # as unraisable) until ``raise_if_interrupted`` raises it in the ``def`` wrapper
    int PyErr_CheckSignals() noexcept
    int rf_policy_thread_num() noexcept nogil
    int rf_policy_load(const int *p) noexcept nogil
    void rf_policy_store(int *p, int v) noexcept nogil
    int rf_policy_in_fork_child() noexcept nogil
    int rf_policy_try_start(int n) noexcept nogil


cdef enum:
    # Largest number of threads a kernel starts.  Far above any core count this library is run
    # on; requests above it are a mistake (e.g. n_threads=40000), which would otherwise let the
    # OpenMP runtime abort the process when it fails to create the threads.
    MAX_THREADS = 1024
    # Work (in units of roughly a nanosecond: a value passed through, a multiply-add) between two
    # signal checks of the master thread: about a millisecond.
    CHECK_WORK = 1048576


cdef inline int effective_threads(int requested, Py_ssize_t items, Py_ssize_t work,
                                  Py_ssize_t min_work) noexcept nogil:
    """Number of threads for ``items`` independent items of total ``work`` (see above)."""
    cdef Py_ssize_t nt = requested
    if nt > MAX_THREADS:
        nt = MAX_THREADS
    if nt > items:
        nt = items
    if work < min_work or rf_policy_in_fork_child():
        nt = 1
    if nt < 1:
        nt = 1
    return <int>nt


cdef inline bint in_fork_child() noexcept nogil:
    """Whether this process was created by fork() (its kernels then run on one thread)."""
    return rf_policy_in_fork_child() != 0


cdef inline int ensure_threads(int nt) except -1:
    """Raise RuntimeError when the OS cannot start ``nt`` threads together (call with the GIL,
    after ``effective_threads`` and before the ``prange``): the OpenMP runtime would otherwise
    abort the whole process.  Free once this thread has run a team of ``nt``."""
    cdef int got
    if nt <= 1:
        return 0
    got = rf_policy_try_start(nt)
    if got < nt:
        raise RuntimeError(
            f"could not start {nt} threads (the system allowed {got}: a process or memory "
            f"limit); pass a smaller n_threads, e.g. n_threads={max(1, got)}")
    return 0


cdef inline int check_threads(int requested) except -1:
    """Raise ValueError unless 1 <= requested <= MAX_THREADS (call with the GIL, before the
    kernel; the Python layer resolves ``n_threads=None`` to a count first)."""
    if requested < 1 or requested > MAX_THREADS:
        raise ValueError(
            f"n_threads must be between 1 and {MAX_THREADS}, got {requested}; pass a count "
            f"no larger than the number of cores (or None for all of them)")
    return 0


cdef struct Interrupt:
    int stop            # 1 once a signal handler raised; read by every thread (atomically)
    Py_ssize_t every    # items between two checks of the master thread
    Py_ssize_t left     # items left before its next check (written by the master thread only)


cdef inline void interrupt_init(Interrupt *it, Py_ssize_t work_per_item) noexcept nogil:
    """Prepare ``it`` for a loop whose items cost ``work_per_item`` each (any unit close to a
    nanosecond; it only sets how often the master thread checks, about every ``CHECK_WORK``)."""
    if work_per_item < 1:
        work_per_item = 1
    it.stop = 0
    it.every = CHECK_WORK // work_per_item
    if it.every < 1:
        it.every = 1
    it.left = it.every


cdef inline bint interrupted(Interrupt *it) noexcept nogil:
    """Call once per item inside the loop; True once the call was interrupted (skip the item).
    On the master thread, every ``it.every`` items, take the GIL and run the signal handlers."""
    if rf_policy_load(&it.stop):
        return True
    if rf_policy_thread_num() != 0:
        return False
    it.left -= 1
    if it.left > 0:
        return False
    it.left = it.every
    with gil:
        if PyErr_CheckSignals() != 0:
            rf_policy_store(&it.stop, 1)
            return True
    return False


cdef inline bint interrupt_now(Interrupt *it) noexcept nogil:
    """Between two sequential steps outside a parallel region (e.g. two BLAS calls): on the
    master thread, take the GIL and run the signal handlers now, whatever ``it.left`` says.
    True once the call was interrupted."""
    if rf_policy_load(&it.stop):
        return True
    if rf_policy_thread_num() != 0:
        return False
    it.left = it.every
    with gil:
        if PyErr_CheckSignals() != 0:
            rf_policy_store(&it.stop, 1)
            return True
    return False


cdef inline int raise_if_interrupted(Interrupt *it) except -1:
    """After the ``nogil`` block: raise the pending exception of an interrupted loop (the one
    the signal handler raised, KeyboardInterrupt by default); 0 otherwise."""
    if it.stop:
        if PyErr_Occurred() == NULL:
            PyErr_SetNone(KeyboardInterrupt)
        return -1
    return 0


cdef struct Scratch:
    void *raw               # what PyMem_RawMalloc returned (NULL: nothing to free)
    char *base              # first row, 64-byte aligned
    Py_ssize_t row_bytes    # bytes between two threads' rows (a multiple of 64)


cdef inline int scratch_alloc(Scratch *s, int nt, Py_ssize_t row_bytes, str where) except -1:
    """Per-thread scratch: ``nt`` rows of at least ``row_bytes`` bytes, each 64-byte aligned
    (call with the GIL, after the thread count is fixed; free with ``scratch_free``).  Raises
    MemoryError naming ``where`` and the size when the allocation fails."""
    cdef Py_ssize_t rb = (row_bytes + 63) // 64 * 64
    s.raw = NULL
    s.base = NULL
    s.row_bytes = rb
    if nt < 1:
        nt = 1
    if rb > 0 and nt > (<Py_ssize_t>((<size_t>-1) >> 2)) // rb:
        raise MemoryError(f"{where}: {nt} scratch rows of {row_bytes} bytes overflow the "
                          "address space")
    s.raw = PyMem_RawMalloc(<size_t>(nt * rb + 64))
    if s.raw == NULL:
        raise MemoryError(
            f"{where}: could not allocate {nt} per-thread scratch rows of {row_bytes} bytes "
            f"({nt * rb} bytes); pass a smaller n_threads")
    s.base = <char *>((<uintptr_t>s.raw + 63) & ~(<uintptr_t>63))
    return 0


cdef inline void *scratch_row(const Scratch *s, int t) noexcept nogil:
    """Thread ``t``'s scratch row."""
    return s.base + t * s.row_bytes


cdef inline void scratch_free(Scratch *s) noexcept nogil:
    if s.raw != NULL:
        PyMem_RawFree(s.raw)
    s.raw = NULL
    s.base = NULL
