r"""Ridge solvers: plain functions with one signature, and the one table that names them.

Every solver solves the centred, penalised least-squares problem of :mod:`randfeat.linear`,

.. math::

    (Z_c^\top S Z_c + \lambda I)\, W = Z_c^\top S\, (Y - \bar y), \qquad
    b = \bar y - \bar z^\top W ,

for one penalty :math:`\lambda` on the *summed* squared errors (scikit-learn's ``Ridge`` scale:
the learners convert their ``alphas`` before calling), and has the signature

``solve_<name>(problem, penalty, options, state) -> Solution``

* ``problem`` -- what the solver reads, named by its table entry's ``data``:
  ``"statistics"``: a :class:`~randfeat.linear.RidgeStatistics` (streamed sufficient
  statistics; the fit never holds the feature matrix); ``"design"``: a :class:`Design`, the
  feature matrix with its targets and weights (dense or CSR, float32 or float64);
* ``penalty`` -- :math:`\lambda \ge 0` (float);
* ``options`` -- :class:`SolveOptions` (intercept, tolerances, random state, ...);
* ``state`` -- a dict that the caller keeps for one ``problem`` across the penalties of a path
  and that only the solver reads and writes: a warm start, a preconditioner, a factorisation
  or eigendecomposition reused by the next penalty (a fresh dict for an independent solve);

and returns a :class:`Solution` (coefficients (D, K), intercept (K,), iterations per target,
the method actually used).  The learners choose a solver by name with :func:`get_solver` (an
unknown name raises, naming the valid ones) and :func:`resolve_solver` (``"auto"``); their
``solver`` parameter, the dask path's refusal of design solvers and the docs read
:data:`SOLVERS`.  Adding a solver is: its function here, its row in :data:`SOLVERS`, its tests
(``tests/test_linear_solvers.py``) and a line in the learners' ``solver`` documentation.

The pattern is scikit-learn's ``sklearn/linear_model/_ridge.py`` (``_solve_cholesky``,
``_solve_sparse_cg``, ``_solve_lsqr``, ... and one dispatch in ``_ridge_regression``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import scipy.linalg
import scipy.linalg.blas as _blas
import scipy.linalg.lapack as _lapack
import scipy.sparse.linalg as spla

from randfeat._lib import _gram as _gramlib
from randfeat._validation import check_random_state
from randfeat.linear import _oneblas
from randfeat.linear._memory import lazy_zeros

__all__ = ["SOLVERS", "Design", "GramConsumed", "Solution", "SolveOptions", "SolverSpec",
           "dual_eigen_state", "dual_kernel", "eigen_state", "get_solver", "pseudo_inverse",
           "resolve_solver"]


class GramConsumed(ArithmeticError):
    """The in-place final Cholesky factorisation (``SolveOptions(overwrite=True)``) failed: the
    statistics are consumed and must be accumulated again (the learners do)."""


class SolveOptions(NamedTuple):
    """What a solver needs besides the problem and the penalty."""

    #: fit an unpenalised intercept (centred problem); False: b = 0
    fit_intercept: bool = True
    #: LSQR's atol = btol, CG's and PCG's relative residual
    tol: float = 1e-8
    #: iteration cap of the iterative solvers (None: their default)
    max_iter: int | None = None
    #: seed of PCG's random test matrix
    random_state: Any = None
    #: "statistics" solvers: factorise the Gram itself (the statistics are consumed)
    overwrite: bool = False
    #: caller's name for error messages
    who: str = "RidgeStatistics.solve"


class Solution(NamedTuple):
    """One penalty's solution: ``coef`` (D, K), ``intercept`` (K,), ``n_iter`` (K,) and the
    ``method`` actually used (a failed Cholesky factorisation falls back to "eigh")."""

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: np.ndarray
    method: str


@dataclass(frozen=True)
class Design:
    """A feature matrix ``Z`` (n, D) dense or CSR, targets ``Y`` (n, K) float64 and sample
    weights ``w`` (n,) float64 or None: the problem of the "design" solvers."""

    Z: Any
    Y: np.ndarray
    w: np.ndarray | None = None

    def weight_sum(self):
        """:math:`\\sum_i s_i` (the row count without weights): the "mean" scale's factor."""
        return float(self.Z.shape[0]) if self.w is None else float(self.w.sum())


# --------------------------------------------------------------------------- statistics solvers
def _posv_mixed(A, alpha, c, out, SA=None):
    """Solve ``(A + alpha I) x = c`` (A (D, D) Fortran float64, symmetric, its lower triangle
    read and never written; c (D, K)) into ``out`` (D, K) by a float32 Cholesky
    factorisation refined to float64 accuracy (:func:`randfeat._lib._gram.posv_mixed`, the
    algorithm and stopping test of LAPACK's ``dsposv``).  Returns the number of refinement
    steps, or a negative number when the float32 factorisation failed or the refinement
    stalled (``out`` then untouched: solve in float64).  The float32 factor is a lazily zeroed
    D x D buffer of which only the lower triangle becomes resident (D^2 / 2 float32 values
    beside A); pass one as ``SA`` to reuse it over several alphas."""
    D, K = c.shape
    B = np.asfortranarray(c, dtype=np.float64)
    X = np.empty((D, K), order="F")
    R = np.empty((D, K), order="F")
    SX = np.empty((D, K), dtype=np.float32, order="F")
    if SA is None:
        SA = lazy_zeros((D, D), np.float32)
    it = _gramlib.posv_mixed(A, float(alpha), B, X, SA, SX, R)
    if it >= 0:
        out[...] = X
    return int(it)


def _moments(stats, options, state):
    """``(c, mz, my)``, once per ``state``: the weighted means of z and y (zeros without an
    intercept) and :math:`c = C - S\\bar z\\bar y^\\top`."""
    if "c" not in state:
        if stats._gram is None or stats.weight_sum_ <= 0:
            raise ValueError(f"{options.who}: no samples (or only zero weights) were added; "
                             f"call partial_fit first")
        mz, my = stats._means(options.fit_intercept)
        c = stats.zty_.copy()
        if options.fit_intercept:
            c -= stats.weight_sum_ * np.outer(mz, my)
        state.update(c=c, mz=mz, my=my)
    return state["c"], state["mz"], state["my"]


def _matrix(stats, options, state):
    """The lower triangle of :math:`A = G - S\\bar z\\bar z^\\top` by one rank-1 update
    (``syr``) on a copy of the Gram, or on the Gram itself with ``options.overwrite`` (the
    statistics are then consumed); kept in ``state`` until an eigendecomposition overwrites it
    (then made again, the same bits, if another penalty needs it)."""
    if state.get("A") is None:
        _, mz, _ = _moments(stats, options, state)
        A = stats._consume_gram() if options.overwrite else stats._gram.copy(order="F")
        if options.fit_intercept:
            A = _blas.dsyr(-stats.weight_sum_, mz, lower=1, a=A, overwrite_a=1)
        state["A"] = A
    return state["A"]


def _intercept(mz, my, W):
    return my[None, :] - np.einsum("d,ldk->lk", mz, W[None])


def eigen_state(stats, options, state):
    """``(ev, Q, Qᵀc)``, once per ``state``: the eigendecomposition :math:`A = Q\\Lambda
    Q^\\top` of the centred statistics (``syevr`` via :func:`scipy.linalg.eigh`, lower triangle,
    in A itself -- with ``options.overwrite``, in the Gram of the statistics, which is then
    consumed), the eigenvalues clipped at 0, and the rotated right-hand side :math:`Q^\\top c`.
    The solver "eigh" and the selection of alpha (:mod:`randfeat.linear._selection`) share
    it."""
    if "eig" not in state:
        c, _, _ = _moments(stats, options, state)
        state.pop("SA", None)   # the float32 factor is freed before the eigendecomposition
        ev, Q = scipy.linalg.eigh(_matrix(stats, options, state), lower=True,
                                  check_finite=False, overwrite_a=True)
        state["A"] = None
        state["eig"] = (np.clip(ev, 0.0, None), Q, _oneblas.matmul(Q.T, c))
    return state["eig"]


def pseudo_inverse(ev, penalty):
    """:math:`1/(\\lambda_j + \\lambda)`, or for penalty 0 the pseudo-inverse of the
    eigenvalues (those below ``max(ev) * len(ev) * eps`` are taken as 0: the minimum-norm
    least-squares solution)."""
    if penalty > 0:
        return 1.0 / (ev + penalty)
    cut = ev.max(initial=0.0) * len(ev) * np.finfo(np.float64).eps
    return np.divide(1.0, ev, out=np.zeros_like(ev), where=ev > cut)


def _eigen_solution(stats, penalty, options, state):
    """The eigen-solution :math:`Q(\\Lambda + \\lambda)^{-1}Q^\\top c` (eigenvalues clipped at
    0; :func:`eigen_state`, made once per ``state``).  Penalty 0: the minimum-norm
    least-squares solution (pseudo-inverse of A)."""
    ev, Q, Qc = eigen_state(stats, options, state)
    if penalty > 0:
        return _oneblas.matmul(Q, Qc / (ev + penalty)[:, None])
    return _oneblas.matmul(Q, Qc * pseudo_inverse(ev, penalty)[:, None])


def solve_cholesky(problem, penalty, options, state):
    r"""Cholesky factorisation of :math:`A + \lambda I` (LAPACK ``potrf`` / ``potrs`` on a copy
    of the lower triangle of A; about 15 times cheaper than an eigendecomposition), falling back
    to the eigen-solution when it fails (:math:`\lambda` below the round-off of A; with
    :math:`\lambda = 0` the minimum-norm least-squares solution).

    Statistics with ``gram_dtype="float32"`` first try a float32 factorisation of a float32
    copy of :math:`A + \lambda I` refined to float64 accuracy (about twice as fast;
    :func:`_posv_mixed`), which reads A and never writes it; one float32 buffer serves every
    penalty of a path (``state``).  With ``options.overwrite`` the factorisation is made in A
    itself, the Gram of the statistics (no D x D copy; LAPACK touches only the lower triangle,
    so the upper one of a large Gram is never resident; the factor is left in
    ``state["factor"]`` for the posterior of :mod:`randfeat.linear._posterior`): if it fails,
    A is lost and
    :class:`GramConsumed` is raised (the caller, who has the rows, accumulates them again and
    solves without ``overwrite``).  Peak memory: A and one factor (two D x D float64; with
    float32 statistics A and the float32 lower triangle), one D x D float64 with
    ``overwrite``.
    """
    stats = problem
    c, mz, my = _moments(stats, options, state)
    A = _matrix(stats, options, state)
    D, K = c.shape
    ones = np.ones(K, dtype=int)
    if stats.gram_dtype == "float32":
        if state.get("SA") is None:
            state["SA"] = lazy_zeros((D, D), np.float32)
        W = np.empty((D, K))
        if _posv_mixed(A, penalty, c, W, state["SA"]) >= 0:  # A not written
            return Solution(W, _intercept(mz, my, W)[0], ones, "cholesky")
    M = A if options.overwrite else A.copy(order="F")
    M.flat[::D + 1] += penalty
    M, info = _lapack.dpotrf(M, lower=1, clean=0, overwrite_a=1)
    if info == 0:
        W, info = _lapack.dpotrs(M, c, lower=1)
        if info == 0:
            W = np.ascontiguousarray(W)   # the intercept's einsum depends on the layout
            if options.overwrite:
                state["factor"] = M       # the in-place factor, kept for a posterior
            return Solution(W, _intercept(mz, my, W)[0], ones, "cholesky")
    if options.overwrite:
        raise GramConsumed(f"{options.who}: the in-place Cholesky factorisation failed "
                           f"(A + alpha I is not numerically positive definite)")
    del M
    W = _eigen_solution(stats, penalty, options, state)
    return Solution(W, _intercept(mz, my, W)[0], ones, "eigh")


def solve_eigh(problem, penalty, options, state):
    r"""Eigendecomposition :math:`A = Q\Lambda Q^\top` (eigenvalues clipped at 0), made once
    per ``state`` for a whole path: :math:`W = Q(\Lambda + \lambda)^{-1}Q^\top c`; with
    :math:`\lambda = 0` the minimum-norm least-squares solution.  Cheaper than Cholesky from
    about 15 penalties on."""
    stats = problem
    c, mz, my = _moments(stats, options, state)
    W = _eigen_solution(stats, penalty, options, state)
    return Solution(W, _intercept(mz, my, W)[0], np.ones(c.shape[1], dtype=int), "eigh")


# --------------------------------------------------------------------------- design solvers
def _design_centre(design, options, state):
    """``(mz, my, rw)`` of a design, once per ``state``: the (weighted) means of its columns and
    targets (zeros without an intercept) and the square roots of the weights (None)."""
    if "centre" not in state:
        Z, Y, w = design.Z, design.Y, design.w
        D = Z.shape[1]
        fi = options.fit_intercept
        if w is None:
            mz = (np.asarray(Z.mean(axis=0), dtype=np.float64).ravel() if fi else np.zeros(D))
            my = Y.mean(axis=0) if fi else np.zeros(Y.shape[1])
            rw = None
        else:
            sw = float(w.sum())
            # float32 features (solver="pcg"): weights in float32 too, no float64 copy of Z
            wz = w.astype(np.float32) if Z.dtype == np.float32 else w
            mz = (np.asarray(_oneblas.matmul(Z.T, wz), dtype=np.float64).ravel() / sw if fi
                  else np.zeros(D))
            my = _oneblas.matmul(w, Y) / sw if fi else np.zeros(Y.shape[1])
            rw = np.sqrt(w)
        state["centre"] = (mz, my, rw)
    return state["centre"]


def _centred_operator(design, mz, rw):
    """The centred (and √w-scaled) design as a :class:`scipy.sparse.linalg.LinearOperator`
    (centring never densifies a sparse Z)."""
    Z = design.Z
    if rw is None:
        def mv(v):
            v = np.ravel(v)
            return _oneblas.matmul(Z, v) - _oneblas.dot(mz, v)

        def rmv(u):
            u = np.ravel(u)
            return np.asarray(_oneblas.matmul(Z.T, u)).ravel() - mz * u.sum()
    else:  # rows scaled by sqrt(w): the weighted least-squares problem
        def mv(v):
            v = np.ravel(v)
            return rw * (_oneblas.matmul(Z, v) - _oneblas.dot(mz, v))

        def rmv(u):
            u = rw * np.ravel(u)
            return np.asarray(_oneblas.matmul(Z.T, u)).ravel() - mz * u.sum()
    return mv, rmv, spla.LinearOperator(Z.shape, matvec=mv, rmatvec=rmv, dtype=np.float64)


def _column_targets(design, my, rw, k):
    y = design.Y[:, k] - my[k]
    return y if rw is None else rw * y


def solve_lsqr(problem, penalty, options, state):
    r"""Damped LSQR (``damp`` :math:`= \sqrt\lambda`) on the centred design, target by target
    (no warm start: with ``x0`` SciPy's LSQR damps the correction :math:`x - x_0`, not x)."""
    design = problem
    mz, my, rw = _design_centre(design, options, state)
    _, _, op = _centred_operator(design, mz, rw)
    D, K = design.Z.shape[1], design.Y.shape[1]
    W = np.zeros((D, K))
    iters = np.zeros(K, dtype=int)
    for k in range(K):
        res = spla.lsqr(op, _column_targets(design, my, rw, k), damp=np.sqrt(penalty),
                        atol=options.tol, btol=options.tol, iter_lim=options.max_iter)
        W[:, k], iters[k] = res[0], int(res[2])
    return Solution(W, my - _oneblas.matmul(mz, W), iters, "lsqr")


def solve_cg(problem, penalty, options, state):
    r"""Conjugate gradients on the normal equations :math:`(Z_c^\top S Z_c + \lambda I) w =
    Z_c^\top S y`, target by target, to relative residual ``tol``; warm-started from the
    previous penalty's solution of the same ``state`` (a path runs from the largest penalty
    down)."""
    design = problem
    mz, my, rw = _design_centre(design, options, state)
    mv, rmv, _ = _centred_operator(design, mz, rw)
    D, K = design.Z.shape[1], design.Y.shape[1]
    x0 = state.get("x0")
    W = np.zeros((D, K))
    iters = np.zeros(K, dtype=int)
    normal = spla.LinearOperator((D, D), matvec=lambda v: rmv(mv(v)) + penalty * np.ravel(v),
                                 dtype=np.float64)
    for k in range(K):
        counter = []
        W[:, k], info = spla.cg(normal, rmv(_column_targets(design, my, rw, k)),
                                x0=None if x0 is None else x0[:, k], rtol=options.tol,
                                atol=0.0, maxiter=options.max_iter,
                                callback=lambda _x, counter=counter: counter.append(1))
        iters[k] = len(counter)
        if info > 0:
            warnings.warn(f"CG did not converge in {info} iterations; raise max_iter or tol",
                          RuntimeWarning, stacklevel=5)
    state["x0"] = W
    return Solution(W, my - _oneblas.matmul(mz, W), iters, "cg")


#: rank of solver="pcg"'s Nyström preconditioner (at most D)
NYSTROM_RANK = 100


def _nystrom(gram, D, r, rng, eps):
    """Randomized Nyström approximation ``U diag(lam) Uᵀ`` of rank r of the PSD D x D operator
    ``gram`` (V (D, k) -> A V), by Frangella, Tropp & Udell (2023, Alg. 2.1): a Gaussian test
    matrix Ω orthonormalised, Y = A Ω, a shift ν = √D eps ‖Y‖_F for stability, Y_ν = Y + νΩ,
    C = chol(Ωᵀ Y_ν), B = Y_ν C⁻ᵀ, B = U Σ Vᵀ, lam = Σ² - ν, of which only the positive ones
    are kept (so the preconditioner is finite for any penalty); decreasing order.  ``eps``:
    the rounding unit of A's products.  An empty approximation (no preconditioning) if the
    Cholesky factorisation fails."""
    if r <= 0:
        return np.zeros((D, 0)), np.zeros(0)
    # this D x r sketch's factorisations and its r x r product stay NumPy's (its LAPACK, its BLAS
    # pool, once per path): SciPy's OpenBLAS build gives other bits for some of them, and the
    # preconditioner's bits decide the iterations'; every product with Z is SciPy's BLAS
    Om, _ = np.linalg.qr(rng.standard_normal((D, r)))
    Y = gram(Om)
    y = Y.ravel(order="K")
    nu = np.sqrt(D) * eps * np.sqrt(_oneblas.dot(y, y))
    Y += nu * Om
    try:
        C = np.linalg.cholesky(Om.T @ Y)
    except np.linalg.LinAlgError:
        return np.zeros((D, 0)), np.zeros(0)
    B = scipy.linalg.solve_triangular(C, Y.T, lower=True, check_finite=False).T
    U, S, _ = np.linalg.svd(B, full_matrices=False)
    lam = S ** 2 - nu
    keep = lam > 0   # directions below the shift carry no information (and alpha may be 0)
    return U[:, keep], lam[keep]


def solve_pcg(problem, penalty, options, state):
    r"""Preconditioned conjugate gradients on the normal equations
    :math:`(Z_c^\top S Z_c + \lambda I) W = Z_c^\top S (Y - \bar y)`, every target at once.

    The preconditioner is a randomized Nyström approximation
    :math:`\hat A = U \Lambda U^\top` of rank ``r = min(D, NYSTROM_RANK)`` of
    :math:`A = Z_c^\top S Z_c` (Frangella, Tropp & Udell 2023, Alg. 2.1 and eq. 5.3), its test
    matrix drawn from ``options.random_state``:
    :math:`P^{-1} = (\lambda_r + \lambda) U(\Lambda + \lambda I)^{-1}U^\top + (I -
    UU^\top)`, which leaves :math:`P^{-1}(A + \lambda I)` with condition at most about
    :math:`(\lambda_{r+1}(A) + \lambda) / \lambda` (against :math:`(\lambda_1 +
    \lambda) / \lambda` without it).  The approximation does not depend on the penalty: it is
    kept in ``state`` for the whole path, as is the warm start.  Products with ``Z`` are in
    ``Z``'s precision (float32 features: single-precision ``gemm``), the recurrences in
    float64; stops when every column's residual is at most ``tol`` times its right-hand side's
    norm."""
    design = problem
    mz, my, _ = _design_centre(design, options, state)
    Z, Y, w = design.Z, design.Y, design.w
    pen = penalty
    n, D = Z.shape
    K = Y.shape[1]
    dt = np.float32 if Z.dtype == np.float32 else np.float64
    mzd = mz.astype(dt)
    wd = None if w is None else w.astype(dt)

    def gram(V):  # A V = Zcᵀ S Zc V, float64 (D, k) in and out
        Vd = np.ascontiguousarray(V, dtype=dt)
        U = np.asarray(_oneblas.matmul(Z, Vd))
        U -= _oneblas.matmul(mzd, Vd)
        if wd is not None:
            U *= wd[:, None]
        out = np.asarray(_oneblas.matmul(Z.T, U), dtype=np.float64)
        out -= np.outer(mz, U.sum(axis=0, dtype=np.float64))
        return out

    Yc = Y - my
    if w is not None:
        Yc = Yc * w[:, None]
    C = (np.asarray(_oneblas.matmul(Z.T, Yc.astype(dt)), dtype=np.float64)
         - np.outer(mz, Yc.sum(axis=0)))
    if "nystrom" not in state:
        state["nystrom"] = _nystrom(gram, D, min(D, NYSTROM_RANK),
                                    check_random_state(options.random_state), np.finfo(dt).eps)
    U, lam = state["nystrom"]
    lr = lam[-1] if lam.size else 0.0

    def prec(R):
        UR = _oneblas.matmul(U.T, R)
        return (_oneblas.matmul(U, ((lr + pen) / (lam + pen))[:, None] * UR)
                + (R - _oneblas.matmul(U, UR)))

    x0 = state.get("x0")
    X = np.zeros((D, K)) if x0 is None else np.array(x0, dtype=np.float64)
    cn = np.linalg.norm(C, axis=0)
    X[:, cn == 0] = 0.0   # a zero right-hand side (e.g. a constant target): w = 0
    R = C - (gram(X) + pen * X) if x0 is not None else C.copy()
    todo = np.linalg.norm(R, axis=0) > options.tol * cn
    iters = np.zeros(K, dtype=int)
    Zr = prec(R)
    P = Zr.copy()
    rz = np.einsum("ij,ij->j", R, Zr)
    cap = options.max_iter if options.max_iter is not None else 10 * D
    while todo.any() and iters.max() < cap:
        cols = np.flatnonzero(todo)
        AP = gram(P[:, cols]) + pen * P[:, cols]
        a = rz[cols] / np.einsum("ij,ij->j", P[:, cols], AP)
        X[:, cols] += a * P[:, cols]
        R[:, cols] -= a * AP
        iters[cols] += 1
        todo[cols] = np.linalg.norm(R[:, cols], axis=0) > options.tol * cn[cols]
        cols = np.flatnonzero(todo)
        if cols.size:
            Zr = prec(R[:, cols])
            rz2 = np.einsum("ij,ij->j", R[:, cols], Zr)
            P[:, cols] = Zr + (rz2 / rz[cols]) * P[:, cols]
            rz[cols] = rz2
    if todo.any():
        warnings.warn(f"PCG did not converge in {cap} iterations; raise max_iter or tol",
                      RuntimeWarning, stacklevel=5)
    state["x0"] = X
    return Solution(X, my - _oneblas.matmul(mz, X), iters, "pcg")


# --------------------------------------------------------------------------- the dual
def dual_kernel(design, options, state):
    r"""``(K, Yt, rw)``, once per ``state``: the centred, weighted kernel of the rows
    :math:`\tilde K = S^{1/2} Z_c Z_c^\top S^{1/2}` (n x n float64, lower triangle and upper
    triangle both filled), the centred weighted targets :math:`S^{1/2}(Y - \bar y)` and
    :math:`\sqrt{s}` (None without weights).  Refused before it is allocated when two n x n
    arrays cannot fit in memory."""
    if "dual" not in state:
        from randfeat._validation import check_allocation

        mz, my, rw = _design_centre(design, options, state)
        Z = design.Z
        n = Z.shape[0]
        check_allocation(16 * n * n, f"the dual kernel ({n} x {n} float64) and its factor",
                         f"n_samples={n}", func=options.who,
                         fix="use a primal solver ('cholesky', 'eigh', 'lsqr', 'pcg') or fewer "
                             "rows")
        if hasattr(Z, "tocsr"):                       # sparse rows
            Z = Z.tocsr().astype(np.float64, copy=False)
            K = np.asarray((Z @ Z.T).todense())
            v = np.asarray(Z @ mz).ravel()
        else:
            Z = np.asarray(Z, dtype=np.float64)
            K = _oneblas.matmul(Z, Z.T)      # syrk, as NumPy's Z @ Z.T: exactly symmetric
            v = _oneblas.matmul(Z, mz)
        if options.fit_intercept:
            K -= v[:, None]
            K -= v[None, :]
            K += float(_oneblas.dot(mz, mz))
        np.add(K, K.T, out=K)    # exactly symmetric (NumPy buffers the overlap)
        K *= 0.5
        Yt = design.Y - my
        if rw is not None:
            K *= rw[:, None]
            K *= rw[None, :]
            Yt = Yt * rw[:, None]
        state["dual"] = (K, Yt, rw)
    return state["dual"]


def dual_eigen_state(design, options, state):
    """``(ev, V, VᵀYt)`` of the dual kernel (:func:`dual_kernel`), once per ``state``; the
    eigenvalues clipped at 0."""
    if "dual_eig" not in state:
        K, Yt, _ = dual_kernel(design, options, state)
        ev, V = scipy.linalg.eigh(K, lower=True, check_finite=False)
        state["dual_eig"] = (np.clip(ev, 0.0, None), V, _oneblas.matmul(V.T, Yt))
    return state["dual_eig"]


def dual_coef(design, beta, rw, mz):
    r""":math:`W = Z_c^\top S^{1/2} \beta` (D, K) from the dual coefficients ``beta`` (n, K)."""
    u = beta if rw is None else beta * rw[:, None]
    W = np.asarray(_oneblas.matmul(design.Z.T, u), dtype=np.float64)
    W -= np.outer(mz, u.sum(axis=0))
    return np.ascontiguousarray(W)


def solve_dual(problem, penalty, options, state):
    r"""Ridge in the dual, for more features than rows (D > n): with the centred, weighted
    kernel of the rows :math:`\tilde K = S^{1/2} Z_c Z_c^\top S^{1/2}` (n x n),

    .. math::

        \beta = (\tilde K + \lambda I)^{-1} S^{1/2}(Y - \bar y), \qquad
        W = Z_c^\top S^{1/2} \beta, \qquad b = \bar y - \bar z^\top W

    (the same solution as the primal normal equations, by the push-through identity
    :math:`(Z_c^\top S Z_c + \lambda I)^{-1} Z_c^\top S^{1/2} = Z_c^\top S^{1/2}(\tilde K +
    \lambda I)^{-1}`), by a Cholesky factorisation of :math:`\tilde K + \lambda I` (O(n^3 / 3)
    per penalty, O(n^2 D) once for the kernel).  Penalty 0 -- ridgeless regression -- gives
    the **minimum-norm least-squares solution** :math:`W = (S^{1/2}Z_c)^+ S^{1/2}(Y - \bar y)`
    (the interpolant of the rows when D >= n), from the eigendecomposition
    :math:`\tilde K = V \Lambda V^\top` with eigenvalues below ``max * n * eps`` taken as 0;
    so does a penalty whose factorisation fails.  Dense or sparse features; the kernel is
    kept in ``state`` for a path.  Memory: two n x n float64 arrays (refused beforehand when
    they cannot fit)."""
    design = problem
    K, Yt, rw = dual_kernel(design, options, state)
    mz, my, _ = _design_centre(design, options, state)
    n, k = Yt.shape
    ones = np.ones(k, dtype=int)
    beta = None
    method = "dual"
    if penalty > 0:
        M = K.copy(order="F")
        M.flat[::n + 1] += penalty
        M, info = _lapack.dpotrf(M, lower=1, clean=0, overwrite_a=1)
        if info == 0:
            beta, info = _lapack.dpotrs(M, Yt, lower=1)
            if info != 0:
                beta = None
        del M
    if beta is None:
        ev, V, VY = dual_eigen_state(design, options, state)
        beta = _oneblas.matmul(V, VY * pseudo_inverse(ev, penalty)[:, None])
    W = dual_coef(design, beta, rw, mz)
    return Solution(W, my - _oneblas.matmul(mz, W), ones, method)


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class SolverSpec:
    """A row of :data:`SOLVERS`."""

    #: ``solve(problem, penalty, options, state) -> Solution``
    function: Callable
    #: "statistics" (streamed RidgeStatistics: dense features, any number of rows, dask) or
    #: "design" (the whole feature matrix in memory: dense or sparse features)
    data: str
    #: one line for the documentation and error messages
    summary: str
    #: "design" solvers: keeps a randfeat map's dense features in float32 when
    #: ``gram_dtype="float32"`` (products in the features' precision)
    float32_features: bool = False


#: The one dispatch table of the ridge solvers (see the module docstring).
SOLVERS = {
    "cholesky": SolverSpec(solve_cholesky, "statistics",
                           "streaming normal equations, one Cholesky factorisation per alpha"),
    "eigh": SolverSpec(solve_eigh, "statistics",
                       "streaming normal equations, one eigendecomposition for every alpha"),
    "lsqr": SolverSpec(solve_lsqr, "design", "damped LSQR on the feature matrix"),
    "cg": SolverSpec(solve_cg, "design", "conjugate gradients on the normal equations"),
    "pcg": SolverSpec(solve_pcg, "design",
                      "conjugate gradients with a randomized Nyström preconditioner",
                      float32_features=True),
    "dual": SolverSpec(solve_dual, "design",
                       "ridge in the dual (n x n kernel of the rows), for D > n; alpha = 0 "
                       "gives the minimum-norm least-squares solution"),
}


def get_solver(name, who="solver"):
    """The :class:`SolverSpec` of ``name``; ValueError naming the valid solvers otherwise."""
    spec = SOLVERS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"{who}: unknown solver {name!r}; valid solvers are "
                         f"{['auto', *SOLVERS]}")
    return spec


def resolve_solver(name, sparse_features, who="solver"):
    """``(name, spec)`` of the solver a fit uses: ``"auto"`` is "lsqr" for sparse features (a
    hashed binning width can be huge: no D x D Gram) and "cholesky" for dense ones."""
    if name == "auto":
        name = "lsqr" if sparse_features else "cholesky"
    return name, get_solver(name, who)
