"""The checks: one module per check under ``analysis/checks/``, found by name (listing it in
``analysis.CHECKS`` only fixes its place in the report).

The contract, version 3 (validated by :func:`load` and :func:`validate_verdict`; adding a check
touches only its module, its tests and the README)
-------------------------------------------------------------------------------------------------
Module attributes

``NAME``       str, equal to the module name
``TITLE``      str
``CLAIM``      the claim, quoted/paraphrased; ``SOURCE`` paper, section/equation (THEORY §)
``DESIGN``     the Monte Carlo design in words
``ALPHA``      float in (0, 1), the family false-alarm rate of the check (Bonferroni inside)
``PARAMS``     {"smoke": {...}, "quick": {...}, "full": {...}} — the parameter grids
``COST``       optional number (default 1), relative run time used to schedule ``--jobs``
``TIGHTNESS``  optional str: what the verdict's ``tightness`` number means ("D_emp / D_bound",
               1 = bound attained).  Expected as soon as ``verdict`` returns a tightness (the
               report says "meaning not stated" otherwise).

Functions

``run(params, seed, progress=None) -> dict``
    computation only; JSON-serialisable result.  Replicates come from
    ``analysis.montecarlo.seed_sequences`` / ``replicate``.
``verdict(result) -> dict``
    keys ``verdict`` ("pass" | "fail" | "vacuous"), ``statistic`` (dict), ``tightness`` (float or
    None), ``summary`` (str, computed from the result), ``detectable`` (list of effects,
    :mod:`analysis.power`: each the smallest deviation of one kind that this run's own design and
    numbers detect with probability >= 0.9; may be empty) and ``power`` (str, exactly
    ``analysis.power.statement(detectable)``); optional ``table`` (markdown), ``notes`` (list
    of str), ``tightness_ci`` ([lo, hi], a 95% interval for ``tightness``).
``plot(result, verdict) -> matplotlib.figure.Figure``
    draws from the result and the verdict dict (no recomputation).  A one-argument
    ``plot(result)`` (the first contract) is still accepted and called as such.
``audit(effect)``  (required as soon as a verdict's ``detectable`` is non-empty)
    a context manager that injects a deviation of exactly ``effect["size"]`` (in its unit)
    through a public seam (``unittest.mock.patch.object`` on a public function or attribute of
    ``analysis`` or ``randfeat``; no source file is edited), so that ``verdict(run(params,
    seed))`` inside it is "fail" with probability >= ``effect["probability"]`` (0.9).
    ``python -m analysis --audit`` (:mod:`analysis.audit`) measures that rate.

The result
``result["errors"]``   optional list of str: an exception the check caught, with the part that
                       failed.  The verdict must then be "fail".
``result["skipped"]``  optional list of str: a part that could not run (a missing optional
                       dependency, a skipped backend).  The verdict must then not be "pass"
                       ("vacuous", or "fail" if something else failed).
Replicates come from ``analysis.montecarlo`` (``seed_sequences``, ``replicate``,
``random_states``, ``check_not_degenerate``), which refuse repeated seeds, repeated random
states and identical replicates (:class:`analysis.montecarlo.DegenerateRunError`).  An exception
that escapes ``run``, ``verdict`` or ``plot`` makes the runner report the check as "fail" with
the exception.

Validation (:func:`validate_module` on load, :func:`validate_verdict` on every verdict, with the
result it was computed from) raises :class:`ContractError` naming every problem.

History
-------
Version 3 (this one): ``detectable`` (computed effects) and ``power == statement(detectable)``
(a hand-written or fixed ``power`` string is refused); ``audit(effect)``; ``result["errors"]``
/ ``result["skipped"]`` forbid "pass"; ``montecarlo.random_states`` and repeated-replicate
refusal.  Every check is on version 3 (the temporary tolerance of version-2 checks during
the port is gone).
Version 2: ``plot(result)`` -> ``plot(result, verdict)``; optional ``TIGHTNESS`` and ``COST``;
``summary`` required; ``power`` and ``tightness_ci`` optional; the module validated on load;
``montecarlo.random_state_of`` returns the SeedSequence itself (not an int) and
``montecarlo.replicate`` rejects repeated seeds and all-identical replicates.
"""

from __future__ import annotations

import importlib
import inspect
import numbers
import pkgutil

from analysis import CHECKS as _LISTED

__all__ = ["CHECKS", "load", "discover", "validate_module", "validate_verdict", "validate_result",
           "plot", "ContractError", "VERDICTS", "CONTRACT_VERSION"]

CONTRACT_VERSION = 3
VERDICTS = ("pass", "fail", "vacuous")
MODES = ("smoke", "quick", "full")

#: the report order (``analysis.CHECKS``); any module not listed there follows, alphabetically
_ORDER = list(_LISTED)


class ContractError(TypeError):
    """A check module or its verdict does not follow the contract above."""


def discover() -> list:
    """Names of the check modules in this folder (no leading underscore), in report order."""
    names = [m.name for m in pkgutil.iter_modules(__path__)
             if not m.name.startswith("_") and not m.ispkg]
    known = [n for n in _ORDER if n in names]
    return known + sorted(n for n in names if n not in _ORDER)


CHECKS = discover()


def validate_module(mod) -> None:
    """Raise :class:`ContractError` naming every missing or malformed part of ``mod``."""
    name = mod.__name__.rsplit(".", 1)[-1]
    errs = []
    for attr in ("NAME", "TITLE", "CLAIM", "SOURCE", "DESIGN"):
        if not isinstance(getattr(mod, attr, None), str):
            errs.append(f"{attr} must be a str")
    if getattr(mod, "NAME", name) != name:
        errs.append(f"NAME is {mod.NAME!r}, the module is {name!r}")
    alpha = getattr(mod, "ALPHA", None)
    if not (isinstance(alpha, numbers.Real) and 0 < alpha < 1):
        errs.append(f"ALPHA must be a number in (0, 1), got {alpha!r}")
    params = getattr(mod, "PARAMS", None)
    if not (isinstance(params, dict) and all(isinstance(params.get(m), dict) for m in MODES)):
        errs.append(f"PARAMS must be a dict with dict entries {MODES}")
    if not isinstance(getattr(mod, "COST", 1), numbers.Real):
        errs.append("COST must be a number")
    if getattr(mod, "TIGHTNESS", None) is not None and not isinstance(mod.TIGHTNESS, str):
        errs.append("TIGHTNESS must be a str or None")
    for fn, n in (("run", 2), ("verdict", 1), ("plot", 1)):
        f = getattr(mod, fn, None)
        if not callable(f):
            errs.append(f"{fn}() missing")
            continue
        ps = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(ps) < n:
            errs.append(f"{fn}() must take at least {n} positional argument(s)")
    if getattr(mod, "audit", None) is not None and not callable(mod.audit):
        errs.append("audit must be a callable (a context manager factory: audit(effect))")
    if errs:
        raise ContractError(f"check module {name!r} breaks the contract of analysis.checks: "
                            + "; ".join(errs))


def validate_result(result) -> list:
    """Problems with the ``errors`` / ``skipped`` entries of a check's result (empty: none)."""
    errs = []
    if not isinstance(result, dict):
        return errs
    for key in ("errors", "skipped"):
        val = result.get(key)
        if val is not None and not (isinstance(val, (list, tuple))
                                    and all(isinstance(x, str) for x in val)):
            errs.append(f"result[{key!r}] must be a list of str, got {val!r}")
    return errs


def validate_verdict(mod, v, result=None) -> dict:
    """Return ``v`` if it is a valid verdict of ``mod`` (computed from ``result``), else raise
    :class:`ContractError` naming every problem.

    Contract version 3: ``detectable`` is a list of effects (``analysis.power``), ``power`` is
    exactly ``analysis.power.statement(detectable)``, ``mod.audit`` exists when ``detectable`` is
    non-empty; with ``result`` given, a non-empty ``result["errors"]`` requires "fail" and a
    non-empty ``result["skipped"]`` forbids "pass".  (``result=None`` skips the last two rules;
    the runner always passes the result.)"""
    from analysis import power as _power

    errs = []
    if not isinstance(v, dict):
        raise ContractError(f"{mod.NAME}.verdict() returned {type(v).__name__}, not a dict")
    if v.get("verdict") not in VERDICTS:
        errs.append(f"'verdict' must be one of {VERDICTS}, got {v.get('verdict')!r}")
    if not isinstance(v.get("statistic"), dict):
        errs.append("'statistic' must be a dict")
    if not isinstance(v.get("summary"), str):
        errs.append("'summary' must be a str")
    t = v.get("tightness", "missing")
    if t == "missing":
        errs.append("'tightness' missing (None when the check has none)")
    elif t is not None:
        if not isinstance(t, numbers.Real):
            errs.append(f"'tightness' must be a number or None, got {t!r}")
    ci = v.get("tightness_ci")
    if ci is not None and not (isinstance(ci, (list, tuple)) and len(ci) == 2
                               and all(isinstance(x, numbers.Real) for x in ci)):
        errs.append(f"'tightness_ci' must be [lo, hi] (numbers) or absent, got {ci!r}")
    if v.get("power") is not None and not isinstance(v["power"], str):
        errs.append("'power' must be a str or absent")
    # version 3: computed power
    if "detectable" not in v:
        errs.append("'detectable' missing: a list of effects (analysis.power.effect), "
                    "empty when the check detects nothing it can state")
    else:
        det = v["detectable"]
        problems = _power.check_detectable(det)
        errs += problems
        if not problems:
            want = _power.statement(det)
            got = v.get("power")
            if (got or "") != want:
                errs.append(f"'power' must be analysis.power.statement(detectable) = "
                            f"{want!r}, got {got!r} (power statements are computed, never "
                            "written by hand)")
            if det and not callable(getattr(mod, "audit", None)):
                errs.append("'detectable' is non-empty but the module defines no "
                            "audit(effect) context manager")
    # version 3: no broken run passes
    if result is not None:
        errs += validate_result(result)
        if isinstance(result, dict):
            e = result.get("errors") or []
            sk = result.get("skipped") or []
            if e and v.get("verdict") != "fail":
                errs.append(f"verdict {v.get('verdict')!r} with errors in the result (must be "
                            f"'fail'): {list(e)[:3]}")
            elif sk and v.get("verdict") == "pass":
                errs.append(f"verdict 'pass' with skipped parts (must be 'vacuous' or 'fail'): "
                            f"{list(sk)[:3]}")
    if errs:
        raise ContractError(f"{mod.NAME}.verdict(): " + "; ".join(errs))
    return v


def plot(mod, result, v):
    """``mod.plot(result, v)``, or ``mod.plot(result)`` for a module written to the old
    contract (with a DeprecationWarning)."""
    ps = [p for p in inspect.signature(mod.plot).parameters.values()
          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(ps) >= 2:
        return mod.plot(result, v)
    return mod.plot(result)


def load(name):
    """Import and validate the check module ``name``."""
    if name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; choose from {', '.join(CHECKS)}")
    mod = importlib.import_module(f"analysis.checks.{name}")
    validate_module(mod)
    return mod
