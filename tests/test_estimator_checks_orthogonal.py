"""scikit-learn's estimator checks for StructuredOrthogonalFeatures and for
RandomFourierFeatures with orthogonal and QMC sampling (kept apart from
test_estimator_checks.py so branches merge cleanly).  The checks that set n_components=1 meet
the odd-width error of features="paired", so "phase" variants run every check as well."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomFourierFeatures, StructuredOrthogonalFeatures

ESTIMATORS = [
    StructuredOrthogonalFeatures(n_components=16, random_state=0),
    StructuredOrthogonalFeatures(n_components=15, features="phase", random_state=0),
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

_ODD_WIDTH = ("sklearn's check sets n_components=1; features='paired' requires an even "
              "n_components (documented ValueError); covered by the features='phase' variants")
_PAIRED_XFAIL = {name: _ODD_WIDTH for name in (
    "check_dont_overwrite_parameters", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_fit2d_predict1d")}


def _expected_failed_checks(estimator):
    return _PAIRED_XFAIL if estimator.features == "paired" else {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
