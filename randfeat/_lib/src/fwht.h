/* randfeat FWHT: unnormalised fast Walsh-Hadamard transform in natural (Sylvester) order.
 *
 *   rf_fwht_float(x, log_n)  transforms the 2**log_n contiguous floats at x in place;
 *   rf_fwht_double(x, log_n) the same for doubles.
 *
 * Both return 0 on success and -1 when log_n is outside [0, 30].  They never allocate, never
 * touch Python, and are safe to call concurrently on disjoint buffers (no global state beyond the
 * CPU-feature dispatch, which is resolved once and is idempotent).
 */
#ifndef RANDFEAT_FWHT_H
#define RANDFEAT_FWHT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int rf_fwht_float(float *x, int log_n);
int rf_fwht_double(double *x, int log_n);

/* The transform multiplied by s (e.g. 2**(-log_n/2) for the orthonormal one), the product fused
 * into the last pass: bit-identical to rf_fwht_* followed by x[i] *= s.  Same return codes. */
int rf_fwht_scaled_float(float *x, int log_n, float s);
int rf_fwht_scaled_double(double *x, int log_n, double s);

/* 1 when all n values are finite (no NaN, no +-Inf), else 0.  Branch-free, vectorisable. */
int rf_all_finite_float(const float *x, ptrdiff_t n);
int rf_all_finite_double(const double *x, ptrdiff_t n);

/* x[0..n) *= s (vectorised with the selected ISA). */
void rf_scale_float(float *x, ptrdiff_t n, float s);
void rf_scale_double(double *x, ptrdiff_t n, double s);

/* Name of the code path the dispatcher selected on this CPU: "scalar", "avx2" or "avx512".
 * The best one the CPU supports is chosen on the first call; the environment variable
 * RANDFEAT_FWHT_ISA (scalar | avx2 | avx512 | auto), read once then, caps it.  Every path gives
 * bit-identical results (same butterflies, same order). */
const char *rf_fwht_isa(void);

/* Select a code path by name ("scalar", "avx2", "avx512", or "auto" = best supported), for tests
 * and benchmarks.  Returns 0, -1 for an unknown name, -2 when this CPU/build lacks it.  Do not
 * call it while another thread is transforming (the switch is atomic, but the caller decides
 * which path a running transform uses). */
int rf_fwht_set_isa(const char *name);

#ifdef __cplusplus
}
#endif
#endif
