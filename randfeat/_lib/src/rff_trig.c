/* Vectorisable sin/cos for random Fourier features; see rff_trig.h.
 *
 * Method (fdlibm / Cody–Waite): k = nearest integer to x * 2/pi, r = x - k*pi/2 with pi/2 split
 * in three 33-bit parts (exact products for |k| < 2^20), so |r| <= pi/4; then the fdlibm kernel
 * polynomials __kernel_sin/__kernel_cos (degree 13 / 14) on r and a quadrant swap by k mod 4.
 * Max error about 1 ulp for |x| <= RF_TRIG_FAST_MAX (tested against libm in
 * tests/test_fourier.py).  float rows with |x| <= 8192 use the single-precision Cephes
 * sinf/cosf scheme (three-part pi/2 with exact products, degree-7/8 minimax polynomials, ~1 ulp
 * of float) so that twice as many lanes fit a vector; larger float arguments go through the
 * double path. Loops are branch free so that GCC/Clang vectorise them at -O3.
 */
#include <math.h>
#include <string.h>
#include "rff_trig.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && (__GNUC__ >= 12)
#define RF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RF_CLONES
#endif

#define RF_BLOCK 256

static const double INV_PIO2 = 6.36619772367581382433e-01;
static const double PIO2_1 = 1.57079632673412561417e+00;  /* first 33 bits of pi/2 */
static const double PIO2_2 = 6.07710050630396597660e-11;  /* next 33 bits */
static const double PIO2_3 = 2.02226624871116645580e-21;  /* next 33 bits */
static const double PIO2_3T = 8.47842766036889956997e-32; /* pi/2 - (PIO2_1 + PIO2_2 + PIO2_3) */
static const double ROUND_MAGIC = 6755399441055744.0;     /* 1.5 * 2^52 */

static const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                    S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                    S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
static const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                    C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                    C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;

/* sin and cos of x (|x| <= RF_TRIG_FAST_MAX), inlined into the vectorised loops. */
static inline __attribute__((always_inline)) void
rf_sincos_fast(double x, double *s_out, double *c_out)
{
    double kd = (x * INV_PIO2 + ROUND_MAGIC) - ROUND_MAGIC;
    int q = (int)kd;
    double r = ((x - kd * PIO2_1) - kd * PIO2_2) - kd * PIO2_3;
    r = r - kd * PIO2_3T;
    double z = r * r;
    double sp = r + r * z * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
    double cp = 1.0 - 0.5 * z + z * z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
    int swap = q & 1;
    double s = swap ? cp : sp;
    double c = swap ? sp : cp;
    /* sin negative in quadrants 2, 3; cos negative in quadrants 1, 2 */
    s = (q & 2) ? -s : s;
    c = ((q + 1) & 2) ? -c : c;
    *s_out = s;
    *c_out = c;
}

static inline double rf_cos_fast(double x)
{
    double s, c;
    rf_sincos_fast(x, &s, &c);
    return c;
}

/* ---- single precision (|x| <= RF_TRIGF_FAST_MAX): Cephes sinf/cosf, float lanes ---------- */
#define RF_TRIGF_FAST_MAX 8192.0f
static const float INV_PIO2F = 0.636619772367581343f;
static const float PIO2F_1 = 1.5703125f;                  /* 8 bits: k * PIO2F_1 exact */
static const float PIO2F_2 = 4.837512969970703125e-4f;    /* 11 bits */
static const float PIO2F_3 = 7.54978995489188216e-8f;
static const float ROUND_MAGICF = 12582912.0f;            /* 1.5 * 2^23 */

static inline __attribute__((always_inline)) void
rf_sincosf_fast(float x, float *s_out, float *c_out)
{
    float kf = (x * INV_PIO2F + ROUND_MAGICF) - ROUND_MAGICF;
    int q = (int)kf;
    float r = ((x - kf * PIO2F_1) - kf * PIO2F_2) - kf * PIO2F_3;
    float z = r * r;
    float sp = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
    float cp = 1.0f - 0.5f * z
               + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f
                                                      + z * 2.443315711809948e-5f));
    int swap = q & 1;
    float s = swap ? cp : sp;
    float c = swap ? sp : cp;
    s = (q & 2) ? -s : s;
    c = ((q + 1) & 2) ? -c : c;
    *s_out = s;
    *c_out = c;
}

/* ---- block kernels: inputs in a private buffer, outputs through restrict pointers ---------- */
RF_CLONES static void
paired_block_d(const double *restrict p, ptrdiff_t n, double scale,
               double *restrict co, double *restrict si)
{
    for (ptrdiff_t j = 0; j < n; j++) {
        double s, c;
        rf_sincos_fast(p[j], &s, &c);
        co[j] = scale * c;
        si[j] = scale * s;
    }
}

RF_CLONES static void
paired_block_f(const float *restrict p, ptrdiff_t n, float scale,
               float *restrict co, float *restrict si)
{
    double sc = (double)scale;
    for (ptrdiff_t j = 0; j < n; j++) {
        double s, c;
        rf_sincos_fast((double)p[j], &s, &c);
        co[j] = (float)(sc * c);
        si[j] = (float)(sc * s);
    }
}

RF_CLONES static void
paired_block_ff(const float *restrict p, ptrdiff_t n, float scale,
                float *restrict co, float *restrict si)
{
    for (ptrdiff_t j = 0; j < n; j++) {
        float s, c;
        rf_sincosf_fast(p[j], &s, &c);
        co[j] = scale * c;
        si[j] = scale * s;
    }
}

RF_CLONES static void
phase_block_ff(float *restrict x, const float *restrict b, ptrdiff_t n, float scale)
{
    for (ptrdiff_t j = 0; j < n; j++) {
        float s, c;
        rf_sincosf_fast(x[j] + b[j], &s, &c);
        x[j] = scale * c;
    }
}

RF_CLONES static void
phase_block_d(double *restrict x, const double *restrict b, ptrdiff_t n, double scale)
{
    for (ptrdiff_t j = 0; j < n; j++)
        x[j] = scale * rf_cos_fast(x[j] + b[j]);
}

RF_CLONES static void
phase_block_f(float *restrict x, const float *restrict b, ptrdiff_t n, float scale)
{
    double sc = (double)scale;
    for (ptrdiff_t j = 0; j < n; j++)
        x[j] = (float)(sc * rf_cos_fast((double)x[j] + (double)b[j]));
}

RF_CLONES static double absmax_d(const double *x, ptrdiff_t n)
{
    double mx = 0.0;
    for (ptrdiff_t j = 0; j < n; j++) {
        double a = fabs(x[j]);
        mx = a > mx ? a : mx;
    }
    return mx;
}

RF_CLONES static float absmax_f(const float *x, ptrdiff_t n)
{
    float mx = 0.0f;
    for (ptrdiff_t j = 0; j < n; j++) {
        float a = fabsf(x[j]);
        mx = a > mx ? a : mx;
    }
    return mx;
}

/* NaN never reaches here (inputs are validated), but a NaN max must take the slow path. */
static int needs_libm(double mx, double bmax) { return !(mx + bmax <= RF_TRIG_FAST_MAX); }

/* ---- public row functions ------------------------------------------------------------------ */
void rf_rff_paired_double(double *row, ptrdiff_t m, double scale)
{
    if (needs_libm(absmax_d(row, m), 0.0)) {
        /* in place from the end is unsafe for j < m; go forward: row[j] is read before write
           and row[m + j] is never read. */
        for (ptrdiff_t j = 0; j < m; j++) {
            double p = row[j];
            row[j] = scale * cos(p);
            row[m + j] = scale * sin(p);
        }
        return;
    }
    double buf[RF_BLOCK];
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        memcpy(buf, row + j0, (size_t)n * sizeof(double));
        paired_block_d(buf, n, scale, row + j0, row + m + j0);
    }
}

void rf_rff_paired_float(float *row, ptrdiff_t m, float scale)
{
    float mx = absmax_f(row, m);
    if (mx <= RF_TRIGF_FAST_MAX) {
        float fbuf[RF_BLOCK];
        for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
            ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
            memcpy(fbuf, row + j0, (size_t)n * sizeof(float));
            paired_block_ff(fbuf, n, scale, row + j0, row + m + j0);
        }
        return;
    }
    if (needs_libm((double)mx, 0.0)) {
        for (ptrdiff_t j = 0; j < m; j++) {
            double p = (double)row[j];
            row[j] = (float)((double)scale * cos(p));
            row[m + j] = (float)((double)scale * sin(p));
        }
        return;
    }
    float buf[RF_BLOCK];
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        memcpy(buf, row + j0, (size_t)n * sizeof(float));
        paired_block_f(buf, n, scale, row + j0, row + m + j0);
    }
}

void rf_rff_phase_double(double *row, const double *b, ptrdiff_t m, double scale)
{
    /* offsets lie in [0, 2 pi) */
    if (needs_libm(absmax_d(row, m), 6.3)) {
        for (ptrdiff_t j = 0; j < m; j++)
            row[j] = scale * cos(row[j] + b[j]);
        return;
    }
    phase_block_d(row, b, m, scale);
}

void rf_rff_phase_float(float *row, const float *b, ptrdiff_t m, float scale)
{
    float mx = absmax_f(row, m);
    if (mx + 6.3f <= RF_TRIGF_FAST_MAX) {
        phase_block_ff(row, b, m, scale);
        return;
    }
    if (needs_libm((double)mx, 6.3)) {
        for (ptrdiff_t j = 0; j < m; j++)
            row[j] = (float)((double)scale * cos((double)row[j] + (double)b[j]));
        return;
    }
    phase_block_f(row, b, m, scale);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && (__GNUC__ >= 12)
const char *rf_rff_trig_isa(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return "avx512";
    if (__builtin_cpu_supports("x86-64-v3")) return "avx2";
    return "generic";
}
#else
const char *rf_rff_trig_isa(void) { return "generic"; }
#endif
