"""Shared pieces of the learning-curve checks (issue 33): data, ridge fits through the public
learners or, where the library has no solver that is right, the dual in NumPy, and the audit
seams on ``randfeat.RandomFourierFeatures`` (docs/theory/learning_curve.md).

Solvers.  ``ridge_predictions`` fits ridge regression on a feature matrix ``Z`` (n x D) for a
path of penalties in scikit-learn's scale (``sum_i (y_i - z_i'w)^2 + alpha |w|^2``, no
intercept):

* D < n and every alpha > 0: ``randfeat.RidgeStatistics`` (the statistics Z'Z, Z'y and its
  Cholesky path) -- the library's learner;
* otherwise the dual ``w = Z' (Z Z' + alpha I)^-1 y`` in NumPy (one eigendecomposition of the
  n x n Gram for the whole path), and at alpha = 0 the minimum-norm least-squares solution
  ``Z^+ y`` (the same eigendecomposition, eigenvalues below n * eps * max dropped).  A library
  ``solver="dual"`` (for D > n, and the minimum-norm limit) would replace this branch.
"""

from __future__ import annotations

import contextlib
import functools
from unittest import mock

import numpy as np

__all__ = ["DataMissing", "normalise", "load_real", "ridge_predictions", "scale_frequencies",
           "scale_alphas", "mixture", "z90", "log_axes"]


class DataMissing(RuntimeError):
    """A real dataset is not in the data folder (``RANDFEAT_DATA``): the part is skipped."""


def z90():
    from scipy.stats import norm

    return float(norm.ppf(0.9))


def log_axes(ax, x=True, y=True):
    """Log scales without minor tick labels on the x axis (they overlap on short ranges)."""
    from matplotlib.ticker import NullFormatter

    if x:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    if y:
        ax.set_yscale("log")


def normalise(X, Xt):
    """Centre by the training mean and scale so that the mean squared norm of the training rows
    is 1 (Liao et al.'s normalisation: the Gaussian kernel with sigma = 1 is then non-trivial
    in any dimension)."""
    X, Xt = np.asarray(X, float), np.asarray(Xt, float)
    mu = X.mean(axis=0)
    X, Xt = X - mu, Xt - mu
    s = float(np.sqrt(np.mean(np.einsum("ij,ij->i", X, X))))
    s = s if s > 0 else 1.0
    return X / s, Xt / s


def mixture(n, p, rng, sep=2.0):
    """Liao et al.'s synthetic design: two equiprobable classes y = -1, +1, x = (y mu + g) /
    sqrt(p) with g ~ N(0, I_p) and mu = sep e_1."""
    y = rng.choice([-1.0, 1.0], n)
    G = rng.standard_normal((n, p))
    G[:, 0] += sep * y
    return G / np.sqrt(p), y


def load_real(name, n, n_test, rng):
    """``(X, y, Xt, yt)``: ``n + n_test`` rows drawn without replacement (``rng``) from a real
    dataset of ``randfeat.datasets`` (``adult``: a9a, 123 binary features, labels -1/+1;
    ``letter``: 16 features, y = +1 for A-M, -1 otherwise; ``cpu_act``: 21 features as
    z-scores clipped at +-5, the standardised target), normalised by :func:`normalise`.
    :class:`DataMissing` when the file is not in the data folder."""
    b = _dataset(name, _data_home())
    X, y = b.X, np.asarray(b.y)
    idx = rng.choice(X.shape[0], n + n_test, replace=False)
    X = X[idx]
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, float)
    if name == "letter":
        y = np.where(np.asarray(b.y)[idx] < 13, 1.0, -1.0)
    elif b.task == "regression":
        y = np.asarray(y[idx], float)
        y = (y - y[:n].mean()) / (y[:n].std() or 1.0)
        # columns of different units: z-scores (training rows), clipped at +-5
        mu, sd = X[:n].mean(axis=0), X[:n].std(axis=0)
        X = np.clip((X - mu) / np.where(sd > 0, sd, 1.0), -5.0, 5.0)
    else:
        y = np.asarray(y[idx], float)
    Xa, Xb = normalise(X[:n], X[n:])
    return Xa, y[:n], Xb, y[n:]


def _data_home():
    from randfeat import datasets

    return str(datasets.get_data_home())


@functools.lru_cache(maxsize=4)
def _dataset(name, home):
    """The Bunch of ``randfeat.datasets.load_dataset(name)`` from the folder ``home`` (read once
    per process)."""
    from randfeat import datasets

    try:
        return datasets.load_dataset(name, data_home=home)
    except datasets.DatasetNotFoundError as exc:
        raise DataMissing(f"{name}: not in the data folder ({str(exc).splitlines()[0][:160]}); "
                          "set RANDFEAT_DATA to the folder of the shared datasets") from exc


def _dual(G, Gt, y, alphas):
    """Dual ridge on the Gram ``G = Z Z'`` (and ``Gt = Zt Z'``) for every alpha; alpha = 0: the
    minimum-norm least-squares fit.  Returns (train predictions, test predictions)."""
    ev, U = np.linalg.eigh(0.5 * (G + G.T))
    ev = np.clip(ev, 0.0, None)
    Uy = U.T @ y
    cut = ev.max(initial=0.0) * len(ev) * np.finfo(float).eps
    GtU = Gt @ U
    tr, te = [], []
    for a in alphas:
        if a > 0:
            c = Uy / (ev + a)
        else:
            c = np.where(ev > cut, Uy / np.where(ev > cut, ev, 1.0), 0.0)
        tr.append(U @ (ev * c))
        te.append(GtU @ c)
    return np.array(tr), np.array(te)


def ridge_predictions(Z, y, Zt, alphas):
    """Train and test predictions of ridge without intercept on features ``Z`` for each penalty
    of ``alphas`` (scikit-learn's sum scale): arrays (len(alphas), n) and (len(alphas), n_t).
    See the module docstring for which solver runs."""
    import randfeat

    Z, Zt = np.asarray(Z, float), np.asarray(Zt, float)
    alphas = np.asarray(alphas, float)
    n, D = Z.shape
    if D < n and np.all(alphas > 0):
        st = randfeat.RidgeStatistics().partial_fit(Z, y)
        coef, _ = st.solve_path(alphas, fit_intercept=False)
        W = coef[:, 0, :]
        return W @ Z.T, W @ Zt.T
    return _dual(Z @ Z.T, Zt @ Z.T, y, alphas)


@contextlib.contextmanager
def scale_frequencies(factor, when=None):
    """Audit seam: every ``randfeat.RandomFourierFeatures`` fitted inside has its
    ``frequencies_`` multiplied by ``factor`` (a bandwidth error sigma / factor), optionally only
    when ``when(estimator)`` is true."""
    import randfeat

    real = randfeat.RandomFourierFeatures.fit

    def fit(self, X, y=None):
        out = real(self, X, y)
        if when is None or when(self):
            W = np.asarray(self.frequencies_) * factor
            W.flags.writeable = False
            self.frequencies_ = W
        return out

    with mock.patch.object(randfeat.RandomFourierFeatures, "fit", fit):
        yield


@contextlib.contextmanager
def scale_alphas(factor, cls_name="RandomFeatureRidge"):
    """Audit seam: every ``randfeat.<cls_name>`` (a ridge learner) fitted inside uses its
    ``alphas`` times ``factor`` (a penalty error)."""
    import randfeat

    cls = getattr(randfeat, cls_name)
    real = cls.fit

    def fit(self, X, y, *args, **kw):
        a = self.alphas
        self.alphas = np.asarray(a, float) * factor
        try:
            return real(self, X, y, *args, **kw)
        finally:
            self.alphas = a

    with mock.patch.object(cls, "fit", fit):
        yield
