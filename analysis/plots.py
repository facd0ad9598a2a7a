"""Shared figure style: labelled axes with units, log scales for quantities spanning decades,
bounds as lines, confidence bands.  Functions take results, return Figures; no computation, no
``plt.show()``.

Figures are :class:`matplotlib.figure.Figure` objects made without pyplot: importing this module
selects no backend and leaves matplotlib's global state alone (``fig.savefig`` renders with Agg).
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure

COLORS = list(matplotlib.colormaps["tab10"].colors)
BOUND_STYLE = dict(color="k", linestyle="--", linewidth=1.4)


def colors(n):
    """``n`` pairwise distinct colours (tab10 up to 10, tab20 up to 20, then a sampled
    continuous map)."""
    if n <= 10:
        return COLORS[:max(n, 0)]
    if n <= 20:
        t20 = matplotlib.colormaps["tab20"].colors
        return [t20[i] for i in list(range(0, 20, 2)) + list(range(1, 20, 2))][:n]
    cmap = matplotlib.colormaps["turbo"]
    return [cmap(x) for x in np.linspace(0.05, 0.95, n)]


def figure(ncols=1, nrows=1, width=5.0, height=3.8, **kw):
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes.ravel()


def band(ax, x, lo, hi, color, alpha=0.2, **kw):
    ax.fill_between(x, lo, hi, color=color, alpha=alpha, linewidth=0, **kw)


def finish(ax, xlabel, ylabel, title=None, legend=True, loc="best", fontsize=7, ncol=1,
           outside=False):
    """Labels, title, grid and legend.  ``outside``: the legend right of the axes, never over
    the data (for long legends)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        if outside:
            ax.legend(fontsize=fontsize, loc="center left", bbox_to_anchor=(1.02, 0.5),
                      ncol=ncol, frameon=False)
        else:
            ax.legend(fontsize=fontsize, loc=loc, ncol=ncol)


def needed_vs_eps(ax, settings, rows, *, emp_key, bound_key, bound_label, ylabel, title):
    """Claim 1/2 panel: per setting (d, a), the size needed for P(sup >= eps) <= delta,
    empirical (solid, band: 95% bootstrap interval) against the bound (dashed), log axes."""
    for i, st in enumerate(settings):
        c = COLORS[i % len(COLORS)]
        rr = [r for r in rows if r["d"] == st["d"] and r["a"] == st["a"]]
        e = [r["eps"] for r in rr]
        ax.plot(e, [r[emp_key] for r in rr], "o-", color=c,
                label=f"empirical d={st['d']}, a={st['a']:g}")
        ax.plot(e, [r[bound_key] for r in rr], "--", color=c, lw=1.4, label=bound_label)
        ci = np.array([r.get("over_ci") or [np.nan, np.nan] for r in rr], float)
        b = np.array([r[bound_key] for r in rr], float)
        if np.isfinite(ci).any():
            # the 95% bootstrap interval of the empirical size (bound / over-prediction limits)
            with np.errstate(divide="ignore", invalid="ignore"):
                band(ax, e, b / ci[:, 1], b / ci[:, 0], c)
    ax.set_xscale("log")
    ax.set_yscale("log")
    finish(ax, "eps (kernel units)", ylabel, title, fontsize=6)


def verdict_title(fig, name, verdict):
    color = {"pass": "tab:green", "fail": "tab:red", "vacuous": "tab:gray"}.get(verdict, "k")
    fig.suptitle(f"{name}: {verdict.upper()}", color=color, fontsize=11)


def close(fig):
    """Release a figure (nothing to do for a pyplot-free Figure; kept for callers)."""
    fig.clear()


def as_array(x):
    return np.asarray(x, dtype=float)
