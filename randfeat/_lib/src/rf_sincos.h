/* Branch-free, auto-vectorisable cos/sin of arrays (header only), used by the Fastfood kernel.
 *
 * Every value is reduced to r in [-pi/4, pi/4] by a three-part Cody-Waite subtraction of k*pi/2
 * (k = nearest integer to x*2/pi, obtained with the 1.5*2^52 "magic number" trick, so no rint()
 * call is needed), then the fdlibm/musl minimax polynomials __kernel_sin/__kernel_cos are evaluated
 * and the quadrant k mod 4 selects and signs them with integer bit masks.  Every step is a plain
 * arithmetic or bitwise operation, so GCC/Clang vectorise the loops at -O3 on any x86-64 or
 * AArch64 baseline (no -ffast-math, no -march flag needed).  The reduction is exact while
 * |k| < 2^20; arguments with |x| >= RF_SINCOS_BIG = 2^20; larger arguments (never produced by a sensible
 * feature map) are recomputed with libm in a second, scalar pass.  Accuracy: <= 1 ulp in double
 * against libm on |x| < 1e4 (measured; the test suite checks 2 ulp).  float input is converted to
 * double, evaluated with the same code, and rounded once, so the float results are correctly
 * rounded except in rare ties.
 *
 * The results depend on the value only (never on the position in the array or on the thread),
 * so feature maps built on them are bit-identical for every thread count.
 */
#ifndef RF_SINCOS_H
#define RF_SINCOS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RF_SINCOS_BIG 1048576.0  /* 2^20 */

/* Nonzero (bit 11) when |x| >= 2^20 or x is not finite: integer-only, so reductions vectorise. */
static inline uint64_t rf__is_big(double x)
{
    uint64_t u; memcpy(&u, &x, sizeof u);
    return (((u >> 52) & 0x7ffu) + (2048u - (1023u + 20u))) & 2048u;
}

static inline uint64_t rf__bits(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
static inline double rf__from_bits(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

/* sin and cos of x; exact reduction for |x| < RF_SINCOS_BIG. */
static inline void rf__sincos_core(double x, double *s_out, double *c_out)
{
    const double two_over_pi = 6.36619772367581382433e-01;
    const double magic = 6755399441055744.0;          /* 1.5 * 2^52 */
    const double pio2_1 = 1.57079632673412561417e+00;  /* first 33 bits of pi/2 */
    const double pio2_2 = 6.07710050630396597660e-11;  /* next 33 bits */
    const double pio2_3 = 2.02226624871116645580e-21;  /* next 33 bits */
    const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                 S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                 S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                 C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                 C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;

    double t = x * two_over_pi + magic;
    uint64_t q = rf__bits(t);                /* low bits = k mod 2^m (two's complement) */
    double k = t - magic;
    double r = ((x - k * pio2_1) - k * pio2_2) - k * pio2_3;

    double z = r * r, w = z * z, v = z * r;
    double ps = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
    double sr = r + v * (S1 + z * ps);
    double pr = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    double hz = 0.5 * z, one_m = 1.0 - hz;
    double cr = one_m + (((1.0 - one_m) - hz) + z * pr);

    /* quadrant: sin x = (q&1 ? cos r : sin r) * (q&2 ? -1 : 1)
     *           cos x = (q&1 ? sin r : cos r) * ((q+1)&2 ? -1 : 1) */
    uint64_t swap = (uint64_t)0 - (q & 1u);
    uint64_t bs = rf__bits(sr), bc = rf__bits(cr);
    uint64_t s_sel = (bc & swap) | (bs & ~swap);
    uint64_t c_sel = (bs & swap) | (bc & ~swap);
    *s_out = rf__from_bits(s_sel ^ ((q & 2u) << 62));
    *c_out = rf__from_bits(c_sel ^ (((q + 1u) & 2u) << 62));
}

/* c[j] = mult*cos(x[j]), s[j] = mult*sin(x[j]) for j < n (x, c, s must not alias). */
#define RF_DEFINE_SINCOS(NAME, TYPE, SINF, COSF)                                           \
static inline void NAME##_sincos(const TYPE *restrict x, ptrdiff_t n, TYPE *restrict c,    \
                                 TYPE *restrict s, TYPE mult)                              \
{                                                                                          \
    uint64_t big = 0;                                                                           \
    for (ptrdiff_t j = 0; j < n; ++j) {                                                    \
        double sv, cv;                                                                     \
        rf__sincos_core((double)x[j], &sv, &cv);                                           \
        c[j] = (TYPE)cv * mult;                                                            \
        s[j] = (TYPE)sv * mult;                                                            \
        big |= rf__is_big((double)x[j]);                                      \
    }                                                                                      \
    if (big) {                                                                             \
        for (ptrdiff_t j = 0; j < n; ++j) {                                                \
            if (rf__is_big((double)x[j])) {                                   \
                c[j] = COSF(x[j]) * mult;                                                  \
                s[j] = SINF(x[j]) * mult;                                                  \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
}                                                                                          \
/* c[j] = mult*cos(x[j] + b[j]) for j < n (the sum is rounded to TYPE first). */           \
static inline void NAME##_cos_shift(const TYPE *restrict x, const TYPE *restrict b,        \
                                    ptrdiff_t n, TYPE *restrict c, TYPE mult)              \
{                                                                                          \
    uint64_t big = 0;                                                                           \
    for (ptrdiff_t j = 0; j < n; ++j) {                                                    \
        double sv, cv;                                                                     \
        TYPE a = x[j] + b[j];                                                              \
        rf__sincos_core((double)a, &sv, &cv);                                              \
        (void)sv;                                                                          \
        c[j] = (TYPE)cv * mult;                                                            \
        big |= rf__is_big((double)a);                                         \
    }                                                                                      \
    if (big) {                                                                             \
        for (ptrdiff_t j = 0; j < n; ++j) {                                                \
            TYPE a = x[j] + b[j];                                                          \
            if (rf__is_big((double)a)) c[j] = COSF(a) * mult;                 \
        }                                                                                  \
    }                                                                                      \
}

RF_DEFINE_SINCOS(rf_double, double, sin, cos)
RF_DEFINE_SINCOS(rf_float, float, sinf, cosf)

#endif /* RF_SINCOS_H */
