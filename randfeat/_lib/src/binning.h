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

#define RF_BIN_MAGIC 6755399441055744.0 /* 1.5 * 2**52 */

/* Parameters of grid p are permuted so that its n_active "active" dimensions (more than one
   training cell) come first, in their original order, followed by the inactive ones (a single
   training cell, contributing 0 to the key).  idx[j] is the input column of slot j.  Word w of
   the key holds active slots [wb[w], wb[w+1]).  The row must lie in the training box of the
   grid (training rows do; for new rows check with rf_in_box first), so inactive dimensions are
   skipped entirely. */
#define RF_BIN_FLOOR(t) ((((t) + RF_BIN_MAGIC) - RF_BIN_MAGIC) -                              \
                         (double)((((t) + RF_BIN_MAGIC) - RF_BIN_MAGIC) > (t)))

/* (the comparison is converted to 0.0/1.0 rather than used in a conditional: a branch on it
   would be mispredicted half of the time) */
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

RF_DEFINE_KEY_FAST(rf_key_fast_float, float)
RF_DEFINE_KEY_FAST(rf_key_fast_double, double)
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

/* Column of (fa, fb) among the n sorted entries e, or -1.  Interpolation search (the fa are
   uniform: expected O(log log n) probes, the first at rf_guess(fa, n), which the caller may have
   prefetched), switching to bisection after 4 probes (worst case O(log n)); every probe stays
   inside [0, n). */
static inline int64_t rf_find(const rf_cell_entry *e, ptrdiff_t n, uint64_t fa, uint32_t fb)
{
    ptrdiff_t lo = 0, hi = n, pos, k;
    uint64_t vlo = 0, vhi = UINT64_MAX;   /* every entry in [lo, hi) has vlo <= fa_e <= vhi */
    int it = 0;
    if (n <= 0)
        return -1;
    pos = rf_guess(fa, n);
    while (hi - lo > 4) {
        const rf_cell_entry *c;
        if (pos < lo) pos = lo;
        if (pos >= hi) pos = hi - 1;
        c = e + pos;
        if (c->fa == fa && c->fb == fb)
            return (int64_t)c->col;
        if (rf_entry_less(c, fa, fb)) {
            lo = pos + 1;
            vlo = c->fa;
        } else {
            hi = pos;
            vhi = c->fa;
        }
        if (++it < 4 && vhi > vlo) {
            double frac = (double)(fa - vlo) / ((double)(vhi - vlo) + 1.0);
            pos = lo + (ptrdiff_t)(frac * (double)(hi - lo));
        } else {
            pos = lo + (hi - lo) / 2;
        }
    }
    for (k = lo; k < hi; ++k) {
        if (e[k].fa == fa && e[k].fb == fb)
            return (int64_t)e[k].col;
    }
    return -1;
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
