"""Writing DIR/report.md and DIR/report.json from the check records."""

from __future__ import annotations

import json

import numpy as np

from analysis import repro, stats
from analysis.repro import to_jsonable

__all__ = ["to_jsonable", "write_json", "write_markdown", "write_sweep", "needed_size_table"]


def write_json(path, meta, records):
    repro.write_json(path, {"meta": meta, "checks": records})


def _fmt(x):
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list) and len(x) > 6:
        return f"[{len(x)} values]"
    return str(x)


def ci_txt(ci):
    if not ci or not all(np.isfinite(ci)):
        return " [CI n/a]" if ci else ""
    return f" [{ci[0]:.0f}, {ci[1]:.0f}]"


def over_ci(d_bound, ci_needed):
    """Interval of the over-prediction factor size_bound / size_emp from an interval of
    size_emp."""
    lo, hi = ci_needed
    return [d_bound / hi, d_bound / lo] if np.isfinite(lo) and np.isfinite(hi) else [np.nan] * 2


def tightness_ci(rows):
    """[1/median of the upper CI limits, 1/median of the lower ones] of the over-prediction
    factors ``row["over_ci"]``: an interval for the tightness 1/median(over) (medians of per-row
    95% limits); None when a limit is missing or infinite.  Shared by claim1 and claim2."""
    cis = np.array([r["over_ci"] for r in rows], float)
    if not len(cis) or not np.isfinite(cis).all():
        return None
    return [float(1 / np.median(cis[:, 1])), float(1 / np.median(cis[:, 0]))]


def bound_power(rows, R, level):
    """Power of the exceedance comparisons of Claims 1 and 2: per non-vacuous bound value b the
    true exceedance probability p1(b) detected with probability >= 0.9
    (stats.binomial_detectable_ratio); the statement gives its range over the grid."""
    bs = sorted({c["bound"] for r in rows for c in r["comps"] if c["bound"] < 1})
    if not bs:
        return "none: every bound value of the grid is >= 1 (vacuous)"
    p1 = [(b, min(stats.binomial_detectable_ratio(b, R, level) * b, np.inf)) for b in bs]
    ok = [(b, x) for b, x in p1 if x <= 1]
    if not ok:
        return (f"none: with R = {R} fits per point not even R exceedances out of R push the "
                f"Clopper-Pearson lower limit (level {level:.1e}) above a bound value of the grid")
    lo = min(ok, key=lambda t: t[1])
    hi = max(ok, key=lambda t: t[1])
    return (f"a true P(sup error >= eps) of at least {lo[1]:.2f} (where the bound is "
            f"{lo[0]:.2g}) to {hi[1]:.2f} (bound {hi[0]:.2g}); with R = {R} fits per point a "
            f"failure probability below {lo[1]:.2f} is never detected, whatever the bound says "
            f"(Clopper-Pearson, level {level:.1e}, {len(bs)} non-vacuous bound values)")


def needed_size_table(rows, R, size, exceed):
    """Claims 1 and 2: the markdown table of the size needed (``size`` = "D" or "P") per
    (setting, eps), empirical against the bound, and the list of violated comparisons.
    ``exceed`` names the event counted in the bound comparison (">=" or ">")."""
    fails, lines = [], []
    for r in rows:
        viol = [c for c in r["comps"] if c["violated"]]
        if viol:
            fails.append(f"d={r['d']} a={r['a']} eps={r['eps']} {size}={viol[0][size]}")
        nv = [c for c in r["comps"] if c["bound"] < 1]
        cmp_txt = ("vacuous on grid" if not nv else
                   f"{sum(c['count'] for c in nv)}/{len(nv) * R} sups {exceed} eps where bound < 1")
        lines.append(f"| {r['d']} | {r['a']:g} | {r['diam']:.2f} | {r['eps']:g} | "
                     f"{r[size + '_emp']:.0f}"
                     f"{'' if r['certified'] else ' (lower bd)'}"
                     f"{' (extrap.)' if r['extrapolated'] else ''} | "
                     f"{r[size + '_bound']:.0f} | {r[size + '_vacuous_below']:.0f} | "
                     f"**{r['over']:.0f}x**{ci_txt(r.get('over_ci'))} | "
                     f"{r['slope']:.2f} ± {r['slope_se']:.2f} | "
                     f"{cmp_txt} | {'FAIL' if viol else 'ok'} |")
    table = (f"| d | a | diam(M) | eps | {size}_emp (95% sup <= eps) | {size}_bound (delta=0.05) "
             f"| bound < 1 from {size} = | over-prediction [95% bootstrap CI] "
             f"| slope of q95 vs {size} "
             "| bound comparison | |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines))
    return table, fails


def _ci(ci):
    if not ci or not all(np.isfinite(ci)):
        return ""
    return f" [{_fmt(ci[0])}, {_fmt(ci[1])}]"


def write_markdown(path, meta, records, checks):
    lines = [
        "# randfeat analysis report",
        "",
        f"Command: `{meta['command']}`  ",
        f"Mode: **{meta['mode']}**, seed {meta['seed']}, randfeat {meta['randfeat_version']}, "
        f"analysis code {meta['code_version'][:12]}, {meta['date']}  ",
        f"Wall time: {meta['wall_time_s']:.1f} s (sum of per-check wall times "
        f"{meta['cpu_time_s']:.1f} s, "
        f"{meta['n_cached']} cached); jobs = {meta['jobs']}",
        "",
        "Verdicts: **pass** = no comparison rejected at the stated family false-alarm rate; "
        "**fail** = a claim is contradicted by the data at that rate; **vacuous** = the bound is "
        ">= 1 everywhere in the design, so it cannot be contradicted. *Tightness* = observed "
        "quantity / what the bound allows (1 = the bound is attained); its meaning per check:",
        "",
        *[f"- {r['name']}: {r.get('tightness_meaning') or 'meaning not stated (no TIGHTNESS)'}"
          for r in records if r.get("tightness_meaning") or r.get("tightness") is not None],
        "",
        "| check | verdict | key statistic | tightness | detects (power >= 0.9) "
        "| false-alarm rate | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        t = r["tightness"]
        summ = r["summary"].replace("|", "\\|")
        pw = (r.get("power") or "-").replace("|", "\\|")
        lines.append(f"| [{r['name']}](#{r['name']}) | **{r['verdict']}** | {summ} | "
                     f"{'-' if t is None else _fmt(t)}{_ci(r.get('tightness_ci'))} | {pw} | "
                     f"{r['false_alarm']:g} | "
                     f"{r['runtime_s']:.1f}{' (cached)' if r['cached'] else ''} |")
    lines.append("")
    for r in records:
        mod = checks[r["name"]]
        lines += [
            f"## {r['name']}",
            "",
            f"**{mod.TITLE}** — verdict: **{r['verdict']}**",
            "",
            f"> {mod.CLAIM}",
            "",
            f"Source: {mod.SOURCE}",
            "",
            f"*Design.* {mod.DESIGN}",
            "",
            f"*False alarms.* Family false-alarm rate {mod.ALPHA:g} for the whole check, "
            "split over its comparisons by Bonferroni.",
            "",
            f"*Parameters* ({meta['mode']}):",
            "",
            "```json",
            json.dumps(to_jsonable(r["params_brief"]), sort_keys=False),
            "```",
            "",
            f"*Result.* {r['summary']}",
            "",
        ]
        if r.get("power"):
            lines += [f"*Power.* {r['power']}", ""]
        stat = {k: v for k, v in r["statistic"].items() if not isinstance(v, (list, dict))
                or len(v) <= 6}
        if stat:
            lines.append("Statistics: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in stat.items()))
            lines.append("")
        if r.get("table"):
            lines += [r["table"], ""]
        for n in r.get("notes", []):
            lines.append(f"- {n}")
        if r.get("notes"):
            lines.append("")
        lines += [f"![{r['name']}]({r['figure']})", ""]
    repro.atomic_write_text(path, "\n".join(lines) + "\n")


def write_sweep(path_md, path_json, meta, table):
    """table: {check: {seed: verdict}}."""
    repro.write_json(path_json, {"meta": meta, "verdicts": table})
    seeds = sorted({s for v in table.values() for s in v}) or [None]
    lines = ["# Seed sweep" + ("" if meta.get("complete", True) else " (IN PROGRESS / INCOMPLETE)"),
             "", f"Command: `{meta['command']}`; mode {meta['mode']}; "
             f"seeds {seeds[0]}–{seeds[-1]} ({len(seeds)} with results); wall time "
             f"{meta['wall_time_s']:.0f} s", "",
             "| check | pass | vacuous | fail | failing seeds |", "|---|---|---|---|---|"]
    for name, v in table.items():
        vals = list(v.values())
        bad = [str(s) for s, x in v.items() if x == "fail"]
        lines.append(f"| {name} ({len(vals)} seeds) | {vals.count('pass')} | "
                     f"{vals.count('vacuous')} | {vals.count('fail')} | {', '.join(bad) or '-'} |")
    repro.atomic_write_text(path_md, "\n".join(lines) + "\n")
