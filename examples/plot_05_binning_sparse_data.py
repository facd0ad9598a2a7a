"""
Random binning on sparse data
=============================

Random binning (Rahimi & Recht 2007, Algorithm 2) cuts every coordinate into randomly shifted
cells of random pitch; each grid puts a point in one cell, and :math:`z(x)^\\top z(y)` is the
fraction of grids in which :math:`x` and :math:`y` share a cell, an unbiased estimate of the
Laplacian kernel :math:`\\exp(-\\|x - y\\|_1/\\sigma)`.  Its output is sparse whatever the input:
one non-zero per grid and row.

On sparse data (here: 1,500 rows of 200 mostly-zero non-negative columns, like counts or
one-hot codes) a grid in which all training points share one cell along a coordinate costs
nothing there.  Every map takes the ``scipy.sparse`` matrix directly: random binning (like
Fastfood and SORF) densifies it one block of rows at a time, with the dense array's output bit
for bit (zeros are coordinates like any other); random Fourier features multiply it by the
frequencies.

We learn a classifier on binning features with :class:`randfeat.RandomFeatureRidgeClassifier`
(LSQR on the sparse features) and compare with random Fourier features for the same kernel.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from randfeat import RandomBinningFeatures, RandomFeatureRidgeClassifier, RandomFourierFeatures

rng = np.random.default_rng(0)
n, d = 1500, 200
X_sparse = sp.random(n, d, density=0.03, format="csr", random_state=0,
                     data_rvs=lambda k: rng.poisson(3, k) + 1.0)
X = X_sparse.toarray()  # for the target and the bandwidth below
score = X[:, :10].sum(axis=1) - X[:, 10:20].sum(axis=1)
y = (score > np.median(score)).astype(int)
# the maps and learners take the CSR rows directly
X_train, X_test, y_train, y_test = X_sparse[:1100], X_sparse[1100:], y[:1100], y[1100:]
print(f"input: {n} x {d}, {X_sparse.nnz / n:.1f} non-zeros per row")

# bandwidth: the median L1 distance between training rows
sub = X[:300]
sigma = float(np.median(np.abs(sub[:, None, :] - sub[None, :, :]).sum(-1)))
print(f"sigma = {sigma:.1f} (median L1 distance)")
grids = [10, 30, 100]
alphas = np.logspace(-6, 3, 4)
acc_bin, acc_rff, t_bin, t_rff = [], [], [], []
for P in grids:
    binning = RandomBinningFeatures(P, kernel="laplacian", sigma=sigma, random_state=0)
    t0 = time.perf_counter()
    clf = RandomFeatureRidgeClassifier(binning, alphas=alphas, random_state=0).fit(X_train, y_train)
    t_bin.append(time.perf_counter() - t0)
    acc_bin.append(clf.score(X_test, y_test))
    Z = clf.features_.transform(X_test)  # the fitted copy of the map
    rff = RandomFourierFeatures(2 * P, kernel="laplacian", sigma=sigma, random_state=0)
    t0 = time.perf_counter()
    clf_rff = RandomFeatureRidgeClassifier(rff, alphas=alphas, random_state=0).fit(X_train, y_train)
    t_rff.append(time.perf_counter() - t0)
    acc_rff.append(clf_rff.score(X_test, y_test))
    print(f"P = {P:4d} grids: {type(Z).__name__} {Z.shape}, {Z.nnz // Z.shape[0]} non-zeros "
          f"per row; accuracy binning {acc_bin[-1]:.3f}, RFF ({2 * P} columns) "
          f"{acc_rff[-1]:.3f}")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.semilogx(grids, acc_bin, "o-", label="random binning (P grids)")
ax1.semilogx(grids, acc_rff, "s-", label="random Fourier (2P columns)")
ax1.set_xlabel("P")
ax1.set_ylabel("test accuracy")
ax1.set_title("Laplacian kernel classifier on sparse counts")
ax1.legend()
ax2.spy(clf.features_.transform(X_test[:60]), markersize=1, aspect="auto")
ax2.set_title(f"binning features of 60 rows ({grids[-1]} grids)")
ax2.set_xlabel("column")
ax2.set_ylabel("row")
fig.tight_layout()
plt.show()
