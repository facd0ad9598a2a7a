r"""Random Fourier features (Rahimi & Recht 2007, Algorithm 1) as a scikit-learn transformer."""

from __future__ import annotations

import math
import numbers
import os

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from randfeat._base import RandomFeaturesBase, _odd_paired, divide_columns
from randfeat._lib import _fourier
from randfeat._parallel import blas_threads
from randfeat._sampling import (
    DATA_SAMPLINGS,
    SAMPLINGS,
    check_frequencies,
    leverage_frequencies,
    sample_frequencies,
)
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    SIGMA_CONSTRAINT,
    check_allocation,
)
from randfeat.kernels import ShiftInvariantKernel

__all__ = ["RandomFourierFeatures"]

# The samplings whose frequencies take ARD length scales by a column-wise division: those that
# draw from the kernel's spectral law without reading X, and "leverage", whose density is then
# that of the unit-scale kernel on the rows X / sigma (omega = omega_1 / sigma changes variables
# in the leverage function; the importance weights p / q are invariant).
_ARD_SAMPLINGS = frozenset({"iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton",
                            "leverage"})

# Upper bound on the number of gemm blocks of one transform (see randfeat/_lib/_fourier.pyx):
# fixed per machine so that the output never depends on the number of threads.
_MAX_BLOCKS = max(1, min(8, os.cpu_count() or 1))

# Probes of the BLAS (n, m, d, row cut, column cut): edge tiles in both dimensions, several
# K panels (d > 512), the small-matrix path and the large one, and a product whose blocks fall
# below the small-matrix size while the whole is above it.
_CUT_PROBES = ((33, 2, 1, 5, 1), (67, 83, 37, 16, 48), (2000, 40, 20, 250, 17),
               (300, 350, 300, 150, 177), (130, 1000, 515, 61, 512))
_CUT_INVARIANT = {}


def _cut_invariant(dtype):
    """Whether this process's single-threaded BLAS gemm gives bit-identical products however
    they are cut (:func:`randfeat._lib._fourier.gemm_cut_invariant` on every probe; checked
    once per dtype, at most a few milliseconds: the probes run cheapest first and stop at the
    first that differs).  Then the number of gemm blocks of the fused path may
    follow ``n_threads`` without changing the output: no block is cut that no thread will run
    in parallel.  Called only while the BLAS is single-threaded (the fused path), so the probe
    measures the gemm that path runs; it never changes the BLAS's thread count."""
    key = np.dtype(dtype).char
    if key not in _CUT_INVARIANT:
        rng = np.random.default_rng(20071203)
        ok = True
        for n, m, d, row_cut, col_cut in _CUT_PROBES:  # cheapest first; stop at a failure
            X = rng.random((n, d), dtype=np.float64).astype(dtype) - 0.5
            W = rng.random((m, d), dtype=np.float64).astype(dtype) - 0.5
            if not _fourier.gemm_cut_invariant(X, W, row_cut, col_cut):
                ok = False
                break
        _CUT_INVARIANT[key] = ok
    return _CUT_INVARIANT[key]


def _max_blocks(n, m, d, dtype, n_threads):
    """Gemm blocks of one transform: ``_MAX_BLOCKS`` (fixed for the machine), or only as many as
    there are threads when the BLAS is cut-invariant for this dtype (same output either way)."""
    if n_threads >= _MAX_BLOCKS or not _fourier.is_blocked(n, m, d):
        return _MAX_BLOCKS  # all blocks used, or one block whatever max_blocks is
    return max(1, n_threads) if _cut_invariant(dtype) else _MAX_BLOCKS


class RandomFourierFeatures(RandomFeaturesBase):
    r"""Random Fourier features for a shift-invariant kernel (Rahimi & Recht 2007, Algorithm 1).

    Maps :math:`x \in \mathbb R^d` to :math:`z(x) \in \mathbb R^{D}` (``D = n_components``)
    with :math:`\mathbb E[z(x)^\top z(y)] = k(x - y)` for the chosen kernel, using Bochner's
    theorem :math:`k(\Delta) = \mathbb E_{\omega\sim p}[\cos(\omega^\top\Delta)]` (RR §3).
    Two real feature maps are available (THEORY §2.2):

    ``features="paired"`` (RR's Algorithm 1), for even :math:`D`, :math:`m = D/2` frequencies
    :math:`\omega_1..\omega_m \sim p`:

    .. math::

        z(x) = \sqrt{\tfrac{1}{m}}\,\big[\cos(\omega_1^\top x), \dots, \cos(\omega_m^\top x),
               \sin(\omega_1^\top x), \dots, \sin(\omega_m^\top x)\big],
        \qquad z(x)^\top z(y) = \frac1m \sum_{j=1}^m \cos\big(\omega_j^\top (x-y)\big).

    For odd :math:`D = 2m + 1` the last column is one phase-shifted feature
    :math:`\sqrt{2/D}\cos(\omega_0^\top x + b_0)`, :math:`b_0 \sim U[0, 2\pi)`, and every column
    is scaled by :math:`\sqrt{2/D}`: the estimate
    :math:`\frac2D\sum_{j=1}^m\cos(\omega_j^\top\Delta) + \frac2D\cos(\omega_0^\top x + b_0)
    \cos(\omega_0^\top y + b_0)` has mean :math:`\frac{2m}{D}k + \frac1D k = k`, exactly
    unbiased.

    ``features="phase"`` (the phase-shift map, as in scikit-learn's ``RBFSampler``),
    :math:`D` frequencies and offsets :math:`b_j \sim U[0, 2\pi)`:

    .. math:: z(x) = \sqrt{\tfrac{2}{D}}\,\big[\cos(\omega_j^\top x + b_j)\big]_{j=1}^{D}.

    Both are unbiased.  At a fixed pair, with :math:`k = k(\Delta)` and :math:`k_2 = k(2\Delta)`,
    the estimate :math:`z(x)^\top z(y)` has variance (THEORY §2.3)

    .. math::

        \operatorname{Var}_\text{paired} = \frac{1 + k_2 - 2k^2}{D}, \qquad
        \operatorname{Var}_\text{phase} = \frac{1 + k_2/2 - k^2}{D},

    and for odd :math:`D` with the paired map
    :math:`\operatorname{Var} = [(D - 1)(1 + k_2 - 2k^2) + (1 + k_2/2 - k^2)]/D^2`,
    so at equal output width the paired map is better by :math:`(k^2 - k_2/2)/D`, which is
    positive for the Gaussian and Laplacian kernels at every :math:`\Delta \ne 0` (Sutherland &
    Schneider 2015) but can be negative for other kernels.  The phase map does not depend on
    :math:`\Delta` alone and its estimate at :math:`x = y` is not 1.

    Parameters
    ----------
    n_components : int, default 100
        Output width :math:`D` (exactly this many columns; any :math:`D \ge 1`).
    kernel : str or ShiftInvariantKernel, default "gaussian"
        The kernel to approximate: a name of :func:`randfeat.kernels.get_kernel` that has a
        spectral sampler (``"gaussian"`` or its alias ``"rbf"``, ``"laplacian"``, ``"cauchy"``,
        ``"matern"`` (ν = 3/2), ``"ballsum"`` (t = 1)), or a kernel instance such as
        ``MaternKernel(sigma, nu=2.5)``, which carries its own ``sigma`` and parameters.
    sigma : float, array of shape (n_features,), "scale", "median" or None, default None
        Length scale of a kernel given by name, > 0 (None: 1.0).  For the Gaussian kernel
        :math:`k = \exp(-\|\Delta\|^2/(2\sigma^2))`; scikit-learn's ``gamma`` is
        :math:`1/(2\sigma^2)`, i.e. ``sigma = 1/sqrt(2*gamma)`` reproduces ``RBFSampler(gamma)``'s
        kernel.  An array gives one length scale per feature (ARD):
        :math:`k(x, y) = k_1((x - y)/\sigma)` coordinate-wise, with the frequencies of the
        unit-scale kernel divided by :math:`\sigma_j` column-wise (every ``sampling``; no cost
        in ``transform``).  ``"scale"``: the σ of scikit-learn's ``gamma="scale"``,
        :math:`\sqrt{d\,\operatorname{Var}(X)/2}`; ``"median"``: the median distance between
        rows of a seeded subsample of X, L1 for the Laplacian, Euclidean otherwise (see
        :func:`randfeat._base.data_sigma`).  With a kernel instance ``sigma`` must stay None
        (ValueError otherwise; an instance may carry ARD scales itself).
    kernel_params : dict or None, default None
        Extra parameters of a kernel given by name, e.g. ``{"nu": 2.5}`` for ``"matern"`` or
        ``{"t": 2}`` for ``"ballsum"`` (the one way of every randfeat estimator; a kernel
        instance carries its own).
    features : {"paired", "phase"}, default "paired"
        Which real feature map (above).
    sampling : {"iid", "orthogonal", "orthogonal_unit", "qmc_sobol", "qmc_halton"}, \
default "iid"
        How the frequencies are drawn (see :mod:`randfeat._sampling`).  ``"iid"``: independent
        draws from the spectral law (RR 2007).  ``"orthogonal"``: orthogonal random features
        (Yu et al., NIPS 2016): :math:`W = \sigma^{-1} S Q`, Haar-orthogonal d x d blocks times
        radii from the kernel's radial law; unbiased, lower variance; radial kernels only
        (Gaussian, Matérn, ball-sum).  ``"orthogonal_unit"``: ORF', every row of length
        :math:`\sqrt d/\sigma` (Gaussian kernel only; slightly biased, lower variance still).
        ``"qmc_sobol"`` / ``"qmc_halton"``: scrambled Sobol' / Halton points through the inverse
        CDF of the spectral law (Yang et al., ICML 2014); Gaussian, Laplacian, Cauchy, Matérn,
        ball-sum with t = 1.  The phase offsets of ``features="phase"`` stay iid uniform.
        ``"leverage"``: leverage-weighted RFF (Li, Ton, Oglic & Sejdinovic, JMLR 2021), drawn
        from the ridge leverage density of the rows of ``X`` at fit (``ridge``), each feature
        times :math:`\sqrt{w_j}`, :math:`w_j = p(\omega_j)/q(\omega_j)` its importance weight
        (``frequency_weights_``), so the estimate stays exactly unbiased; exact leverage
        density by quadrature for d <= 2 and the Gaussian, Laplacian or Cauchy kernel, a
        resampled pool otherwise (:func:`randfeat._sampling.leverage_frequencies`).  With ARD
        length scales: the unit-scale kernel's density on the rows :math:`X/\sigma`, the
        frequencies divided by :math:`\sigma` (the same law, by the change of variables
        :math:`\omega = \omega_1/\sigma`).  Not with a dask array at fit (the density needs
        the rows).
    ridge : float or "auto", default "auto"
        :math:`\lambda` of the leverage density (``sampling="leverage"`` only), in the units of
        the kernel matrix :math:`K` of the fitted rows (:math:`n\alpha` for ridge regression
        with per-sample penalty :math:`\alpha`); "auto": Musco & Musco's rule, as
        ``randfeat.Nystroem``.
    random_state : int, numpy Generator, SeedSequence, BitGenerator, RandomState or None
        Seed of the frequencies (and offsets).  The parameters are drawn in float64 and cast, so
        float32 and float64 fits with the same seed share one random stream.
    n_threads : int or None, default None
        Threads of randfeat's compiled kernels (OpenMP).  None: all available CPUs; -1
        likewise, -2 all but one.  The BLAS's threads are not randfeat's: they stay what the
        process gives them (set them with ``threadpoolctl.threadpool_limits`` or
        ``OPENBLAS_NUM_THREADS``, as in scikit-learn); randfeat never changes them.  For a
        given BLAS configuration the output is bit-identical for any ``n_threads``.

    Attributes
    ----------
    kernel_ : ShiftInvariantKernel
        The resolved kernel.
    sigma_ : float or ndarray of shape (n_features_in_,)
        Its length scale (``kernel_.sigma``: the number given, the data-driven value, or the
        instance's own); a read-only float64 array for ARD length scales.
    frequencies_ : ndarray of shape (n_frequencies, n_features_in_)
        Frequencies :math:`\omega_j` as rows, in the dtype of the fitted data: the projections
        are ``X @ frequencies_.T``.  ``n_frequencies`` is ``n_components // 2`` for an even
        ``"paired"`` map, ``n_components // 2 + 1`` for an odd one (the last row is the
        phase-shifted :math:`\omega_0`), and ``n_components`` for ``"phase"``.  (Not named
        ``random_weights_``: scikit-learn's ``RBFSampler.random_weights_`` is the transpose,
        (n_features, n_components).)
    offsets_ : ndarray of shape (n_offsets,) or None
        Phase offsets :math:`b_j` of the phase-shifted features: ``(n_components,)`` for
        ``"phase"``, ``(1,)`` (that of the last frequency) for an odd ``"paired"`` map, None for
        an even one.
    frequency_weights_ : ndarray of float64, shape (n_frequencies,) or None
        ``sampling="leverage"``: the importance weights :math:`w_j` (the features of frequency
        :math:`j` are scaled by :math:`\sqrt{w_j}`; 1 for the phase-shifted frequency of an odd
        paired width, drawn from :math:`p`); None for the other samplings.
    leverage_ridge_, statistical_dimension_ : float or None
        ``sampling="leverage"``: the :math:`\lambda` used (units of the fitted rows' kernel
        matrix) and :math:`s_\lambda = \operatorname{tr} K(K+\lambda I)^{-1}` of the rows used.
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of str
        Input feature names, when ``X`` had string column names.

    See Also
    --------
    randfeat.kernels : the exact kernels and their spectral samplers.
    sklearn.kernel_approximation.RBFSampler : the phase map for the Gaussian kernel.

    Notes
    -----
    Cost per sample: one BLAS matrix product with :math:`W^\top` (:math:`O(d\,m)`, :math:`m`
    frequencies — half of RBFSampler's work at equal width for the paired map) and one fused
    in-place cos/sin pass in compiled code (no temporaries).

    **Threads.**  The larger of the two dimensions (samples or frequencies) is cut into at
    most ``min(8, os.cpu_count())`` blocks of at least 512 (one block for small jobs).  With
    ``n_threads > 1``, how they are run depends on the BLAS's thread count, which randfeat
    reads (threadpoolctl) and never changes.  When every loaded BLAS is single-threaded (e.g.
    inside ``threadpool_limits(1)``, or with ``OPENBLAS_NUM_THREADS=1``) the blocks are
    processed in one parallel region of ``n_threads`` threads, each by a BLAS call followed by
    the cos/sin while the block is in cache.  Otherwise, and always with ``n_threads=1``
    (without reading the BLAS's thread count), the blocks are projected one after another by
    BLAS calls from the calling thread with the BLAS's own threads (more calls for very large
    jobs, so that Ctrl-C is noticed between them), and ``n_threads`` threads run the cos/sin
    pass.  The output is bit-identical for any ``n_threads``: the blocks depend on the array
    shapes and the machine's CPU count only (under a single-threaded BLAS both ways make the
    same gemm calls), or, in the parallel single-threaded-BLAS case, when the BLAS's gemm is
    found at run time (once per process and dtype, on probe products) to give the same bits
    however a product is cut, there are only as many blocks as threads.  **Not across batches:**
    a row's features may differ in the last bits with the other rows transformed with it
    (``transform(X)[i]`` and ``transform(X[i:i + 1])``): the BLAS picks its gemm kernel by the
    shape of the product (OpenBLAS on AVX-512: a matrix-vector kernel for one row, a small-matrix
    kernel when rows x frequencies x d <= 1e6 and d >= 32), each summing a row's d products in its
    own order; the difference is within the rounding of the two projections (the bound of the
    sparse input below).  :mod:`randfeat.dask` computes rows in fixed tiles, so its transform is
    bit-identical for any chunking; Fastfood, SORF and random binning are row-wise, bit-identical
    in any batch.  A different BLAS
    thread count, BLAS or CPU may change the output by an ulp (BLAS picks its kernels and its
    split of the work by thread count, CPU and shape).  Several Python threads may transform
    at once; each gets the bits it would get alone.  Timings are in ``benchmarks/README.md``.

    float32 input is computed in float32 (the projection), the trigonometric functions
    internally in double precision for large arguments; like every float32 RFF, very large
    :math:`|\omega^\top x|` lose accuracy (centre and scale the data).  Uniform convergence:
    Rahimi & Recht's Claim 1 needs :math:`\sigma_p^2 = \mathbb E\|\omega\|^2` finite
    (``kernel_.sigma_p2(d)``), which is not the case for the Laplacian and Matérn-1/2 kernels.

    **Sparse input** (scipy.sparse CSR/CSC, or any format convertible to CSR): the projection
    is scipy's sparse × dense product (single-threaded, over the non-zeros only), followed by
    the same compiled cos/sin pass.  The output equals the dense input's up to the summation
    order of the projections: per entry at most :math:`\sqrt{2/D}\,(2\gamma_d
    \sum_k |x_k\,\omega_{jk}| + 8\epsilon)` apart (:math:`\gamma_d = d\epsilon/(1 - d\epsilon)`,
    ε the unit roundoff of the dtype), which is what the tests check.

    **Parameters changed after fit.**  ``transform`` uses the fitted state only if the
    parameters (other than ``n_threads``) are those it was fitted with; after e.g.
    ``set_params(n_components=...)`` it raises NotFittedError until the next ``fit``.  ``fit``
    publishes its state in one step: an exception or Ctrl-C during a re-fit leaves the previous
    fit whole.

    References
    ----------
    A. Rahimi and B. Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007,
    Algorithm 1 and Claim 1.  D. J. Sutherland and J. Schneider, "On the Error of Random Fourier
    Features", UAI 2015 (variances of the two maps).

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import RandomFourierFeatures
    >>> from randfeat.kernels import GaussianKernel
    >>> X = np.random.default_rng(0).normal(size=(5, 3))
    >>> rff = RandomFourierFeatures(n_components=20_000, sigma=2.0, random_state=0)
    >>> Z = rff.fit_transform(X)
    >>> Z.shape, rff.frequencies_.shape
    ((5, 20000), (10000, 3))
    >>> err = np.abs(Z @ Z.T - GaussianKernel(2.0)(X)).max()
    >>> bool(err < 0.05)
    True
    >>> RandomFourierFeatures(8, features="phase", random_state=0).fit(X).offsets_.shape
    (8,)
    >>> RandomFourierFeatures(7, random_state=0).fit_transform(X).shape   # any width
    (5, 7)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [str, ShiftInvariantKernel],
        "sigma": SIGMA_CONSTRAINT,
        "kernel_params": [dict, None],
        "features": [StrOptions({"paired", "phase"})],
        "sampling": [StrOptions(set(SAMPLINGS) | set(DATA_SAMPLINGS))],
        "ridge": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=None, kernel_params=None,
                 features="paired", random_state=None, n_threads=None, sampling="iid",
                 ridge="auto"):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.features = features
        self.sampling = sampling
        self.random_state = random_state
        self.n_threads = n_threads
        self.ridge = ridge

    def _build(self, X):
        kernel = self._resolve_kernel(X, "fourier", **(self.kernel_params or {}))
        d, D = X.shape[1], int(self.n_components)
        paired = self.features == "paired"
        n_freq = D // 2 if paired else D
        rng = self._rng()
        # ARD length scales: the frequencies of the unit-scale kernel divided by sigma column-wise
        # (omega_j = omega_1j / sigma_j), for every sampling; equal scales are the scalar kernel
        base, scales = kernel.ard_split()
        if scales is not None and self.sampling not in _ARD_SAMPLINGS:
            raise ValueError(
                f"RandomFourierFeatures: sigma with one length scale per feature (ARD) is not "
                f"supported with sampling={self.sampling!r}; use one of "
                f"{sorted(_ARD_SAMPLINGS)}, or a scalar sigma on X / sigma")
        check_frequencies(base, n_freq + (paired and D % 2), d, self.sampling, X.dtype,
                          param=f"n_components={D}", func="RandomFourierFeatures.fit")
        # float64, then cast: shared stream for f32/f64
        wts, lev = None, {}
        if self.sampling == "leverage":
            # ARD: the unit-scale kernel's leverage density on the rows X / sigma (the kernel
            # matrix, hence the ridge and the statistical dimension, is the same)
            Xl = X if scales is None else divide_columns(X, scales)
            W, wts, lev = leverage_frequencies(base, n_freq, Xl, rng, self.ridge)
            lev["ridge"] *= X.shape[0] / lev["rows"]  # back to the units of all fitted rows
        else:
            W = sample_frequencies(base, n_freq, d, rng, self.sampling, self._n_threads())
        if scales is not None:
            W /= scales
        b = None
        if not paired:
            b = rng.uniform(0.0, 2.0 * np.pi, size=n_freq)
        elif D % 2:  # odd paired width: one phase-shifted feature (drawn after the pairs)
            W = np.vstack([W, kernel.sample(1, d, rng)])
            b = rng.uniform(0.0, 2.0 * np.pi, size=1)
            wts = None if wts is None else np.append(wts, 1.0)
        W = np.ascontiguousarray(W, dtype=X.dtype)
        b = None if b is None else b.astype(X.dtype)
        for a in (W, b, wts):
            if a is not None:
                a.flags.writeable = False
        return {"kernel_": kernel, "sigma_": kernel.sigma, "frequencies_": W, "offsets_": b,
                "frequency_weights_": wts, "leverage_ridge_": lev.get("ridge"),
                "statistical_dimension_": lev.get("statistical_dimension"),
                "_n_features_out": D}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random frequencies (and offsets) for inputs shaped like ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            Training data; only its number of features and dtype are used (and its values for
            ``sigma="scale"`` or ``"median"``).
        y : ignored

        Returns
        -------
        self : RandomFourierFeatures
        """
        self._fit_atomic(self._build, X)
        return self

    @property
    def _dask_fit_reads_shape(self):
        """fit reads only the shape and dtype of X (randfeat.dask), except with a sampling that
        reads the rows (``"leverage"``): then fitting on a dask array is refused."""
        return self.sampling not in DATA_SAMPLINGS

    def _checked_state(self, X, st=None):
        """The fitted state, checked against the parameters and X's dtype: (W, b, D)."""
        st = self._fitted_state() if st is None else st
        W, b, D = st["frequencies_"], st["offsets_"], st["_n_features_out"]
        d = X.shape[1]
        paired = st["features"] == "paired"
        m = D // 2 + D % 2 if paired else D
        if not (isinstance(W, np.ndarray) and W.shape == (m, d) and W.dtype.kind == "f"):
            raise ValueError(
                f"RandomFourierFeatures.transform: the fitted frequencies_ must be a float array "
                f"of shape ({m}, {d}) for n_components={D}, features={st['features']!r}; got "
                f"{getattr(W, 'shape', type(W).__name__)} of dtype {getattr(W, 'dtype', None)}. "
                "Call fit again")
        nb = 0 if paired and D % 2 == 0 else (1 if paired else D)
        if nb and not (isinstance(b, np.ndarray) and b.shape == (nb,) and b.dtype.kind == "f"):
            raise ValueError(
                f"RandomFourierFeatures.transform: the fitted offsets_ must be a float array of "
                f"shape ({nb},); got {getattr(b, 'shape', type(b).__name__)}. Call fit again")
        dt = X.dtype
        if W.dtype != dt or not W.flags.c_contiguous:
            W = np.ascontiguousarray(W, dtype=dt)
        if b is not None and (b.dtype != dt or not b.flags.c_contiguous):
            b = np.ascontiguousarray(b, dtype=dt)
        return W, b, D, paired

    def transform(self, X):
        """Random Fourier features of ``X``.

        Parameters
        ----------
        X : {array_like, sparse matrix} of shape (n_samples, n_features)
            float32 stays float32; other real input is computed in float64.  NaN/Inf raise.
            scipy.sparse input (CSR/CSC) gives the same features (see Notes).

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse)
        st = self._fitted_state()
        W, b, D, paired = self._checked_state(X, st)
        dt = X.dtype
        n, m = X.shape[0], W.shape[0]
        odd = paired and D % 2 == 1
        check_allocation(n * dt.itemsize * (D + odd * (D + 1)), f"the output ({n} x {D} {dt.name})",
                         f"n_components={D}", func="RandomFourierFeatures.transform",
                         fix="transform fewer rows at a time, or lower n_components")
        nt = self._n_threads()
        scale = math.sqrt(2.0 / D)
        if sp.issparse(X):
            out, n_bad = self._sparse_features(X.tocsr(), W, b if not paired else None, scale,
                                               nt)
        else:
            # The BLAS's thread count is the user's: read, never changed.  Single-threaded BLAS:
            # one parallel region, blocks projected by BLAS calls in randfeat's threads and
            # put through the cos/sin in the same thread (fused).  Otherwise: one BLAS call per
            # block from this thread, with the BLAS's threads, then randfeat's threads on the
            # cos/sin (see randfeat/_lib/_fourier.pyx).  Both cut the product into the same
            # _MAX_BLOCKS blocks (the fused path into fewer only where the BLAS was found
            # cut-invariant), so under a single-threaded BLAS they make the same gemm calls and
            # give the same bits: with one thread, the BLAS-threaded path is taken without
            # reading the BLAS's thread count (whose first read scans every loaded library).
            fused = nt > 1 and blas_threads() == 1
            blocks = _max_blocks(n, m, X.shape[1], dt, nt) if fused else _MAX_BLOCKS
            if paired:
                out = np.empty((n, 2 * m), dtype=dt)
                n_bad = _fourier.transform_paired(X, W, out, scale, nt, 512, blocks,
                                                  blas_single_threaded=fused)
            else:
                out = np.empty((n, m), dtype=dt)
                n_bad = _fourier.transform_phase(X, W, b, out, scale, nt, 512, blocks,
                                                 blas_single_threaded=fused)
        self._check_projections(n_bad, X)
        wts = st.get("frequency_weights_")
        if wts is not None:  # leverage sampling: column j times sqrt(w_j)
            sw = np.sqrt(wts).astype(dt)
            out *= np.concatenate([sw, sw]) if paired else sw
        if odd:
            out = _odd_paired(out, m, b)
        return out

    def _sparse_features(self, X, W, b, scale, nt):
        """Features of CSR ``X``: scipy's sparse x dense projection, then the compiled cos/sin
        pass in place (the same pass as the dense path)."""
        m = W.shape[0]
        proj = X @ W.T                                   # (n, m) dense, dtype of X and W
        proj = np.ascontiguousarray(proj, dtype=X.dtype)
        if b is None:
            out = np.empty((X.shape[0], 2 * m), dtype=X.dtype)
            out[:, :m] = proj
            del proj
            n_bad = _fourier.paired_inplace(out, m, scale, nt)
        else:
            out = proj
            n_bad = _fourier.phase_inplace(out, b, scale, nt)
        return out, n_bad

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

