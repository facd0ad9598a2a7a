r"""The posterior of Bayesian linear regression on the features (the regressor's
``predict(X, return_std=True)`` and ``sample_y``).

The model is that of the evidence (:mod:`randfeat.linear._selection`): :math:`y_i = b +
z_i^\top w + \varepsilon_i`, :math:`w \sim N(0, \tau^2 I)`, :math:`\varepsilon_i \sim N(0,
\sigma^2 / s_i)`, a flat prior on :math:`b`, :math:`\lambda = \sigma^2 / \tau^2` the fitted
penalty and :math:`\sigma^2` the fitted noise variance.  Given the rows, :math:`w \sim
N(W, \sigma^2 (A + \lambda I)^{-1})` and :math:`b \mid w \sim N(\bar y - \bar z^\top w,
\sigma^2 / S)`, so the latent function :math:`g(x) = b + z(x)^\top w` has the posterior

.. math::

    \mathbb E\, g(x) = \bar y + \tilde z(x)^\top W, \qquad
    \operatorname{Cov}(g(x), g(x')) = \sigma^2 \bigl(\tilde z(x)^\top (A + \lambda I)^{-1}
    \tilde z(x') + 1/S\bigr),

:math:`\tilde z(x) = z(x) - \bar z` (without an intercept: :math:`\bar z = 0`, no
:math:`1/S`).  This is exactly the posterior of the Gaussian process with kernel
:math:`\tau^2 z(x)^\top z(x')`, noise :math:`\sigma^2 / s_i` and a constant mean with a flat
prior (Rasmussen & Williams 2006, §2.7, eq. 2.42 with :math:`B^{-1} \to 0`), computed in
O(D^2) per point instead of O(n^2).  A new observation adds :math:`\sigma^2`.

:class:`Posterior` holds a square root of :math:`(A + \lambda I)^{-1}`: the Cholesky factor
:math:`L` of :math:`A + \lambda I` that the final solve made (:math:`T = L^{-1}\tilde Z^\top`),
or the scaled eigenvectors :math:`Q(\Lambda + \lambda)^{-1/2}` of the path's
eigendecomposition (:math:`T = (\Lambda + \lambda)^{-1/2} Q^\top \tilde Z^\top`); either way
:math:`T^\top T = \tilde Z (A + \lambda I)^{-1} \tilde Z^\top`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from randfeat.linear._oneblas import matmul

__all__ = ["Posterior", "standard_normal"]


def standard_normal(rng, shape):
    """The standard normal draws of :meth:`Posterior.sample` (a seam for tests)."""
    return rng.standard_normal(shape)


class Posterior:
    """A square root of the posterior covariance of the weights, with what the predictive
    distribution needs besides the coefficients (module docstring)."""

    def __init__(self, kind, M, mz, weight_sum, fit_intercept, noise_variance):
        if kind not in ("chol", "eig"):
            raise ValueError(f"Posterior: kind must be 'chol' or 'eig', got {kind!r}")
        self.kind = kind
        self.M = M
        self.mz = np.asarray(mz, dtype=np.float64)
        self.weight_sum = float(weight_sum)
        self.fit_intercept = bool(fit_intercept)
        self.noise_variance = np.atleast_1d(np.asarray(noise_variance, dtype=np.float64))

    @classmethod
    def from_cholesky(cls, factor, **kw):
        """From the lower Cholesky factor of :math:`A + \\lambda I` (its upper triangle is never
        read: LAPACK ``trtrs``)."""
        return cls("chol", factor, **kw)

    @classmethod
    def from_eigen(cls, ev, Q, penalty, *, overwrite=False, **kw):
        """From :math:`A = Q\\Lambda Q^\\top`: :math:`M = Q(\\Lambda + \\lambda)^{-1/2}`
        (``overwrite``: scaled in ``Q`` itself)."""
        scale = 1.0 / np.sqrt(ev + penalty)
        M = Q if overwrite else Q.copy(order="K")
        M *= scale[None, :]
        return cls("eig", M, **kw)

    def half(self, Z):
        """:math:`T` (D, m) with :math:`T^\\top T = \\tilde Z (A + \\lambda I)^{-1}
        \\tilde Z^\\top` for feature rows ``Z`` (m, D)."""
        Zc = np.array(Z, dtype=np.float64)
        if self.fit_intercept:
            Zc -= self.mz
        if self.kind == "eig":
            return matmul(self.M.T, Zc.T)
        return scipy.linalg.solve_triangular(self.M, Zc.T, lower=True, check_finite=False)

    def latent_variance(self, Z):
        """:math:`\\tilde z^\\top (A + \\lambda I)^{-1} \\tilde z + 1/S` of every row of ``Z``:
        the posterior variance of the latent function per unit noise variance, (m,)."""
        T = self.half(Z)
        v = np.einsum("dm,dm->m", T, T)
        if self.fit_intercept:
            v += 1.0 / self.weight_sum
        return v

    def draws(self, Z, xi):
        """The centred posterior draws of the latent function at the rows ``Z`` for the
        standard normal ``xi`` of shape (K, D + 1, n_samples) (the last of the D + 1 rows
        draws the intercept's part): (m, K, n_samples), before the noise scale."""
        T = self.half(Z)
        out = np.einsum("dm,kds->mks", T, xi[:, :T.shape[0]])
        if self.fit_intercept:
            out += xi[None, :, T.shape[0]] / np.sqrt(self.weight_sum)
        return out
