"""
Choosing alpha and sigma: leave-one-out, the evidence, a held-out split
=======================================================================

:class:`~randfeat.RandomFeatureRidge` and :class:`~randfeat.RandomFeatureRidgeClassifier` choose
the penalty :math:`\\alpha` along a grid by ``selection``:

* ``"loo"`` (the default, as scikit-learn's ``RidgeCV``): the exact leave-one-out error of every
  :math:`\\alpha` from one eigendecomposition of the :math:`D \\times D` statistics and one more
  pass over the rows for the hat diagonals;
* ``"evidence"``: the log marginal likelihood of Bayesian linear regression on the features (the
  noise variance at its maximum for each :math:`\\alpha`), from the same eigendecomposition and
  nothing else, maximised between the grid points;
* ``"holdout"``: the validation error on a random 20 % of the rows (randfeat's former default),
  then a refit on all rows.

:class:`~randfeat.linear.SigmaSearchCV` chooses the length scale :math:`\\sigma` of the features
by the same criterion (one refit of the features per :math:`\\sigma`).  Here, on **cpu_act**
(regression) and **Adult** (classification), each criterion chooses :math:`\\sigma` on a grid of
multiples of the median distance and :math:`\\alpha` on the default grid; we compare the test
error and the fit time of the whole search.  The theory is on the page *Model selection and the
posterior* of the documentation.

To keep the example at a few seconds, both training sets are subsampled to 2,000 rows and
:math:`D = 300` features (the test sets are whole); the data are read from ``RANDFEAT_DATA``
(:func:`randfeat.datasets.get_data_home`).
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from randfeat import RandomFourierFeatures
from randfeat.datasets import load_dataset, paper_split
from randfeat.linear import (
    AlphaAtGridEdgeWarning,
    RandomFeatureRidge,
    RandomFeatureRidgeClassifier,
    SigmaAtGridEdgeWarning,
    SigmaSearchCV,
)

N_TRAIN, D = 2000, 300
FACTORS = [0.5, 1.0, 2.0, 4.0]
CRITERIA = ["loo", "evidence", "holdout"]


def prepare(name):
    data = load_dataset(name)
    X_train, X_test, y_train, y_test = paper_split(data, random_state=0)
    if sp.issparse(X_train):
        X_train, X_test = X_train.toarray(), X_test.toarray()
    idx = np.random.default_rng(0).permutation(len(X_train))[:N_TRAIN]
    X_train, y_train = X_train[idx], y_train[idx]
    mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
    sd[sd == 0] = 1.0
    X_train, X_test = (X_train - mu) / sd, (X_test - mu) / sd
    # the median distance between training rows: the centre of the sigma grid
    sub = X_train[:500]
    d2 = (sub ** 2).sum(1)[:, None] + (sub ** 2).sum(1)[None] - 2 * sub @ sub.T
    sigma0 = float(np.sqrt(np.median(d2[np.triu_indices(len(sub), 1)])))
    return X_train, X_test, y_train, y_test, sigma0


results = {}
curves = {}
for name, task in (("cpu_act", "regression"), ("adult", "classification")):
    X_train, X_test, y_train, y_test, sigma0 = prepare(name)
    sigmas = sigma0 * np.array(FACTORS)
    for crit in CRITERIA:
        cls = RandomFeatureRidge if task == "regression" else RandomFeatureRidgeClassifier
        learner = cls(RandomFourierFeatures(D, random_state=0), selection=crit, random_state=0)
        search = SigmaSearchCV(learner, sigmas, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AlphaAtGridEdgeWarning)
            warnings.simplefilter("ignore", SigmaAtGridEdgeWarning)
            t0 = time.perf_counter()
            search.fit(X_train, y_train)
            t = time.perf_counter() - t0
        pred = search.predict(X_test)
        if task == "regression":
            err = float(np.sqrt(np.mean((pred - y_test) ** 2)))
        else:
            err = 100.0 * float(np.mean(pred != y_test))
        results[name, crit] = dict(sigma=search.sigma_ / sigma0, alpha=search.alpha_,
                                   err=err, time=t)
        curves[name, crit] = (search.best_estimator_.alphas_,
                              search.best_estimator_.selection_curve_)
        unit = "RMSE" if task == "regression" else "error %"
        print(f"{name:8s} {crit:9s}: sigma = {search.sigma_ / sigma0:4.2f} x median, alpha = "
              f"{search.alpha_:9.3g}, test {unit} {err:7.3f}, search {t:5.2f} s "
              f"({len(sigmas)} sigmas)")

# %%
# Leave-one-out and the hold-out split estimate the same prediction error (the split from a
# fifth of the rows, so more noisily); the evidence is a likelihood, which for these
# non-Gaussian targets (bounded CPU usage, ±1 class labels) may prefer another trade-off.
# Leave-one-out costs one more pass over the rows than the evidence (the hat diagonals), the
# hold-out split one Cholesky factorisation per alpha instead of one eigendecomposition.
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
width = 0.25
for k, crit in enumerate(CRITERIA):
    for j, name in enumerate(("cpu_act", "adult")):
        r = results[name, crit]
        axes[j].bar(k, r["err"], width=0.6, color=f"C{k}")
        axes[j].text(k, r["err"], f"σ×{r['sigma']:g}\nα={r['alpha']:.2g}", ha="center",
                     va="bottom", fontsize=7)
    axes[2].bar(np.arange(2) + (k - 1) * width, [results[n, crit]["time"]
                                                 for n in ("cpu_act", "adult")],
                width=width, color=f"C{k}", label=crit)
for j, (name, unit) in enumerate((("cpu_act", "test RMSE"), ("adult", "test error (%)"))):
    axes[j].set_xticks(range(len(CRITERIA)), CRITERIA)
    axes[j].set_ylabel(unit)
    lo = min(results[name, c]["err"] for c in CRITERIA)
    axes[j].set_ylim(0.9 * lo, 1.08 * max(results[name, c]["err"] for c in CRITERIA))
    axes[j].set_title(f"{name}: chosen σ (× median distance) and α")
axes[2].set_xticks([0, 1], ["cpu_act", "adult"])
axes[2].set_ylabel("fit time of the σ search (s)")
axes[2].set_title(f"{len(FACTORS)} σ × the default α grid, D = {D}")
axes[2].legend()
fig.tight_layout()
plt.show()
