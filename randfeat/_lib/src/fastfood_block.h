/* The elementwise passes of a Fastfood block around its two Hadamard transforms
 * (randfeat._lib._fastfood), compiled for x86-64-v4 / v3 / baseline and chosen at run time
 * (GCC target_clones on x86-64 Linux; a portable build elsewhere):
 *
 *   rf_ff_apply_signs: u[k] = x[k] * B[k]  for k < n, B = +-1 from bit-packed storage
 *                      (bit k % 8 of byte k / 8 set for B = -1, i.e.
 *                      numpy.packbits(B < 0, bitorder="little")); each byte indexes a 256 x 8
 *                      table of +-1 (filled by rf_ff_sign_tables_init) and the eight values are
 *                      multiplied by that table row as one vector product.  x * (+-1) is exact.
 *   rf_ff_gather:  w[k] = u[P[k]] * G[k]            (Pi then G; 0 <= P[k] < d)
 *   rf_ff_scale:   out[k] = (w[k] * S[k]) * scale    (S and 1/(sigma sqrt d))
 *
 * With the AVX-512 / AVX2 clones the gather is a vector gather and the products are vector
 * products; every clone computes the same IEEE products in the same order, so the result is
 * bit-identical on every code path and for every thread count.  u, w, out must not overlap.
 */
#ifndef RANDFEAT_FASTFOOD_BLOCK_H
#define RANDFEAT_FASTFOOD_BLOCK_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void rf_ff_sign_tables_init(void);
void rf_ff_apply_signs_double(double *u, const double *x, const unsigned char *bits, ptrdiff_t n);
void rf_ff_apply_signs_float(float *u, const float *x, const unsigned char *bits, ptrdiff_t n);
void rf_ff_gather_double(double *w, const double *u, const int *P, const double *G, ptrdiff_t d);
void rf_ff_gather_float(float *w, const float *u, const int *P, const float *G, ptrdiff_t d);
void rf_ff_scale_double(double *out, const double *w, const double *S, double scale, ptrdiff_t m);
void rf_ff_scale_float(float *out, const float *w, const float *S, float scale, ptrdiff_t m);

#ifdef __cplusplus
}
#endif
#endif
