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
on the training data and a bit layout (``randfeat._binning_layout.key_layout``).  In *fast* grids
(all ranges below 2**50) the offsets c - lo of the *active* dimensions (more than one training
cell) are packed, summed exactly in float64, into 52-bit words (C code in ``src/binning.h``);
dimensions with a single training cell contribute nothing.  Other grids use the *generic*
layout: 64-bit words, raw IEEE bits of c when its range is huge.  Either key is an injective
function of the full cell vector on the training box.  A cell is stored as the 96-bit keyed
fingerprint of its key words and its column (16 bytes, ``rf_cell_entry``; collision model in
``src/binning.h`` and in the RandomBinningFeatures notes), each grid's cells sorted by
fingerprint.  A row whose cell lies outside a grid's training box cannot have been seen in
``fit`` and is reported as unseen without a lookup; a row inside the training data's bounding
box lies in every grid's box (the cell map is monotone), so the per-grid box test is skipped
for it.

Every parameter the kernels index with is held by two validated, immutable objects:
``CellLayout`` (the per-grid key layout) and ``CellMap`` (layout, column offsets, cells), built
once per fit.  Threads come from ``_policy.effective_threads``; every loop notices Ctrl-C
(``_policy.Interrupt``).
"""
from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

from randfeat._lib._openmp cimport omp_get_thread_num
from randfeat._lib._policy cimport (
    Interrupt,
    check_threads,
    effective_threads,
    ensure_threads,
    interrupt_init,
    interrupted,
    raise_if_interrupted,
)

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
    ctypedef struct rf_cell_entry:
        uint64_t fa
        uint32_t fb
        uint32_t col
    uint32_t RF_EMPTY_COL
    void rf_key_fast_float(const float *x, const int32_t *idx, const double *u, const double *r,
                           const double *lo, const double *scale, const int32_t *wb,
                           Py_ssize_t n_words, uint64_t *key) noexcept
    void rf_key_fast_double(const double *x, const int32_t *idx, const double *u,
                            const double *r, const double *lo, const double *scale,
                            const int32_t *wb, Py_ssize_t n_words, uint64_t *key) noexcept
    int rf_in_box_float(const float *x, Py_ssize_t d, const double *xa, const double *xb) noexcept
    int rf_in_box_double(const double *x, Py_ssize_t d, const double *xa,
                         const double *xb) noexcept
    void rf_fingerprint(const uint64_t *words, Py_ssize_t W, const uint64_t *key,
                        Py_ssize_t n_key, uint64_t mask_a, uint32_t mask_b, uint64_t *fa,
                        uint32_t *fb) noexcept
    int rf_entry_less(const rf_cell_entry *e, uint64_t fa, uint32_t fb) noexcept
    Py_ssize_t rf_guess(uint64_t f, Py_ssize_t n) noexcept
    void rf_prefetch(const void *p) noexcept
    ctypedef struct rf_search:
        Py_ssize_t lo
        Py_ssize_t hi
        Py_ssize_t pos
        uint64_t vlo
        uint64_t vhi
    void rf_search_grids(const rf_cell_entry *entries, const int64_t *co, Py_ssize_t P,
                         const uint64_t *fas, const uint32_t *fbs, rf_search *st,
                         int64_t *out) noexcept
    void rf_sort_entries(rf_cell_entry *e, Py_ssize_t n) noexcept

ctypedef fused index_t:
    int32_t
    int64_t

cdef uint64_t _GOLDEN = 0x9e3779b97f4a7c15ULL
# below this much work (about a nanosecond each) a loop runs on one thread
cdef Py_ssize_t _MIN_WORK = 1 << 17


cdef struct Layout:
    # per-(grid, dimension) arrays are (P, d) C-contiguous; wb is (P, n_words + 1)
    Py_ssize_t P
    Py_ssize_t d
    Py_ssize_t n_words
    # generic layout (any cell range), dimensions in input order
    const double *u          # shifts
    const double *r          # reciprocal pitches
    const double *lo         # lowest training cell coordinate
    const double *hi         # highest training cell coordinate
    const int32_t *word      # word of the dimension
    const int32_t *shift     # bit offset in the word (0..63)
    const uint8_t *raw       # 1 = the word holds the raw float64 bits of c
    const uint8_t *fast      # (P,) 1 = fast packed layout (below)
    # fast layout: slots permuted, active dimensions first (see binning.h)
    const int32_t *idx       # input column of each slot
    const int32_t *n_active  # (P,) number of active slots
    const double *pu
    const double *pr
    const double *plo
    const double *pscale     # 2**bit offset of the slot in its word
    const double *xa         # (P, d) input order: x in the training box iff xa <= x < xb
    const double *xb
    const double *bb_lo      # (d,) training data bounding box [bb_lo, bb_hi): a row inside it
    const double *bb_hi      # lies in the cell box of every grid (the cell map is monotone)
    const int32_t *wb        # word w holds active slots [wb[w], wb[w+1])
    # fingerprint of the packed key (binning.h)
    const uint64_t *fp_key   # (2, n_key, 2)
    Py_ssize_t n_key
    uint64_t mask_a
    uint32_t mask_b


# name -> (dtype, shape kind): "PD" (n_grids, n_features), "P" (n_grids,), "D" (n_features,),
# "PW" (n_grids, n_words + 1), "KEY" (2, n_key, 2)
_LAYOUT_FIELDS = {
    "u": ("float64", "PD"), "r": ("float64", "PD"), "lo": ("float64", "PD"),
    "hi": ("float64", "PD"), "word": ("int32", "PD"), "shift": ("int32", "PD"),
    "raw": ("uint8", "PD"), "fast": ("uint8", "P"), "idx": ("int32", "PD"),
    "n_active": ("int32", "P"), "pu": ("float64", "PD"), "pr": ("float64", "PD"),
    "plo": ("float64", "PD"), "pscale": ("float64", "PD"), "xa": ("float64", "PD"),
    "xb": ("float64", "PD"), "wb": ("int32", "PW"), "bb_lo": ("float64", "D"),
    "bb_hi": ("float64", "D"), "fp_key": ("uint64", "KEY"),
}


def _frozen(name, value, dtype, shape):
    import numpy as np
    a = np.array(value, dtype=dtype, order="C", copy=True)
    if a.shape != shape:
        raise ValueError(f"CellLayout: {name} must have shape {shape}, got {a.shape}")
    a.setflags(write=False)
    return a


cdef class CellLayout:
    """Packed-key layout and fingerprint key of every grid (exact mode), validated once.

    Built by :func:`randfeat._binning_layout.key_layout` from named arrays (see
    ``_LAYOUT_FIELDS``); the constructor copies them into private read-only arrays and checks
    every invariant the kernels rely on for memory safety (shapes, index ranges, word bounds,
    shifts below 64), so a torn or tampered layout is a ``ValueError`` here, never an
    out-of-bounds read in a kernel.  ``fingerprint_bits`` (96 by default) keeps only that many
    fingerprint bits: a test seam for the collision model, never changed in normal use.
    """
    cdef Layout L
    cdef dict _arrays
    cdef readonly Py_ssize_t n_grids, n_features, n_words
    cdef readonly int fingerprint_bits

    def __init__(self, *, fingerprint_bits=96, **arrays):
        import numpy as np
        missing = set(_LAYOUT_FIELDS) - set(arrays)
        extra = set(arrays) - set(_LAYOUT_FIELDS)
        if missing or extra:
            raise ValueError(f"CellLayout: missing fields {sorted(missing)}, unknown fields "
                             f"{sorted(extra)}")
        u = np.asarray(arrays["u"])
        wb = np.asarray(arrays["wb"])
        key = np.asarray(arrays["fp_key"])
        if u.ndim != 2 or u.shape[0] < 1 or u.shape[1] < 1:
            raise ValueError(f"CellLayout: u must be a non-empty 2-D array, got shape {u.shape}")
        if wb.ndim != 2 or wb.shape[1] < 2:
            raise ValueError(f"CellLayout: wb must have shape (n_grids, n_words + 1) with "
                             f"n_words >= 1, got {wb.shape}")
        if key.ndim != 3:
            raise ValueError(f"CellLayout: fp_key must be 3-D, got shape {key.shape}")
        P, d = u.shape
        W = wb.shape[1] - 1
        shapes = {"PD": (P, d), "P": (P,), "D": (d,), "PW": (P, W + 1),
                  "KEY": (2, key.shape[1], 2)}
        a = {name: _frozen(name, arrays[name], dt, shapes[kind])
             for name, (dt, kind) in _LAYOUT_FIELDS.items()}
        if a["fp_key"].shape[1] < W + 1:
            raise ValueError(f"CellLayout: fp_key needs at least {W + 1} entries per lane, got "
                             f"{a['fp_key'].shape[1]}")
        fingerprint_bits = int(fingerprint_bits)
        if not 1 <= fingerprint_bits <= 96:
            raise ValueError(f"CellLayout: fingerprint_bits must be in [1, 96], got "
                             f"{fingerprint_bits}")
        n_act = a["n_active"]
        wbv = a["wb"]
        problems = []
        if not ((a["idx"] >= 0) & (a["idx"] < d)).all():
            problems.append("idx outside [0, n_features)")
        if not ((n_act >= 0) & (n_act <= d)).all():
            problems.append("n_active outside [0, n_features]")
        if not ((wbv >= 0).all() and (np.diff(wbv, axis=1) >= 0).all()
                and (wbv <= n_act[:, None]).all()):
            problems.append("word bounds wb not non-decreasing within [0, n_active]")
        if not ((a["word"] >= 0) & (a["word"] < W)).all():
            problems.append("word outside [0, n_words)")
        if not ((a["shift"] >= 0) & (a["shift"] < 64)).all():
            problems.append("shift outside [0, 64)")
        if not (np.isin(a["raw"], (0, 1)).all() and np.isin(a["fast"], (0, 1)).all()):
            problems.append("raw/fast flags not 0/1")
        if problems:
            raise ValueError("CellLayout: invalid layout (torn or tampered fitted state): "
                             + "; ".join(problems) + "; refit the estimator")
        self._arrays = a
        self.n_grids, self.n_features, self.n_words = P, d, W
        self.fingerprint_bits = fingerprint_bits
        self._point()

    cdef void _point(self):
        cdef const double[:, ::1] u = self._arrays["u"]
        cdef const double[:, ::1] r = self._arrays["r"]
        cdef const double[:, ::1] lo = self._arrays["lo"]
        cdef const double[:, ::1] hi = self._arrays["hi"]
        cdef const int32_t[:, ::1] word = self._arrays["word"]
        cdef const int32_t[:, ::1] shift = self._arrays["shift"]
        cdef const uint8_t[:, ::1] raw = self._arrays["raw"]
        cdef const uint8_t[::1] fast = self._arrays["fast"]
        cdef const int32_t[:, ::1] idx = self._arrays["idx"]
        cdef const int32_t[::1] n_active = self._arrays["n_active"]
        cdef const double[:, ::1] pu = self._arrays["pu"]
        cdef const double[:, ::1] pr = self._arrays["pr"]
        cdef const double[:, ::1] plo = self._arrays["plo"]
        cdef const double[:, ::1] pscale = self._arrays["pscale"]
        cdef const double[:, ::1] xa = self._arrays["xa"]
        cdef const double[:, ::1] xb = self._arrays["xb"]
        cdef const int32_t[:, ::1] wb = self._arrays["wb"]
        cdef const double[::1] bb_lo = self._arrays["bb_lo"]
        cdef const double[::1] bb_hi = self._arrays["bb_hi"]
        cdef const uint64_t[:, :, ::1] key = self._arrays["fp_key"]
        cdef int bits = self.fingerprint_bits
        self.L.P = u.shape[0]
        self.L.d = u.shape[1]
        self.L.n_words = wb.shape[1] - 1
        self.L.u = &u[0, 0]
        self.L.r = &r[0, 0]
        self.L.lo = &lo[0, 0]
        self.L.hi = &hi[0, 0]
        self.L.word = &word[0, 0]
        self.L.shift = &shift[0, 0]
        self.L.raw = &raw[0, 0]
        self.L.fast = &fast[0]
        self.L.idx = &idx[0, 0]
        self.L.n_active = &n_active[0]
        self.L.pu = &pu[0, 0]
        self.L.pr = &pr[0, 0]
        self.L.plo = &plo[0, 0]
        self.L.pscale = &pscale[0, 0]
        self.L.xa = &xa[0, 0]
        self.L.xb = &xb[0, 0]
        self.L.wb = &wb[0, 0]
        self.L.bb_lo = &bb_lo[0]
        self.L.bb_hi = &bb_hi[0]
        self.L.fp_key = &key[0, 0, 0]
        self.L.n_key = key.shape[1]
        # keep the top bits (the tables use the top bits of fa as home slot / interpolation)
        if bits >= 64:
            self.L.mask_a = <uint64_t>0xffffffffffffffffULL
            self.L.mask_b = <uint32_t>(0xffffffffULL << (96 - bits)) if bits < 96 else \
                <uint32_t>0xffffffffU
        else:
            self.L.mask_a = (<uint64_t>0xffffffffffffffffULL) << (64 - bits)
            self.L.mask_b = 0

    def array(self, name):
        """A copy of the named layout array (for tests and inspection)."""
        return self._arrays[name].copy()

    @property
    def nbytes(self):
        return sum(v.nbytes for v in self._arrays.values())

    def __reduce__(self):
        return (_rebuild_layout, (self.fingerprint_bits, self._arrays))

    def __eq__(self, other):
        if not isinstance(other, CellLayout):
            return NotImplemented
        return self.fingerprint_bits == (<CellLayout>other).fingerprint_bits and \
            _equal_arrays(self._arrays, (<CellLayout>other)._arrays)

    __hash__ = None


def _rebuild_layout(fingerprint_bits, arrays):
    return CellLayout(fingerprint_bits=fingerprint_bits, **arrays)


cdef class CellMap:
    """The exact-mode cell tables of every grid, validated once: a :class:`CellLayout`, the
    column offsets of the grids and, per grid, its occupied cells as 16-byte entries (96-bit
    fingerprint, local column) sorted by fingerprint.  Immutable; ``transform`` reads only it."""
    cdef readonly CellLayout layout
    cdef object _col_offsets
    cdef object _entries
    cdef const int64_t *col_offsets
    cdef const rf_cell_entry *entries
    cdef readonly Py_ssize_t n_columns
    # per grid, a directory of its 2**dir_bits[p] buckets (top bits of the fingerprint): bucket
    # b holds local entries [dir[dir_off[p] + b], dir[dir_off[p] + b + 1]); at most 4097
    # uint32 per grid (a per-grid parameter, derived from the entries, not stored in pickles)
    cdef object _dir
    cdef object _dir_off
    cdef object _dir_bits
    cdef const uint32_t *dir
    cdef const int64_t *dir_off
    cdef const int32_t *dir_bits

    def __init__(self, CellLayout layout not None, col_offsets, entries):
        import numpy as np
        cdef Py_ssize_t P = layout.n_grids, p, k, n_p, off
        cdef const int64_t[::1] co
        cdef const uint64_t[:, ::1] ev
        cdef const rf_cell_entry *e
        cdef bint ok = True
        co_a = _frozen("col_offsets", col_offsets, "int64", (P + 1,))
        ent = np.asarray(entries)
        if ent.ndim != 2 or ent.shape[1] != 2:
            raise ValueError(f"CellMap: entries must have shape (n_cells, 2), got {ent.shape}")
        ent = _frozen("entries", ent, "uint64", ent.shape)
        if co_a[0] != 0 or (np.diff(co_a) < 0).any() or co_a[P] != ent.shape[0] or \
                (np.diff(co_a) > 0xffffffff).any():
            raise ValueError("CellMap: col_offsets must start at 0, be non-decreasing and end "
                             f"at the number of entries ({ent.shape[0]}) (torn or tampered "
                             "fitted state); refit the estimator")
        co = co_a
        if ent.shape[0] > 0:
            ev = ent
            e = <const rf_cell_entry *>&ev[0, 0]
            with nogil:
                for p in range(P):
                    off = co[p]
                    n_p = co[p + 1] - off
                    for k in range(n_p):
                        if e[off + k].col >= <uint64_t>n_p or (
                                k > 0 and rf_entry_less(&e[off + k], e[off + k - 1].fa,
                                                        e[off + k - 1].fb)):
                            ok = False
                            break
                    if not ok:
                        break
            if not ok:
                raise ValueError("CellMap: cell entries out of order or with a column outside "
                                 "their grid (torn or tampered fitted state); refit the "
                                 "estimator")
            self.entries = e
        else:
            self.entries = NULL
        self.layout = layout
        self._col_offsets = co_a
        self._entries = ent
        self.col_offsets = &co[0]
        self.n_columns = int(co_a[P])
        self._build_directory()

    cdef void _build_directory(self):
        import numpy as np
        cdef Py_ssize_t P = self.layout.n_grids, p, k, b, n_p, nb, off
        cdef int bits
        n_cells = np.diff(self._col_offsets)
        # about 32 cells per bucket, at most 2**12 buckets per grid
        dbits = np.zeros(P, dtype=np.int32)
        big = n_cells >= 64
        dbits[big] = np.minimum(12, np.floor(np.log2(n_cells[big] / 32.0))).astype(np.int32)
        doff = np.zeros(P + 1, dtype=np.int64)
        np.cumsum((1 << dbits.astype(np.int64)) + 1, out=doff[1:])
        dirs = np.zeros(int(doff[P]), dtype=np.uint32)
        cdef int32_t[::1] dbv = dbits
        cdef int64_t[::1] dov = doff
        cdef uint32_t[::1] dv = dirs
        cdef const rf_cell_entry *e = self.entries
        with nogil:
            for p in range(P):
                off = self.col_offsets[p]
                n_p = self.col_offsets[p + 1] - off
                bits = dbv[p]
                nb = (<Py_ssize_t>1) << bits
                k = 0
                for b in range(nb):
                    # first local entry whose bucket is >= b
                    if bits > 0:
                        while k < n_p and <Py_ssize_t>(e[off + k].fa >> (64 - bits)) < b:
                            k += 1
                    dv[dov[p] + b] = <uint32_t>k
                dv[dov[p] + nb] = <uint32_t>n_p
        dbits.setflags(write=False)
        doff.setflags(write=False)
        dirs.setflags(write=False)
        self._dir, self._dir_off, self._dir_bits = dirs, doff, dbits
        self.dir = &dv[0]
        self.dir_off = &dov[0]
        self.dir_bits = &dbv[0]

    def column_offsets(self):
        """(n_grids + 1,) int64: grid p owns columns [offsets[p], offsets[p + 1]) (a copy)."""
        return self._col_offsets.copy()

    @property
    def nbytes(self):
        """Bytes held: cell entries (16 per cell) and per-grid arrays."""
        return (self._entries.nbytes + self._col_offsets.nbytes + self.layout.nbytes
                + self._dir.nbytes + self._dir_off.nbytes + self._dir_bits.nbytes)

    def __reduce__(self):
        return (CellMap, (self.layout, self._col_offsets, self._entries))

    def __eq__(self, other):
        if not isinstance(other, CellMap):
            return NotImplemented
        return self.layout == (<CellMap>other).layout and _equal_arrays(
            {"o": self._col_offsets, "e": self._entries},
            {"o": (<CellMap>other)._col_offsets, "e": (<CellMap>other)._entries})

    __hash__ = None


def _equal_arrays(a, b):
    import numpy as np
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


cdef inline bint _key_generic(const floating *x, const Layout *L, Py_ssize_t p,
                              uint64_t *key) noexcept nogil:
    """Packed key of x's cell in grid p (any cell range); False when outside [lo, hi]."""
    cdef Py_ssize_t m, d = L.d, o = p * L.d
    cdef double c
    cdef uint64_t v
    for m in range(L.n_words):
        key[m] = 0
    for m in range(d):
        c = rf_cell(<double>x[m], L.u[o + m], L.r[o + m])
        if c < L.lo[o + m] or c > L.hi[o + m]:
            return False
        if L.raw[o + m]:
            key[L.word[o + m]] = rf_double_bits(c)
        else:
            v = <uint64_t>(<int64_t>(c - L.lo[o + m]))
            if v != 0:  # (a single-cell dimension adds nothing; shift is < 64, validated)
                key[L.word[o + m]] = key[L.word[o + m]] | (v << L.shift[o + m])
    return True


cdef inline bint _key(const floating *x, const Layout *L, Py_ssize_t p, uint64_t *key,
                      int check) noexcept nogil:
    """Key of x's cell in grid p; False (no key) when ``check`` and the cell is outside the box."""
    cdef Py_ssize_t o = p * L.d
    if L.fast[p]:
        if floating is float:
            if check and not rf_in_box_float(x, L.d, L.xa + o, L.xb + o):
                return False
            rf_key_fast_float(x, L.idx + o, L.pu + o, L.pr + o, L.plo + o, L.pscale + o,
                              L.wb + p * (L.n_words + 1), L.n_words, key)
        else:
            if check and not rf_in_box_double(x, L.d, L.xa + o, L.xb + o):
                return False
            rf_key_fast_double(x, L.idx + o, L.pu + o, L.pr + o, L.plo + o, L.pscale + o,
                               L.wb + p * (L.n_words + 1), L.n_words, key)
        return True
    return _key_generic(x, L, p, key)


cdef inline bint _fingerprint(const floating *x, const Layout *L, Py_ssize_t p, uint64_t *kw,
                              int check, uint64_t *fa, uint32_t *fb) noexcept nogil:
    if not _key(x, L, p, kw, check):
        return False
    rf_fingerprint(kw, L.n_words, L.fp_key, L.n_key, L.mask_a, L.mask_b, fa, fb)
    return True


def _check_x(Py_ssize_t d_x, Py_ssize_t d, what):
    if d_x != d:
        raise ValueError(f"{what}: X has {d_x} features but the fitted grids have {d} (was the "
                         "estimator refitted or its state changed meanwhile?); refit or pass X "
                         f"with {d} columns")


def cell_indices(const floating[:, ::1] X, const double[:, ::1] shifts,
                 const double[:, ::1] inv_widths, double[:, :, ::1] out, int n_threads):
    """out[i, p, m] = floor((X[i, m] - shifts[p, m]) * inv_widths[p, m]), float64 (module doc)."""
    cdef Py_ssize_t i, p, m
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = shifts.shape[0]
    if inv_widths.shape[0] != P or inv_widths.shape[1] != d or shifts.shape[1] != d or \
            out.shape[0] != n or out.shape[1] != P or out.shape[2] != d:
        raise ValueError("cell_indices: inconsistent shapes")
    check_threads(n_threads)
    cdef int n_thr = effective_threads(n_threads, n, n * P * d, _MIN_WORK)
    ensure_threads(n_thr)
    cdef Interrupt intr
    interrupt_init(&intr, P * d)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            if interrupted(&intr):
                continue
            for p in range(P):
                for m in range(d):
                    out[i, p, m] = rf_cell(<double>X[i, m], shifts[p, m], inv_widths[p, m])
    raise_if_interrupted(&intr)


cdef inline void _hashed_row(const floating *x, Py_ssize_t d, Py_ssize_t P,
                             const double *shifts, const double *inv_widths, uint64_t salt,
                             uint64_t K, index_t *out) noexcept nogil:
    cdef Py_ssize_t p, m
    cdef uint64_t h
    for p in range(P):
        h = rf_mix64(salt + (<uint64_t>(p + 1)) * _GOLDEN)
        for m in range(d):
            h = rf_mix64(h ^ rf_double_bits(rf_cell(<double>x[m], shifts[p * d + m],
                                                    inv_widths[p * d + m])))
        out[p] = <index_t>(<int64_t>p * <int64_t>K + <int64_t>(h % K))


def hashed_columns(const floating[:, ::1] X, const double[:, ::1] shifts,
                   const double[:, ::1] inv_widths, uint64_t salt, uint64_t hash_size,
                   index_t[:, ::1] out, int n_threads):
    """out[i, p] = p * K + (hash(salt, p, full cell vector of X[i] in grid p) mod K)."""
    cdef Py_ssize_t i
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = shifts.shape[0]
    _check_x(d, shifts.shape[1], "RandomBinningFeatures.transform")
    if inv_widths.shape[0] != P or inv_widths.shape[1] != d or out.shape[0] != n or \
            out.shape[1] != P:
        raise ValueError("hashed_columns: inconsistent shapes (torn fitted state); refit")
    if hash_size < 1 or <double>P * <double>hash_size >= 9.2e18 or (
            index_t is int32_t and <double>P * <double>hash_size > 2147483647.0):
        raise ValueError(f"hashed_columns: n_grids * hash_size = {P} * {hash_size} does not fit "
                         "the column index type")
    check_threads(n_threads)
    cdef int n_thr = effective_threads(n_threads, n, n * P * d, _MIN_WORK)
    ensure_threads(n_thr)
    cdef Interrupt intr
    if n == 0:
        return
    interrupt_init(&intr, P * d * 3)
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_thr):
            if interrupted(&intr):
                continue
            _hashed_row(&X[i, 0], d, P, &shifts[0, 0], &inv_widths[0, 0], salt, hash_size,
                        &out[i, 0])
    raise_if_interrupted(&intr)


def fingerprints(const floating[:, ::1] X, CellLayout layout not None, uint64_t[:, ::1] fa,
                 uint32_t[:, ::1] fb, int n_threads):
    """fa[p, i], fb[p, i] = fingerprint of training row i's cell in grid p (rows in parallel).

    Training rows lie in the box of their own cells, so no range check is made.
    """
    cdef Layout *L = &layout.L
    cdef Py_ssize_t i, p, n = X.shape[0], P = L.P, W = L.n_words
    cdef int tid
    cdef uint64_t *kbuf
    _check_x(X.shape[1], L.d, "RandomBinningFeatures.fit")
    if fa.shape[0] != P or fb.shape[0] != P or fa.shape[1] != n or fb.shape[1] != n:
        raise ValueError("fingerprints: fa and fb must have shape (n_grids, n_samples)")
    check_threads(n_threads)
    cdef int n_thr = effective_threads(n_threads, n, n * P * (L.d + 4 * W), _MIN_WORK)
    ensure_threads(n_thr)
    cdef Interrupt intr
    if n == 0:
        return
    kbuf = <uint64_t *>malloc(n_thr * W * sizeof(uint64_t))
    if kbuf == NULL:
        raise MemoryError("RandomBinningFeatures.fit: could not allocate key scratch")
    interrupt_init(&intr, P * (L.d + 4 * W))
    try:
        with nogil:
            for i in prange(n, schedule="static", num_threads=n_thr):
                if interrupted(&intr):
                    continue
                tid = omp_get_thread_num()
                for p in range(P):
                    _fingerprint(&X[i, 0], L, p, kbuf + tid * W, 0, &fa[p, i], &fb[p, i])
    finally:
        free(kbuf)
    raise_if_interrupted(&intr)


cdef struct Table:
    rf_cell_entry *slots
    Py_ssize_t cap        # a power of two
    int shift            # home slot = fa >> shift (64 - log2(cap))


cdef int _table_reset(Table *t, Py_ssize_t cap) noexcept nogil:
    """Empty table of ``cap`` slots (a power of two >= 2); -1 when out of memory."""
    cdef Py_ssize_t s
    cdef int bits = 0
    free(t.slots)
    t.slots = <rf_cell_entry *>malloc(cap * sizeof(rf_cell_entry))
    if t.slots == NULL:
        t.cap = 0
        return -1
    t.cap = cap
    while (<Py_ssize_t>1 << bits) < cap:
        bits += 1
    t.shift = 64 - bits
    for s in range(cap):
        t.slots[s].col = RF_EMPTY_COL
    return 0


cdef inline rf_cell_entry *_table_slot(const Table *t, uint64_t fa, uint32_t fb) noexcept nogil:
    """The slot holding (fa, fb), or the empty slot where it belongs (linear probing)."""
    cdef Py_ssize_t mask = t.cap - 1
    cdef Py_ssize_t s = <Py_ssize_t>(fa >> t.shift)
    cdef rf_cell_entry *e
    while True:
        e = &t.slots[s]
        if e.col == RF_EMPTY_COL or (e.fa == fa and e.fb == fb):
            return e
        s = (s + 1) & mask


cdef int _table_grow(Table *t) noexcept nogil:
    cdef Table nt
    cdef Py_ssize_t s
    cdef rf_cell_entry *e
    nt.slots = NULL
    if _table_reset(&nt, 2 * t.cap) < 0:
        return -1
    for s in range(t.cap):
        if t.slots[s].col != RF_EMPTY_COL:
            e = _table_slot(&nt, t.slots[s].fa, t.slots[s].fb)
            e[0] = t.slots[s]
    free(t.slots)
    t[0] = nt
    return 0


cdef Py_ssize_t _build_grid(const uint64_t *fa, const uint32_t *fb, Py_ssize_t n, Table *t,
                            int32_t *assign, rf_cell_entry **result,
                            Interrupt *intr) noexcept nogil:
    """Cells of one grid from its rows' fingerprints, columns in order of first occurrence.

    ``assign[i]`` (when not NULL) receives row i's column; ``*result`` a malloc'ed array of the
    cells sorted by fingerprint.  Returns the number of cells, -1 when out of memory, -2 when
    interrupted.
    """
    cdef Py_ssize_t i, s, nc = 0, ahead
    cdef rf_cell_entry *e
    cdef rf_cell_entry *out
    result[0] = NULL
    if _table_reset(t, 64) < 0:
        return -1
    for i in range(n):
        if (i & 1023) == 0 and interrupted(intr):
            return -2
        ahead = i + 16
        if ahead < n:
            rf_prefetch(&t.slots[<Py_ssize_t>(fa[ahead] >> t.shift)])
        e = _table_slot(t, fa[i], fb[i])
        if e.col == RF_EMPTY_COL:
            if 2 * (nc + 1) > t.cap:
                if _table_grow(t) < 0:
                    return -1
                e = _table_slot(t, fa[i], fb[i])
            e.fa = fa[i]
            e.fb = fb[i]
            e.col = <uint32_t>nc
            nc += 1
        if assign != NULL:
            assign[i] = <int32_t>e.col
    out = <rf_cell_entry *>malloc((nc if nc > 0 else 1) * sizeof(rf_cell_entry))
    if out == NULL:
        return -1
    i = 0
    for s in range(t.cap):
        if t.slots[s].col != RF_EMPTY_COL:
            out[i] = t.slots[s]
            i += 1
    rf_sort_entries(out, nc)
    result[0] = out
    return nc


def build_cells(const uint64_t[:, ::1] fa, const uint32_t[:, ::1] fb, int32_t[:, ::1] assign,
                bint store_assign, int n_threads):
    """Occupied cells of every grid from the (P, n) fingerprints, grids spread over threads.

    Returns ``(entries, n_cells)``: (sum n_cells, 2) uint64 holding the 16-byte cell entries of
    all grids, grid after grid, each grid's sorted by fingerprint (see ``CellMap``), and the
    (P,) int64 cell counts.  Columns are numbered in order of first occurrence in the rows.
    When ``store_assign``, ``assign[p, i]`` receives the column of row i in grid p.  Each grid
    is processed sequentially by one thread, so the result is identical for every thread count.
    """
    import numpy as np
    cdef Py_ssize_t P = fa.shape[0], n = fa.shape[1]
    cdef Py_ssize_t p, t, total = 0
    cdef int tid
    cdef Py_ssize_t nc
    if fb.shape[0] != P or fb.shape[1] != n or (store_assign and (
            assign.shape[0] != P or assign.shape[1] != n)):
        raise ValueError("build_cells: inconsistent shapes")
    if n >= 2147483647:
        raise ValueError("build_cells: at most 2**31 - 2 rows")
    check_threads(n_threads)
    cdef int n_thr = effective_threads(n_threads, P, P * n * 20, _MIN_WORK)
    ensure_threads(n_thr)
    cdef Table *tables = <Table *>calloc(n_thr, sizeof(Table))
    cdef rf_cell_entry **results = <rf_cell_entry **>calloc(P, sizeof(rf_cell_entry *))
    cdef Py_ssize_t *counts = <Py_ssize_t *>calloc(P, sizeof(Py_ssize_t))
    cdef uint64_t[:, ::1] out_view
    cdef Interrupt intr
    cdef bint oom = False
    interrupt_init(&intr, 1024 * 20)
    try:
        if tables == NULL or results == NULL or counts == NULL:
            raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell tables")
        with nogil:
            for p in prange(P, schedule="static", num_threads=n_thr):
                tid = omp_get_thread_num()
                nc = _build_grid(&fa[p, 0], &fb[p, 0], n, &tables[tid],
                                 &assign[p, 0] if store_assign else NULL, &results[p], &intr)
                counts[p] = nc
        raise_if_interrupted(&intr)
        for p in range(P):
            if counts[p] == -1:
                raise MemoryError("RandomBinningFeatures.fit: could not allocate the cell "
                                  f"tables for {n} samples")
            if counts[p] < 0:  # (-2 only when interrupted, raised above)
                raise RuntimeError("build_cells: internal error")
            total += counts[p]
        out = np.empty((total, 2), dtype=np.uint64)
        n_cells = np.empty(P, dtype=np.int64)
        total = 0
        if out.shape[0] > 0:
            out_view = out
            for p in range(P):
                if counts[p] > 0:
                    memcpy(&out_view[total, 0], results[p], counts[p] * sizeof(rf_cell_entry))
                total += counts[p]
        for p in range(P):
            n_cells[p] = counts[p]
        return out, n_cells
    finally:
        if tables != NULL:
            for t in range(n_thr):
                free(tables[t].slots)
        if results != NULL:
            for p in range(P):
                free(results[p])
        free(tables); free(results); free(counts)


cdef struct Tables:
    const int64_t *col_offsets
    const rf_cell_entry *entries
    const uint32_t *dir
    const int64_t *dir_off
    const int32_t *dir_bits


cdef inline Py_ssize_t _lookup_row(const floating *x, const Layout *L, const Tables *cm,
                                   uint64_t *kw, uint64_t *fas, uint32_t *fbs, rf_search *st,
                                   int64_t *res, index_t *out) noexcept nogil:
    """Columns of x's cells (-1 when unseen); returns the number of unseen cells.

    Two passes: fingerprints of every grid, each grid's bucket from its directory and a first
    probe interpolated inside the bucket (prefetched), then the searches of all grids advanced
    together (``rf_search_grids``), so that the memory latency of the P grids' probes overlaps.
    """
    cdef Py_ssize_t p, off, lo, hi, b, n_unseen = 0
    cdef const uint32_t *dr
    cdef int check, bits
    if floating is float:
        check = not rf_in_box_float(x, L.d, L.bb_lo, L.bb_hi)
    else:
        check = not rf_in_box_double(x, L.d, L.bb_lo, L.bb_hi)
    for p in range(L.P):
        res[p] = -1
        off = cm.col_offsets[p]
        if cm.col_offsets[p + 1] == off or not _fingerprint(x, L, p, kw, check, &fas[p],
                                                              &fbs[p]):
            continue
        bits = cm.dir_bits[p]
        dr = cm.dir + cm.dir_off[p]
        if bits > 0:
            b = <Py_ssize_t>(fas[p] >> (64 - bits))
            st[p].vlo = (<uint64_t>b) << (64 - bits)
            st[p].vhi = st[p].vlo | ((<uint64_t>0xffffffffffffffffULL) >> bits)
        else:
            b = 0
            st[p].vlo = 0
            st[p].vhi = <uint64_t>0xffffffffffffffffULL
        lo = dr[b]
        hi = dr[b + 1]
        if hi <= lo:
            continue
        st[p].lo = lo
        st[p].hi = hi
        st[p].pos = lo + rf_guess(fas[p] << bits, hi - lo)
        rf_prefetch(cm.entries + off + st[p].pos)
        res[p] = -2
    rf_search_grids(cm.entries, cm.col_offsets, L.P, fas, fbs, st, res)
    for p in range(L.P):
        out[p] = <index_t>res[p]
        if res[p] < 0:
            n_unseen += 1
    return n_unseen


def lookup_columns(const floating[:, ::1] X, CellMap cmap not None, index_t[:, ::1] out,
                   int n_threads):
    """out[i, p] = global column of X[i]'s cell in grid p, or -1 if that cell was not seen in fit.

    Rows inside the training bounding box skip the per-grid range checks (their cells lie in
    every grid's training box).  Returns the number of unseen (row, grid) cells.
    """
    cdef Layout *L = &cmap.layout.L
    cdef Py_ssize_t i, n = X.shape[0], P = L.P, W = L.n_words
    cdef Py_ssize_t n_unseen = 0
    cdef int tid
    cdef uint64_t *kbuf
    cdef uint64_t *fbuf
    cdef uint32_t *gbuf
    cdef rf_search *sbuf
    cdef int64_t *rbuf
    cdef Tables T
    _check_x(X.shape[1], L.d, "RandomBinningFeatures.transform")
    T.col_offsets = cmap.col_offsets
    T.entries = cmap.entries
    T.dir = cmap.dir
    T.dir_off = cmap.dir_off
    T.dir_bits = cmap.dir_bits
    if out.shape[0] != n or out.shape[1] != P:
        raise ValueError(f"lookup_columns: out must have shape ({n}, {P}), got "
                         f"({out.shape[0]}, {out.shape[1]})")
    if index_t is int32_t and cmap.n_columns > 2147483647:
        raise ValueError("lookup_columns: int32 output for more than 2**31 - 1 columns")
    check_threads(n_threads)
    cdef int n_thr = effective_threads(n_threads, n, n * P * (L.d + 4 * W + 50), _MIN_WORK)
    ensure_threads(n_thr)
    cdef Interrupt intr
    if n == 0:
        return 0
    if cmap.n_columns == 0:
        out[:, :] = -1
        return n * P
    kbuf = <uint64_t *>malloc(n_thr * W * sizeof(uint64_t))
    fbuf = <uint64_t *>malloc(n_thr * P * sizeof(uint64_t))
    gbuf = <uint32_t *>malloc(n_thr * P * sizeof(uint32_t))
    sbuf = <rf_search *>malloc(n_thr * P * sizeof(rf_search))
    rbuf = <int64_t *>malloc(n_thr * P * sizeof(int64_t))
    interrupt_init(&intr, P * (L.d + 4 * W + 50))
    try:
        if kbuf == NULL or fbuf == NULL or gbuf == NULL or sbuf == NULL or rbuf == NULL:
            raise MemoryError("RandomBinningFeatures.transform: could not allocate scratch")
        with nogil:
            for i in prange(n, schedule="static", num_threads=n_thr):
                if interrupted(&intr):
                    continue
                tid = omp_get_thread_num()
                n_unseen += _lookup_row(&X[i, 0], L, &T, kbuf + tid * W, fbuf + tid * P,
                                        gbuf + tid * P, sbuf + tid * P, rbuf + tid * P,
                                        &out[i, 0])
    finally:
        free(kbuf)
        free(fbuf)
        free(gbuf)
        free(sbuf)
        free(rbuf)
    raise_if_interrupted(&intr)
    return n_unseen
