"""Writing DIR/report.md and DIR/report.json from the check records."""

from __future__ import annotations

import json

import numpy as np

from analysis import repro, stats
from analysis.repro import to_jsonable

__all__ = ["to_jsonable", "write_json", "write_markdown", "write_sweep", "needed_size_table",
           "tail_test", "tail_power", "tail_table"]


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


def tail_test(values, eps_b, delta, level, *, exceed=">=", err_max=np.inf):
    """The tail test of a uniform-convergence bound at one design point (Claims 1 and 2).

    The bound says P(sup error ``exceed`` eps_b) <= delta, eps_b the bound's eps at this size and
    delta.  ``values`` are R independent certified LOWER ends of the sup error (so the count
    never over-states the tail).  The bound is contradicted when the one-sided Clopper-Pearson
    lower limit (at ``level``) of the exceedance probability exceeds delta.  Vacuous when eps_b
    >= ``err_max`` (no error can reach it).

    Power (probability >= 0.9 of rejecting): a true exceedance probability p1 >= ``p1``
    (:func:`analysis.stats.binomial_detectable_ratio`, from R and level alone), i.e. a bound whose
    eps is too small by a factor >= ``too_tight`` = q(1 - delta) / q(1 - p1), the empirical
    quantiles of the sup error here (if the bound's eps were q(1 - delta)/K with K >= too_tight,
    the exceedance probability would be >= p1).  ``slack`` = eps_b / q(1 - delta) with its 95%
    order-statistic interval: how far the bound is from being attained."""
    x = np.asarray(values, dtype=float)
    R = x.size
    vac = bool(eps_b >= err_max)
    cnt = int(np.sum(x >= eps_b) if exceed == ">=" else np.sum(x > eps_b))
    lo = float(stats.clopper_pearson_lower(cnt, R, level))
    p1 = float(min(stats.binomial_detectable_ratio(delta, R, level) * delta, np.inf))
    q_lo, q, q_hi = stats.quantile_ci(x, 1 - delta, 0.05)
    tt = float(q / np.quantile(x, 1 - p1)) if p1 < 1 and np.quantile(x, 1 - p1) > 0 else np.inf
    return dict(eps_bound=float(eps_b), count=cnt, R=R, cp_lower=lo, vacuous=vac,
                violated=bool(not vac and lo > delta), p1=p1, too_tight=tt,
                q=float(q), slack=float(eps_b / q) if q > 0 else np.inf,
                slack_ci=[float(eps_b / q_hi) if np.isfinite(q_hi) and q_hi > 0 else 0.0,
                          float(eps_b / q_lo) if q_lo > 0 else np.inf])


def tail_power(tests, delta, level):
    """The power statement of the tail tests (non-vacuous ones): the failure probability p1
    detected where the bound says delta (per number of fits R), and the too-tight factor in eps
    (median and largest over the tests)."""
    nv = [t for t in tests if not t["vacuous"]]
    if not nv:
        return "none: the bound's eps is out of reach of any error at every size of the design"
    by_r = {}
    for t in nv:
        by_r.setdefault(t["R"], t["p1"])
    p1 = ", ".join(f"{p:.2f} (R = {r} fits)" for r, p in sorted(by_r.items(), reverse=True))
    tt = np.array([t["too_tight"] for t in nv], float)
    return (f"a failure probability {p1} where the bound says {delta:g} (one-sided "
            f"Clopper-Pearson at {level:.1e}, {len(nv)} non-vacuous sizes), i.e. a bound too "
            f"tight by {np.median(tt):.2f}x in eps (median over the sizes; {tt.max():.2f}x at "
            f"worst), from the measured sup-error quantiles q({1 - delta:g}) / q(1 - p1)")


def _slack_ci(ci):
    ok = ci[0] > 0 and np.isfinite(ci[1])
    return f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ok else " [CI n/a: too few fits]"


def tail_table(tests, size, exceed):
    """Markdown table of the tail tests (one row per setting and size)."""
    lines = []
    for t in tests:
        mark = "vacuous" if t["vacuous"] else ("FAIL" if t["violated"] else "ok")
        lines.append(f"| {t['d']} | {t['a']:g} | {t[size]} | {t['eps_bound']:.3f} | "
                     f"{t['count']}/{t['R']} | {t['cp_lower']:.3g} | {t['q']:.4f} | "
                     f"{t['slack']:.1f}x{_slack_ci(t['slack_ci'])} | "
                     f"{t['p1']:.2f} / {t['too_tight']:.2f}x | {mark} |")
    return (f"| d | a | {size} | bound's eps at delta | fits with sup {exceed} eps | CP lower "
            "limit | empirical q(1 - delta) | slack eps_bound / q [95%] | detects p1 / too tight "
            "by | |\n|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines))


def needed_size_table(rows, size):
    """Claims 1 and 2: the markdown table of the size needed (``size`` = "D" or "P") per
    (setting, eps), empirical against the bound (the bound's own tail tests are in
    :func:`tail_table`)."""
    lines = []
    for r in rows:
        lines.append(f"| {r['d']} | {r['a']:g} | {r['diam']:.2f} | {r['eps']:g} | "
                     f"{r[size + '_emp']:.0f}"
                     f"{'' if r['certified'] else ' (lower bd)'}"
                     f"{' (extrap.)' if r['extrapolated'] else ''} | "
                     f"{r[size + '_bound']:.0f} | {r[size + '_vacuous_below']:.0f} | "
                     f"**{r['over']:.0f}x**{ci_txt(r.get('over_ci'))} | "
                     f"{r['slope']:.2f} ± {r['slope_se']:.2f} |")
    return (f"| d | a | diam(M) | eps | {size}_emp (95% sup <= eps) | {size}_bound (delta=0.05) "
            f"| bound < 1 from {size} = | over-prediction [95% bootstrap CI] "
            f"| slope of q95 vs {size} |\n"
            "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines))


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
