r"""Deterministic equivalents of random-feature ridge regression (docs/theory/learning_curve.md).

Everything here is computed from the data alone (kernel matrices, eigenvalues): nothing of
randfeat is called, so the checks compare the library's simulations with an independent law.

**Liao, Couillet & Mahoney (NeurIPS 2020), random Fourier features.**  ``N`` frequencies
:math:`w_j \sim N(0, I_p)`, the :math:`2N \times n` feature matrix
:math:`\Sigma = [\cos(WX); \sin(WX)]` of the training columns :math:`X \in \mathbb R^{p\times n}`,
ridge :math:`\beta = \frac1n\Sigma(\frac1n\Sigma^\top\Sigma + \lambda I_n)^{-1}y` (the minimiser of
:math:`\frac1n\lVert y - \Sigma^\top\beta\rVert^2 + \lambda\lVert\beta\rVert^2`).  With

.. math::

    K_{\cos} = e^{-\frac12(\lVert x_i\rVert^2 + \lVert x_j\rVert^2)}\cosh(x_i^\top x_j),\qquad
    K_{\sin} = e^{-\frac12(\lVert x_i\rVert^2 + \lVert x_j\rVert^2)}\sinh(x_i^\top x_j),

    \bar Q = \Big(\frac Nn\Big(\frac{K_{\cos}}{1+\delta_{\cos}}
             + \frac{K_{\sin}}{1+\delta_{\sin}}\Big) + \lambda I_n\Big)^{-1},\qquad
    \delta_\sigma = \frac1n\operatorname{tr} K_\sigma\bar Q

(the fixed point, unique and positive), the training MSE is equivalent to

.. math::

    \bar E_{\rm train} = \frac{\lambda^2}n\lVert\bar Qy\rVert^2 + \frac{\lambda^2 N}{n^2}\,
    t^\top\,E\,(I_2 - \tfrac Nn S E)^{-1} q,

with :math:`S_{ab} = \frac1n\operatorname{tr}K_a\bar QK_b\bar Q`,
:math:`E = \operatorname{diag}((1+\delta_a)^{-2})`, :math:`q_a = y^\top\bar QK_a\bar Qy`,
:math:`t_a = \frac1n\operatorname{tr}\bar QK_a\bar Q` (checked term by term against the authors'
own code of the training MSE, Couillet & Liao's "RMT4ML" §5.5), and the test MSE on
:math:`(\hat X, \hat y)` (:math:`\hat n` columns) to

.. math::

    \bar E_{\rm test} = \frac1{\hat n}\Big\lVert\hat y - \frac Nn\hat\Phi\bar Qy\Big\rVert^2
    + \frac{N^2}{n^2\hat n}\,\Theta^\top E\,(I_2 - \tfrac Nn SE)^{-1} q,\qquad
    \hat\Phi = \frac{K_{\cos}(\hat X, X)}{1+\delta_{\cos}}
               + \frac{K_{\sin}(\hat X,X)}{1+\delta_{\sin}},

    \Theta_a = \frac1N\operatorname{tr}K_a(\hat X,\hat X) - \frac2n\operatorname{tr}
    K_a(\hat X, X)\bar Q\hat\Phi^\top + \frac N{n^2}\operatorname{tr}\hat\Phi\bar QK_a\bar Q
    \hat\Phi^\top,

which reduces exactly to :math:`\bar E_{\rm train}` at :math:`\hat X = X` (tested).  randfeat's
map with ``sigma = 1`` on the same columns has :math:`Z = \Sigma^\top/\sqrt N`, so ridge with
``alpha_scale="sum"`` penalty :math:`\alpha = n\lambda/N` and no intercept is this estimator.

**Jacot, Şimşek, Spadaro, Hongler & Gabriel (ICML 2020), the effective ridge.**  For ``P``
i.i.d. features of covariance kernel :math:`K` and per-sample ridge :math:`\lambda`
(:math:`\frac1n\sum_i(y_i - z_i^\top\theta)^2 + \lambda\lVert\theta\rVert^2`), the mean predictor
is equivalent to kernel ridge regression with the per-sample ridge :math:`\tilde\lambda > \lambda`,
the unique positive solution of

.. math:: \tilde\lambda = \lambda + \frac{\tilde\lambda}{P}\sum_i\frac{d_i}{\tilde\lambda + d_i},

:math:`d_i` the eigenvalues of :math:`K/n` (:func:`effective_ridge`); the same leave-one-feature-
out argument with one kernel gives it (:math:`\tilde\lambda = \lambda(1+\delta)`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize

__all__ = ["rff_kernels", "rff_diagonals", "LiaoEquivalent", "effective_ridge",
           "effective_ridge_path", "log_slope"]


def rff_kernels(A, B):
    r"""(:math:`K_{\cos}`, :math:`K_{\sin}`) between the rows of ``A`` and of ``B`` (the expected
    products of the cos and sin features of one frequency :math:`w \sim N(0, I)`)."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    na = np.exp(-0.5 * np.einsum("ij,ij->i", A, A))
    nb = np.exp(-0.5 * np.einsum("ij,ij->i", B, B))
    G = A @ B.T
    scale = na[:, None] * nb[None, :]
    return scale * np.cosh(G), scale * np.sinh(G)


def rff_diagonals(A):
    """The diagonals of ``rff_kernels(A, A)``: ``(1 + e^{-2|x|^2}) / 2`` and ``(1 - ...) / 2``."""
    e = np.exp(-2.0 * np.einsum("ij,ij->i", np.asarray(A, float), np.asarray(A, float)))
    return 0.5 * (1.0 + e), 0.5 * (1.0 - e)


class LiaoEquivalent:
    r"""The deterministic equivalents of the training and test MSE of RFF ridge regression
    (module docstring) for one training set ``(X, y)`` and one test set ``(Xt, yt)``.

    ``X`` and ``Xt`` are rows (n x p), already scaled so that the kernel is
    :math:`e^{-\lVert x - x'\rVert^2/2}` (sigma = 1).  ``mse(N, lam)`` returns
    ``(train, test, delta)``; successive calls warm-start the fixed point.
    """

    def __init__(self, X, y, Xt, yt):
        self.y, self.yt = np.asarray(y, float), np.asarray(yt, float)
        self.n, self.nt = len(self.y), len(self.yt)
        self.K = rff_kernels(X, X)
        self.Kt = rff_kernels(Xt, X)
        self.Ktt = [float(v.sum()) for v in rff_diagonals(Xt)]
        self._d = None
        self._kappa = None

    def _resolvent(self, c, lam, d):
        M = c * (self.K[0] / (1.0 + d[0]) + self.K[1] / (1.0 + d[1]))
        M[np.diag_indices_from(M)] += lam
        try:
            cf = scipy.linalg.cho_factor(M, lower=True, check_finite=False)
            Q = scipy.linalg.cho_solve(cf, np.eye(self.n), check_finite=False)
        except np.linalg.LinAlgError:
            Q = np.linalg.inv(M)
        return 0.5 * (Q + Q.T)

    def _scalar_start(self, c, lam):
        r"""Starting point: the one-kernel equation :math:`\delta = \frac1n\sum_i
        \kappa_i/(c\kappa_i/(1+\delta) + \lambda)` on the eigenvalues :math:`\kappa_i` of
        :math:`K_{\cos} + K_{\sin}` (solved for :math:`\log\delta` by bisection)."""
        if self._kappa is None:
            self._kappa = np.clip(np.linalg.eigvalsh(self.K[0] + self.K[1]), 0.0, None)
        k = self._kappa

        def h(t):
            dd = np.exp(t)
            return float(np.sum(k / (c * k / (1.0 + dd) + lam))) / self.n - dd

        lo, hi = -40.0, 40.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if h(mid) > 0 else (lo, mid)
        return np.full(2, 0.5 * np.exp(lo + hi))

    def fixed_point(self, N, lam, d0=None, tol=1e-11, max_iter=100):
        r"""(:math:`\delta_{\cos}`, :math:`\delta_{\sin}`) by Newton's method on
        :math:`F(\delta) - \delta = 0` in the variables :math:`\log\delta` (Jacobian
        :math:`\frac Nn S E`), backtracking on the residual, from ``d0`` or from the one-kernel
        solution; plain fixed-point steps (a contraction for :math:`\lambda > 0`) if Newton
        stalls."""
        n, c = self.n, N / self.n
        d = self._scalar_start(c, lam) if d0 is None else np.maximum(np.asarray(d0, float),
                                                                      1e-300)

        def residual(dd):
            Q = self._resolvent(c, lam, dd)
            A = [self.K[0] @ Q, self.K[1] @ Q]
            F = np.array([np.trace(A[0]), np.trace(A[1])]) / n
            return F - dd, A

        r, A = residual(d)
        for _ in range(max_iter):
            if np.max(np.abs(r) / (1.0 + d)) <= tol:
                return d
            S = np.array([[np.sum(A[a] * A[b].T) for b in range(2)] for a in range(2)]) / n
            J = c * S / (1.0 + d)[None, :] ** 2
            try:  # Newton in log(delta): (I - J) diag(d) dlog = r
                step = np.linalg.solve((np.eye(2) - J) * d[None, :], r)
            except np.linalg.LinAlgError:
                step = r / d
            step = np.clip(step, -5.0, 5.0)
            base = float(np.sum((r / (1.0 + d)) ** 2))
            t, accepted = 1.0, False
            while t > 1e-3:
                dn = d * np.exp(t * step)
                rn, An = residual(dn)
                if float(np.sum((rn / (1.0 + dn)) ** 2)) < base:
                    d, r, A, accepted = dn, rn, An, True
                    break
                t *= 0.5
            if not accepted:
                for _ in range(50):
                    d = np.maximum(d + r, 1e-300)
                    r, A = residual(d)
        raise RuntimeError(f"Liao et al.'s fixed point did not converge (N={N}, lambda={lam})")

    def mse(self, N, lam):
        """``(train, test, (delta_cos, delta_sin))`` at ``N`` frequencies and ridge ``lam``."""
        n, nt, c = self.n, self.nt, N / self.n
        d = self.fixed_point(N, lam, self._d)
        self._d = d
        Q = self._resolvent(c, lam, d)
        Kc, Ks = self.K
        A = [Kc @ Q, Ks @ Q]
        S = np.array([[np.sum(A[a] * A[b].T) for b in range(2)] for a in range(2)]) / n
        E = np.diag(1.0 / (1.0 + d) ** 2)
        Qy = Q @ self.y
        q = np.array([Qy @ Kc @ Qy, Qy @ Ks @ Qy])
        mid = E @ np.linalg.solve(np.eye(2) - c * S @ E, q)
        t = np.array([np.sum(Q * A[0]), np.sum(Q * A[1])]) / n  # tr(Q K_a Q) / n
        train = lam ** 2 / n * float(Qy @ Qy) + lam ** 2 * N / n ** 2 * float(t @ mid)
        PQ = (self.Kt[0] / (1.0 + d[0]) + self.Kt[1] / (1.0 + d[1])) @ Q
        theta = np.array([self.Ktt[a] / N - 2.0 / n * np.sum(self.Kt[a] * PQ)
                          + N / n ** 2 * np.sum((PQ @ self.K[a]) * PQ) for a in range(2)])
        r = self.yt - c * (PQ @ self.y)
        test = float(r @ r) / nt + N ** 2 / (n ** 2 * nt) * float(theta @ mid)
        return float(train), float(test), (float(d[0]), float(d[1]))


def effective_ridge(eigenvalues, lam, P):
    r"""Jacot et al.'s effective ridge :math:`\tilde\lambda` (per sample): the unique positive
    root of :math:`\tilde\lambda - \lambda - \frac{\tilde\lambda}P\sum_i\frac{d_i}{\tilde\lambda
    + d_i}`, ``eigenvalues`` :math:`d_i` of :math:`K/n` (clipped at 0), ``P`` features, ridge
    ``lam > 0``.  The left side is negative at :math:`\lambda` and increasing in
    :math:`\tilde\lambda` where it crosses 0 (Brent's method on a bracket)."""
    d = np.clip(np.asarray(eigenvalues, float), 0.0, None)
    lam, P = float(lam), float(P)
    if lam <= 0 or P <= 0:
        raise ValueError(f"effective_ridge needs lam > 0 and P > 0, got {lam}, {P}")

    def g(t):
        return t - lam - (t / P) * float(np.sum(d / (t + d)))

    hi = lam
    while g(hi) <= 0:
        hi *= 2.0
        if hi > 1e300:
            raise RuntimeError("effective ridge: no root found")
    lo = lam
    return float(scipy.optimize.brentq(g, lo, hi, xtol=1e-15 * hi, rtol=1e-14, maxiter=500))


def effective_ridge_path(eigenvalues, lam, Ps):
    """:func:`effective_ridge` for each ``P`` in ``Ps``."""
    return [effective_ridge(eigenvalues, lam, P) for P in Ps]


def log_slope(x, y):
    """Least-squares slope of ``log y`` on ``log x``."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    lx = lx - lx.mean()
    return float(np.sum(lx * (ly - ly.mean())) / np.sum(lx * lx))

