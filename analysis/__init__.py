"""randfeat.analysis — empirical checks of the claims of Rahimi & Recht (2007) and
Le, Sarlós & Smola (2013) against randfeat's own feature maps.

Run ``python -m analysis --quick`` from the repository root (the package is not installed).
See ``analysis/checks/`` for the checks and their contract, ``bounds.py`` for the formulas and
their sources, ``repro.py`` for the seeds, cache and JSON writer shared with ``paper_figures``.

Importing this package has no side effects (no environment variables, no thread limits, no
plotting backend): the runner (``python -m analysis``) limits BLAS/OpenMP threads for the
duration of each check's ``run`` and the checks pass ``n_threads=1`` to the estimators.

``CHECKS`` below is the *report order*.  Listing a check is optional: every module of
``analysis/checks/`` is found (``analysis.checks.CHECKS``, the full list the runner uses) and
an unlisted one is reported after the listed ones, alphabetically.
"""

CHECKS = [
    "unbiasedness",
    "variance",
    "hoeffding",
    "claim1",
    "claim2",
    "lemma1",
    "fastfood_variance",
    "fastfood_concentration",
    "orf_variance",
    "orf_unbiasedness",
    "sorf",
    "qmc_gram",
    "kernel_interpolation_limit",
    "sup_error_rate",
    "features_needed",
    "rudi_rosasco",
    "learner_paths",
]
