"""Every solver and path of randfeat's ridge learners against the exact ridge solution on the same
features (numpy/scipy), with tolerances derived from each solver's stated accuracy."""

from __future__ import annotations

import contextlib
import math
import warnings
from unittest import mock

import numpy as np
import scipy.linalg

from analysis import montecarlo as mc
from analysis import plots, power

NAME = "learner_paths"
TITLE = ("Ridge learners: Cholesky, PCG, CG, LSQR, weights, alpha grid, classifier, streaming "
         "RidgeStatistics with merges, dask, sigma='scale'/'median' -- each equals exact ridge")
CLAIM = ("randfeat's ridge learners solve min_w,b sum_i s_i (y_i - z(x_i)'w - b)^2 + lambda |w|^2 "
         "(lambda = alpha sum_i s_i with alpha_scale='mean'): the direct paths (solver="
         "'cholesky', RidgeStatistics.partial_fit/merge/solve/solve_path by Cholesky or eigh, "
         "the classifier's one-vs-rest +-1 targets, sample weights, an alpha grid, "
         "randfeat.dask's block reduction) to float64 accuracy; solver='pcg' and 'cg' until the "
         "normal equations' relative residual is at most tol per target; 'lsqr' until SciPy's "
         "stopping rule (atol = btol = tol) holds.  sigma='scale' is sqrt(d Var(X) / 2) and "
         "sigma='median' the median distance between distinct rows (randfeat's docs).")
SOURCE = ("randfeat.linear (RandomFeatureRidge, RidgeStatistics), randfeat.dask, randfeat._base "
          "docs; Frangella, Tropp & Udell 2023 (PCG); Paige & Saunders 1982 (LSQR stopping "
          "rule); Rigal & Gaches 1967 / Higham 2002 §7.1 (normwise backward error)")
DESIGN = ("Deterministic, per seed: n rows of d = 4 Gaussian inputs, K = 3 smooth targets plus "
          "noise, one fitted paired RandomFourierFeatures map (D columns) and its features Z.  "
          "Reference (numpy/scipy, independent of randfeat's solvers): the centred normal "
          "equations M W = C, M = Zc' S Zc + lambda I, C = Zc' S Yc, solved by scipy's Cholesky "
          "with residuals in long double.  Each path's coefficients W are judged by the exact "
          "residual R = C - M W: direct paths by the normwise backward error |R_k| / (|M| |W_k| "
          "+ |C_k|) <= eta = 4 (sqrt(n) + D) eps |(|Z|'|Z|)| / |M| (float64 round-off of the "
          "sums and the solve, with margin); pcg and cg by |R_k| / |C_k| <= tol + the same "
          "round-off; lsqr by SciPy's rule |R_k| <= atol |A|_F |r_k| or |r_k| <= btol |b| + "
          "atol |A|_F |w_k| (true norms of the damped system).  Intercepts: b = ybar - zbar' W "
          "to round-off.  Paths: RandomFeatureRidge with solver cholesky / pcg / cg / lsqr, "
          "with sample weights, with an alpha grid (validation split; coefficients at the chosen "
          "alpha), RandomFeatureRidgeClassifier (3 classes); RidgeStatistics: partial_fit by "
          "chunks into three objects, merge (and +=) -- its sums against numpy's to round-off, "
          "then solve and solve_path (cholesky, eigh); randfeat.dask: RandomFeatureRidge.fit on "
          "a dask array cut into blocks that are not multiples of the chunk size (threaded "
          "scheduler in quick mode: the reduction tree is the same on any scheduler, a local "
          "cluster of worker processes costs seconds on 2 cores; full mode uses a LocalCluster "
          "of 2 processes); sigma='scale' and 'median' (sigma_ against numpy's, the map's "
          "frequencies against the map with that sigma, and the learner on it); "
          "gram_dtype='float32': its statistics (partial_fit by chunks of 256 rows) entrywise "
          "within the float32 rounding bound gamma_256 |Z|'|Z| of numpy's products, fit's "
          "coefficients against numpy's float64 solve of them within 10 kappa eps sqrt(D), and "
          "the whole within ||dG||_2 / pen of numpy's ridge.  Calibration "
          "(the power statement): PCG refitted with tol multiplied by 1.5 ... 10.")
COST = 1
ALPHA = 1e-4  # nominal: the verdict is deterministic given the seed (no sampling error)
EPS = float(np.finfo(np.float64).eps)
PCG_FACTORS = (1.5, 2.0, 3.0, 5.0, 10.0)
SIGMA_RTOL = 1e-10  # data-driven sigma: numpy's formula against the map's sigma_
ETA_FACTOR = 4.0

PARAMS = {
    "smoke": dict(n=600, Dq=96, lam=1e-4, tol=1e-8, iter_tol=1e-6, blocks=3, n_median=300,
                  dask="threads"),
    "quick": dict(n=2400, Dq=192, lam=1e-4, tol=1e-8, iter_tol=1e-6, blocks=5, n_median=800,
                  dask="threads"),
    "full": dict(n=6000, Dq=384, lam=1e-5, tol=1e-8, iter_tol=1e-6, blocks=8, n_median=1000,
                 dask="cluster"),
}
SIGMA = 2.0
NOISE = 0.1


def make_data(n, rng, K=3, d=4):
    X = 1.5 * rng.standard_normal((n, d))
    W = rng.standard_normal((K, d))
    Y = np.sin(X @ W.T) + NOISE * rng.standard_normal((n, K))
    return X, Y


def build_map(Dq, random_state, sigma=SIGMA):
    """The feature map (paired RFF, 2 Dq columns)."""
    import randfeat

    return randfeat.RandomFourierFeatures(2 * Dq, kernel="gaussian", sigma=sigma,
                                          random_state=random_state, n_threads=1)


# ------------------------------------------------------------------ the exact reference
class Exact:
    """The centred normal equations of weighted ridge on features Z, formed by numpy:
    M = Zc' S Zc + pen I, C = Zc' S (Y - ybar), their Cholesky solution and the long-double
    residual of any candidate."""

    def __init__(self, Z, Y, pen, w=None):
        Z = np.asarray(Z, float)
        Y = np.asarray(Y, float).reshape(len(Z), -1)
        s = np.ones(len(Z)) if w is None else np.asarray(w, float)
        S = s.sum()
        self.zbar, self.ybar = s @ Z / S, s @ Y / S
        Zc, Yc = Z - self.zbar, Y - self.ybar
        self.M = Zc.T @ (s[:, None] * Zc)
        self.M[np.diag_indices_from(self.M)] += pen
        self.C = Zc.T @ (s[:, None] * Yc)
        self.W = scipy.linalg.cho_solve(scipy.linalg.cho_factor(self.M, lower=True), self.C)
        self.pen, self.n, self.D = pen, len(Z), Z.shape[1]
        self.Zc, self.Yc, self.s = Zc, Yc, s
        ev = np.linalg.eigvalsh(self.M)
        self.normM, self.kappa = float(ev[-1]), float(ev[-1] / ev[0])
        absZ = np.abs(Z) * np.sqrt(s)[:, None]
        g = float(np.linalg.norm(absZ.T @ absZ, 2)) / self.normM
        #: backward-error tolerance of a float64 direct solve (see DESIGN)
        self.eta = ETA_FACTOR * (math.sqrt(self.n) + self.D) * EPS * max(g, 1.0)

    def residual(self, W):
        """|C_k - M W_k| per target, with the product in long double."""
        W = np.asarray(W, float).reshape(self.D, -1)
        R = self.C.astype(np.longdouble) - self.M.astype(np.longdouble) @ W.astype(np.longdouble)
        return np.sqrt(np.sum(np.asarray(R, float) ** 2, axis=0))

    def backward(self, W):
        W = np.asarray(W, float).reshape(self.D, -1)
        return self.residual(W) / (self.normM * np.linalg.norm(W, axis=0)
                                   + np.linalg.norm(self.C, axis=0))

    def relres(self, W):
        return self.residual(W) / np.linalg.norm(self.C, axis=0)

    def floor(self, W):
        """The round-off part of a relative residual (the backward-error tolerance in residual
        units)."""
        W = np.asarray(W, float).reshape(self.D, -1)
        return self.eta * (self.normM * np.linalg.norm(W, axis=0)
                           + np.linalg.norm(self.C, axis=0)) / np.linalg.norm(self.C, axis=0)

    def intercept_error(self, W, b):
        """|b - (ybar - zbar' W)| relative to its round-off scale."""
        W = np.asarray(W, float).reshape(self.D, -1)
        want = self.ybar - self.zbar @ W
        scale = np.abs(self.ybar) + np.abs(self.zbar) @ np.abs(W) + 1e-300
        return np.abs(np.asarray(b, float).reshape(-1) - want) / scale

    def lsqr_ok(self, W, atol, iters):
        """SciPy's LSQR stopping rule on the damped system [Zc; sqrt(pen) I] w = [yc; 0]
        (Paige & Saunders 1982): test 2, |A'r| <= atol |A| |r|, or test 1, |r| <= btol |b| +
        atol |A| |w| (btol = atol), with LSQR's estimate of |A| replaced by what bounds it:
        the estimate is the Frobenius norm of the bidiagonal matrix of ``iters`` steps, whose
        entries are norms of A or A' applied to unit vectors, so it is at most sqrt(2 iters +
        1) |A|_2 in any arithmetic (loss of orthogonality can push it above |A|_F, measured
        1.5x here).  The residual norms are the true ones."""
        W = np.asarray(W, float).reshape(self.D, -1)
        anorm = np.sqrt((2 * np.asarray(iters, float) + 1) * self.normM) * (1 + 1e-6)
        rw = np.sqrt(self.s)[:, None] * (self.Yc - self.Zc @ W)
        rbar = np.sqrt(np.sum(rw ** 2, axis=0) + self.pen * np.sum(W ** 2, axis=0))
        bnorm = np.sqrt(np.sum(self.s[:, None] * self.Yc ** 2, axis=0))
        normal = self.residual(W)
        fl = self.floor(W) * np.linalg.norm(self.C, axis=0)
        test2 = normal <= atol * anorm * rbar + fl
        test1 = rbar <= atol * bnorm + atol * anorm * np.linalg.norm(W, axis=0)
        return test1 | test2, normal / (atol * anorm * rbar)


# ------------------------------------------------------------------ paths
def _ridge(model, X, Y, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # non-convergence: judged below
        warnings.filterwarnings("ignore", message=".*alpha chosen on the validation split")
        model.fit(X, Y, sample_weight=sample_weight)
    return np.asarray(model.coef_, float).reshape(-1, model.n_features_out_).T, \
        np.atleast_1d(np.asarray(model.intercept_, float))


def _direct(name, ref, W, b, extra=None):
    eta = ref.backward(W)
    ib = ref.intercept_error(W, b)
    ok = bool(np.all(eta <= ref.eta) and np.all(ib <= ref.eta * 10))
    rec = dict(path=name, kind="direct", backward=eta.tolist(), bound=ref.eta,
               intercept=float(ib.max()), ok=ok,
               MW=(ref.normM * np.linalg.norm(np.asarray(W, float).reshape(ref.D, -1),
                                              axis=0)).tolist(),
               Cn=np.linalg.norm(ref.C, axis=0).tolist(),
               relerr=float(np.linalg.norm(W - ref.W) / np.linalg.norm(ref.W)))
    rec.update(extra or {})
    return rec


def _iterative(name, ref, W, b, tol, extra=None):
    rr, fl = ref.relres(W), ref.floor(W)
    ib = ref.intercept_error(W, b)
    ok = bool(np.all(rr <= tol + fl) and np.all(ib <= ref.eta * 10))
    rec = dict(path=name, kind="residual", relres=rr.tolist(), bound=(tol + fl).tolist(),
               tol=tol, intercept=float(ib.max()), ok=ok,
               relerr=float(np.linalg.norm(W - ref.W) / np.linalg.norm(ref.W)))
    rec.update(extra or {})
    return rec


def _stats_sums(st, Z, Y):
    """RidgeStatistics' sums against numpy's, relative to the round-off scale of each sum."""
    out = {}
    absZ = np.abs(Z)
    for key, got, want, scale in (
            ("zty_", st.zty_, Z.T @ Y, absZ.T @ np.abs(Y)),
            ("z_sum_", st.z_sum_, Z.sum(0), absZ.sum(0)),
            ("y_sum_", st.y_sum_, Y.sum(0), np.abs(Y).sum(0)),
            ("gram_", st.gram_, Z.T @ Z, absZ.T @ absZ)):
        out[key] = float(np.max(np.abs(np.asarray(got) - want) / (scale + 1e-300)))
    out["n_samples_"] = int(st.n_samples_)
    out["weight_sum_"] = float(st.weight_sum_)
    return out


def _dask_fit(model, X, Y, blocks, how, skipped):
    try:
        import dask
        import dask.array as da
    except ImportError:
        skipped.append("dask path: dask is not installed (pip install 'randfeat[dask]')")
        return None
    rows = -(-len(X) // blocks) + 7  # blocks that are not multiples of the chunk size
    Xd = da.from_array(X, chunks=(rows, X.shape[1]))
    if how == "cluster":
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            skipped.append("dask cluster: distributed is not installed")
            return None
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cl, Client(cl):
            return _ridge(model, Xd, Y), int(Xd.numblocks[0])
    with dask.config.set(scheduler="threads"):
        return _ridge(model, Xd, Y), int(Xd.numblocks[0])


#: rows per chunk of the float32-statistics part (its error bound grows with it)
F32_CHUNK = 256


def run(params, seed, progress=None):
    import randfeat

    (data_ss, map_ss, pcg_ss, grid_ss) = mc.random_states(
        mc.seed_sequences(seed, NAME, "streams", n=4))
    X, Y = make_data(params["n"], np.random.default_rng(data_ss))
    n, lam, Dq = len(X), params["lam"], params["Dq"]
    feats = build_map(Dq, map_ss).fit(X)
    Z = np.asarray(feats.transform(X), float)
    ref = Exact(Z, Y, n * lam)
    recs, errors, skipped, calib = [], [], [], []
    sums = {}

    def learner(**kw):
        kw.setdefault("gram_dtype", "float64")   # the float32 statistics: their own part
        return randfeat.RandomFeatureRidge(build_map(Dq, map_ss), alphas=lam, alpha_scale="mean",
                                           n_threads=1, **kw)

    def attempt(name, fn):
        try:
            out = fn()
            if out is not None:
                recs.append(out)
        except Exception as exc:  # noqa: BLE001 - recorded: the verdict is then "fail"
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        if progress is not None:
            progress.tick()

    tol, itol = params["tol"], params["iter_tol"]
    attempt("cholesky", lambda: _direct("RandomFeatureRidge solver='cholesky'", ref,
                                        *_ridge(learner(solver="cholesky"), X, Y)))
    attempt("pcg", lambda: _iterative(f"RandomFeatureRidge solver='pcg' (tol={tol:g})", ref,
                                      *_ridge(learner(solver="pcg", tol=tol,
                                                      random_state=pcg_ss), X, Y), tol))
    attempt("cg", lambda: _iterative(f"RandomFeatureRidge solver='cg' (tol={itol:g})", ref,
                                     *_ridge(learner(solver="cg", tol=itol), X, Y), itol))

    def lsqr():
        m = learner(solver="lsqr", tol=itol)
        W, b = _ridge(m, X, Y)
        ok, ratio = ref.lsqr_ok(W, itol, m.n_iter_)
        ib = ref.intercept_error(W, b)
        return dict(path=f"RandomFeatureRidge solver='lsqr' (tol={itol:g})", kind="lsqr",
                    ratio=ratio.tolist(), ok=bool(ok.all() and np.all(ib <= ref.eta * 10)),
                    intercept=float(ib.max()),
                    relerr=float(np.linalg.norm(W - ref.W) / np.linalg.norm(ref.W)))

    attempt("lsqr", lsqr)

    w = np.random.default_rng(data_ss).uniform(0.2, 2.0, n)

    def weighted():
        rw = Exact(Z, Y, lam * w.sum(), w)
        return _direct("RandomFeatureRidge with sample_weight (cholesky)", rw,
                       *_ridge(learner(solver="cholesky"), X, Y, sample_weight=w))

    attempt("weights", weighted)

    def grid():
        alphas = [lam / 10, lam, lam * 10]
        m = randfeat.RandomFeatureRidge(build_map(Dq, map_ss), alphas=alphas,
                                        alpha_scale="mean", random_state=grid_ss, n_threads=1,
                                        selection="holdout", gram_dtype="float64")
        with warnings.catch_warnings():   # the grid is lam x 10^(-1, 0, 1): an edge is fine
            warnings.simplefilter("ignore", randfeat.linear.AlphaAtGridEdgeWarning)
            W, b = _ridge(m, X, Y)
        rg = Exact(Z, Y, n * m.alpha_)
        best = float(alphas[int(np.argmin(m.validation_scores_))])
        rec = _direct(f"RandomFeatureRidge alpha grid (chose {m.alpha_:g})", rg, W, b)
        rec["ok"] = rec["ok"] and best == m.alpha_ and np.all(np.isfinite(m.validation_scores_))
        return rec

    attempt("alpha grid", grid)

    def loo():
        # the default selection: the exact leave-one-out residuals e_i / (1 - h_ii) of every
        # grid alpha from numpy's hat matrix (intercept included), the chosen alpha their argmin
        alphas = [lam / 10, lam, lam * 10]
        m = randfeat.RandomFeatureRidge(build_map(Dq, map_ss), alphas=alphas,
                                        alpha_scale="mean", n_threads=1, selection="loo",
                                        gram_dtype="float64")
        with warnings.catch_warnings():   # the grid is lam x 10^(-1, 0, 1): an edge is fine
            warnings.simplefilter("ignore", randfeat.linear.AlphaAtGridEdgeWarning)
            W, b = _ridge(m, X, Y)
        Zc = Z - Z.mean(0)
        crit = []
        for a in alphas:
            H = Zc @ np.linalg.solve(Zc.T @ Zc + n * a * np.eye(Z.shape[1]), Zc.T) + 1.0 / n
            E = (Y.reshape(n, -1) - (Zc @ np.linalg.solve(Zc.T @ Zc + n * a * np.eye(Z.shape[1]),
                                                          Zc.T @ (Y.reshape(n, -1) - Y.mean(0)))
                                     + Y.mean(0))) / (1 - np.diag(H))[:, None]
            crit.append(float(np.mean(E ** 2)))
        best = float(alphas[int(np.argmin(crit))])
        rec = _direct(f"RandomFeatureRidge selection='loo' (chose {m.alpha_:g})",
                      Exact(Z, Y, n * m.alpha_), W, b)
        rec["ok"] = rec["ok"] and best == m.alpha_
        rec["loo_numpy"] = crit
        return rec

    attempt("loo", loo)

    def float32_statistics():
        # gram_dtype="float32" (what "auto" picks for large enough alphas), in three tests:
        # (1) the statistics: partial_fit in chunks of m rows keeps them (statistics_); each
        # chunk's float32 product moves an entry of Z'Z (Z'Y) by at most gamma_m sum_k |z_ki
        # z_kj| (Higham, Thm 3.5; gamma_m = m u / (1 - m u), u = 2^-24; Y rounded to float32:
        # one u more), the float64 sum of the chunks by (chunks + 1) eps more: entrywise,
        # against numpy's float64 products of the same float32 features;
        # (2) the solve: fit's coefficients against numpy's float64 solve of those statistics
        # (fit and partial_fit form the same chunks), to the forward error of a backward-stable
        # solve, 10 kappa eps sqrt(D) (the mixed-precision refinement stops at LAPACK dsposv's
        # backward error eps sqrt(D)); a float32-only solve is off by ~kappa u;
        # (3) the whole: against numpy's float64 ridge on the float32 features, within the
        # rigorous bound ||dG||_2 / pen (||dG||_2 <= gamma_m || |Z|'|Z| ||_F), loose.
        m = learner(gram_dtype="float32", chunk_size=F32_CHUNK)
        W, b = _ridge(m, X, Y)
        pm = learner(gram_dtype="float32")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for a in range(0, n, F32_CHUNK):
                pm.partial_fit(X[a:a + F32_CHUNK], Y[a:a + F32_CHUNK])
        st = pm.statistics_
        Z32 = np.asarray(m.features_.transform(X.astype(np.float32)), float)
        Y32 = np.asarray(Y, np.float32).astype(float)
        u = 2.0 ** -24
        rows = min(n, F32_CHUNK)
        gam = rows * u / (1 - rows * u)
        absZ = np.abs(Z32)
        sum64 = (math.ceil(n / rows) + 1) * EPS
        G_scale = absZ.T @ absZ
        gram_ratio = float(np.max(np.abs(np.asarray(st.gram_, float) - Z32.T @ Z32)
                                  / ((gam + sum64) * G_scale + 1e-300)))
        C_scale = absZ.T @ np.abs(Y32)
        zty_ratio = float(np.max(np.abs(np.asarray(st.zty_, float) - Z32.T @ Y)
                                 / ((gam + u + sum64) * C_scale + 1e-300)))
        S = float(st.weight_sum_)
        mz, my = np.asarray(st.z_sum_, float) / S, np.asarray(st.y_sum_, float) / S
        A = np.asarray(st.gram_, float) - S * np.outer(mz, mz)
        A[np.diag_indices_from(A)] += lam * S
        C = np.asarray(st.zty_, float) - S * np.outer(mz, my)
        Wst = np.linalg.solve(A, C)
        ev = np.linalg.eigvalsh(A)
        kappa = float(ev[-1] / ev[0])
        solve_bound = 10 * kappa * EPS * math.sqrt(A.shape[0])
        solve_err = float(np.linalg.norm(W - Wst) / np.linalg.norm(Wst))
        r32 = Exact(Z32, Y, n * lam)
        dG = gam * float(np.linalg.norm(G_scale)) + 4 * u * float(
            np.linalg.norm(G_scale))   # + the centring's own float32 products
        q = dG / (n * lam)
        bound = q / (1 - q) if q < 1 else np.inf
        rel = float(np.linalg.norm(W - r32.W) / np.linalg.norm(r32.W))
        return dict(path="RandomFeatureRidge gram_dtype='float32'", kind="float32",
                    relerr=solve_err, bound=float(solve_bound), kappa=kappa,
                    gram_ratio=gram_ratio, zty_ratio=zty_ratio, relerr_numpy=rel,
                    bound_numpy=float(bound),
                    intercept=float(r32.intercept_error(W, b).max()),
                    ok=bool(solve_err <= solve_bound and gram_ratio <= 1 and zty_ratio <= 1
                            and rel <= bound and m.gram_dtype_ == "float32"
                            and pm.gram_dtype_ == "float32"))

    attempt("float32 statistics", float32_statistics)

    def classifier():
        cls = np.argmax(Y, axis=1)
        T = np.where(cls[:, None] == np.arange(3)[None], 1.0, -1.0)
        rc = Exact(Z, T, n * lam)
        m = randfeat.RandomFeatureRidgeClassifier(build_map(Dq, map_ss), alphas=lam,
                                                  alpha_scale="mean", n_threads=1,
                                                  gram_dtype="float64").fit(X, cls)
        W = np.asarray(m.coef_, float).reshape(-1, m.n_features_out_).T
        return _direct("RandomFeatureRidgeClassifier (3 classes, one-vs-rest)", rc, W,
                       m.intercept_)

    attempt("classifier", classifier)

    # streaming statistics: chunks into three objects, merged
    def streaming():
        cuts = np.linspace(0, n, 7).astype(int)
        parts = [randfeat.RidgeStatistics() for _ in range(3)]
        for i in range(6):
            parts[i // 2].partial_fit(Z[cuts[i]:cuts[i + 1]], Y[cuts[i]:cuts[i + 1]])
        st = parts[0].merge(parts[1])
        st += parts[2]
        sums.update(_stats_sums(st, Z, Y))
        out = []
        W1, b1 = st.solve(n * lam)
        out.append(_direct("RidgeStatistics partial_fit x6, merge, +=, solve", ref, W1.T, b1))
        for method in ("cholesky", "eigh"):
            Wp, bp = st.solve_path([n * lam / 10, n * lam], method=method)
            out.append(_direct(f"RidgeStatistics solve_path (method='{method}')", ref, Wp[1].T,
                               bp[1]))
        ok_sums = (sums["n_samples_"] == n and sums["weight_sum_"] == float(n)
                   and all(sums[k] <= 4 * math.sqrt(n) * EPS * 16
                           for k in ("zty_", "z_sum_", "y_sum_", "gram_")))
        for o in out:
            o["ok"] = o["ok"] and ok_sums
        return out

    try:
        recs.extend(streaming())
    except Exception as exc:  # noqa: BLE001
        errors.append(f"RidgeStatistics: {type(exc).__name__}: {exc}")

    def dask_path():
        r = _dask_fit(learner(solver="cholesky"), X, Y, params["blocks"], params["dask"],
                      skipped)
        if r is None:
            return None
        (W, b), nb = r
        return _direct(f"randfeat.dask fit ({nb} blocks, scheduler "
                       f"{'LocalCluster' if params['dask'] == 'cluster' else 'threads'})",
                       ref, W, b)

    attempt("dask", dask_path)

    # data-driven sigma
    sig = []

    def sigma_rule(rule):
        Xs = X if rule == "scale" else X[:params["n_median"]]
        if rule == "scale":
            want = math.sqrt(Xs.shape[1] * float(np.var(Xs)) / 2.0)
        else:
            from scipy.spatial.distance import pdist

            dd = pdist(Xs)
            want = float(np.median(dd[dd > 0]))
        m = build_map(Dq, map_ss, sigma=rule).fit(Xs)
        m1 = build_map(Dq, map_ss, sigma=want).fit(Xs)
        rel = abs(float(m.sigma_) / want - 1.0)
        frel = float(np.max(np.abs(np.asarray(m.frequencies_) - np.asarray(m1.frequencies_)))
                     / np.max(np.abs(np.asarray(m1.frequencies_))))
        sig.append(dict(rule=rule, sigma=float(m.sigma_), want=want, rel=rel, freq_rel=frel))
        # the learner on the data-driven map, against the exact ridge on the features of a map
        # built with the reference sigma
        Zs = np.asarray(m1.transform(Xs), float)
        Ys = Y[:len(Xs)]
        rs_ = Exact(Zs, Ys, len(Xs) * lam)
        W, b = _ridge(randfeat.RandomFeatureRidge(build_map(Dq, map_ss, sigma=rule), alphas=lam,
                                                  alpha_scale="mean", n_threads=1,
                                                  gram_dtype="float64"), Xs, Ys)
        rec = _direct(f"RandomFeatureRidge on RandomFourierFeatures(sigma='{rule}')", rs_, W, b)
        rec["ok"] = rec["ok"] and rel <= SIGMA_RTOL and frel <= SIGMA_RTOL
        return rec

    for rule in ("scale", "median"):
        attempt(f"sigma='{rule}'", lambda rule=rule: sigma_rule(rule))

    # calibration of the power statement: PCG with a looser tolerance
    for f in PCG_FACTORS:
        try:
            W, b = _ridge(learner(solver="pcg", tol=tol * f, random_state=pcg_ss), X, Y)
            rr = ref.relres(W)
            calib.append(dict(factor=f, relres=rr.tolist(),
                              detected=bool(np.any(rr > tol + ref.floor(W)))))
        except Exception as exc:  # noqa: BLE001
            errors.append(f"PCG calibration (tol x {f:g}): {type(exc).__name__}: {exc}")
    return dict(n=n, D=int(Z.shape[1]), K=int(Y.shape[1]), lam=lam, tol=tol, iter_tol=itol,
                kappa=ref.kappa, eta=ref.eta, normM=ref.normM,
                C_norm=np.linalg.norm(ref.C, axis=0).tolist(),
                W_norm=np.linalg.norm(ref.W, axis=0).tolist(), paths=recs, sums=sums,
                sigma=sig, pcg_calibration=calib, errors=errors, skipped=skipped,
                dask=params["dask"])


# ------------------------------------------------------------------ verdict
def _solution_effect(res):
    """Smallest relative scale error s of the coefficients (W -> (1 + s) W) that every direct
    path's backward-error test rejects.  With a = |M| |W_k|, c = |C_k| and the observed residual
    r = eta_obs (a + c): the residual becomes R - s M W with |M W| >= c - r, so the backward
    error exceeds the bound eta once s (c - r - eta a) > eta (a + c) + r; the hardest path and
    target decide (5 % margin).  None if some path cannot see any s."""
    worst = 0.0
    for p in res["paths"]:
        if p["kind"] != "direct":
            continue
        for be, a, c in zip(p["backward"], p["MW"], p["Cn"], strict=True):
            r = be * (a + c)
            den = c - r - p["bound"] * a
            if den <= 0:
                return None
            worst = max(worst, (p["bound"] * (a + c) + r) / den)
    return 1.05 * worst if worst > 0 else None


def verdict(res):
    paths = res["paths"]
    errors, skipped = res.get("errors") or [], res.get("skipped") or []
    fails = [p["path"] for p in paths if not p["ok"]]
    det = []
    cal = res.get("pcg_calibration") or []
    hit = [c["factor"] for c in cal if c["detected"]]
    # smallest factor from which every larger calibrated factor is detected
    fs = sorted(c["factor"] for c in cal)
    f_det = None
    for f in fs:
        if all(c["detected"] for c in cal if c["factor"] >= f):
            f_det = f
            break
    if f_det is not None:
        det.append(power.effect("PCG stopping tolerance loosened by a factor", f_det, "factor",
                                where=f"tol = {res['tol']:g}, calibrated in the run"))
    s = _solution_effect(res)
    if s is not None:
        det.append(power.effect("relative error of the coefficients of a direct solve", s,
                                "relative", where="every direct path (W -> (1 + s) W)"))
    sig = res.get("sigma") or []
    if sig:
        worst = max(max(x["rel"], x["freq_rel"]) for x in sig)
        det.append(power.effect("relative error of the data-driven sigma ('scale', 'median')",
                                SIGMA_RTOL + 2 * worst, "relative",
                                where="RandomFourierFeatures sigma_ and frequencies_"))
    verdict_ = "fail" if fails or errors else ("vacuous" if skipped else "pass")
    rows = ["| path | test | value (worst target) | bound | intercept (rel.) | rel. distance to "
            "exact W | |", "|---|---|---|---|---|---|---|"]
    for p in paths:
        if p["kind"] == "direct":
            val, bnd, test = max(p["backward"]), f"{p['bound']:.2g}", "backward error"
        elif p["kind"] == "residual":
            i = int(np.argmax(np.asarray(p["relres"]) / np.asarray(p["bound"])))
            val, bnd, test = p["relres"][i], f"{p['bound'][i]:.3g}", "relative residual"
        elif p["kind"] == "float32":
            val, bnd, test = p["relerr"], f"{p['bound']:.2g}", (
                f"rel. error vs float64 solve of its statistics (their rounding: "
                f"{max(p['gram_ratio'], p['zty_ratio']):.2g} of the bound; vs float64 ridge "
                f"{p['relerr_numpy']:.2g} <= {p['bound_numpy']:.2g})")
        else:
            val, bnd, test = (max(p["ratio"]), "1 (or SciPy's test 1)",
                              "|R| / (atol sqrt(2 it + 1) |A|_2 |r|)")
        rows.append(f"| {p['path']} | {test} | {val:.3g} | {bnd} | {p['intercept']:.2g} | "
                    f"{p['relerr']:.2g} | {'ok' if p['ok'] else 'FAIL'} |")
    rows += ["", "| sigma rule | sigma_ | numpy | rel. error | frequencies rel. error |",
             "|---|---|---|---|---|"]
    rows += [f"| '{x['rule']}' | {x['sigma']:.10g} | {x['want']:.10g} | {x['rel']:.2g} | "
             f"{x['freq_rel']:.2g} |" for x in sig]
    if cal:
        rows += ["", "| PCG tol x | max relative residual | > tol + round-off |",
                 "|---|---|---|"]
        rows += [f"| {c['factor']:g} | {max(c['relres']):.3g} | {c['detected']} |" for c in cal]
    if res.get("sums"):
        rows += ["", "| RidgeStatistics sum | max error / round-off scale |", "|---|---|"]
        rows += [f"| {k} | {v:.3g} |" for k, v in res["sums"].items()
                 if k not in ("n_samples_", "weight_sum_")]
    worst_direct = max((max(p["backward"]) / p["bound"], p["path"]) for p in paths
                       if p["kind"] == "direct") if any(p["kind"] == "direct"
                                                        for p in paths) else (0, "-")
    summ = (f"{len(paths)} paths agree with exact ridge (kappa {res['kappa']:.3g}); worst direct "
            f"path {worst_direct[1]} at {worst_direct[0]:.2g} of its backward-error bound")
    if fails:
        summ = f"violations: {fails}"
    if errors:
        summ = f"ERROR in {len(errors)} path(s): {errors[0]}" + (f"; {summ}" if fails else "")
    elif skipped:
        summ += f"; skipped: {skipped}"
    notes = [f"n = {res['n']} rows, D = {res['D']} features, K = {res['K']} targets, lambda = "
             f"{res['lam']:g} per sample; backward-error bound eta = {res['eta']:.2g}.",
             "Deterministic given the seed: the verdict has no sampling error (ALPHA is "
             "nominal); the power statement is exact for this seed (PCG: refitted with the "
             "looser tolerance; coefficients and sigma: the tests' own thresholds)."]
    notes += [f"skipped: {s_}" for s_ in skipped]
    return dict(verdict=verdict_,
                statistic={"paths": len(paths), "failed": fails, "errors": errors,
                           "skipped": skipped, "kappa": res["kappa"],
                           "worst_direct_over_bound": worst_direct[0],
                           "pcg_factors_detected": hit},
                tightness=None, summary=summ, table="\n".join(rows), notes=notes,
                detectable=det, power=power.statement(det))


@contextlib.contextmanager
def audit(effect):
    """Inject ``effect`` through public seams: PCG fitted with ``tol`` times the factor
    (``randfeat.RandomFeatureRidge.fit`` wrapped); every coefficient of a direct solve scaled by
    ``1 + size`` (``RandomFeatureRidge.fit``, ``RandomFeatureRidgeClassifier.fit``,
    ``RidgeStatistics.solve`` / ``solve_path`` wrapped); or the data-driven sigma ``1 + size``
    too large (``RandomFourierFeatures.fit`` wrapped: ``sigma_`` times ``1 + size`` and the
    frequencies divided by it, the map that sigma would give)."""
    import randfeat

    e = float(effect["size"])
    name = effect["effect"]
    with contextlib.ExitStack() as stack:
        if name.startswith("PCG"):
            real = randfeat.RandomFeatureRidge.fit

            def fit(self, X, y, sample_weight=None):
                if self.solver != "pcg":
                    return real(self, X, y, sample_weight=sample_weight)
                tol = self.tol
                self.tol = tol * e
                try:
                    return real(self, X, y, sample_weight=sample_weight)
                finally:
                    self.tol = tol

            stack.enter_context(mock.patch.object(randfeat.RandomFeatureRidge, "fit", fit))
        elif name.startswith("relative error of the coefficients"):
            for cls in (randfeat.RandomFeatureRidge, randfeat.RandomFeatureRidgeClassifier):
                real_fit = cls.fit

                def fit(self, X, y, sample_weight=None, real_fit=real_fit):
                    out = real_fit(self, X, y, sample_weight=sample_weight)
                    if getattr(self, "solver_", "cholesky") in ("cholesky", "eigh"):
                        self.coef_ = self.coef_ * (1 + e)
                    return out

                stack.enter_context(mock.patch.object(cls, "fit", fit))
            rs = randfeat.RidgeStatistics
            real_solve, real_path = rs.solve, rs.solve_path

            def solve(self, alpha, **kw):
                W, b = real_solve(self, alpha, **kw)
                return W * (1 + e), b

            def solve_path(self, alphas, **kw):
                W, b = real_path(self, alphas, **kw)
                return W * (1 + e), b

            stack.enter_context(mock.patch.object(rs, "solve", solve))
            stack.enter_context(mock.patch.object(rs, "solve_path", solve_path))
        elif name.startswith("relative error of the data-driven sigma"):
            real = randfeat.RandomFourierFeatures.fit

            def fit(self, X, y=None):
                out = real(self, X, y)
                if isinstance(self.sigma, str):  # the map of sigma_ (1 + e): w = g / sigma
                    self.sigma_ = float(self.sigma_) * (1 + e)
                    self.frequencies_ = np.asarray(self.frequencies_) / (1 + e)
                return out

            stack.enter_context(mock.patch.object(randfeat.RandomFourierFeatures, "fit", fit))
        else:
            raise ValueError(f"{NAME}.audit: unknown effect {name!r}")
        yield


def plot(res, v):
    fig, axes = plots.figure(ncols=2, width=5.2)
    ax, bx = axes
    names, vals, cols = [], [], []
    for p in res["paths"]:
        if p["kind"] == "direct":
            val = max(p["backward"]) / p["bound"]
        elif p["kind"] == "residual":
            val = float(np.max(np.asarray(p["relres"]) / np.asarray(p["bound"])))
        elif p["kind"] == "float32":
            val = p["relerr"] / p["bound"]
        else:
            val = max(p["ratio"])
        names.append(p["path"].replace("RandomFeatureRidge", "RFR").replace("RidgeStatistics",
                                                                              "Stats"))
        vals.append(max(val, 1e-20))
        cols.append(plots.COLORS[0] if p["ok"] else plots.COLORS[3])
    y = np.arange(len(names))
    ax.barh(y, vals, color=cols)
    ax.axvline(1.0, **plots.BOUND_STYLE)
    ax.set_yticks(y, names, fontsize=5)
    ax.set_xscale("log")
    plots.finish(ax, "test statistic / its bound (1 = limit)", "",
                 "each path against exact ridge (bar < 1: ok)", fontsize=6)
    cal = res.get("pcg_calibration") or []
    if cal:
        f = [c["factor"] for c in cal]
        bx.plot(f, [max(c["relres"]) for c in cal], "o-", color=plots.COLORS[1],
                label="PCG with tol x factor: max relative residual")
        bx.axhline(res["tol"], label=f"tol = {res['tol']:g}", **plots.BOUND_STYLE)
        bx.set_xscale("log")
        bx.set_yscale("log")
    plots.finish(bx, "tolerance factor", "relative residual |C - M W| / |C|",
                 "calibration: a looser PCG stop is seen", fontsize=6)
    plots.verdict_title(fig, NAME, v["verdict"])
    return fig

