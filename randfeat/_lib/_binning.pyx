"""Compiled random-binning loops.  Private: use :class:`randfeat.RandomBinningFeatures`.

Design (the ``sklearn/_loss`` pattern): ``noexcept nogil`` inline cores compute one cell
coordinate, one packed cell key and one hash; the ``def`` functions below loop over rows (or
grids) with ``prange`` and never allocate Python objects inside the loops.  No random numbers are
drawn here: pitches, shifts and the hash salt are sampled in :mod:`randfeat.binning`.

Cell coordinate (one grid p, one input dimension m)::

    t = (x - u) * r            with r = 1/delta (delta = inf -> r = 0, u = 0)
    c = floor(t)               an exactly integer-valued float64

For |t| >= 2**52 every float64 is already an integer, so c = t; t = +-inf (only when
|x - u| * r overflows) is clamped to +-DBL_MAX.  Distinct cells therefore have distinct float64
values c for every finite input, and ``c`` never overflows.

Cell key (exact mode): per (grid, dimension) the Python layer fixes the range [lo, hi] of c seen
on the training data and a bit layout.  When the range is small (< 2**52) the offset c - lo is
packed into ``bits`` bits of one 64-bit word; otherwise the raw IEEE bits of c fill a whole word.
The packed key (``n_words`` words) is an injective function of the full cell vector, so the hash
table below compares *full keys*: no two cells can share a column (collision-free by
construction; the hash only chooses the probe start).  A cell outside the [lo, hi] box of any
dimension cannot have been seen in ``fit`` and is reported as unseen without a lookup.
"""
from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from randfeat._lib._openmp cimport omp_get_thread_num

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <float.h>

    /* splitmix64 finaliser: a bijection of 64-bit words with full avalanche. */
    static inline uint64_t rf_mix64(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    static inline uint64_t rf_double_bits(double v) {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        return u;
    }

    /* floor((x - u) * r) as an exactly integer-valued double, never NaN for finite x, u and
       finite r >= 0 (the caller guarantees r = 0 implies u = 0); +-inf clamped to +-DBL_MAX,
       -0.0 normalised to +0.0. */
    static inline double rf_cell(double x, double u, double r) {
        double t = (x - u) * r;
        double c;
        if (t >= 4503599627370496.0) {          /* 2**52: already integral */
            c = (t > DBL_MAX) ? DBL_MAX : t;
        } else if (t <= -4503599627370496.0) {
            c = (t < -DBL_MAX) ? -DBL_MAX : t;
        } else {
            c = (double)(int64_t)t;            /* truncation toward zero */
            if (c > t) c -= 1.0;
        }
        return c + 0.0;
    }
    """
    uint64_t rf_mix64(uint64_t z) noexcept nogil
    uint64_t rf_double_bits(double v) noexcept nogil
    double rf_cell(double x, double u, double r) noexcept nogil

cdef uint64_t _HASH_SEED = 0x6a09e667f3bcc909ULL
cdef uint64_t _GOLDEN = 0x9e3779b97f4a7c15ULL


cdef inline bint _key(const floating *x, Py_ssize_t d, const double *u, const double *r,
                      const double *lo, const double *hi, const int32_t *word,
                      const int32_t *shift, const uint8_t *raw, Py_ssize_t n_words,
                      uint64_t *key) noexcept nogil:
    """Packed key of x's cell in one grid; return False when the cell is outside [lo, hi]."""
    cdef Py_ssize_t m
    cdef double c
    for m in range(n_words):
        key[m] = 0
    for m in range(d):
        c = rf_cell(<double>x[m], u[m], r[m])
        if c < lo[m] or c > hi[m]:
            return False
        if raw[m]:
            key[word[m]] = rf_double_bits(c)
        else:
            key[word[m]] = key[word[m]] | ((<uint64_t>(c - lo[m])) << shift[m])
    return True


cdef inline uint64_t _hash_words(const uint64_t *key, Py_ssize_t n_words) noexcept nogil:
    cdef Py_ssize_t w
    cdef uint64_t h = _HASH_SEED
    for w in range(n_words):
        h = rf_mix64(h ^ key[w])
    return h


cdef inline bint _equal(const uint64_t *a, const uint64_t *b, Py_ssize_t n_words) noexcept nogil:
    cdef Py_ssize_t w
    for w in range(n_words):
        if a[w] != b[w]:
            return False
    return True


def cell_indices(const floating[:, ::1] X, const double[:, ::1] shifts,
                 const double[:, ::1] inv_widths, double[:, :, ::1] out, int n_threads):
    """out[i, p, m] = floor((X[i, m] - shifts[p, m]) * inv_widths[p, m]) (float64, see module doc)."""
    cdef Py_ssize_t i, p, m
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = shifts.shape[0]
    cdef int n_thr = max(1, min(n_threads, <int>max(n, 1)))
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            for p in range(P):
                for m in range(d):
                    out[i, p, m] = rf_cell(<double>X[i, m], shifts[p, m], inv_widths[p, m])


cdef inline void _hashed_row(const floating *x, Py_ssize_t d, Py_ssize_t P,
                             const double *shifts, const double *inv_widths, uint64_t salt,
                             uint64_t K, int64_t *out) noexcept nogil:
    cdef Py_ssize_t p, m
    cdef uint64_t h
    for p in range(P):
        h = rf_mix64(salt + (<uint64_t>(p + 1)) * _GOLDEN)
        for m in range(d):
            h = rf_mix64(h ^ rf_double_bits(rf_cell(<double>x[m], shifts[p * d + m],
                                                    inv_widths[p * d + m])))
        out[p] = <int64_t>p * <int64_t>K + <int64_t>(h % K)


def hashed_columns(const floating[:, ::1] X, const double[:, ::1] shifts,
                   const double[:, ::1] inv_widths, uint64_t salt, uint64_t hash_size,
                   int64_t[:, ::1] out, int n_threads):
    """out[i, p] = p * K + (hash(salt, p, full cell vector of X[i] in grid p) mod K)."""
    cdef Py_ssize_t i
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = shifts.shape[0]
    cdef int n_thr = max(1, min(n_threads, <int>max(n, 1)))
    if n == 0:
        return
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            _hashed_row(&X[i, 0], d, P, &shifts[0, 0], &inv_widths[0, 0], salt, hash_size,
                        &out[i, 0])


cdef Py_ssize_t _fit_one_grid(const floating[:, ::1] X, Py_ssize_t p,
                              const double[:, ::1] shifts, const double[:, ::1] inv_widths,
                              const double[:, ::1] lo, const double[:, ::1] hi,
                              const int32_t[:, ::1] word, const int32_t[:, ::1] shift,
                              const uint8_t[:, ::1] raw, Py_ssize_t n_words,
                              int32_t *table, uint64_t mask, uint64_t *keys, uint64_t *hashes,
                              int32_t[:, ::1] assign, bint store_assign) noexcept nogil:
    """Assign local column ids (first-seen order) to the occupied cells of grid p.

    ``keys`` (n * n_words) receives the keys of the cells in column order; returns their number.
    """
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], n_cells = 0
    cdef uint64_t h, slot
    cdef int32_t c, col
    cdef uint64_t *k
    for slot in range(mask + 1):
        table[slot] = -1
    for i in range(n):
        k = keys + n_cells * n_words
        _key(&X[i, 0], d, &shifts[p, 0], &inv_widths[p, 0], &lo[p, 0], &hi[p, 0],
             &word[p, 0], &shift[p, 0], &raw[p, 0], n_words, k)
        h = _hash_words(k, n_words)
        slot = h & mask
        while True:
            c = table[slot]
            if c < 0:
                table[slot] = <int32_t>n_cells
                hashes[n_cells] = h
                col = <int32_t>n_cells
                n_cells = n_cells + 1
                break
            if hashes[c] == h and _equal(keys + c * n_words, k, n_words):
                col = c
                break
            slot = (slot + 1) & mask
        if store_assign:
            assign[i, p] = col
    return n_cells


def fit_cells(const floating[:, ::1] X, const double[:, ::1] shifts,
              const double[:, ::1] inv_widths, const double[:, ::1] lo, const double[:, ::1] hi,
              const int32_t[:, ::1] word, const int32_t[:, ::1] shift, const uint8_t[:, ::1] raw,
              Py_ssize_t n_words, int32_t[:, ::1] assign, bint store_assign, int n_threads):
    """Occupied cells of every grid, grids spread over threads (each grid is sequential).

    Returns a list of P uint64 arrays of shape (n_cells_p, n_words): the cell keys in column
    (first-seen) order.  When ``store_assign``, ``assign[i, p]`` receives the local column of
    row i in grid p.  Each grid's result depends only on that grid, so the output is identical
    for every thread count.
    """
    import numpy as np
    cdef Py_ssize_t n = X.shape[0], P = shifts.shape[0]
    cdef Py_ssize_t p, t, cap = 2
    cdef int n_thr = max(1, min(n_threads, <int>P))
    cdef int tid
    cdef bint failed = False
    cdef Py_ssize_t nc
    while cap < 2 * n:
        cap *= 2
    cdef uint64_t mask = <uint64_t>(cap - 1)
    cdef int32_t **tables = <int32_t **>malloc(n_thr * sizeof(int32_t *))
    cdef uint64_t **keybufs = <uint64_t **>malloc(n_thr * sizeof(uint64_t *))
    cdef uint64_t **hashbufs = <uint64_t **>malloc(n_thr * sizeof(uint64_t *))
    cdef uint64_t **results = <uint64_t **>malloc(P * sizeof(uint64_t *))
    cdef Py_ssize_t *counts = <Py_ssize_t *>malloc(P * sizeof(Py_ssize_t))
    if tables == NULL or keybufs == NULL or hashbufs == NULL or results == NULL or counts == NULL:
        free(tables); free(keybufs); free(hashbufs); free(results); free(counts)
        raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell tables")
    for t in range(n_thr):
        tables[t] = <int32_t *>malloc(cap * sizeof(int32_t))
        keybufs[t] = <uint64_t *>malloc(max(n, 1) * n_words * sizeof(uint64_t))
        hashbufs[t] = <uint64_t *>malloc(max(n, 1) * sizeof(uint64_t))
        if tables[t] == NULL or keybufs[t] == NULL or hashbufs[t] == NULL:
            failed = True
    for p in range(P):
        results[p] = NULL
        counts[p] = 0
    try:
        if failed:
            raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell tables "
                              f"({n} samples x {n_words} key words per thread)")
        with nogil:
            for p in prange(P, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                nc = _fit_one_grid(X, p, shifts, inv_widths, lo, hi, word, shift, raw, n_words,
                                   tables[tid], mask, keybufs[tid], hashbufs[tid], assign,
                                   store_assign)
                counts[p] = nc
                results[p] = <uint64_t *>malloc(max(nc, 1) * n_words * sizeof(uint64_t))
                if results[p] != NULL:
                    memcpy(results[p], keybufs[tid], nc * n_words * sizeof(uint64_t))
        out = []
        for p in range(P):
            if results[p] == NULL:
                raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell keys")
            arr = np.empty((counts[p], n_words), dtype=np.uint64)
            if counts[p] > 0:
                _copy_keys(arr, results[p])
            out.append(arr)
        return out
    finally:
        for t in range(n_thr):
            free(tables[t]); free(keybufs[t]); free(hashbufs[t])
        for p in range(P):
            free(results[p])
        free(tables); free(keybufs); free(hashbufs); free(results); free(counts)


cdef void _copy_keys(uint64_t[:, ::1] arr, const uint64_t *src):
    memcpy(&arr[0, 0], src, arr.shape[0] * arr.shape[1] * sizeof(uint64_t))


def build_tables(const uint64_t[:, ::1] keys, const int64_t[::1] col_offsets,
                 const int64_t[::1] table_offsets, int64_t[::1] table, int n_threads):
    """Open-addressing tables (linear probing) mapping a full key to its global column.

    Grid p owns columns [col_offsets[p], col_offsets[p+1]) and table slots
    [table_offsets[p], table_offsets[p+1]) (a power of two, at least twice its columns).
    ``table`` must be filled with -1 on entry.
    """
    cdef Py_ssize_t P = col_offsets.shape[0] - 1, n_words = keys.shape[1]
    cdef Py_ssize_t p, c
    cdef uint64_t mask, slot
    cdef int n_thr = max(1, min(n_threads, <int>max(P, 1)))
    if keys.shape[0] == 0:
        return
    with nogil:
        for p in prange(P, schedule="static", num_threads=n_thr):
            mask = <uint64_t>(table_offsets[p + 1] - table_offsets[p] - 1)
            for c in range(col_offsets[p], col_offsets[p + 1]):
                slot = _hash_words(&keys[c, 0], n_words) & mask
                while table[table_offsets[p] + <Py_ssize_t>slot] >= 0:
                    slot = (slot + 1) & mask
                table[table_offsets[p] + <Py_ssize_t>slot] = c


cdef inline void _lookup_row(const floating *x, Py_ssize_t d, Py_ssize_t P,
                             const double *shifts, const double *inv_widths,
                             const double *lo, const double *hi, const int32_t *word,
                             const int32_t *shift, const uint8_t *raw, Py_ssize_t n_words,
                             const uint64_t *keys, const int64_t *table_offsets,
                             const int64_t *table, uint64_t *k, int64_t *out) noexcept nogil:
    cdef Py_ssize_t p, off
    cdef uint64_t mask, slot
    cdef int64_t c
    for p in range(P):
        out[p] = -1
        if not _key(x, d, shifts + p * d, inv_widths + p * d, lo + p * d, hi + p * d,
                    word + p * d, shift + p * d, raw + p * d, n_words, k):
            continue
        off = table_offsets[p]
        mask = <uint64_t>(table_offsets[p + 1] - off - 1)
        slot = _hash_words(k, n_words) & mask
        while True:
            c = table[off + <Py_ssize_t>slot]
            if c < 0:
                break
            if _equal(keys + c * n_words, k, n_words):
                out[p] = c
                break
            slot = (slot + 1) & mask


def lookup_columns(const floating[:, ::1] X, const double[:, ::1] shifts,
                   const double[:, ::1] inv_widths, const double[:, ::1] lo,
                   const double[:, ::1] hi, const int32_t[:, ::1] word,
                   const int32_t[:, ::1] shift, const uint8_t[:, ::1] raw,
                   const uint64_t[:, ::1] keys, const int64_t[::1] table_offsets,
                   const int64_t[::1] table, int64_t[:, ::1] out, int n_threads):
    """out[i, p] = global column of X[i]'s cell in grid p, or -1 if that cell was not seen in fit."""
    cdef Py_ssize_t i, t
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = shifts.shape[0], n_words = keys.shape[1]
    cdef int n_thr = max(1, min(n_threads, <int>max(n, 1)))
    cdef int tid
    cdef uint64_t *scratch
    if n == 0:
        return
    if keys.shape[0] == 0:
        out[:, :] = -1
        return
    scratch = <uint64_t *>malloc(n_thr * n_words * sizeof(uint64_t))
    if scratch == NULL:
        raise MemoryError("RandomBinningFeatures.transform: could not allocate key scratch")
    try:
        with nogil:
            for i in prange(n, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                _lookup_row(&X[i, 0], d, P, &shifts[0, 0], &inv_widths[0, 0], &lo[0, 0],
                            &hi[0, 0], &word[0, 0], &shift[0, 0], &raw[0, 0], n_words,
                            &keys[0, 0], &table_offsets[0], &table[0],
                            scratch + tid * n_words, &out[i, 0])
    finally:
        free(scratch)
