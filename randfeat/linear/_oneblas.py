r"""One BLAS for the ridge learners: every dense product of a fit and of a prediction through
SciPy's BLAS, the library that randfeat's compiled kernels already call.

Why
---
A NumPy 2.x wheel and a SciPy wheel each bundle their own OpenBLAS (NumPy's
``scipy_openblas64_``, SciPy's ``scipy_openblas``; ``randfeat.show_config()`` lists both), and
each library runs its own pool of worker threads.  After a call an OpenBLAS worker keeps
spinning for a while (about 0.1 s) before it sleeps.  A fit that alternates NumPy's BLAS (a
``@`` of the chunk's features with its targets) and SciPy's (the chunk's ``syrk``) therefore
keeps two pools busy: with two BLAS threads on two cores, four threads compete, and the
``syrk`` that follows a NumPy product runs at about half speed (measured on a Zen 1 host: a
Gram chunk 56 ms quiet, 95-102 ms right after a NumPy BLAS call; two threads made the whole fit
slower than one).  The learners' Gram, solves, feature projections (randfeat's RFF kernels
call ``scipy.linalg.cython_blas``) and the compiled pieces of :mod:`randfeat._lib._gram` were
SciPy's already; this module routes the remaining products, the NumPy ``@`` of the fit,
validation, prediction and solvers, to the same library, so a fit wakes one pool only.  The
BLAS thread count stays the user's (read, never changed; set it with
:func:`threadpoolctl.threadpool_limits`).

Same bits
---------
:func:`matmul` makes the call that NumPy's ``matmul`` makes (NumPy 2.x,
``numpy/_core/src/umath/matmul.c.src``) -- ``gemm`` for a matrix product, ``gemv`` for a
matrix-vector one, ``dot`` for a 1 x 1 result, the same operand order, transposition flags and
result layout, and ``syrk`` for a matrix times its own transpose -- but in SciPy's library.
With the same BLAS kernels in both libraries (the two OpenBLAS builds of a NumPy and a SciPy
wheel of the same period) the results are the bits NumPy's ``@`` gives;
``tests/test_linear_blas.py`` checks that on this machine.  Builds of different releases may
split a threaded product differently: with NumPy 2.4.6 (OpenBLAS 0.3.31) and SciPy 1.17.1
(OpenBLAS 0.3.30) a float64 (200 x 300) @ (300 x 300) ``gemm`` at 2 BLAS threads differs in
its last bits (the same bits at 1 thread, and for the other shapes tried), which moved the
leave-one-out curve of a D > n primal fit by ~1e-15 relative.  The products
NumPy computes without BLAS (an inner dimension of 1, a zero-sized or non-float operand) are
computed by NumPy here too.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg.blas as _sblas
import scipy.sparse as sp

__all__ = ["dot", "matmul"]

#: the largest dimension SciPy's (32-bit integer) BLAS takes
_BLAS_MAX = 2 ** 31 - 1

_GEMM = {np.dtype(np.float64): _sblas.dgemm, np.dtype(np.float32): _sblas.sgemm}
_GEMV = {np.dtype(np.float64): _sblas.dgemv, np.dtype(np.float32): _sblas.sgemv}
_DOT = {np.dtype(np.float64): _sblas.ddot, np.dtype(np.float32): _sblas.sdot}
_SYRK = {np.dtype(np.float64): _sblas.dsyrk, np.dtype(np.float32): _sblas.ssyrk}


def _blasable(A):
    """'C' when NumPy's ``is_blasable2d`` accepts the 2-D ``A`` row by row (unit column stride,
    row stride a multiple of the item size and at least a row), 'F' when it accepts its
    transpose, None otherwise (C tested first, as NumPy does)."""
    sz = A.itemsize
    (r, c), (s0, s1) = A.shape, A.strides

    def ok(s_major, s_minor, n_minor):
        return (s_minor == sz and s_major % sz == 0 and n_minor <= s_major // sz <= _BLAS_MAX)

    if ok(s0, s1, c):
        return "C"
    if ok(s1, s0, r):
        return "F"
    return None


def _packed(A, layout):
    """A contiguous in ``layout`` (a copy only of a strided view; the values, and so the BLAS
    arithmetic, are the same: the leading dimension changes no sum)."""
    return np.ascontiguousarray(A) if layout == "C" else np.asfortranarray(A)


def _gemv(A, layout, x):
    """``A @ x`` (A (m, n), x (n,)) as NumPy's ``gemv``: a C-ordered A as its F-ordered
    transpose with ``trans``, an F-ordered A as it is."""
    f = _GEMV[A.dtype]
    A = _packed(A, layout)
    x = np.ascontiguousarray(x)
    if layout == "C":
        return f(1.0, A.T, x, trans=1)
    return f(1.0, A, x, trans=0)


def _is_transpose_pair(A, B, la, lb):
    """NumPy's test for ``A @ A.T`` (``syrk``): the same buffer, ``B``'s strides ``A``'s
    swapped, and the two operands in opposite layouts."""
    return (A.__array_interface__["data"][0] == B.__array_interface__["data"][0]
            and A.shape[0] == B.shape[1] and A.strides == B.strides[::-1] and la != lb)


def _syrk(A, la):
    """``A @ A.T`` as NumPy computes it: ``cblas_?syrk(RowMajor, Upper, tA)`` (tA = NoTrans
    for a C-ordered A), which OpenBLAS runs as the column-major lower ``syrk`` (``'L', 'T'``
    on the F-ordered ``A.T``, ``'L', 'N'`` on an F-ordered A), then the upper triangle of the
    C-ordered result copied to the lower one (NumPy: exactly symmetric)."""
    f = _SYRK[A.dtype]
    A = _packed(A, la)
    C = f(1.0, A.T, trans=1, lower=1) if la == "C" else f(1.0, A, trans=0, lower=1)
    out = C.T                                      # C order, upper triangle filled
    np.copyto(out, out.T, where=np.tri(out.shape[0], k=-1, dtype=bool))
    return out


def matmul(A, B):
    """``A @ B`` for dense A (m, n) or (n,) and B (n, p) or (n,), float32 or float64, by SciPy's
    BLAS in the calls NumPy's ``matmul`` would make (module docstring); the result has NumPy's
    shape, dtype and (C) order.  What NumPy computes without BLAS (an inner dimension of 1, an
    empty or non-float operand, operands it cannot pass to BLAS) NumPy computes here too (no
    BLAS, no pool); sparse operands are left to SciPy (``A @ B``: no BLAS either)."""
    if sp.issparse(A) or sp.issparse(B):
        return A @ B
    A, B = np.asarray(A), np.asarray(B)
    dt = np.result_type(A, B)
    if dt not in _GEMM or A.ndim not in (1, 2) or B.ndim not in (1, 2):
        return np.matmul(A, B)
    a_vec, b_vec = A.ndim == 1, B.ndim == 1
    A2 = (A.reshape(1, -1) if a_vec else A).astype(dt, copy=False)
    B2 = (B.reshape(-1, 1) if b_vec else B).astype(dt, copy=False)
    m, n = A2.shape
    n2, p = B2.shape
    if n != n2:
        raise ValueError(f"matmul: shapes {A.shape} and {B.shape} are not aligned")
    if 0 in (m, n, p) or max(m, n, p) > _BLAS_MAX or n == 1:
        return np.matmul(A, B)            # NumPy's own loops (or a one-term dot): no pool
    la, lb = _blasable(A2), _blasable(B2)
    unit_row = A2.strides[1] == dt.itemsize       # A's row as a BLAS vector (stride 1)
    unit_col = B2.strides[0] == dt.itemsize
    if m == 1 and p == 1:                         # a row times a column: dot
        out = np.empty((1, 1), dtype=dt)
        out[0, 0] = _DOT[dt](np.ascontiguousarray(A2[0]), np.ascontiguousarray(B2[:, 0]))
    elif m == 1 and lb is not None and unit_row:  # vector @ matrix: gemv on Bᵀ
        out = _gemv(B2.T, "F" if lb == "C" else "C", A2[0]).reshape(1, p)
    elif p == 1 and la is not None and unit_col:  # matrix @ vector
        out = _gemv(A2, la, B2[:, 0]).reshape(m, 1)
    elif m == 1 or p == 1 or la is None or lb is None:
        return np.matmul(A, B)                    # NumPy's own loops: no pool
    elif _is_transpose_pair(A2, B2, la, lb):
        out = _syrk(A2, la)
    else:
        # NumPy: cblas_?gemm(RowMajor, tA, tB, m, p, n, A, B), which OpenBLAS runs as the
        # column-major Cᵀ = op(B) op(A), B first
        A2, B2 = _packed(A2, la), _packed(B2, lb)
        a_op, ta = (B2.T, 0) if lb == "C" else (B2, 1)
        b_op, tb = (A2.T, 0) if la == "C" else (A2, 1)
        out = _GEMM[dt](1.0, a_op, b_op, trans_a=ta, trans_b=tb).T   # (m, p), C order
    if a_vec and b_vec:
        return out.reshape(())[()]
    if a_vec:
        return out.reshape(p)
    if b_vec:
        return out.reshape(m)
    return out


def dot(x, y):
    """``x @ y`` of two 1-D float arrays by SciPy's BLAS ``dot`` (as NumPy's)."""
    return matmul(x, y)
