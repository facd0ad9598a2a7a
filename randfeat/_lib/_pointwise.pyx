"""Compiled pointwise parts of the projection-based feature maps that are not Fourier features:
the trigonometric softmax features of :class:`randfeat.PositiveRandomFeatures` and arc-cosine
features.

Private: use :class:`randfeat.PositiveRandomFeatures` and :class:`randfeat.ArcCosineFeatures`,
which validate, draw the random parameters, project (``X @ W.T``, one BLAS call or scipy's
sparse product) and allocate.  Every function here works in place on that projection, one
output row per ``prange`` item, nothing shared between rows, so the output is bit-identical for
every thread count (the thread policy and Ctrl-C rule of ``_policy.pxd``).

The exponential of the positive features is not here: NumPy's SIMD ``exp`` (float64, on row
chunks, in ``randfeat/positive.py``) was measured 1.9-3.4x faster per value than a ``prange``
loop of libm's scalar ``exp`` on one core (AMD EPYC Zen 4, loaded host, 2000 x 4096 values,
interleaved repetitions, when this module was written).
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


cdef inline int _relu_row(floating *row, Py_ssize_t m, int order, double scale) noexcept nogil:
    """``row[j] = scale * Theta(p) * p**order`` (``Theta(0) = 0``).  Returns 1 when a value is
    not finite (a non-finite projection, or a square beyond the dtype's range)."""
    cdef Py_ssize_t j
    cdef double p
    cdef floating a
    cdef int bad = 0
    for j in range(m):
        p = row[j]
        if not isfinite(p):
            bad = 1
            a = <floating>p
        elif p > 0:
            if order == 0:
                a = <floating>scale
            elif order == 1:
                a = <floating>(scale * p)
            else:
                a = <floating>(scale * (p * p))
                if not isfinite(a):
                    bad = 1
        else:
            a = 0
        row[j] = a
    return bad


def relu_power(floating[:, ::1] buf, int order, double scale, int n_threads):
    """Arc-cosine features in place: ``buf[i, j] = scale * Theta(p) * p**order`` for the
    projection ``p = buf[i, j]``, order 0, 1 or 2.  Returns the number of rows with a
    non-finite value."""
    cdef Py_ssize_t i, n = buf.shape[0], m = buf.shape[1], n_bad = 0
    cdef int nt
    cdef Interrupt intr
    if order < 0 or order > 2:
        raise ValueError(f"relu_power: order must be 0, 1 or 2, got {order}")
    nt = _start(n_threads, n, n * m)
    if n == 0 or m == 0:
        return 0
    interrupt_init(&intr, m)
    with nogil:
        for i in prange(n, schedule='static', num_threads=nt):
            if interrupted(&intr):
                continue
            n_bad += _relu_row(&buf[i, 0], m, order, scale)
    raise_if_interrupted(&intr)
    return n_bad
