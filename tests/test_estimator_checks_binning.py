"""scikit-learn's estimator checks for RandomBinningFeatures (exact and hashing modes)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomBinningFeatures


@parametrize_with_checks([
    RandomBinningFeatures(n_grids=8, random_state=0),
    RandomBinningFeatures(n_grids=8, kernel="inverse_power", kernel_params={"a": 2.0},
                          hash_size=16, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)
