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
"""
from scipy.linalg.cython_blas cimport sgemm, ssyrk

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
