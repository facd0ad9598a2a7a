"""Check — quasi-Monte Carlo random features: relative Gram error against iid (Yang et al.)."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
from scipy import special as _sp
from scipy import stats as _st

from analysis import maps, plots, stats
from analysis import montecarlo as mc
from analysis import power as _power

NAME = "qmc_gram"
TITLE = ("QMC (scrambled Halton / Sobol'): the law of the frequencies and the mean for every "
         "kernel sampled; Gram error ||K^ - K||_2/||K||_2 against iid (Gaussian)")
CLAIM = ("Replacing iid frequencies by low-discrepancy points mapped through the inverse CDF of "
         "the spectral law lowers the Gram-matrix error of random Fourier features; the error "
         "decays like O((log D)^d / D) for QMC against O(D^{-1/2}) for iid, and the advantage "
         "shrinks as the dimension d grows (Yang, Sindhwani, Avron & Mahoney 2014). Scrambling "
         "makes every point uniform on the cube, so each frequency has exactly the kernel's "
         "spectral law (Gaussian: N(0, I/sigma^2); Laplacian: Cauchy(0, 1/sigma) coordinates; "
         "Cauchy kernel: Laplace(0, 1/sigma) coordinates; Matern nu: multivariate Student t "
         "with 2 nu degrees of freedom, ||w||^2 sigma^2 / d ~ F(d, 2 nu); ball-sum t = 1: "
         "uniform in the ball of radius 1/sigma) and the estimate is "
         "unbiased.")
SOURCE = ("Yang, Sindhwani, Avron & Mahoney, ICML 2014; Avron et al., JMLR 17 (2016); Yu et al. "
          "2016 Fig. 4 (Avron et al., JMLR 2016)")
DESIGN = ("Gaussian kernel, sigma = sqrt(d), n fixed points X ~ N(0, I_d) (one draw per d). "
          "For each sampling in (iid, qmc_halton, qmc_sobol) and each of R independently seeded "
          "RandomFourierFeatures fits with D_max frequencies, the Gram estimate with the first D "
          "frequencies (D = powers of two up to D_max: a prefix of a scrambled Sobol'/Halton "
          "sequence is itself a scrambled point set) and e = ||K^ - K||_2/||K||_2. Tested, where "
          "the claim is made (D >= max(D_test, 32 d): the advantage needs more points as d "
          "grows): for each (d, D, QMC method) the mean of log e is "
          "below iid's (one-sided Welch t-test). Fitted log-log slopes (per replicate, "
          "least squares over all D; mean and 95% t-interval) are reported, and each QMC slope "
          "is tested to be steeper than iid's (one-sided Welch). Bonferroni over all tests at "
          "ALPHA; 'fail' means the advantage could not be confirmed (measured effects are 5-40 "
          "standard errors). Detects: QMC points not reaching the map (iid in disguise), a wrong "
          "inverse CDF or bandwidth (an error floor: the slope flattens and the error exceeds "
          "iid's at large D). LAW PART, for every kernel QMC samples (Gaussian, Laplacian, "
          "Cauchy, Matern nu = 1/2, 3/2, 5/2, ball-sum t = 1) and both sequences: R_law "
          "independently seeded fits of n_law frequencies in d_law dimensions. (a) The "
          "frequencies' law: for the "
          "radial statistic ||w||^2 sigma^2 (Gaussian: chi^2_d; Matern: d F(d, 2 nu); ball: "
          "Beta(d/2, 1)) and the "
          "folded coordinates |w_j| sigma (normal, Student t_{2 nu}, Cauchy, Laplace, ball "
          "coordinate), the "
          "probability integral transform u = F(T) under the exact law (scipy.stats, written "
          "from the kernels' closed forms, not from randfeat) is uniform for every point; per "
          "fit the means of the Legendre polynomials P_1..P_3 of 2u - 1 are smooth, and their "
          "mean over the R_law independent fits is tested against 0 (two-sided t-test with "
          "the sample variance). (b) The mean of the kernel estimate at fixed differences "
          "(analysis.truth) by the same t-test. Bonferroni over all law tests and the Gram "
          "tests at ALPHA. Detects: wrong degrees of freedom of the Matern radii, a wrong inverse "
          "CDF (e.g. Laplace for Cauchy), a wrong bandwidth, points that are not uniform.")
COST = 2
ALPHA = 1e-5
SAMPLINGS = ("iid", "qmc_halton", "qmc_sobol")

LAW_KERNELS = [dict(kernel="gaussian"), dict(kernel="laplacian"), dict(kernel="cauchy"),
               dict(kernel="matern", nu=0.5), dict(kernel="matern", nu=1.5),
               dict(kernel="matern", nu=2.5), dict(kernel="ballsum", t=1)]
LAW_METHODS = ("qmc_sobol", "qmc_halton")
N_LEGENDRE = 3

PARAMS = {
    "smoke": dict(ds=[2], Ds=[32, 128, 512, 2048], D_test=128, n=32, R=20,
                  law_kernels=LAW_KERNELS[:1] + LAW_KERNELS[4:5], d_law=3, n_law=128, R_law=30,
                  law_radii=[0.5, 1.5]),
    "quick": dict(ds=[2, 4, 16], Ds=[32, 128, 512, 2048], D_test=128, n=64, R=20,
                  law_kernels=LAW_KERNELS, d_law=3, n_law=256, R_law=64,
                  law_radii=[0.5, 1.0, 2.0]),
    "full": dict(ds=[2, 4, 8, 16, 32], Ds=[16, 64, 256, 1024, 4096, 16384], D_test=128,
                 n=200, R=100, law_kernels=LAW_KERNELS, d_law=5, n_law=1024, R_law=200,
                 law_radii=[0.25, 0.5, 1.0, 2.0, 3.0]),
}


def make_map(sampling, sigma, kernel=None):
    """The map under test (a function, so that a test can swap in a broken one).  ``kernel``:
    a spec {"kernel": name[, "nu": nu]} (default the Gaussian)."""
    import randfeat

    kern, sig = "gaussian", sigma
    if kernel is not None and kernel["kernel"] != "gaussian":
        kern = kernel["kernel"]
        if any(p in kernel for p in ("nu", "t", "dim")):
            kern, sig = maps.library_kernel(dict(kernel, sigma=sigma)), None

    def make(n_components, random_state):
        return randfeat.RandomFourierFeatures(n_components, kernel=kern, sigma=sig,
                                              sampling=sampling, random_state=random_state,
                                              n_threads=1)
    return make


# ---------------------------------------------------------------- the exact spectral laws
def law_statistics(kernel, d):
    """{name: (function W sigma -> statistic per frequency (n,) or per coordinate (n d,),
    frozen scipy law of the statistic, scale exponent a)}: the statistic of W sigma / c is the
    statistic of W sigma divided by c^a.  Written from the kernels' closed forms (THEORY §1):
    Gaussian N(0, I); Laplacian (L1) product of Cauchy(0, 1); Cauchy kernel product of
    Laplace(0, 1); Matern nu multivariate t with 2 nu degrees of freedom; ball-sum with t = 1
    (and the ball's dimension D = d) uniform in the unit ball: ||w||^2 ~ Beta(D/2, 1), each
    coordinate's square Beta(1/2, (D + 1)/2)."""
    name = kernel["kernel"]

    def radial(W):
        return np.sum(W ** 2, axis=1)

    def folded(W):
        return np.abs(W).ravel()

    if name == "gaussian":
        return {"radial ||w||^2 sigma^2 ~ chi2_d": (radial, _st.chi2(d), 2.0),
                "coordinates |w_j| sigma ~ |N(0, 1)|": (folded, _st.halfnorm(), 1.0)}
    if name == "laplacian":
        return {"coordinates |w_j| sigma ~ |Cauchy(0, 1)|": (folded, _st.halfcauchy(), 1.0)}
    if name == "cauchy":
        return {"coordinates |w_j| sigma ~ |Laplace(0, 1)| = Exp(1)": (folded, _st.expon(),
                                                                       1.0)}
    if name == "matern":
        nu2 = 2.0 * kernel["nu"]
        return {f"radial ||w||^2 sigma^2 ~ d F(d, {nu2:g})": (radial, _st.f(d, nu2, scale=d),
                                                             2.0),
                f"coordinates |w_j| sigma ~ |t_{nu2:g}|": (folded, _FoldedT(nu2), 1.0)}
    if name == "ballsum" and kernel.get("t", 1) == 1 and kernel.get("dim", d) == d:
        return {"radial ||w||^2 sigma^2 ~ Beta(d/2, 1)": (radial, _st.beta(d / 2.0, 1.0), 2.0),
                "coordinates |w_j| sigma, w_j^2 ~ Beta(1/2, (d+1)/2)": (
                    folded, _FoldedBallCoordinate(d), 1.0)}
    raise ValueError(f"no spectral law for {name!r}")


class _FoldedBallCoordinate:
    """|x_1| for x uniform in the unit ball of R^D: x_1^2 ~ Beta(1/2, (D + 1)/2)."""

    def __init__(self, D):
        self.b = _st.beta(0.5, (D + 1) / 2.0)

    def cdf(self, x):
        return self.b.cdf(np.minimum(np.asarray(x, float) ** 2, 1.0))

    def ppf(self, q):
        return np.sqrt(self.b.ppf(np.asarray(q, float)))


class _FoldedT:
    """|T|, T ~ Student t with ``df`` degrees of freedom (cdf, pdf, support)."""

    def __init__(self, df):
        self.t = _st.t(df)

    def cdf(self, x):
        return 2.0 * self.t.cdf(np.asarray(x, float)) - 1.0

    def pdf(self, x):
        return 2.0 * self.t.pdf(np.asarray(x, float))

    def ppf(self, q):
        return self.t.ppf((np.asarray(q, float) + 1.0) / 2.0)


def legendre_moments(u, n_poly=N_LEGENDRE):
    """Means of the Legendre polynomials P_1..P_n of 2u - 1 (0 for u uniform)."""
    x = 2.0 * np.asarray(u, float) - 1.0
    return np.array([np.mean(_sp.eval_legendre(k, x)) for k in range(1, n_poly + 1)])


_GL = _sp.roots_legendre(256)


def _scale_shift(law, a, c):
    """E P_1(2 F(T / c^a) - 1) for T from ``law``: 2 E F(F^{-1}(V) / c^a) - 1, V uniform
    (Gauss-Legendre in V, 256 nodes)."""
    x, w = _GL
    v = (x + 1.0) / 2.0
    return float(np.sum(w * law.cdf(law.ppf(v) / c ** a)) - 1.0)


def _kernel_label(kernel):
    return (kernel["kernel"] + (f" nu={kernel['nu']:g}" if "nu" in kernel else "")
            + (f" t={kernel['t']}" if "t" in kernel else ""))


def _errors(Z, K, Ds):
    """Relative spectral errors of the prefix Gram estimates (paired Z with D_max frequencies)."""
    dmax = Z.shape[1] // 2
    C, S = Z[:, :dmax] * np.sqrt(dmax), Z[:, dmax:] * np.sqrt(dmax)
    nk = np.linalg.norm(K, 2)
    G = np.zeros_like(K)
    out, prev = [], 0
    for D in Ds:
        G += C[:, prev:D] @ C[:, prev:D].T + S[:, prev:D] @ S[:, prev:D].T
        prev = D
        out.append(np.abs(np.linalg.eigvalsh(G / D - K)).max() / nk)
    return out


def run(params, seed, progress=None):
    from threadpoolctl import threadpool_limits

    # many small BLAS calls: one thread (as analysis/__init__ sets by environment, which is too
    # late when numpy was imported first, e.g. under pytest)
    with threadpool_limits(1):
        return _run(params, seed, progress)


def _n_law_tests(params_or_res):
    p = params_or_res
    d = p.get("d_law", 3)
    n = 0
    for kernel in p.get("law_kernels", []):
        n += len(LAW_METHODS) * (len(law_statistics(kernel, d)) * N_LEGENDRE
                                 + len(p["law_radii"]))
    return n


def _run_law(params, seed, progress):
    """The law part: per (kernel, sequence), R_law fits; Legendre moments of the PIT of each
    statistic and the kernel estimates at the fixed differences, per fit."""
    d, n, R = params["d_law"], params["n_law"], params["R_law"]
    geo = np.random.default_rng(20140622)
    x0 = geo.uniform(-0.5, 0.5, d)
    u = geo.standard_normal(d)
    u /= np.linalg.norm(u)
    radii = np.asarray(params["law_radii"], float)
    deltas = radii[:, None] * u[None, :]
    X = np.vstack([x0[None, :], x0[None, :] + deltas])
    out = []
    for kernel in params["law_kernels"]:
        if kernel["kernel"] == "ballsum":          # the ball lives in the input dimension
            kernel = dict(kernel, dim=d)
        spec = dict(family="rff", features="paired", sigma=1.0, **kernel)
        k = maps.true_k(spec, deltas)
        laws = law_statistics(kernel, d)
        lab = _kernel_label(kernel)
        for method in LAW_METHODS:
            make = make_map(method, 1.0, kernel)
            mom = {name: [] for name in laws}
            kh = []
            seeds = mc.seed_sequences(seed, NAME, "law", lab, method, n=R)
            mc.check_distinct(seeds)
            for ss in seeds:
                est = make(2 * n, mc.random_state_of(ss)).fit(X)
                W = maps.rff_frequencies(est)          # sigma = 1: W sigma = W
                Z = np.asarray(est.transform(X), dtype=float)
                kh.append(Z[1:] @ Z[0])
                for name, (stat, law, _a) in laws.items():
                    mom[name].append(legendre_moments(law.cdf(stat(W))))
                if progress is not None:
                    progress.tick()
            kh = np.asarray(kh)
            mc.check_not_degenerate(kh, f"kernel estimates ({lab}, {method})")
            rows = []
            for name, (_stat, _law, a) in laws.items():
                M = np.asarray(mom[name])
                rows.append(dict(name=name, a=a, mean=M.mean(axis=0).tolist(),
                                 se=(M.std(axis=0, ddof=1) / np.sqrt(R)).tolist()))
            out.append(dict(kernel=kernel, label=lab, method=method, laws=rows,
                            radii=radii.tolist(), k=k.tolist(), kmean=kh.mean(axis=0).tolist(),
                            kse=(kh.std(axis=0, ddof=1) / np.sqrt(R)).tolist()))
    return dict(R_law=R, n_law=n, d_law=d, rows=out)


def _run(params, seed, progress):
    from randfeat.kernels import GaussianKernel

    Ds = [int(D) for D in params["Ds"]]
    rows = []
    for d in params["ds"]:
        X = np.random.default_rng([20140621, d]).standard_normal((params["n"], d))
        sigma = float(np.sqrt(d))
        K = GaussianKernel(sigma)(X)
        for s in SAMPLINGS:
            make = make_map(s, sigma)
            errs = []
            for ss in mc.seed_sequences(seed, NAME, d, s, n=params["R"]):
                Z = np.asarray(make(2 * Ds[-1], mc.random_state_of(ss)).fit_transform(X),
                               dtype=float)
                errs.append(_errors(Z, K, Ds))
                if progress is not None:
                    progress.tick()
            # identical replicates (e.g. unscrambled QMC points) carry no spread to test with
            mc.check_not_degenerate(np.asarray(errs), f"{s} Gram errors (d = {d})")
            rows.append(dict(d=d, sampling=s, Ds=Ds, err=np.asarray(errs).tolist()))
    law = _run_law(params, seed, progress) if params.get("law_kernels") else None
    return dict(R=params["R"], n=params["n"], D_test=params["D_test"], rows=rows, law=law)


def _slopes(err, Ds):
    lx = np.log(np.asarray(Ds, dtype=float))
    A = np.vstack([lx, np.ones_like(lx)]).T
    return np.linalg.lstsq(A, np.log(np.asarray(err)).T, rcond=None)[0][0]   # (R,)


def _welch_less(a, b):
    """One-sided p of mean(a) < mean(b) (Welch t)."""
    return float(_st.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)


def verdict(res):
    by = {(r["d"], r["sampling"]): r for r in res["rows"]}
    ds = sorted({r["d"] for r in res["rows"]})
    Ds = res["rows"][0]["Ds"]
    def cells(d):
        return [D for D in Ds if D >= max(res["D_test"], 32 * d)]

    m_gram = sum((len(SAMPLINGS) - 1) * (len(cells(d)) + 1) for d in ds)
    law = res.get("law")
    m_law = _n_law_tests(dict(law_kernels=[r["kernel"] for r in law["rows"][::2]],
                              d_law=law["d_law"], law_radii=law["rows"][0]["radii"])
                         ) if law else 0
    m = m_gram + m_law
    level = stats.bonferroni(ALPHA, m)
    fails, lines, slope_lines = [], [], []
    pmax = 0.0
    for d in ds:
        iid = np.log(np.asarray(by[(d, "iid")]["err"]))
        sl_iid = _slopes(by[(d, "iid")]["err"], Ds)
        for s in SAMPLINGS:
            le = np.log(np.asarray(by[(d, s)]["err"]))
            sl = _slopes(by[(d, s)]["err"], Ds)
            half = _st.t.isf(0.025, len(sl) - 1) * sl.std(ddof=1) / np.sqrt(len(sl))
            p_sl = _welch_less(sl, sl_iid) if s != "iid" else None
            if p_sl is not None:
                pmax = max(pmax, p_sl)
                if p_sl >= level:
                    fails.append(f"slope {s} d={d}")
            slope_lines.append(f"| {d} | {s} | {sl.mean():+.3f} [{sl.mean() - half:+.3f}, "
                               f"{sl.mean() + half:+.3f}] | "
                               f"{'-' if p_sl is None else f'{p_sl:.2g}'} |")
            for j, D in enumerate(Ds):
                gm = float(np.exp(le[:, j].mean()))
                ratio = float(np.exp(le[:, j].mean() - iid[:, j].mean()))
                p = _welch_less(le[:, j], iid[:, j]) if (s != "iid" and D in cells(d)) else None
                if p is not None:
                    pmax = max(pmax, p)
                    if p >= level:
                        fails.append(f"{s} d={d} D={D}")
                mark = "-" if p is None else ("ok" if p < level else "FAIL")
                lines.append(f"| {d} | {s} | {D} | {gm:.4g} | {ratio:.3f} | "
                             f"{'-' if p is None else f'{p:.2g}'} | {mark} |")
    table = ("| d | sampling | D | geometric-mean error | / iid | p (QMC < iid) | |\n"
             "|---|---|---|---|---|---|---|\n" + "\n".join(lines) +
             "\n\n| d | sampling | fitted slope of log e vs log D [95%] | p (steeper than iid) |\n"
             "|---|---|---|---|\n" + "\n".join(slope_lines))
    notes = [f"{m} one-sided tests at per-test level {level:.2g} (family {ALPHA:g}); "
             f"R = {res['R']} fits per (d, sampling), n = {res['n']} points; tested D >= "
             f"max({res['D_test']}, 32 d).",
             "iid theory: slope -1/2 (Monte Carlo rate); QMC: up to -1 (log factors), "
             "flattening toward -1/2 as d grows."]
    n_gram_fail = len(fails)
    summary = (f"Gram: QMC error below iid confirmed in {m_gram - n_gram_fail} of {m_gram} tests "
               f"(max p = {pmax:.2g} vs level {level:.2g})")
    ratio_fail, slope_fail = _gram_power(res, by, ds, Ds, cells, level)
    notes.append(f"Gram tests (context for the power): a QMC map whose geometric-mean error is "
                 f"above {np.median(ratio_fail):.3f}x iid's at a tested (d, D) (median over "
                 f"cells), or whose slope is less than {np.median(slope_fail):.3f} steeper than "
                 f"iid's, fails them with probability >= 0.9.")
    det = []
    stat = {"max_p": pmax, "level": level, "n_tests": m, "failed": fails,
            "fail_above_ratio_median": float(np.median(ratio_fail))}
    if law:
        tc = float(_st.t.isf(level / 2, law["R_law"] - 1))
        lf, llines, worst = _law_verdict(law, tc)
        fails += lf
        table += ("\n\n*The law of the QMC frequencies and the mean of the estimate* (t-statistics "
                  f"over R = {law['R_law']} fits of {law['n_law']} frequencies, d = "
                  f"{law['d_law']}; threshold {tc:.2f})\n\n| kernel | sequence | test | "
                  "t-statistics | |\n|---|---|---|---|---|\n" + "\n".join(llines))
        summary = (f"law of the frequencies and mean of the estimate for {len(law['rows']) // 2} "
                   f"kernels x 2 sequences: worst |t| {worst[0]:.2f} ({worst[1]}) vs {tc:.2f}; "
                   + summary)
        stat.update(law_worst_t=worst[0], law_worst_at=worst[1], law_t_threshold=tc)
        det = _detectable(law, tc)
    if fails:
        summary = f"FAILED: {', '.join(fails[:6])}; " + summary
    return dict(verdict="fail" if fails else "pass", statistic=stat,
                tightness=None, summary=summary, table=table, notes=notes, detectable=det,
                power=_power.statement(det))


def _t(mean, se, target=0.0):
    mean, se = np.asarray(mean, float), np.asarray(se, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - target) / se
    return np.where(se > 0, t, np.where(np.isclose(mean, target, rtol=0, atol=1e-12), 0.0,
                                        np.inf))


def _law_verdict(law, tc):
    fails, lines = [], []
    worst = (0.0, "")
    for r in law["rows"]:
        tests = [(f"PIT of {L['name']}: P_1..P_{N_LEGENDRE}", _t(L["mean"], L["se"]))
                 for L in r["laws"]]
        tests.append(("mean k-hat - k at ||Delta|| = " + ", ".join(f"{x:g}" for x in
                                                                   r["radii"]),
                      _t(r["kmean"], r["kse"], np.asarray(r["k"]))))
        for name, t in tests:
            j = int(np.argmax(np.abs(t)))
            if abs(t[j]) > worst[0]:
                worst = (float(abs(t[j])), f"{r['label']} {r['method']}: {name.split(':')[0]}")
            bad = bool(np.any(np.abs(t) > tc))
            if bad:
                fails.append(f"{r['label']} {r['method']} {name.split(':')[0]}")
            lines.append(f"| {r['label']} | {r['method']} | {name} | "
                         + ", ".join(f"{x:+.2f}" for x in t) + f" | {'FAIL' if bad else 'ok'} |")
    return fails, lines, worst


def _detectable(law, tc):
    """Two effects, both a bandwidth error sigma -> sigma (1 + e) of one QMC map (the
    best-resolved one): seen by the frequencies' law (the P_1 moment of the PIT moves by
    E P_1(2 F(T / (1 + e)^a) - 1), computed by quadrature from the exact law) and seen by the
    kernel mean (analysis.truth at sigma (1 + e)); each detected when the shift reaches
    (t threshold + t_power) se of this run."""
    R = law["R_law"]
    zz = tc + float(_st.t.ppf(stats.POWER, R - 1))
    best_law, best_mean = (np.inf, ""), (np.inf, "")
    for r in law["rows"]:
        lab = f"{r['label']} {r['method']}"
        laws = law_statistics(r["kernel"], law["d_law"])
        for L in r["laws"]:
            need = zz * float(stats.se_upper(L["se"][0], R))
            _stat, dist, a = laws[L["name"]]
            e = stats.bisect_smallest(lambda e, dist=dist, a=a, need=need: abs(
                _scale_shift(dist, a, 1.0 + e)) >= need, 0.0, 0.5, steps=16)
            if e < best_law[0]:
                best_law = (e, lab)
        spec = dict(family="rff", features="paired", sigma=1.0, **r["kernel"])
        geo = np.random.default_rng(20140622)
        geo.uniform(-0.5, 0.5, law["d_law"])
        u = geo.standard_normal(law["d_law"])
        deltas = np.asarray(r["radii"])[:, None] * (u / np.linalg.norm(u))[None, :]
        k = maps.true_k(spec, deltas)
        need = zz * stats.se_upper(r["kse"], R)
        e = stats.bisect_smallest(lambda e, spec=spec, deltas=deltas, k=k, need=need: bool(
            np.any(np.abs(maps.true_k(dict(spec, sigma=1.0 + e), deltas) - k) >= need)),
            0.0, 0.5, steps=30)
        if e < best_mean[0]:
            best_mean = (e, lab)
    det = []
    for (e, lab), how in ((best_law, "the frequencies' law"), (best_mean, "the kernel mean")):
        if np.isfinite(e):
            det.append(_power.effect(f"bandwidth error (sigma too large) of QMC map '{lab}' seen "
                                     f"by {how}", e, "relative",
                                     where=f"best-resolved map, R = {R} fits",
                                     probability=stats.POWER))
    return det


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect``: the named QMC map built with sigma (1 + size) (seam: ``make_map``)."""
    name = effect["effect"]
    if not name.startswith("bandwidth error") or "'" not in name:
        raise ValueError(f"qmc_gram.audit: unknown effect {name!r}")
    lab = name.split("'")[1]
    f = 1.0 + float(effect["size"])
    real = make_map

    def make(sampling, sigma, kernel=None):
        kl = _kernel_label(kernel or dict(kernel="gaussian"))
        return real(sampling, sigma * f if f"{kl} {sampling}" == lab else sigma, kernel)
    with mock.patch(f"{__name__}.make_map", make):
        yield


def _welch_margin(a, b, level):
    """(t_level - t_0.9) se of mean(a) - mean(b) (Welch df): a true difference above
    -margin is NOT confirmed below zero with probability >= 0.9."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return float((_st.t.isf(level, df) - _st.t.isf(0.1, df)) * se)


def _gram_power(res, by, ds, Ds, cells, level):
    """Per tested cell the error ratio QMC/iid above which the advantage is not confirmed with
    probability >= 0.9, and per (d, method) the slope difference below which it is not."""
    ratio, slope = [], []
    for d in ds:
        iid = np.log(np.asarray(by[(d, "iid")]["err"]))
        sl_iid = _slopes(by[(d, "iid")]["err"], Ds)
        for s in SAMPLINGS[1:]:
            le = np.log(np.asarray(by[(d, s)]["err"]))
            slope.append(_welch_margin(_slopes(by[(d, s)]["err"], Ds), sl_iid, level))
            for j, D in enumerate(Ds):
                if D in cells(d):
                    ratio.append(float(np.exp(-_welch_margin(le[:, j], iid[:, j], level))))
    return np.asarray(ratio), np.asarray(slope)


def plot(res, v):
    ds = sorted({r["d"] for r in res["rows"]})
    law = res.get("law")
    n_lab = sum(len(r["laws"]) + 1 for r in law["rows"]) if law else 0
    fig, axes = plots.figure(ncols=len(ds) + bool(law), width=4.0,
                             height=max(3.8, 0.11 * n_lab + 1.0))
    axes = np.atleast_1d(axes)
    if law:
        tc = v["statistic"]["law_t_threshold"]
        ax = axes[-1]
        labels, ts = [], []
        for r in law["rows"]:
            for L in r["laws"]:
                labels.append(f"{r['label']} {r['method'][4:]}: {L['name'].split(' ~')[0]}")
                ts.append(_t(L["mean"], L["se"]))
            labels.append(f"{r['label']} {r['method'][4:]}: kernel mean")
            ts.append(_t(r["kmean"], r["kse"], np.asarray(r["k"])))
        for i, t in enumerate(ts):
            ax.scatter(t, np.full(len(t), i), s=8, color=plots.COLORS[0])
        ax.set_yticks(np.arange(len(labels)), labels, fontsize=5)
        ax.invert_yaxis()
        for sgn in (-1, 1):
            ax.axvline(sgn * tc, label="Bonferroni threshold" if sgn > 0 else None,
                       **plots.BOUND_STYLE)
        plots.finish(ax, "t-statistic (PIT moments P_1..P_3; kernel mean per ||Delta||)", "",
                     f"law of the frequencies, every kernel; R = {law['R_law']} fits",
                     fontsize=6)
    for ax, d in zip(axes, ds, strict=False):
        for i, s in enumerate(SAMPLINGS):
            r = next(r for r in res["rows"] if r["d"] == d and r["sampling"] == s)
            le = np.log(np.asarray(r["err"]))
            gm = np.exp(le.mean(axis=0))
            lo = np.exp(le.mean(axis=0) - 2 * le.std(axis=0, ddof=1))
            hi = np.exp(le.mean(axis=0) + 2 * le.std(axis=0, ddof=1))
            c = plots.COLORS[i % len(plots.COLORS)]
            sl = _slopes(r["err"], r["Ds"]).mean()
            ax.plot(r["Ds"], gm, "o-", color=c, ms=3, lw=1, label=f"{s} (slope {sl:.2f})")
            plots.band(ax, r["Ds"], lo, hi, c)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plots.finish(ax, "D (number of frequencies)", "||K^ - K||_2 / ||K||_2",
                     f"d = {d}, R = {res['R']}, band: ±2 sd", fontsize=5)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig
