/* Row loop of the FFHT peer of bench_fwht.py: call an external FWHT kernel int f(T *, int) on
 * every row, rows spread over OpenMP threads like randfeat's own loop (static schedule).
 * Compiled by the benchmark into a scratch directory (cc -O3 -fPIC -shared [-fopenmp]); never
 * part of the installed package. */
#include <stddef.h>

typedef int (*rf_bench_f)(float *, int);
typedef int (*rf_bench_d)(double *, int);

long rf_bench_rows_float(float *x, long n_rows, int log_n, int n_threads, rf_bench_f f)
{
    long bad = 0, n = 1L << log_n;
#pragma omp parallel for schedule(static) num_threads(n_threads) reduction(+:bad) if(n_threads > 1)
    for (long i = 0; i < n_rows; i++)
        bad += f(x + i * n, log_n) != 0;
    return bad;
}

long rf_bench_rows_double(double *x, long n_rows, int log_n, int n_threads, rf_bench_d f)
{
    long bad = 0, n = 1L << log_n;
#pragma omp parallel for schedule(static) num_threads(n_threads) reduction(+:bad) if(n_threads > 1)
    for (long i = 0; i < n_rows; i++)
        bad += f(x + i * n, log_n) != 0;
    return bad;
}

/* The same for an out-of-place kernel int f(const T *in, T *out, int log_n) (FFHT's fht_*_oop). */
typedef int (*rf_bench_oop_f)(float *, float *, int);
typedef int (*rf_bench_oop_d)(double *, double *, int);

long rf_bench_rows_oop_float(float *src, float *dst, long n_rows, int log_n, int n_threads,
                             rf_bench_oop_f f)
{
    long bad = 0, n = 1L << log_n;
#pragma omp parallel for schedule(static) num_threads(n_threads) reduction(+:bad) if(n_threads > 1)
    for (long i = 0; i < n_rows; i++)
        bad += f(src + i * n, dst + i * n, log_n) != 0;
    return bad;
}

long rf_bench_rows_oop_double(double *src, double *dst, long n_rows, int log_n, int n_threads,
                              rf_bench_oop_d f)
{
    long bad = 0, n = 1L << log_n;
#pragma omp parallel for schedule(static) num_threads(n_threads) reduction(+:bad) if(n_threads > 1)
    for (long i = 0; i < n_rows; i++)
        bad += f(src + i * n, dst + i * n, log_n) != 0;
    return bad;
}

/* A copy (a memory floor; bench_fwht.py): nbytes from src to dst, the bytes split into n_threads
 * contiguous shares (64-byte aligned) copied by memcpy, one share per OpenMP thread. */
#include <string.h>

void rf_bench_copy(char *dst, const char *src, long nbytes, int n_threads)
{
    long share = ((nbytes + n_threads - 1) / n_threads + 63) & ~63L;
#pragma omp parallel for schedule(static) num_threads(n_threads) if(n_threads > 1)
    for (int t = 0; t < n_threads; t++) {
        long lo = t * share, hi = lo + share < nbytes ? lo + share : nbytes;
        if (lo < hi) memcpy(dst + lo, src + lo, (size_t)(hi - lo));
    }
}

/* The arithmetic bound of bench_fwht.py: the peak rate of independent vector additions on this
 * core, for 256-bit (AVX2) or 512-bit (AVX-512) float vectors: 12 independent chains (more than
 * latency x add pipes on any current x86 core), iters rounds.  Returns the number of float
 * additions done (lanes x 12 x iters) so the caller can divide by its own timing; 0 when the
 * compiler or CPU lacks the width. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
typedef float rf_v8f __attribute__((vector_size(32)));
typedef float rf_v16f __attribute__((vector_size(64)));
#define RF_PEAK_BODY(V, LANES)                                                     \
    V a0 = {0}, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5,   \
      a6 = a0 + 6, a7 = a0 + 7, a8 = a0 + 8, a9 = a0 + 9, a10 = a0 + 10,            \
      a11 = a0 + 11, c = a0 + 1e-7f;                                                \
    for (long i = 0; i < iters; i++) {                                             \
        a0 += c; a1 += c; a2 += c; a3 += c; a4 += c; a5 += c;                      \
        a6 += c; a7 += c; a8 += c; a9 += c; a10 += c; a11 += c;                    \
        /* no code: only keeps the compiler from merging or folding the chains */  \
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4),     \
                         "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9),          \
                         "+x"(a10), "+x"(a11));                                    \
    }                                                                              \
    V s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11)); \
    float t = 0;                                                                   \
    for (int k = 0; k < LANES; k++) t += s[k];                                     \
    *sink = t;                                                                     \
    return (double)LANES * 12.0 * (double)iters;

__attribute__((target("avx2"))) static double rf_peak256(long iters, float *sink)
{
    RF_PEAK_BODY(rf_v8f, 8)
}

__attribute__((target("avx512f"))) static double rf_peak512(long iters, float *sink)
{
    RF_PEAK_BODY(rf_v16f, 16)
}

double rf_bench_add_peak(int width_bits, long iters, float *sink)
{
    __builtin_cpu_init();
    if (width_bits == 512 && __builtin_cpu_supports("avx512f")) return rf_peak512(iters, sink);
    if (width_bits == 256 && __builtin_cpu_supports("avx2")) return rf_peak256(iters, sink);
    return 0.0;
}
#else
double rf_bench_add_peak(int width_bits, long iters, float *sink)
{
    (void)width_bits; (void)iters; (void)sink;
    return 0.0;
}
#endif
