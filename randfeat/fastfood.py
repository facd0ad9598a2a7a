"""Fastfood random features (Le, Sarlós & Smola, ICML 2013).

The dense Gaussian frequency matrix of random Fourier features is replaced by products of
diagonal, permutation and Walsh–Hadamard matrices, so one input row costs O(n log d) time and the
parameters take O(n) memory.  The whole per-row pipeline runs in one compiled kernel
(:mod:`randfeat._lib._fastfood`).
"""

from __future__ import annotations

import copy
import math
import warnings
import weakref
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from randfeat._base import (
    RandomFeaturesBase,
    _odd_paired,
    ard_blocks,
    ard_parts,
    resolve_kernel,
)
from randfeat._lib import _fastfood
from randfeat._validation import (
    N_THREADS_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    SIGMA_CONSTRAINT,
    check_allocation,
    next_power_of_two,
)
from randfeat.kernels import BallSumKernel, ShiftInvariantKernel
from randfeat.kernels._registry import _canonical

__all__ = ["Fastfood"]

# the fused kernel's specialisations, picked once (saves the fused-type dispatch per call)
# the compiled entry point of each output (randfeat/_lib/_fastfood.pyx)
_OUTPUTS = ("paired", "phase", "projections")


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
    :math:`\|G\|_F^{-1/2}`; that is a typo — it is biased, see THEORY §4.1.)

    Independent blocks are stacked until there are ``n_freq`` rows (``n_freq = n_components / 2``
    for an even ``features="paired"`` width, ``(n_components + 1) / 2`` for an odd one,
    ``n_components`` for ``"phase"``); rows beyond ``n_freq`` in the last block are computed by
    the transform but dropped.  The output has exactly ``n_components`` columns:

    * ``"paired"``: :math:`[\cos(Vx), \sin(Vx)] / \sqrt{n_{freq}}` (cosines first); for an
      odd width :math:`D = 2m + 1` the first m rows give m pairs and the last row one
      phase-shifted feature :math:`\cos(v_{m+1}^\top x + b)`, every column scaled by
      :math:`\sqrt{2/D}` (exactly unbiased, with the variance given in
      :class:`randfeat.RandomFourierFeatures`);
    * ``"phase"``: :math:`\sqrt{2/n}\,\cos(Vx + b)`, :math:`b_j \sim U[0, 2\pi)`.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features (any width >= 1).
    kernel : str or ShiftInvariantKernel, default="gaussian"
        Kernel whose spectral radial law gives the row lengths s_i.  ``"gaussian"``: s_i ~ chi_d.
        ``"ballsum"``: :math:`s_i = \|\xi_1 + \dots + \xi_t\|` with :math:`\xi` uniform in the unit
        ball of dimension ``d_padded_`` (LSS §3.4 "Matérn"); the approximated kernel is then the
        ball-sum kernel :math:`k_t` **of the padded dimension** (a power of a Bessel function, not
        the standard Matérn; THEORY §4.6), exposed as ``kernel_``.  Any other isotropic kernel of
        :func:`randfeat.kernels.get_kernel` (e.g. ``"matern"``; ``"rbf"`` is the Gaussian) or an
        isotropic kernel instance uses its ``sample_radius``; an instance's own ``sigma`` is used
        as the bandwidth (``sigma`` must then stay None).
        Non-isotropic kernels (``"laplacian"``, ``"cauchy"``) raise ValueError: Fastfood's rows
        have uniformly random directions, so it needs a spherically symmetric spectrum — use
        :class:`randfeat.RandomFourierFeatures` for those.
    sigma : float, array of shape (n_features,), "scale", "median" or None, default=None
        Bandwidth (length scale) of a kernel given by name (None: 1.0), k(Δ) = exp(-‖Δ‖² / (2σ²))
        for the Gaussian kernel; scikit-learn's ``gamma`` is 1 / (2σ²).  An array gives one
        length scale per feature (ARD): k(x, y) = k₁((x - y)/σ) coordinate-wise, the unit-scale
        map of x / σ, formed as ``x * (1 / sigma)`` a block of rows at a time (in cache, no
        copy of X; bit-identical to ``sigma=1`` on ``X * (1 / sigma)``); equal scales are the
        scalar map, bit for bit.  ``"scale"`` and ``"median"`` choose it from X as in
        :class:`randfeat.RandomFourierFeatures`.  Must be None with a kernel instance (it has
        its own, possibly ARD; ValueError otherwise).
    features : {"paired", "phase"}, default="paired"
        Real feature map, see above.
    kernel_params : dict or None, default=None
        Extra parameters of a kernel given by name, e.g. ``{"t": 2}`` (the number of summed
        uniform-ball points of ``"ballsum"``, default 1) or ``{"nu": 2.5}`` for ``"matern"``
        (the one way of every randfeat estimator; a kernel instance carries its own).
    t : int, default="deprecated"
        Deprecated: use ``kernel_params={"t": t}`` (the same path; removed in a future
        release).  Number of summed uniform-ball points for ``kernel="ballsum"`` (ignored for
        other kernels).
    radial : callable or None, default=None
        Custom spectral radial law: ``radial(n, d, rng) -> ndarray (n,)`` of non-negative row
        lengths for unit bandwidth (``rng`` a :class:`numpy.random.Generator`, ``d`` the padded
        dimension); the rows of V get lengths ``radial(...) / sigma``.  Overrides ``kernel``'s
        radial law; ``kernel_`` is then None (the approximated kernel is the isotropic one with that
        radial spectral law, at bandwidth ``sigma``).  The bandwidth follows the rule of every
        estimator: ``sigma`` (None: 1.0; "scale"/"median": from X) with a kernel given by name,
        the instance's own with a kernel instance (``sigma`` must then stay None).
    scaling : {"radial", "none"}, default="radial"
        ``"radial"``: S from the kernel's radial law (above).  ``"none"``: no S (``S_`` is all
        ones), so :math:`V' = H G \Pi H B / (\sigma\sqrt d)`, the matrix of LSS
        Lemma 3 and Theorems 4 and 6 (rows of length :math:`\|G\|_F/\sigma`, only
        approximately the Gaussian kernel; for the analysis of those statements).
    random_state : int, Generator, RandomState, SeedSequence or None, default=None
        Seed of the random parameters (drawn in float64, so float32 and float64 fits share them).
    n_threads : int or None, default=None
        Threads for transform (None: all CPUs; negative: count back). The output does not depend
        on it, nor on the batch: each row is computed by itself (the same bits in any batch).

    Attributes
    ----------
    d_padded_ : int
        d, the number of input features rounded up to a power of two.
    n_freq_ : int
        Number of rows of V used (ceil(n_components / 2) for "paired", n_components for
        "phase").
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
    G_ : ndarray of float, shape (n_blocks_, d_padded_)
        Gaussian diagonal, in the dtype of the fit data.
    S_ : ndarray of float, shape (n_freq_,)
        Scaling diagonals of the used rows, blocks concatenated: ``S_[b * d_padded_ + i]`` =
        s_i / ‖G_b‖_F (dtype of the fit data), so row i of block b of V has length
        ``S_[b * d_padded_ + i] * ‖G_[b]‖_F / sigma``.  The rows of the last block beyond
        n_freq_ are dropped, so their S values are not stored.
    offsets_ : ndarray of float or None
        Phases b: shape (n_freq_,) for ``features="phase"``, (1,) for an odd ``"paired"`` width
        (the phase of the last row), None for an even one.
    frequencies_ : ndarray of shape (n_freq_, n_features_in_)
        The rows of V restricted to the input coordinates (the padding coordinates multiply
        zeros), computed on access through the transform's own kernel (O(n_freq_ d) memory,
        which Fastfood otherwise never stores): the projections are ``X @ frequencies_.T``, as
        for :class:`randfeat.RandomFourierFeatures`.
    kernel_ : ShiftInvariantKernel or None
        The exact kernel approximated (for ``"ballsum"`` a BallSumKernel of dimension
        ``d_padded_``); None for a custom ``radial`` and for ``scaling="none"``.
    sigma_ : float or ndarray of shape (n_features_in_,)
        Bandwidth used in V (``sigma``, the data-driven value, or the kernel instance's
        ``sigma``); a read-only float64 array for ARD length scales.

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

    **Fitted state.**  The public arrays are read-only; ``transform`` checks the layout of what
    it is given (dtypes, shapes and, once per array, the range of ``P_``), so a replaced or
    tampered array is a clear ValueError, never an out-of-bounds read.  ``transform`` refuses
    (NotFittedError) parameters changed after fit (e.g. ``set_params(n_components=...)``), and
    ``fit`` publishes its state in one step: an exception or Ctrl-C during a re-fit leaves the
    previous fit whole.

    The "Fastfood FFT" comparison map of LSS §6.1 (:math:`\Pi R B` with a real DFT R, no G or S)
    does not approximate a kernel and is not part of this estimator (it was
    ``projection="fft"``); it lives with its only user, ``paper_figures/_fastfood_fft.py``.

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
        "sigma": SIGMA_CONSTRAINT,
        "features": [StrOptions({"paired", "phase"})],
        "kernel_params": [dict, None],
        "t": [Interval(Integral, 1, None, closed="left"), Hidden(StrOptions({"deprecated"}))],
        "radial": [callable, None],
        "scaling": [StrOptions({"radial", "none"})],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "n_threads": N_THREADS_CONSTRAINT,
    }
    _accept_sparse = ("csr", "csc")

    _dask_fit_reads_shape = True

    def __init__(self, n_components=100, *, kernel="gaussian", sigma=None, kernel_params=None,
                 features="paired", t="deprecated", radial=None, scaling="radial",
                 random_state=None, n_threads=None):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.kernel_params = kernel_params
        self.features = features
        self.t = t
        self.radial = radial
        self.scaling = scaling
        self.random_state = random_state
        self.n_threads = n_threads

    # ------------------------------------------------------------------ fit
    def _kernel_params(self, d):
        """``kernel_params`` of a kernel given by name, with the deprecated ``t`` folded in (for
        ``"ballsum"``, whose ball is of the padded dimension ``d``)."""
        params = dict(self.kernel_params or {})
        ballsum = isinstance(self.kernel, str) and _canonical(self.kernel) in ("ballsum",
                                                                                "ball_sum")
        if not isinstance(self.t, str):
            warnings.warn("Fastfood(t=...) is deprecated and will be removed: pass "
                          f"kernel_params={{'t': {self.t!r}}} (the same kernel)", FutureWarning,
                          stacklevel=5)
            if ballsum:
                if params.get("t", self.t) != self.t:
                    raise ValueError(f"Fastfood: t={self.t!r} and kernel_params={params!r} "
                                     "disagree; pass t in kernel_params only")
                params["t"] = int(self.t)
        if ballsum:
            params.setdefault("dim", d)
        return params

    def _fastfood_kernel(self, X, d):
        """(kernel_, the kernel of the length scale) for the row-length law, by the rule of every
        estimator (:func:`randfeat._base.resolve_kernel`); raises for non-isotropic kernels.
        With a custom ``radial`` the kernel only gives the length scale, and ``kernel_`` is
        None."""
        if self.radial is not None:
            k = resolve_kernel(self.kernel, self.sigma, X, who="Fastfood",
                               **(self.kernel_params or {}))
            return None, k
        k = self._resolve_kernel(X, "fastfood", **self._kernel_params(d))
        if isinstance(k, BallSumKernel) and getattr(k, "dim", d) not in (None, d):
            raise ValueError(
                f"Fastfood: the ball-sum kernel has dim={k.dim} but Fastfood samples in the "
                f"padded dimension d_padded_={d}; pass kernel='ballsum' (with "
                f"kernel_params={{'t': ...}}) or a BallSumKernel(dim={d})")
        if isinstance(k, BallSumKernel) and getattr(k, "dim", d) is None:
            k = BallSumKernel(sigma=k.sigma, t=k.t, dim=d)
        return k, k

    def _row_lengths(self, n, d, rng, kernel):
        """Unit-bandwidth radii s (n,) with S = s / ||G||_F (rows of V have length s / sigma):
        from ``radial``, or the kernel's radial law at unit length scale (σ is applied once, in
        the transform)."""
        if self.radial is not None:
            s = np.asarray(self.radial(n, d, rng), dtype=np.float64)
            if s.shape != (n,) or not np.all(np.isfinite(s)) or np.any(s < 0):
                raise ValueError(
                    f"Fastfood: radial(n={n}, d={d}, rng) must return {n} finite non-negative row "
                    f"lengths (shape ({n},)); got shape {s.shape}"
                    + ("" if s.shape != (n,) else " with negative or non-finite values"))
            return s
        unit = copy.copy(kernel)
        unit.sigma = 1.0
        return np.asarray(unit.sample_radius(n, d, rng), dtype=np.float64)

    def _build(self, X):
        """The fitted state for X (published in one step by ``_fit_atomic``)."""
        self._n_threads()                      # validates n_threads
        D = int(self.n_components)
        paired = self.features == "paired"
        dtype = X.dtype
        d = next_power_of_two(X.shape[1])
        n_freq = D // 2 + D % 2 if paired else D
        n_blocks = -(-n_freq // d)
        kernel, scaled = self._fastfood_kernel(X, d)
        rng = self._rng()
        check_allocation(n_blocks * d * 48, f"the random parameters ({n_blocks} blocks of {d})",
                         f"n_components={D}", func="Fastfood.fit")
        # One random stream in float64 (identical for float32 and float64 fits), in this order.
        B = (2 * rng.integers(0, 2, size=(n_blocks, d), dtype=np.int8) - 1).astype(np.int8)
        B_packed = np.packbits(B < 0, axis=1, bitorder="little")
        P = rng.permuted(np.tile(np.arange(d, dtype=np.int32), (n_blocks, 1)), axis=1)
        G = rng.standard_normal((n_blocks, d))
        s = self._row_lengths(n_blocks * d, d, rng, kernel).reshape(n_blocks, d)
        if self.scaling == "none":          # V' = H G Pi H B / (sigma sqrt d): no S
            S = np.ones(n_freq)
            kernel = None
        else:
            S = (s / np.sqrt(np.sum(G * G, axis=1, keepdims=True))).reshape(-1)[:n_freq]
        off = None
        if not paired:
            off = rng.uniform(0.0, 2.0 * np.pi, size=n_freq)
        elif D % 2:  # odd paired width: the last row is one phase-shifted feature
            off = rng.uniform(0.0, 2.0 * np.pi, size=1)
        state = {"d_padded_": d, "n_freq_": n_freq, "n_blocks_": n_blocks, "kernel_": kernel,
                 "sigma_": scaled.sigma, "B_packed_": B_packed, "P_": P, "G_": G.astype(dtype),
                 "S_": S.astype(dtype), "offsets_": None if off is None else off.astype(dtype),
                 "_n_features_out": D, "_ard": ard_parts(scaled)}
        for name in ("B_packed_", "P_", "G_", "S_", "offsets_"):
            if state[name] is not None:
                state[name].flags.writeable = False
        return state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw the random parameters (B, Π, G, S and the phases) for the input dimension of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (only its shape and dtype are used, and its values for
            ``sigma="scale"`` or ``"median"``).
        y : ignored

        Returns
        -------
        self : Fastfood
        """
        self._fit_atomic(self._build, X)
        return self

    @property
    def B_(self):
        """Random signs ±1, int8 array (n_blocks_, d_padded_), unpacked from ``B_packed_``."""
        st = self._fitted_state()
        bits = np.unpackbits(st["B_packed_"], axis=1, count=st["d_padded_"], bitorder="little")
        return 1 - 2 * bits.astype(np.int8)

    @property
    def parameter_nbytes_(self) -> int:
        """Bytes held by the stored random parameters (B_packed_, P_, G_, S_, offsets_)."""
        check_is_fitted(self)
        return int(sum(a.nbytes for a in (self.B_packed_, self.P_, self.G_, self.S_,
                                          self.offsets_) if a is not None))

    @property
    def frequencies_(self):
        """The rows of V on the input coordinates, shape (n_freq_, n_features_in_).

        Computed on access by projecting the unit vectors through the transform's own kernel
        (O(n_freq_ d) memory, which Fastfood otherwise never stores); ``X @ frequencies_.T``
        equals the projections V x up to rounding.
        """
        st = self._fitted_state()
        E = np.eye(st["n_features_in_"], dtype=st["G_"].dtype)
        return np.ascontiguousarray(self._compute(E, "projections").T)

    # ------------------------------------------------------------ transform
    def _params(self, dtype):
        """Validated (G, S, offsets) in ``dtype``, after checking every fitted array.

        The public arrays are read-only, but they can be replaced (or made writeable): the
        layout is checked here (O(n_freq_), cheap next to one transformed row), so a wrong shape,
        dtype or an out-of-range permutation is a clear error, never an out-of-bounds read.
        """
        st = self._fitted_state()
        d, nb, n_freq = st["d_padded_"], st["n_blocks_"], st["n_freq_"]
        D, paired = st["_n_features_out"], st["features"] == "paired"

        def bad(name, what):
            return ValueError(f"Fastfood.transform: the fitted {name} {what}; it was changed "
                              "after fit (call fit again)")

        if not (isinstance(d, int) and d == next_power_of_two(st["n_features_in_"])
                and isinstance(n_freq, int) and n_freq == (D // 2 + D % 2 if paired else D)
                and isinstance(nb, int) and nb == -(-n_freq // d)):
            raise bad("d_padded_/n_freq_/n_blocks_", f"({d}, {n_freq}, {nb}) do not match "
                      f"n_features_in_={st['n_features_in_']} and n_components={D}")
        for name, shape, kinds in (("B_packed_", (nb, -(-d // 8)), (np.uint8,)),
                                   ("P_", (nb, d), (np.int32,)),
                                   ("G_", (nb, d), (np.float32, np.float64)),
                                   ("S_", (n_freq,), (np.float32, np.float64))):
            a = st[name]
            if not (isinstance(a, np.ndarray) and a.shape == shape and a.dtype in kinds
                    and a.flags.c_contiguous):
                raise bad(name, f"must be a C-contiguous {np.dtype(kinds[-1])} array of shape "
                          f"{shape}, got {getattr(a, 'shape', type(a).__name__)} of dtype "
                          f"{getattr(a, 'dtype', None)}")
        P = st["P_"]
        ref = _P_CHECKED.get(id(P))
        if ref is None or ref() is not P or P.flags.writeable:  # bounds once per read-only P_
            if P.size and (int(P.min()) < 0 or int(P.max()) >= d):
                raise bad("P_", f"has entries outside [0, {d}) (min {int(P.min())}, max "
                          f"{int(P.max())})")
            if not P.flags.writeable:
                key = id(P)
                _P_CHECKED[key] = weakref.ref(P, lambda _, key=key: _P_CHECKED.pop(key, None))
        off = st["offsets_"]
        n_off = n_freq if not paired else (1 if D % 2 else 0)
        if n_off and not (isinstance(off, np.ndarray) and off.shape == (n_off,)
                          and off.dtype.kind == "f"):
            raise bad("offsets_", f"must be a float array of shape ({n_off},), got "
                      f"{getattr(off, 'shape', type(off).__name__)}")
        G, S = st["G_"], st["S_"]
        if G.dtype != dtype:
            G, S = G.astype(dtype), S.astype(dtype)
        if off is not None and (off.dtype != dtype or not off.flags.c_contiguous):
            off = np.ascontiguousarray(off, dtype=dtype)
        return G, S, off

    def _compute(self, X, output):
        """``output`` "paired": the 2 n_freq_ columns sqrt(2/D) [cos(Vx), sin(Vx)]
        (D = n_components; for an odd D, ``transform`` folds the last pair into the
        phase-shifted feature); "phase": sqrt(2/n_freq_) cos(Vx + b); "projections": V x,
        shape (n, n_freq_)."""
        if output not in _OUTPUTS:
            raise ValueError(f"output must be one of {_OUTPUTS}, got {output!r}")
        X = self._validate_X(X, reset=False)
        dtype = X.dtype
        G, S, off = self._params(dtype)
        n, d, n_freq = X.shape[0], self.d_padded_, self.n_freq_
        log_d = d.bit_length() - 1
        base_sigma, scales = self._ard
        scale = 1.0 / (base_sigma * math.sqrt(d))
        nt = self._n_threads()
        odd = output == "paired" and self._n_features_out % 2  # + the odd width's copy
        check_allocation(n * dtype.itemsize * (n_freq * (1 + (output == "paired")) + odd *
                                               self._n_features_out),
                         f"the output ({n} x {self._n_features_out} {dtype.name})",
                         f"n_components={self._n_features_out}", func="Fastfood.transform",
                         fix="transform fewer rows at a time, or lower n_components")
        B, P = self.B_packed_, self.P_
        if output == "paired":
            out = np.empty((n, 2 * n_freq), dtype=dtype)
            mult = math.sqrt(2.0 / self._n_features_out)

            def run(Xb, ob):
                return _fastfood.transform_paired(Xb, B, P, G, S, ob, log_d, scale, mult, nt)
        elif output == "phase":
            out = np.empty((n, n_freq), dtype=dtype)
            mult = math.sqrt(2.0 / n_freq)

            def run(Xb, ob):
                return _fastfood.transform_phase(Xb, B, P, G, S, off, ob, log_d, scale, mult,
                                                 nt)
        else:
            out = np.empty((n, n_freq), dtype=dtype)

            def run(Xb, ob):
                return _fastfood.project(Xb, B, P, G, S, ob, log_d, scale, nt)
        # the kernel sets the thread count (_lib/_policy.pxd) and allocates its scratch; with
        # ARD scales the rows of V act on x * (1 / sigma), formed a block of rows at a time
        if scales is None:
            n_bad = run(X, out)
        else:
            n_bad = sum(run(Xb, out[a:b]) for a, b, Xb in ard_blocks(X, scales))
        self._check_projections(n_bad, X)
        return out

    def _blocks(self, X, output):
        """``_compute`` on X; scipy.sparse X is densified one block of rows at a time."""
        if not sp.issparse(X):
            return self._compute(X, output)
        X = self._validate_X(X, reset=False, accept_sparse=self._accept_sparse).tocsr()
        n, d_in = X.shape
        rows = max(1, min(n, _SPARSE_BLOCK_ELEMENTS // max(1, d_in)))
        parts = [self._compute(X[s:s + rows].toarray(), output) for s in range(0, n, rows)]
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def transform(self, X):
        """Map X to the Fastfood features.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features_in_)
            float32 input gives float32 output (projections and cosines in float32: with large
            ‖x‖/σ the arguments of cos lose absolute accuracy, ~1e-7·|Vx|; centre/scale the
            data or use float64); other real input is computed in float64.  If the dtype
            differs from the fit data, the parameters are cast to the input's dtype.
            scipy.sparse input (CSR/CSC) is densified one block of rows at a time (at most
            2**20 entries), never as a whole; the output is the same as for the dense array.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
        """
        st = self._fitted_state()
        paired = st["features"] == "paired"
        out = self._blocks(X, "paired" if paired else "phase")
        D = st["_n_features_out"]
        if paired and D % 2:
            out = _odd_paired(out, st["n_freq_"], st["offsets_"])
        return out

    def _project(self, X):
        """The projections V x, shape (n_samples, n_freq_) (rows of V beyond n_freq_ dropped)."""
        return self._blocks(X, "projections")


#: id -> weak reference of the read-only permutation arrays whose bounds were checked (a
#: read-only array cannot change, so it is checked once, at its first transform)
_P_CHECKED: dict = {}

#: rows of a sparse X densified at once by Fastfood.transform: at most this many entries
_SPARSE_BLOCK_ELEMENTS = 2 ** 20
