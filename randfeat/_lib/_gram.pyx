"""Compiled pieces of the ridge learners' sufficient statistics (randfeat.linear.RidgeStatistics).

Private: :class:`randfeat.linear.RidgeStatistics` validates and allocates; these only compute.

``syrk_f32_into`` adds one chunk's single-precision product :math:`Z^\\top Z` to the lower triangle
of the float64 Gram, one column panel at a time: per panel one BLAS ``ssyrk`` (its diagonal
block) and one ``sgemm`` (the block below it) into a float32 workspace of ``D x p`` values, then
a float64 add into the Gram's lower trapezoid.  The flops are those of one ``ssyrk`` of the whole
chunk (the diagonal blocks' upper halves are never computed); the workspace is ``D x p``
instead of ``D x D`` (at D = 4000 and p = 1024: 16 MiB, not 61 MiB), and only the lower
triangle of the Gram is read and written.  The BLAS calls run on the calling
thread with the process's BLAS threads (never inside a parallel region), and their shapes
depend on the chunk's shape and ``p`` only, so the sums are the same bits whatever the thread
counts of randfeat.

``posv_mixed`` solves :math:`AX = B` for a symmetric positive definite float64 ``A`` (lower
triangle) as LAPACK's ``dsposv`` does: a float32 Cholesky factorisation (about half the time
of the float64 one) and float64 iterative refinement (Langou et al. 2006; Higham, *Accuracy
and Stability of Numerical Algorithms*, ch. 12), until the solution meets LAPACK's float64
test :math:`\lVert b - Ax\rVert_\infty \le \lVert x\rVert_\infty \lVert
A\rVert_\infty \varepsilon_{64} \sqrt{D}` column by column; when the float32
factorisation fails or the refinement stalls it says so and the caller solves in float64.
"""
from libc.float cimport DBL_EPSILON, DBL_MAX, FLT_MAX
from libc.math cimport fabs, sqrt
from scipy.linalg.cython_blas cimport dsymv, sgemm, ssyrk
from scipy.linalg.cython_lapack cimport spotrf, spotrs

import numpy as np

cdef enum:
    _BLAS_INT_MAX = 2147483647


def syrk_f32_into(const float[:, ::1] Z, double[::1, :] G, float[::1, :] ws):
    """``G[lower] += (Zᵀ Z)[lower]`` with single-precision products (float64 adds).

    ``Z`` (n, D) C-contiguous float32, the chunk's rows; ``G`` (D, D) Fortran-ordered float64,
    only its lower triangle (diagonal included) is read and written; ``ws`` (D, p) Fortran-ordered
    float32 workspace, p >= 1 the panel width.  Each entry of the chunk's product is a float32
    sum of the chunk's n products (error at most about n * 6e-8 of the sum of their magnitudes,
    typically sqrt(n) * 6e-8), added once to the float64 entry."""
    cdef Py_ssize_t n = Z.shape[0], D = Z.shape[1], p = ws.shape[1]
    if G.shape[0] != D or G.shape[1] != D or ws.shape[0] != D or p < 1:
        raise ValueError(f"syrk_f32_into: need Z (n, D), G (D, D), ws (D, p >= 1); got Z "
                         f"({n}, {D}), G ({G.shape[0]}, {G.shape[1]}), ws ({ws.shape[0]}, {p})")
    if n > _BLAS_INT_MAX or D > _BLAS_INT_MAX // 2:
        raise ValueError(f"syrk_f32_into: a chunk of {n} x {D} is beyond the BLAS's 32-bit "
                         f"sizes; use fewer rows per chunk")
    if n == 0 or D == 0:
        return
    cdef float* A = <float*>&Z[0, 0]   # Zᵀ as a Fortran D x n matrix, leading dimension D
    cdef float* W = &ws[0, 0]
    cdef double* g = &G[0, 0]
    cdef int k = <int>n, lda = <int>D, ldw = <int>D, pw, rest
    cdef float one = 1.0, zero = 0.0
    cdef char lo = b'L', no = b'N', tr = b'T'
    cdef Py_ssize_t j0, r, c, col
    with nogil:
        j0 = 0
        while j0 < D:
            pw = <int>(p if D - j0 > p else D - j0)
            rest = <int>(D - j0 - pw)
            # diagonal block: ws[0:pw, 0:pw] (lower) = Zᵀ[j0:j0+pw] Z[:, j0:j0+pw]
            ssyrk(&lo, &no, &pw, &k, &one, A + j0, &lda, &zero, W, &ldw)
            if rest > 0:
                # below it: ws[pw:pw+rest, 0:pw] = Zᵀ[j0+pw:] Z[:, j0:j0+pw]
                sgemm(&no, &tr, &rest, &pw, &k, &one, A + j0 + pw, &lda, A + j0, &lda, &zero,
                      W + pw, &ldw)
            for c in range(pw):
                col = j0 + c
                for r in range(c, D - j0):
                    g[(j0 + r) + D * col] += W[r + D * c]
            j0 += pw


def posv_mixed(const double[::1, :] A, double shift, const double[::1, :] B,
               double[::1, :] X, float[::1, :] SA, float[::1, :] SX, double[::1, :] R,
               int max_iter=30):
    """Solve ``(A + shift I) X = B`` (``A`` symmetric, its lower triangle read, never written;
    ``A + shift I`` positive definite) by a float32 Cholesky factorisation and float64
    iterative refinement; returns the number of refinement steps, or -1 when the float32
    factorisation fails (an entry beyond float32's range, or the rounded matrix not positive
    definite in float32) and -2 when the refinement has not converged in ``max_iter`` steps
    or met a NaN (then the caller solves in float64; ``X`` is undefined).

    LAPACK's ``dsposv`` algorithm (Langou et al. 2006; Higham, *Accuracy and Stability of
    Numerical Algorithms*, ch. 12) and its stopping test, column by column (:math:`A` standing
    for ``A + shift I``): :math:`\lVert b - Ax\rVert_\infty \le \lVert x\rVert_\infty
    \lVert A\rVert_\infty \varepsilon_{64}\sqrt{D}`.  The residual by ``dsymv`` (LAPACK's
    ``dsymm``, with one right-hand side, repacks A at each step: 24-33 ms against 4.1-4.5 ms
    for ``dsymv`` at D = 4000 here).

    ``A`` (D, D) Fortran float64; ``B``, ``X``, ``R`` (D, K) Fortran float64; ``SA`` (D, D)
    Fortran float32 (only its lower triangle is written: a lazily zeroed buffer stays half
    non-resident); ``SX`` (D, K) Fortran float32."""
    cdef Py_ssize_t D = A.shape[0], K = B.shape[1]
    if (A.shape[1] != D or B.shape[0] != D or X.shape[0] != D or X.shape[1] != K
            or R.shape[0] != D or R.shape[1] != K or SX.shape[0] != D or SX.shape[1] != K
            or SA.shape[0] != D or SA.shape[1] != D):
        raise ValueError(f"posv_mixed: need A, SA (D, D) and B, X, R, SX (D, K); got A "
                         f"({A.shape[0]}, {A.shape[1]}), SA ({SA.shape[0]}, {SA.shape[1]}), B "
                         f"({B.shape[0]}, {K}), X ({X.shape[0]}, {X.shape[1]}), R "
                         f"({R.shape[0]}, {R.shape[1]}), SX ({SX.shape[0]}, {SX.shape[1]})")
    if D > _BLAS_INT_MAX or K > _BLAS_INT_MAX:
        raise ValueError(f"posv_mixed: D = {D}, K = {K} beyond LAPACK's 32-bit sizes")
    if D == 0 or K == 0:
        return 0
    cdef double[::1] rowsum = np.zeros(D)
    cdef int it
    with nogil:
        it = _posv_mixed_core(<int>D, <int>K, &A[0, 0], shift, &B[0, 0], &X[0, 0], &SA[0, 0],
                              &SX[0, 0], &R[0, 0], &rowsum[0], max_iter)
    return it


cdef int _posv_mixed_core(int n, int nrhs, const double* a, double shift, const double* b,
                          double* x, float* sa, float* sx, double* r, double* rowsum,
                          int max_iter) noexcept nogil:
    """The refinement loop of ``posv_mixed`` (every matrix Fortran-ordered, leading dimension
    n); ``rowsum`` n zeros."""
    cdef Py_ssize_t D = n, K = nrhs, i, j, k
    cdef int one_i = 1, info = 0, it = 0, done
    cdef char lo = b'L'
    cdef double anrm = 0.0, cte, v, rmax, xmax, one = 1.0, mone = -1.0
    # float32 copy of the lower triangle; the infinity norm of A (row sums of |a|)
    for j in range(D):
        for i in range(j, D):
            v = a[i + D * j] + shift if i == j else a[i + D * j]
            if not (fabs(v) <= FLT_MAX):
                return -1
            sa[i + D * j] = <float>v
            rowsum[i] += fabs(v)
            if i != j:
                rowsum[j] += fabs(v)
    for i in range(D):
        if rowsum[i] > anrm:
            anrm = rowsum[i]
    cte = anrm * DBL_EPSILON * sqrt(<double>D)
    spotrf(&lo, &n, sa, &n, &info)
    if info != 0:
        return -1
    for i in range(D * K):
        sx[i] = <float>b[i]
    while True:
        # the (first or next) correction: solve (L Lᵀ) s = r in float32
        spotrs(&lo, &n, &nrhs, sa, &n, sx, &n, &info)
        for i in range(D * K):
            if it == 0:
                x[i] = sx[i]
            else:
                x[i] += sx[i]
        # r = b - A x, and LAPACK's test of every column
        done = 1
        for k in range(K):
            for i in range(D):
                r[i + D * k] = b[i + D * k]
            dsymv(&lo, &n, &mone, <double*>a, &n, x + D * k, &one_i, &one, r + D * k, &one_i)
            if shift != 0.0:
                for i in range(D):
                    r[i + D * k] -= shift * x[i + D * k]
            rmax = 0.0
            xmax = 0.0
            for i in range(D):
                v = fabs(r[i + D * k]) + fabs(x[i + D * k])
                if v != v or v > DBL_MAX:   # a NaN or an overflow: give up (float64 solve)
                    return -2
                if fabs(r[i + D * k]) > rmax:
                    rmax = fabs(r[i + D * k])
                if fabs(x[i + D * k]) > xmax:
                    xmax = fabs(x[i + D * k])
            if not (rmax <= xmax * cte):
                done = 0
        if done:
            return it
        it += 1
        if it > max_iter:
            return -2
        for i in range(D * K):
            sx[i] = <float>r[i]
