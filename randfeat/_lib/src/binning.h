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

#endif
