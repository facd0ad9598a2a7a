r"""The arc-cosine kernels of Cho & Saul (NIPS 2009), exactly.

They are not shift-invariant (they depend on the norms and the angle of x and y), so they are
not in the :class:`~randfeat.kernels.ShiftInvariantKernel` hierarchy; they are the kernels that
:class:`randfeat.ArcCosineFeatures` approximates.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["ArcCosineKernel"]

_ORDERS = (0, 1, 2)


#: terms of the series of J_1, J_2 at theta = pi - eps (eps < 1: the last term is below 1e-23
#: of the first)
_SERIES_TERMS = 12


def _angular(n, theta):
    r""":math:`J_n(\theta)` for n = 0, 1, 2 (Cho & Saul 2009, eq. 6 and below).

    Near :math:`\theta = \pi` the closed forms cancel (:math:`J_1 \sim \epsilon^3/3`,
    :math:`J_2 \sim 4\epsilon^5/15` at :math:`\theta = \pi - \epsilon`), so for
    :math:`\epsilon < 1` their Taylor series are used:
    :math:`J_1 = \sum_{k\ge1} (-1)^{k+1} 2k\,\epsilon^{2k+1}/(2k+1)!` and
    :math:`J_2 = \sum_{k\ge2} (-1)^k 4^k (2k-2)\,\epsilon^{2k+1}/(2k+1)!`
    (from :math:`J_1 = \sin\epsilon - \epsilon\cos\epsilon`,
    :math:`J_2 = 2\epsilon - \tfrac32\sin 2\epsilon + \epsilon\cos 2\epsilon`)."""
    theta = np.asarray(theta, dtype=float)
    rest = np.pi - theta
    if n == 0:
        return rest
    c, s = np.cos(theta), np.sin(theta)
    out = s + rest * c if n == 1 else 3.0 * s * c + rest * (1.0 + 2.0 * c * c)
    near = rest < 1.0
    if np.any(near):
        e = rest[near]
        e2 = e * e
        acc = np.zeros_like(e)
        for k in range(1 if n == 1 else 2, _SERIES_TERMS + 1):
            coef = (-1) ** (k + 1) * 2 * k if n == 1 else (-1) ** k * 4 ** k * (2 * k - 2)
            acc += coef / math.factorial(2 * k + 1) * e * e2 ** k
        out[near] = acc
    return out


class ArcCosineKernel:
    r"""Arc-cosine kernel of order :math:`n` (Cho & Saul 2009), computed exactly.

    .. math::

        k_n(x, y) = 2\,\mathbb E_{w\sim N(0, I)}\big[\Theta(w^\top x)\Theta(w^\top y)
                    (w^\top x)^n (w^\top y)^n\big]
                  = \frac1\pi \|x\|^n \|y\|^n J_n(\theta),

    :math:`\theta = \angle(x, y) \in [0, \pi]`, :math:`\Theta` the Heaviside step, and

    .. math::

        J_0 = \pi - \theta, \quad J_1 = \sin\theta + (\pi - \theta)\cos\theta, \quad
        J_2 = 3\sin\theta\cos\theta + (\pi - \theta)(1 + 2\cos^2\theta).

    :math:`k_0` is :math:`1 - \theta/\pi` (the kernel of a step-function network);
    :math:`k_1` is the kernel of an infinitely wide one-hidden-layer ReLU network;
    :math:`k_n(x, x) = (2n - 1)!!\,\|x\|^{2n}`.  For a zero row the angle is undefined;
    its kernel values are 0 for every order (what the features give: with
    :math:`\Theta(0) = 0` the features of the zero vector are 0).

    Parameters
    ----------
    order : {0, 1, 2}, default 1

    Notes
    -----
    The angle is :math:`\arccos` of the cosine of the unit vectors :math:`u = x/\|x\|`,
    :math:`v = y/\|y\|`, except where :math:`|\cos\theta| > 0.99`: there the rounding of the
    cosine would move :math:`\theta` by up to :math:`\sim 10^{-8}` (so :math:`k_0 = 1 -
    \theta/\pi` by :math:`\sim 3\cdot 10^{-9}`), and :math:`\theta = 2\arcsin(\|u - v\|/2)`
    (or :math:`\pi - 2\arcsin(\|u + v\|/2)`) is used instead, accurate to a few ulp.

    References
    ----------
    Y. Cho and L. K. Saul, "Kernel Methods for Deep Learning", NIPS 2009, eq. (1)-(6).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat.kernels import ArcCosineKernel
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]])
    >>> np.round(ArcCosineKernel(order=0)(X), 3)       # 1 - theta / pi
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    >>> float(ArcCosineKernel(order=1)(X[:1], X[1:2])[0, 0])   # ||x|| ||y|| / pi at 90 degrees
    0.6366197723675814
    >>> float(ArcCosineKernel(order=2)(X[1:2])[0, 0])           # 3 ||x||^4
    48.0
    """

    def __init__(self, order=1):
        if isinstance(order, (bool, np.bool_)) or not isinstance(order, numbers.Integral) \
                or int(order) not in _ORDERS:
            raise ValueError(f"ArcCosineKernel: order must be 0, 1 or 2, got {order!r}")
        self.order = int(order)

    def __repr__(self):
        return f"ArcCosineKernel(order={self.order})"

    def __eq__(self, other):
        return type(other) is type(self) and other.order == self.order

    def __hash__(self):
        return hash((type(self).__name__, self.order))

    @staticmethod
    def _points(X, name):
        who = "ArcCosineKernel.__call__"
        X = np.asarray(X)
        if X.dtype.kind not in "fiub":
            raise TypeError(f"{who}: {name} must be a real array, got dtype {X.dtype}")
        X = X.astype(np.float64, copy=False)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2:
            raise ValueError(f"{who}: {name} must be 2-D (n_samples, n_features), got shape "
                             f"{X.shape}")
        if X.size and not np.isfinite(X).all():
            raise ValueError(f"{who}: {name} contains NaN or infinity")
        return X

    def __call__(self, X, Y=None):
        """Gram matrix :math:`K_{ij} = k_n(x_i, y_j)`.

        Parameters
        ----------
        X : array_like, shape (n_x, d)
        Y : array_like, shape (n_y, d), optional
            Defaults to ``X``.

        Returns
        -------
        K : ndarray of float64, shape (n_x, n_y)
        """
        X = self._points(X, "X")
        Y = X if Y is None else self._points(Y, "Y")
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"ArcCosineKernel.__call__: X has {X.shape[1]} features but Y has "
                             f"{Y.shape[1]}")
        # norms by scaling (no overflow of the squares for huge entries)
        nx = np.linalg.norm(X, axis=1)
        ny = np.linalg.norm(Y, axis=1)
        ux = X / np.where(nx > 0, nx, 1.0)[:, None]
        uy = Y / np.where(ny > 0, ny, 1.0)[:, None]
        cos = np.clip(ux @ uy.T, -1.0, 1.0)
        theta = np.arccos(cos)
        self._refine_angles(theta, cos, ux, uy)
        K = _angular(self.order, theta) / math.pi
        if self.order:
            K *= np.outer(nx ** self.order, ny ** self.order)
        zero = (nx == 0)[:, None] | (ny == 0)[None, :]
        if zero.any():
            K[zero] = 0.0
        return K

    @staticmethod
    def _refine_angles(theta, cos, ux, uy, limit=0.99, chunk=1 << 16):
        r"""Near-parallel and near-antiparallel pairs (:math:`|\cos\theta| > 0.99`), where
        :math:`\arccos` of the rounded cosine loses half the digits: recompute
        :math:`\theta = 2\arcsin(\|u - v\|/2)` or :math:`\pi - 2\arcsin(\|u + v\|/2)`
        from the unit vectors' difference or sum (full relative precision), in place."""
        ii, jj = np.nonzero(np.abs(cos) > limit)
        for a in range(0, len(ii), chunk):
            i, j = ii[a:a + chunk], jj[a:a + chunk]
            par = cos[i, j] > 0
            diff = np.linalg.norm(ux[i] - np.where(par[:, None], uy[j], -uy[j]), axis=1)
            half = 2.0 * np.arcsin(np.minimum(diff / 2.0, 1.0))
            theta[i, j] = np.where(par, half, np.pi - half)

    def gram(self, X, Y=None):
        """Same as calling the kernel: the Gram matrix ``K[i, j] = k_n(X[i], Y[j])``."""
        return self(X, Y)

    def diag(self, X):
        r""":math:`k_n(x_i, x_i) = (2n - 1)!!\,\|x_i\|^{2n}` (1 for order 0, 0 for a zero row)
        without the Gram matrix."""
        X = self._points(X, "X")
        nx = np.linalg.norm(X, axis=1)
        return (1.0, 1.0, 3.0)[self.order] * nx ** (2 * self.order) * (nx > 0)
