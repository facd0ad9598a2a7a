"""PolynomialCountSketch (TensorSketch) and RandomMaclaurin: identities, exact laws, scikit-learn
parity, conventions.

Exact laws (docs/theory/dot-product-sketches.md) are checked two ways: by enumerating every hash
table of tiny sketches (exact, no randomness) and by Monte Carlo over independently seeded fits
(z-tests at |z| < 5, two-sided false alarm 5.7e-7 per comparison; variance tests at 1e-7;
seeds via global_random_seed).
"""

import itertools
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.kernel_approximation import PolynomialCountSketch as SkPCS
from sklearn.utils._param_validation import InvalidParameterError

from analysis.stats import variance_pvalue
from randfeat import PolynomialCountSketch, RandomMaclaurin
from randfeat.sketch import _Series

Z_MAX = 5.0
#: level of the variance test (scaled chi-square with the sample kurtosis, analysis.stats)
P_VAR = 1e-7


# ----------------------------------------------------------------------------- exact laws
def tensorsketch_law(x, y, p, D):
    """Mean and variance of z(x)'z(y) for TensorSketch (the formula of the docstring)."""
    t = float(x @ y)
    N = float((x @ x) * (y @ y))
    Q = float(np.sum(x * x * y * y))
    c = 2 if D % 2 == 0 else 1
    m2 = ((D * D - 2 * D + c) * t ** (2 * p) + (D - c) * ((t * t + N - Q) ** p
          + (2 * t * t - Q) ** p) + c * (2 * t * t + N - 2 * Q) ** p) / D**2
    return t**p, m2 - t ** (2 * p)


def maclaurin_law(x, y, a, p, vectors):
    """Mean and variance of ONE feature's estimate (a_N/p_N) prod (w'x)(w'y), given the
    coefficients a_n and degree probabilities p_n on a finite support."""
    t = float(x @ y)
    N = float((x @ x) * (y @ y))
    Q = float(np.sum(x * x * y * y))
    m2 = N + 2 * t * t - (2 * Q if vectors == "rademacher" else 0.0)
    n = np.arange(len(a))
    f = float(np.sum(a * t**n))
    keep = p > 0
    second = float(np.sum(a[keep] ** 2 / p[keep] * m2 ** n[keep]))
    return f, second - f * f


def _tables(d, p, D):
    """Every (index, sign) hash table pair of shape (p, d)."""
    for idx in itertools.product(range(D), repeat=p * d):
        for sg in itertools.product((-1, 1), repeat=p * d):
            yield (np.array(idx, dtype=np.int64).reshape(p, d),
                   np.array(sg, dtype=np.int8).reshape(p, d))


@pytest.mark.parametrize("d, p, D", [(2, 2, 2), (2, 2, 3), (3, 1, 2), (2, 3, 2)])
def test_tensorsketch_law_by_enumeration(d, p, D):
    """Mean and variance over ALL hash tables (uniform law: each table equally likely) equal
    the closed form, to round-off."""
    x = np.array([0.7, -1.3, 0.4][:d])
    y = np.array([0.2, 0.9, -1.1][:d])
    ps = PolynomialCountSketch(D, degree=p, random_state=0).fit(np.zeros((1, d)))
    vals = []
    for idx, sg in _tables(d, p, D):
        ps.index_hash_, ps.bit_hash_ = idx, sg
        Z = ps.transform(np.vstack([x, y]))
        vals.append(Z[0] @ Z[1])
    vals = np.array(vals)
    mu, var = tensorsketch_law(x, y, p, D)
    assert vals.mean() == pytest.approx(mu, rel=1e-12, abs=1e-12)
    assert vals.var() == pytest.approx(var, rel=1e-10, abs=1e-12)


def test_tensorsketch_law_distinguishes_parity():
    """The even/odd term of the law is real: at D = 2 the formula with c = 1 is off."""
    x, y = np.array([0.7, -1.3]), np.array([0.2, 0.9])
    t, N, Q = x @ y, (x @ x) * (y @ y), np.sum(x * x * y * y)
    _, v_even = tensorsketch_law(x, y, 2, 2)
    D, p, c = 2, 2, 1
    wrong = ((D * D - 2 * D + c) * t**4 + (D - c) * ((t * t + N - Q) ** p + (2 * t * t - Q) ** p)
             + c * (2 * t * t + N - 2 * Q) ** p) / D**2 - t**4
    assert abs(wrong - v_even) > 0.05 * v_even


def test_tensorsketch_is_count_sketch_of_tensor_power():
    """z(x) is the count sketch of x~^(tensor p) with bucket sum_j h_j(k_j) mod D and sign
    prod_j s_j(k_j) (Pham & Pagh), including the sqrt(coef0) coordinate."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 5))
    for p, c0, D in ((1, 0.0, 7), (2, 1.5, 16), (3, 0.3, 9)):
        ps = PolynomialCountSketch(D, degree=p, coef0=c0, gamma=0.7, random_state=1).fit(X)
        Xt = np.hstack([np.sqrt(0.7) * X] + ([np.full((6, 1), np.sqrt(c0))] if c0 else []))
        ref = np.zeros((6, D))
        for ks in itertools.product(range(Xt.shape[1]), repeat=p):
            b = sum(int(ps.index_hash_[j, k]) for j, k in enumerate(ks)) % D
            s = np.prod([float(ps.bit_hash_[j, k]) for j, k in enumerate(ks)])
            ref[:, b] += s * np.prod(Xt[:, list(ks)], axis=1)
        np.testing.assert_allclose(ps.transform(X), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p, c0", [(1, 0.0), (2, 0.0), (2, 2.5), (3, 1.0)])
def test_same_output_as_sklearn_for_the_same_hashes(p, c0, global_dtype):
    rng = np.random.default_rng(0)
    X = rng.random((40, 9)).astype(global_dtype)
    ps = PolynomialCountSketch(64, degree=p, coef0=c0, gamma=0.6, random_state=0).fit(X)
    sk = SkPCS(n_components=64, degree=p, coef0=c0, gamma=0.6).fit(X)
    sk.indexHash_ = ps.indexHash_.copy()
    sk.bitHash_ = ps.bitHash_.astype(np.int64)
    Z = ps.transform(X)
    assert Z.dtype == global_dtype
    tol = 1e-5 if global_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(Z, sk.transform(X), rtol=tol, atol=tol)


def test_tensorsketch_monte_carlo(global_random_seed):
    """Unbiased with the closed-form variance, on a random pair, a sparse pair and a
    heavy-hitter pair (one coordinate 20 times the others): R = 3000 fits, z-test of the mean,
    and the variance test of analysis.stats (scaled chi-square with the sample kurtosis) at
    level P_VAR."""
    rng = np.random.default_rng(7)
    d, p, D, R = 12, 2, 16, 3000
    x = rng.normal(size=d)
    pairs = {"random": (x, x + 0.7 * rng.normal(size=d))}
    xs = np.zeros(d)
    xs[[1, 5]] = [1.0, -0.5]
    ys = np.zeros(d)
    ys[[1, 9]] = [0.8, 1.1]
    pairs["sparse"] = (xs, ys)
    xh = 0.1 * rng.normal(size=d)
    xh[0] = 2.0
    pairs["heavy"] = (xh, xh + 0.05 * rng.normal(size=d))
    XY = np.vstack([v for pair in pairs.values() for v in pair])
    seeds = np.random.SeedSequence([global_random_seed, 31]).spawn(R)
    est = np.empty((R, len(pairs)))
    for r, s in enumerate(seeds):
        Z = PolynomialCountSketch(D, degree=p, random_state=s, n_threads=1).fit_transform(XY)
        est[r] = np.sum(Z[0::2] * Z[1::2], axis=1)
    for j, (name, (a, b)) in enumerate(pairs.items()):
        mu, var = tensorsketch_law(a, b, p, D)
        z = (est[:, j].mean() - mu) / math.sqrt(var / R)
        s2 = est[:, j].var(ddof=1)
        p_var = variance_pvalue(est[:, j], var)[0]
        assert abs(z) < Z_MAX, (name, z)
        assert p_var > P_VAR, (name, s2 / var, p_var)


# ----------------------------------------------------------------------------- conventions
def _X(n=20, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("cls", [PolynomialCountSketch, RandomMaclaurin])
def test_threads_dtype_sparse_pickle(cls, global_dtype):
    X = _X(300, 7).astype(global_dtype) / 3
    est = cls(33, random_state=0, n_threads=1).fit(X)
    Z = est.transform(X)
    assert Z.dtype == global_dtype and Z.shape == (300, 33)
    for nt in (2, 3, None, -1):
        np.testing.assert_array_equal(est.set_params(n_threads=nt).transform(X), Z)
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.3] = 0
    for fmt in ("csr", "csc"):
        S = sp.csr_matrix(Xs) if fmt == "csr" else sp.csc_matrix(Xs)
        np.testing.assert_allclose(est.transform(S), est.transform(Xs),
                                   rtol=1e-5 if global_dtype == np.float32 else 1e-12,
                                   atol=1e-6 if global_dtype == np.float32 else 1e-12)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.transform(X), Z)
    for k in est2._fitted_keys:
        v = getattr(est2, k)
        if isinstance(v, np.ndarray):
            assert not v.flags.writeable, k
    np.testing.assert_array_equal(cls(33, random_state=0).fit(X).transform(X), Z)
    assert not np.array_equal(cls(33, random_state=1).fit(X).transform(X), Z)


def test_count_sketch_sparse_equals_dense_exactly():
    """Sorted CSR rows add the same non-zero terms in the same order as the dense loop."""
    X = _X(50, 9)
    X[np.abs(X) < 0.5] = 0
    ps = PolynomialCountSketch(32, degree=3, coef0=1.0, random_state=0).fit(X)
    np.testing.assert_array_equal(ps.transform(sp.csr_matrix(X)), ps.transform(X))


@pytest.mark.parametrize("cls", [PolynomialCountSketch, RandomMaclaurin])
def test_bad_input_and_changed_parameters(cls):
    X = _X()
    est = cls(8, random_state=0).fit(X)
    bad = X.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.transform(bad)
    with pytest.raises(ValueError, match="X has 4 features"):
        est.transform(X[:, :4])
    est.set_params(n_components=9)
    with pytest.raises(NotFittedError, match="parameters changed after fit"):
        est.transform(X)
    with pytest.raises(InvalidParameterError, match="'n_components'"):
        cls(0).fit(X)
    with pytest.raises(InvalidParameterError, match="'coef0'"):
        cls(8, coef0=-1.0).fit(X)
    X0 = X.copy()
    cls(8, random_state=0).fit(X0).transform(X0)
    np.testing.assert_array_equal(X0, X)


def test_tampered_hash_tables_are_refused():
    X = _X()
    ps = PolynomialCountSketch(8, random_state=0).fit(X)
    bad = ps.index_hash_.copy()
    bad[0, 0] = 8
    ps.index_hash_ = bad
    with pytest.raises(ValueError, match=r"bucket index 8 .* outside \[0, 8\)"):
        ps.transform(X)
    ps = PolynomialCountSketch(8, random_state=0).fit(X)
    ps.bit_hash_ = np.zeros_like(ps.bit_hash_)
    with pytest.raises(ValueError, match="signs -1 and \\+1"):
        ps.transform(X)
    ps = PolynomialCountSketch(8, random_state=0).fit(X)
    ps.index_hash_ = ps.index_hash_[:, :3]
    with pytest.raises(ValueError, match="fitted index_hash_ must be"):
        ps.transform(X)


def test_set_output_and_feature_names():
    for est in (PolynomialCountSketch(5, random_state=0), RandomMaclaurin(5, random_state=0)):
        name = type(est).__name__.lower()
        est.fit(_X(10, 3))
        assert list(est.get_feature_names_out()) == [f"{name}{i}" for i in range(5)]
        assert est.set_output(transform="default") is est
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(_X(10, 3), columns=["a", "b", "c"])
    for est in (PolynomialCountSketch(5, random_state=0), RandomMaclaurin(5, random_state=0)):
        out = est.set_output(transform="pandas").fit_transform(X)
        name = type(est).__name__.lower()
        assert list(out.columns) == [f"{name}{i}" for i in range(5)]


# ----------------------------------------------------------------------------- Maclaurin
def test_maclaurin_series_and_degree_laws():
    class P:
        kernel, degree, gamma, coef0 = "polynomial", 3, 0.5, 2.0
    s = _Series(P)
    np.testing.assert_allclose(s.coef(np.arange(5)),
                               [8.0, 3 * 0.5 * 4.0, 3 * 0.25 * 2.0, 0.125, 0.0])
    N, ratio = s.draw_degrees("proportional", 20000, np.random.default_rng(0))
    # Binomial(3, gamma / (gamma + c0)) = Binomial(3, 0.2); every weight is f(1) = 2.5^3
    assert abs(N.mean() - 0.6) < 0.03 and np.all(ratio == 2.5**3)

    class E:
        kernel, degree, gamma, coef0 = "exponential", 2, 0.7, 0.0
    s = _Series(E)
    np.testing.assert_allclose(s.coef(np.arange(4)), [1, 0.7, 0.49 / 2, 0.343 / 6])
    N, ratio = s.draw_degrees("geometric", 40000, np.random.default_rng(1))
    assert abs(np.mean(N == 0) - 0.5) < 0.01 and abs(np.mean(N == 2) - 0.125) < 0.01
    np.testing.assert_allclose(ratio, s.coef(N) * 2.0 ** (N + 1))


def test_maclaurin_degree_law_errors():
    X = _X()
    with pytest.raises(ValueError, match="positive probability to every degree"):
        RandomMaclaurin(8, degree=2, coef0=1.0, degree_law=[0.5, 0.5]).fit(X)
    with pytest.raises(ValueError, match="positive probability to every degree"):
        RandomMaclaurin(8, kernel="exponential", degree_law=[0.5, 0.5]).fit(X)
    with pytest.raises(ValueError, match="probabilities"):
        RandomMaclaurin(8, degree_law=[0.5, 0.6]).fit(X)
    with pytest.raises(ValueError, match="callable kernel"):
        RandomMaclaurin(8, kernel=lambda n: 1.0 / math.factorial(n)).fit(X)
    with pytest.raises(ValueError, match="identically 0"):
        RandomMaclaurin(8, gamma=0.0, coef0=0.0).fit(X)
    with pytest.raises(ValueError, match="Maclaurin coefficients"):
        RandomMaclaurin(8, kernel=[0.0, -1.0]).fit(X)
    # a callable with the geometric law: exp(t) again
    Z = RandomMaclaurin(4000, kernel=lambda n: 1.0 / math.factorial(n), degree_law="geometric",
                        random_state=0).fit_transform(X / 10)
    assert np.abs(Z @ Z.T - np.exp(X @ X.T / 100)).max() < 0.3


def test_maclaurin_features_are_the_products():
    X = _X(5, 4)
    rm = RandomMaclaurin(30, kernel=[0.5, 1.0, 0.3, 0.2], degree_law=[0.1, 0.3, 0.3, 0.3],
                         random_state=2).fit(X)
    Z = rm.transform(X)
    P = X @ rm.vectors_.T
    for j in range(30):
        s, e = rm.segments_[j], rm.segments_[j + 1]
        assert e - s == rm.degrees_[j]
        np.testing.assert_allclose(Z[:, j], rm.weights_[j] * np.prod(P[:, s:e], axis=1),
                                   rtol=1e-12)
    a = np.array([0.5, 1.0, 0.3, 0.2])
    p = np.array([0.1, 0.3, 0.3, 0.3])
    np.testing.assert_allclose(rm.weights_, np.sqrt(a[rm.degrees_] / p[rm.degrees_] / 30))
    assert set(np.unique(rm.vectors_)) <= {-1.0, 1.0}


MACLAURIN_CASES = {
    "poly3 proportional": dict(kernel="polynomial", degree=3, gamma=0.8, coef0=0.5),
    "poly2 geometric": dict(kernel="polynomial", degree=2, gamma=1.0, coef0=1.0,
                            degree_law="geometric"),
    "series own law": dict(kernel=[0.2, 1.0, 0.5], degree_law=[0.2, 0.4, 0.4]),
}


def _maclaurin_a_p(params):
    class P:
        pass
    for k, v in dict(kernel="polynomial", degree=2, gamma=1.0, coef0=0.0).items():
        setattr(P, k, params.get(k, v))
    s = _Series(P)
    law = params.get("degree_law", "proportional")
    Q = 40
    a = s.coef(np.arange(Q))
    if law == "geometric":
        p = 0.5 ** (np.arange(Q) + 1.0)
    elif law == "proportional":
        p = a / a.sum()
    else:
        p = np.zeros(Q)
        p[:len(law)] = law
    return a, p


@pytest.mark.parametrize("case", list(MACLAURIN_CASES))
@pytest.mark.parametrize("vectors", ["rademacher", "gaussian"])
def test_maclaurin_monte_carlo(case, vectors, global_random_seed):
    """Unbiased, with the exact variance [sum a_n^2 m2^n / p_n - f(t)^2] / D, per vector law:
    R = 2000 fits of D = 32 features (products of Gaussian projections are heavy-tailed: one
    feature's kurtosis is in the hundreds, and the variance test needs the average of many),
    on a random and a heavy-hitter pair; z-test and variance
    the variance test at level P_VAR."""
    params = MACLAURIN_CASES[case]
    a, p = _maclaurin_a_p(params)
    rng = np.random.default_rng(11)
    d, D, R = 5, 32, 2000
    x = 0.25 * rng.normal(size=d)          # norms below 1: see analysis/checks/maclaurin_law
    xh = 0.05 * rng.normal(size=d)
    xh[2] = 0.7
    pairs = [(x, x + 0.15 * rng.normal(size=d)), (xh, xh + 0.02 * rng.normal(size=d))]
    XY = np.vstack([v for pair in pairs for v in pair])
    seeds = np.random.SeedSequence([global_random_seed, 77, len(case)]).spawn(R)
    est = np.empty((R, 2))
    for r, s in enumerate(seeds):
        Z = RandomMaclaurin(D, vectors=vectors, random_state=s, n_threads=1,
                            **params).fit_transform(XY)
        est[r] = np.sum(Z[0::2] * Z[1::2], axis=1)
    for j, (u, v) in enumerate(pairs):
        f, var1 = maclaurin_law(u, v, a, p, vectors)
        var = var1 / D
        z = (est[:, j].mean() - f) / math.sqrt(var / R)
        s2 = est[:, j].var(ddof=1)
        p_var = variance_pvalue(est[:, j], var)[0]
        assert abs(z) < Z_MAX, (case, vectors, j, z)
        assert p_var > P_VAR, (case, vectors, j, s2 / var, p_var)


def test_rademacher_never_loses():
    """m2 (Rademacher) = m2 (Gaussian) - 2 sum x_k^2 y_k^2, so at every pair, degree and law the
    Rademacher variance is the smaller one (equal only when sum x_k^2 y_k^2 = 0 or the degree
    is 0)."""
    rng = np.random.default_rng(0)
    for case in MACLAURIN_CASES.values():
        a, p = _maclaurin_a_p(case)
        for _ in range(50):
            x, y = rng.normal(size=(2, 6))
            vr = maclaurin_law(x, y, a, p, "rademacher")[1]
            vg = maclaurin_law(x, y, a, p, "gaussian")[1]
            assert vr < vg
        x, y = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])   # disjoint supports: equal
        assert maclaurin_law(x, y, a, p, "rademacher")[1] == pytest.approx(
            maclaurin_law(x, y, a, p, "gaussian")[1])


def test_maclaurin_overflow_is_an_error():
    X = np.full((2, 3), 1e30, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed"):
        RandomMaclaurin(8, degree=3, random_state=0).fit_transform(X)


def test_threaded_blocks_bit_identical():
    """Above the threading threshold (rows x degree x width >= 2^22) threads take whole blocks:
    the same bits as one thread, dense and sparse, also with a block cut in the middle."""
    from randfeat import sketch

    X = _X(2100, 30) / 5
    ps = PolynomialCountSketch(1100, degree=2, coef0=0.5, random_state=0, n_threads=1).fit(X)
    assert X.shape[0] * 2 * 1100 >= sketch._THREADED_VALUES
    Z = ps.transform(X)
    S = sp.csr_matrix(np.where(np.abs(X) > 0.1, X, 0))
    ZS = ps.transform(S)
    for nt in (2, 3):
        ps.set_params(n_threads=nt)
        np.testing.assert_array_equal(ps.transform(X), Z)
        np.testing.assert_array_equal(ps.transform(S), ZS)
