"""randfeat.analysis — empirical checks of the claims of Rahimi & Recht (2007) and
Le, Sarlós & Smola (2013) against randfeat's own feature maps.

Run ``python -m analysis --quick`` from the repository root (the package is not installed).
See ``analysis/checks/`` for the checks, ``bounds.py`` for the formulas and their sources.
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
]
