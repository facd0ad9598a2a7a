/* The one SIMD dispatcher of randfeat's compiled kernels (FWHT, RFF trigonometry, Fastfood
 * passes).  All of them are compiled into one extension (randfeat._lib._cpu), so this state is
 * shared: one selected level, one vocabulary, one switch.
 *
 *   level 0 "scalar"  portable C for the build's baseline target (the compiler may vectorise
 *                     it with SSE2 on x86-64; no run-time feature is assumed)
 *   level 1 "avx2"    x86-64-v3: AVX2 + FMA (+ BMI, F16C, ...)
 *   level 2 "avx512"  x86-64-v4: AVX-512 F/BW/CD/DQ/VL
 *
 * The best level this CPU (and build) supports is selected at the first call; the environment
 * variable RANDFEAT_ISA (scalar | avx2 | avx512 | auto; RANDFEAT_FWHT_ISA is the older name),
 * read once then, caps it; rf_isa_set() changes it later (tests and benchmarks).  The FWHT and
 * the Fastfood passes give bit-identical results on every level; the RFF sin/cos may differ by
 * an ulp between levels (FMA contraction), never between thread counts.
 */
#ifndef RANDFEAT_RF_ISA_H
#define RANDFEAT_RF_ISA_H

#ifdef __cplusplus
extern "C" {
#endif

enum { RF_ISA_SCALAR = 0, RF_ISA_AVX2 = 1, RF_ISA_AVX512 = 2, RF_ISA_COUNT = 3 };

/* Selected level (resolved on the first call; lock-free, idempotent). */
int rf_isa_level(void);
/* Best level this CPU and build support. */
int rf_isa_best(void);
/* "scalar", "avx2", "avx512"; NULL outside 0..2. */
const char *rf_isa_name(int level);
/* Select a level by name ("auto" = best supported): 0, -1 unknown name, -2 not supported here.
 * Do not call while another thread is computing (it decides which path a running call takes). */
int rf_isa_set(const char *name);

/* Whether this build has the x86-64-v3/v4 variants of the RFF/Fastfood loops (GCC >= 12 on
 * x86-64); other builds run their baseline code at every level. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && (__GNUC__ >= 12)
#define RF_HAVE_VARIANTS 1
#else
#define RF_HAVE_VARIANTS 0
#endif

#ifdef __cplusplus
}
#endif
#endif
