"""randfeat.analysis — empirical checks of the claims of Rahimi & Recht (2007) and
Le, Sarlós & Smola (2013) against randfeat's own feature maps.

Run ``python -m analysis --quick`` from the repository root (the package is not installed).
See ``analysis/checks/`` for the checks, ``bounds.py`` for the formulas and their sources.
"""

import os as _os

# The checks run many small single-threaded computations; BLAS/OpenMP thread pools only add
# contention (measured: L-BFGS-B 12x slower with OpenBLAS threads on a loaded 2-core machine).
# Parallelism is across checks (--jobs).  setdefault: an explicit user setting wins.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_v, "1")

CHECKS = [
    "unbiasedness",
    "variance",
    "hoeffding",
    "claim1",
    "claim2",
    "lemma1",
    "fastfood_variance",
    "fastfood_concentration",
    "kernel_interpolation_limit",
    "sup_error_rate",
    "features_needed",
    "rudi_rosasco",
]
