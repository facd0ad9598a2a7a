"""The ridge solvers: one signature, one table (``randfeat.linear._solvers.SOLVERS``), and what
the learners and the dask path read from it.  Deterministic algebra (no statistical claim)."""

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
                                         r"\['auto', 'cholesky', 'eigh', 'lsqr', 'cg', 'pcg'\]"):
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
    a = RandomFeatureRidge(f, random_state=0).fit(X, y)
    b = RandomFeatureRidge(f, solver="eigh", random_state=0).fit(X, y)
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
