"""Issue 32: alpha chosen by leave-one-out, GCV or the evidence from one eigendecomposition; the
posterior of Bayesian linear regression on the features; partial_fit; the dual solver.

Every equality is checked against an independent computation -- scikit-learn's ``RidgeCV`` /
``RidgeClassifierCV`` (``gcv_mode="eigen"``), brute-force refits without each row, the explicit
n x n hat matrix, the n x n Gaussian marginal likelihood, the Gaussian process posterior of
Rasmussen & Williams (2006, eq. 2.41-2.42) computed with n x n matrices, ``numpy.linalg.lstsq``
and ``pinv`` -- to 1e-10 relative (``_rel``: max |a - b| / max |b|).  Deterministic algebra, except
the moments of ``sample_y`` (a seeded Monte Carlo test with a stated false-alarm rate).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import Ridge, RidgeClassifierCV, RidgeCV

from randfeat import RandomFourierFeatures
from randfeat.linear import (
    AlphaAtGridEdgeWarning,
    RandomFeatureRidge,
    RandomFeatureRidgeClassifier,
    RidgeStatistics,
)
from randfeat.linear._selection import Spectrum

TOL = 1e-10


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _data(seed=0, n=60, D=8, K=2, weights=True):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, D))
    Y = Z[:, :K] @ np.diag(np.arange(1, K + 1.0)) + 0.5 * rng.normal(size=(n, K)) + 3.0
    w = rng.uniform(0.5, 2.0, size=n) if weights else None
    return Z, Y, w


ALPHAS = np.array([0.03, 0.3, 3.0, 30.0])
# (n, D, solver): the statistics (primal, D x D and a pass over the rows) with n > D, the dual
# (n x n) with D > n and with n > D
CASES = [(60, 8, "auto"), (30, 70, "dual"), (60, 8, "dual")]


def _fit(Z, Y, w, solver, selection, fit_intercept=True, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AlphaAtGridEdgeWarning)
        return RandomFeatureRidge(alphas=ALPHAS, selection=selection, solver=solver,
                                  fit_intercept=fit_intercept, **kw).fit(Z, Y, sample_weight=w)


def _loo_brute(Z, Y, w, alphas, fit_intercept=True):
    """Leave-one-out predictions (n, L, K) by refitting scikit-learn's Ridge without each row."""
    n = len(Z)
    out = np.empty((n, len(alphas), Y.shape[1]))
    for i in range(n):
        keep = np.arange(n) != i
        for j, a in enumerate(alphas):
            r = Ridge(alpha=a, solver="cholesky", fit_intercept=fit_intercept).fit(
                Z[keep], Y[keep], sample_weight=None if w is None else w[keep])
            out[i, j] = r.predict(Z[i:i + 1])[0]
    return out


def _hat(Z, w, alpha, fit_intercept=True):
    """The explicit n x n hat matrix of weighted ridge with an unpenalised intercept."""
    n, D = Z.shape
    s = np.ones(n) if w is None else w
    X1 = np.hstack([np.ones((n, 1)), Z]) if fit_intercept else Z
    pen = np.diag(([0.0] if fit_intercept else []) + [alpha] * D)
    return X1 @ np.linalg.solve(X1.T @ (s[:, None] * X1) + pen, (s[:, None] * X1).T)


# ------------------------------------------------------------------------------ leave-one-out
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("n, D, solver", CASES)
def test_loo_equals_sklearn_ridgecv_and_brute_force(n, D, solver, weighted, fit_intercept):
    """The leave-one-out squared errors of every row, alpha and target equal scikit-learn's
    ``RidgeCV(gcv_mode="eigen", store_cv_results=True).cv_results_`` (s_i e_i^2) and the
    brute-force refits, to 1e-10 relative; the curve is their weighted mean and alpha_ its
    argmin, the coefficients those of Ridge(alpha_)."""
    Z, Y, w = _data(n + D, n, D, weights=weighted)
    m = _fit(Z, Y, w, solver, "loo", fit_intercept)
    s = np.ones(n) if w is None else w
    ref = RidgeCV(alphas=ALPHAS, gcv_mode="eigen", store_cv_results=True,
                  fit_intercept=fit_intercept).fit(Z, Y, sample_weight=w)
    brute = _loo_brute(Z, Y, w, ALPHAS, fit_intercept)
    sq = s[:, None, None] * (Y[:, None, :] - brute) ** 2          # (n, L, K)
    assert _rel(ref.cv_results_, sq.transpose(0, 2, 1)) < TOL
    curve = sq.mean(axis=2).sum(axis=0) / s.sum()
    assert _rel(m.selection_curve_, curve) < TOL
    assert m.alpha_ == ref.alpha_ == ALPHAS[np.argmin(curve)]
    assert _rel(m.coef_, ref.coef_) < 1e-9
    assert np.max(np.abs(m.intercept_ - ref.intercept_)) < 1e-9 * (1 + np.abs(Y).max())
    assert m.selection_ == "loo" and m.validation_scores_ is None
    assert set(m.selection_results_) == {"alphas", "df", "gcv", "log_evidence",
                                         "noise_variance", "loo"}


def test_loo_with_zero_weights_and_random_features():
    """Rows of weight 0 count for nothing (as removing them); with random Fourier features
    and the streaming statistics chunked (several chunks: the hat diagonals' pass), the
    same curve as RidgeCV on the explicit features."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(X @ [1.0, -0.5]) + 0.1 * rng.normal(size=300)
    w = rng.uniform(0.2, 3.0, size=300)
    w[::7] = 0.0
    f = RandomFourierFeatures(40, sigma=1.0, random_state=0)
    m = RandomFeatureRidge(f, alphas=ALPHAS, chunk_size=37, gram_dtype="float64").fit(
        X, y, sample_weight=w)
    Z = m.features_.transform(X)
    ref = RidgeCV(alphas=ALPHAS, gcv_mode="eigen", store_cv_results=True).fit(
        Z[w > 0], y[w > 0], sample_weight=w[w > 0])
    assert _rel(m.selection_curve_, ref.cv_results_.sum(axis=0) / w.sum()) < TOL
    dropped = RandomFeatureRidge(f, alphas=ALPHAS, gram_dtype="float64").fit(X[w > 0], y[w > 0],
                                                       sample_weight=w[w > 0])
    assert _rel(m.selection_curve_, dropped.selection_curve_) < TOL


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_classifier_loo_equals_ridgeclassifiercv(n_classes, weighted):
    """The classifier's leave-one-out squared error (per row: the scikit-learn
    ``RidgeClassifierCV().cv_results_``) and its leave-one-out predictions
    (``RidgeClassifierCV(scoring=...).cv_results_``) to 1e-10; the error rate is that of those
    predictions (sign / arg-max).  (scikit-learn scores binary leave-one-out predictions with
    an arg-max over one column, so its binary accuracy is always 1: compared by predictions.)"""
    rng = np.random.default_rng(n_classes)
    Z = rng.normal(size=(80, 6))
    y = np.digitize(Z[:, 0] + 0.7 * rng.normal(size=80),
                    np.quantile(Z[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    w = rng.uniform(0.5, 2.0, size=80) if weighted else None
    m = RandomFeatureRidgeClassifier(alphas=ALPHAS).fit(Z, y, sample_weight=w)
    sq = RidgeClassifierCV(alphas=ALPHAS, store_cv_results=True).fit(Z, y, sample_weight=w)
    pr = RidgeClassifierCV(alphas=ALPHAS, store_cv_results=True, scoring="accuracy").fit(
        Z, y, sample_weight=w)
    s = np.ones(80) if w is None else w
    K = sq.cv_results_.shape[1]
    res = m.selection_results_
    assert _rel(res["loo_squared_error"], sq.cv_results_.sum(axis=(0, 1)) / (K * s.sum())) < TOL
    P = pr.cv_results_                                             # (n, K, L) predictions
    Yb = m._label_binarizer.transform(y)
    miss = (np.sign(P[:, 0]) != Yb[:, :1]) if K == 1 else (
        P.argmax(axis=1) != Yb.argmax(axis=1)[:, None])
    assert _rel(res["loo_error_rate"], s @ miss / s.sum()) < 1e-12
    assert np.all(np.abs(res["loo"] - res["loo_error_rate"]) < 1e-9)   # error rate decides
    assert m.alpha_ in ALPHAS and m.selection_ == "loo"


# ------------------------------------------------------------------------------ GCV, evidence
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n, D, solver", CASES)
def test_gcv_equals_the_explicit_hat_matrix(n, D, solver, fit_intercept):
    """GCV = (RSS_w / S) / (1 - tr(H) / n)^2 and df = tr(H), the hat matrix formed
    explicitly, to 1e-10."""
    Z, Y, w = _data(7, n, D)
    m = _fit(Z, Y, w, solver, "gcv", fit_intercept)
    g, df = [], []
    for a in ALPHAS:
        H = _hat(Z, w, a, fit_intercept)
        R = Y - H @ Y
        g.append((w @ (R * R)).mean() / w.sum() / (1 - np.trace(H) / n) ** 2)
        df.append(np.trace(H))
    assert _rel(m.selection_curve_, g) < TOL
    assert _rel(m.selection_results_["df"], df) < TOL
    assert m.alpha_ == ALPHAS[np.argmin(g)] and m.selection_ == "gcv"


def _log_evidence_direct(Z, Y, w, alpha, sigma2, fit_intercept=True):
    """log p(y) of y = b + Z w + e, w ~ N(0, sigma2/alpha I), e_i ~ N(0, sigma2 / s_i), b flat
    (integrated: log N(y; 0, C) + 1/2 log 2 pi - 1/2 log 1'C^-1 1 + (1'C^-1 y)^2 / (2 1'C^-1 1)),
    from the n x n covariance, summed over targets (sigma2 per target)."""
    out = 0.0
    n = len(Z)
    for k in range(Y.shape[1]):
        C = np.diag(sigma2[k] / w) + (sigma2[k] / alpha) * Z @ Z.T
        Ci = np.linalg.inv(C)
        y = Y[:, k]
        lp = -0.5 * y @ Ci @ y - 0.5 * np.linalg.slogdet(C)[1] - 0.5 * n * np.log(2 * np.pi)
        if fit_intercept:
            one = np.ones(n)
            a1 = one @ Ci @ one
            lp += 0.5 * np.log(2 * np.pi) - 0.5 * np.log(a1) + 0.5 * (one @ Ci @ y) ** 2 / a1
        out += lp
    return out


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n, D, solver", CASES)
def test_evidence_equals_the_gaussian_marginal_likelihood(n, D, solver, fit_intercept):
    """The log evidence of every alpha, at the profiled noise variance, equals the Gaussian
    log density of y under the n x n covariance sigma^2 (S^-1 + Z Z' / alpha) (intercept
    integrated under a flat prior) to 1e-10; that noise variance maximises it (moving it by
    +-1 % lowers the density); the chosen alpha maximises the evidence between its grid
    neighbours."""
    Z, Y, w = _data(11, n, D)
    m = _fit(Z, Y, w, solver, "evidence", fit_intercept)
    res = m.selection_results_
    direct = [_log_evidence_direct(Z, Y, w, a, res["noise_variance"][j], fit_intercept)
              for j, a in enumerate(ALPHAS)]
    assert _rel(res["log_evidence"], direct) < TOL
    j = int(np.argmax(direct))
    for f in (0.99, 1.01):
        assert _log_evidence_direct(Z, Y, w, ALPHAS[j], f * res["noise_variance"][j],
                                    fit_intercept) < direct[j]
    best = _log_evidence_direct(Z, Y, w, m.alpha_, m.noise_variance_, fit_intercept)
    assert abs(m.log_marginal_likelihood_ - best) < TOL * abs(best)
    assert best >= max(direct)
    for f in (1 - 1e-4, 1 + 1e-4):   # the maximiser (to 1e-8 in log alpha), inside the grid
        if min(ALPHAS) <= f * m.alpha_ <= max(ALPHAS):
            assert _log_evidence_direct(Z, Y, w, f * m.alpha_, m.noise_variance_,
                                        fit_intercept) <= best + 1e-9 * abs(best)
    assert min(ALPHAS) <= m.alpha_ <= max(ALPHAS)


def test_primal_and_dual_spectra_agree():
    """The statistics' D x D spectrum and the feature matrix's n x n one give the same curves
    (both sides of the same problem)."""
    Z, Y, w = _data(5, 50, 12)
    st = RidgeStatistics().partial_fit(Z, Y, w)
    slw = float(np.log(w).sum())
    pr = Spectrum.from_statistics(st, n_eff=50, sum_log_w=slw)
    du = Spectrum.from_design(Z, Y, w, sum_log_w=slw)
    for name in ("df", "gcv", "log_evidence", "noise_variance", "rss"):
        assert _rel(getattr(pr, name)(ALPHAS), getattr(du, name)(ALPHAS)) < TOL, name
    for a in ALPHAS:
        assert _rel(pr.coef(a)[0], du.coef(a)[0]) < 1e-9


def test_selection_attributes_and_the_grid_edge_warning():
    """Every selection names itself; the edge-of-grid warning says which criterion chose;
    hold-out keeps validation_scores_ (bit-identical to randfeat 0.3's default)."""
    Z, Y, w = _data(2)
    y = Y[:, 0]
    for sel in ("loo", "gcv", "evidence"):
        with pytest.warns(AlphaAtGridEdgeWarning, match="chosen by"):
            m = RandomFeatureRidge(alphas=[1e-8, 1e-7], selection=sel).fit(Z, y)
        assert m.selection_ == sel and m.selection_curve_.shape == (2,)
        assert m.alpha_ == 1e-7 or sel == "evidence"
    m = RandomFeatureRidge(alphas=[1e-8, 1e-7, 1e3], selection="holdout",
                           random_state=0).fit(Z, y)
    assert m.selection_ == "holdout" and m.selection_results_ is None
    np.testing.assert_array_equal(m.selection_curve_, m.validation_scores_)
    one = RandomFeatureRidge(alphas=0.3).fit(Z, y)
    assert one.selection_ is None and one.selection_curve_ is None
    assert one.log_marginal_likelihood_ is None and np.isfinite(one.noise_variance_)


# ------------------------------------------------------------------------------ the posterior
def _gp_posterior(Z, y, w, Zs, amp, noise, fit_intercept=True):
    """Mean and covariance of the latent function at Zs under the Gaussian process with kernel
    amp * z'z, noise noise / s_i and (with an intercept) a constant mean with a flat prior
    (Rasmussen & Williams 2006, eq. 2.41-2.42, B^-1 -> 0), by n x n matrices."""
    Ky = amp * Z @ Z.T + np.diag(noise / w)
    Ks = amp * Z @ Zs.T
    Kss = amp * Zs @ Zs.T
    Ki = np.linalg.inv(Ky)
    mean = Ks.T @ Ki @ y
    cov = Kss - Ks.T @ Ki @ Ks
    if fit_intercept:
        H, Hs = np.ones((1, len(Z))), np.ones((1, len(Zs)))
        A = H @ Ki @ H.T
        beta = np.linalg.solve(A, H @ Ki @ y)
        R = Hs - H @ Ki @ Ks
        mean = mean + (R.T @ beta).ravel()
        cov = cov + R.T @ np.linalg.solve(A, R)
    return mean, cov


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("selection, alphas, n, D", [("loo", ALPHAS, 40, 10),
                                                     ("holdout", [0.5], 40, 10),
                                                     ("evidence", ALPHAS, 25, 60),
                                                     ("holdout", [0.5], 25, 60)])
def test_posterior_equals_the_gaussian_process(selection, alphas, n, D, fit_intercept):
    """predict(X, return_std=True) and the covariance of sample_y equal the exact Gaussian
    process posterior with the feature kernel amplitude_ * z'z (noise noise_variance_ / s_i,
    flat constant mean) computed with n x n matrices, to 1e-10: from the eigendecomposition of
    the selection and from the final Cholesky factor, with more rows than features and
    fewer."""
    import randfeat.linear._ridge as ridge_mod

    Z, Y, w = _data(n + D, n, D, K=1)
    y = Y[:, 0]
    Zs = np.random.default_rng(1).normal(size=(7, D)) * 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AlphaAtGridEdgeWarning)
        m = RandomFeatureRidge(alphas=alphas, selection=selection, store_covariance=True,
                               fit_intercept=fit_intercept, random_state=0).fit(
            Z, y, sample_weight=w)
    mean, cov = _gp_posterior(Z, y, w, Zs, m.amplitude_, m.noise_variance_, fit_intercept)
    mu, sd = m.predict(Zs, return_std=True)
    assert _rel(mu, mean) < TOL
    assert _rel(mu, m.predict(Zs)) < 1e-14
    assert _rel(sd, np.sqrt(np.diag(cov) + m.noise_variance_)) < TOL
    # sample_y = mean + F xi: with xi the identity, F F' is the posterior covariance
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ridge_mod, "standard_normal",
                   lambda rng, shape: np.broadcast_to(np.eye(shape[1]), shape).copy())
        F = m.sample_y(Zs, n_samples=D + 1) - mu[:, None]
    assert _rel(F @ F.T, cov) < TOL
    assert m.amplitude_ == pytest.approx(m.noise_variance_ / m.alpha_, rel=1e-14)


def test_sample_y_moments(global_random_seed):
    """Monte Carlo: 4000 draws of sample_y at 5 points have the posterior mean within 4.5
    standard errors at every point (false alarm <= 5 x 6.8e-6 = 3.4e-5), and the sample
    variances within 6 % of the posterior ones (4000 draws: sd of the ratio 2.2 %; 2.7
    sd each)... and draws are reproducible from random_state and independent of chunking."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(-3, 3, size=(200, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=200)
    f = RandomFourierFeatures(60, sigma=1.0, random_state=global_random_seed)
    m = RandomFeatureRidge(f, store_covariance=True).fit(X, y)
    Xs = np.linspace(-4, 4, 5)[:, None]
    S = m.sample_y(Xs, n_samples=4000, random_state=global_random_seed)
    mu, sd = m.predict(Xs, return_std=True)
    lat = np.sqrt(sd ** 2 - m.noise_variance_)             # the latent function's sd
    z = (S.mean(axis=1) - mu) / (lat / np.sqrt(4000))
    assert np.all(np.abs(z) < 4.5), z
    ratio = S.var(axis=1, ddof=1) / lat ** 2
    assert np.all(np.abs(ratio - 1) < 6 * np.sqrt(2 / 3999) * 1.45), ratio
    again = m.set_params(chunk_size=2).sample_y(Xs, n_samples=3, random_state=7)
    np.testing.assert_allclose(again, m.set_params(chunk_size="auto").sample_y(
        Xs, n_samples=3, random_state=7), rtol=1e-13)


def test_posterior_needs_store_covariance_and_a_statistics_solver():
    Z, Y, _ = _data(0)
    m = RandomFeatureRidge(alphas=1.0).fit(Z, Y[:, 0])
    with pytest.raises(ValueError, match="store_covariance=True"):
        m.predict(Z, return_std=True)
    with pytest.raises(ValueError, match="store_covariance=True"):
        m.sample_y(Z)
    with pytest.raises(ValueError, match="solver='cholesky' or 'eigh'"):
        RandomFeatureRidge(alphas=1.0, solver="lsqr", store_covariance=True).fit(Z, Y)
    m = RandomFeatureRidge(alphas=1.0, store_covariance=True).fit(Z, Y)
    mu, sd = m.predict(Z[:3], return_std=True)
    assert mu.shape == sd.shape == (3, 2) and m.noise_variance_.shape == (2,)
    assert m.sample_y(Z[:3], n_samples=4).shape == (3, 2, 4)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        m.sample_y(Z[:3], n_samples=0)


def test_posterior_with_float32_statistics():
    """gram_dtype="float32" (a float32 factorisation refined to float64): the posterior comes
    from a float64 factorisation of the same statistics -- the GP posterior of those
    statistics to 1e-10."""
    Z, Y, w = _data(4, 80, 12, K=1)
    a = RandomFeatureRidge(alphas=0.7, gram_dtype="float32", store_covariance=True).fit(Z, Y)
    b = RandomFeatureRidge(alphas=0.7, store_covariance=True).fit(Z, Y)
    assert a._posterior.kind == "chol"
    _, sa = a.predict(Z[:5], return_std=True)
    _, sb = b.predict(Z[:5], return_std=True)
    assert _rel(sa, sb) < 1e-5          # the float32 products' rounding, not the solve's


# ------------------------------------------------------------------------------ partial_fit
@pytest.mark.parametrize("selection, alphas", [("gcv", ALPHAS), ("evidence", ALPHAS),
                                               ("loo", [0.3]), ("loo", ALPHAS)])
def test_partial_fit_equals_fit_on_the_concatenated_rows(selection, alphas):
    """Batches given to partial_fit make the model fit makes on all rows (to rounding):
    coefficients, alpha, curve, noise, posterior; "loo" becomes "gcv" there."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(500, 3))
    y = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 1])]) + 0.1 * rng.normal(size=(500, 2))
    w = rng.uniform(0.5, 2.0, size=500)
    f = RandomFourierFeatures(50, sigma=1.5, random_state=0)
    kw = dict(alphas=alphas, selection=selection, store_covariance=True, gram_dtype="float64")
    pf = RandomFeatureRidge(f, **kw)
    for sl in (slice(0, 130), slice(130, 131), slice(131, 400), slice(400, 500)):
        pf.partial_fit(X[sl], y[sl], sample_weight=w[sl])
    ref_sel = "gcv" if selection == "loo" and len(alphas) > 1 else selection
    ref = RandomFeatureRidge(f, **{**kw, "selection": ref_sel}).fit(X, y, sample_weight=w)
    assert pf.alpha_ == pytest.approx(ref.alpha_, rel=1e-7)
    assert pf.selection_ == ref.selection_
    assert _rel(pf.coef_, ref.coef_) < 1e-6 if ref_sel == "evidence" else 1e-9
    assert _rel(pf.noise_variance_, ref.noise_variance_) < 1e-7
    assert pf.statistics_.n_samples_ == 500
    if ref.selection_curve_ is not None:
        assert _rel(pf.selection_curve_, ref.selection_curve_) < 1e-9
    assert _rel(pf.predict(X[:5], return_std=True)[1],
                ref.predict(X[:5], return_std=True)[1]) < 1e-6
    # fit starts over
    assert "statistics_" not in pf.fit(X, y).__dict__


def test_partial_fit_refusals_and_all_or_nothing(monkeypatch):
    X, Y, _ = _data(0)
    with pytest.raises(ValueError, match="selection='holdout'"):
        RandomFeatureRidge(selection="holdout").partial_fit(X, Y)
    with pytest.raises(ValueError, match="solver='lsqr' needs the whole feature matrix"):
        RandomFeatureRidge(solver="lsqr").partial_fit(X, Y)
    m = RandomFeatureRidge(alphas=0.5).partial_fit(X[:30], Y[:30])
    with pytest.raises(ValueError, match="same targets at every call"):
        m.partial_fit(X[30:], Y[30:, 0])
    with pytest.raises(ValueError, match="X has 7 features"):
        m.partial_fit(X[30:, :7], Y[30:])
    # a failure in the solve leaves the statistics and the model whole
    import randfeat.linear._fit as fit_mod
    snap = (m.statistics_.gram_.copy(), m.coef_.copy(), m.statistics_.n_samples_)

    def boom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(fit_mod, "_solve_kept", boom)
    with pytest.raises(MemoryError):
        m.partial_fit(X[30:], Y[30:])
    monkeypatch.undo()
    np.testing.assert_array_equal(m.statistics_.gram_, snap[0])
    np.testing.assert_array_equal(m.coef_, snap[1])
    assert m.statistics_.n_samples_ == snap[2] == 30
    m.partial_fit(X[30:], Y[30:])
    np.testing.assert_allclose(m.coef_, RandomFeatureRidge(alphas=0.5).fit(X, Y).coef_,
                               rtol=1e-9)


# ------------------------------------------------------------------------------ the dual solver
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_dual_ridgeless_is_the_minimum_norm_least_squares_solution(weighted, fit_intercept):
    """solver="dual", alphas=0 with D > n: numpy.linalg.lstsq's (and pinv's) minimum-norm
    solution of the centred weighted problem, to 1e-10; it interpolates the rows."""
    Z, Y, w = _data(9, 30, 80, weights=weighted)
    s = np.ones(30) if w is None else w
    m = RandomFeatureRidge(alphas=0.0, solver="dual", fit_intercept=fit_intercept).fit(
        Z, Y, sample_weight=w)
    zm = s @ Z / s.sum() if fit_intercept else np.zeros(80)
    ym = s @ Y / s.sum() if fit_intercept else np.zeros(2)
    B = np.sqrt(s)[:, None] * (Z - zm)
    rhs = np.sqrt(s)[:, None] * (Y - ym)
    ref = np.linalg.lstsq(B, rhs, rcond=None)[0]
    assert _rel(m.coef_.T, ref) < TOL
    assert _rel(m.coef_.T, np.linalg.pinv(B) @ rhs) < TOL
    assert _rel(m.predict(Z), Y) < 1e-10
    assert m.alpha_ == 0.0 and m.solver_ == "dual"


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n, D", [(30, 80), (80, 30)])
def test_dual_equals_the_primal_at_positive_alpha(n, D, sparse):
    Z, Y, w = _data(12, n, D)
    Zi = sp.csr_matrix(Z) if sparse else Z
    d = RandomFeatureRidge(alphas=0.7, solver="dual").fit(Zi, Y, sample_weight=w)
    p = RandomFeatureRidge(alphas=0.7, solver="cholesky").fit(Z, Y, sample_weight=w)
    ref = Ridge(alpha=0.7).fit(Z, Y, sample_weight=w)
    assert _rel(d.coef_, ref.coef_) < TOL and _rel(d.coef_, p.coef_) < TOL
    assert _rel(d.intercept_, ref.intercept_) < TOL


def test_ridgeless_on_the_other_solvers():
    """alphas=0 (a single value) is accepted by every solver: the statistics ones take the
    eigen-solution (pseudo-inverse), LSQR converges to the minimum-norm solution; a grid
    containing 0 is refused."""
    Z, Y, _ = _data(13, 30, 50, weights=False)
    ref = RandomFeatureRidge(alphas=0.0, solver="dual").fit(Z, Y)
    ch = RandomFeatureRidge(alphas=0.0).fit(Z, Y)
    assert ch.solver_ == "eigh" and _rel(ch.coef_, ref.coef_) < 1e-7
    ls = RandomFeatureRidge(alphas=0.0, solver="lsqr", tol=1e-14, max_iter=10_000).fit(Z, Y)
    assert _rel(ls.coef_, ref.coef_) < 1e-6
    with pytest.raises(ValueError, match="finite and > 0"):
        RandomFeatureRidge(alphas=[0.0, 1.0]).fit(Z, Y)


def test_dual_memory_is_refused_before_allocation(monkeypatch):
    from randfeat import _validation as v

    monkeypatch.setattr(v, "available_memory", lambda: (1 << 20, "test bound"))
    Z = np.zeros((4000, 3))
    with pytest.raises(MemoryError, match="dual kernel"):
        RandomFeatureRidge(alphas=1.0, solver="dual").fit(Z, np.arange(4000.0))
