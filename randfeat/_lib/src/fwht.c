/* Portable reference FWHT (radix-2 butterflies).  See fwht.h for the contract. */
#include "fwht.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RF_FWHT_MAX_LOG 30

#define DEFINE_SCALAR(TYPE)                                                        \
static void TYPE##_fwht_scalar(TYPE *x, int log_n)                                 \
{                                                                                  \
    const ptrdiff_t n = (ptrdiff_t)1 << log_n;                                     \
    for (ptrdiff_t h = 1; h < n; h <<= 1) {                                        \
        for (ptrdiff_t i = 0; i < n; i += 2 * h) {                                 \
            TYPE *a = x + i, *b = x + i + h;                                       \
            for (ptrdiff_t j = 0; j < h; ++j) {                                    \
                TYPE u = a[j], v = b[j];                                           \
                a[j] = u + v;                                                      \
                b[j] = u - v;                                                      \
            }                                                                      \
        }                                                                          \
    }                                                                              \
}

DEFINE_SCALAR(float)
DEFINE_SCALAR(double)

int rf_fwht_float(float *x, int log_n)
{
    if (log_n < 0 || log_n > RF_FWHT_MAX_LOG) return -1;
    float_fwht_scalar(x, log_n);
    return 0;
}

int rf_fwht_double(double *x, int log_n)
{
    if (log_n < 0 || log_n > RF_FWHT_MAX_LOG) return -1;
    double_fwht_scalar(x, log_n);
    return 0;
}

const char *rf_fwht_isa(void) { return "scalar"; }

int rf_all_finite_float(const float *x, ptrdiff_t n)
{
    uint32_t bad = 0;
    for (ptrdiff_t i = 0; i < n; ++i) {
        uint32_t b;
        memcpy(&b, x + i, sizeof b);
        bad |= (uint32_t)((b & 0x7f800000u) == 0x7f800000u);
    }
    return bad == 0;
}

int rf_all_finite_double(const double *x, ptrdiff_t n)
{
    uint64_t bad = 0;
    for (ptrdiff_t i = 0; i < n; ++i) {
        uint64_t b;
        memcpy(&b, x + i, sizeof b);
        bad |= (uint64_t)((b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
    }
    return bad == 0;
}
