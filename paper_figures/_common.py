"""Shared pieces of the paper reproductions: data preparation, feature maps, fitting, metrics.

Protocol used by every table (documented in README.md):

* **Split** — the dataset's official split when it has one (adult/a9a, insurance, MSD), otherwise
  a seeded random split with 80% of the rows for training (FF13 trains on 80%; RR07's CPU/Census
  training sizes are ~80% too).  Repetition ``r`` uses split seed ``r``.
* **Preprocessing** — inputs standardised with the training mean/std (``StandardScaler``);
  targets left in their units (the learner fits an unpenalised intercept).
* **Bandwidth** — chosen by validation: the training part (subsampled to ``search_rows``) is fed to
  :class:`randfeat.linear.RandomFeatureRidge` for every candidate ``sigma`` (multiples of the
  median pairwise L2 distance, L1 for the Laplacian binning kernel), each fit choosing its own
  ``alpha`` on an internal 20% validation split; the ``sigma`` with the lowest validation error
  wins; when it lies at the edge of the grid the grid is extended by a factor 2 (at most twice).
  This is done once (repetition 0) per dataset and kernel.
* **Regularisation** — per-sample ridge penalty ``alpha`` chosen on a 20% validation split of the
  training set inside every fit (grid ``10**arange(-8, 1)``), then refitted on all training rows.
* **Training time** — wall-clock of the final ``fit`` (feature map + streaming accumulation +
  validation of ``alpha`` + solve), not counting the bandwidth search, on this machine.
"""

from __future__ import annotations

import os
import time
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

from analysis.repro import progress as _progress
from analysis.repro import seed_int
from randfeat import datasets
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier

ALPHAS = tuple(10.0 ** np.arange(-8, 1))
SIGMA_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0)


def derive_seed(base: int, *names) -> int:
    """Seed derived from a base seed and component names: the shared derivation of
    :func:`analysis.repro.seed_sequence` (names hashed into the spawn key), drawn as one 32-bit
    integer because the paper targets nest derivations and hand seeds to scikit-learn too."""
    return seed_int(base, *names)


# ----------------------------------------------------------------------------- feature maps
def _feature_classes():
    """randfeat's feature maps.  PAPER_FIGURES_STANDIN=<module> substitutes them (development)."""
    mod = os.environ.get("PAPER_FIGURES_STANDIN")
    if mod:  # pragma: no cover - development only
        import importlib
        m = importlib.import_module(mod)
        warnings.warn(f"paper_figures: using DEVELOPMENT stand-in feature maps from {mod}",
                      stacklevel=2)
        return m.RandomFourierFeatures, m.Fastfood, m.RandomBinningFeatures
    import randfeat
    missing = [c for c in ("RandomFourierFeatures", "Fastfood", "RandomBinningFeatures")
               if not hasattr(randfeat, c)]
    if missing:
        raise ImportError(f"paper_figures needs randfeat.{', randfeat.'.join(missing)}; merge the "
                          "rff / fastfood / binning branches and build the extensions "
                          "(python setup.py build_ext --inplace)")
    return randfeat.RandomFourierFeatures, randfeat.Fastfood, randfeat.RandomBinningFeatures


METHOD_LABELS = {
    "exact": "Exact RBF", "nystrom": "Nyström RBF", "rks": "RKS RBF", "ff_fft": "Fastfood FFT",
    "ff_rbf": "Fastfood RBF", "ff_ballsum": "Fastfood ball-sum ('Matérn')",
    "fourier": "Fourier+LS", "binning": "Binning+LS",
}
BALLSUM_T = 2


def make_features(method, n, sigma, seed, n_rows=None):
    """Unfitted feature map.  ``n`` = number of OUTPUT columns (paired cos/sin: n/2 frequencies);
    for ``binning`` ``n`` is the number of grids P.  Nyström uses min(n, n_rows) landmarks."""
    RFF, FF, RB = _feature_classes()
    if method in ("rks", "fourier"):
        return RFF(n, kernel="gaussian", sigma=sigma, features="paired", random_state=seed)
    if method == "ff_rbf":
        return FF(n, kernel="gaussian", sigma=sigma, features="paired", random_state=seed)
    if method == "ff_fft":
        from randfeat._fastfood_fft import FastfoodFFT  # a benchmark map, not a public estimator
        return FastfoodFFT(n, sigma=sigma, features="paired", random_state=seed)
    if method == "ff_ballsum":
        return FF(n, kernel="ballsum", sigma=sigma, t=BALLSUM_T, features="paired",
                  random_state=seed)
    if method == "binning":
        return RB(n, kernel="laplacian", sigma=sigma, random_state=seed)
    if method == "nystrom":
        from sklearn.kernel_approximation import Nystroem
        return Nystroem(kernel="rbf", gamma=1.0 / (2.0 * sigma ** 2),
                        n_components=n if n_rows is None else min(n, n_rows),
                        random_state=seed % (2 ** 31))
    raise ValueError(f"unknown method {method!r}")


# ----------------------------------------------------------------------------- data
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


# ----------------------------------------------------------------------------- learners
def make_learner(method, task, *, n, sigma, seed, alphas=ALPHAS, n_rows=None):
    feats = make_features(method, n, sigma, seed, n_rows=n_rows)
    cls = RandomFeatureRidgeClassifier if task != "regression" else RandomFeatureRidge
    kw = {}
    if method == "binning":
        kw = dict(tol=1e-6, max_iter=300)
    return cls(feats, alphas=alphas, validation_fraction=0.2, chunk_size=4096,
               random_state=derive_seed(seed, "validation"), **kw)


class ExactKernelRidge:
    """Exact Gaussian kernel ridge regression (dense n x n Cholesky), alpha by validation.

    Solves (K + n alpha I) c = y - mean(y).  ``alpha`` is chosen on a 20% validation split of at
    most ``search_rows`` training rows (one Cholesky per candidate), then the full system is
    solved once.
    """

    def __init__(self, sigma, *, alphas=ALPHAS, search_rows=3000, seed=0):
        self.sigma, self.alphas, self.search_rows, self.seed = sigma, alphas, search_rows, seed

    def _K(self, A, B):
        from sklearn.metrics.pairwise import rbf_kernel
        return rbf_kernel(A, B, gamma=1.0 / (2 * self.sigma ** 2))

    def _solve(self, X, y, alpha):
        K = self._K(X, X)
        K[np.diag_indices_from(K)] += len(X) * alpha
        cf = scipy.linalg.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)
        return scipy.linalg.cho_solve(cf, y, check_finite=False)

    def fit(self, X, y):
        rng = np.random.default_rng(self.seed)
        idx = rng.permutation(len(X))[: self.search_rows]
        n_val = max(1, len(idx) // 5)
        va, tr = idx[:n_val], idx[n_val:]
        ym = y[tr].mean()
        Kv = self._K(X[va], X[tr])
        errs = []
        for a in self.alphas:
            try:
                c = self._solve(X[tr], y[tr] - ym, a)
                errs.append(float(np.mean((Kv @ c + ym - y[va]) ** 2)))
            except np.linalg.LinAlgError:
                errs.append(np.inf)
        self.validation_scores_ = np.array(errs)
        self.alpha_ = float(self.alphas[int(np.argmin(errs))])
        self.mean_ = y.mean()
        self.X_ = X
        self.coef_ = self._solve(X, y - self.mean_, self.alpha_)
        return self

    def predict(self, X):
        out = np.empty(len(X))
        for s in range(0, len(X), 2048):
            out[s:s + 2048] = self._K(X[s:s + 2048], self.X_) @ self.coef_ + self.mean_
        return out


def timing_conditions():
    """What the fit times of a computation depend on, recorded next to them: the CPUs this
    process may use (affinity), the threads of randfeat's learners (``n_threads=None``), the
    BLAS threads in effect outside them (threadpoolctl), OMP_NUM_THREADS and the 1-minute load
    average when the computation starts."""
    from threadpoolctl import threadpool_info

    from randfeat._validation import check_n_threads, effective_n_cpus
    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return dict(cpus=effective_n_cpus(), learner_threads=check_n_threads(None),
                blas_threads=max(blas) if blas else None,
                omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
                load_average=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)


def describe_timing(t):
    """One phrase for :func:`timing_conditions`'s record (``None`` for rows computed before it
    was recorded)."""
    if not t:
        return "timing conditions not recorded"
    learner = (f" ({t['learner_threads']} learner threads, single-threaded BLAS in each)"
               if "learner_threads" in t else "")
    return (f"timed on {t['cpus']} CPU(s){learner}, {t['blas_threads']} BLAS thread(s) "
            f"outside the learner, load {t['load_average']}")


def fit_timed(method, data, *, n, sigma, seed, alphas=ALPHAS):
    """Fit on data['Xtr'] and predict data['Xte']: (predictions, fit wall seconds, model, fit CPU
    seconds).  CPU seconds (``time.process_time``, all threads of the process) measure the work
    independently of other processes competing for the cores."""
    if method == "exact":
        model = ExactKernelRidge(sigma, alphas=alphas, seed=seed)
    else:
        model = make_learner(method, data["task"], n=n, sigma=sigma, seed=seed, alphas=alphas,
                             n_rows=len(data["Xtr"]))
    c0, t0 = time.process_time(), time.perf_counter()
    model.fit(data["Xtr"], data["ytr"])
    fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return model.predict(data["Xte"]), fit_s, model, cpu_s


def select_sigma(method, data, *, n, seed, factors=SIGMA_FACTORS, search_rows=4000,
                 alphas=ALPHAS, max_extend=2):
    """Bandwidth by validation on at most ``search_rows`` training rows (see module docstring).

    Returns (sigma, {sigma: validation error}).  The validation error is the best (over
    ``alphas``) validation MSE / error rate of a RandomFeatureRidge(Classifier) fit on the
    subsample (``search_rows=None``: every training row).  While the best sigma is at an edge of
    the grid, the grid is extended by a factor 2 that way, at most ``max_extend`` times.
    """
    p = 1 if method == "binning" else 2
    X, y = data["Xtr"], data["ytr"]
    rng = np.random.default_rng(derive_seed(seed, "search"))
    idx = _subsample(y, search_rows, rng, data["task"] != "regression")
    Xs, ys = X[idx], y[idx]
    ref = median_distance(Xs, p=p, seed=derive_seed(seed, "median"))
    scores = {}
    gauss_method = "rks" if method == "exact" else method

    def score(s):
        model = make_learner(gauss_method, data["task"], n=n, sigma=s, seed=seed,
                             n_rows=len(Xs), alphas=alphas)
        model.fit(Xs, ys)
        scores[s] = float(np.min(model.validation_scores_))

    for f in factors:
        score(ref * f)
    # extend the grid (x2 / /2, at most twice each way) while the best is at its edge
    for _ in range(max_extend):
        best = min(scores, key=lambda s: (scores[s], -s))
        if best == max(scores) and len(scores) > 1:
            score(2 * best)
        elif best == min(scores) and len(scores) > 1:
            score(best / 2)
        else:
            break
    best = min(scores, key=lambda s: (scores[s], -s))
    return best, scores


# ----------------------------------------------------------------------------- metrics
def rr_error(task, y, pred):
    """RR07 Table 1 metric in %: classification error, or ||pred - y|| / ||y|| for regression."""
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    if task == "regression":
        return 100.0 * float(np.linalg.norm(pred - y) / np.linalg.norm(y))
    return 100.0 * float(np.mean(pred != y))


def rmse(y, pred):
    return float(np.sqrt(np.mean((np.asarray(pred, float) - np.asarray(y, float)) ** 2)))


def mean_std(values):
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else float("nan")


def bootstrap_se(metric, y, pred, *, seed, n_boot=1000):
    """Standard error of ``metric(y, pred)`` due to the finite test set: the standard deviation
    of the metric over ``n_boot`` resamples (with replacement) of the test points, for one
    fitted model.  This is the noise of a fixed split (e.g. a9a or COIL 2000), where repeated
    runs only vary the random features."""
    y, pred = np.asarray(y), np.asarray(pred)
    rng = np.random.default_rng(seed)
    vals = [metric(y[i], pred[i]) for i in
            (rng.integers(0, y.shape[0], y.shape[0]) for _ in range(n_boot))]
    return float(np.std(vals, ddof=1))


def noise(std_reps, se_test):
    """Noise of a reproduced figure: the larger of the spread over repetitions (nan with one
    repetition) and the mean bootstrap standard error of the test metric (nan if not known)."""
    vals = [v for v in (std_reps, se_test) if v is not None and np.isfinite(v)]
    return max(vals) if vals else 0.0


# ----------------------------------------------------------------------------- output
def write_table_md(out_dir, name, paragraphs, header, rows, result):
    """Write ``<out_dir>/<name>.md``: the paragraphs, the table and the compute time recorded in
    ``result``; returns ``[path]`` (a target's ``render`` result)."""
    txt = [*paragraphs, md_table(header, rows), "",
           f"Compute time of this table: {result.get('compute_seconds', float('nan')):.0f} s."]
    path = Path(out_dir) / f"{name}.md"
    path.write_text("\n".join(txt) + "\n")
    return [path]


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def fmt(x, nd=3):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    if isinstance(x, float):
        if abs(x) >= 1000 or (abs(x) < 1e-3 and x != 0):
            return f"{x:.3g}"
        return f"{x:.{nd}f}"
    return str(x)


def progress(iterable, desc="", **kw):
    """The shared progress line (:func:`analysis.repro.progress`) on stderr."""
    return _progress(iterable, desc=desc, **kw)
