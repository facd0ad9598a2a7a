/* See fastfood_block.h. */
#include <string.h>
#include "fastfood_block.h"
#include "rf_clones.h"

static float rf_sign_table_float[256 * 8] __attribute__((aligned(64)));
static double rf_sign_table_double[256 * 8] __attribute__((aligned(64)));

void rf_ff_sign_tables_init(void)
{
    int v, t;
    for (v = 0; v < 256; v++) {
        for (t = 0; t < 8; t++) {
            rf_sign_table_float[8 * v + t] = ((v >> t) & 1) ? -1.0f : 1.0f;
            rf_sign_table_double[8 * v + t] = ((v >> t) & 1) ? -1.0 : 1.0;
        }
    }
}

/* Eight products per byte as one vector product (GCC vector extensions: one zmm/ymm
 * multiplication in the v4/v3 clones, split into 16-byte operations in the baseline one).
 * Written out because GCC's auto-vectoriser vectorises the loop over bytes instead (gathering
 * table rows across lanes), which measured 3.5x slower.  memcpy: unaligned loads/stores. */
typedef double rf_v8_double __attribute__((vector_size(8 * sizeof(double))));
typedef float rf_v8_float __attribute__((vector_size(8 * sizeof(float))));

#define RF_DEFINE_SIGNS(T)                                                                     \
    RF_CLONES void rf_ff_apply_signs_##T(T *restrict u, const T *restrict x,                   \
                                         const unsigned char *restrict bits, ptrdiff_t n)      \
    {                                                                                          \
        ptrdiff_t j, n8 = n >> 3;                                                              \
        for (j = 0; j < n8; j++) {                                                             \
            rf_v8_##T a, m;                                                                    \
            memcpy(&a, x + 8 * j, sizeof a);                                                   \
            memcpy(&m, rf_sign_table_##T + 8 * (ptrdiff_t)bits[j], sizeof m);                  \
            a = a * m;                                                                         \
            memcpy(u + 8 * j, &a, sizeof a);                                                   \
        }                                                                                      \
        for (j = 8 * n8; j < n; j++)                                                           \
            u[j] = x[j] * rf_sign_table_##T[8 * (ptrdiff_t)bits[j >> 3] + (j & 7)];            \
    }

RF_DEFINE_SIGNS(double)
RF_DEFINE_SIGNS(float)

#define RF_DEFINE_BLOCK(T)                                                                     \
    RF_CLONES void rf_ff_gather_##T(T *restrict w, const T *restrict u, const int *restrict P, \
                                    const T *restrict G, ptrdiff_t d)                          \
    {                                                                                          \
        ptrdiff_t k;                                                                           \
        for (k = 0; k < d; k++)                                                                \
            w[k] = u[P[k]] * G[k];                                                             \
    }                                                                                          \
    RF_CLONES void rf_ff_scale_##T(T *restrict out, const T *restrict w, const T *restrict S,  \
                                   T scale, ptrdiff_t m)                                       \
    {                                                                                          \
        ptrdiff_t k;                                                                           \
        for (k = 0; k < m; k++)                                                                \
            out[k] = (w[k] * S[k]) * scale;                                                    \
    }

RF_DEFINE_BLOCK(double)
RF_DEFINE_BLOCK(float)
