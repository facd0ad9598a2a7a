"""
The FWHT against a dense Hadamard product
=========================================

:func:`randfeat.fwht` computes :math:`H_d x` for the unnormalised Walsh-Hadamard matrix
:math:`H_d` (entries :math:`\\pm 1`, :math:`H_d H_d = d I`) in :math:`O(d \\log d)` operations
instead of the :math:`O(d^2)` of the dense product.  Fastfood and SORF apply it to every input row.
We check it against SciPy's dense Hadamard matrix and time both as :math:`d` grows.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.linalg

from randfeat import fwht

rng = np.random.default_rng(0)

# %%
# Same result as the dense product
# --------------------------------
# The transform acts on the last axis of a 2-D array (one row per vector).
d = 256
X = rng.standard_normal((8, d))
H = scipy.linalg.hadamard(d)
print("max |fwht(X) - X H^T| =", np.abs(fwht(X) - X @ H.T).max())

# %%
# Time per vector
# ---------------
# Best of five timings of 64 vectors, float64, one thread.


def best_time(f, *args, repeat=5):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best


sizes = [2**k for k in range(4, 13)]
t_fwht, t_dense = [], []
for d in sizes:
    X = rng.standard_normal((64, d))
    H = scipy.linalg.hadamard(d).astype(np.float64)
    t_fwht.append(best_time(lambda A: fwht(A, n_threads=1), X) / 64)
    t_dense.append(best_time(lambda A, B: A @ B.T, X, H) / 64)

fig, ax = plt.subplots(figsize=(6, 4))
ax.loglog(sizes, t_dense, "o-", label="dense $X H^T$ (BLAS)")
ax.loglog(sizes, t_fwht, "s-", label="randfeat.fwht")
ax.set_xlabel("dimension d")
ax.set_ylabel("seconds per vector")
ax.set_title("Walsh-Hadamard transform: O(d log d) against O(d²)")
ax.legend()
fig.tight_layout()
plt.show()
