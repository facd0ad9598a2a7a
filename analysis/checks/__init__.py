"""One module per check, all of one shape.

Each module defines

``NAME``, ``TITLE``
``CLAIM``      the claim, quoted/paraphrased, and ``SOURCE`` (paper, section/equation; THEORY.md §)
``DESIGN``     the Monte Carlo design in words
``ALPHA``      the family false-alarm rate of the check (Bonferroni inside the check)
``PARAMS``     {"smoke": {...}, "quick": {...}, "full": {...}} — the parameter grids
``run(params, seed, progress=None) -> dict``   computation only; JSON-serialisable result
``verdict(result) -> dict``   keys: verdict ("pass" | "fail" | "vacuous"), statistic (dict),
                              tightness (float or None), table (markdown), notes (list of str)
``plot(result) -> matplotlib.figure.Figure``
"""

import importlib

from analysis import CHECKS

__all__ = ["CHECKS", "load"]


def load(name):
    if name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; choose from {', '.join(CHECKS)}")
    return importlib.import_module(f"analysis.checks.{name}")
