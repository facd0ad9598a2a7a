"""Compiled pointwise parts of the projection-based maps that are not Fourier features: the
squared row norms (accumulated in double, also for float32 input) and the trigonometric softmax
features of :class:`randfeat.PositiveRandomFeatures` (RandomFourierFeatures' vectorised sin/cos
with a per-row factor).

Private: :class:`randfeat.PositiveRandomFeatures` and :class:`randfeat.ArcCosineFeatures`
validate, draw the random parameters, project (``X @ W.T``, one BLAS call or scipy's sparse
product) and allocate.  Every function here runs one output row per ``prange`` item, nothing
shared between rows, so the output is bit-identical for every thread count (the thread policy
and Ctrl-C rule of ``_policy.pxd``).

Measured and left to NumPy (row chunks fixed by the shape, in ``randfeat/positive.py`` and
``randfeat/arccos.py``): the exponential of the positive features (NumPy's SIMD ``exp`` in
float64 was 1.9-3.4x faster per value than a ``prange`` loop of libm's scalar ``exp`` on one
core) and the arc-cosine step/ReLU/square pass (NumPy's SIMD ``maximum``/``multiply``, 5-40x
faster than a compiled branchy loop, which GCC does not vectorise at the baseline ISA); AMD EPYC
Zen 4, loaded host, 20-2000 x 4096 values, interleaved repetitions, when this was written.
"""
from libc.math cimport exp, isfinite

from cython cimport floating
from cython.parallel cimport prange

from randfeat._lib._cpu cimport paired_row
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)


# Below this much work (values passed through, roughly nanoseconds) a call stays on the calling
# thread (see _policy.pxd); the output does not depend on it.
cdef enum:
    _PARALLEL_MIN_WORK = 4194304


cdef int _start(int n_threads, Py_ssize_t n_rows, Py_ssize_t work) except -1:
    cdef int nt
    check_threads(n_threads)
    nt = effective_threads(n_threads, n_rows, work, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    return nt


def check_thread_request(int n_threads):
    """Raise ValueError unless 1 <= n_threads <= MAX_THREADS (the one policy of
    ``_policy.pxd``; for passes that run on NumPy's loops in a thread pool)."""
    check_threads(n_threads)


def sq_norms(const floating[:, ::1] X, double[::1] out, int n_threads):
    """``out[i] = sum_j X[i, j]**2``, accumulated in double precision."""
    cdef Py_ssize_t i, j, n = X.shape[0], d = X.shape[1]
    cdef double acc, v
    cdef int nt
    if out.shape[0] != n:
        raise ValueError(f"sq_norms: out has {out.shape[0]} entries for {n} rows")
    nt = _start(n_threads, n, n * d)
    if n == 0:
        return
    with nogil:
        for i in prange(n, schedule='static', num_threads=nt):
            acc = 0.0
            for j in range(d):
                v = X[i, j]
                acc = acc + v * v
            out[i] = acc


def trig_features(floating[:, ::1] buf, Py_ssize_t m, const double[::1] logscale,
                  int n_threads):
    """Trigonometric features with a per-row factor, in place: ``buf[:, :m]`` holds the
    projections; write ``exp(logscale[i]) cos`` there and ``exp(logscale[i]) sin`` into
    ``buf[:, m:2m]`` (the vectorised sin/cos kernel of RandomFourierFeatures, ``src/rff_trig.c``,
    with the factor rounded to the dtype once per row).  Returns the number of rows with a
    non-finite value (a non-finite projection, or a factor beyond the dtype's range)."""
    cdef Py_ssize_t i, n = buf.shape[0], n_bad = 0
    cdef int nt
    cdef floating s
    cdef Interrupt intr
    if buf.shape[1] != 2 * m:
        raise ValueError(f"trig_features: buffer has {buf.shape[1]} columns, expected {2 * m}")
    if logscale.shape[0] != n:
        raise ValueError(f"trig_features: {logscale.shape[0]} scales for {n} rows")
    nt = _start(n_threads, n, n * m * 16)
    if n == 0 or m == 0:
        return 0
    interrupt_init(&intr, m * 16)
    with nogil:
        for i in prange(n, schedule='static', num_threads=nt):
            if interrupted(&intr):
                continue
            s = <floating>exp(logscale[i])
            if isfinite(s):
                n_bad += paired_row(&buf[i, 0], m, s)
            else:
                n_bad += 1
    raise_if_interrupted(&intr)
    return n_bad
