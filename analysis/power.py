"""Power statements that are computed, and the audit that checks them.

Every check states what it can detect: its verdict carries ``detectable``, a list of *effects*,
each the smallest deviation of one kind that the run's own design detects with probability
``>= 0.9`` (computed from the run's numbers: its replicates, its grid, its thresholds).  The
human-readable ``power`` string is :func:`statement` of that list -- never written by hand, so a
statement that no longer follows the run is caught by the contract validator.

An effect is a dict::

    {"effect": "bandwidth error of the ridge target",   # a few words: what is wrong
     "size": 0.1,                                       # > 0, in ``unit``
     "unit": "relative",                                # "relative" | "factor" | "absolute"
     "where": "lambda = 1e-3, D = 4096",                # optional: where the size applies
     "probability": 0.9}                                # optional, default 0.9

``unit``: ``"relative"`` is a fraction (0.1 = 10 %), ``"factor"`` a ratio (1.6 = 1.6x),
``"absolute"`` a number in the statistic's own units (say which in ``effect``).

Each check module with effects has ``audit(effect)``: a context manager that injects a deviation
of exactly ``effect["size"]`` through a public seam (``unittest.mock.patch.object`` on a public
function or attribute of ``analysis`` or ``randfeat``; never an edit of a source file), so that
running the same check with the same parameters and seed inside it must give ``"fail"`` with
probability ``>= effect["probability"]``.  ``python -m analysis --audit`` measures that rate over a
seed range and the report prints it beside the statement.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["UNITS", "effect", "format_size", "statement", "check_detectable"]

UNITS = ("relative", "factor", "absolute")
DEFAULT_PROBABILITY = 0.9


def effect(name, size, unit, where=None, probability=DEFAULT_PROBABILITY) -> dict:
    """Build (and validate) one effect dict; see the module docstring."""
    e = {"effect": str(name), "size": float(size), "unit": str(unit),
         "probability": float(probability)}
    if where:
        e["where"] = str(where)
    errs = _check_one(e)
    if errs:
        raise ValueError("; ".join(errs))
    return e


def format_size(size, unit) -> str:
    """``0.1, "relative"`` -> ``"10 %"``; ``1.6, "factor"`` -> ``"1.6x"``; else 3 significant
    digits."""
    if unit == "relative":
        pct = 100.0 * size
        return f"{pct:.3g} %"
    if unit == "factor":
        return f"{size:.3g}x"
    return f"{size:.3g}"


def _one(e) -> str:
    s = f"{e['effect']} of {format_size(e['size'], e['unit'])}"
    if e.get("where"):
        s += f" ({e['where']})"
    return s


def statement(detectable) -> str:
    """The ``power`` string of a verdict, computed from its ``detectable`` list."""
    if not detectable:
        return ""
    p = {float(e.get("probability", DEFAULT_PROBABILITY)) for e in detectable}
    prob = min(p)
    return ("detects " + "; ".join(_one(e) for e in detectable)
            + f" with probability >= {prob:g}")


def _check_one(e) -> list:
    errs = []
    if not isinstance(e, dict):
        return [f"an effect must be a dict, got {type(e).__name__}"]
    if not isinstance(e.get("effect"), str) or not e.get("effect"):
        errs.append("effect['effect'] must be a non-empty str")
    size = e.get("size")
    if not (isinstance(size, numbers.Real) and math.isfinite(size) and size > 0):
        errs.append(f"effect['size'] must be a finite number > 0, got {size!r}")
    if e.get("unit") not in UNITS:
        errs.append(f"effect['unit'] must be one of {UNITS}, got {e.get('unit')!r}")
    prob = e.get("probability", DEFAULT_PROBABILITY)
    if not (isinstance(prob, numbers.Real) and 0 < prob < 1):
        errs.append(f"effect['probability'] must be in (0, 1), got {prob!r}")
    if e.get("where") is not None and not isinstance(e["where"], str):
        errs.append("effect['where'] must be a str")
    return errs


def check_detectable(detectable) -> list:
    """Problems with a ``detectable`` list (empty list: none)."""
    if not isinstance(detectable, (list, tuple)):
        return [f"'detectable' must be a list of effects, got {type(detectable).__name__}"]
    errs = []
    for i, e in enumerate(detectable):
        errs += [f"detectable[{i}]: {m}" for m in _check_one(e)]
    return errs
