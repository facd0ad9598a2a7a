/* A/B timing of randfeat's FWHT kernel variants, kernel only, interleaved (benchmarks/README.md,
 * "The fused finiteness check" and "The fma butterfly schedule").  Not part of the package.
 *
 * Build (from the repository root; the same flags as setup.py, no -march):
 *   gcc -O3 -fno-math-errno -Irandfeat/_lib/src benchmarks/fwht_kernel_ab.c -o /tmp/fwht_ab -lm
 * Run:
 *   /tmp/fwht_ab ISA DOUBLE LOG_N BATCH_MIB ROUNDS FLAGS...
 *     ISA        scalar | avx2 | avx512
 *     DOUBLE     0 (float32) or 1 (float64)
 *     LOG_N      log2 of the row length d
 *     BATCH_MIB  batch size in MiB (0.25: in cache; 16: the batches)
 *     ROUNDS     interleaved rounds (each calls every variant once, the order rotated by one)
 *     FLAGS      one variant each: 1 scale, 2 check (rf_fwht_ex_*'s flags), 4 out of place (read
 *                a separate source batch), 8 the "fma" schedule (else "add")
 *   e.g. /tmp/fwht_ab avx512 0 16 0.25 150 8 10   # fma schedule: without / with the check
 * Prints, per variant, the time per row: the sum over 4 MiB chunks of each chunk's best round
 * (robust on a loaded machine), and its ratio to the first variant.  Before each timed pass the
 * batch is rescaled by 1/sqrt(d), untimed (in place) or the source multiplied by 1. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rf_isa.c"
#include "fwht.c"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s ISA DOUBLE LOG_N BATCH_MIB ROUNDS FLAGS...\n", argv[0]);
        return 2;
    }
    const char *isa = argv[1];
    int dbl = atoi(argv[2]), log_n = atoi(argv[3]), rounds = atoi(argv[5]), nf = argc - 6;
    double mib = atof(argv[4]);
    if (rf_isa_set(isa) != 0 || nf > 8) {
        fprintf(stderr, "ISA %s not available here, or more than 8 variants\n", isa);
        return 2;
    }
    size_t es = dbl ? 8 : 4, n = (size_t)1 << log_n;
    size_t rows = (size_t)(mib * 1048576) / (n * es), chunk_rows, nch;
    if (!rows) rows = 1;
    chunk_rows = (4u << 20) / (n * es);
    if (!chunk_rows) chunk_rows = 1;
    nch = (rows + chunk_rows - 1) / chunk_rows;
    int flags[8];
    char *buf[8], *src = aligned_alloc(64, rows * n * es);
    for (int f = 0; f < nf; f++) flags[f] = atoi(argv[6 + f]);
    srand(1);
    for (size_t i = 0; i < rows * n; i++) {
        double v = rand() / (double)RAND_MAX - 0.5;
        if (dbl) ((double *)src)[i] = v;
        else ((float *)src)[i] = (float)v;
    }
    for (int f = 0; f < nf; f++) {
        buf[f] = aligned_alloc(64, rows * n * es);
        memcpy(buf[f], src, rows * n * es);
    }
    double *best = malloc(nf * nch * sizeof(double));
    for (size_t i = 0; i < nf * nch; i++) best[i] = 1e30;
    double s = 1.0 / sqrt((double)n);
    long bad = 0;
    for (int r = 0; r < rounds; r++) {
        for (int f0 = 0; f0 < nf; f0++) {
            int f = (f0 + r) % nf, fl = flags[f], oop = fl & 4;
            rf_fwht_set_schedule((fl & 8) ? "fma" : "add");
            fl &= RF_FWHT_SCALE | RF_FWHT_CHECK;
            char *b = oop ? src : buf[f];
            double k = oop ? 1.0 : s;
            for (size_t i = 0; i < rows * n; i++) {
                if (dbl) ((double *)b)[i] *= k;
                else ((float *)b)[i] *= (float)k;
            }
            for (size_t c = 0; c < nch; c++) {
                size_t r0 = c * chunk_rows, r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
                double t0 = now(), t;
                for (size_t i = r0; i < r1; i++) {
                    if (dbl) {
                        double *x = (double *)buf[f] + i * n;
                        bad += rf_fwht_ex_double(x, oop ? (double *)src + i * n : x, log_n, s, fl);
                    } else {
                        float *x = (float *)buf[f] + i * n;
                        bad += rf_fwht_ex_float(x, oop ? (float *)src + i * n : x, log_n,
                                                (float)s, fl);
                    }
                }
                t = now() - t0;
                if (t < best[f * nch + c]) best[f * nch + c] = t;
            }
        }
    }
    printf("%s %s 2^%d %.3gMiB:", isa, dbl ? "f64" : "f32", log_n, mib);
    double base = 0;
    for (int f = 0; f < nf; f++) {
        double tot = 0;
        for (size_t c = 0; c < nch; c++) tot += best[f * nch + c];
        if (f == 0) base = tot;
        printf("  fl%d %.1fns/vec (%.3f)", flags[f], tot / rows * 1e9, tot / base);
    }
    printf("  [non-finite rows: %ld]\n", bad);
    return 0;
}
