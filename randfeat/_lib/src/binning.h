/* randfeat random binning: hot per-row cell-key kernels (header-only, included by _binning.pyx).
 *
 * Cell coordinate of x in one (grid, dimension): t = (x - u) * r, c = floor(t), r = 1/pitch.
 *
 * "Fast" packed keys (grids whose training cell range is below 2**50 in every dimension): the
 * offset c - lo (an integer in [0, 2**bits)) of every dimension m is multiplied by 2**shift_m and
 * summed, per 64-bit key word, in float64.  Every term and every partial sum is an integer below
 * 2**52, so the sums are exact in any order and the word is converted losslessly to uint64.
 * The floor uses the round-to-nearest trick (t + 1.5*2**52) - 1.5*2**52, exact for |t| < 2**51,
 * and only after checking lo <= t < hi + 1 (else the cell lies outside the training box and the
 * function returns 0, "unseen").  Results are identical to floor() for every input: the code is
 * exact IEEE arithmetic, so SIMD or scalar evaluation and any thread count give the same bits.
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

#define RF_DEFINE_KEY_FAST(NAME, T)                                                            \
int NAME(const T *x, ptrdiff_t d, const double *u, const double *r,                            \
         const double *lo, const double *hip1, const double *scale,                           \
         const int32_t *wb, ptrdiff_t n_words, double *buf, uint64_t *key, int check)         \
{                                                                                              \
    int bad = 0;                                                                               \
    ptrdiff_t m, w;                                                                            \
    if (check) {                                                                               \
        for (m = 0; m < d; ++m) {                                                              \
            double t = ((double)x[m] - u[m]) * r[m];                                           \
            double f;                                                                          \
            bad |= (t < lo[m]) | (t >= hip1[m]);                                               \
            f = (t + RF_BIN_MAGIC) - RF_BIN_MAGIC;                                             \
            f = (f > t) ? f - 1.0 : f;                                                         \
            buf[m] = (f - lo[m]) * scale[m];                                                   \
        }                                                                                      \
        if (bad) return 0;                                                                     \
    } else {                                                                                   \
        for (m = 0; m < d; ++m) {                                                              \
            double t = ((double)x[m] - u[m]) * r[m];                                           \
            double f = (t + RF_BIN_MAGIC) - RF_BIN_MAGIC;                                      \
            f = (f > t) ? f - 1.0 : f;                                                         \
            buf[m] = (f - lo[m]) * scale[m];                                                   \
        }                                                                                      \
    }                                                                                          \
    for (w = 0; w < n_words; ++w) {                                                            \
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;                                         \
        ptrdiff_t s = wb[w], e = wb[w + 1];                                                    \
        for (m = s; m + 4 <= e; m += 4) {                                                      \
            a0 += buf[m]; a1 += buf[m + 1]; a2 += buf[m + 2]; a3 += buf[m + 3];                \
        }                                                                                      \
        for (; m < e; ++m) a0 += buf[m];                                                       \
        key[w] = (uint64_t)(int64_t)((a0 + a1) + (a2 + a3));                                   \
    }                                                                                          \
    return 1;                                                                                  \
}

static RF_DEFINE_KEY_FAST(rf_key_fast_float, float)
static RF_DEFINE_KEY_FAST(rf_key_fast_double, double)

#endif
