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

/* The memory floor of bench_fwht.py --oocache: copy nbytes from src to dst, the bytes split into
 * n_threads contiguous shares (64-byte aligned) copied by memcpy, one share per OpenMP thread. */
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
