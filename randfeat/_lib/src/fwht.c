/* randfeat FWHT: portable scalar reference plus AVX2 and AVX-512 variants chosen at run time.
 * See fwht.h for the contract.
 *
 * One portable build: the SIMD variants are compiled with __attribute__((target(...))) (GCC and
 * Clang on x86-64 only; any other compiler or architecture gets the scalar code), and the best
 * variant is the level selected by randfeat's one dispatcher (rf_isa.h: the best the CPU and OS
 * support, capped by RANDFEAT_ISA; rf_isa_set() / rf_fwht_set_isa() change it for every kernel).
 *
 * Algorithm of the SIMD variants (fwht_simd.h): the lowest log2(lanes) levels are done inside
 * each vector (permute + fused multiply-add by a +-1 sign vector: exact), the next 3-4 levels
 * across 8-16 vectors held in registers, the remaining levels in radix-8/16 memory passes
 * (3-4 levels per load/store), and lengths beyond L1 recurse on sub-blocks first (cache
 * blocking) before a radix-8 pass on top.  The pass that writes the result also applies the
 * optional scale and NaN/Inf check (rf_fwht_ex_*), and the first pass may read a separate source
 * row.  Each SIMD variant exists in two butterfly schedules (fwht_sched.h: "add", and "fma",
 * whose subtractions are exact FMAs by -1), chosen by RANDFEAT_FWHT_SCHEDULE (rf_sched_auto
 * below).  Every path gives bit-identical results.
 */
#include "fwht.h"
#include "rf_isa.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RF_FWHT_MAX_LOG 30

/* ------------------------------------------------------------------ scalar reference */

/* The last two levels (strides n/4 and n/2) run fused, as one radix-4 loop that writes the
 * result: it multiplies by s when scale, and when check it ORs the bits of
 * z = a*0 + b*0 + c*0 + d*0 over the four values it stores (z is +-0 when all four are finite,
 * NaN, whose exponent bits are all ones, when one is NaN or +-Inf): five vector operations per
 * four values in the same loop, which the compiler vectorises with the butterflies.  (A
 * separate check pass, or a compare per value, which GCC does not vectorise for doubles, cost
 * 10-20 %.)  The butterflies are those of the radix-2 loop, in the same order: the same bits. */
#define DEFINE_SCALAR(TYPE, UINT, EXPMASK)                                                \
static void rf_fwht_scalar_##TYPE(TYPE *x, int log_n)                              \
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
}                                                                                  \
static inline UINT rf_bits0_##TYPE(TYPE v) /* the bits of v * 0 */                 \
{                                                                                  \
    TYPE z = v * (TYPE)0;                                                          \
    UINT b;                                                                        \
    memcpy(&b, &z, sizeof b);                                                      \
    return b;                                                                      \
}                                                                                  \
static inline int rf_last2_scalar_##TYPE(TYPE *restrict a, TYPE *restrict b,       \
                                         TYPE *restrict c, TYPE *restrict d,       \
                                         ptrdiff_t q, TYPE s, const int scale,     \
                                         const int check)                          \
{                                                                                  \
    UINT bad = 0;                                                                  \
    for (ptrdiff_t j = 0; j < q; ++j) {                                            \
        TYPE a1 = a[j] + b[j], b1 = a[j] - b[j], c1 = c[j] + d[j], d1 = c[j] - d[j]; \
        TYPE a2 = a1 + c1, c2 = a1 - c1, b2 = b1 + d1, d2 = b1 - d1;               \
        if (scale) { a2 *= s; b2 *= s; c2 *= s; d2 *= s; }                         \
        a[j] = a2; b[j] = b2; c[j] = c2; d[j] = d2;                                \
        if (check) bad |= (rf_bits0_##TYPE(a2) | rf_bits0_##TYPE(b2)) |              \
                          (rf_bits0_##TYPE(c2) | rf_bits0_##TYPE(d2));             \
    }                                                                              \
    return (bad & EXPMASK) != 0;                                                   \
}                                                                                  \
/* See rf_fwht_ex_* in fwht.h: the transform of src (== x, or a disjoint row) into x. */ \
static int rf_fwht_scalar_ex_##TYPE(TYPE *x, const TYPE *src, int log_n, TYPE s,   \
                                    int mode)                                      \
{                                                                                  \
    const ptrdiff_t n = (ptrdiff_t)1 << log_n, q = n >> 2;                         \
    if (x != src) memcpy(x, src, (size_t)n * sizeof(TYPE));                        \
    if (log_n < 2) {                                                               \
        rf_fwht_scalar_##TYPE(x, log_n);                                           \
        UINT bad = 0;                                                              \
        for (ptrdiff_t j = 0; j < n; ++j) {                                        \
            if (mode & RF_FWHT_SCALE) x[j] *= s;                                   \
            TYPE z = x[j] * (TYPE)0;                                               \
            UINT zb;                                                               \
            memcpy(&zb, &z, sizeof zb);                                            \
            bad |= zb;                                                             \
        }                                                                          \
        return (mode & RF_FWHT_CHECK) ? (bad & EXPMASK) != 0 : 0;                  \
    }                                                                              \
    for (int k = 0; k < 4; ++k) rf_fwht_scalar_##TYPE(x + k * q, log_n - 2);       \
    switch (mode & (RF_FWHT_SCALE | RF_FWHT_CHECK)) {                              \
    case 0: return rf_last2_scalar_##TYPE(x, x + q, x + 2 * q, x + 3 * q, q, s, 0, 0); \
    case RF_FWHT_SCALE:                                                            \
        return rf_last2_scalar_##TYPE(x, x + q, x + 2 * q, x + 3 * q, q, s, 1, 0); \
    case RF_FWHT_CHECK:                                                            \
        return rf_last2_scalar_##TYPE(x, x + q, x + 2 * q, x + 3 * q, q, s, 0, 1); \
    default: return rf_last2_scalar_##TYPE(x, x + q, x + 2 * q, x + 3 * q, q, s, 1, 1); \
    }                                                                              \
}

DEFINE_SCALAR(float, uint32_t, 0x7f800000u)
DEFINE_SCALAR(double, uint64_t, 0x7ff0000000000000ull)

/* ------------------------------------------------------------------ SIMD variants */

#if (defined(__x86_64__) || defined(_M_X64)) && \
    (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)) && !defined(RANDFEAT_FWHT_NO_SIMD)
#define RF_HAVE_X86_SIMD 1
#include <cpuid.h>
#include <immintrin.h>
#define RF_ALWAYS_INLINE __attribute__((always_inline))

/* ---- AVX-512, float: 16 lanes */
#define RF_TGT512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
static inline RF_TGT512 RF_ALWAYS_INLINE __m512 rf_intra512f(__m512 v, const int k)
{
    switch (k) {
    case 0: return _mm512_fmadd_ps(v, _mm512_set_ps(-1, 1, -1, 1, -1, 1, -1, 1,
                                                     -1, 1, -1, 1, -1, 1, -1, 1),
                                   _mm512_permute_ps(v, 0xB1));
    case 1: return _mm512_fmadd_ps(v, _mm512_set_ps(-1, -1, 1, 1, -1, -1, 1, 1,
                                                     -1, -1, 1, 1, -1, -1, 1, 1),
                                   _mm512_permute_ps(v, 0x4E));
    case 2: return _mm512_fmadd_ps(v, _mm512_set_ps(-1, -1, -1, -1, 1, 1, 1, 1,
                                                     -1, -1, -1, -1, 1, 1, 1, 1),
                                   _mm512_shuffle_f32x4(v, v, 0xB1));
    default: return _mm512_fmadd_ps(v, _mm512_set_ps(-1, -1, -1, -1, -1, -1, -1, -1,
                                                      1, 1, 1, 1, 1, 1, 1, 1),
                                    _mm512_shuffle_f32x4(v, v, 0x4E));
    }
}
#define RF_SFX avx512_float
#define RF_ATTR RF_TGT512
#define RF_T float
#define RF_V __m512
#define RF_LOGW 4
#define RF_LOGR 4
#define RF_MAXRAD 4
#ifndef RF_LEAF_AVX512_FLOAT
#define RF_LEAF_AVX512_FLOAT 12
#endif
#define RF_LEAF RF_LEAF_AVX512_FLOAT
#ifndef RF_TOPRAD_AVX512_FLOAT
#define RF_TOPRAD_AVX512_FLOAT 3
#endif
#define RF_TOPRAD RF_TOPRAD_AVX512_FLOAT
#define RF_LOAD(p) _mm512_loadu_ps(p)
#define RF_STORE(p, v) _mm512_storeu_ps((p), (v))
#define RF_ADD(a, b) _mm512_add_ps((a), (b))
#define RF_SUB(a, b) _mm512_sub_ps((a), (b))
#define RF_INTRA_ALL(v) rf_intra512f(rf_intra512f(rf_intra512f(rf_intra512f((v), 0), 1), 2), 3)
#define RF_SCALE(v, s) _mm512_mul_ps((v), _mm512_set1_ps(s))
#define RF_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define RF_ZERO() _mm512_setzero_ps()
#define RF_SET1(c) _mm512_set1_ps(c)
#define RF_ANY_NAN(v) (_mm512_cmp_ps_mask((v), (v), _CMP_UNORD_Q) != 0)
#include "fwht_sched.h"

/* ---- AVX-512, double: 8 lanes */
static inline RF_TGT512 RF_ALWAYS_INLINE __m512d rf_intra512d(__m512d v, const int k)
{
    switch (k) {
    case 0: return _mm512_fmadd_pd(v, _mm512_set_pd(-1, 1, -1, 1, -1, 1, -1, 1),
                                   _mm512_permute_pd(v, 0x55));
    case 1: return _mm512_fmadd_pd(v, _mm512_set_pd(-1, -1, 1, 1, -1, -1, 1, 1),
                                   _mm512_shuffle_f64x2(v, v, 0xB1));
    default: return _mm512_fmadd_pd(v, _mm512_set_pd(-1, -1, -1, -1, 1, 1, 1, 1),
                                    _mm512_shuffle_f64x2(v, v, 0x4E));
    }
}
#define RF_SFX avx512_double
#define RF_ATTR RF_TGT512
#define RF_T double
#define RF_V __m512d
#define RF_LOGW 3
#define RF_LOGR 4
#define RF_MAXRAD 4
#ifndef RF_LEAF_AVX512_DOUBLE
#define RF_LEAF_AVX512_DOUBLE 11
#endif
#define RF_LEAF RF_LEAF_AVX512_DOUBLE
#ifndef RF_TOPRAD_AVX512_DOUBLE
#define RF_TOPRAD_AVX512_DOUBLE 3
#endif
#define RF_TOPRAD RF_TOPRAD_AVX512_DOUBLE
#define RF_LOAD(p) _mm512_loadu_pd(p)
#define RF_STORE(p, v) _mm512_storeu_pd((p), (v))
#define RF_ADD(a, b) _mm512_add_pd((a), (b))
#define RF_SUB(a, b) _mm512_sub_pd((a), (b))
#define RF_INTRA_ALL(v) rf_intra512d(rf_intra512d(rf_intra512d((v), 0), 1), 2)
#define RF_SCALE(v, s) _mm512_mul_pd((v), _mm512_set1_pd(s))
#define RF_FMA(a, b, c) _mm512_fmadd_pd((a), (b), (c))
#define RF_ZERO() _mm512_setzero_pd()
#define RF_SET1(c) _mm512_set1_pd(c)
#define RF_ANY_NAN(v) (_mm512_cmp_pd_mask((v), (v), _CMP_UNORD_Q) != 0)
#include "fwht_sched.h"

/* ---- AVX2 + FMA, float: 8 lanes */
#define RF_TGT256 __attribute__((target("avx2,fma")))
static inline RF_TGT256 RF_ALWAYS_INLINE __m256 rf_intra256f(__m256 v, const int k)
{
    switch (k) {
    case 0: return _mm256_fmadd_ps(v, _mm256_set_ps(-1, 1, -1, 1, -1, 1, -1, 1),
                                   _mm256_permute_ps(v, 0xB1));
    case 1: return _mm256_fmadd_ps(v, _mm256_set_ps(-1, -1, 1, 1, -1, -1, 1, 1),
                                   _mm256_permute_ps(v, 0x4E));
    default: return _mm256_fmadd_ps(v, _mm256_set_ps(-1, -1, -1, -1, 1, 1, 1, 1),
                                    _mm256_permute2f128_ps(v, v, 0x01));
    }
}
#define RF_SFX avx2_float
#define RF_ATTR RF_TGT256
#define RF_T float
#define RF_V __m256
#define RF_LOGW 3
#define RF_LOGR 3
#define RF_MAXRAD 3
#ifndef RF_LEAF_AVX2_FLOAT
#define RF_LEAF_AVX2_FLOAT 12
#endif
#define RF_LEAF RF_LEAF_AVX2_FLOAT
#ifndef RF_TOPRAD_AVX2_FLOAT
#define RF_TOPRAD_AVX2_FLOAT 3
#endif
#define RF_TOPRAD RF_TOPRAD_AVX2_FLOAT
#define RF_LOAD(p) _mm256_loadu_ps(p)
#define RF_STORE(p, v) _mm256_storeu_ps((p), (v))
#define RF_ADD(a, b) _mm256_add_ps((a), (b))
#define RF_SUB(a, b) _mm256_sub_ps((a), (b))
#define RF_INTRA_ALL(v) rf_intra256f(rf_intra256f(rf_intra256f((v), 0), 1), 2)
#define RF_SCALE(v, s) _mm256_mul_ps((v), _mm256_set1_ps(s))
#define RF_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define RF_ZERO() _mm256_setzero_ps()
#define RF_SET1(c) _mm256_set1_ps(c)
#define RF_ANY_NAN(v) (_mm256_movemask_ps(_mm256_cmp_ps((v), (v), _CMP_UNORD_Q)) != 0)
#include "fwht_sched.h"

/* ---- AVX2 + FMA, double: 4 lanes */
static inline RF_TGT256 RF_ALWAYS_INLINE __m256d rf_intra256d(__m256d v, const int k)
{
    switch (k) {
    case 0: return _mm256_fmadd_pd(v, _mm256_set_pd(-1, 1, -1, 1), _mm256_permute_pd(v, 0x5));
    default: return _mm256_fmadd_pd(v, _mm256_set_pd(-1, -1, 1, 1),
                                    _mm256_permute2f128_pd(v, v, 0x01));
    }
}
#define RF_SFX avx2_double
#define RF_ATTR RF_TGT256
#define RF_T double
#define RF_V __m256d
#define RF_LOGW 2
#define RF_LOGR 3
#define RF_MAXRAD 3
#ifndef RF_LEAF_AVX2_DOUBLE
#define RF_LEAF_AVX2_DOUBLE 11
#endif
#define RF_LEAF RF_LEAF_AVX2_DOUBLE
#ifndef RF_TOPRAD_AVX2_DOUBLE
#define RF_TOPRAD_AVX2_DOUBLE 3
#endif
#define RF_TOPRAD RF_TOPRAD_AVX2_DOUBLE
#define RF_LOAD(p) _mm256_loadu_pd(p)
#define RF_STORE(p, v) _mm256_storeu_pd((p), (v))
#define RF_ADD(a, b) _mm256_add_pd((a), (b))
#define RF_SUB(a, b) _mm256_sub_pd((a), (b))
#define RF_INTRA_ALL(v) rf_intra256d(rf_intra256d((v), 0), 1)
#define RF_SCALE(v, s) _mm256_mul_pd((v), _mm256_set1_pd(s))
#define RF_FMA(a, b, c) _mm256_fmadd_pd((a), (b), (c))
#define RF_ZERO() _mm256_setzero_pd()
#define RF_SET1(c) _mm256_set1_pd(c)
#define RF_ANY_NAN(v) (_mm256_movemask_pd(_mm256_cmp_pd((v), (v), _CMP_UNORD_Q)) != 0)
#include "fwht_sched.h"

#endif /* RF_HAVE_X86_SIMD */

/* ------------------------------------------------------------------ dispatch */

typedef int (*rf_fwht_f_fn)(float *, const float *, int, float, int);
typedef int (*rf_fwht_d_fn)(double *, const double *, int, double, int);

typedef struct {
    const char *name;
    rf_fwht_f_fn fwht_f;
    rf_fwht_d_fn fwht_d;
} rf_impl;

enum { RF_SCHED_ADD = 0, RF_SCHED_FMA_ = 1, RF_SCHED_COUNT = 2 };
static const char *const rf_sched_names[RF_SCHED_COUNT] = {"add", "fma"};

/* [level][schedule]; the scalar code has one schedule. */
static const rf_impl rf_impls[RF_ISA_COUNT][RF_SCHED_COUNT] = {
    {{"scalar", rf_fwht_scalar_ex_float, rf_fwht_scalar_ex_double},
     {"scalar", rf_fwht_scalar_ex_float, rf_fwht_scalar_ex_double}},
#ifdef RF_HAVE_X86_SIMD
    {{"avx2", rf_fwht_ex_avx2_float, rf_fwht_ex_avx2_double},
     {"avx2", rf_fwht_ex_avx2_float_fma, rf_fwht_ex_avx2_double_fma}},
    {{"avx512", rf_fwht_ex_avx512_float, rf_fwht_ex_avx512_double},
     {"avx512", rf_fwht_ex_avx512_float_fma, rf_fwht_ex_avx512_double_fma}},
#else
    {{"avx2", NULL, NULL}, {"avx2", NULL, NULL}},
    {{"avx512", NULL, NULL}, {"avx512", NULL, NULL}},
#endif
};

/* The butterfly schedule: -1 until resolved from RANDFEAT_FWHT_SCHEDULE (add | fma | auto; read
 * once, at the first transform).  "auto" (and unset) gives "fma" on the CPUs where it was
 * measured faster -- AMD Zen 4 (family 19h with AVX-512), on both the AVX2 and AVX-512 paths
 * (benchmarks/README.md) -- and "add" everywhere else, including Zen 1/2/3/5, whose FMA pipes are
 * also apart from the add pipes but where it has not been measured (set the variable there to
 * compare).  Resolution is idempotent, as rf_isa_level's. */
static int rf_sched_selected = -1;

static int rf_sched_auto(void)
{
#ifdef RF_HAVE_X86_SIMD
    unsigned a, b, c, d, family;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return RF_SCHED_ADD;
    if (b != 0x68747541u || d != 0x69746e65u || c != 0x444d4163u) /* "AuthenticAMD" */
        return RF_SCHED_ADD;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return RF_SCHED_ADD;
    family = (a >> 8) & 0xfu;
    if (family == 0xfu) family += (a >> 20) & 0xffu;
    __builtin_cpu_init();
    if (family == 0x19u && __builtin_cpu_supports("avx512f")) return RF_SCHED_FMA_;
#endif
    return RF_SCHED_ADD;
}

static int rf_sched_index(const char *name)
{
    if (name == NULL || name[0] == '\0' || strcmp(name, "auto") == 0) return rf_sched_auto();
    for (int i = 0; i < RF_SCHED_COUNT; ++i)
        if (strcmp(name, rf_sched_names[i]) == 0) return i;
    return -1;
}

static int rf_sched(void)
{
#if defined(__GNUC__) || defined(__clang__)
    int sel = __atomic_load_n(&rf_sched_selected, __ATOMIC_ACQUIRE);
#else
    int sel = *(volatile int *)&rf_sched_selected;
#endif
    if (sel >= 0) return sel;
    sel = rf_sched_index(getenv("RANDFEAT_FWHT_SCHEDULE"));
    if (sel < 0) sel = rf_sched_auto(); /* unknown name: ignored (auto) */
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&rf_sched_selected, sel, __ATOMIC_RELEASE);
#else
    *(volatile int *)&rf_sched_selected = sel;
#endif
    return sel;
}

/* The level selected by the one dispatcher (rf_isa.c) and the schedule; levels this build lacks
 * fall back to the scalar code (rf_isa_best never selects them on such builds). */
static inline const rf_impl *rf_get(void)
{
    const rf_impl *impl = &rf_impls[rf_isa_level()][rf_sched()];
    return impl->fwht_f != NULL ? impl : &rf_impls[RF_ISA_SCALAR][RF_SCHED_ADD];
}

int rf_fwht_ex_float(float *x, const float *src, int log_n, float s, int flags)
{
    if (log_n < 0 || log_n > RF_FWHT_MAX_LOG) return -1;
    return rf_get()->fwht_f(x, src != NULL ? src : x, log_n, s, flags);
}

int rf_fwht_ex_double(double *x, const double *src, int log_n, double s, int flags)
{
    if (log_n < 0 || log_n > RF_FWHT_MAX_LOG) return -1;
    return rf_get()->fwht_d(x, src != NULL ? src : x, log_n, s, flags);
}

int rf_fwht_float(float *x, int log_n) { return rf_fwht_ex_float(x, x, log_n, 1.0f, 0); }
int rf_fwht_double(double *x, int log_n) { return rf_fwht_ex_double(x, x, log_n, 1.0, 0); }

const char *rf_fwht_isa(void) { return rf_get()->name; }

int rf_fwht_set_isa(const char *name) { return rf_isa_set(name); }

const char *rf_fwht_schedule(void) { return rf_sched_names[rf_sched()]; }

int rf_fwht_set_schedule(const char *name)
{
    int idx = rf_sched_index(name);
    if (idx < 0) return -1;
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&rf_sched_selected, idx, __ATOMIC_RELEASE);
#else
    *(volatile int *)&rf_sched_selected = idx;
#endif
    return 0;
}
