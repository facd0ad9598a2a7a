"""Check — arc-cosine features: unbiased for k_n with the exact variance (2 k_2n - k_n^2)/D, on
random and adversarial pairs (Cho & Saul 2009)."""

from __future__ import annotations

import math

import numpy as np

from analysis import arccos_law, featcheck

NAME = "arccos_features"
TITLE = "Arc-cosine features: unbiased for k_n, exact variance (2 k_2n - k_n^2)/D"
CLAIM = ("The features z(x) = sqrt(2/D) [Theta(w_j'x) (w_j'x)^n], w_j ~ N(0, I), give "
         "E z(x)'z(y) = k_n(x, y) = ||x||^n ||y||^n J_n(theta) / pi (Cho & Saul 2009, eq. 1-6) "
         "for n = 0, 1, 2, with Var = (2 k_2n(x, y) - k_n(x, y)^2) / D (derived here: one term "
         "squared is twice the term of order 2n; J_4 from Cho & Saul's recursion), also at "
         "near-parallel, antiparallel and unequal-norm pairs; orthogonal frequencies (each row "
         "still N(0, I)) keep the estimate unbiased.")
SOURCE = ("Cho & Saul, 'Kernel Methods for Deep Learning', NIPS 2009, eq. (1)-(6); exact "
          "variance: docs/theory/arccos.md")
DESIGN = ("Pooled design (analysis.featcheck): n_fits fits of randfeat.ArcCosineFeatures of "
          "K * G features (G = 16 d) on 7 fixed pairs in d = 5 -- random, unequal norms "
          "(0.3 and 4), near-parallel (theta = 1e-3, norms 1 and 3), orthogonal, nearly "
          "antiparallel (theta = pi - 0.1), antiparallel (exactly), equal; each fit gives K "
          "group estimates of G terms D z_j(x) z_j(y).  iid: two-sided z-test of the mean "
          "against k_n with the exact standard error sqrt(V/N) and the scaled chi-square test "
          "of the group variance against V/G (analysis.arccos_law, independent of randfeat); "
          "orthogonal: z-test of the mean with the groups' sample variance (each group is 16 "
          "independent blocks).  Antiparallel: every estimate must be exactly 0.  Bonferroni "
          "over all comparisons at ALPHA.")
COST = 1
ALPHA = 1e-5

PARAMS = {
    "smoke": dict(d=5, orders=[0, 1, 2], fits=2, K=100, orth_fits=2, orth_K=100),
    "quick": dict(d=5, orders=[0, 1, 2], fits=8, K=1000, orth_fits=4, orth_K=600),
    "full": dict(d=5, orders=[0, 1, 2], fits=40, K=2000, orth_fits=20, orth_K=2000),
}


def pairs(d):
    """The fixed pairs (name, x, y)."""
    rng = np.random.default_rng(20091207)
    x = rng.normal(size=d)
    x /= np.linalg.norm(x)
    v = rng.normal(size=d)
    v -= (v @ x) * x
    v /= np.linalg.norm(v)

    def at(theta, r):
        return r * (math.cos(theta) * x + math.sin(theta) * v)

    y = rng.normal(size=d)
    return [("random", 1.3 * x, y / np.linalg.norm(y) * 1.6),
            ("norms 0.3 and 4", 0.3 * x, 4.0 * rng.normal(size=d) / math.sqrt(d)),
            ("theta = 1e-3, norms 1, 3", x, at(1e-3, 3.0)),
            ("theta = pi/2", 1.2 * x, at(math.pi / 2, 0.8)),
            ("theta = pi - 0.1", x, at(math.pi - 0.1, 1.5)),
            ("antiparallel", x, -2.0 * x),
            ("x = y", 1.1 * x, 1.1 * x)]


def make_map(order, sampling, D, random_state):
    """The map under test (randfeat's public class)."""
    import randfeat

    return randfeat.ArcCosineFeatures(D, order=order, sampling=sampling,
                                      random_state=random_state, n_threads=1)


def run(params, seed, progress=None):
    d = params["d"]
    P = pairs(d)
    X = np.vstack([np.vstack([x, y]) for _, x, y in P])
    G = featcheck.GROUP_BLOCKS * d
    rows, errors = [], []
    for sampling in ("iid", "orthogonal"):
        K = params["K"] if sampling == "iid" else params["orth_K"]
        n_fits = params["fits"] if sampling == "iid" else params["orth_fits"]
        for order in params["orders"]:
            part = f"{sampling} order {order}"

            def fit_terms(rs, order=order, sampling=sampling, K=K):
                D = K * G
                Z = make_map(order, sampling, D, rs).fit(X).transform(X)
                t = D * np.asarray(Z[0::2], float) * np.asarray(Z[1::2], float)
                return (t.reshape(len(P), K, G).mean(axis=2).T,)

            try:
                (groups,) = featcheck.pooled(fit_terms, n_fits, seed, (NAME, sampling, order),
                                             progress)
            except Exception as exc:  # noqa: BLE001 - recorded, the verdict fails
                errors.append(f"{part}: {exc!r}")
                continue
            N = groups.shape[0] * G
            for i, (name, x, y) in enumerate(P):
                label = f"{part}, {name}"
                k = arccos_law.k(order, x, y)
                V = arccos_law.term_var(order, x, y)
                if name == "antiparallel":
                    nz = int(np.count_nonzero(groups[:, i]))
                    rows.append(featcheck.exact_row(label, nz == 0 and k == 0,
                                                    f"{nz} non-zero estimates (k = {k:g})"))
                    continue
                if sampling == "iid":
                    rows.append(featcheck.mean_row(label, k, groups[:, i], N, exact_var=V))
                    rows.append(featcheck.var_row(label, V / G, groups[:, i]))
                else:
                    rows.append(featcheck.mean_row(label, k, groups[:, i], N))
    return dict(rows=rows, errors=errors, skipped=[], G=G, d=d)


def verdict(res):
    return featcheck.common_verdict(res, ALPHA, "feature products")


def audit(effect):
    """Inject ``effect`` through randfeat.ArcCosineFeatures (transform scaled, or fit's
    frequencies repeated in chunks; analysis.featcheck)."""
    import randfeat

    return featcheck.audit(randfeat.ArcCosineFeatures, effect)


def plot(res, v):
    return featcheck.common_plot(res, v, NAME, "means of k-hat against k_n (iid and orthogonal)",
                                 "variance of k-hat against (2 k_2n - k_n^2)/D (iid)")
