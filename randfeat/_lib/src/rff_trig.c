/* Vectorisable sin/cos for random Fourier features; see rff_trig.h.
 *
 * Method (fdlibm / Cody–Waite): k = nearest integer to x * 2/pi, r = x - k*pi/2 with pi/2 split
 * in three 33-bit parts (exact products for |k| < 2^20), so |r| <= pi/4; then the fdlibm kernel
 * polynomials __kernel_sin/__kernel_cos (degree 13 / 14) on r and a quadrant swap by k mod 4.
 * Max error about 1 ulp for |x| <= RF_TRIG_FAST_MAX (tested against libm in
 * tests/test_fourier.py).  float elements with |x| <= 8192 use the single-precision Cephes
 * sinf/cosf scheme (three-part pi/2 with exact products, degree-7/8 minimax polynomials, ~1 ulp
 * of float) so that twice as many lanes fit a vector; larger float arguments go through the
 * double path. Loops are branch free so that GCC/Clang vectorise them at -O3.
 *
 * The phase map needs only cos(x + b).  It reduces by ODD multiples of pi/2 (as SLEEF's cos
 * does): n = round(x/pi - 1/2), q = 2n + 1, r = x - q*pi/2 in [-pi/2, pi/2], and
 * cos(x) = -sin(q*pi/2) sin(r) = (n odd ? sin r : -sin r).  One odd minimax polynomial for
 * sin on [-pi/2, pi/2] (SLEEF's coefficients: degree 9 in float, max polynomial error 8.7e-9
 * = 0.15 ulp(1); degree 19 in double, 6.5e-18 = 0.06 ulp(1); checked with mpmath) replaces
 * the two polynomials and the quadrant selects of the sin/cos path; the sign is a bit flip of
 * r by the parity bit that the round-to-integer trick leaves in the mantissa, with -scale.  The
 * products q*PIO2_i are exact as above (|q| <= 2^14 in float, 2^20 in double).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "rf_isa.h"
#include "rff_trig.h"

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

/* ---- cosine only (phase map): reduction by odd multiples of pi/2, one sine polynomial ---- */
static const double INV_PI = 3.18309886183790671538e-01;
static const double SD1 = -0.166666666666666657414808, SD2 = 0.00833333333333332974823815,
                    SD3 = -0.000198412698412696162806809, SD4 = 2.75573192239198747630416e-06,
                    SD5 = -2.50521083763502045810755e-08, SD6 = 1.60590430605664501629054e-10,
                    SD7 = -7.64712219118158833288484e-13, SD8 = 2.81009972710863200091251e-15,
                    SD9 = -7.97255955009037868891952e-18;

/* scale * cos(x) for |x| <= RF_TRIG_FAST_MAX. */
static inline __attribute__((always_inline)) double
rf_cos_scaled(double x, double scale)
{
    /* t = MAGIC + n, n = round(x/pi - 1/2); MAGIC is even and ulp(t) = 1, so bit 0 of t is the
       parity of n */
    double t = (x * INV_PI - 0.5) + ROUND_MAGIC;
    double nd = t - ROUND_MAGIC;
    double qd = 2.0 * nd + 1.0;                       /* odd, exact */
    double r = ((x - qd * PIO2_1) - qd * PIO2_2) - qd * PIO2_3;
    r = r - qd * PIO2_3T;
    uint64_t tb, rb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&rb, &r, sizeof rb);
    rb ^= tb << 63;               /* r -> -r when n is odd; with -scale below: n even gives
                                     -sin r, n odd sin r (two integer ops, no select) */
    memcpy(&r, &rb, sizeof r);
    double z = r * r;
    double u = SD1 + z * (SD2 + z * (SD3 + z * (SD4 + z * (SD5 + z * (SD6 + z * (SD7
               + z * (SD8 + z * SD9)))))));
    double sr = (-scale) * r;
    return sr + sr * z * u;
}

static const float INV_PIF = 0.318309886183790671538f;
static const float SF1 = -0.166666597127914428710938f, SF2 = 0.00833307858556509017944336f,
                   SF3 = -0.0001981069071916863322258f, SF4 = 2.6083159809786593541503e-06f;

/* scale * cos(x) for |x| <= RF_TRIGF_FAST_MAX, in single precision. */
static inline __attribute__((always_inline)) float
rf_cosf_scaled(float x, float scale)
{
    float t = (x * INV_PIF - 0.5f) + ROUND_MAGICF;
    float nf = t - ROUND_MAGICF;
    float qf = 2.0f * nf + 1.0f;
    float r = ((x - qf * PIO2F_1) - qf * PIO2F_2) - qf * PIO2F_3;
    uint32_t tb, rb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&rb, &r, sizeof rb);
    rb ^= tb << 31;                                   /* as in rf_cos_scaled */
    memcpy(&r, &rb, sizeof r);
    float z = r * r;
    float u = SF1 + z * (SF2 + z * (SF3 + z * SF4));
    float sr = (-scale) * r;
    return sr + sr * z * u;
}

static inline float rf_clampf(float x, float t) { return fabsf(x) <= t ? x : 0.0f; }

static inline double rf_clamp(double x, double t) { return fabs(x) <= t ? x : 0.0; }

/* offsets lie in [0, 2 pi): the limits on the projection are lowered by 6.3 */
#define RF_PHASE_MAX (RF_TRIG_FAST_MAX - 6.3)
#define RF_PHASEF_MAX (RF_TRIGF_FAST_MAX - 6.3f)

/* ---- one copy of the loops per ISA level (rff_trig_kern.h), dispatched by rf_isa.h -------- */
typedef struct {
    int (*paired_split_d)(double *, double *, ptrdiff_t, double);
    int (*paired_split_f)(float *, float *, ptrdiff_t, float);
    int (*phase_d)(double *, const double *, ptrdiff_t, double);
    int (*phase_f)(float *, const float *, ptrdiff_t, float);
} rf_trig_impl;

#define RF_VARIANTS_FILE "rff_trig_kern.h"
#define RF_VARIANTS_IMPL rf_trig_impl
#include "rf_isa_variants.h"

static inline const rf_trig_impl *rf_trig(void) { return rf_trig_impl_table[rf_isa_level()]; }

/* ---- public row functions ------------------------------------------------------------------ */
int rf_rff_paired_split_double(double *cos_io, double *sin_out, ptrdiff_t m, double scale)
{
    return rf_trig()->paired_split_d(cos_io, sin_out, m, scale);
}

int rf_rff_paired_split_float(float *cos_io, float *sin_out, ptrdiff_t m, float scale)
{
    return rf_trig()->paired_split_f(cos_io, sin_out, m, scale);
}

int rf_rff_paired_double(double *row, ptrdiff_t m, double scale)
{
    return rf_rff_paired_split_double(row, row + m, m, scale);
}

int rf_rff_paired_float(float *row, ptrdiff_t m, float scale)
{
    return rf_rff_paired_split_float(row, row + m, m, scale);
}

int rf_rff_phase_double(double *row, const double *b, ptrdiff_t m, double scale)
{
    return rf_trig()->phase_d(row, b, m, scale);
}

int rf_rff_phase_float(float *row, const float *b, ptrdiff_t m, float scale)
{
    return rf_trig()->phase_f(row, b, m, scale);
}

const char *rf_rff_trig_isa(void)
{
    return rf_isa_name(RF_HAVE_VARIANTS ? rf_isa_level() : RF_ISA_SCALAR);
}
