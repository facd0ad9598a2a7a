"""scikit-learn's estimator checks for StructuredOrthogonalFeatures and for
RandomFourierFeatures with orthogonal and QMC sampling (kept apart from
test_estimator_checks.py so branches merge cleanly).  Both maps take odd paired widths (the
checks that set n_components=1 run on the paired map too); "phase" variants run as well."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomFourierFeatures, StructuredOrthogonalFeatures

ESTIMATORS = [
    StructuredOrthogonalFeatures(n_components=16, random_state=0),
    StructuredOrthogonalFeatures(n_components=15, features="phase", random_state=0),
    StructuredOrthogonalFeatures(n_components=15, sigma="median", random_state=0),
    RandomFourierFeatures(n_components=16, sampling="orthogonal", random_state=0),
    RandomFourierFeatures(n_components=15, features="phase", sampling="orthogonal",
                          random_state=0),
    RandomFourierFeatures(n_components=15, features="phase", sampling="orthogonal_unit",
                          random_state=0),
    RandomFourierFeatures(n_components=15, features="phase", sampling="qmc_sobol",
                          random_state=0),
    RandomFourierFeatures(n_components=16, kernel="laplacian", sampling="qmc_halton",
                          random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
