/* randfeat random binning: hot per-row cell-key kernels (header-only, included by _binning.pyx).
 *
 * Cell coordinate of x in one (grid, dimension): t = (x - u) * r, c = floor(t), r = 1/pitch.
 *
 * "Fast" packed keys (grids whose training cell range is below 2**50 in every dimension): the
 * offset c - lo (an integer in [0, 2**bits)) of every active dimension m is multiplied by
 * 2**shift_m and summed, per 64-bit key word, in float64.  Every term and every partial sum is
 * an integer below 2**52, so the sums are exact in any order and the word is converted
 * losslessly to uint64.
 * The floor uses the round-to-nearest trick (t + 1.5*2**52) - 1.5*2**52, exact for |t| < 2**51,
 * on rows known to lie in the training box (lo <= c <= hi in every dimension; else the cell is
 * "unseen" and no key is computed).  Results equal floor() for every such input: the code is
 * exact IEEE arithmetic, so any evaluation order and any thread count give the same bits.
 *
 * Floating-point contraction (FMA) would change the rounding of t on FMA targets: it is
 * switched off for this translation unit.
 */
#ifndef RANDFEAT_BINNING_H
#define RANDFEAT_BINNING_H

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RF_BIN_MAGIC 6755399441055744.0 /* 1.5 * 2**52 */

/* Parameters of grid p are permuted so that its n_active "active" dimensions (more than one
   training cell) come first, in their original order, followed by the inactive ones (a single
   training cell, contributing 0 to the key).  idx[j] is the input column of slot j.  Word w of
   the key holds active slots [wb[w], wb[w+1]).  The row must lie in the training box of the
   grid (training rows do; for new rows check with rf_in_box first), so inactive dimensions are
   skipped entirely. */
/* floor(t) for |t| < 2**51: f = nearest integer (the magic-number trick), then 1 subtracted
   when f > t, i.e. when t - f < 0.  t - f is exact (Sterbenz: f/2 <= t <= 2f, or f = 0) and
   +0.0 when t == f, so its sign bit is exactly "f > t".  The sign bit is used as an integer
   rather than a comparison: compilers turn (f > t) into a branch, mispredicted half of the
   time on real data (measured: 4-5x slower keys). */
static inline double rf_bin_floor(double t)
{
    double f = (t + RF_BIN_MAGIC) - RF_BIN_MAGIC;
    double dlt = t - f;
    uint64_t b;
    memcpy(&b, &dlt, sizeof b);
    return f - (double)(int64_t)(b >> 63);
}
#define RF_BIN_FLOOR(t) rf_bin_floor(t)

#define RF_DEFINE_KEY_FAST(NAME, T)                                                            \
static void NAME(const T *x, const int32_t *idx, const double *u, const double *r,             \
                 const double *lo, const double *scale, const int32_t *wb, ptrdiff_t n_words,  \
                 uint64_t *key)                                                                \
{                                                                                              \
    ptrdiff_t j, w;                                                                            \
    for (w = 0; w < n_words; ++w) {                                                            \
        double a0 = 0.0, a1 = 0.0;                                                             \
        ptrdiff_t e = wb[w + 1];                                                               \
        for (j = wb[w]; j + 2 <= e; j += 2) {                                                  \
            double t0 = ((double)x[idx[j]] - u[j]) * r[j];                                     \
            double t1 = ((double)x[idx[j + 1]] - u[j + 1]) * r[j + 1];                         \
            a0 += (RF_BIN_FLOOR(t0) - lo[j]) * scale[j];                                       \
            a1 += (RF_BIN_FLOOR(t1) - lo[j + 1]) * scale[j + 1];                               \
        }                                                                                      \
        if (j < e) {                                                                           \
            double t0 = ((double)x[idx[j]] - u[j]) * r[j];                                     \
            a0 += (RF_BIN_FLOOR(t0) - lo[j]) * scale[j];                                       \
        }                                                                                      \
        key[w] = (uint64_t)(int64_t)(a0 + a1);                                                 \
    }                                                                                          \
}

/* 1 when xa[m] <= x[m] < xb[m] for every m: [xa, xb) is the exact set of float64 inputs whose
   cell coordinate floor((x - u) * r) lies in the training range [lo, hi] (computed in Python by
   bisection over the floats, the map being monotone), so this equals the range check on the
   cell coordinates, with 2 comparisons per dimension and no arithmetic. */
#define RF_DEFINE_IN_BOX(NAME, T)                                                              \
static int NAME(const T *x, ptrdiff_t d, const double *xa, const double *xb)                   \
{                                                                                              \
    int bad = 0;                                                                               \
    ptrdiff_t m;                                                                               \
    for (m = 0; m < d; ++m) {                                                                  \
        double v = (double)x[m];                                                               \
        bad |= (v < xa[m]) | (v >= xb[m]);                                                     \
    }                                                                                          \
    return !bad;                                                                               \
}

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
/* The same computation two slots at a time with SSE2 (part of every x86-64 CPU, so no run-time
   dispatch): the same IEEE operations per slot (no FMA), the floor's correction from a
   comparison mask, and sums of exact integers, so the words are bit-identical to the scalar
   version's. */
#include <emmintrin.h>
#define RF_KEY_STEP2(J, XV, ACC)                                                               \
    do {                                                                                       \
        __m128d t_ = _mm_mul_pd(_mm_sub_pd((XV), _mm_loadu_pd(u + (J))), _mm_loadu_pd(r + (J)));\
        __m128d f_ = _mm_sub_pd(_mm_add_pd(t_, magic), magic);                                 \
        f_ = _mm_sub_pd(f_, _mm_and_pd(_mm_cmplt_pd(t_, f_), one));                            \
        (ACC) = _mm_add_pd((ACC), _mm_mul_pd(_mm_sub_pd(f_, _mm_loadu_pd(lo + (J))),           \
                                             _mm_loadu_pd(scale + (J))));                      \
    } while (0)
#define RF_DEFINE_KEY_FAST_SSE2(NAME, T)                                                       \
static void NAME(const T *x, const int32_t *idx, const double *u, const double *r,             \
                 const double *lo, const double *scale, const int32_t *wb, ptrdiff_t n_words,  \
                 uint64_t *key)                                                                \
{                                                                                              \
    const __m128d magic = _mm_set1_pd(RF_BIN_MAGIC), one = _mm_set1_pd(1.0);                  \
    ptrdiff_t j, w;                                                                            \
    for (w = 0; w < n_words; ++w) {                                                            \
        __m128d a0 = _mm_setzero_pd(), a1 = _mm_setzero_pd();                                  \
        double s[2], tail = 0.0;                                                               \
        ptrdiff_t e = wb[w + 1];                                                               \
        for (j = wb[w]; j + 4 <= e; j += 4) {                                                  \
            __m128d x0 = _mm_set_pd((double)x[idx[j + 1]], (double)x[idx[j]]);                \
            __m128d x1 = _mm_set_pd((double)x[idx[j + 3]], (double)x[idx[j + 2]]);            \
            RF_KEY_STEP2(j, x0, a0);                                                           \
            RF_KEY_STEP2(j + 2, x1, a1);                                                       \
        }                                                                                      \
        if (j + 2 <= e) {                                                                      \
            __m128d x0 = _mm_set_pd((double)x[idx[j + 1]], (double)x[idx[j]]);                \
            RF_KEY_STEP2(j, x0, a0);                                                           \
            j += 2;                                                                            \
        }                                                                                      \
        if (j < e) {                                                                           \
            double t0 = ((double)x[idx[j]] - u[j]) * r[j];                                     \
            tail = (RF_BIN_FLOOR(t0) - lo[j]) * scale[j];                                      \
        }                                                                                      \
        _mm_storeu_pd(s, _mm_add_pd(a0, a1));                                                  \
        key[w] = (uint64_t)(int64_t)((s[0] + s[1]) + tail);                                    \
    }                                                                                          \
}
RF_DEFINE_KEY_FAST_SSE2(rf_key_fast_float, float)
RF_DEFINE_KEY_FAST_SSE2(rf_key_fast_double, double)
#else
RF_DEFINE_KEY_FAST(rf_key_fast_float, float)
RF_DEFINE_KEY_FAST(rf_key_fast_double, double)
#endif
RF_DEFINE_IN_BOX(rf_in_box_float, float)
RF_DEFINE_IN_BOX(rf_in_box_double, double)


/* ---------------------------------------------------------------------------------------------
 * Cell fingerprints (exact mode).
 *
 * A cell of grid p is identified by the 96-bit fingerprint (fa, fb) of its packed key words
 * x_0..x_{W-1} (64-bit each), computed with two independent keyed *vector multiply-shift*
 * hashes (Dietzfelbinger 1996; Thorup, "High speed hashing for integers and strings", 2015,
 * vector multiply-shift):
 *
 *     h_{a,b}(x) = ((b + sum_i a_i x_i) mod 2**128) >> (128 - l)
 *
 * with a_i, b uniform 128-bit keys: strongly universal into l bits (w = 64-bit words need a
 * 2w >= w + l - 1 bit accumulator), so two distinct keys of one grid share the l-bit value with
 * probability exactly 2**-l.  fa uses l = 64, fb an independent key and l = 32: two distinct
 * cells share a fingerprint with probability 2**-96 over the random key (drawn from
 * random_state at every fit), whatever the data.
 */
typedef struct { uint64_t hi, lo; } rf_u128;

static inline void rf_mul64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
    unsigned __int128 p = (unsigned __int128)a * b;
    *hi = (uint64_t)(p >> 64);
    *lo = (uint64_t)p;
#else
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (mid << 32) | (p00 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* acc += (k_hi:k_lo) * x  (mod 2**128) */
static inline void rf_mac128(rf_u128 *acc, uint64_t k_hi, uint64_t k_lo, uint64_t x)
{
    uint64_t ph, pl;
    rf_mul64x64(k_lo, x, &ph, &pl);
    ph += k_hi * x;
    acc->lo += pl;
    acc->hi += ph + (acc->lo < pl);
}

/* key: (2, n_key, 2) uint64 = [lane][i][hi, lo]; i = 0 is b, i >= 1 multiplies word i - 1.
   W <= n_key - 1.  mask_a / mask_b keep all bits except in tests of the collision model. */
static inline void rf_fingerprint(const uint64_t *words, ptrdiff_t W, const uint64_t *key,
                                  ptrdiff_t n_key, uint64_t mask_a, uint32_t mask_b,
                                  uint64_t *fa, uint32_t *fb)
{
    const uint64_t *ka = key, *kb = key + 2 * n_key;
    rf_u128 A = {ka[0], ka[1]}, B = {kb[0], kb[1]};
    ptrdiff_t i;
    for (i = 0; i < W; ++i) {
        rf_mac128(&A, ka[2 * i + 2], ka[2 * i + 3], words[i]);
        rf_mac128(&B, kb[2 * i + 2], kb[2 * i + 3], words[i]);
    }
    *fa = A.hi & mask_a;
    *fb = (uint32_t)(B.hi >> 32) & mask_b;
}

/* One occupied cell: fingerprint and its column within its grid (16 bytes).  Each grid's
   entries are sorted by (fa, fb). */
typedef struct { uint64_t fa; uint32_t fb; uint32_t col; } rf_cell_entry;

#define RF_EMPTY_COL 0xffffffffu

static inline int rf_entry_less(const rf_cell_entry *e, uint64_t fa, uint32_t fb)
{
    return e->fa < fa || (e->fa == fa && e->fb < fb);
}

/* floor(f * n / 2**64): where f would sit in n sorted uniform 64-bit values */
static inline ptrdiff_t rf_guess(uint64_t f, ptrdiff_t n)
{
    uint64_t hi, lo;
    rf_mul64x64(f, (uint64_t)n, &hi, &lo);
    (void)lo;
    return (ptrdiff_t)hi;
}

/* State of one search among sorted entries: every entry of [lo, hi) has vlo <= fa <= vhi; the
   next probe is at pos. */
typedef struct { ptrdiff_t lo, hi, pos; uint64_t vlo, vhi; } rf_search;

/* One probe of a search for (fa, fb): the column (>= 0) when found, -1 when absent, -2 when the
   search goes on at s->pos (interpolated while ``interp``, else bisection; the range shrinks at
   every probe, so a search ends after at most log2(n) + 1 bisection probes; every probe stays
   inside [0, n)). */
static inline int64_t rf_search_step(const rf_cell_entry *e, rf_search *s, uint64_t fa,
                                     uint32_t fb, int interp)
{
    const rf_cell_entry *c;
    ptrdiff_t pos = s->pos;
    if (s->hi <= s->lo)
        return -1;
    if (pos < s->lo) pos = s->lo;
    if (pos >= s->hi) pos = s->hi - 1;
    c = e + pos;
    if (c->fa == fa && c->fb == fb)
        return (int64_t)c->col;
    if (rf_entry_less(c, fa, fb)) {
        s->lo = pos + 1;
        s->vlo = c->fa;
    } else {
        s->hi = pos;
        s->vhi = c->fa;
    }
    if (s->hi <= s->lo)
        return -1;
    if (interp && s->vhi > s->vlo) {
        double frac = (double)(fa - s->vlo) / ((double)(s->vhi - s->vlo) + 1.0);
        s->pos = s->lo + (ptrdiff_t)(frac * (double)(s->hi - s->lo));
    } else {
        s->pos = s->lo + (s->hi - s->lo) / 2;
    }
    return -2;
}

static inline void rf_prefetch(const void *p);

/* The searches of one row in all P grids, advanced together (one probe per grid and round, the
   next probe prefetched), so that the cache misses of the P grids overlap instead of queueing.
   Grid p holds sorted entries [co[p], co[p + 1]) of ``entries``; on entry out[p] is -2 for the
   grids to search, whose st[p] the caller initialised (its range and first probe, already
   prefetched), and -1 for the others; on return out[p] is the global column or -1. */
static void rf_search_grids(const rf_cell_entry *entries, const int64_t *co, ptrdiff_t P,
                            const uint64_t *fas, const uint32_t *fbs, rf_search *st,
                            int64_t *out)
{
    ptrdiff_t p, left = 0;
    int round = 0;
    for (p = 0; p < P; ++p)
        left += out[p] == -2;
    while (left > 0) {
        for (p = 0; p < P; ++p) {
            int64_t r;
            if (out[p] != -2)
                continue;
            r = rf_search_step(entries + co[p], &st[p], fas[p], fbs[p], round < 4);
            if (r == -2) {
                rf_prefetch(entries + co[p] + st[p].pos);
            } else {
                out[p] = r >= 0 ? co[p] + r : -1;
                --left;
            }
        }
        ++round;
    }
}

static inline void rf_prefetch(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 0, 1);
#else
    (void)p;
#endif
}

/* Sort n entries by (fa, fb): insertion sort, linear for the nearly sorted sequences read out
   of a linear-probing table whose home slot is the top bits of fa (each entry sits a few slots
   after its home; only a wrapped cluster's few entries travel far). */
static void rf_sort_entries(rf_cell_entry *e, ptrdiff_t n)
{
    ptrdiff_t i, j;
    for (i = 1; i < n; ++i) {
        rf_cell_entry v = e[i];
        j = i;
        while (j > 0 && rf_entry_less(&v, e[j - 1].fa, e[j - 1].fb)) {
            e[j] = e[j - 1];
            --j;
        }
        e[j] = v;
    }
}

#endif
