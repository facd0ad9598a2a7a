r"""The "Fastfood FFT" comparison map of Le, Sarlós & Smola (arXiv:1408.3060, §6.1).

A benchmark / regression feature map only (used here for FF13 Table 2): it does **not**
approximate the Gaussian (or any) kernel, so it is not a randfeat estimator and lives with its
only user.  Per block

.. math:: V = \sigma^{-1}\,\Pi R B,

with B random signs, Π a random permutation and R the real DFT matrix whose rows are
:math:`1`, :math:`\sqrt2\cos(2\pi jk/d)`, :math:`\sqrt2\sin(2\pi jk/d)` and :math:`(-1)^k`
(every row of length :math:`\sqrt d`, :math:`R/\sqrt d` orthogonal; see :func:`_real_dft_rows`),
so :math:`E_B[(Vx)_j^2] = \|x\|^2/\sigma^2` as for Gaussian rows.  No G and no S.  Computed with
numpy's FFT in float64.  The random stream is the one ``Fastfood(projection="fft")`` used before
this class existed (B, Π, then the phases, from ``numpy.random.default_rng(random_state)``), so
published tables are reproduced bit for bit.  Built on scikit-learn's public API and randfeat's
public API only.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from randfeat import next_power_of_two

__all__ = ["FastfoodFFT"]


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


class FastfoodFFT(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""The "Fastfood FFT" benchmark map :math:`V = \sigma^{-1}\Pi R B` (see module).

    Parameters
    ----------
    n_components : int, default=100
        Output width (even for ``features="paired"``).
    sigma : float or None, default=None
        Scale of V (None: 1.0).
    features : {"paired", "phase"}, default="paired"
        :math:`[\cos Vx, \sin Vx]/\sqrt{n_{freq}}` or :math:`\sqrt{2/n}\cos(Vx + b)`.
    random_state : int, Generator, SeedSequence, BitGenerator or None, default=None
        Seed of ``numpy.random.default_rng``.
    n_threads : int or None, default=None
        Accepted for symmetry with :class:`randfeat.Fastfood`; numpy's FFT is used.

    Attributes
    ----------
    B_packed_, P_, offsets_, d_padded_, n_blocks_, n_freq_, sigma_
        As in :class:`randfeat.Fastfood` (``B_`` unpacks the signs).

    Examples
    --------
    >>> import numpy as np
    >>> from paper_figures._fastfood_fft import FastfoodFFT
    >>> X = np.random.default_rng(0).normal(size=(3, 5))
    >>> FastfoodFFT(16, random_state=0).fit_transform(X).shape
    (3, 16)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma": [None, Interval(numbers.Real, 0.0, None, closed="neither")],
        "features": [StrOptions({"paired", "phase"})],
        "random_state": ["random_state", np.random.Generator, np.random.SeedSequence,
                         np.random.BitGenerator],
        "n_threads": [None, numbers.Integral],
    }

    def __init__(self, n_components=100, *, sigma=None, features="paired", random_state=None,
                 n_threads=None):
        self.n_components = n_components
        self.sigma = sigma
        self.features = features
        self.random_state = random_state
        self.n_threads = n_threads

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Draw B, Π (and the phases) for the input dimension of X (computed aside and
        published in one step)."""
        D = int(self.n_components)
        if self.features == "paired" and D % 2:
            raise ValueError(f"FastfoodFFT: features='paired' needs an even n_components, got "
                             f"{D}")
        if not (isinstance(self.sigma, type(None)) or math.isfinite(self.sigma)):
            raise ValueError(f"FastfoodFFT: sigma must be a positive finite number, got "
                             f"{self.sigma!r}")
        work = BaseEstimator.__new__(type(self))
        work.__dict__ = dict(self.__dict__)
        X = validate_data(work, X, dtype=[np.float64, np.float32], ensure_all_finite=True)
        d = next_power_of_two(X.shape[1])
        n_freq = D // 2 if self.features == "paired" else D
        n_blocks = -(-n_freq // d)
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            rs = rs.randint(0, 2**63 - 1, dtype=np.int64)
        rng = np.random.default_rng(rs)
        B = (2 * rng.integers(0, 2, size=(n_blocks, d), dtype=np.int8) - 1).astype(np.int8)
        P = rng.permuted(np.tile(np.arange(d, dtype=np.int32), (n_blocks, 1)), axis=1)
        off = None
        if self.features == "phase":
            off = rng.uniform(0.0, 2.0 * np.pi, size=n_freq).astype(X.dtype)
        new = {k: v for k, v in self.__dict__.items() if not k.endswith("_")}
        new.update(n_features_in_=work.n_features_in_, d_padded_=d, n_freq_=n_freq,
                   n_blocks_=n_blocks, sigma_=1.0 if self.sigma is None else float(self.sigma),
                   B_packed_=np.packbits(B < 0, axis=1, bitorder="little"), P_=P, offsets_=off,
                   _n_features_out=D)
        if hasattr(work, "feature_names_in_"):
            new["feature_names_in_"] = work.feature_names_in_
        self.__dict__ = new
        return self

    @property
    def B_(self):
        """Random signs ±1, int8 array (n_blocks_, d_padded_)."""
        check_is_fitted(self)
        bits = np.unpackbits(self.B_packed_, axis=1, count=self.d_padded_, bitorder="little")
        return 1 - 2 * bits.astype(np.int8)

    def _compute(self, X, mode):
        check_is_fitted(self)
        st = self.__dict__
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          ensure_all_finite=True)
        n, d, n_freq = X.shape[0], st["d_padded_"], st["n_freq_"]
        P = np.asarray(st["P_"])
        if P.shape != (st["n_blocks_"], d) or P.min() < 0 or P.max() >= d:
            raise ValueError("FastfoodFFT: the fitted P_ is not a (n_blocks_, d_padded_) array "
                             "of indices in [0, d_padded_); call fit again")
        Xp = np.zeros((n, d), dtype=np.float64)
        Xp[:, :X.shape[1]] = X
        Z = np.empty((n, st["n_blocks_"] * d), dtype=np.float64)
        B = self.B_
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: the error below
            for b in range(st["n_blocks_"]):
                R = _real_dft_rows(Xp * B[b])
                Z[:, b * d:(b + 1) * d] = R[:, P[b]]
            Z = Z[:, :n_freq] / st["sigma_"]
        if not np.isfinite(Z).all():
            raise ValueError(f"FastfoodFFT.transform: the random projections of some rows of X "
                             f"overflowed to a non-finite value (entries up to |x| = "
                             f"{float(np.max(np.abs(X))):.3g}), so their features would be NaN; "
                             "rescale X (e.g. with sklearn.preprocessing.StandardScaler)")
        if mode == 2:
            return Z.astype(X.dtype)
        if mode == 0:
            out = np.hstack([np.cos(Z), np.sin(Z)]) / math.sqrt(n_freq)
        else:
            out = math.sqrt(2.0 / n_freq) * np.cos(Z + st["offsets_"].astype(np.float64))
        return out.astype(X.dtype)

    def transform(self, X):
        """The features of X, shape (n_samples, n_components)."""
        return self._compute(X, 0 if self.features == "paired" else 1)

    def _project(self, X):
        """The projections V x, shape (n_samples, n_freq_)."""
        return self._compute(X, 2)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
