/* See fastfood_block.h. */
#include <string.h>
#include "fastfood_block.h"
#include "rf_isa.h"

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
 * multiplication in the v4/v3 variants, split into 16-byte operations in the baseline one).
 * Written out because GCC's auto-vectoriser vectorises the loop over bytes instead (gathering
 * table rows across lanes), which is slower (benchmarks/README.md).  memcpy: unaligned
 * loads/stores. */
typedef double rf_v8_double __attribute__((vector_size(8 * sizeof(double))));
typedef float rf_v8_float __attribute__((vector_size(8 * sizeof(float))));


/* ---- one copy of the passes per ISA level (fastfood_kern.h), dispatched by rf_isa.h ------- */
typedef struct {
    void (*signs_d)(double *, const double *, const unsigned char *, ptrdiff_t);
    void (*signs_f)(float *, const float *, const unsigned char *, ptrdiff_t);
    void (*gather_d)(double *, const double *, const int *, const double *, ptrdiff_t);
    void (*gather_f)(float *, const float *, const int *, const float *, ptrdiff_t);
    void (*scale_d)(double *, const double *, const double *, double, ptrdiff_t);
    void (*scale_f)(float *, const float *, const float *, float, ptrdiff_t);
} rf_ff_impl;

#define RF_VARIANTS_FILE "fastfood_kern.h"
#define RF_VARIANTS_IMPL rf_ff_impl
#include "rf_isa_variants.h"

static inline const rf_ff_impl *rf_ff(void) { return rf_ff_impl_table[rf_isa_level()]; }

void rf_ff_apply_signs_double(double *u, const double *x, const unsigned char *bits, ptrdiff_t n)
{
    rf_ff()->signs_d(u, x, bits, n);
}

void rf_ff_apply_signs_float(float *u, const float *x, const unsigned char *bits, ptrdiff_t n)
{
    rf_ff()->signs_f(u, x, bits, n);
}

void rf_ff_gather_double(double *w, const double *u, const int *P, const double *G, ptrdiff_t d)
{
    rf_ff()->gather_d(w, u, P, G, d);
}

void rf_ff_gather_float(float *w, const float *u, const int *P, const float *G, ptrdiff_t d)
{
    rf_ff()->gather_f(w, u, P, G, d);
}

void rf_ff_scale_double(double *out, const double *w, const double *S, double scale, ptrdiff_t m)
{
    rf_ff()->scale_d(out, w, S, scale, m);
}

void rf_ff_scale_float(float *out, const float *w, const float *S, float scale, ptrdiff_t m)
{
    rf_ff()->scale_f(out, w, S, scale, m);
}
