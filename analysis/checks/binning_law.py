"""Check — the exact law of random binning on lattice inputs: Binomial collision counts, triple
collisions, and the hashing mode's collision probability."""

from __future__ import annotations

import contextlib

import numpy as np
from scipy import stats as _st

from analysis import maps, plots, stats
from analysis import montecarlo as mc
from analysis import power as _power

NAME = "binning_law"
TITLE = "Random binning: exact collision laws on lattice inputs (pairs, triples, hashing)"
CLAIM = ("Random binning (RR 2007 §4, Algorithm 2): in each grid (pitch delta_j ~ p per "
         "dimension, shift u_j ~ U[0, delta_j)) points x and y share a cell with probability "
         "prod_j k_1(|x_j - y_j|) = k(x - y) (Lemma 1), independently across grids, so the "
         "number of the P grids in which they collide is exactly Binomial(P, k). Three points "
         "share a cell iff in every dimension the cell covers their span, with probability "
         "prod_j k_1(max_j - min_j) (the same integral, THEORY §3.1). With hash_size = K "
         "(randfeat's hashing mode) distinct cells collide in a column with probability 1/K, so "
         "E z(x)'z(y) = k + (1 - k)/K (randfeat.binning docs).")
SOURCE = "RR 2007 §4, Lemma 1, Algorithm 2; THEORY §3.1, §3.5; randfeat.RandomBinningFeatures"
DESIGN = ("Kernels: Laplacian and rational (a = 1.5), sigma = 1, d = 2. Inputs on the lattice "
          "every grid is laid out from (x0 = 0: a cell edge of every grid if the shifts were "
          "missing): pairs (0, Delta) with Delta along an axis (0.5, 1, 2 sigma), along the "
          "diagonal, and one random direction; triples (0, a e_0, 2 a e_0) and (0, a e_0, a "
          "e_1). Pooled design (analysis.pooled): one fit with K P i.i.d. grids holds K "
          "independent P-grid replicates (its consecutive groups of P grids, read from the "
          "transform's cell columns), n_fits fits. Tests, Bonferroni over all at ALPHA: (1) per "
          "pair, the mean collision fraction against k with the exact Binomial variance "
          "(z-test) and the distribution of the K counts against Binomial(P, k) (Pearson "
          "chi-square, bins pooled to expected counts >= 20); (2) per triple, the mean triple-"
          "collision fraction against prod_j k_1(span_j) (exact variance); (3) hashing mode "
          "(hash_size = K_hash), per pair, the mean collision fraction of n_hash_fits fits "
          "against k + (1 - k)/K_hash (t-test over fits: grids of one fit share the hash "
          "salt). Detects: a wrong pitch law or bandwidth, missing or biased shifts, grids that "
          "are not independent (pitches or shifts shared by several grids: the counts are "
          "over-dispersed while the mean is right), cells that do not tile (triples), a hash "
          "that collides more often than 1/K.")
COST = 1
ALPHA = 1e-5
KERNELS = [dict(kernel="laplacian"), dict(kernel="rational", a=1.5)]

PARAMS = {
    "smoke": dict(kernels=KERNELS[:1], P=16, K=512, n_fits=2, hash_size=4, hash_P=1024,
                  n_hash_fits=20),
    "quick": dict(kernels=KERNELS, P=16, K=2048, n_fits=4, hash_size=4, hash_P=2048,
                  n_hash_fits=40),
    "full": dict(kernels=KERNELS, P=16, K=8192, n_fits=8, hash_size=4, hash_P=4096,
                 n_hash_fits=200),
}
D = 2
SIGMA = 1.0


def inputs():
    """(pair names, pair differences, triple names, triples (t, 3, d)); x0 = 0."""
    e = np.eye(D)
    u = np.random.default_rng(20070104).standard_normal(D)
    u /= np.linalg.norm(u)
    pairs = {"axis 0.5": 0.5 * e[0], "axis 1": 1.0 * e[0], "axis 2": 2.0 * e[0],
             "-axis 1": -1.0 * e[1], "diagonal 0.5": 0.5 * (e[0] + e[1]),
             "diagonal 1": 1.0 * (e[0] + e[1]), "random 1": u}
    triples = {"collinear 0.5": np.array([0 * e[0], 0.5 * e[0], 1.0 * e[0]]),
               "collinear 1": np.array([0 * e[0], 1.0 * e[0], 2.0 * e[0]]),
               "corner 1": np.array([0 * e[0], 1.0 * e[0], 1.0 * e[1]])}
    return (list(pairs), np.array(list(pairs.values())), list(triples),
            np.array(list(triples.values())))


def profile(kernel, t):
    """The 1-D kernel profile k_1(t) at |t| (analysis.truth, independent of randfeat)."""
    spec = dict(family="binning", sigma=SIGMA, **kernel)
    return maps.true_k(spec, np.abs(np.asarray(t, float))[..., None])


def _label(kernel):
    return maps.label(dict(family="binning", **kernel))


def _cells(Z, P):
    Z = Z.tocsr()
    Z.sort_indices()
    if Z.nnz != Z.shape[0] * P:
        raise AssertionError("binning output is not one entry per grid per row")
    return Z.indices.reshape(Z.shape[0], P)


def _points():
    pn, pairs, tn, triples = inputs()
    X = np.vstack([np.zeros((1, D)), pairs, triples.reshape(-1, D)])
    return pn, pairs, tn, triples, X


def n_tests(params):
    pn, _, tn, _ = inputs()
    return len(params["kernels"]) * (2 * len(pn) + len(tn) + len(pn))


def run(params, seed, progress=None):
    pn, pairs, tn, triples, X = _points()
    P, K = params["P"], params["K"]
    n_pairs = len(pn)
    out = []
    for kernel in params["kernels"]:
        spec = dict(family="binning", sigma=SIGMA, **kernel)
        lab = _label(kernel)
        k = maps.true_k(spec, pairs)
        span = triples.max(axis=1) - triples.min(axis=1)                 # (t, d)
        k3 = np.prod(profile(kernel, span), axis=1)

        def one(rs, spec=spec):
            est = maps.build(spec, K * P, rs)
            C = _cells(est.fit(X).transform(X), K * P)                    # (points, K P)
            pair = (C[1:1 + n_pairs] == C[0]).reshape(n_pairs, K, P).sum(axis=2)
            T = C[1 + n_pairs:].reshape(len(tn), 3, K * P)
            tri = ((T[:, 0] == T[:, 1]) & (T[:, 0] == T[:, 2])).reshape(len(tn), K, P)
            return np.concatenate([pair, tri.sum(axis=2)]).T               # (K, pairs+triples)

        seeds = mc.seed_sequences(seed, NAME, lab, n=params["n_fits"])
        cnt = mc.replicate(one, seeds, progress).reshape(-1, n_pairs + len(tn))
        pc, tc = cnt[:, :n_pairs], cnt[:, n_pairs:]
        zp, mp, sp = stats.z_test_mean(pc / P, k, exact_var=k * (1 - k) / P)
        zt, mt, st_ = stats.z_test_mean(tc / P, k3, exact_var=k3 * (1 - k3) / P)
        gof = [_gof(pc[:, i], P, k[i]) for i in range(n_pairs)]
        # hashing mode: one fit per replicate (the grids of a fit share the hash salt)
        Kh = params["hash_size"]
        hspec = dict(spec, hash_size=Kh)

        def hashed(rs, hspec=hspec):
            est = maps.build(hspec, params["hash_P"], rs)
            C = _cells(est.fit(X).transform(X), params["hash_P"])
            return (C[1:1 + n_pairs] == C[0]).mean(axis=1)

        hs = mc.seed_sequences(seed, NAME, lab, "hashing", n=params["n_hash_fits"])
        hf = mc.replicate(hashed, hs, progress)
        kh = k + (1 - k) / Kh
        th, mh, sh = stats.z_test_mean(hf, kh)
        out.append(dict(kernel=kernel, label=lab, pairs=pn, k=k.tolist(),
                        pair_mean=mp.tolist(), pair_se=sp.tolist(), pair_z=zp.tolist(),
                        gof_p=[g[0] for g in gof], gof_stat=[g[1] for g in gof],
                        gof_df=[g[2] for g in gof],
                        count_var_ratio=(pc.var(axis=0, ddof=1) / (P * k * (1 - k))).tolist(),
                        triples=tn, k3=k3.tolist(), tri_mean=mt.tolist(), tri_se=st_.tolist(),
                        tri_z=zt.tolist(), hash_k=kh.tolist(), hash_mean=mh.tolist(),
                        hash_se=sh.tolist(), hash_t=th.tolist()))
    return dict(P=P, K=K, n_rep=int(K * params["n_fits"]), hash_size=params["hash_size"],
                hash_P=params["hash_P"], n_hash_fits=params["n_hash_fits"], rows=out)


def _gof(counts, P, k, min_expected=20.0):
    """Pearson chi-square of the counts (0..P) against Binomial(P, k), bins pooled from both
    ends until every expected count is >= ``min_expected``; returns (p, statistic, df)."""
    n = len(counts)
    obs = np.bincount(np.asarray(counts, int), minlength=P + 1).astype(float)
    exp = n * _st.binom.pmf(np.arange(P + 1), P, k)
    o, e = [], []
    acc_o = acc_e = 0.0
    for oi, ei in zip(obs, exp, strict=True):
        acc_o += oi
        acc_e += ei
        if acc_e >= min_expected:
            o.append(acc_o)
            e.append(acc_e)
            acc_o = acc_e = 0.0
    if e:
        o[-1] += acc_o
        e[-1] += acc_e
    if len(e) < 2:
        return 1.0, 0.0, 0
    o, e = np.asarray(o), np.asarray(e)
    stat = float(np.sum((o - e) ** 2 / e))
    df = len(e) - 1
    return float(_st.chi2.sf(stat, df)), stat, df


def _tests(res):
    """[(kind, map, input, statistic as a z or p, failed?)] at the Bonferroni level."""
    m = sum(len(r["pairs"]) * 3 + len(r["triples"]) for r in res["rows"])
    level = stats.bonferroni(ALPHA, m)
    zc = stats.z_threshold(level)
    tc = float(_st.t.isf(level / 2, res["n_hash_fits"] - 1))
    out = []
    for r in res["rows"]:
        for i, nm in enumerate(r["pairs"]):
            out.append(("pair mean", r["label"], nm, r["pair_z"][i], abs(r["pair_z"][i]) > zc))
            out.append(("pair Binomial law", r["label"], nm, r["gof_p"][i],
                        r["gof_p"][i] < level))
            out.append(("hashing mean", r["label"], nm, r["hash_t"][i],
                        abs(r["hash_t"][i]) > tc))
        for i, nm in enumerate(r["triples"]):
            out.append(("triple mean", r["label"], nm, r["tri_z"][i], abs(r["tri_z"][i]) > zc))
    return out, level, zc, tc, m


def verdict(res):
    tests, level, zc, tc, m = _tests(res)
    fails = [f"{kind} {lab} {nm}" for kind, lab, nm, _, bad in tests if bad]
    zs = [(abs(s), f"{kind} {lab} {nm}") for kind, lab, nm, s, _ in tests
          if kind in ("pair mean", "triple mean")]
    worst_z = max(zs) if zs else (0.0, "")
    ps = [(s, f"{lab} {nm}") for kind, lab, nm, s, _ in tests if kind == "pair Binomial law"]
    worst_p = min(ps) if ps else (1.0, "")
    hs = [(abs(s), f"{lab} {nm}") for kind, lab, nm, s, _ in tests if kind == "hashing mean"]
    worst_h = max(hs) if hs else (0.0, "")
    lines = []
    for r in res["rows"]:
        for i, nm in enumerate(r["pairs"]):
            lines.append(f"| {r['label']} | pair {nm} | {r['k'][i]:.4f} | "
                         f"{r['pair_mean'][i]:.4f} | {r['pair_z'][i]:+.2f} | "
                         f"{r['gof_p'][i]:.2g} (chi2 {r['gof_stat'][i]:.1f}, df "
                         f"{r['gof_df'][i]}); Var ratio {r['count_var_ratio'][i]:.3f} | "
                         f"{r['hash_k'][i]:.4f} / {r['hash_mean'][i]:.4f} "
                         f"(t {r['hash_t'][i]:+.2f}) |")
        for i, nm in enumerate(r["triples"]):
            lines.append(f"| {r['label']} | triple {nm} | {r['k3'][i]:.4f} | "
                         f"{r['tri_mean'][i]:.4f} | {r['tri_z'][i]:+.2f} | - | - |")
    table = ("| map | input | exact collision probability | mean fraction | z | Binomial law: "
             "p (Pearson) | hashing: exact / mean (t) |\n|---|---|---|---|---|---|---|\n"
             + "\n".join(lines))
    notes = [f"{m} tests at family level {ALPHA:g} (per test {level:.2g}): |z| > {zc:.2f}, "
             f"p < {level:.2g}, hashing |t| > {tc:.2f} ({res['n_hash_fits'] - 1} df); "
             f"{res['n_rep']} replicates of P = {res['P']} grids per map; hashing mode "
             f"K = {res['hash_size']}, {res['hash_P']} grids per fit."]
    det = _detectable(res, zc)
    summary = (f"worst mean |z| {worst_z[0]:.2f} ({worst_z[1]}) vs {zc:.2f}; smallest Binomial-"
               f"law p {worst_p[0]:.2g} ({worst_p[1]}) vs {level:.2g}; hashing worst |t| "
               f"{worst_h[0]:.2f} ({worst_h[1]}) vs {tc:.2f}")
    if fails:
        summary = f"FAILED {len(fails)}: {', '.join(fails[:5])}; " + summary
    return dict(verdict="fail" if fails else "pass",
                statistic={"worst_mean_z": worst_z[0], "worst_mean_at": worst_z[1],
                           "min_law_p": worst_p[0], "min_law_p_at": worst_p[1],
                           "hash_worst_t": worst_h[0], "z_threshold": zc,
                           "per_test_level": level, "failed": fails},
                tightness=None, summary=summary, table=table, notes=notes, detectable=det,
                power=_power.statement(det))


def _detectable(res, zc):
    """A bandwidth (pitch-scale) error sigma -> sigma (1 + e) of the best-resolved map, seen by
    the exact-variance z-tests of the pair and triple means (bisection on the exact law)."""
    pn, pairs, tn, triples = inputs()
    best = (np.inf, "")
    for r in res["rows"]:
        spec = dict(family="binning", sigma=SIGMA, **r["kernel"])
        need_p = stats.mean_detectable(r["pair_se"], zc)
        need_t = stats.mean_detectable(r["tri_se"], zc)
        span = triples.max(axis=1) - triples.min(axis=1)
        k0, k30 = np.asarray(r["k"]), np.asarray(r["k3"])

        def seen(e, spec=spec, need_p=need_p, need_t=need_t, span=span, k0=k0, k30=k30):
            s2 = dict(spec, sigma=SIGMA * (1 + e))
            kp = maps.true_k(s2, pairs)
            k3 = np.prod(maps.true_k(s2, span[..., None]), axis=1)
            return bool(np.any(np.abs(kp - k0) >= need_p) or np.any(np.abs(k3 - k30) >= need_t))
        e = stats.bisect_smallest(seen, 0.0, 0.5, steps=30)
        if e < best[0]:
            best = (e, r["label"])
    if not np.isfinite(best[0]):
        return []
    return [_power.effect(f"bandwidth (pitch scale) error of map '{best[1]}'", best[0],
                          "relative", where=f"best-resolved map, {res['n_rep']} replicates of "
                          f"P = {res['P']} grids", probability=stats.POWER)]


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the named map built with sigma (1 + size) (seam:
    ``analysis.maps.build``; the hashing-mode fits of that map too)."""
    name = effect["effect"]
    if not name.startswith("bandwidth (pitch scale) error") or "'" not in name:
        raise ValueError(f"binning_law.audit: unknown effect {name!r}")
    with maps.sigma_scaled(name.split("'")[1], 1.0 + float(effect["size"])):
        yield


def plot(res, v):
    fig, axes = plots.figure(ncols=2, width=5.5)
    ax, bx = axes
    zc = v["statistic"]["z_threshold"]
    labels, zs, marks = [], [], []
    for r in res["rows"]:
        for i, nm in enumerate(r["pairs"]):
            labels.append(f"{r['label']}: pair {nm}")
            zs.append((r["pair_z"][i], r["hash_t"][i]))
            marks.append("pair")
        for i, nm in enumerate(r["triples"]):
            labels.append(f"{r['label']}: triple {nm}")
            zs.append((r["tri_z"][i], np.nan))
            marks.append("triple")
    y = np.arange(len(labels))
    zs = np.asarray(zs, float)
    ax.scatter(zs[:, 0], y, s=14, color=plots.COLORS[0], label="mean vs exact (z)")
    ax.scatter(zs[:, 1], y, s=14, marker="x", color=plots.COLORS[1],
               label="hashing mean vs k + (1 - k)/K (t)")
    for s in (-1, 1):
        ax.axvline(s * zc, label="Bonferroni threshold (z)" if s > 0 else None,
                   **plots.BOUND_STYLE)
    ax.set_yticks(y, labels, fontsize=6)
    ax.invert_yaxis()
    plots.finish(ax, "standard score", "", f"collision means, {res['n_rep']} replicates of "
                 f"P = {res['P']} grids", fontsize=6)
    labels2, ps, ratios = [], [], []
    for r in res["rows"]:
        for i, nm in enumerate(r["pairs"]):
            labels2.append(f"{r['label']}: {nm}")
            ps.append(max(r["gof_p"][i], 1e-300))
            ratios.append(r["count_var_ratio"][i])
    y2 = np.arange(len(labels2))
    bx.scatter(-np.log10(ps), y2, s=14, color=plots.COLORS[2], label="-log10 p (Binomial law)")
    bx.axvline(-np.log10(v["statistic"]["per_test_level"]), label="Bonferroni level",
               **plots.BOUND_STYLE)
    bx.set_yticks(y2, labels2, fontsize=6)
    bx.invert_yaxis()
    bx.set_xlim(0, max(8.0, -np.log10(min(ps)) * 1.1))
    plots.finish(bx, "-log10 p (Pearson test vs Binomial(P, k))", "",
                 "the law of the collision count (variance ratio in the table)", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
