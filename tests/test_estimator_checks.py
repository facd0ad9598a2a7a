"""scikit-learn's estimator checks on every randfeat transformer.

Every width is valid for both feature maps (an odd ``features="paired"`` width ends with one
phase-shifted feature), so the default estimators pass every check with no expected failure.
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomFourierFeatures

ESTIMATORS = [
    RandomFourierFeatures(),
    RandomFourierFeatures(n_components=8, random_state=0),
    RandomFourierFeatures(n_components=7, random_state=0),
    RandomFourierFeatures(n_components=8, features="phase", random_state=0),
    RandomFourierFeatures(n_components=8, kernel="rbf", sigma="scale", random_state=0),
    RandomFourierFeatures(n_components=8, kernel="laplacian", sigma="median", random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS[1:], ids=repr)
def test_default_construction_fits(estimator):
    import numpy as np

    X = np.random.default_rng(0).normal(size=(4, 3))
    assert estimator.fit_transform(X).shape == (4, estimator.n_components)
