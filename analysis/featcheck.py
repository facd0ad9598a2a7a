r"""Shared plumbing of the checks of the projection maps ``ArcCosineFeatures`` and
``PositiveRandomFeatures`` (``analysis.checks.arccos_law``, ``prf_law``, ``prf_comparison``):
the pooled design, the computed power (``analysis.power`` effects) and the audit seams.

Pooled design
-------------
The terms of these maps are functions of one frequency each (a feature product times D, or one
frequency's pair of columns), so one fit of ``K * G`` frequencies holds ``K`` estimates of ``G``
terms each.  With iid frequencies they are independent; with orthogonal frequencies the blocks
of d rows are, and ``G = GROUP_BLOCKS * d`` keeps every group a whole number of blocks.  The
replicates are ``n_fits`` fits from ``analysis.montecarlo.replicate`` (distinct seeds, refused
if degenerate); every value comes from the estimator's own ``transform``.

Effects and audits (contract v3)
--------------------------------
``relative_bias_effect``: a multiplicative error :math:`(1 + \delta)` of every feature product
(a wrong constant, e.g. a lost :math:`\sqrt2`).  The mean of point i is tested by
:math:`z = (\bar t - k)/\mathrm{se}_i` with the exact standard error; under the error the mean
moves by :math:`\delta k_i` and its spread by :math:`(1 + \delta)`, so the point detects it with
probability :math:`\ge 0.9` when :math:`\delta|k_i|/\mathrm{se}_i \ge z_c + z_{0.9}(1 + \delta)`,
i.e. :math:`\delta \ge (z_c + z_{0.9})/(|k_i|/\mathrm{se}_i - z_{0.9})`; the effect is the
smallest over the points (any one detecting fails the check).  Audit
(:func:`audit_scale`): the class's ``transform`` wrapped to return its output times
:math:`\sqrt{1 + \delta}`.

``variance_effect``: the variance of the estimate multiplied by :math:`\rho` with the mean
kept (correlated frequencies: a seed reused, a block repeated).  The scaled chi-square test of a
point with :math:`\nu` degrees of freedom detects :math:`\rho \ge` ``stats.
variance_detectable_ratio(nu, level)`` with probability 0.9; the seam can inject only the
factors :math:`1 + 2j/B` (``B = GROUP_BLOCKS``): :func:`audit_duplicate` wraps the class's
``fit`` so that in every group of B chunks of d frequencies the chunks 1, 3, ..., 2j - 1 repeat
chunks 0, 2, ..., 2j - 2, which multiplies the variance of every group mean by exactly
:math:`1 + 2j/B` at every point (a group of B independent chunk means, j of them counted twice:
:math:`(B - 2j + 4j)/B^2` times a chunk's variance; a whole repeated orthogonal block keeps its
rows orthogonal) and leaves every mean unchanged.  The stated effect is the smallest such factor
at or above the detectable one (a weaker, honest statement).
"""

from __future__ import annotations

import contextlib
import math
from unittest import mock

import numpy as np
from scipy import stats as _st

from analysis import montecarlo as mc
from analysis import power, stats

__all__ = ["GROUP_BLOCKS", "pooled", "relative_bias_effect", "variance_effect", "audit_scale",
           "audit_duplicate", "audit", "z_90", "mean_row", "var_row", "log_rows", "exact_row",
           "common_verdict", "common_plot"]

#: chunks (of d frequencies) per group; the variance seam injects factors 1 + 2j / GROUP_BLOCKS
GROUP_BLOCKS = 16
z_90 = float(_st.norm.ppf(0.9))


def pooled(fit_terms, n_fits, seed, names, progress=None):
    """``mc.replicate`` over ``n_fits`` fits; ``fit_terms(random_state)`` returns a tuple of
    arrays whose first is the (K, n_points) group means.  Returns the tuple with the fits
    stacked along axis 0 (the group means reshaped to (n_fits * K, n_points))."""
    seeds = mc.seed_sequences(seed, *names, n=n_fits)
    res = mc.replicate(fit_terms, seeds, progress)
    res = res if isinstance(res, tuple) else (res,)
    groups = res[0].reshape(-1, res[0].shape[-1])
    return (groups,) + tuple(res[1:])


def relative_bias_effect(points, level, what="feature products"):
    """``points``: (name, k, se) of the mean tests (exact se of the mean).  Returns the effect
    (a relative error of every feature product detected with probability >= 0.9) or None."""
    zc = stats.z_threshold(level)
    best = None
    for name, k, se in points:
        if not (se > 0 and k != 0 and math.isfinite(se)):
            continue
        snr = abs(k) / se
        if snr <= z_90:
            continue
        delta = (zc + z_90) / (snr - z_90)
        if best is None or delta < best[0]:
            best = (delta, name)
    if best is None:
        return None
    return power.effect(f"relative error of all {what} (the mean off by that fraction)",
                        best[0], "relative", where=f"detected at {best[1]}")


def variance_effect(points, level, blocks=GROUP_BLOCKS):
    """``points``: (name, nu) of the two-sided variance tests.  Returns the effect (a variance
    factor injectable by :func:`audit_duplicate`, detected with probability >= 0.9) or None."""
    best = None
    for name, nu in points:
        if not (nu > 1 and math.isfinite(nu)):
            continue
        up, _ = stats.variance_detectable_ratio(float(nu), level)
        if best is None or up < best[0]:
            best = (up, name)
    if best is None:
        return None
    j = math.ceil((best[0] - 1.0) * blocks / 2.0 - 1e-12)
    if j < 1 or 2 * j > blocks:
        return None
    return power.effect("variance of the estimate inflated with its mean kept (correlated "
                        "frequencies)", 1.0 + 2.0 * j / blocks, "factor",
                        where=f"detected at {best[1]}; smallest realizable factor >= "
                              f"{best[0]:.3f}")


@contextlib.contextmanager
def audit_scale(cls, delta):
    """Every feature of ``cls.transform`` times sqrt(1 + delta): every product times
    (1 + delta)."""
    real = cls.transform
    f = math.sqrt(1.0 + delta)

    def transform(self, X):
        out = real(self, X)
        return out * out.dtype.type(f)

    with mock.patch.object(cls, "transform", transform):
        yield


@contextlib.contextmanager
def audit_duplicate(cls, factor, blocks=GROUP_BLOCKS):
    """``cls.fit`` wrapped: in every group of ``blocks`` chunks of d frequencies (d = the
    input dimension), chunks 2i + 1 repeat chunks 2i for i < j, ``factor = 1 + 2j / blocks``."""
    j = int(round((factor - 1.0) * blocks / 2.0))
    if j < 1 or 2 * j > blocks or abs(1.0 + 2.0 * j / blocks - factor) > 1e-9:
        raise ValueError(f"audit_duplicate: factor {factor} is not 1 + 2j/{blocks}")
    real = cls.fit

    def fit(self, X, y=None):
        real(self, X, y)
        W = np.array(self.frequencies_)
        d = W.shape[1]
        n = W.shape[0]
        g = blocks * d
        for start in range(0, n - g + 1, g):
            for i in range(j):
                src = start + 2 * i * d
                W[src + d:src + 2 * d] = W[src:src + d]
        W.flags.writeable = False
        self.__dict__["frequencies_"] = W
        return self

    with mock.patch.object(cls, "fit", fit):
        yield


def audit(cls, effect):
    """The seam of ``effect`` (by its unit): relative -> :func:`audit_scale`, factor ->
    :func:`audit_duplicate`."""
    if effect["unit"] == "relative":
        return audit_scale(cls, effect["size"])
    if effect["unit"] == "factor":
        return audit_duplicate(cls, effect["size"])
    raise ValueError(f"no audit seam for an effect in unit {effect['unit']!r}")


# ------------------------------------------------------------------ comparisons and verdicts
def log_rows(name, mu, s, logt):
    """The exact lognormal law of positive terms: the mean of ``logt`` (z-test, exact variance
    ``s``) and its variance (chi-square) against N(mu, s).  Flagged ``log`` (not used for the
    effects on the estimate)."""
    logt = np.asarray(logt, float).ravel()
    a = mean_row(name + " [log-term mean]", mu, logt, logt.size, exact_var=s)
    b = var_row(name + " [log-term variance]", s, logt)
    a["log"] = b["log"] = True
    return [a, b]


def mean_row(name, target, values, n_terms, exact_var=None):
    """Two-sided z-test of the mean of ``values`` (group means of ``n_terms`` terms in all)
    against ``target``: with the exact variance of one term when given, else the sample
    variance of the group means.  Returns a row dict."""
    values = np.asarray(values, float)
    mean = float(values.mean())
    if exact_var is not None:
        se = math.sqrt(max(exact_var, 0.0) / n_terms)
    else:
        se = float(values.std(ddof=1) / math.sqrt(values.size))
    if se > 0:
        z = (mean - target) / se
    else:
        z = 0.0 if math.isclose(mean, target, rel_tol=1e-12, abs_tol=1e-300) else math.inf
    return dict(kind="mean", name=name, target=float(target), value=mean, se=se, z=float(z),
                p=float(2.0 * _st.norm.sf(abs(z))), exact_se=exact_var is not None)


def var_row(name, target, values):
    """Scaled chi-square test (``stats.variance_pvalue``) of the variance of ``values``
    against ``target``.  Returns a row dict."""
    p, ratio, nu = stats.variance_pvalue(np.asarray(values, float), target)
    lo, s2, hi = stats.variance_limits(np.asarray(values, float), 0.025)
    return dict(kind="var", name=name, target=float(target), value=float(s2),
                ratio=float(ratio), lo=float(lo / target), hi=float(hi / target),
                p=float(p), nu=float(nu))


def exact_row(name, ok, detail):
    """A deterministic comparison (no false alarm)."""
    return dict(kind="exact", name=name, ok=bool(ok), detail=str(detail))


def common_verdict(res, alpha, what, extra_effects=(), notes=(), extra_comparisons=0):
    """Verdict of a check whose result holds ``rows`` (mean / var / exact / claim rows),
    ``errors`` and ``skipped``: Bonferroni over the statistical rows (and
    ``extra_comparisons`` tests decided elsewhere, e.g. one-sided claims reported as exact
    rows) at family level ``alpha``; the headline names the worst mean and the worst variance
    ratio; the power is computed from the rows (:func:`relative_bias_effect`,
    :func:`variance_effect`)."""
    rows = res["rows"]
    stat_rows = [r for r in rows if r["kind"] in ("mean", "var", "claim")]
    m = max(len(stat_rows) + int(extra_comparisons), 1)
    level = stats.bonferroni(alpha, m)
    fails = [r["name"] + (" (mean)" if r["kind"] == "mean" else " (variance)"
                          if r["kind"] == "var" else " (claim)")
             for r in stat_rows if not (r["p"] >= level)]
    fails += [r["name"] + " (exact)" for r in rows if r["kind"] == "exact" and not r["ok"]]
    errors, skipped = list(res.get("errors", [])), list(res.get("skipped", []))
    means = [r for r in rows if r["kind"] == "mean"]
    vars_ = [r for r in rows if r["kind"] == "var"]
    wm = max(means, key=lambda r: abs(r["z"]), default=None)
    wv = max(vars_, key=lambda r: abs(math.log(r["ratio"])) if r["ratio"] > 0 else math.inf,
             default=None)
    det = []
    e = relative_bias_effect([(r["name"], r["target"], r["se"]) for r in means
                              if not r.get("log")], level, what)
    if e:
        det.append(e)
    e = variance_effect([(r["name"], r["nu"]) for r in vars_ if not r.get("log")], level)
    if e:
        det.append(e)
    det += list(extra_effects)
    parts = []
    if wm:
        parts.append(f"worst mean: {wm['name']}, z = {wm['z']:+.2f}")
    if wv:
        parts.append(f"worst variance: {wv['name']}, measured/exact = {wv['ratio']:.3f} "
                     f"[{wv['lo']:.3f}, {wv['hi']:.3f}]")
    summary = "; ".join(parts) + f" ({m} comparisons at level {level:.1g})"
    if fails:
        summary = f"FAILED {len(fails)}: {', '.join(fails[:4])}" + \
            (", ..." if len(fails) > 4 else "") + "; " + summary
    if errors:
        summary = f"ERRORS in {len(errors)} parts ({errors[0]}); " + summary
    if skipped:
        summary = f"skipped {len(skipped)} parts; " + summary
    verdict = "fail" if (fails or errors) else ("vacuous" if skipped else "pass")
    lines = []
    for r in rows:
        if r["kind"] == "mean":
            lines.append(f"| {r['name']} | mean | {r['target']:.6g} | {r['value']:.6g} ± "
                         f"{r['se']:.2g} | z = {r['z']:+.2f} | {r['p']:.2g} |"
                         f" {'FAIL' if r['p'] < level else 'ok'} |")
        elif r["kind"] == "var":
            lines.append(f"| {r['name']} | variance | {r['target']:.4g} | {r['value']:.4g} | "
                         f"ratio {r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}] | "
                         f"{r['p']:.2g} | {'FAIL' if r['p'] < level else 'ok'} |")
        elif r["kind"] == "claim":
            lines.append(f"| {r['name']} | claim | {r['target']} | {r['value']:.4g} | "
                         f"{r['detail']} | {r['p']:.2g} | {'FAIL' if r['p'] < level else 'ok'} |")
        else:
            lines.append(f"| {r['name']} | exact | | | {r['detail']} | | "
                         f"{'ok' if r['ok'] else 'FAIL'} |")
    table = ("| point | test | exact | measured | statistic | p | |\n"
             "|---|---|---|---|---|---|---|\n" + "\n".join(lines))
    statistic = {"n_comparisons": m, "per_comparison_level": level, "failed": fails,
                 "worst_mean": wm["name"] if wm else None,
                 "worst_mean_z": wm["z"] if wm else None,
                 "worst_variance": wv["name"] if wv else None,
                 "worst_variance_ratio": wv["ratio"] if wv else None,
                 "errors": errors, "skipped": skipped}
    return dict(verdict=verdict, statistic=statistic, tightness=None, summary=summary,
                table=table, notes=list(notes) + [f"error: {x}" for x in errors]
                + [f"skipped: {x}" for x in skipped],
                detectable=det, power=power.statement(det))


def common_plot(res, v, name, title_mean, title_var):
    """Two panels: the z of every mean test (with the Bonferroni threshold) and every
    measured/exact variance ratio with its 95% interval."""
    from analysis import plots

    fig, (ax, bx) = plots.figure(ncols=2, width=5.5)
    level = v["statistic"]["per_comparison_level"]
    zc = stats.z_threshold(level)
    means = [r for r in res["rows"] if r["kind"] == "mean"]
    vars_ = [r for r in res["rows"] if r["kind"] == "var"]
    ax.scatter(range(len(means)), [max(min(r["z"], 50), -50) for r in means], s=10,
               color=plots.COLORS[0], label="z of the mean vs the exact kernel")
    ax.axhline(zc, **plots.BOUND_STYLE, label=f"Bonferroni threshold ±{zc:.2f}")
    ax.axhline(-zc, **plots.BOUND_STYLE)
    plots.finish(ax, "mean test (index in the table)", "z (standard errors)", title_mean)
    if vars_:
        x = np.arange(len(vars_))
        ratio = np.array([r["ratio"] for r in vars_])
        lo = np.array([r["lo"] for r in vars_])
        hi = np.array([r["hi"] for r in vars_])
        bx.errorbar(x, ratio, yerr=[ratio - lo, hi - ratio], fmt="o", ms=3, capsize=2,
                    color=plots.COLORS[1], label="measured / exact variance (95%)")
        bx.axhline(1.0, color="gray", lw=1, label="exact law")
    plots.finish(bx, "variance test (index in the table)", "variance ratio (measured / exact)",
                 title_var)
    plots.verdict_title(fig, name, v["verdict"])
    return fig
