"""Writing DIR/report.md, DIR/report.html and DIR/report.json from the check records.

The report is for skimming: a summary of one line per check (verdict, headline with its 95 %
interval, the smallest detectable effect in a few words, the audit of that power, run time), then
one section per check with its figure, its result, power and audit, and the claim, source and
design behind it.  ``report.html`` is the same report in one file with the figures embedded.
Records carry ``detectable`` (a list of effects, :mod:`analysis.power`) and ``audit`` (the
``audit.json`` entry of the check for this code version, or None); both are optional.
"""

from __future__ import annotations

import json

import numpy as np

from analysis import repro, stats
from analysis.repro import to_jsonable

__all__ = ["to_jsonable", "write_json", "write_markdown", "write_html", "write_sweep",
           "needed_size_table", "tail_test", "tail_power", "tail_table", "headline",
           "detects_short", "audit_short", "audit_lines", "summary_rows", "md_to_html"]


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


# --------------------------------------------------------------------------------------------
# the report: a summary of one line per check, then one section per check with its figure
HEADLINE_CHARS = 80


def _top_level_split(text, sep="; "):
    """Split ``text`` at ``sep`` outside parentheses and brackets."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _cut(text, n):
    return text if len(text) <= n else text[: n - 1].rstrip(" ,;(") + "…"


def headline(r):
    """The record's headline: its verdict's ``headline`` if it has one, else the first clause of
    its summary, cut to :data:`HEADLINE_CHARS`; then its tightness with the 95 % interval."""
    head = r.get("headline") or (_top_level_split(r.get("summary") or "") or ["-"])[0]
    head = _cut(head, HEADLINE_CHARS)
    t = r.get("tightness")
    if t is not None and isinstance(t, (int, float)) and np.isfinite(t):
        ci = r.get("tightness_ci")
        ci = (f" [{ci[0]:.2g}, {ci[1]:.2g}]" if ci and all(np.isfinite(ci)) else "")
        head += f"; tightness {t:.2g}{ci}"
    return head


def effect_text(e):
    """``10 % bandwidth error (lambda = 1e-3)`` from an effect dict (analysis.power)."""
    from analysis.power import format_size

    txt = f"{format_size(e['size'], e['unit'])} {e['effect']}"
    return txt + (f" ({e['where']})" if e.get("where") else "")


def detects_short(r):
    """The detectable effect in a few words: the first effect (size and kind) and how many more;
    from the ``power`` string when the record has no ``detectable`` list."""
    det = r.get("detectable")
    if det:
        from analysis.power import format_size

        e = det[0]
        txt = f"{format_size(e['size'], e['unit'])} {e['effect']}"
        return _cut(txt, 48) + (f" (+{len(det) - 1})" if len(det) > 1 else "")
    pw = (r.get("power") or "").strip()
    if not pw:
        return "-"
    pw = pw[len("detects "):] if pw.startswith("detects ") else pw
    return _cut(_top_level_split(pw)[0], 48)


def _seed_range(seeds):
    seeds = sorted(int(x) for x in seeds or [])
    if not seeds:
        return "no seeds"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seed" + ("s " if len(seeds) > 1 else " ") + ", ".join(map(str, seeds))


def audit_short(r):
    """``48/50 (seeds 0–49)``: the lowest detection rate over the audited effects; "not audited"
    when the record's audit is None (no audit for this code version); "-" when the record does
    not say."""
    if "audit" not in r:
        return "-"
    a = r["audit"]
    if not a or not a.get("effects"):
        return "not audited"
    worst = min(a["effects"], key=lambda e: e["detected"] / max(e["n"], 1))
    flag = "" if worst["detected"] >= 0.9 * worst["n"] else " (below 90 %)"
    return f"{worst['detected']}/{worst['n']} ({_seed_range(a.get('seeds'))}){flag}"


def audit_lines(r):
    """One line per audited effect, or the reason there is none."""
    if "audit" not in r:
        return []
    a = r["audit"]
    if not a or not a.get("effects"):
        return ["not audited for this code version (run `python -m analysis --audit`)"]
    rng = _seed_range(a.get("seeds"))
    return [f"detects {effect_text(e)}: audited {e['detected']}/{e['n']} at {rng}"
            + ("" if e["detected"] >= 0.9 * e["n"] else " — below the stated 90 %")
            for e in a["effects"]]


def _counts(records):
    c = {v: sum(r["verdict"] == v for r in records) for v in ("pass", "fail", "vacuous")}
    return ", ".join(f"{n} {v}" for v, n in c.items())


def _meta_line(meta, records):
    return (f"`{meta['command']}` · {meta['mode']} mode, seed {meta['seed']} · randfeat "
            f"{meta['randfeat_version']} · code {meta['code_version'][:12]} · {meta['date']} · "
            f"{meta['wall_time_s']:.0f} s wall ({len(records)} checks, {meta['n_cached']} cached, "
            f"{meta['jobs']} jobs)")


def _esc(text):
    return str(text).replace("|", "\\|")


def summary_rows(records):
    """(name, verdict, headline, detects, audit, seconds) per record: the summary table."""
    return [(r["name"], r["verdict"], headline(r), detects_short(r), audit_short(r),
             "cached" if r.get("cached") else f"{r['runtime_s']:.0f}") for r in records]


LEGEND = ("Verdicts: **pass** = no comparison rejected at the check's family false-alarm rate; "
          "**fail** = the claim is contradicted at that rate (or a part of the check failed); "
          "**vacuous** = the bound cannot be contradicted anywhere in the design (or a part could "
          "not run). *Detects*: the smallest deviation this run detects with probability >= 0.9 "
          "(all of them in the check's section); *audit*: how often the check failed when that "
          "deviation was injected. *Tightness*: observed quantity / what the bound allows "
          "(1 = attained), with its 95 % interval.")


def _section_parts(r, mod, meta):
    """The parts of a check's section, shared by the Markdown and HTML writers."""
    stat = {k: v for k, v in r["statistic"].items()
            if not isinstance(v, (list, dict)) or len(v) <= 6}
    return dict(
        title=mod.TITLE, verdict=r["verdict"], claim=mod.CLAIM, source=mod.SOURCE,
        design=mod.DESIGN, alpha=mod.ALPHA, params=json.dumps(to_jsonable(r["params_brief"])),
        summary=r["summary"], power=r.get("power") or "", audit=audit_lines(r),
        tightness_meaning=r.get("tightness_meaning") if r.get("tightness") is not None else None,
        stats=", ".join(f"{k} = {_fmt(v)}" for k, v in stat.items()),
        table=r.get("table") or "", notes=list(r.get("notes") or []), figure=r.get("figure"),
        runtime=r["runtime_s"], cached=r.get("cached"))


def write_markdown(path, meta, records, checks):
    """DIR/report.md: the summary (one line per check), then one section per check."""
    lines = ["# randfeat analysis report", "", _meta_line(meta, records), "",
             f"**{_counts(records)}**", "",
             "| check | verdict | headline [95 % interval] | detects (p >= 0.9) | audit | s |",
             "|---|---|---|---|---|---|"]
    for name, verdict, head, det, aud, sec in summary_rows(records):
        v = f"**{verdict}**" if verdict != "pass" else verdict
        lines.append(f"| [{name}](#{name}) | {v} | {_esc(head)} | {_esc(det)} | {_esc(aud)} "
                     f"| {sec} |")
    lines += ["", LEGEND, ""]
    for r in records:
        s = _section_parts(r, checks[r["name"]], meta)
        lines += [f"## {r['name']}", "", f"**{s['title']}** — verdict: **{s['verdict']}** "
                  f"({s['runtime']:.1f} s{', cached' if s['cached'] else ''})", "",
                  f"*Result.* {s['summary']}", ""]
        if s["power"]:
            lines += [f"*Power.* {s['power']}", ""]
        lines += [f"- {a}" for a in s["audit"]] + ([""] if s["audit"] else [])
        if s["figure"]:
            lines += [f"![{r['name']}]({s['figure']})", ""]
        lines += [f"> {s['claim']}", "", f"*Source.* {s['source']}", "",
                  f"*Design.* {s['design']}", "",
                  f"*False alarms.* Family false-alarm rate {s['alpha']:g} for the whole check, "
                  "split over its comparisons by Bonferroni.", ""]
        if s["tightness_meaning"]:
            lines += [f"*Tightness.* {s['tightness_meaning']}", ""]
        lines += [f"*Parameters* ({meta['mode']}):", "", "```json", s["params"], "```", ""]
        if s["stats"]:
            lines += ["Statistics: " + s["stats"], ""]
        if s["table"]:
            lines += [s["table"], ""]
        lines += [f"- {n}" for n in s["notes"]] + ([""] if s["notes"] else [])
    repro.atomic_write_text(path, "\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------
# HTML: the same report, one file, figures embedded
_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 78rem; margin: 1.5rem auto;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: .6rem 0; font-size: 13.5px; }
th, td { border: 1px solid #ccc; padding: .2rem .45rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
code, pre { font-family: ui-monospace, monospace; font-size: 12.5px; }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
blockquote { border-left: 3px solid #bbb; margin: .5rem 0; padding: .1rem .8rem; color: #444; }
img { max-width: 100%; }
.pass { color: #176b1b; font-weight: 600; } .fail { color: #b00020; font-weight: 600; }
.vacuous { color: #8a5a00; font-weight: 600; }
details { margin: .4rem 0; } summary { cursor: pointer; color: #333; }
h2 { border-top: 1px solid #ddd; padding-top: 1rem; margin-top: 2rem; }
"""


def _inline(text):
    import html
    import re

    t = html.escape(str(text), quote=False)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<i>\1</i>", t)
    t = re.sub(r"\[([^\]]+)\]\(#([\w-]+)\)", r'<a href="#\2">\1</a>', t)
    return t


def _cells(line):
    import re

    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)]


def md_to_html(text):
    """The Markdown the checks write (pipe tables, paragraphs, lists, inline code and bold) as
    HTML."""
    out, para, rows, items = [], [], [], []

    def flush():
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()
        if rows:
            head, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>"
                                 for r in body) + "</table>")
            rows.clear()

    for line in str(text).splitlines():
        st = line.strip()
        if st.startswith("|"):
            if para or items:
                flush()
            rows.append(_cells(st))
        elif st.startswith("- "):
            if para or rows:
                flush()
            items.append(st[2:])
        elif not st:
            flush()
        else:
            if rows or items:
                flush()
            para.append(st)
    flush()
    return "\n".join(out)


def _img(folder, name):
    import base64
    import pathlib

    if not name:
        return ""
    p = pathlib.Path(folder) / name if folder is not None else None
    if p is None or not p.exists():
        return f"<p><i>figure {name} not found</i></p>"
    data = base64.b64encode(p.read_bytes()).decode()
    return f'<img alt="{name}" src="data:image/png;base64,{data}">'


def write_html(path, meta, records, checks, figures=None):
    """DIR/report.html: :func:`write_markdown`'s report as one HTML file, the figures (PNG files in
    the folder ``figures``) embedded."""
    import html

    def v(x):
        return f'<span class="{x}">{x}</span>'

    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         "<title>randfeat analysis report</title>", f"<style>{_CSS}</style></head><body>",
         "<h1>randfeat analysis report</h1>", f"<p>{_inline(_meta_line(meta, records))}</p>",
         f"<p><b>{_counts(records)}</b></p>",
         "<table><tr><th>check</th><th>verdict</th><th>headline [95 % interval]</th>"
         "<th>detects (p &ge; 0.9)</th><th>audit</th><th>s</th></tr>"]
    for name, verdict, head, det, aud, sec in summary_rows(records):
        h.append(f'<tr><td><a href="#{name}">{name}</a></td><td>{v(verdict)}</td>'
                 f"<td>{html.escape(head)}</td><td>{html.escape(det)}</td>"
                 f"<td>{html.escape(aud)}</td><td>{sec}</td></tr>")
    h += ["</table>", f"<p>{_inline(LEGEND)}</p>"]
    for r in records:
        s = _section_parts(r, checks[r["name"]], meta)
        h += [f'<h2 id="{r["name"]}">{r["name"]}</h2>',
              f"<p><b>{html.escape(s['title'])}</b> — verdict: {v(s['verdict'])} "
              f"({s['runtime']:.1f} s{', cached' if s['cached'] else ''})</p>",
              f"<p><i>Result.</i> {_inline(s['summary'])}</p>"]
        if s["power"]:
            h.append(f"<p><i>Power.</i> {_inline(s['power'])}</p>")
        if s["audit"]:
            h.append("<ul>" + "".join(f"<li>{_inline(a)}</li>" for a in s["audit"]) + "</ul>")
        h.append(_img(figures, s["figure"]))
        h += [f"<blockquote>{_inline(s['claim'])}</blockquote>",
              f"<p><i>Source.</i> {_inline(s['source'])}</p>",
              f"<details><summary>Design, false alarms, parameters</summary>"
              f"<p>{_inline(s['design'])}</p><p>Family false-alarm rate {s['alpha']:g}, split "
              f"over the comparisons by Bonferroni.</p>"
              + (f"<p><i>Tightness.</i> {_inline(s['tightness_meaning'])}</p>"
                 if s["tightness_meaning"] else "")
              + f"<pre>{html.escape(s['params'])}</pre></details>"]
        if s["stats"]:
            h.append(f"<p>Statistics: {_inline(s['stats'])}</p>")
        if s["table"]:
            h.append(md_to_html(s["table"]))
        if s["notes"]:
            h.append("<ul>" + "".join(f"<li>{_inline(n)}</li>" for n in s["notes"]) + "</ul>")
    h.append("</body></html>")
    repro.atomic_write_text(path, "\n".join(h) + "\n")


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
