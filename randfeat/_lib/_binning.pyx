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

cdef extern from "binning.h" nogil:
    int rf_key_fast_float(const float *x, Py_ssize_t d, const double *u, const double *r,
                          const double *lo, const double *hip1, const double *scale,
                          const int32_t *wb, Py_ssize_t n_words, double *buf,
                          uint64_t *key, int check) noexcept
    int rf_key_fast_double(const double *x, Py_ssize_t d, const double *u, const double *r,
                           const double *lo, const double *hip1, const double *scale,
                           const int32_t *wb, Py_ssize_t n_words, double *buf,
                           uint64_t *key, int check) noexcept

cdef uint64_t _HASH_SEED = 0x6a09e667f3bcc909ULL
cdef uint64_t _GOLDEN = 0x9e3779b97f4a7c15ULL


cdef struct Layout:
    # every per-(grid, dimension) array is (P, d) C-contiguous; wb is (P, n_words + 1)
    Py_ssize_t d
    Py_ssize_t n_words
    const double *u          # shifts
    const double *r          # reciprocal pitches
    const double *lo         # lowest training cell coordinate
    const double *hi         # highest training cell coordinate
    const double *hip1       # hi + 1 (fast grids)
    const double *scale      # 2**bit offset of the dimension in its word (fast grids)
    const int32_t *wb        # word w holds dimensions [wb[w], wb[w+1]) (fast grids)
    const int32_t *word      # generic grids: word of the dimension
    const int32_t *shift     # generic grids: bit offset in the word
    const uint8_t *raw       # generic grids: 1 = the word holds the raw float64 bits of c
    const uint8_t *fast      # (P,) 1 = fast packed layout


cdef inline bint _key_generic(const floating *x, const Layout *L, Py_ssize_t p,
                              uint64_t *key) noexcept nogil:
    """Packed key of x's cell in grid p (any cell range); False when outside [lo, hi]."""
    cdef Py_ssize_t m, d = L.d, o = p * L.d
    cdef double c
    for m in range(L.n_words):
        key[m] = 0
    for m in range(d):
        c = rf_cell(<double>x[m], L.u[o + m], L.r[o + m])
        if c < L.lo[o + m] or c > L.hi[o + m]:
            return False
        if L.raw[o + m]:
            key[L.word[o + m]] = rf_double_bits(c)
        else:
            key[L.word[o + m]] = key[L.word[o + m]] | (
                (<uint64_t>(<int64_t>(c - L.lo[o + m]))) << L.shift[o + m])
    return True


cdef inline bint _key(const floating *x, const Layout *L, Py_ssize_t p, double *buf,
                      uint64_t *key, int check=1) noexcept nogil:
    cdef Py_ssize_t o = p * L.d
    if L.fast[p]:
        if floating is float:
            return rf_key_fast_float(x, L.d, L.u + o, L.r + o, L.lo + o, L.hip1 + o,
                                     L.scale + o, L.wb + p * (L.n_words + 1), L.n_words, buf,
                                     key, check)
        else:
            return rf_key_fast_double(x, L.d, L.u + o, L.r + o, L.lo + o, L.hip1 + o,
                                      L.scale + o, L.wb + p * (L.n_words + 1), L.n_words, buf,
                                      key, check)
    return _key_generic(x, L, p, key)


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


cdef Layout _layout(const double[:, ::1] u, const double[:, ::1] r, const double[:, ::1] lo,
                    const double[:, ::1] hi, const double[:, ::1] hip1,
                    const double[:, ::1] scale, const int32_t[:, ::1] wb,
                    const int32_t[:, ::1] word, const int32_t[:, ::1] shift,
                    const uint8_t[:, ::1] raw, const uint8_t[::1] fast):
    cdef Layout L
    L.d = u.shape[1]
    L.n_words = wb.shape[1] - 1
    L.u = &u[0, 0]
    L.r = &r[0, 0]
    L.lo = &lo[0, 0]
    L.hi = &hi[0, 0]
    L.hip1 = &hip1[0, 0]
    L.scale = &scale[0, 0]
    L.wb = &wb[0, 0]
    L.word = &word[0, 0]
    L.shift = &shift[0, 0]
    L.raw = &raw[0, 0]
    L.fast = &fast[0]
    return L


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


def row_keys(const floating[:, ::1] X, const double[:, ::1] u, const double[:, ::1] r,
             const double[:, ::1] lo, const double[:, ::1] hi, const double[:, ::1] hip1,
             const double[:, ::1] scale, const int32_t[:, ::1] wb, const int32_t[:, ::1] word,
             const int32_t[:, ::1] shift, const uint8_t[:, ::1] raw, const uint8_t[::1] fast,
             uint64_t[:, :, ::1] keys, int n_threads):
    """keys[p, i, :] = packed key of training row i's cell in grid p (rows in parallel).

    Returns the number of (row, grid) keys outside the training box (0 for training data).
    """
    cdef Layout L = _layout(u, r, lo, hi, hip1, scale, wb, word, shift, raw, fast)
    cdef Py_ssize_t i, p, n = X.shape[0], P = u.shape[0], W = L.n_words
    cdef Py_ssize_t n_bad = 0
    cdef int n_thr = max(1, min(n_threads, <int>max(n, 1)))
    cdef int tid
    cdef double *buf
    if n == 0:
        return 0
    buf = <double *>malloc(n_thr * max(L.d, 1) * sizeof(double))
    if buf == NULL:
        raise MemoryError("RandomBinningFeatures: could not allocate row scratch")
    try:
        with nogil:
            for i in prange(n, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                for p in range(P):
                    if not _key(&X[i, 0], &L, p, buf + tid * L.d, &keys[p, i, 0], 0):
                        n_bad += 1
    finally:
        free(buf)
    return n_bad


cdef Py_ssize_t _insert_grid(const uint64_t *keys, Py_ssize_t n, Py_ssize_t W,
                             int32_t *table, uint64_t mask, int32_t *first, uint64_t *hashes,
                             int32_t *assign, Py_ssize_t assign_stride) noexcept nogil:
    """First-seen column ids for the n keys (W words each) of one grid; returns #cells.

    ``first[c]`` receives the first row of cell c; ``assign[i * stride]`` row i's column.
    """
    cdef Py_ssize_t i, n_cells = 0
    cdef uint64_t h, slot
    cdef int32_t c, col
    cdef const uint64_t *k
    for slot in range(mask + 1):
        table[slot] = -1
    for i in range(n):
        k = keys + i * W
        h = _hash_words(k, W)
        slot = h & mask
        while True:
            c = table[slot]
            if c < 0:
                table[slot] = <int32_t>n_cells
                hashes[n_cells] = h
                first[n_cells] = <int32_t>i
                col = <int32_t>n_cells
                n_cells = n_cells + 1
                break
            if hashes[c] == h and _equal(keys + (<Py_ssize_t>first[c]) * W, k, W):
                col = c
                break
            slot = (slot + 1) & mask
        if assign != NULL:
            assign[i * assign_stride] = col
    return n_cells


def fit_cells(const uint64_t[:, :, ::1] keys, int32_t[:, ::1] assign, bint store_assign,
              int n_threads):
    """Occupied cells of every grid from its row keys, grids spread over threads.

    ``keys`` is (P, n, W).  Returns a list of P uint64 arrays of shape (n_cells_p, W): the
    distinct keys in column (first-seen) order.  When ``store_assign``, ``assign[i, p]``
    receives the local column of row i in grid p.  Each grid is processed sequentially by one
    thread, so the result is identical for every thread count.
    """
    import numpy as np
    cdef Py_ssize_t P = keys.shape[0], n = keys.shape[1], W = keys.shape[2]
    cdef Py_ssize_t p, t, c, cap = 2
    cdef int n_thr = max(1, min(n_threads, <int>P))
    cdef int tid
    cdef bint failed = False
    cdef Py_ssize_t nc
    cdef int32_t *arow
    while cap < 2 * n:
        cap *= 2
    cdef uint64_t mask = <uint64_t>(cap - 1)
    cdef int32_t **tables = <int32_t **>malloc(n_thr * sizeof(int32_t *))
    cdef int32_t **firsts = <int32_t **>malloc(P * sizeof(int32_t *))
    cdef uint64_t **hashbufs = <uint64_t **>malloc(n_thr * sizeof(uint64_t *))
    cdef Py_ssize_t *counts = <Py_ssize_t *>malloc(P * sizeof(Py_ssize_t))
    if tables == NULL or firsts == NULL or hashbufs == NULL or counts == NULL:
        free(tables); free(firsts); free(hashbufs); free(counts)
        raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell tables")
    for t in range(n_thr):
        tables[t] = <int32_t *>malloc(cap * sizeof(int32_t))
        hashbufs[t] = <uint64_t *>malloc(max(n, 1) * sizeof(uint64_t))
        if tables[t] == NULL or hashbufs[t] == NULL:
            failed = True
    for p in range(P):
        firsts[p] = <int32_t *>malloc(max(n, 1) * sizeof(int32_t))
        counts[p] = 0
        if firsts[p] == NULL:
            failed = True
    try:
        if failed:
            raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell tables "
                              f"for {n} samples")
        with nogil:
            for p in prange(P, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                arow = &assign[0, p] if store_assign else NULL
                nc = _insert_grid(&keys[p, 0, 0], n, W, tables[tid], mask, firsts[p],
                                  hashbufs[tid], arow, assign.shape[1])
                counts[p] = nc
        out = []
        for p in range(P):
            arr = np.empty((counts[p], W), dtype=np.uint64)
            _gather_keys(arr, keys[p], firsts[p])
            out.append(arr)
        return out
    finally:
        for t in range(n_thr):
            free(tables[t]); free(hashbufs[t])
        for p in range(P):
            free(firsts[p])
        free(tables); free(firsts); free(hashbufs); free(counts)


cdef void _gather_keys(uint64_t[:, ::1] out, const uint64_t[:, ::1] keys, const int32_t *first):
    cdef Py_ssize_t c, w
    for c in range(out.shape[0]):
        for w in range(out.shape[1]):
            out[c, w] = keys[first[c], w]


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


cdef inline void _lookup_row(const floating *x, const Layout *L, Py_ssize_t P,
                             const uint64_t *keys, const int64_t *table_offsets,
                             const int64_t *table, double *buf, uint64_t *k,
                             int64_t *out) noexcept nogil:
    cdef Py_ssize_t p, off, W = L.n_words
    cdef uint64_t mask, slot
    cdef int64_t c
    for p in range(P):
        out[p] = -1
        if not _key(x, L, p, buf, k):
            continue
        off = table_offsets[p]
        mask = <uint64_t>(table_offsets[p + 1] - off - 1)
        slot = _hash_words(k, W) & mask
        while True:
            c = table[off + <Py_ssize_t>slot]
            if c < 0:
                break
            if _equal(keys + c * W, k, W):
                out[p] = c
                break
            slot = (slot + 1) & mask


def lookup_columns(const floating[:, ::1] X, const double[:, ::1] u, const double[:, ::1] r,
                   const double[:, ::1] lo, const double[:, ::1] hi, const double[:, ::1] hip1,
                   const double[:, ::1] scale, const int32_t[:, ::1] wb,
                   const int32_t[:, ::1] word, const int32_t[:, ::1] shift,
                   const uint8_t[:, ::1] raw, const uint8_t[::1] fast,
                   const uint64_t[:, ::1] keys, const int64_t[::1] table_offsets,
                   const int64_t[::1] table, int64_t[:, ::1] out, int n_threads):
    """out[i, p] = global column of X[i]'s cell in grid p, or -1 if that cell was not seen in fit."""
    cdef Layout L = _layout(u, r, lo, hi, hip1, scale, wb, word, shift, raw, fast)
    cdef Py_ssize_t i, n = X.shape[0], P = u.shape[0], W = L.n_words
    cdef int n_thr = max(1, min(n_threads, <int>max(n, 1)))
    cdef int tid
    cdef uint64_t *kbuf
    cdef double *buf
    if n == 0:
        return
    if keys.shape[0] == 0:
        out[:, :] = -1
        return
    kbuf = <uint64_t *>malloc(n_thr * W * sizeof(uint64_t))
    buf = <double *>malloc(n_thr * max(L.d, 1) * sizeof(double))
    if kbuf == NULL or buf == NULL:
        free(kbuf); free(buf)
        raise MemoryError("RandomBinningFeatures.transform: could not allocate key scratch")
    try:
        with nogil:
            for i in prange(n, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                _lookup_row(&X[i, 0], &L, P, &keys[0, 0], &table_offsets[0], &table[0],
                            buf + tid * L.d, kbuf + tid * W, &out[i, 0])
    finally:
        free(kbuf)
        free(buf)
