"""scikit-learn's estimator checks for Fastfood (kept apart from test_estimator_checks.py so
branches merge cleanly).  Every width is valid (an odd ``features="paired"`` width ends with one
phase-shifted feature), so the default estimator passes every check with no expected failure."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from paper_figures._fastfood_fft import FastfoodFFT
from randfeat.fastfood import Fastfood

ESTIMATORS = [
    Fastfood(),
    Fastfood(n_components=16, random_state=0),
    Fastfood(n_components=15, random_state=0),
    Fastfood(n_components=15, features="phase", random_state=0),
    Fastfood(n_components=15, features="phase", kernel="ballsum", kernel_params={"t": 2},
             random_state=0),
    Fastfood(n_components=16, scaling="none", sigma="median", random_state=0),
    # paper_figures' "Fastfood FFT" benchmark map (even width for its paired map: phase here)
    FastfoodFFT(n_components=15, features="phase", random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
