"""The ridge solvers: one signature, one table (``randfeat.linear._solvers.SOLVERS``), and what
the learners and the dask path read from it.  Deterministic algebra (no statistical claim)."""

import copy
import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.linear_model import Ridge
from sklearn.utils._param_validation import InvalidParameterError

from randfeat import RandomBinningFeatures, RandomFourierFeatures
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier, RidgeStatistics
from randfeat.linear._solvers import (
    SOLVERS,
    Design,
    SolveOptions,
    get_solver,
    resolve_solver,
)


def _data(seed=0, n=300, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def test_every_solver_has_the_one_signature():
    for name, spec in SOLVERS.items():
        params = list(inspect.signature(spec.function).parameters)
        assert params == ["problem", "penalty", "options", "state"], (name, params)
        assert spec.data in ("statistics", "design"), name
        assert spec.summary and spec.function.__doc__, name


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_solves_ridge(name):
    """Each solver of the table, called through its one signature on the problem its row
    names, gives scikit-learn's Ridge solution (weights, intercept, two targets)."""
    rng = np.random.default_rng(1)
    Z, Y = rng.normal(size=(80, 6)), rng.normal(size=(80, 2))
    w = rng.uniform(0.5, 2.0, size=80)
    spec = SOLVERS[name]
    if spec.data == "statistics":
        problem = RidgeStatistics().partial_fit(Z, Y, w)
    else:
        problem = Design(Z, Y, w)
    sol = spec.function(problem, 3.0, SolveOptions(tol=1e-12, random_state=0), {})
    ref = Ridge(alpha=3.0).fit(Z, Y, sample_weight=w)
    np.testing.assert_allclose(sol.coef.T, ref.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sol.intercept, ref.intercept_, rtol=1e-8, atol=1e-10)
    assert sol.method in (name, "eigh") and sol.n_iter.shape == (2,)


def test_unknown_solver_raises_naming_the_valid_ones():
    """A name the table does not hold raises, naming the valid choices -- even when
    scikit-learn's parameter validation is skipped (randfeat 0.1 then ran CG silently)."""
    X, y = _data()
    with pytest.raises(ValueError, match=r"unknown solver 'bogus'; valid solvers are "
                                         r"\['auto', 'cholesky', 'eigh', 'lsqr', 'cg', 'pcg', "
                                         r"'dual'\]"):
        get_solver("bogus")
    with pytest.raises(InvalidParameterError, match="solver"):
        RandomFeatureRidge(solver="bogus").fit(X, y)
    with config_context(skip_parameter_validation=True):
        for cls in (RandomFeatureRidge, RandomFeatureRidgeClassifier):
            with pytest.raises(ValueError, match=r"unknown solver 'bogus'.*'pcg'"):
                cls(solver="bogus").fit(X, y > 0)
    with pytest.raises(ValueError, match="method must be one of"):
        RidgeStatistics().partial_fit(X, y).solve_path([1.0], method="lsqr")


def test_the_table_drives_the_parameter_and_auto():
    from randfeat.linear._ridge import _RandomFeatureRidgeBase

    options = _RandomFeatureRidgeBase._parameter_constraints["solver"][0].options
    assert options == {"auto", *SOLVERS}
    assert resolve_solver("auto", True)[0] == "lsqr"
    assert resolve_solver("auto", False)[0] == "cholesky"
    assert resolve_solver("pcg", False) == ("pcg", SOLVERS["pcg"])


def test_eigh_solver_equals_cholesky():
    """solver="eigh" (one eigendecomposition for the whole alpha path) fits the model of
    "cholesky" to rounding, validation scores included."""
    X, y = _data(2)
    f = RandomFourierFeatures(40, sigma=1.5, random_state=0)
    a = RandomFeatureRidge(f, selection="holdout", random_state=0).fit(X, y)
    b = RandomFeatureRidge(f, selection="holdout", solver="eigh", random_state=0).fit(X, y)
    assert b.solver_ == "eigh" and a.solver_ == "cholesky" and a.alpha_ == b.alpha_
    np.testing.assert_allclose(b.validation_scores_, a.validation_scores_, rtol=1e-9)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["lsqr", "cg"])
def test_design_solvers_take_sparse_features(name):
    X, y = _data(3)
    f = RandomBinningFeatures(10, sigma=2.0, random_state=0)
    m = RandomFeatureRidge(f, solver=name, alphas=1.0, tol=1e-10).fit(X, y)
    Z = f.fit(X).transform(X)
    assert sp.issparse(Z)
    ref = Ridge(alpha=1.0, solver="sparse_cg", tol=1e-12).fit(Z, y)
    np.testing.assert_allclose(m.predict(X), ref.predict(Z), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_in_place_solve(weighted, fail_first_dpotrf):
    """overwrite=True factorises the last alpha in the Gram itself: the same bits as the
    copying solve when it succeeds; when it fails (alpha = 0, singular A) the statistics are
    consumed (_GramConsumed), and the learner accumulates its rows again and solves on a copy
    (which can fall back to the eigen-solution)."""
    from randfeat.linear._solvers import GramConsumed as _GramConsumed
    rng = np.random.default_rng(3)
    Z, Y = rng.normal(size=(40, 9)), rng.normal(size=(40, 2))
    st = RidgeStatistics().partial_fit(Z, Y)
    for alphas in ([0.5], [2.0, 0.5]):
        W0, b0, used0 = st.copy()._path(np.array(alphas))
        W1, b1, used1 = st.copy()._path(np.array(alphas), overwrite=True)
        assert used0 == used1 == ["cholesky"] * len(alphas)
        np.testing.assert_array_equal(W0, W1)
        np.testing.assert_array_equal(b0, b1)
    wide = RidgeStatistics().partial_fit(Z[:6], Y[:6])  # 6 rows, 9 features: singular A
    with pytest.raises(_GramConsumed):
        wide.copy()._path(np.array([0.0]), overwrite=True)
    # the learner: when its in-place factorisation fails (simulated: the first dpotrf reports
    # a non-positive pivot) it accumulates the rows again and solves on a copy
    X = rng.normal(size=(300, 3))
    y = rng.normal(size=300)
    w = rng.uniform(0.5, 2.0, size=300) if weighted else None
    f = RandomFourierFeatures(40, sigma=1.0, random_state=0)
    ref = RandomFeatureRidge(f, alphas=1e-3, chunk_size=64, gram_dtype="float64").fit(
        X, y, sample_weight=w)
    calls = fail_first_dpotrf()
    m = RandomFeatureRidge(f, alphas=1e-3, chunk_size=64, gram_dtype="float64").fit(
        X, y, sample_weight=w)
    assert len(calls) == 2 and m.solver_ == "cholesky"
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    np.testing.assert_array_equal(m.intercept_, ref.intercept_)


def _spd(D, K, cond, seed):
    """A symmetric positive definite (D, D) Fortran matrix of 2-norm condition ``cond`` (its
    upper triangle NaN: never to be read) and a (D, K) right-hand side."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(D, D)))
    A = np.asfortranarray((Q * np.geomspace(1.0, 1.0 / cond, D)) @ Q.T)
    A[np.triu_indices(D, 1)] = np.nan
    return A, np.asfortranarray(rng.normal(size=(D, K)))


@pytest.mark.parametrize("D, K, cond, shift", [(1, 1, 1.0, 0.0), (5, 3, 10.0, 0.5),
                                               (64, 2, 1e3, 0.0), (300, 1, 1e5, 1e-3),
                                               (257, 4, 1e2, 2.0)])
def test_posv_mixed_meets_the_float64_test(D, K, cond, shift):
    """_posv_mixed (float32 Cholesky + float64 refinement, gram_dtype="float32"'s solve): the
    solution of (A + shift I) x = c passes LAPACK's float64 test ||c - Ax||_inf <= ||x||_inf
    ||A||_inf eps64 sqrt(D) column by column, A (its lower triangle) is read and never
    written, and the upper triangle is never read (NaN there)."""
    from randfeat.linear._solvers import _posv_mixed
    A, c = _spd(D, K, cond, seed=D)
    A0 = A.copy(order="F")
    out = np.full((D, K), np.nan)
    it = _posv_mixed(A, shift, c, out)
    assert 0 <= it <= 30
    np.testing.assert_array_equal(A, A0)
    S = np.tril(A0) + np.tril(A0, -1).T + shift * np.eye(D)
    r = c - S @ out
    bound = (np.abs(out).max(axis=0) * np.abs(S).sum(axis=1).max() * np.finfo(float).eps
             * np.sqrt(D))
    assert np.all(np.abs(r).max(axis=0) <= bound)
    # the detector: a float32 solve alone (no refinement) fails the same test here
    if cond >= 1e3:
        x32 = np.linalg.solve(S.astype(np.float32), c.astype(np.float32)).astype(np.float64)
        assert np.any(np.abs(c - S @ x32).max(axis=0) > bound)


def test_posv_mixed_says_when_it_cannot():
    """Negative when float32 cannot do it (the caller then solves in float64): an entry beyond
    float32's range or NaN (-1), a matrix indefinite in float32 (-1), a refinement that has not
    converged in max_iter steps (-2); ``out`` untouched then."""
    from randfeat._lib import _gram
    from randfeat.linear._solvers import _posv_mixed
    A, c = _spd(40, 1, 1e4, seed=3)
    out = np.full((40, 1), 7.0)
    for bad in (np.nan, np.inf, 1e39):
        B = A.copy(order="F")
        B[5, 2] = bad
        assert _posv_mixed(B, 0.0, c, out) == -1
    assert np.all(out == 7.0)
    # indefinite: -1
    assert _posv_mixed(A, -2.0, c, out) == -1
    assert np.all(out == 7.0)
    # no refinement allowed on a matrix that needs it: -2
    X, R = np.empty((40, 1), order="F"), np.empty((40, 1), order="F")
    SX = np.empty((40, 1), dtype=np.float32, order="F")
    SA = np.zeros((40, 40), dtype=np.float32, order="F")
    assert _gram.posv_mixed(A, 0.0, c, X, SA, SX, R, max_iter=0) == -2
    assert _gram.posv_mixed(A, 0.0, c, X, SA, SX, R) > 0
    with pytest.raises(ValueError, match="posv_mixed"):
        _gram.posv_mixed(A, 0.0, c, X, SA[:, :39], SX, R)


def test_float32_statistics_solve_to_float64_accuracy():
    """gram_dtype="float32" statistics solve by the mixed-precision Cholesky; the result is the
    float64 factorisation's on the same Gram to float64 rounding (relative 1e-9) along a path
    of alphas, including alphas too small for float32 (then the float64 factorisation, or the
    eigen-solution, as with float64 statistics)."""
    import randfeat.linear._solvers as lin
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(100, 120)).astype(np.float32)   # fewer rows than features: singular
    Y = rng.normal(size=(100, 2))
    st = RidgeStatistics(gram_dtype="float32").partial_fit(Z, Y)
    ref = RidgeStatistics()
    ref.__dict__.update(copy.deepcopy(st.__dict__))
    ref.gram_dtype = "float64"
    alphas = [10.0, 1e-2, 1e-6, 0.0]
    seen = []
    real = lin._posv_mixed

    def spy(*a):
        seen.append(real(*a))
        return seen[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lin, "_posv_mixed", spy)
        W, b, used = st._path(np.asarray(alphas))
    W0, b0, used0 = ref._path(np.asarray(alphas))
    # float32 solves the first two; 1e-6 and 0 (A's null space is rounding noise: indefinite)
    # fail in float32, then in float64 too, and take the eigen-solution
    assert [s >= 0 for s in seen] == [True, True, False, False]
    assert used == ["cholesky", "cholesky", "eigh", "eigh"] and used0 == used
    np.testing.assert_allclose(W, W0, rtol=1e-9, atol=1e-12 * np.abs(W0).max())
    np.testing.assert_allclose(b, b0, rtol=1e-9, atol=1e-12)
    # when the mixed solve declines, the float64 factorisation gives the float64 statistics'
    # answer bit for bit
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lin, "_posv_mixed", lambda *a: -1)
        W1, b1, used1 = st._path(np.asarray(alphas))
    assert used1 == used0
    np.testing.assert_array_equal(W1, W0)
    np.testing.assert_array_equal(b1, b0)


def _wide(seed, n=1500, d=4, D=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X).sum(axis=1) + 0.1 * rng.normal(size=n)
    return X, y, RandomFourierFeatures(D, sigma=2.0, random_state=seed)


def test_nystrom_is_exact_on_a_low_rank_matrix():
    """_nystrom (Frangella, Tropp & Udell 2023, Alg. 2.1) recovers a PSD matrix of rank
    below r exactly (to rounding), positive eigenvalues in decreasing order; a Cholesky
    failure gives the empty approximation (no preconditioning)."""
    from randfeat.linear._solvers import _nystrom
    rng = np.random.default_rng(0)
    F = rng.normal(size=(60, 7))
    A = F @ F.T
    U, lam = _nystrom(lambda V: A @ V, 60, 12, np.random.default_rng(1), np.finfo(float).eps)
    # rank 7: the other directions are rounding (kept only where above the shift)
    assert U.shape[0] == 60 and 7 <= U.shape[1] <= 12 and np.all(np.diff(lam) <= 0)
    assert np.all(lam > 0) and np.all(lam[7:] < 1e-10 * lam[0])
    np.testing.assert_allclose((U * lam) @ U.T, A, atol=1e-8 * np.abs(A).max())
    np.testing.assert_allclose(lam[:7], np.linalg.eigvalsh(A)[::-1][:7], rtol=1e-8)
    U0, lam0 = _nystrom(lambda V: -V, 10, 3, np.random.default_rng(1), 1e-16)
    assert U0.shape == (10, 0) and lam0.size == 0


def test_pcg_equals_cholesky_and_its_preconditioner_does_the_work(monkeypatch):
    """solver="pcg" gives the Cholesky solution (tol=1e-12: 1e-8 relative) in few iterations;
    the same solve without the preconditioner (rank 0: plain CG) needs several times more,
    so the iteration count detects a preconditioner that does nothing."""
    import randfeat.linear._solvers as lin
    X, y, f = _wide(0)
    ch = RandomFeatureRidge(f, alphas=1.0, gram_dtype="float64").fit(X, y)
    pc = RandomFeatureRidge(f, alphas=1.0, solver="pcg", tol=1e-12, random_state=0,
                            gram_dtype="float64").fit(X, y)
    assert pc.solver_ == "pcg"
    np.testing.assert_allclose(pc.coef_, ch.coef_, rtol=1e-8, atol=1e-8 * np.abs(ch.coef_).max())
    np.testing.assert_allclose(pc.intercept_, ch.intercept_, rtol=1e-8, atol=1e-10)
    monkeypatch.setattr(lin, "NYSTROM_RANK", 0)
    plain = RandomFeatureRidge(f, alphas=1.0, solver="pcg", tol=1e-12, random_state=0,
                               max_iter=20_000, gram_dtype="float64").fit(X, y)
    np.testing.assert_allclose(plain.coef_, ch.coef_, rtol=1e-7,
                               atol=1e-7 * np.abs(ch.coef_).max())
    assert pc.n_iter_[0] <= 40 and plain.n_iter_[0] >= 3 * pc.n_iter_[0], (
        pc.n_iter_, plain.n_iter_)


def test_pcg_in_float32_keeps_float32_features_and_the_solution():
    """gram_dtype="float32": PCG keeps the features in float32 (no float64 copy) and its
    solution is the float32 Cholesky fit's to the float32 level (1e-4 relative; the float32
    Cholesky fit is itself that far from the float64 one); classifier, 3 classes, all targets
    at once."""
    import randfeat.linear._ridge as lin
    X, y, f = _wide(1)
    seen = []
    real = lin._RandomFeatureRidgeBase._float32_features

    def spy(self, X):
        seen.append(real(self, X))
        return seen[-1]

    yc = np.digitize(y, np.quantile(y, [0.3, 0.7]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lin._RandomFeatureRidgeBase, "_float32_features", spy)
        pc = RandomFeatureRidgeClassifier(f, alphas=1.0, solver="pcg", gram_dtype="float32",
                                          tol=1e-10, random_state=0).fit(X, yc)
    assert seen[0].dtype == np.float32 and seen[0].shape == (len(X), 400)
    ch = RandomFeatureRidgeClassifier(f, alphas=1.0, gram_dtype="float32").fit(X, yc)
    c64 = RandomFeatureRidgeClassifier(f, alphas=1.0).fit(X, yc)
    err = np.linalg.norm(pc.coef_ - ch.coef_) / np.linalg.norm(ch.coef_)
    assert err < 1e-4
    assert np.linalg.norm(ch.coef_ - c64.coef_) / np.linalg.norm(c64.coef_) < 1e-4
    assert len(pc.n_iter_) == 3
    np.testing.assert_array_equal(pc.predict(X), ch.predict(X))
    # weighted, float32: the fit's peak is the float32 feature matrix plus one float32 chunk
    # being featurised (1.7x it here); a float64 copy of it (e.g. from a mixed-precision
    # product with the weights) would add 2x
    import tracemalloc
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(X))
    f2 = RandomFourierFeatures(2000, sigma=2.0, random_state=0)
    tracemalloc.start()
    try:
        RandomFeatureRidge(f2, alphas=1.0, solver="pcg", gram_dtype="float32",
                           random_state=0).fit(X, y, sample_weight=w)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.2 * len(X) * 2000 * 4, peak


def test_pcg_is_reproducible_and_warm_starts_the_path():
    """Same random_state: the same bits, whatever n_threads; a grid of alphas shares one
    preconditioner and warm-starts (validation scores = Cholesky's); too few iterations warn."""
    X, y, f = _wide(2, n=800, D=200)
    kw = dict(alphas=[0.1, 1.0, 10.0], solver="pcg", tol=1e-12, random_state=3,
              selection="holdout", gram_dtype="float64")
    a = RandomFeatureRidge(f, n_threads=1, **kw).fit(X, y)
    b = RandomFeatureRidge(f, n_threads=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.validation_scores_, b.validation_scores_)
    ch = RandomFeatureRidge(f, alphas=[0.1, 1.0, 10.0], random_state=3,
                            selection="holdout", gram_dtype="float64").fit(X, y)
    np.testing.assert_allclose(a.validation_scores_, ch.validation_scores_, rtol=1e-8)
    # a constant target along a warm-started path: zero weights, no iterations
    c = RandomFeatureRidge(f, solver="pcg", **{k: v for k, v in kw.items() if k != "solver"}
                           ).fit(X, np.full(len(X), 2.5))
    assert not c.coef_.any() and c.intercept_ == pytest.approx(2.5) and c.n_iter_[0] == 0
    with pytest.warns(RuntimeWarning, match="PCG did not converge"):
        RandomFeatureRidge(f, alphas=1e-6, solver="pcg", max_iter=2, random_state=0).fit(X, y)
