"""
A kernel approximated by each map
=================================

Every map of randfeat gives features :math:`z(x)` with :math:`z(x)^\\top z(y) \\approx k(x, y)`.
Here each map approximates its kernel on the same 200 points in :math:`\\mathbb R^{16}`, with
about the same number of output columns, and we plot the approximate Gram entries against the
exact ones (:mod:`randfeat.kernels`): the closer to the diagonal, the better.

* the Gaussian kernel :math:`\\exp(-\\|x-y\\|^2/(2\\sigma^2))` by random Fourier features with
  i.i.d., orthogonal (ORF) and quasi-Monte Carlo (Sobol') frequencies, by Fastfood and by
  structured orthogonal features (SORF);
* the Laplacian kernel :math:`\\exp(-\\|x-y\\|_1/\\sigma)` by random Fourier features (Cauchy
  frequencies) and by random binning (sparse output).
"""

import matplotlib.pyplot as plt
import numpy as np

from randfeat import (
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat.kernels import GaussianKernel, LaplacianKernel

rng = np.random.default_rng(0)
X = rng.standard_normal((200, 16))
D = 512

K_gauss = GaussianKernel(sigma=4.0)(X)
K_lap = LaplacianKernel(sigma=16.0)(X)

maps = {
    "RFF (iid)": (RandomFourierFeatures(D, sigma=4.0, random_state=0), K_gauss),
    "ORF": (RandomFourierFeatures(D, sigma=4.0, sampling="orthogonal", random_state=0),
            K_gauss),
    "RFF, Sobol' QMC": (RandomFourierFeatures(D, sigma=4.0, sampling="qmc_sobol",
                                               random_state=0), K_gauss),
    "Fastfood": (Fastfood(D, sigma=4.0, random_state=0), K_gauss),
    "SORF": (StructuredOrthogonalFeatures(D, sigma=4.0, random_state=0), K_gauss),
    "RFF, Laplacian": (RandomFourierFeatures(D, kernel="laplacian", sigma=16.0,
                                              random_state=0), K_lap),
    "random binning, Laplacian": (RandomBinningFeatures(D, kernel="laplacian", sigma=16.0,
                                                        random_state=0), K_lap),
}

fig, axes = plt.subplots(2, 4, figsize=(12, 6), sharex=True, sharey=True)
iu = np.triu_indices(len(X), 1)
for ax, (name, (est, K)) in zip(axes.ravel(), maps.items(), strict=False):
    Z = est.fit_transform(X)
    K_hat = Z @ Z.T
    K_hat = K_hat.toarray() if hasattr(K_hat, "toarray") else K_hat
    err = np.sqrt(np.mean((K_hat[iu] - K[iu]) ** 2))
    ax.plot(K[iu], K_hat[iu], ".", ms=1, alpha=0.3)
    ax.plot([0, 1], [0, 1], "k-", lw=0.8)
    ax.set_title(f"{name}\nRMS error {err:.3f}", fontsize=9)
    print(f"{name:28s} {Z.shape[1]:5d} columns, RMS error of the Gram entries {err:.4f}")
axes.ravel()[-1].axis("off")
for ax in axes[-1]:
    ax.set_xlabel("exact k(x, y)")
for ax in axes[:, 0]:
    ax.set_ylabel("z(x)'z(y)")
fig.suptitle(f"Gram entries, 200 points in R^16, {D} output columns (binning: {D} grids)")
fig.tight_layout()
plt.show()

# %%
# Random binning's output is sparse (one non-zero per grid and row): 512 grids give
# 512 non-zeros per row among many more columns.  Its variance per grid, :math:`k(1-k)`, is
# larger than a Fourier feature's at small :math:`k`, see :doc:`/guide/choosing`.
