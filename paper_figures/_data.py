"""paper_figures: loading, splitting, subsampling and preprocessing the datasets."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

from paper_figures._features import derive_seed
from randfeat import datasets

__all__ = ["dataset_available", "RobustPreprocessor", "prepare", "median_distance",
           "SKEW_THRESHOLD", "PREPROCESSING"]


@lru_cache(maxsize=4)
def _load(name, data_dir):
    if name == "covtype_binary":
        return datasets.load_covtype(data_dir, binary=True)
    return datasets.load_dataset(name, data_dir)


def dataset_available(name, data_dir):
    """(True, '') or (False, the loader's missing-file message)."""
    try:
        _load(name, data_dir)
        return True, ""
    except FileNotFoundError as e:
        return False, str(e)


def _subsample(y, m, rng, classification):
    n = len(y)
    if m is None or m >= n:
        return np.arange(n)
    perm = rng.permutation(n)
    if classification:  # keep every class present
        first = [perm[np.flatnonzero(y[perm] == c)[0]] for c in np.unique(y)]
        rest = perm[~np.isin(perm, first)]
        return np.sort(np.r_[first, rest[:max(0, m - len(first))]])
    return np.sort(perm[:m])


SKEW_THRESHOLD = 2.0
PREPROCESSING = ("standard", "robust")


class RobustPreprocessor:
    """The "robust" input preprocessing of RR07 Table 1 / Figure 3 (README, Protocol).

    Fitted on the training rows only, column by column:

    * **binary columns** (at most two distinct values, both in {0, 1}: one-hot / indicator
      columns such as all of a9a's 123 columns or KDDCUP99's one-hot categoricals) are kept as
      0/1 — standardising an indicator that is 1 in 0.1% of the rows turns it into a value of
      ~30 that dominates every distance and hence the Gaussian kernel;
    * **heavy-tailed count columns** (non-negative, more than two distinct values, sample
      skewness > ``SKEW_THRESHOLD`` = 2) are replaced by ``log1p(max(x, 0))``;
    * every non-binary column is then standardised with the training mean / std.

    The rule depends only on training statistics and is the same for every dataset.
    """

    def __init__(self, skew_threshold=SKEW_THRESHOLD):
        self.skew_threshold = skew_threshold

    def fit(self, X):
        from scipy.stats import skew
        X = np.asarray(X, dtype=np.float64)
        lo = X.min(axis=0)
        n_distinct = np.array([min(3, np.unique(X[:, j]).size) for j in range(X.shape[1])])
        is01 = np.all((X == 0) | (X == 1), axis=0)
        self.binary_ = (n_distinct <= 2) & is01
        with np.errstate(all="ignore"):
            sk = np.nan_to_num(skew(X, axis=0), nan=0.0)
        self.log_ = (~self.binary_) & (lo >= 0) & (n_distinct > 2) & (sk > self.skew_threshold)
        self.scale_cols_ = ~self.binary_
        Xl = self._log(X)
        self.mean_ = Xl[:, self.scale_cols_].mean(axis=0)
        sd = Xl[:, self.scale_cols_].std(axis=0)
        self.std_ = np.where(sd > 0, sd, 1.0)
        return self

    def _log(self, X):
        X = np.array(X, dtype=np.float64, copy=True)
        X[:, self.log_] = np.log1p(np.maximum(X[:, self.log_], 0.0))
        return X

    def transform(self, X):
        X = self._log(X)
        X[:, self.scale_cols_] = (X[:, self.scale_cols_] - self.mean_) / self.std_
        return X

    def describe(self):
        return dict(n_binary_kept=int(self.binary_.sum()), log1p_columns=[
            int(j) for j in np.flatnonzero(self.log_)])


def prepare(name, data_dir, *, split_seed=0, max_train=None, max_test=None,
            preprocess="standard"):
    """Split, optionally subsample (seeded) and preprocess a dataset; dense float64 arrays.

    ``preprocess``: "standard" — every column standardised with the training mean / std
    (FF13 tables); "robust" — :class:`RobustPreprocessor` (RR07 tables: binary columns kept
    0/1, heavy-tailed counts log1p, then standardised).
    """
    if preprocess not in PREPROCESSING:
        raise ValueError(f"preprocess must be one of {PREPROCESSING}, got {preprocess!r}")
    b = _load(name, data_dir)
    Xtr, Xte, ytr, yte = datasets.paper_split(b, random_state=split_seed)
    cls = b.task != "regression"
    rng = np.random.default_rng(derive_seed(split_seed, name, "subsample"))
    itr = _subsample(ytr, max_train, rng, cls)
    ite = _subsample(yte, max_test, rng, cls)
    Xtr, ytr, Xte, yte = Xtr[itr], ytr[itr], Xte[ite], yte[ite]
    if sp.issparse(Xtr):
        Xtr, Xte = Xtr.toarray(), Xte.toarray()
    sc = (StandardScaler() if preprocess == "standard" else RobustPreprocessor()).fit(Xtr)
    info = sc.describe() if preprocess == "robust" else {}
    return dict(Xtr=sc.transform(Xtr), Xte=sc.transform(Xte), ytr=np.asarray(ytr),
                yte=np.asarray(yte), task=b.task, name=name, descr=b.DESCR,
                n_train=len(itr), n_test=len(ite), preprocess=preprocess,
                preprocess_info=info)


def median_distance(X, *, p=2, seed=0, n_pairs=2000):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(X), n_pairs)
    j = rng.integers(0, len(X), n_pairs)
    d = np.linalg.norm(X[i] - X[j], ord=p, axis=1)
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0
