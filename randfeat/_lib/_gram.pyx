"""Compiled pieces of the ridge learners' sufficient statistics (randfeat.linear.RidgeStatistics).

Private: :class:`randfeat.linear.RidgeStatistics` validates and allocates; these only compute.

``syrk_f32_into`` adds one chunk's single-precision product :math:`Z^\\top Z` to the lower triangle
of the float64 Gram, one column panel at a time: per panel one BLAS ``ssyrk`` (its diagonal
block) and one ``sgemm`` (the block below it) into a float32 workspace of ``D x p`` values, then
a float64 add into the Gram's lower trapezoid.  The flops are those of one ``ssyrk`` of the whole
chunk (plus the rounding-free diagonal blocks' upper halves, which are never computed); the
workspace is ``D x p`` instead of ``D x D`` (at D = 4000 and p = 1024: 16 MiB, not 61 MiB), and
only the lower triangle of the Gram is read and written.  The BLAS calls run on the calling
thread with the process's BLAS threads (never inside a parallel region), and their shapes
depend on the chunk's shape and ``p`` only, so the sums are the same bits whatever the thread
counts of randfeat.

``lower_to_upper`` / ``upper_to_lower`` copy one strict triangle of a square float64 matrix
onto the other (blocked, so both sides stream through the cache): the in-place Cholesky solve
keeps the matrix it overwrites in its other triangle, for the eigendecomposition fallback.
"""
import numpy as np

from scipy.linalg.cython_blas cimport sgemm, ssyrk

cdef enum:
    _BLAS_INT_MAX = 2147483647
    _TILE = 64


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


def lower_to_upper(double[::1, :] A):
    """``A[i, j] = A[j, i]`` for every i < j: the strict lower triangle copied onto the upper."""
    cdef Py_ssize_t D = A.shape[0]
    if A.shape[1] != D:
        raise ValueError(f"lower_to_upper: need a square matrix, got ({D}, {A.shape[1]})")
    with nogil:
        _mirror(&A[0, 0] if D else NULL, D, True)


def upper_to_lower(double[::1, :] A):
    """``A[i, j] = A[j, i]`` for every i > j: the strict upper triangle copied onto the lower."""
    cdef Py_ssize_t D = A.shape[0]
    if A.shape[1] != D:
        raise ValueError(f"upper_to_lower: need a square matrix, got ({D}, {A.shape[1]})")
    with nogil:
        _mirror(&A[0, 0] if D else NULL, D, False)


cdef void _mirror(double* a, Py_ssize_t D, bint down_up) noexcept nogil:
    """Tile by tile over the lower triangle's tiles (i >= j block indices): for each strict-lower
    element (r, c), r > c, either a[c, r] = a[r, c] (down_up) or a[r, c] = a[c, r]."""
    cdef Py_ssize_t bi, bj, r, c, r1, c1
    bj = 0
    while bj < D:
        c1 = bj + _TILE if bj + _TILE < D else D
        bi = bj
        while bi < D:
            r1 = bi + _TILE if bi + _TILE < D else D
            for c in range(bj, c1):
                for r in range(bi if bi > c + 1 else c + 1, r1):
                    if down_up:
                        a[c + D * r] = a[r + D * c]
                    else:
                        a[r + D * c] = a[c + D * r]
            bi += _TILE
        bj += _TILE
