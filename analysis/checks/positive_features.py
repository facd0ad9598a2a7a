"""Check — positive, hyperbolic and trigonometric random features of the softmax and Gaussian
kernels: unbiased with their exact variances (iid and orthogonal), and the exact lognormal law
of the positive terms at large norms, where their variance explodes (Choromanski et al. 2021)."""

from __future__ import annotations

import math

import numpy as np

from analysis import featcheck, prf_law

NAME = "positive_features"
TITLE = "Positive / hyperbolic / trigonometric softmax features: exact mean and variance"
CLAIM = ("phi(x) = exp(w'u - ||u||^2/2)/sqrt(D), u = x/sigma, w ~ N(0, I), is unbiased for "
         "SM(x, y) = exp(u'v) with Var = SM^2 (e^{||u+v||^2} - 1)/D; the hyperbolic "
         "(exp(+-w'u), Var = SM^2 (e^s - 1)(1 - e^{-s})/D) and trigonometric (Var = "
         "e^{||u||^2+||v||^2} (1 - e^{-||u-v||^2})^2 / D) estimators likewise (Choromanski et "
         "al. 2021, Lemma 1 and 2); the Gaussian kernel exp(-||u - v||^2/2) with the norms "
         "(variances times e^{-||u||^2-||v||^2}); orthogonal blocks with chi_d radii keep the "
         "mean, with the covariance of two rows of a block C = Lambda^2 [1F1(d; d/2; s/2) - "
         "e^s] (positive, hyperbolic) or e^{a+b} [1F1(d; d/2; -t/2) - e^{-t}] "
         "(trigonometric) (derived here).  At large ||u|| one positive term is exactly "
         "lognormal, log T ~ N(-(||u||^2+||v||^2)/2, ||u+v||^2): its variance "
         "SM^2 (e^{||u+v||^2} - 1) explodes by that much.")
SOURCE = ("Choromanski et al., 'Rethinking Attention with Performers', ICLR 2021, Lemma 1, "
          "Lemma 2; orthogonal covariance and lognormal law: docs/theory/positive.md")
DESIGN = ("Pooled design (analysis.featcheck): n_fits fits of randfeat.PositiveRandomFeatures "
          "per configuration (softmax sigma = 1 and Gaussian sigma = 1.5; positive, "
          "hyperbolic, trigonometric; iid, and orthogonal for softmax), each of K groups of "
          "G = 16 d frequencies (d = 4; a group holds 16 whole orthogonal blocks).  Moderate "
          "pairs (||u + v||^2 <= 2: random, opposite with SM = e^{-1.44}, equal, unequal "
          "norms): two-sided z-test of the mean against the kernel with the exact standard "
          "error, scaled chi-square test of the group variance against the exact (iid or "
          "block) variance (analysis.prf_law, independent of randfeat; the orthogonal "
          "covariance through mpmath's 1F1).  Large pairs (positive estimator, iid: x = y at "
          "||u|| = 1.5, 2.5, 3.5, and opposite at ||u|| = 3): the log of every term against "
          "N(-c(a + b), ||u + v||^2), z-test of the mean and chi-square test of the variance. "
          "Bonferroni over all comparisons at ALPHA.")
COST = 2
ALPHA = 1e-5

_CONFIGS = [dict(kernel=k, sigma=s, estimator=e, sampling="iid")
            for k, s in (("softmax", 1.0), ("gaussian", 1.5)) for e in prf_law.ESTIMATORS] + \
    [dict(kernel="softmax", sigma=1.0, estimator=e, sampling="orthogonal")
     for e in prf_law.ESTIMATORS]
PARAMS = {
    "smoke": dict(d=4, configs=_CONFIGS[:1] + _CONFIGS[-1:], fits=2, K=100),
    "quick": dict(d=4, configs=_CONFIGS, fits=6, K=800),
    "full": dict(d=4, configs=_CONFIGS, fits=40, K=2000),
}


def pairs(d):
    """(name, u, v, large): u, v in units of sigma; ``large`` pairs get the log-law test."""
    rng = np.random.default_rng(20201001)
    e = rng.normal(size=d)
    e /= np.linalg.norm(e)
    f = rng.normal(size=d)
    f -= (f @ e) * e
    f /= np.linalg.norm(f)
    g = rng.normal(size=d)
    g /= np.linalg.norm(g)
    return [("random", 0.55 * e, 0.7 * g, False),
            ("opposite, SM = e^-1.44", 1.2 * e, -1.2 * e + 0.05 * f, False),
            ("x = y, ||u|| = 0.6", 0.6 * e, 0.6 * e, False),
            ("norms 0.2 and 0.9", 0.2 * f, 0.9 * g, False),
            ("x = y, ||u|| = 1.5", 1.5 * e, 1.5 * e, True),
            ("x = y, ||u|| = 2.5", 2.5 * f, 2.5 * f, True),
            ("x = y, ||u|| = 3.5", 3.5 * g, 3.5 * g, True),
            ("opposite, ||u|| = 3", 3.0 * e, -3.0 * e + 0.3 * f, True)]


def make_map(cfg, D, random_state):
    """The map under test (randfeat's public class)."""
    import randfeat

    return randfeat.PositiveRandomFeatures(D, kernel=cfg["kernel"], sigma=cfg["sigma"],
                                           estimator=cfg["estimator"],
                                           sampling=cfg["sampling"],
                                           random_state=random_state, n_threads=1)


def label(cfg):
    return f"{cfg['estimator']} {cfg['kernel']} {cfg['sampling']}"


def run(params, seed, progress=None):
    d = params["d"]
    P = pairs(d)
    G = featcheck.GROUP_BLOCKS * d
    K = params["K"]
    large = [i for i, p in enumerate(P) if p[3]]
    rows, errors = [], []
    for cfg in params["configs"]:
        lab = label(cfg)
        X = np.vstack([np.vstack([u, v]) for _, u, v, _ in P]) * cfg["sigma"]
        want_logs = cfg["estimator"] == "positive" and cfg["sampling"] == "iid"

        def fit_terms(rs, cfg=cfg, X=X, want_logs=want_logs):
            m = K * G
            D = m if cfg["estimator"] == "positive" else 2 * m
            Z = np.asarray(make_map(cfg, D, rs).fit(X).transform(X), float)
            zx, zy = Z[0::2], Z[1::2]
            if cfg["estimator"] == "positive":
                t = D * zx * zy
            else:
                t = m * (zx[:, :m] * zy[:, :m] + zx[:, m:] * zy[:, m:])
            groups = t.reshape(len(P), K, G).mean(axis=2).T
            if not want_logs:
                return (groups,)
            with np.errstate(divide="ignore"):
                logs = math.log(D) + np.log(zx[large]) + np.log(zy[large])
            return groups, logs

        try:
            out = featcheck.pooled(fit_terms, params["fits"], seed, (NAME, lab), progress)
        except Exception as exc:  # noqa: BLE001 - recorded, the verdict fails
            errors.append(f"{lab}: {exc!r}")
            continue
        groups = out[0]
        N = groups.shape[0] * G
        for i, (name, u, v, big) in enumerate(P):
            if big:
                continue
            mean, V1, C = prf_law.term_law(cfg["estimator"], cfg["kernel"], u, v,
                                           d if cfg["sampling"] == "orthogonal" else None)
            gv = prf_law.block_var(V1, C, G, d) if cfg["sampling"] == "orthogonal" else V1 / G
            if gv == 0:                 # trigonometric at x = y: every term is the kernel
                ok = np.allclose(groups[:, i], mean, rtol=1e-9, atol=0)
                rows.append(featcheck.exact_row(f"{lab}, {name}", ok,
                                                "zero variance: every estimate equals the "
                                                "kernel"))
                continue
            rows.append(featcheck.mean_row(f"{lab}, {name}", mean, groups[:, i], N,
                                           exact_var=gv * G))
            rows.append(featcheck.var_row(f"{lab}, {name}", gv, groups[:, i]))
        if want_logs:
            logs = np.moveaxis(out[1], 1, 0).reshape(len(large), -1)
            for j, i in enumerate(large):
                name, u, v, _ = P[i]
                mu, s = prf_law.log_term_law(cfg["kernel"], u, v)
                if not np.isfinite(logs[j]).all():
                    rows.append(featcheck.exact_row(f"{lab}, {name}", False,
                                                    "features underflowed to 0"))
                    continue
                rows += featcheck.log_rows(f"{lab}, {name}", mu, s, logs[j])
    notes = []
    for name, u, v, big in P:
        if big:
            s = float((u + v) @ (u + v))
            notes.append(f"{name}: ||u + v||^2 = {s:.3g}, relative variance of one positive "
                         f"term e^s - 1 = {math.expm1(s):.3g} (of a D = 10^4 estimate: "
                         f"relative sd {math.sqrt(math.expm1(s) / 1e4):.3g})")
    return dict(rows=rows, errors=errors, skipped=[], notes=notes, G=G, d=d)


def verdict(res):
    return featcheck.common_verdict(res, ALPHA, "feature products", notes=res.get("notes", []))


def audit(effect):
    """Inject ``effect`` through randfeat.PositiveRandomFeatures (transform scaled, or fit's
    frequencies repeated in chunks; analysis.featcheck)."""
    import randfeat

    return featcheck.audit(randfeat.PositiveRandomFeatures, effect)


def plot(res, v):
    return featcheck.common_plot(res, v, NAME, "means (and log-term means) against the exact law",
                                 "variances against the exact law")
