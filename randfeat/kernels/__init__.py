r"""Exact shift-invariant kernels and samplers of their spectral densities.

Every kernel here is normalised, :math:`k(0) = 1`, and is the characteristic function of a
probability law :math:`p` on :math:`\mathbb R^d` (Bochner's theorem),

.. math::

    k(\Delta) = \int p(\omega)\, e^{i\omega^\top\Delta}\, d\omega
              = \mathbb E_{\omega\sim p}\big[\cos(\omega^\top \Delta)\big],
    \qquad \Delta = x - y,

which is what random Fourier features (Rahimi & Recht 2007, §3) and Fastfood (Le, Sarlós &
Smola 2013) sample from.  These classes are the ground truth that the feature maps, the tests
and :mod:`analysis` compare against.

Bandwidth convention
--------------------
One convention for all kernels: ``sigma`` is a *length scale*, :math:`\Delta \to \Delta/\sigma`
and :math:`\omega \to \omega/\sigma`.  For the Gaussian kernel

.. math:: k(\Delta) = \exp\!\big(-\|\Delta\|^2/(2\sigma^2)\big) = \exp(-\gamma\|\Delta\|^2),
          \qquad \gamma = \frac{1}{2\sigma^2},

so scikit-learn users with ``RBFSampler(gamma=g)`` / ``rbf_kernel(gamma=g)`` should pass
``sigma = 1/sqrt(2 g)``; the frequencies are then :math:`\omega \sim N(0, \sigma^{-2} I) =
N(0, 2\gamma I)` (THEORY.md §1 and pitfall §6.1).

Kernels
-------
One hierarchy (:class:`ShiftInvariantKernel` at the root) and one registry of names
(:func:`get_kernel`, :data:`KERNEL_NAMES`, :func:`kernel_names`) serve every feature map.  The
capability flags say which maps can use a kernel: ``spectral`` (random Fourier features),
``isotropic`` (Fastfood), ``binnable`` (random binning: separable, convex profile).

========================= ============================================== ================= ====
class (name)              :math:`k(\Delta)`                              frequency law     maps
========================= ============================================== ================= ====
GaussianKernel            :math:`\exp(-\|\Delta\|_2^2/(2\sigma^2))`      N(0, σ⁻²I)        RFF, FF
("gaussian", "rbf")
LaplacianKernel           :math:`\exp(-\|\Delta\|_1/\sigma)`             Cauchy(0,1/σ)     RFF, bin
("laplacian")
CauchyKernel ("cauchy")   :math:`\prod_j 1/(1+\Delta_j^2/\sigma^2)`      Laplace           RFF
MaternKernel ("matern")   Matérn ν ∈ {1/2, 3/2, 5/2}, length scale σ     Student-t         RFF, FF
BallSumKernel ("ballsum") :math:`[\Gamma(d/2+1)(2/r)^{d/2}J_{d/2}(r)]^t` ``|ξ_1+…+ξ_t|/σ`` RFF, FF
InversePowerBinningKernel :math:`\prod_j (1 + |\Delta_j|/\sigma)^{-a}`   —                 bin
("inverse_power")
StretchedExponential...   :math:`\prod_j \exp(-(|\Delta_j|/\sigma)^q)`   —                 bin
("stretched_exponential")
CustomBinningKernel       user pitch law                                 —                 bin
========================= ============================================== ================= ====

A kernel given **by name** takes the estimator's ``sigma``; a kernel **instance** carries its
own ``sigma``, and giving both is an error (see :func:`get_kernel`).

Examples
--------
>>> import numpy as np
>>> from randfeat.kernels import GaussianKernel, get_kernel
>>> kern = get_kernel("gaussian", sigma=2.0)
>>> float(kern.k(np.array([2.0, 0.0])))      # exp(-4 / 8)
0.6065306597126334
>>> W = kern.sample(200_000, 2, np.random.default_rng(0))
>>> bool(abs(np.cos(W @ np.array([2.0, 0.0])).mean() - 0.6065) < 0.01)
True
"""

from randfeat.kernels._arccos import ArcCosineKernel
from randfeat.kernels._base import BinningKernel, ShiftInvariantKernel
from randfeat.kernels._convex import (
    CustomBinningKernel,
    InversePowerBinningKernel,
    StretchedExponentialBinningKernel,
)
from randfeat.kernels._registry import KERNEL_NAMES, get_kernel, kernel_names
from randfeat.kernels._spectral import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
)

__all__ = [
    "KERNEL_NAMES",
    "ArcCosineKernel",
    "BallSumKernel",
    "BinningKernel",
    "CauchyKernel",
    "CustomBinningKernel",
    "GaussianKernel",
    "InversePowerBinningKernel",
    "LaplacianKernel",
    "MaternKernel",
    "ShiftInvariantKernel",
    "StretchedExponentialBinningKernel",
    "get_kernel",
    "kernel_names",
]
