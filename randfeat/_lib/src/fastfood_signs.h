/* Random signs of Fastfood's diagonal B applied from bit-packed storage (header only; included by
 * randfeat/_lib/_fastfood.pyx).
 *
 * bits: one bit per sign, 1 for B = -1, little-endian within a byte (sign k is bit k % 8 of byte
 * k / 8), i.e. numpy.packbits(B < 0, bitorder="little").  Each byte indexes a 256 x 8 table of
 * +-1.0 and the eight values of x are multiplied by that table row: contiguous, branch-free
 * 16-byte vector products, bit-identical to multiplying by int8 signs (x * (+-1) is exact).  The
 * tables (8 KB float, 16 KB double) are filled once by rf_sign_tables_init() when the extension
 * module is imported.
 */
#ifndef RANDFEAT_FASTFOOD_SIGNS_H
#define RANDFEAT_FASTFOOD_SIGNS_H

#include <stddef.h>
#include <string.h>

static float rf_sign_table_float[256 * 8];
static double rf_sign_table_double[256 * 8];

static void rf_sign_tables_init(void)
{
    int v, t;
    for (v = 0; v < 256; v++) {
        for (t = 0; t < 8; t++) {
            rf_sign_table_float[8 * v + t] = ((v >> t) & 1) ? -1.0f : 1.0f;
            rf_sign_table_double[8 * v + t] = ((v >> t) & 1) ? -1.0 : 1.0;
        }
    }
}

#if defined(__GNUC__) || defined(__clang__)
/* Eight products per byte as 16-byte vector operations (GCC/Clang vector extensions; SSE2 on
 * x86-64, NEON on arm64).  Written out because GCC's auto-vectoriser, left alone, vectorises the
 * loop over bytes instead (gathering table rows across lanes), which measured 3.5x slower than the
 * former int8 loop; this form matches it.  memcpy: unaligned loads/stores, no aliasing issue. */
#define RF_V(T) rf_v16_##T
typedef float rf_v16_float __attribute__((vector_size(16)));
typedef double rf_v16_double __attribute__((vector_size(16)));
#define RF_DEFINE_APPLY_SIGNS(T)                                                                 \
    /* u[k] = x[k] * (bit k of bits ? -1 : 1) for 0 <= k < n; u and x must not overlap. */      \
    static inline void rf_apply_signs_##T(T *u, const T *x, const unsigned char *bits,           \
                                          ptrdiff_t n)                                           \
    {                                                                                            \
        enum { L = 16 / sizeof(T) };                                                             \
        ptrdiff_t j, t, n8 = n >> 3;                                                             \
        for (j = 0; j < n8; j++) {                                                               \
            const T *s = rf_sign_table_##T + 8 * (ptrdiff_t)bits[j];                             \
            for (t = 0; t < 8; t += L) {                                                         \
                RF_V(T) a, m;                                                                    \
                memcpy(&a, x + 8 * j + t, 16);                                                   \
                memcpy(&m, s + t, 16);                                                           \
                a = a * m;                                                                       \
                memcpy(u + 8 * j + t, &a, 16);                                                   \
            }                                                                                    \
        }                                                                                        \
        for (j = 8 * n8; j < n; j++)                                                             \
            u[j] = x[j] * rf_sign_table_##T[8 * (ptrdiff_t)bits[j >> 3] + (j & 7)];              \
    }
#else
#define RF_DEFINE_APPLY_SIGNS(T)                                                                 \
    static inline void rf_apply_signs_##T(T *u, const T *x, const unsigned char *bits,           \
                                          ptrdiff_t n)                                           \
    {                                                                                            \
        ptrdiff_t j;                                                                             \
        for (j = 0; j < n; j++)                                                                  \
            u[j] = x[j] * rf_sign_table_##T[8 * (ptrdiff_t)bits[j >> 3] + (j & 7)];              \
    }
#endif

RF_DEFINE_APPLY_SIGNS(float)
RF_DEFINE_APPLY_SIGNS(double)

#undef RF_DEFINE_APPLY_SIGNS
#undef RF_V

#endif
