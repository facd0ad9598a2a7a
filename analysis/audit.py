"""The audit of the power statements: ``python -m analysis --audit [--seed A-B] [--only NAME]``.

Every check states, in its verdict's ``detectable``, the smallest deviations its run detects with
probability >= 0.9 (:mod:`analysis.power`), and defines ``audit(effect)``, a context manager that
injects exactly such a deviation through a public seam.  This module measures whether the
statements hold (the protocol of the contract, ``analysis/checks/__init__.py``), per seed ``s``::

    res = run(params, s)                       # the control (the ordinary run; cached)
    det = verdict(res)["detectable"]
    for e in det:
        with mod.audit(e):
            v = verdict(run(params, s))        # the same run with the deviation injected
        detected = v["verdict"] == "fail"

and writes ``DIR/audit.json`` and a short ``DIR/audit.md``.  ``audit.json`` maps each audited check
to::

    {"code": code_version,          # analysis.runner.code_version() of the audited code
     "mode": "quick", "seeds": [0, ..., 49],
     "control": {"pass": k, "fail": k, "vacuous": k, "error": k, "n": n},
     "complete": bool,              # False while the audit runs (rewritten after every seed)
     "effects": [{"effect": str, "unit": str, "where": str or None,
                  "size": float,          # the size stated at the first seed
                  "size_range": [min, max],  # over the seeds (each seed audits its own size)
                  "detected": k, "n": n,     # injected runs that gave "fail", out of n
                  "errors": k,               # injected runs that raised (counted as missed)
                  "missed_seeds": [...]}],
     "runtime_s": float}

An injected run that raises an exception counts as *not* detected (an audit seam that breaks the
check proves nothing about its power).  Effects are grouped by (effect, unit, where); a seed whose
run states no effect of a group does not count in that group's ``n``.  Entries of other checks
already in ``audit.json`` are kept; the report (``python -m analysis``) shows an entry only when its
``code`` matches the code it reports on (:func:`entry_for`).
"""

from __future__ import annotations

import json
import pathlib
import time
import traceback

__all__ = ["audit_seed", "audit_module", "aggregate", "write", "entry_for", "render_markdown",
           "run_audit", "DEFAULT_SEEDS"]

DEFAULT_SEEDS = "0-49"


def _key(e):
    return (e["effect"], e["unit"], e.get("where"))


def audit_seed(mod, params, seed, control=None, progress=None) -> dict:
    """The audit protocol for one check module and one seed.

    ``control``: the result of ``mod.run(params, seed)`` if already computed (e.g. from the
    cache).  Returns ``{"seed", "control": verdict of the control, "effects": [{..effect..,
    "verdict": verdict inside the audit or "error", "detected": bool, "error": str or None}]}``.
    """
    from analysis.checks import validate_verdict

    res = mod.run(params, seed, progress=progress) if control is None else control
    v = validate_verdict(mod, mod.verdict(res), res)
    out = dict(seed=int(seed), control=v["verdict"], effects=[])
    for e in v.get("detectable") or []:
        rec = dict(effect=e["effect"], unit=e["unit"], where=e.get("where"),
                   size=float(e["size"]), verdict=None, detected=False, error=None)
        try:
            with mod.audit(e):
                r2 = mod.run(params, seed, progress=progress)
                rec["verdict"] = mod.verdict(r2)["verdict"]
        except Exception:  # noqa: BLE001 - recorded, counted as not detected
            rec["verdict"] = "error"
            rec["error"] = traceback.format_exc()[-800:]
        rec["detected"] = rec["verdict"] == "fail"
        out["effects"].append(rec)
    return out


def aggregate(per_seed, code, mode, runtime_s=None) -> dict:
    """The ``audit.json`` entry of one check from its per-seed records (:func:`audit_seed`)."""
    seeds = sorted(r["seed"] for r in per_seed)
    control = {k: 0 for k in ("pass", "fail", "vacuous", "error")}
    groups = {}
    for r in sorted(per_seed, key=lambda r: r["seed"]):
        control[r["control"] if r["control"] in control else "error"] += 1
        for e in r["effects"]:
            g = groups.setdefault(_key(e), dict(effect=e["effect"], unit=e["unit"],
                                                where=e.get("where"), size=e["size"],
                                                sizes=[], detected=0, n=0, errors=0,
                                                missed_seeds=[]))
            g["sizes"].append(e["size"])
            g["n"] += 1
            g["detected"] += int(bool(e["detected"]))
            g["errors"] += int(e["verdict"] == "error")
            if not e["detected"]:
                g["missed_seeds"].append(r["seed"])
    effects = []
    for g in groups.values():
        sizes = g.pop("sizes")
        g["size_range"] = [float(min(sizes)), float(max(sizes))]
        effects.append(g)
    control["n"] = len(per_seed)
    entry = dict(code=code, mode=mode, seeds=seeds, control=control, effects=effects)
    if runtime_s is not None:
        entry["runtime_s"] = float(runtime_s)
    return entry


def audit_module(mod, seeds, params=None, mode="quick", code=None, progress=None) -> dict:
    """Audit one check module (any object following the contract, e.g. a toy module in a test)
    over ``seeds`` with ``params`` (default ``mod.PARAMS[mode]``): its ``audit.json`` entry."""
    params = mod.PARAMS[mode] if params is None else params
    t0 = time.monotonic()
    per = [audit_seed(mod, params, s, progress=progress) for s in seeds]
    return aggregate(per, code, mode, time.monotonic() - t0)


def _task(name, mode, seed, cache_dir, use_cache, rf_version, cversion):
    """One (check, seed) of the audit, in a worker process: the control from the cache (or run
    and cached, as ``python -m analysis`` does), then the injected runs, one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from analysis.checks import load
    from analysis.runner import run_one

    mod = load(name)
    _, _, res, _, _ = run_one(name, mode, seed, cache_dir, use_cache, rf_version, cversion,
                              quiet=True)
    with threadpool_limits(limits=1):
        return name, audit_seed(mod, mod.PARAMS[mode], seed, control=res)


def write(out, entries) -> dict:
    """Merge ``entries`` ({check: entry}) into ``out/audit.json`` (other checks' entries kept),
    write it and ``out/audit.md``; returns the merged dict."""
    from analysis.repro import atomic_write_text, write_json

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.json"
    old = {}
    if path.exists():
        try:
            old = json.loads(path.read_text())
            if not isinstance(old, dict):
                old = {}
        except ValueError:
            old = {}
    old.update(entries)
    write_json(path, old)
    atomic_write_text(out / "audit.md", render_markdown(old))
    return old


def entry_for(out, name, code):
    """The ``audit.json`` entry of check ``name`` in folder ``out`` if it was made with code
    version ``code``, else None (no file, no entry, another code version)."""
    path = pathlib.Path(out) / "audit.json"
    try:
        entry = json.loads(path.read_text()).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, dict) or entry.get("code") != code:
        return None
    return entry


def _seed_text(seeds):
    if not seeds:
        return "no seeds"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(str(s) for s in seeds)


def render_markdown(entries) -> str:
    """A short table: per check and effect, the stated size and the audited detection rate."""
    from analysis.power import format_size

    lines = ["# Audit of the power statements", "",
             "Each effect a check states it detects with probability >= 0.9 is injected through "
             "its public seam (`audit(effect)`) and the same run repeated; *detected* counts the "
             "injected runs whose verdict is \"fail\" (`python -m analysis --audit`).", "",
             "| check | effect | size (first seed; range) | detected | rate | seeds | control "
             "pass | holds |", "|---|---|---|---|---|---|---|---|"]
    for name, e in entries.items():
        c = e.get("control", {})
        ctrl = f"{c.get('pass', 0)}/{c.get('n', 0)}"
        if not e.get("effects"):
            lines.append(f"| {name} | (none stated) | - | - | - | {_seed_text(e.get('seeds', []))}"
                         f" | {ctrl} | - |")
            continue
        for f in e["effects"]:
            lo, hi = f["size_range"]
            size = format_size(f["size"], f["unit"])
            if lo != hi:
                size += f" ({format_size(lo, f['unit'])}–{format_size(hi, f['unit'])})"
            rate = f["detected"] / f["n"] if f["n"] else float("nan")
            what = f["effect"] + (f" ({f['where']})" if f.get("where") else "")
            holds = "yes" if f["n"] and rate >= 0.9 else "**no**"
            what += "" if e.get("complete", True) else " (audit incomplete)"
            lines.append(f"| {name} | {what} | {size} | {f['detected']}/{f['n']}"
                         + (f" ({f['errors']} errors)" if f.get("errors") else "")
                         + f" | {rate:.2f} | {_seed_text(e.get('seeds', []))} | {ctrl} | {holds} |")
    lines += ["", "code versions: " + ", ".join(sorted({str(e.get('code')) for e in
                                                        entries.values()}))]
    return "\n".join(lines) + "\n"


def run_audit(names, seeds, out, mode="quick", jobs=1, use_cache=True, log=None) -> int:
    """Audit the checks ``names`` at ``seeds`` (the runner's ``--audit``); writes
    ``out/audit.json`` and ``out/audit.md``.  Returns 1 when a stated effect is detected at
    fewer than 90 % of the seeds (or a control run is not "pass"), else 0."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from analysis.runner import code_version, randfeat_version

    log = log or (lambda *a: None)
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cversion, rf_version = code_version(), randfeat_version()
    common = (mode,)
    rest = (str(out / "cache"), use_cache, rf_version, cversion)
    tasks = [(n, s) for n in names for s in seeds]
    per = {n: [] for n in names}
    t0 = time.monotonic()
    failed_tasks = []

    def done(name, rec):
        per[name].append(rec)
        k = sum(len(v) for v in per.values())
        # rewritten as records arrive: an interrupted audit keeps what it measured
        write(out, {n: dict(aggregate(per[n], cversion, mode, time.monotonic() - t0),
                            complete=False) for n in names if per[n]})
        hits = "".join("x" if e["detected"] else "." for e in rec["effects"])
        log(f"[{k}/{len(tasks)}] audit {name} seed {rec['seed']}: control {rec['control']}, "
            f"injected [{hits}]")

    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = {ex.submit(_task, n, *common, s, *rest): (n, s) for n, s in tasks}
            for f in as_completed(futs):
                try:
                    done(*f.result())
                except Exception:  # noqa: BLE001 - the control itself failed to run
                    failed_tasks.append((futs[f], traceback.format_exc()))
                    log(f"ERROR in audit {futs[f]}:\n{failed_tasks[-1][1]}")
    else:
        for n, s in tasks:
            try:
                done(*_task(n, *common, s, *rest))
            except Exception:  # noqa: BLE001
                failed_tasks.append(((n, s), traceback.format_exc()))
                log(f"ERROR in audit {(n, s)}:\n{failed_tasks[-1][1]}")
    for (n, s), _ in failed_tasks:
        per[n].append(dict(seed=s, control="error", effects=[]))
    wall = time.monotonic() - t0
    entries = {n: dict(aggregate(per[n], cversion, mode, wall), complete=True) for n in names}
    write(out, entries)
    bad = False
    for n, e in entries.items():
        c = e["control"]
        bad |= c["pass"] != c["n"]
        for f in e["effects"]:
            bad |= f["detected"] < 0.9 * f["n"]
            log(f"  {n}: {f['effect']}: detected {f['detected']}/{f['n']}")
    log(f"audit written to {out / 'audit.json'} and {out / 'audit.md'} ({wall:.0f} s)")
    return 1 if bad else 0
