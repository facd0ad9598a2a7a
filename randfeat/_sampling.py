r"""Frequency samplers beyond iid draws: orthogonal (ORF, ORF') and quasi-Monte Carlo.

:class:`randfeat.RandomFourierFeatures` draws its frequency matrix :math:`W` (one frequency per
row) with :func:`sample_frequencies`; ``sampling="iid"`` is the kernel's own sampler
(Rahimi & Recht 2007), the others are

``"orthogonal"`` — orthogonal random features (ORF; Yu et al., NIPS 2016, §3):

.. math:: W = \tfrac{1}{\sigma}\, S\, Q,

:math:`Q` a Haar-distributed orthogonal :math:`d\times d` matrix (QR of a Gaussian matrix,
with the signs of :math:`\operatorname{diag}(R)` moved into :math:`Q`, which makes it exactly
Haar; Mezzadri 2007), :math:`S` a diagonal of iid draws from the kernel's radial law
(:math:`\chi_d` for the Gaussian kernel), independent blocks stacked for more than :math:`d`
rows.  Every row is then marginally distributed as the kernel's spectral law (a uniform
direction times an independent radius), so the estimate is unbiased (Yu et al. Thm 1), and
rows of one block are exactly orthogonal, which lowers the variance (Yu et al. Thm 1, eq. 3).
Only radial (isotropic) kernels have such a law: Gaussian, Matérn, ball-sum.

``"orthogonal_unit"`` — ORF' (Yu et al. §3, Thm 2): :math:`S = \sqrt d\,I`, every row of length
:math:`\sqrt d/\sigma`.  Biased for the Gaussian kernel (it estimates a Bessel kernel; the bias
is :math:`O(z^4 e^{-z^2/2}/d)`), with still lower variance.  Gaussian kernel only.

``"qmc_sobol"``, ``"qmc_halton"`` — quasi-Monte Carlo frequencies (Yang, Sindhwani, Avron &
Mahoney, ICML 2014; Avron et al., JMLR 2016): scrambled Sobol' / Halton points
:math:`u_j \in (0, 1)^s` from :mod:`scipy.stats.qmc`, seeded by the caller's generator, mapped
through the inverse CDF of the spectral law — coordinate-wise for the product spectra
(Gaussian: normal; Laplacian: Cauchy; Cauchy kernel: Laplace) and as a Gaussian direction times
an inverse-CDF radius factor for the radial ones (Matérn: :math:`g\sqrt{2\nu/u}`,
:math:`u\sim\chi^2_{2\nu}`, :math:`s = d + 1`; ball-sum with ``t = 1``: uniform in the ball,
radius :math:`U^{1/D}`, :math:`s = D + 1`).  Scrambling makes every point uniform on the cube,
so the estimate is unbiased; the points are negatively dependent, so at low :math:`d` the Gram
error falls faster than :math:`D^{-1/2}`.  Sobol' points are best balanced when their number is
a power of two.

A sampler returns a float64 array ``(n, d)`` and consumes only the generator it is given, so the
same ``random_state`` gives the same frequencies (and float32 and float64 fits share them).
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
from scipy import special, stats
from scipy.stats import qmc

from randfeat._parallel import blas_limit
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
    ShiftInvariantKernel,
)

__all__ = ["SAMPLINGS", "haar_orthogonal", "orthogonal_frequencies", "qmc_frequencies",
           "sample_frequencies"]

SAMPLINGS = ("iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton")

_RADIAL_OK = "'gaussian', 'matern', 'ballsum' or an isotropic ShiftInvariantKernel instance"
_QMC_OK = ("'gaussian', 'laplacian', 'cauchy', 'matern' and 'ballsum' with t=1 (instances of "
           "GaussianKernel, LaplacianKernel, CauchyKernel, MaternKernel, BallSumKernel(t=1))")


def haar_orthogonal(d, rng, n_blocks=None):
    r"""Haar-distributed orthogonal ``d x d`` matrices (float64).

    QR of a standard Gaussian matrix, :math:`G = QR`, then :math:`Q \leftarrow Q
    \operatorname{diag}(\operatorname{sign} R_{ii})`: without the sign correction LAPACK's
    convention (non-negative or arbitrary signs on the diagonal of :math:`R`) makes :math:`Q`
    non-Haar (F. Mezzadri, "How to generate random matrices from the classical compact
    groups", Notices AMS 54, 2007).  The QR runs on one BLAS thread, so the result does not
    depend on the machine's thread settings.

    Returns one matrix of shape ``(d, d)``, or ``(n_blocks, d, d)`` independent ones (drawn
    from one ``(n_blocks, d, d)`` Gaussian array, factorised as a stack).
    """
    G = rng.standard_normal((1 if n_blocks is None else n_blocks, d, d))
    with blas_limit(1):
        Q, R = np.linalg.qr(G)
    s = np.sign(np.diagonal(R, axis1=1, axis2=2)).copy()
    s[s == 0] = 1.0
    Q *= s[:, None, :]
    return Q[0] if n_blocks is None else Q


def orthogonal_frequencies(kernel, n, d, rng, norm="radial"):
    r"""``n`` orthogonal random frequencies in :math:`\mathbb R^d` (ORF / ORF', Yu et al. 2016).

    Parameters
    ----------
    kernel : ShiftInvariantKernel
        An isotropic kernel (its ``sample_radius`` gives the row lengths, its ``sigma`` is in
        them).  ``norm="unit"`` needs the Gaussian kernel.
    n, d : int
        Number of frequencies (rows) and dimension.
    rng : numpy.random.Generator
    norm : {"radial", "unit"}
        ``"radial"``: ORF, row lengths iid from the kernel's radial law (unbiased).
        ``"unit"``: ORF', every row of length :math:`\sqrt d/\sigma` (biased, Yu et al. Thm 2).

    Returns
    -------
    W : ndarray of float64, shape (n, d)
        Rows ``b*d .. b*d + d - 1`` are the rows of block ``b``: exactly orthogonal to each other,
        independent across blocks; the last block is cut to ``n`` rows.

    Notes
    -----
    Random stream, in order: the ``(n_blocks, d, d)`` Gaussian array of the Q's, then (for
    ``"radial"``) the ``n`` radii in one call of ``kernel.sample_radius``.  Cost
    :math:`O(n d^2)` (one QR per block).
    """
    if norm not in ("radial", "unit"):
        raise ValueError(f"orthogonal_frequencies: norm must be 'radial' (ORF) or 'unit' (ORF'), "
                         f"got {norm!r}")
    _check_orthogonal_kernel(kernel, norm)
    n_blocks = -(-n // d) if n else 0
    W = haar_orthogonal(d, rng, n_blocks).reshape(n_blocks * d, d)[:n]
    if norm == "unit":
        return W * (math.sqrt(d) / kernel.sigma)
    radii = np.asarray(kernel.sample_radius(n, d, rng), dtype=np.float64)
    return W * radii[:, None]


def _check_orthogonal_kernel(kernel, norm):
    if norm == "unit":
        if not isinstance(kernel, GaussianKernel):
            raise ValueError(
                f"sampling='orthogonal_unit' (ORF', rows of length sqrt(d)/sigma) is defined for "
                f"the Gaussian kernel only, got {kernel!r}; use kernel='gaussian', or "
                f"sampling='orthogonal' (ORF with the kernel's radial law) for {_RADIAL_OK}")
        return
    if not getattr(kernel, "isotropic", False):
        raise ValueError(
            f"sampling='orthogonal' needs a radial (isotropic) kernel, whose spectral law is a "
            f"uniform direction times a radius, got {kernel!r} (a product kernel: its spectrum "
            f"is not spherically symmetric, so orthogonal rows would be biased). Kernels that "
            f"work: {_RADIAL_OK}; for this kernel use sampling='iid' or a QMC sampling "
            "('qmc_sobol', 'qmc_halton')")


def _qmc_engine(method, s, rng):
    """Scrambled Sobol' or Halton engine of dimension ``s`` seeded from ``rng``."""
    cls = qmc.Sobol if method == "sobol" else qmc.Halton
    # scipy >= 1.15 takes the generator as ``rng``; older releases as ``seed``
    key = "rng" if "rng" in inspect.signature(cls).parameters else "seed"
    return cls(s, scramble=True, **{key: rng})


def _qmc_uniforms(method, n, s, rng):
    """``n`` scrambled points in the open cube (0, 1)^s (float64)."""
    if n == 0:
        return np.empty((0, s))
    eng = _qmc_engine(method, s, rng)
    with warnings.catch_warnings():
        # Sobol' balance is best at powers of two; other n are valid (first n points)
        warnings.filterwarnings("ignore", message=".*balance properties of Sobol.*")
        u = eng.random(n)
    tiny = 2.0 ** -53
    return np.clip(u, tiny, 1.0 - tiny)  # a scrambled point is exactly 0 with probability 2^-52


def qmc_frequencies(kernel, n, d, rng, method="sobol"):
    r"""``n`` quasi-Monte Carlo frequencies in :math:`\mathbb R^d` (Yang et al. 2014).

    Parameters
    ----------
    kernel : ShiftInvariantKernel
        Gaussian, Laplacian, Cauchy, Matérn or ball-sum with ``t = 1`` (the spectral laws with
        an inverse CDF; see the module docstring).
    n, d : int
    rng : numpy.random.Generator
        Seeds the scrambling (one engine per call).
    method : {"sobol", "halton"}

    Returns
    -------
    W : ndarray of float64, shape (n, d)
    """
    if method not in ("sobol", "halton"):
        raise ValueError(f"qmc_frequencies: method must be 'sobol' or 'halton', got {method!r}")
    sig = kernel.sigma
    if type(kernel) in (GaussianKernel, LaplacianKernel, CauchyKernel):
        u = _qmc_uniforms(method, n, d, rng)
        if isinstance(kernel, GaussianKernel):
            w = special.ndtri(u)
        elif isinstance(kernel, LaplacianKernel):  # Cauchy(0, 1) inverse CDF
            w = np.tan(np.pi * (u - 0.5))
        else:                                      # Laplace(0, 1) inverse CDF
            w = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        return w / sig
    if type(kernel) is MaternKernel:
        u = _qmc_uniforms(method, n, d + 1, rng)
        g = special.ndtri(u[:, :d])
        c2 = stats.chi2.ppf(u[:, d], 2.0 * kernel.nu)
        return g * (np.sqrt(2.0 * kernel.nu / c2) / sig)[:, None]
    if type(kernel) is BallSumKernel and kernel.t == 1:
        D = kernel.dim if kernel.dim is not None else d
        if D < d:
            kernel.sample_radius(1, d, rng)  # raises the kernel's own dimension error
        u = _qmc_uniforms(method, n, D + 1, rng)
        g = special.ndtri(u[:, :D])
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        rad = u[:, D] ** (1.0 / D)
        return (g * (rad / sig)[:, None])[:, :d]
    raise ValueError(
        f"QMC sampling needs the inverse CDF of the kernel's spectral law, which randfeat has for "
        f"{_QMC_OK}; got {kernel!r}. Use sampling='iid' (or 'orthogonal' for a radial kernel)")


def sample_frequencies(kernel, n, d, rng, sampling="iid"):
    """Dispatch: ``n`` frequencies of ``kernel`` in dimension ``d`` drawn by ``sampling``.

    ``sampling`` is one of :data:`SAMPLINGS`; ``"iid"`` is ``kernel.sample(n, d, rng)``.
    """
    if not isinstance(kernel, ShiftInvariantKernel):
        raise TypeError(f"sample_frequencies: kernel must be a ShiftInvariantKernel, got "
                        f"{kernel!r}")
    if sampling == "iid":
        return kernel.sample(n, d, rng)
    if sampling == "orthogonal":
        return orthogonal_frequencies(kernel, n, d, rng, norm="radial")
    if sampling == "orthogonal_unit":
        return orthogonal_frequencies(kernel, n, d, rng, norm="unit")
    if sampling == "qmc_sobol":
        return qmc_frequencies(kernel, n, d, rng, method="sobol")
    if sampling == "qmc_halton":
        return qmc_frequencies(kernel, n, d, rng, method="halton")
    raise ValueError(f"sampling must be one of {list(SAMPLINGS)}, got {sampling!r}")
