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

import functools
import inspect
import math

import numpy as np
from scipy import stats
from scipy.stats import qmc

from randfeat._lib import _orthogonal as _ok
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


def _haar_count(n, d):
    """Number of normals :func:`_haar_fill` consumes for ``n`` rows in dimension ``d``."""
    full, rem = divmod(n, d)
    return full * (d * (d + 1) // 2) + rem * d - rem * (rem - 1) // 2


def _haar_fill(n, d, g, scale, n_threads=1):
    """``(n, d)`` rows: Haar orthogonal blocks of ``d`` rows built from the normals ``g``, row
    ``i`` times ``scale[i]`` (compiled kernel ``randfeat._lib._orthogonal.haar_rows``)."""
    W = np.empty((n, d))
    work = np.empty(_ok.haar_work_size(n, d, n_threads))
    _ok.haar_rows(g, np.ascontiguousarray(scale, dtype=np.float64), W, work, n_threads)
    return W


def haar_orthogonal(d, rng, n_blocks=None, n_threads=1):
    r"""Haar-distributed orthogonal ``d x d`` matrices (float64).

    Householder vectors drawn directly (Stewart 1980): the QR factorisation of a standard
    Gaussian matrix :math:`G` builds its :math:`k`-th reflector from the first column of a
    trailing block of the partly reduced :math:`G`, which is again a standard Gaussian
    vector of length :math:`d - k + 1` independent of the earlier reflectors, so the reflectors
    are drawn from fresh Gaussian vectors and the compiled kernel
    ``randfeat._lib._orthogonal.haar_rows`` forms :math:`Q = H_1 \cdots H_d`, then
    :math:`Q \leftarrow Q \operatorname{diag}(\operatorname{sign} R_{kk})`:
    the same law as the QR of :math:`G` with the sign correction, which is exactly Haar
    (F. Mezzadri, "How to generate random matrices from the classical compact groups", Notices
    AMS 54, 2007; without the correction LAPACK's sign convention makes :math:`Q` non-Haar),
    at half the cost: :math:`\tfrac43 d^3` flops and
    :math:`d(d+1)/2` normals per matrix instead of :math:`\tfrac83 d^3` and :math:`d^2`.
    The rows of each returned matrix are the columns of that :math:`Q` (the transpose of a
    Haar matrix is Haar).  No BLAS is used; the columns are spread over up to ``n_threads``
    OpenMP threads, each in one fixed order of operations, so the result does not depend on
    ``n_threads`` or on any BLAS setting.

    Returns one matrix of shape ``(d, d)``, or ``(n_blocks, d, d)`` independent ones (from one
    call of ``rng.standard_normal``).
    """
    nb = 1 if n_blocks is None else n_blocks
    n = nb * d
    Q = _haar_fill(n, d, rng.standard_normal(_haar_count(n, d)), np.ones(n), n_threads)
    Q = Q.reshape(nb, d, d)
    return Q[0] if n_blocks is None else Q


def orthogonal_frequencies(kernel, n, d, rng, norm="radial", n_threads=1):
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
    n_threads : int, default 1
        OpenMP threads for the orthogonal blocks (the result is the same bits for any count).

    Returns
    -------
    W : ndarray of float64, shape (n, d)
        Rows ``b*d .. b*d + d - 1`` are the rows of block ``b``: exactly orthogonal to each other,
        independent across blocks; the last block is cut to ``n`` rows.

    Notes
    -----
    Random stream, in order: the normals of the Householder vectors of all blocks in one call
    (see :func:`haar_orthogonal`; a block cut to :math:`m` rows needs only its first :math:`m`
    reflectors), then (for ``"radial"``) the ``n`` radii in one call of
    ``kernel.sample_radius``.  Cost :math:`\tfrac43 n d^2` flops (one Householder accumulation per
    block) and about :math:`n d / 2` normals.
    """
    if norm not in ("radial", "unit"):
        raise ValueError(f"orthogonal_frequencies: norm must be 'radial' (ORF) or 'unit' (ORF'), "
                         f"got {norm!r}")
    _check_orthogonal_kernel(kernel, norm)
    g = rng.standard_normal(_haar_count(n, d))
    if norm == "unit":
        scale = np.full(n, math.sqrt(d) / kernel.sigma)
    else:
        scale = kernel.sample_radius(n, d, rng)
    return _haar_fill(n, d, g, scale, n_threads)


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
    return cls(s, scramble=True, **{_seed_key(cls): rng})


@functools.lru_cache(maxsize=None)
def _seed_key(cls):
    # scipy >= 1.15 takes the generator as ``rng``; older releases as ``seed``
    return "rng" if "rng" in inspect.signature(cls).parameters else "seed"


_SOBOL_BITS = 30


@functools.lru_cache(maxsize=16)
def _sobol_directions(s):
    """Direction numbers (bits x s, uint32; row k: number k of every coordinate) of the
    unscrambled Sobol' sequence of :class:`scipy.stats.qmc.Sobol` in dimension ``s``, read
    through its public API: in Gray-code order point 2^k is v_k XOR v_{k-1} (point 1 is v_0)."""
    eng = qmc.Sobol(s, scramble=False, bits=_SOBOL_BITS)
    v = np.empty((_SOBOL_BITS, s), dtype=np.uint32)
    for k in range(_SOBOL_BITS):
        eng.reset()
        eng.fast_forward(2 ** k)
        x = np.rint(eng.random(1)[0] * 2.0 ** _SOBOL_BITS).astype(np.uint32)
        v[k] = x ^ v[k - 1] if k else x
    v.flags.writeable = False
    return v


def _sobol_uniforms(n, s, rng):
    """``n`` scrambled Sobol' points in (0, 1)^s: the direction numbers of scipy's sequence,
    linear matrix scrambling (Matoušek 1998; a random lower-triangular binary matrix with unit
    diagonal per coordinate) and a random digital shift -- the scrambling of
    ``scipy.stats.qmc.Sobol(scramble=True)`` -- in a compiled loop, each point at the centre of
    its cell of width 2^-30.  Random stream: the matrices' columns ((s, 30) integers below
    2^30), then the shifts (s integers)."""
    bits = _SOBOL_BITS
    if n > 2 ** bits:
        raise ValueError(f"QMC sampling: at most 2**{bits} Sobol' points per fit, got n={n}")
    v = _sobol_directions(s)
    cols = rng.integers(0, 2 ** bits, size=(s, bits), dtype=np.uint32)
    shift = rng.integers(0, 2 ** bits, size=s, dtype=np.uint32)
    pos = bits - 1 - np.arange(bits, dtype=np.uint32)        # bit of binary digit b (MSB first)
    one = np.uint32(1)
    cols &= (one << pos) - one                               # digit b feeds digits below it...
    cols |= one << pos                                       # ...and itself (unit diagonal)
    sv = np.zeros_like(v)
    for b in range(bits):
        sv ^= ((v >> pos[b]) & one) * cols[:, b]
    out = np.empty((n, s))
    _ok.sobol_points(sv, shift, bits, out)
    return out


def _qmc_uniforms(method, n, s, rng):
    """``n`` scrambled points of dimension ``s`` (float64) and the offset that puts them in
    the open cube (0, 1)^s: Sobol' points come at the centres of their 2^-30 cells (offset 0,
    see :func:`_sobol_uniforms`); Halton points (scipy.stats.qmc), sums of randomly permuted
    digits, are used as drawn (clipped to [2^-53, 1 - 2^-53])."""
    if n == 0:
        return np.empty((0, s)), 0.0
    if method == "sobol":
        return _sobol_uniforms(n, s, rng), 0.0
    eng = _qmc_engine(method, s, rng)
    return np.ascontiguousarray(eng.random(n)), 0.0   # Halton's points come in Fortran order


_TINY = 2.0 ** -53


def _ndtri(u, shift, mult, ncols=None):
    """``ndtri(clip(u[:, :ncols] + shift)) * mult[:, None]`` in one compiled pass (Wichura's
    AS241, relative error ~1e-16; ``randfeat._lib._orthogonal.ndtri_rows``); writes into ``u``
    when all its columns are mapped."""
    n, s = u.shape
    ncols = s if ncols is None else ncols
    out = u if ncols == s else np.empty((n, ncols))
    mult = np.broadcast_to(np.asarray(mult, dtype=np.float64), (n,))
    _ok.ndtri_rows(u, np.ascontiguousarray(mult), float(shift), _TINY, out)
    return out


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

    Notes
    -----
    The normal quantile is Wichura's AS241 (relative error about 1e-16), fused with the
    scaling by :math:`1/\sigma`; scrambled Sobol' points are taken at the centres of their
    :math:`2^{-30}` cells (see :func:`_qmc_uniforms`).
    """
    if method not in ("sobol", "halton"):
        raise ValueError(f"qmc_frequencies: method must be 'sobol' or 'halton', got {method!r}")
    sig = kernel.sigma
    if type(kernel) in (GaussianKernel, LaplacianKernel, CauchyKernel):
        u, shift = _qmc_uniforms(method, n, d, rng)
        if isinstance(kernel, GaussianKernel):
            return _ndtri(u, shift, 1.0 / sig)
        u = np.clip(u + shift, _TINY, 1.0 - _TINY)
        if isinstance(kernel, LaplacianKernel):    # Cauchy(0, 1) inverse CDF
            w = np.tan(np.pi * (u - 0.5))
        else:                                      # Laplace(0, 1) inverse CDF
            w = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
        return w / sig
    if type(kernel) is MaternKernel:
        u, shift = _qmc_uniforms(method, n, d + 1, rng)
        c2 = stats.chi2.ppf(np.clip(u[:, d] + shift, _TINY, 1.0 - _TINY), 2.0 * kernel.nu)
        return _ndtri(u, shift, np.sqrt(2.0 * kernel.nu / c2) / sig, d)
    if type(kernel) is BallSumKernel and kernel.t == 1:
        D = kernel.dim if kernel.dim is not None else d
        if D < d:
            kernel.sample_radius(1, d, rng)  # raises the kernel's own dimension error
        u, shift = _qmc_uniforms(method, n, D + 1, rng)
        rad = np.clip(u[:, D] + shift, _TINY, 1.0 - _TINY) ** (1.0 / D)
        g = _ndtri(u, shift, 1.0, D)
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        return (g * (rad / sig)[:, None])[:, :d]
    raise ValueError(
        f"QMC sampling needs the inverse CDF of the kernel's spectral law, which randfeat has for "
        f"{_QMC_OK}; got {kernel!r}. Use sampling='iid' (or 'orthogonal' for a radial kernel)")


def sample_frequencies(kernel, n, d, rng, sampling="iid", n_threads=1):
    """Dispatch: ``n`` frequencies of ``kernel`` in dimension ``d`` drawn by ``sampling``.

    ``sampling`` is one of :data:`SAMPLINGS`; ``"iid"`` is ``kernel.sample(n, d, rng)``.
    ``n_threads`` reaches the orthogonal samplers (same bits for any count).
    """
    if not isinstance(kernel, ShiftInvariantKernel):
        raise TypeError(f"sample_frequencies: kernel must be a ShiftInvariantKernel, got "
                        f"{kernel!r}")
    if sampling == "iid":
        return kernel.sample(n, d, rng)
    if sampling == "orthogonal":
        return orthogonal_frequencies(kernel, n, d, rng, "radial", n_threads)
    if sampling == "orthogonal_unit":
        return orthogonal_frequencies(kernel, n, d, rng, "unit", n_threads)
    if sampling == "qmc_sobol":
        return qmc_frequencies(kernel, n, d, rng, method="sobol")
    if sampling == "qmc_halton":
        return qmc_frequencies(kernel, n, d, rng, method="halton")
    raise ValueError(f"sampling must be one of {list(SAMPLINGS)}, got {sampling!r}")
