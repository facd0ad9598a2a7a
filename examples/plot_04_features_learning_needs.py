"""
How many features does learning need?
=====================================

The variance of :math:`z(x)^\\top z(y)` is :math:`O(1/D)`, so approximating the Gaussian kernel
to :math:`\\varepsilon = 0.01` everywhere needs thousands of features (Hoeffding's bound asks for
:math:`2\\ln(2/\\delta)/\\varepsilon^2 \\approx 74{,}000`).  Learning usually needs far fewer:
ridge regression on random features approaches exact kernel ridge long before the kernel itself
is accurate (Rudi & Rosasco 2017: :math:`O(\\sqrt n \\log n)` features suffice for the same
rate).

We fit :class:`randfeat.RandomFeatureRidge` on random Fourier features of growing width and
compare its test error with :class:`randfeat.ExactKernelRidge` (same kernel, bandwidth and
per-sample penalty), and with the kernel approximation error itself.
"""

import matplotlib.pyplot as plt
import numpy as np

from randfeat import ExactKernelRidge, RandomFeatureRidge, RandomFourierFeatures
from randfeat.kernels import GaussianKernel

rng = np.random.default_rng(0)
n, d, sigma = 800, 5, 1.5
X = rng.uniform(-2, 2, (n + 1000, d))
y = np.sin(X[:, 0] * 1.5) + X[:, 1] * np.cos(X[:, 2]) + 0.1 * rng.standard_normal(len(X))
X_train, X_test, y_train, y_test = X[:n], X[n:], y[:n], y[n:]

alpha = 1e-2  # one per-sample penalty for both: ExactKernelRidge's scale, alpha_scale="mean"
exact = ExactKernelRidge("gaussian", sigma=sigma, alphas=[alpha]).fit(X_train, y_train)
rmse_exact = np.sqrt(np.mean((exact.predict(X_test) - y_test) ** 2))

K_test = GaussianKernel(sigma=sigma)(X_test[:200], X_train[:200])
sizes = [8, 16, 32, 64, 128, 256, 512]
rel_excess, kernel_err = [], []
for D in sizes:
    ex, ke = [], []
    for seed in range(3):
        rff = RandomFourierFeatures(2 * D, sigma=sigma, random_state=seed)
        model = RandomFeatureRidge(rff, alphas=[alpha], alpha_scale="mean").fit(X_train, y_train)
        rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
        ex.append(rmse / rmse_exact - 1)
        feats = model.features_  # the fitted copy of the map
        Z1, Z2 = feats.transform(X_test[:200]), feats.transform(X_train[:200])
        ke.append(np.abs(Z1 @ Z2.T - K_test).max())
    rel_excess.append(np.median(ex))
    kernel_err.append(np.median(ke))
    print(f"D = {D:5d} frequencies: test RMSE {100 * rel_excess[-1]:6.2f} % above exact KRR, "
          f"max kernel error {kernel_err[-1]:.3f}")

fig, ax = plt.subplots(figsize=(6.5, 4))
ax.loglog(sizes, np.maximum(rel_excess, 1e-4), "o-", label="test RMSE / exact KRR - 1")
ax.loglog(sizes, kernel_err, "s-", label="max |z(x)'z(y) - k(x, y)|")
ax.axhline(0.01, color="k", lw=0.8, ls=":")
ax.text(sizes[0], 0.011, "1 %", fontsize=8)
ax.set_xlabel("frequencies D (2D columns)")
ax.set_title("Learning needs fewer features than the kernel")
ax.legend()
fig.tight_layout()
plt.show()
