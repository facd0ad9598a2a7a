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
