"""scikit-learn's estimator checks for Nystroem, PolynomialCountSketch, RandomMaclaurin,
AdditiveChi2Sampler and SkewedChi2Sampler (kept apart from test_estimator_checks.py so branches
merge cleanly).  No expected failure.  Nystroem with more landmarks than the checks' rows
warns and uses every row, as scikit-learn's does: that warning is expected here."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import (
    AdditiveChi2Sampler,
    Nystroem,
    PolynomialCountSketch,
    RandomMaclaurin,
    SkewedChi2Sampler,
)

ESTIMATORS = [
    Nystroem(),
    Nystroem(n_components=8, random_state=0),
    Nystroem(n_components=8, kernel="polynomial", degree=2, random_state=0),
    Nystroem(n_components=8, kernel="laplacian", sigma="median", random_state=0),
    Nystroem(n_components=8, sampling="leverage", random_state=0),
    PolynomialCountSketch(),
    PolynomialCountSketch(n_components=16, degree=3, coef0=1.0, random_state=0),
    PolynomialCountSketch(n_components=15, degree=1, random_state=0),
    RandomMaclaurin(),
    RandomMaclaurin(n_components=16, kernel="exponential", gamma=0.1, random_state=0),
    RandomMaclaurin(n_components=16, degree=3, coef0=1.0, vectors="gaussian",
                    degree_law="geometric", random_state=0),
    AdditiveChi2Sampler(),
    AdditiveChi2Sampler(sample_steps=4, sample_interval=0.3),
    SkewedChi2Sampler(),
    SkewedChi2Sampler(n_components=16, skewedness=5.0, random_state=0),
]


@pytest.mark.filterwarnings("ignore:n_components > n_samples")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


CLASSES = [Nystroem, PolynomialCountSketch, RandomMaclaurin, SkewedChi2Sampler]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_keyword_only_after_the_width(cls):
    import inspect

    params = list(inspect.signature(cls).parameters.values())
    assert params[0].name == "n_components"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert "n_threads" in inspect.signature(cls).parameters
    with pytest.raises(TypeError):
        cls(8, 2)


def test_additive_chi2_is_keyword_only():
    import inspect

    params = inspect.signature(AdditiveChi2Sampler).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)


@pytest.mark.parametrize("est", [Nystroem(5, random_state=0), PolynomialCountSketch(5),
                                 RandomMaclaurin(5), SkewedChi2Sampler(5),
                                 AdditiveChi2Sampler()], ids=lambda e: type(e).__name__)
def test_inputs_are_never_modified(est):
    import numpy as np
    import scipy.sparse as sp

    X = np.random.default_rng(0).random((12, 4))
    X0 = X.copy()
    S = sp.csr_matrix(X)
    S0 = S.copy()
    est.fit(X)
    est.transform(X)
    est.transform(S)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(S.toarray(), S0.toarray())
    Xr = X.copy()
    Xr.flags.writeable = False
    est.transform(Xr)                       # read-only input is accepted
    est.transform(np.asfortranarray(X))     # so is a non-contiguous layout
