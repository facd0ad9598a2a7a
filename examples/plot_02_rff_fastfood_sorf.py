"""
RFF, Fastfood and SORF: error and speed
=======================================

Three maps of the Gaussian kernel.  Random Fourier features (RFF) multiply by a dense
:math:`D \\times d` Gaussian matrix: :math:`O(Dd)` per row.  Fastfood (Le, Sarlós & Smola 2013)
and structured orthogonal random features (SORF, Yu et al. 2016) replace it by products of
Walsh-Hadamard transforms and diagonal matrices: :math:`O(D \\log d)` per row and :math:`O(D)`
parameters.

Left: the relative Gram-matrix error :math:`\\|\\hat K - K\\|_2 / \\|K\\|_2` against the number
of features (mean of 2 seeds).  Right: transform time per row against the input dimension at
:math:`D = 2048` (best of 3, one thread).  The timings are taken while the site is built: they
show the trend on that machine, not a benchmark (see ``benchmarks/README.md``).
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from randfeat import Fastfood, RandomFourierFeatures, StructuredOrthogonalFeatures
from randfeat.kernels import GaussianKernel

rng = np.random.default_rng(0)
d = 64
sigma = np.sqrt(d)
X = rng.standard_normal((300, d))
K = GaussianKernel(sigma=sigma)(X)

makers = {
    "RFF": lambda D, s: RandomFourierFeatures(D, sigma=sigma, random_state=s, n_threads=1),
    "Fastfood": lambda D, s: Fastfood(D, sigma=sigma, random_state=s, n_threads=1),
    "SORF": lambda D, s: StructuredOrthogonalFeatures(D, sigma=sigma, random_state=s,
                                                       n_threads=1),
}
sizes = [64, 128, 256, 512, 1024]
errors = {name: [] for name in makers}
for name, make in makers.items():
    for D in sizes:
        e = []
        for seed in range(2):
            Z = make(D, seed).fit_transform(X)
            e.append(np.linalg.norm(Z @ Z.T - K, 2) / np.linalg.norm(K, 2))
        errors[name].append(np.mean(e))


def best_time(est, X, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        est.transform(X)
        best = min(best, time.perf_counter() - t0)
    return best / len(X)


dims = [16, 64, 256, 1024]
times = {name: [] for name in makers}
for dd in dims:
    Xd = rng.standard_normal((128, dd))
    for name, make in makers.items():
        est = make(2048, 0).set_params(sigma=np.sqrt(dd)).fit(Xd)
        times[name].append(best_time(est, Xd))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for name in makers:
    ax1.loglog(sizes, errors[name], "o-", label=name)
    ax2.loglog(dims, times[name], "o-", label=name)
ax1.loglog(sizes, errors["RFF"][0] * np.sqrt(sizes[0] / np.array(sizes)), "k:",
           label="$D^{-1/2}$")
ax1.set_xlabel("output columns D")
ax1.set_ylabel("relative Gram error (spectral norm)")
ax1.set_title(f"Gaussian kernel, d = {d}, 300 points")
ax1.legend()
ax2.set_xlabel("input dimension d")
ax2.set_ylabel("seconds per row (D = 2048, one thread)")
ax2.set_title("transform time")
ax2.legend()
fig.tight_layout()
plt.show()
