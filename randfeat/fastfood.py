"""Fastfood random features (Le, Sarlós & Smola, ICML 2013).

The dense Gaussian frequency matrix of random Fourier features is replaced by products of
diagonal, permutation and Walsh–Hadamard matrices, so one input row costs O(n log d) time and the
parameters take O(n) memory.  The whole per-row pipeline runs in one compiled kernel
(:mod:`randfeat._lib._fastfood`).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from randfeat._base import RandomFeaturesBase
from randfeat._lib import _fastfood
from randfeat._validation import next_power_of_two
from randfeat.kernels import BallSumKernel, ShiftInvariantKernel, get_kernel

__all__ = ["Fastfood"]

# the fused kernel's specialisations, picked once (saves the fused-type dispatch per call)
_KERNEL = {np.dtype(np.float32): _fastfood.fastfood_transform["float"],
           np.dtype(np.float64): _fastfood.fastfood_transform["double"]}


def _real_dft_rows(Y):
    """Real orthogonal-up-to-sqrt(d) DFT of the rows of ``Y`` (n, d), d a power of two.

    Returns R (n, d) with R = [Re w_0, sqrt2 Re w_1, sqrt2 Im w_1, ..., sqrt2 Re w_{d/2-1},
    sqrt2 Im w_{d/2-1}, Re w_{d/2}] where w = numpy.fft.rfft(Y) (w_k = sum_j Y_j e^{-2 pi i jk/d}).
    As a matrix every row of R has Euclidean length sqrt(d) and R / sqrt(d) is orthogonal.
    """
    d = Y.shape[1]
    if d == 1:
        return Y.copy()
    w = np.fft.rfft(Y, axis=1)
    R = np.empty(Y.shape, dtype=np.float64)
    R[:, 0] = w[:, 0].real
    R[:, 1:d - 1:2] = math.sqrt(2.0) * w[:, 1:d // 2].real
    R[:, 2:d - 1:2] = math.sqrt(2.0) * w[:, 1:d // 2].imag
    R[:, d - 1] = w[:, d // 2].real
    return R


class Fastfood(RandomFeaturesBase):
    r"""Fastfood approximation of an isotropic shift-invariant kernel (LSS 2013).

    Each d × d block of the frequency matrix is (LSS 2013, eq. 7; arXiv:1408.3060 eq. 33)

    .. math::

        V = \frac{1}{\sigma\sqrt{d}}\, S H G \Pi H B,

    where d is the number of input features zero-padded to a power of two (``d_padded_``), H the
    unnormalised Walsh–Hadamard matrix (applied by an in-place FWHT, never stored), B a diagonal of
    random signs, Π a random permutation, G a diagonal of iid N(0, 1) and S a diagonal of row
    lengths.  Every row of :math:`HG\Pi HB` has length exactly :math:`\sqrt{d}\,\|G\|_F`, so with
    :math:`S_{ii} = s_i / \|G\|_F` the rows of V have lengths :math:`s_i/\sigma` and uniformly
    random directions: for ``kernel="gaussian"`` (:math:`s_i \sim \chi_d`) each row is marginally
    :math:`N(0, \sigma^{-2} I_d)`, as in random Fourier features, and
    :math:`E[\hat k(x, y)] = \exp(-\|x-y\|^2 / (2\sigma^2))` (LSS Lemma 3).  (The paper prints
    :math:`\|G\|_F^{-1/2}`; that is a typo — it is biased, see ``THEORY.md`` §4.1.)

    Independent blocks are stacked until there are ``n_freq`` rows (``n_freq = n_components / 2``
    for ``features="paired"``, ``n_components`` for ``"phase"``); rows beyond ``n_freq`` in the
    last block are computed by the transform but dropped.  The output has exactly
    ``n_components`` columns:

    * ``"paired"``: :math:`[\cos(Vx), \sin(Vx)] / \sqrt{n_{freq}}` (cosines first);
    * ``"phase"``: :math:`\sqrt{2/n}\,\cos(Vx + b)`, :math:`b_j \sim U[0, 2\pi)`.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features (must be even for ``features="paired"``).
    kernel : str or ShiftInvariantKernel, default="gaussian"
        Kernel whose spectral radial law gives the row lengths s_i.  ``"gaussian"``: s_i ~ chi_d.
        ``"ballsum"``: :math:`s_i = \|\xi_1 + \dots + \xi_t\|` with :math:`\xi` uniform in the unit
        ball of dimension ``d_padded_`` (LSS §3.4 "Matérn"); the approximated kernel is then the
        ball-sum kernel :math:`k_t` **of the padded dimension** (a power of a Bessel function, not
        the standard Matérn; THEORY §4.6), exposed as ``kernel_``.  Any other isotropic kernel of
        :func:`randfeat.kernels.get_kernel` (e.g. ``"matern"``) or an isotropic kernel instance
        uses its ``sample_radius``; an instance's own ``sigma`` is used as the bandwidth.
        Non-isotropic kernels (``"laplacian"``, ``"cauchy"``) raise ValueError: Fastfood's rows
        have uniformly random directions, so it needs a spherically symmetric spectrum — use
        :class:`randfeat.RandomFourierFeatures` for those.
    sigma : float, default=1.0
        Bandwidth (length scale), k(Δ) = exp(-‖Δ‖² / (2σ²)) for the Gaussian kernel; scikit-learn's
        ``gamma`` is 1 / (2σ²).
    features : {"paired", "phase"}, default="paired"
        Real feature map, see above.
    t : int, default=1
        Number of summed uniform-ball points for ``kernel="ballsum"`` (ignored otherwise).
    radial : callable or None, default=None
        Custom spectral radial law: ``radial(n, d, rng) -> ndarray (n,)`` of non-negative row
        lengths for unit bandwidth (``rng`` a :class:`numpy.random.Generator`, ``d`` the padded
        dimension); the rows of V get lengths ``radial(...) / sigma``.  Overrides ``kernel``'s
        radial law; ``kernel_`` is then None (the approximated kernel is the isotropic one with that
        radial spectral law, at bandwidth ``sigma``).
    projection : {"hadamard", "fft"}, default="hadamard"
        ``"fft"`` is the paper's "Fastfood FFT" comparison variant (LSS arXiv §6.1):
        :math:`V = \sigma^{-1}\,\Pi R B` per block, with R the real DFT matrix whose rows are
        :math:`1`, :math:`\sqrt2\cos(2\pi jk/d)`, :math:`\sqrt2\sin(2\pi jk/d)` and
        :math:`(-1)^k` (every row of length :math:`\sqrt d`, :math:`R/\sqrt d` orthogonal; see
        ``_real_dft_rows``), so :math:`E_B[(Vx)_j^2] = \|x\|^2/\sigma^2` as for Gaussian rows.  It
        has no G and no S and does **not** approximate the Gaussian (or any) kernel; it is kept as
        a benchmark/regression feature map only and is computed with numpy's FFT (not the fused
        kernel).  ``kernel``, ``t`` and ``radial`` are ignored (``kernel_`` is None).
    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Seed of the random parameters (drawn in float64, so float32 and float64 fits share them).
    n_threads : int or None, default=None
        Threads for transform (None: all CPUs; negative: count back). The output does not depend
        on it.

    Attributes
    ----------
    d_padded_ : int
        d, the number of input features rounded up to a power of two.
    n_freq_ : int
        Number of rows of V used (n_components / 2 for "paired", n_components for "phase").
    n_blocks_ : int
        ceil(n_freq_ / d_padded_) stacked independent blocks.
    B_packed_ : ndarray of uint8, shape (n_blocks_, ceil(d_padded_ / 8))
        The random signs B, one bit each (1 for B = -1): sign k of block b is bit ``k % 8`` of
        ``B_packed_[b, k // 8]`` (``np.packbits(B_ < 0, axis=1, bitorder="little")``; for
        d_padded_ < 8 the high bits of the single byte are 0).  This is what is stored.
    B_ : ndarray of int8, shape (n_blocks_, d_padded_)
        Random signs ±1, a read-only property unpacked from ``B_packed_`` on each access (a new
        array; not counted in ``parameter_nbytes_``).
    P_ : ndarray of int32, shape (n_blocks_, d_padded_)
        Permutations: (Π u)_k = u[P_[b, k]] in block b.
    G_ : ndarray of float, shape (n_blocks_, d_padded_), or None for ``projection="fft"``
        Gaussian diagonal, in the dtype of the fit data.
    S_ : ndarray of float, shape (n_freq_,), or None for ``projection="fft"``
        Scaling diagonals of the used rows, blocks concatenated: ``S_[b * d_padded_ + i]`` =
        s_i / ‖G_b‖_F (dtype of the fit data), so row i of block b of V has length
        ``S_[b * d_padded_ + i] * ‖G_[b]‖_F / sigma``.  The rows of the last block beyond
        n_freq_ are dropped, so their S values are not stored.
    offsets_ : ndarray of float, shape (n_freq_,), or None
        Phases b of ``features="phase"``.
    kernel_ : ShiftInvariantKernel or None
        The exact kernel approximated (for ``"ballsum"`` a BallSumKernel of dimension
        ``d_padded_``); None for a custom ``radial`` and for ``projection="fft"``.
    sigma_ : float
        Bandwidth used in V (``sigma``, or the kernel instance's ``sigma``).
    parameter_nbytes_ : int
        Bytes held by the stored random parameters (B_packed_, P_, G_, S_, offsets_):
        n_blocks_ ceil(d_padded_ / 8) for B, n_blocks_ d_padded_ (4 + itemsize) for Π and G,
        n_freq_ itemsize for S and again for the phases of ``features="phase"`` — O(n).
    n_features_in_ : int
        Number of input features seen in fit.

    See Also
    --------
    randfeat.RandomFourierFeatures : dense random Fourier features (any shift-invariant kernel).

    Notes
    -----
    Cost per row: 2 ``n_blocks_`` FWHTs of length d, i.e. O(n log d) time, and O(n) parameter
    memory (vs O(n d) for a dense frequency matrix): per row of V, 1/8 byte for B (bit-packed),
    4 for Π (int32), one float each for G and S, and one for the phase b with
    ``features="phase"``: 16 1/8 bytes per row in float32 against 4d + 4 for a dense W and its
    phases (1/1016 of it at d = 4096). Zero padding does not change ‖x - y‖, so the
    kernel estimate is invariant to padding. Rows of one block are dependent (shared G, Π, B): the
    estimator is unbiased but its variance is larger than with iid rows (LSS Theorem 4/5).

    References
    ----------
    Q. Le, T. Sarlós, A. Smola. Fastfood — Approximating Kernel Expansions in Loglinear Time.
    ICML 2013 (eq. 7, Lemma 3, §3.4); arXiv:1408.3060.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import Fastfood
    >>> X = np.random.default_rng(0).normal(size=(5, 20))
    >>> ff = Fastfood(n_components=64, sigma=2.0, random_state=0).fit(X)
    >>> Z = ff.transform(X)
    >>> Z.shape, ff.d_padded_, ff.n_blocks_
    ((5, 64), 32, 1)
    >>> bool(np.allclose((Z * Z).sum(axis=1), 1.0))   # paired features: k-hat(x, x) = 1
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernel": [str, ShiftInvariantKernel],
        "sigma": [Interval(Real, 0.0, None, closed="neither")],
        "features": [StrOptions({"paired", "phase"})],
        "t": [Interval(Integral, 1, None, closed="left")],
        "radial": [callable, None],
        "projection": [StrOptions({"hadamard", "fft"})],
        "random_state": "no_validation",
        "n_threads": [Integral, None],
    }

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=1.0, features="paired",
                 t=1, radial=None, projection="hadamard", random_state=None, n_threads=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.features = features
        self.t = t
        self.radial = radial
        self.projection = projection
        self.random_state = random_state
        self.n_threads = n_threads

    # ------------------------------------------------------------------ fit
    def _resolve_kernel(self, d):
        """(kernel_, sigma_) for the row-length law; raises for non-isotropic kernels."""
        if self.projection == "fft" or self.radial is not None:
            return None, float(self.sigma)
        kernel = self.kernel
        if isinstance(kernel, str) and kernel.lower() in ("ballsum", "ball_sum", "ball-sum"):
            return BallSumKernel(sigma=float(self.sigma), t=int(self.t), dim=d), float(self.sigma)
        try:
            k = get_kernel(kernel, sigma=float(self.sigma))
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"Fastfood: unknown kernel={kernel!r} ({exc}); use 'gaussian', 'ballsum', an "
                "isotropic kernel name of randfeat.kernels (e.g. 'matern') or an isotropic "
                "ShiftInvariantKernel instance") from None
        if not getattr(k, "isotropic", False):
            raise ValueError(
                f"Fastfood: kernel={kernel!r} has no spherically symmetric spectrum (isotropic="
                f"{getattr(k, 'isotropic', None)}); Fastfood's rows have uniformly random "
                "directions and only their lengths can be chosen, so it can only approximate "
                "isotropic kernels (gaussian, matern, ballsum, or radial=...). Use "
                "randfeat.RandomFourierFeatures for this kernel")
        if isinstance(k, BallSumKernel) and getattr(k, "dim", d) not in (None, d):
            raise ValueError(
                f"Fastfood: the ball-sum kernel instance has dim={k.dim} but Fastfood samples in "
                f"the padded dimension d_padded_={d}; pass kernel='ballsum' (with t=...) or a "
                f"BallSumKernel(dim={d})")
        if isinstance(k, BallSumKernel) and getattr(k, "dim", d) is None:
            k = BallSumKernel(sigma=k.sigma, t=k.t, dim=d)
        return k, float(k.sigma)

    def _row_lengths(self, n, d, rng):
        """Unit-bandwidth radii s (n,) with S = s / ||G||_F (rows of V have length s / sigma_)."""
        if self.radial is not None:
            s = np.asarray(self.radial(n, d, rng), dtype=np.float64)
            if s.shape != (n,) or not np.all(np.isfinite(s)) or np.any(s < 0):
                raise ValueError(
                    f"Fastfood: radial(n={n}, d={d}, rng) must return {n} finite non-negative row "
                    f"lengths (shape ({n},)); got shape {s.shape}"
                    + ("" if s.shape != (n,) else " with negative or non-finite values"))
            return s
        return self.sigma_ * np.asarray(self.kernel_.sample_radius(n, d, rng), dtype=np.float64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random parameters (B, Π, G, S and the phases) for the input dimension of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (only its shape and dtype are used).
        y : ignored

        Returns
        -------
        self : Fastfood
        """
        X = self._validate_X(X, reset=True)
        self._n_threads()                      # validates n_threads (0 is an error)
        if self.features == "paired" and self.n_components % 2:
            raise ValueError(
                f"Fastfood: features='paired' needs an even n_components (cos and sin of "
                f"n_components/2 frequencies); got n_components={self.n_components}. Use an even "
                "number or features='phase'")
        dtype = X.dtype
        d = next_power_of_two(X.shape[1])
        n_freq = self.n_components // 2 if self.features == "paired" else self.n_components
        n_blocks = -(-n_freq // d)
        self.d_padded_ = d
        self.n_freq_ = n_freq
        self.n_blocks_ = n_blocks
        self.kernel_, self.sigma_ = self._resolve_kernel(d)
        rng = self._rng()
        # One random stream in float64 (identical for float32 and float64 fits), in this order.
        B = (2 * rng.integers(0, 2, size=(n_blocks, d), dtype=np.int8) - 1).astype(np.int8)
        self.B_packed_ = np.packbits(B < 0, axis=1, bitorder="little")
        self.P_ = rng.permuted(np.tile(np.arange(d, dtype=np.int32), (n_blocks, 1)), axis=1)
        if self.projection == "hadamard":
            G = rng.standard_normal((n_blocks, d))
            s = self._row_lengths(n_blocks * d, d, rng).reshape(n_blocks, d)
            S = s / np.sqrt(np.sum(G * G, axis=1, keepdims=True))
            self.G_ = G.astype(dtype)
            self.S_ = S.reshape(-1)[:n_freq].astype(dtype)     # unused rows not stored
        else:
            self.G_ = None
            self.S_ = None
        if self.features == "phase":
            self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, size=n_freq).astype(dtype)
        else:
            self.offsets_ = None
        self._n_features_out = self.n_components
        return self

    @property
    def B_(self):
        """Random signs ±1, int8 array (n_blocks_, d_padded_), unpacked from ``B_packed_``."""
        check_is_fitted(self)
        bits = np.unpackbits(self.B_packed_, axis=1, count=self.d_padded_, bitorder="little")
        return 1 - 2 * bits.astype(np.int8)

    @property
    def parameter_nbytes_(self) -> int:
        """Bytes held by the stored random parameters (B_packed_, P_, G_, S_, offsets_)."""
        check_is_fitted(self)
        return int(sum(a.nbytes for a in (self.B_packed_, self.P_, self.G_, self.S_,
                                          self.offsets_) if a is not None))

    # ------------------------------------------------------------ transform
    def _params(self, dtype):
        G, S, off = self.G_, self.S_, self.offsets_
        if G is not None and G.dtype != dtype:
            G, S = G.astype(dtype), S.astype(dtype)
        if off is not None and off.dtype != dtype:
            off = off.astype(dtype)
        return G, S, off

    def _compute(self, X, mode):
        """mode 0: paired features, 1: phase features, 2: the projections V x (n, n_freq_)."""
        if not hasattr(self, "B_packed_"):
            check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        n, dtype, d, n_freq = X.shape[0], X.dtype, self.d_padded_, self.n_freq_
        if self.projection == "fft":
            return self._compute_fft(X, mode)
        G, S, off = self._params(dtype)
        width = 2 * n_freq if mode == 0 else n_freq
        out = np.empty((n, width), dtype=dtype)
        mult = 1.0 / math.sqrt(n_freq) if mode == 0 else math.sqrt(2.0 / n_freq)
        if off is None:
            off = np.empty(0, dtype=dtype)
        # the kernel sets the thread count (_lib/_policy.pxd) and allocates its scratch (None)
        n_bad = _KERNEL[dtype](
            X, self.B_packed_, self.P_, G, S, off, out, None, d.bit_length() - 1,
            1.0 / (self.sigma_ * math.sqrt(d)), mult, n_freq, mode, self._n_threads())
        self._check_projections(n_bad, X)
        return out

    def _compute_fft(self, X, mode):
        n, d, n_freq = X.shape[0], self.d_padded_, self.n_freq_
        Xp = np.zeros((n, d), dtype=np.float64)
        Xp[:, :X.shape[1]] = X
        Z = np.empty((n, self.n_blocks_ * d), dtype=np.float64)
        B = self.B_
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: the error below
            for b in range(self.n_blocks_):
                R = _real_dft_rows(Xp * B[b])
                Z[:, b * d:(b + 1) * d] = R[:, self.P_[b]]
            Z = Z[:, :n_freq] / self.sigma_
        self._check_projections(not np.isfinite(Z).all(), X)
        if mode == 2:
            return Z.astype(X.dtype)
        if mode == 0:
            out = np.hstack([np.cos(Z), np.sin(Z)]) / math.sqrt(n_freq)
        else:
            out = math.sqrt(2.0 / n_freq) * np.cos(Z + self.offsets_.astype(np.float64))
        return out.astype(X.dtype)

    def transform(self, X):
        """Map X to the Fastfood features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)
            float32 input gives float32 output (projections and cosines in float32: with large
            ‖x‖/σ the arguments of cos lose absolute accuracy, ~1e-7·|Vx|; centre/scale the
            data or use float64); other real input is computed in float64.  If the dtype
            differs from the fit data, the parameters are cast to the input's dtype.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        return self._compute(X, 0 if self.features == "paired" else 1)

    def _project(self, X):
        """The projections V x, shape (n_samples, n_freq_) (rows of V beyond n_freq_ dropped)."""
        return self._compute(X, 2)
