"""
A dask fit on a local cluster
=============================

Every randfeat transformer and learner accepts a ``dask.array``.  ``transform`` stays lazy and
gives the same rows whatever the chunking; :class:`~randfeat.RandomFeatureRidge` computes the
sufficient statistics :math:`Z^\\top Z, Z^\\top y` of each block on the workers and merges them in
a fixed tree (:class:`~randfeat.RidgeStatistics`), so the :math:`N \\times D` feature matrix is
never formed anywhere.

Here a ``distributed.LocalCluster`` (two worker threads in this process, so that the example
runs anywhere) fits 100,000 rows in chunks of 25,000, and we check the model against the
in-memory fit.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from randfeat import RandomFeatureRidge, RandomFourierFeatures

cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                       dashboard_address=None)
client = Client(cluster)

X = da.random.default_rng(0).standard_normal((100_000, 8), chunks=(25_000, 8))
y = da.sin(X[:, 0]) * X[:, 1] + 0.1 * da.random.default_rng(1).standard_normal(100_000,
                                                                               chunks=25_000)

model = RandomFeatureRidge(RandomFourierFeatures(512, sigma=2.0, random_state=0),
                           alphas=[1e-3]).fit(X, y)

X_mem, y_mem = X.compute(), y.compute()
ref = RandomFeatureRidge(RandomFourierFeatures(512, sigma=2.0, random_state=0),
                         alphas=[1e-3]).fit(X_mem, y_mem)
diff = np.abs(model.coef_ - ref.coef_).max() / np.abs(ref.coef_).max()
print(f"dask fit against in-memory fit: max relative difference of the weights {diff:.2e}")

Z = model.features_.transform(X)  # the fitted map; lazy: nothing computed yet
print(Z)

client.close()
cluster.close()

# %%
# The predictions on a grid along the first coordinate (second fixed at 1).
grid = np.zeros((200, 8))
grid[:, 0] = np.linspace(-3, 3, 200)
grid[:, 1] = 1.0
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(grid[:, 0], np.sin(grid[:, 0]), "k--", label="sin(x1) x2")
ax.plot(grid[:, 0], model.predict(grid), label="RandomFeatureRidge, dask fit")
ax.set_xlabel("x1 (x2 = 1, others 0)")
ax.legend()
ax.set_title(f"100,000 rows in 4 chunks; weights equal the in-memory fit to {diff:.0e}")
fig.tight_layout()
plt.show()
