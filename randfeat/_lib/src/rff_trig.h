/* Fused trigonometric parts of random Fourier features (randfeat._lib._fourier).
 *
 * All functions work on one row in place, never allocate, hold no state and are thread safe.
 *   paired: row[0:m] holds the projection p = W x on entry; on exit
 *           row[j] = scale * cos(p_j), row[m + j] = scale * sin(p_j)   (row has 2m slots)
 *   phase:  row[j] = scale * cos(p_j + b_j)                           (row has m slots)
 * float rows are computed in double internally and rounded once.
 * Return value: 1 when some projection on entry was not finite (NaN/Inf, e.g. an overflowed
 * w'x: the output is NaN there), else 0 -- found at no cost in the libm path such rows take.
 * Each element takes the code path of its own magnitude (float: |x| <= 8192 single precision,
 * |x| <= RF_TRIG_FAST_MAX the double polynomial; libm above, and for NaN/Inf), so an element's
 * result never depends on how a row is cut into pieces (rff_trig.c).
 * The vectorised code path is chosen at run time for the CPU (GCC target_clones on x86-64
 * Linux; a portable build elsewhere): the result may differ by an ulp between CPUs, never
 * between thread counts.
 */
#ifndef RANDFEAT_RFF_TRIG_H
#define RANDFEAT_RFF_TRIG_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RF_TRIG_FAST_MAX 8.0e5

int rf_rff_paired_double(double *row, ptrdiff_t m, double scale);
int rf_rff_paired_float(float *row, ptrdiff_t m, float scale);
/* The same with the sin half anywhere: cos_io[j] (projection in, scale*cos out),
   sin_out[j] = scale*sin; sin_out must not overlap cos_io[0:m]. */
int rf_rff_paired_split_double(double *cos_io, double *sin_out, ptrdiff_t m, double scale);
int rf_rff_paired_split_float(float *cos_io, float *sin_out, ptrdiff_t m, float scale);
int rf_rff_phase_double(double *row, const double *b, ptrdiff_t m, double scale);
int rf_rff_phase_float(float *row, const float *b, ptrdiff_t m, float scale);
/* Name of the code path the dispatcher picked ("avx512", "avx2", "generic"). */
const char *rf_rff_trig_isa(void);

#ifdef __cplusplus
}
#endif
#endif
