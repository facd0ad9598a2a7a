r"""Choosing alpha from one eigendecomposition: efficient leave-one-out, GCV and the evidence.

For the centred, weighted ridge problem of :mod:`randfeat.linear` (rows :math:`z_i`, targets
:math:`y_i`, weights :math:`s_i`, :math:`S = \sum_i s_i`, centred rows
:math:`\tilde z_i = z_i - \bar z`, :math:`A = \sum_i s_i \tilde z_i \tilde z_i^\top`,
:math:`c = \sum_i s_i \tilde z_i (y_i - \bar y)^\top`) and one penalty :math:`\lambda` on the
summed squared errors, a :class:`Spectrum` holds one eigendecomposition from which every
quantity below follows for the whole path of penalties at :math:`O(m)` (GCV, the evidence) or
:math:`O(nm)` (leave-one-out) each:

* **primal** (:meth:`Spectrum.from_statistics`, the streaming statistics, D x D):
  :math:`A = Q \Lambda Q^\top`, :math:`p = Q^\top c`;
* **dual** (:meth:`Spectrum.from_design`, the feature matrix, n x n; scikit-learn's
  ``RidgeCV(gcv_mode="eigen")`` with n <= D): :math:`\tilde K = S^{1/2} \tilde Z \tilde Z^\top
  S^{1/2} = V \Lambda V^\top`, :math:`p = V^\top S^{1/2}(y - \bar y)`.

With :math:`W_\lambda` the ridge solution and :math:`\hat y_i = \bar y + \tilde z_i^\top
W_\lambda`:

* the **hat diagonal** (the intercept's :math:`s_i / S` included) :math:`h_i = s_i / S + s_i
  \tilde z_i^\top (A + \lambda I)^{-1} \tilde z_i = s_i / S + s_i \sum_j u_{ij}^2 /
  (\lambda_j + \lambda)`, :math:`u_i = Q^\top \tilde z_i` (primal: one pass over the rows,
  features recomputed per chunk, :class:`LooRows`), or :math:`s_i / S + \sum_j V_{ij}^2
  \lambda_j / (\lambda_j + \lambda)` (dual);
* the **leave-one-out** residual :math:`y_i - \hat y_{-i} = (y_i - \hat y_i) / (1 - h_i)`
  (exact for weighted ridge with an unpenalised intercept: Sherman-Morrison), scored as the
  weighted mean loss :math:`\sum_i s_i \ell_i / S`;
* **GCV** (Golub, Heath & Wahba 1979) :math:`\mathrm{RSS}_\lambda / S \,/\, (1 -
  \mathrm{df}_\lambda / n)^2` with :math:`\mathrm{df}_\lambda = 1 + \sum_j \lambda_j /
  (\lambda_j + \lambda)` (the trace of the hat matrix; 1 for the intercept) and :math:`n` the
  number of rows with a positive weight;
* the **log evidence** of Bayesian linear regression on the features, :math:`y_i = b + z_i^\top
  w + \varepsilon_i`, :math:`w \sim N(0, \tau^2 I)`, :math:`\varepsilon_i \sim N(0,
  \sigma^2 / s_i)`, :math:`\lambda = \sigma^2 / \tau^2`, a flat prior on :math:`b`, with the
  noise variance profiled out (:math:`\hat\sigma^2 = E_\lambda / (n - 1)`, :math:`E_\lambda =
  \mathrm{RSS}_\lambda + \lambda \lVert W_\lambda\rVert^2`):

  .. math::

      \log p(y \mid \lambda, \hat\sigma^2) = -\frac{n - 1}{2}\Bigl(\log\frac{2\pi
      E_\lambda}{n - 1} + 1\Bigr) - \frac12 \sum_j \log\Bigl(1 + \frac{\lambda_j}{\lambda}
      \Bigr) + \frac12 \sum_i \log s_i - \frac12 \log S

  (summed over the targets, each with its own :math:`\hat\sigma^2`; without an intercept
  :math:`n - 1 \to n` and the last term goes).

The derivations, with references, are in ``docs/theory/model_selection.md``.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from randfeat.linear._oneblas import matmul
from randfeat.linear._solvers import (
    Design,
    SolveOptions,
    _moments,
    dual_coef,
    dual_eigen_state,
    dual_kernel,
    eigen_state,
    pseudo_inverse,
)

__all__ = ["SELECTIONS", "SPECTRAL", "LooRows", "Spectrum", "choose"]

#: the values of the learners' ``selection`` parameter
SELECTIONS = ("loo", "gcv", "evidence", "holdout")
#: the criteria computed from one eigendecomposition
SPECTRAL = ("loo", "gcv", "evidence")


class Spectrum:
    """One eigendecomposition of a ridge problem and every criterion along the alpha path
    (module docstring).  Build it with :meth:`from_statistics` (primal) or
    :meth:`from_design` (dual); penalties are on the summed scale (the learners convert
    ``alphas``)."""

    def __init__(self, side, ev, V, proj, mz, my, weight_sum, yss, n_eff, sum_log_w,
                 fit_intercept, n_features, design=None, rw=None):
        self.side = side
        self.ev, self.V, self.proj = ev, V, proj
        self.mz, self.my = mz, my
        self.weight_sum = float(weight_sum)
        self.yss = np.asarray(yss, dtype=np.float64)
        self.n_eff = int(n_eff)
        self.sum_log_w = float(sum_log_w)
        self.fit_intercept = bool(fit_intercept)
        self.n_features = int(n_features)
        self.design, self.rw = design, rw

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_statistics(cls, stats, fit_intercept=True, *, consume=False, n_eff=None,
                        sum_log_w=0.0, who="RidgeStatistics"):
        """The primal spectrum of :class:`~randfeat.linear.RidgeStatistics` (D x D
        eigendecomposition, :func:`~randfeat.linear._solvers.eigen_state`).  ``consume``:
        decompose the Gram of the statistics in place (they are then spent; no D x D copy).
        ``n_eff``: rows with a positive weight (default ``stats.n_samples_``);
        ``sum_log_w``: :math:`\\sum_i \\log s_i` over them (0 without weights)."""
        options = SolveOptions(fit_intercept=fit_intercept, overwrite=consume, who=who)
        state = {}
        _, mz, my = _moments(stats, options, state)
        ev, Q, Qc = eigen_state(stats, options, state)
        S = stats.weight_sum_
        yss = stats.y_sq_sum_ - S * my * my if fit_intercept else stats.y_sq_sum_.copy()
        return cls("primal", ev, Q, Qc, mz, my, S, np.maximum(yss, 0.0),
                   stats.n_samples_ if n_eff is None else n_eff, sum_log_w, fit_intercept,
                   Q.shape[0])

    @classmethod
    def from_design(cls, Z, Y, w=None, fit_intercept=True, *, n_eff=None, sum_log_w=0.0,
                    who="RandomFeatureRidge.fit"):
        """The dual spectrum of a feature matrix ``Z`` (n, D), dense or CSR: the n x n
        eigendecomposition of the centred weighted kernel
        (:func:`~randfeat.linear._solvers.dual_kernel`)."""
        design = Design(Z, Y, w)
        options = SolveOptions(fit_intercept=fit_intercept, who=who)
        state = {}
        K, Yt, rw = dual_kernel(design, options, state)
        ev, V, VY = dual_eigen_state(design, options, state)
        mz, my, _ = state["centre"]
        del K, state
        if n_eff is None:
            n_eff = Z.shape[0] if w is None else int(np.count_nonzero(w > 0))
        return cls("dual", ev, V, VY, mz, my, design.weight_sum(), np.sum(Yt * Yt, axis=0),
                   n_eff, sum_log_w, fit_intercept, Z.shape[1], design=design, rw=rw)

    # ------------------------------------------------------------------ the path
    def _inv(self, penalties):
        """(m, L): 1 / (lambda_j + lambda) (the pseudo-inverse at lambda = 0)."""
        return np.stack([pseudo_inverse(self.ev, float(p)) for p in penalties], axis=1)

    def coef(self, penalty):
        """``(W (D, K), b (K,))`` of one penalty."""
        inv = pseudo_inverse(self.ev, float(penalty))
        if self.side == "primal":
            W = matmul(self.V, self.proj * inv[:, None])
        else:
            W = dual_coef(self.design, matmul(self.V, self.proj * inv[:, None]), self.rw,
                          self.mz)
        W = np.ascontiguousarray(W)
        return W, self.my - matmul(self.mz, W)

    def _df_parts(self, penalties):
        r"""``(rank part, shrinkage (L,), null part (L,))`` of the degrees of freedom:
        :math:`\sum_j \lambda_j / (\lambda_j + \lambda) = r - \sum_{\lambda_j > 0}
        \lambda / (\lambda_j + \lambda) + \sum_{\lambda_j \approx 0} \lambda_j /
        (\lambda_j + \lambda)` (r the numerical rank), so that :math:`n - \mathrm{df}` is
        formed without cancellation when the fit interpolates."""
        lam = np.asarray(penalties, dtype=np.float64)
        ev = self.ev
        null = ev <= ev.max(initial=0.0) * len(ev) * np.finfo(np.float64).eps
        inv = self._inv(lam)
        shrink = (lam[None, :] * inv[~null]).sum(axis=0)
        tiny = (ev[null][:, None] * inv[null]).sum(axis=0)
        return int(np.count_nonzero(~null)), shrink, tiny

    def df(self, penalties):
        """Effective degrees of freedom (trace of the hat matrix, intercept included): (L,)."""
        r, shrink, tiny = self._df_parts(penalties)
        return float(self.fit_intercept) + r - shrink + tiny

    def residual_df(self, penalties):
        r""":math:`n - \mathrm{df}` (n the rows with a positive weight): (L,)."""
        r, shrink, tiny = self._df_parts(penalties)
        return (self.n_eff - int(self.fit_intercept) - r) + shrink - tiny

    def rss(self, penalties):
        """Weighted residual sum of squares of every penalty and target: (L, K)."""
        inv = self._inv(penalties)
        p2 = self.proj * self.proj
        lam = np.asarray(penalties, dtype=np.float64)
        if self.side == "primal":
            # yss - 2 cᵀW + WᵀAW (the residual outside the span of the features is in yss)
            g = (self.ev[:, None] + 2 * lam[None, :]) * inv * inv
            return np.maximum(self.yss[None, :] - matmul(g.T, p2), 0.0)
        r = lam[None, :] * inv
        r = np.where(inv > 0, r, 1.0)        # null directions of the kernel keep the residual
        return matmul((r * r).T, p2)

    def energy(self, penalties):
        """:math:`E_\\lambda = \\mathrm{RSS}_\\lambda + \\lambda\\lVert W_\\lambda\\rVert^2`
        (the minimum of the penalised objective): (L, K)."""
        inv = self._inv(penalties)
        p2 = self.proj * self.proj
        lam = np.asarray(penalties, dtype=np.float64)
        if self.side == "primal":
            return np.maximum(self.yss[None, :] - matmul(inv.T, p2), 0.0)
        r = np.where(inv > 0, lam[None, :] * inv, 1.0)
        return matmul(r.T, p2)

    def gcv(self, penalties):
        """Generalised cross-validation, averaged over the targets: (L,)."""
        rss = self.rss(penalties).mean(axis=1) / self.weight_sum
        with np.errstate(divide="ignore", invalid="ignore"):
            den = self.residual_df(penalties) / self.n_eff
            out = rss / (den * den)
        return np.where(den > 0, out, np.inf)

    def noise_variance(self, penalties):
        """The profiled noise variance :math:`\\hat\\sigma^2 = E_\\lambda / (n - 1)` (n
        without an intercept): (L, K)."""
        m = self.n_eff - int(self.fit_intercept)
        return self.energy(penalties) / max(m, 1)

    def log_evidence(self, penalties):
        """The log marginal likelihood with the noise variance profiled out, summed over the
        targets (module docstring): (L,)."""
        lam = np.asarray(penalties, dtype=np.float64)
        K = self.proj.shape[1]
        m = self.n_eff - int(self.fit_intercept)
        E = self.energy(lam)
        with np.errstate(divide="ignore", invalid="ignore"):
            fit = -0.5 * m * (np.log(2 * np.pi * E / m) + 1.0)
            logdet = np.log1p(self.ev[:, None] / lam[None, :]).sum(axis=0)
        const = 0.5 * self.sum_log_w
        if self.fit_intercept:
            const -= 0.5 * np.log(self.weight_sum)
        out = fit.sum(axis=1) + K * (const - 0.5 * logdet)
        return np.where(np.isnan(out), -np.inf, out)

    def evidence_maximiser(self, lo, hi):
        """The penalty in ``[lo, hi]`` (> 0) that maximises :meth:`log_evidence` (bounded
        Brent search on log lambda, to 1e-8 in log lambda)."""
        if not hi > lo:
            return float(lo)
        res = scipy.optimize.minimize_scalar(
            lambda t: -float(self.log_evidence([np.exp(t)])[0]),
            bounds=(np.log(lo), np.log(hi)), method="bounded", options={"xatol": 1e-8})
        cand = [lo, hi, float(np.exp(res.x))]
        vals = self.log_evidence(cand)
        return float(cand[int(np.argmax(vals))])

    # ------------------------------------------------------------------ leave-one-out
    def loo_predictions(self, penalties):
        r"""Dual spectrum: the leave-one-out predictions of every row, penalty and target,
        (n, L, K), from the eigenvectors of the kernel (no pass over the rows).

        Both factors of the leave-one-out residual are formed without cancellation (they are
        small exactly when the fit interpolates, D > n and a small penalty):
        :math:`S^{1/2}(y - \hat y) = V \operatorname{diag}(\lambda / (\lambda_j +
        \lambda)) p` and :math:`1 - h_i = \sum_{\lambda_j > 0} V_{ij}^2 \lambda /
        (\lambda_j + \lambda) + \lVert N_i - u_i N^\top u\rVert^2`, with :math:`N` the
        eigenvectors of the null space of the kernel (eigenvalues below ``max * n * eps``)
        and :math:`u = \sqrt{s} / \sqrt{S}` the intercept's direction, which lies in it."""
        if self.side != "dual":
            raise ValueError("loo_predictions needs the dual spectrum; the primal one takes "
                             "a pass over the rows (LooRows)")
        design = self.design
        lam = np.asarray(penalties, dtype=np.float64)
        inv = self._inv(lam)
        Y = design.Y
        n, K = Y.shape
        L = inv.shape[1]
        ev, V = self.ev, self.V
        null = ev <= ev.max(initial=0.0) * len(ev) * np.finfo(np.float64).eps
        s = np.ones(n) if design.w is None else design.w
        N = V[:, null]
        if self.fit_intercept:
            u = np.sqrt(s / self.weight_sum)
            N = N - np.outer(u, matmul(N.T, u))
        one_minus_h = (np.sum(N * N, axis=1)[:, None]
                       + matmul(V[:, ~null] ** 2, lam[None, :] * inv[~null]))     # (n, L)
        pos = s > 0
        rs = np.sqrt(s[pos])
        P = np.empty((n, L, K))
        for j in range(L):
            r = np.empty((n, K))
            # residuals of the weighted rows from the kernel's eigenbasis, without cancellation
            rt = matmul(V[pos], self.proj * np.where(inv[:, j] > 0, lam[j] * inv[:, j],
                                                     1.0)[:, None])
            r[pos] = rt / rs[:, None]
            if not pos.all():   # rows of weight 0: their residual from the coefficients
                W = dual_coef(design, matmul(V, self.proj * inv[:, j][:, None]), self.rw,
                              self.mz)
                Zo = design.Z[~pos]
                r[~pos] = Y[~pos] - (np.asarray(matmul(Zo, W)).reshape(-1, K)
                                     - matmul(self.mz, W) + self.my)
            with np.errstate(divide="ignore", invalid="ignore"):
                P[:, j] = Y - r / one_minus_h[:, j][:, None]
        return P


class LooRows:
    """Leave-one-out predictions of chunks of rows from a primal :class:`Spectrum`: the
    features of a chunk are centred and rotated into the eigenbasis (:math:`U = \\tilde Z Q`,
    one ``gemm``: 2 n D^2 flops per pass), then every penalty costs O(n D (K + 1)).  Picklable
    (the dask path sends it to the workers).  ``dtype=np.float32`` rotates in single precision
    (half the time; a relative error of about 1e-6 on the hat diagonals)."""

    def __init__(self, spectrum, penalties, dtype=np.float64):
        if spectrum.side != "primal":
            raise ValueError("LooRows needs the primal spectrum")
        inv = spectrum._inv(penalties)                               # (D, L)
        D, L = inv.shape
        K = spectrum.proj.shape[1]
        self.dtype = np.dtype(dtype)
        self.Q = np.asarray(spectrum.V, dtype=self.dtype, order="F")
        self.inv = inv
        self.B = (spectrum.proj[:, None, :] * inv[:, :, None]).reshape(D, L * K)
        self.mz, self.my = spectrum.mz, spectrum.my
        # the centring rotated once: (z - mz) Q = z Q - mz Q (no centred copy of a chunk)
        self.mzQ = matmul(spectrum.mz, spectrum.V) if spectrum.fit_intercept else None
        self.S, self.fit_intercept = spectrum.weight_sum, spectrum.fit_intercept
        self.L, self.K = L, K

    def __call__(self, Z, Y, w=None):
        """Leave-one-out predictions (n, L, K) of the rows ``Z`` (features, (n, D)) with
        targets ``Y`` (n, K) and weights ``w`` (n,) or None."""
        Z = np.asarray(Z)
        if self.dtype == np.float64:
            # centred before the rotation (a copy of the chunk): no cancellation when the
            # features' mean is large against their spread
            Zc = Z - self.mz if self.fit_intercept else Z
            U = matmul(np.asarray(Zc, dtype=np.float64), self.Q)
            del Zc
        else:
            U = np.asarray(matmul(Z.astype(np.float32, copy=False), self.Q), dtype=np.float64)
            if self.mzQ is not None:
                U -= self.mzQ
        n = U.shape[0]
        fitted = matmul(U, self.B).reshape(n, self.L, self.K) + self.my
        np.multiply(U, U, out=U)
        h = matmul(U, self.inv)                                     # (n, L)
        del U
        if w is not None:
            h *= w[:, None]
        if self.fit_intercept:
            h += ((np.ones(n) if w is None else w) / self.S)[:, None]
        Yb = Y[:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            return Yb - (Yb - fitted) / (1.0 - h)[:, :, None]


def choose(curve, alphas, maximise=False):
    """Index of the best value of ``curve`` over ``alphas``: the smallest (``maximise``: the
    largest); NaN counts as the worst; among ties (to round-off) the largest, safest alpha."""
    c = -np.asarray(curve, dtype=np.float64) if maximise else np.asarray(curve, np.float64)
    c = np.where(np.isnan(c), np.inf, c)
    if not np.isfinite(c).any() and not (c == -np.inf).any():
        return int(np.argmax(alphas))
    m = np.min(c)
    if m == -np.inf:
        ties = np.flatnonzero(c == m)
    else:
        ties = np.flatnonzero(c <= m + 1e-12 * abs(m) + 1e-300)
    return int(ties[np.argmax(np.asarray(alphas)[ties])])
