"""scikit-learn's estimator checks for ArcCosineFeatures and PositiveRandomFeatures (kept apart
from test_estimator_checks.py so branches merge cleanly).  The checks that set
n_components=1 run on the odd-width hyperbolic and trigonometric maps too."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import ArcCosineFeatures, PositiveRandomFeatures

ESTIMATORS = [
    ArcCosineFeatures(n_components=16, random_state=0),
    ArcCosineFeatures(n_components=15, order=0, random_state=0),
    ArcCosineFeatures(n_components=16, order=2, sampling="orthogonal", random_state=0),
    PositiveRandomFeatures(n_components=16, random_state=0),
    PositiveRandomFeatures(n_components=15, estimator="hyperbolic", sampling="orthogonal",
                           random_state=0),
    PositiveRandomFeatures(n_components=16, estimator="trigonometric", random_state=0),
    PositiveRandomFeatures(n_components=15, kernel="gaussian", estimator="trigonometric",
                           sigma="median", random_state=0),
    PositiveRandomFeatures(n_components=16, kernel="gaussian", sigma="scale",
                           sampling="orthogonal", random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
