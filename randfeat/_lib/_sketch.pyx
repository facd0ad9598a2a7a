"""Compiled kernels of the dot-product and additive maps.  Private: use
:class:`randfeat.PolynomialCountSketch`, :class:`randfeat.RandomMaclaurin` and
:class:`randfeat.AdditiveChi2Sampler`, which validate, draw the random parameters and allocate.

* ``count_sketch_dense`` / ``count_sketch_csr``: the ``p`` count sketches of every row of X
  (TensorSketch's first step, Pham & Pagh 2013): ``out[i, j, h_j(k)] += s_j(k) * scale * x_ik``
  for every input coordinate k, plus one appended coordinate of value ``extra`` when the hash
  tables have one column more than X (the ``sqrt(coef0)`` coordinate of the polynomial kernel).
* ``spectrum_product``: the product over the ``p`` sketches of their real FFTs (the frequency
  domain form of their circular convolution), in place into the first one.
* ``segment_products``: Random Maclaurin's features, the products of consecutive columns of the
  projection matrix (one segment per feature) times a per-feature coefficient.
* ``additive_chi2_dense`` / ``additive_chi2_values``: Vedaldi & Zisserman's sampled map of the
  additive chi2 kernel, per entry.

Every kernel is ``noexcept nogil``, typed float32/float64 (fused), and runs its rows in a
``prange`` (one row's result depends on that row only, and is computed in the same order
whatever the thread count, so the output is bit-identical for every ``n_threads``).  Indices
read from the caller's arrays (hash buckets, CSR columns, segment bounds) are checked here,
before the ``nogil`` loop: reading or writing past an array would be out of bounds.
"""
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport cos, cosf, log, logf, sin, sinf, sqrt, sqrtf
from libc.stdint cimport int64_t
from libc.string cimport memset

from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads,
                                    ensure_threads, interrupt_init, interrupted,
                                    raise_if_interrupted)

ctypedef fused index_t:
    int
    long long


# Below this much work (values passed through, roughly nanoseconds) a loop stays on the calling
# thread: waking a pool costs a scheduler time slice on a busy machine.  The output does not
# depend on it.
cdef enum:
    _PARALLEL_MIN_WORK = 4194304


cdef int _check_hash(str where, const int64_t[:, ::1] index, const signed char[:, ::1] sign,
                     Py_ssize_t n_buckets) except -1:
    cdef Py_ssize_t j, k, p = index.shape[0], dd = index.shape[1]
    cdef int64_t v
    if sign.shape[0] != p or sign.shape[1] != dd:
        raise ValueError(f"{where}: the sign table has shape ({sign.shape[0]}, {sign.shape[1]}) "
                         f"but the bucket table ({p}, {dd})")
    for j in range(p):
        for k in range(dd):
            v = index[j, k]
            if v < 0 or v >= n_buckets:
                raise ValueError(f"{where}: bucket index {v} at ({j}, {k}) is outside "
                                 f"[0, {n_buckets})")
    return 0


def count_sketch_dense(const floating[:, ::1] X, const int64_t[:, ::1] index,
                       const signed char[:, ::1] sign, double scale, double extra,
                       floating[:, :, ::1] out, int n_threads):
    """``out[i, j]`` = count sketch j of row i of ``[scale * X, extra]`` (n_buckets = D =
    ``out.shape[2]``).

    ``index``/``sign``: (p, d) or (p, d + 1) bucket and sign tables; with d + 1 columns the last
    one hashes the appended coordinate of value ``extra``.  ``out`` is (n, p, D) and is
    overwritten.  Raises ValueError for inconsistent shapes or buckets outside [0, D)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], p = index.shape[0], D = out.shape[2]
    cdef Py_ssize_t i, j, k
    cdef int nt
    cdef bint has_extra = index.shape[1] == d + 1
    cdef floating s = <floating>scale
    cdef floating e = <floating>extra
    cdef floating *o
    cdef const floating *x
    cdef const int64_t *h
    cdef const signed char *g
    cdef Interrupt intr
    if index.shape[1] != d and not has_extra:
        raise ValueError(f"count_sketch_dense: X has {d} columns, the hash tables "
                         f"{index.shape[1]} (d or d + 1 expected)")
    if out.shape[0] != n or out.shape[1] != p:
        raise ValueError(f"count_sketch_dense: out has shape ({out.shape[0]}, {out.shape[1]}, "
                         f"{D}), expected ({n}, {p}, D)")
    _check_hash("count_sketch_dense", index, sign, D)
    check_threads(n_threads)
    if n == 0 or p == 0 or D == 0:
        return None
    nt = effective_threads(n_threads, n, n * p * (d + D), _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    interrupt_init(&intr, p * (d + D))
    with nogil:
        for i in prange(n, schedule="static", num_threads=nt):
            if interrupted(&intr):
                continue
            x = &X[i, 0]
            for j in range(p):
                o = &out[i, j, 0]
                memset(o, 0, D * sizeof(floating))
                h = &index[j, 0]
                g = &sign[j, 0]
                for k in range(d):
                    o[h[k]] += <floating>g[k] * (s * x[k])
                if has_extra:
                    o[h[d]] += <floating>g[d] * e
    raise_if_interrupted(&intr)
    return None


def count_sketch_csr(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, Py_ssize_t d, const int64_t[:, ::1] index,
                     const signed char[:, ::1] sign, double scale, double extra,
                     floating[:, :, ::1] out, int n_threads):
    """``count_sketch_dense`` for a CSR matrix (``data``, ``indices``, ``indptr``) of ``d``
    columns: only the stored entries are visited.  Raises ValueError for column indices outside
    [0, d) or an inconsistent ``indptr``."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, p = index.shape[0], D = out.shape[2]
    cdef Py_ssize_t i, j, t, nnz = data.shape[0]
    cdef int nt
    cdef bint has_extra = index.shape[1] == d + 1
    cdef floating s = <floating>scale
    cdef floating e = <floating>extra
    cdef floating *o
    cdef const int64_t *h
    cdef const signed char *g
    cdef index_t c
    cdef Interrupt intr
    if n < 0:
        raise ValueError("count_sketch_csr: indptr is empty")
    if index.shape[1] != d and not has_extra:
        raise ValueError(f"count_sketch_csr: X has {d} columns, the hash tables "
                         f"{index.shape[1]} (d or d + 1 expected)")
    if out.shape[0] != n or out.shape[1] != p:
        raise ValueError(f"count_sketch_csr: out has shape ({out.shape[0]}, {out.shape[1]}, "
                         f"{D}), expected ({n}, {p}, D)")
    if indices.shape[0] != nnz or indptr[0] != 0 or indptr[n] != nnz:
        raise ValueError("count_sketch_csr: inconsistent CSR arrays")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("count_sketch_csr: indptr is not non-decreasing")
    for t in range(nnz):
        if indices[t] < 0 or indices[t] >= d:
            raise ValueError(f"count_sketch_csr: column index {indices[t]} outside [0, {d})")
    _check_hash("count_sketch_csr", index, sign, D)
    check_threads(n_threads)
    if n == 0 or p == 0 or D == 0:
        return None
    nt = effective_threads(n_threads, n, p * (nnz + n * D), _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    interrupt_init(&intr, p * (D + nnz // n + 1))
    with nogil:
        for i in prange(n, schedule="static", num_threads=nt):
            if interrupted(&intr):
                continue
            for j in range(p):
                o = &out[i, j, 0]
                memset(o, 0, D * sizeof(floating))
                h = &index[j, 0]
                g = &sign[j, 0]
                for t in range(indptr[i], indptr[i + 1]):
                    c = indices[t]
                    o[h[c]] += <floating>g[c] * (s * data[t])
                if has_extra:
                    o[h[d]] += <floating>g[d] * e
    raise_if_interrupted(&intr)
    return None


def spectrum_product(floating[:, :, ::1] F, int n_threads):
    """``F`` (n, p, 2 m) holds the m complex values of p half spectra per row as (re, im)
    pairs (a complex array viewed as reals); on return ``F[i, 0]`` is their product
    ``prod_j F[i, j]`` (computed left to right), the other sketches are left as they were."""
    cdef Py_ssize_t n = F.shape[0], p = F.shape[1], m2 = F.shape[2]
    cdef Py_ssize_t i, j, t
    cdef floating ar, ai, br, bi
    cdef floating *a
    cdef const floating *b
    cdef int nt
    if m2 % 2:
        raise ValueError(f"spectrum_product: the last axis has {m2} reals, not (re, im) pairs")
    check_threads(n_threads)
    if n == 0 or p <= 1:
        return None
    nt = effective_threads(n_threads, n, n * p * m2 * 2, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for i in prange(n, schedule="static", num_threads=nt):
            a = &F[i, 0, 0]
            for j in range(1, p):
                b = &F[i, j, 0]
                for t in range(0, m2, 2):
                    ar = a[t]
                    ai = a[t + 1]
                    br = b[t]
                    bi = b[t + 1]
                    a[t] = ar * br - ai * bi
                    a[t + 1] = ar * bi + ai * br
    return None


def segment_products(const floating[:, ::1] P, const int64_t[::1] starts,
                     const floating[::1] coef, floating[:, ::1] out, int n_threads):
    """``out[i, f] = coef[f] * prod(P[i, starts[f]:starts[f + 1]])`` (an empty product is 1),
    the features of Random Maclaurin from the projections ``P`` (n, M).  ``starts`` has
    ``out.shape[1] + 1`` non-decreasing entries from 0 to M."""
    cdef Py_ssize_t n = P.shape[0], M = P.shape[1], D = out.shape[1]
    cdef Py_ssize_t i, f, c
    cdef floating acc
    cdef int nt
    if starts.shape[0] != D + 1 or coef.shape[0] != D:
        raise ValueError(f"segment_products: {starts.shape[0]} segment bounds and "
                         f"{coef.shape[0]} coefficients for {D} features")
    if out.shape[0] != n:
        raise ValueError(f"segment_products: out has {out.shape[0]} rows for {n} rows of P")
    if starts[0] != 0 or starts[D] != M:
        raise ValueError(f"segment_products: the segments cover [{starts[0]}, {starts[D]}), "
                         f"not the {M} columns of P")
    for f in range(D):
        if starts[f + 1] < starts[f]:
            raise ValueError("segment_products: segment bounds are not non-decreasing")
    check_threads(n_threads)
    if n == 0 or D == 0:
        return None
    nt = effective_threads(n_threads, n, n * (M + D), _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for i in prange(n, schedule="static", num_threads=nt):
            for f in range(D):
                acc = coef[f]
                for c in range(starts[f], starts[f + 1]):
                    acc = acc * P[i, c]
                out[i, f] = acc


cdef inline void _chi2_value(floating x, Py_ssize_t steps, double L, const double *cosh_j,
                             floating *o, Py_ssize_t stride) noexcept nogil:
    """The 2 steps - 1 features of one entry x >= 0, written at o[0], o[stride], ... in the
    order sqrt, cos 1, sin 1, cos 2, sin 2, ...; the expressions (and their order of
    evaluation) are scikit-learn's: sqrt(x L), sqrt(2 x L / cosh(pi j L)) * cos(j L log x)."""
    cdef Py_ssize_t j
    cdef floating lg, step, f
    cdef double fd
    cdef floating Lf = <floating>L
    if x == 0:
        for j in range(2 * steps - 1):
            o[j * stride] = 0
        return
    if floating is float:
        o[0] = sqrtf(x * Lf)
        lg = Lf * logf(x)
    else:
        o[0] = sqrt(x * Lf)
        lg = Lf * log(x)
    step = 2 * x * Lf
    for j in range(1, steps):
        if floating is float:
            # scikit-learn divides the float32 step by a float64 scalar: the factor and the
            # product are float64, then stored as float32
            fd = sqrt(<double>step / cosh_j[j])
            o[(2 * j - 1) * stride] = <float>(fd * <double>cosf(<float>j * lg))
            o[2 * j * stride] = <float>(fd * <double>sinf(<float>j * lg))
        else:
            f = sqrt(step / cosh_j[j])
            o[(2 * j - 1) * stride] = f * cos(<double>j * lg)
            o[2 * j * stride] = f * sin(<double>j * lg)


def additive_chi2_dense(const floating[:, ::1] X, Py_ssize_t steps, double L,
                        const double[::1] cosh_j, floating[:, ::1] out, int n_threads):
    """Row i of ``out`` (n, (2 steps - 1) d) = [sqrt | cos 1 | sin 1 | ... ] blocks of d columns
    (scikit-learn's layout) for row i of X (entries >= 0, checked by the caller);
    ``cosh_j[j] = cosh(pi j L)``."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, k
    cdef int nt
    if steps < 1 or cosh_j.shape[0] < steps:
        raise ValueError(f"additive_chi2_dense: steps={steps} with {cosh_j.shape[0]} cosh values")
    if out.shape[0] != n or out.shape[1] != (2 * steps - 1) * d:
        raise ValueError(f"additive_chi2_dense: out has shape ({out.shape[0]}, {out.shape[1]}), "
                         f"expected ({n}, {(2 * steps - 1) * d})")
    check_threads(n_threads)
    if n == 0 or d == 0:
        return None
    nt = effective_threads(n_threads, n, n * d * steps * 40, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for i in prange(n, schedule="static", num_threads=nt):
            for k in range(d):
                _chi2_value(X[i, k], steps, L, &cosh_j[0], &out[i, k], d)
    return None


def additive_chi2_values(const floating[::1] data, Py_ssize_t steps, double L,
                         const double[::1] cosh_j, floating[:, ::1] out, int n_threads):
    """``out[:, t]`` = the 2 steps - 1 features of ``data[t]`` (the stored entries of a sparse
    matrix); ``out`` is (2 steps - 1, nnz)."""
    cdef Py_ssize_t nnz = data.shape[0], t
    cdef int nt
    if steps < 1 or cosh_j.shape[0] < steps:
        raise ValueError(f"additive_chi2_values: steps={steps} with {cosh_j.shape[0]} cosh "
                         "values")
    if out.shape[0] != 2 * steps - 1 or out.shape[1] != nnz:
        raise ValueError(f"additive_chi2_values: out has shape ({out.shape[0]}, "
                         f"{out.shape[1]}), expected ({2 * steps - 1}, {nnz})")
    check_threads(n_threads)
    if nnz == 0:
        return None
    nt = effective_threads(n_threads, nnz, nnz * steps * 40, _PARALLEL_MIN_WORK)
    ensure_threads(nt)
    with nogil:
        for t in prange(nnz, schedule="static", num_threads=nt):
            _chi2_value(data[t], steps, L, &cosh_j[0], &out[0, t], nnz)
    return None
