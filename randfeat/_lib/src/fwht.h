/* randfeat FWHT: unnormalised fast Walsh-Hadamard transform in natural (Sylvester) order.
 *
 *   rf_fwht_float(x, log_n)  transforms the 2**log_n contiguous floats at x in place;
 *   rf_fwht_double(x, log_n) the same for doubles;
 *   rf_fwht_ex_float/double  the same, out of place, scaled and/or checked for NaN/Inf (below).
 *
 * rf_fwht_float/double return 0 on success and -1 when log_n is outside [0, 30].  None of them
 * allocates; they never
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

/* Flags of rf_fwht_ex_*. */
enum { RF_FWHT_SCALE = 1, RF_FWHT_CHECK = 2 };

/* The transform of the 2**log_n values at src, written to x (src == x or NULL: in place; else
 * the two rows must not overlap), with the options of flags fused into the pass that writes the
 * result:
 *   RF_FWHT_SCALE  the result multiplied by s (bit-identical to the transform, then x[i] *= s);
 *   RF_FWHT_CHECK  report whether the result (after the scaling) holds NaN or +-Inf.
 * Reading src in the first pass (instead of copying it first) saves a pass over memory.
 * Returns -1 when log_n is outside [0, 30] (nothing written), 1 when RF_FWHT_CHECK and the result
 * is not finite, else 0.  The result is the same bits on every code path. */
int rf_fwht_ex_float(float *x, const float *src, int log_n, float s, int flags);
int rf_fwht_ex_double(double *x, const double *src, int log_n, double s, int flags);

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

/* The butterfly schedule of the SIMD paths: "add" (vector additions and subtractions) or "fma"
 * (the subtractions a - b as fma(b, -1, a), exact, for cores whose FMA pipes are separate from
 * their add pipes).  The same bits either way.  Chosen at the first transform from the environment
 * variable RANDFEAT_FWHT_SCHEDULE (add | fma | auto); auto and unset: "fma" on AMD Zen 4, where it
 * was measured faster, "add" elsewhere (see fwht.c).  rf_fwht_set_schedule (tests and benchmarks;
 * not while another thread transforms) returns 0, or -1 for an unknown name. */
const char *rf_fwht_schedule(void);
int rf_fwht_set_schedule(const char *name);

#ifdef __cplusplus
}
#endif
#endif
