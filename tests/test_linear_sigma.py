"""SigmaSearchCV: the length scale of the features chosen by the learner's own criterion (issue
32).  Deterministic (fixed seeds), except that a feature map without a seed gets one drawn once
per search (tested for what it guarantees: one seed shared by every candidate)."""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from randfeat import RandomFourierFeatures
from randfeat.linear import (
    RandomFeatureRidge,
    RandomFeatureRidgeClassifier,
    SigmaAtGridEdgeWarning,
    SigmaSearchCV,
)

SIGMAS = [0.1, 0.3, 1.0, 3.0]


def _data(seed=0, n=250):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("selection", ["loo", "gcv", "evidence", "holdout"])
def test_search_equals_the_loop_over_sigmas(selection):
    """The search is the loop a user would write: one fit per sigma with the same seeds, the
    best criterion per sigma (min of the curve, the evidence at its maximiser), the best sigma
    (ties to the larger) and its fitted learner."""
    X, y = _data()
    base = RandomFeatureRidge(RandomFourierFeatures(60, random_state=1), selection=selection,
                              random_state=2)
    search = SigmaSearchCV(base, SIGMAS, progress=False).fit(X, y)
    crit = []
    for s in SIGMAS:
        m = RandomFeatureRidge(RandomFourierFeatures(60, sigma=s, random_state=1),
                               selection=selection, random_state=2).fit(X, y)
        crit.append(m.log_marginal_likelihood_ if selection == "evidence"
                    else np.min(m.selection_curve_))
    np.testing.assert_array_equal(search.sigma_curve_, crit)
    best = int(np.argmax(crit) if selection == "evidence" else np.argmin(crit))
    assert search.sigma_ == SIGMAS[best] and search.selection_ == selection
    ref = RandomFeatureRidge(RandomFourierFeatures(60, sigma=SIGMAS[best], random_state=1),
                             selection=selection, random_state=2).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), ref.predict(X))
    assert search.alpha_ == ref.alpha_ == search.best_estimator_.alpha_
    assert search.selection_curves_.shape == (4, 9) and search.fit_times_.shape == (4,)


def test_unseeded_maps_share_one_seed_and_the_posterior_is_delegated():
    X, y = _data(1)
    base = RandomFeatureRidge(RandomFourierFeatures(40), store_covariance=True)
    search = SigmaSearchCV(base, SIGMAS, progress=False).fit(X, y)
    rs = search.best_estimator_.features.random_state
    assert isinstance(rs, int)
    again = RandomFeatureRidge(RandomFourierFeatures(40, sigma=search.sigma_, random_state=rs),
                               store_covariance=True).fit(X, y)
    np.testing.assert_array_equal(search.predict(X[:5], return_std=True)[1],
                                  again.predict(X[:5], return_std=True)[1])
    assert search.sample_y(X[:5], n_samples=2).shape == (5, 2)
    assert base.features.random_state is None          # the user's estimator is untouched


def test_classifier_and_the_edge_warning():
    X, y = _data(2)
    clf = SigmaSearchCV(RandomFeatureRidgeClassifier(RandomFourierFeatures(40, random_state=0)),
                        [0.3, 1.0, 3.0], progress=False).fit(X, y > 0)
    assert clf.score(X, y > 0) > 0.8 and list(clf.classes_) == [False, True]
    assert clf.decision_function(X).shape == (len(X),)
    with pytest.warns(SigmaAtGridEdgeWarning, match="smallest of the grid"):
        SigmaSearchCV(RandomFeatureRidge(RandomFourierFeatures(40, random_state=0)),
                      [0.001, 0.002], progress=False).fit(X, y)


def test_bad_parameters():
    X, y = _data(3, n=50)
    base = RandomFeatureRidge(RandomFourierFeatures(20, random_state=0))
    with pytest.raises(ValueError, match="sigmas must be a non-empty 1-D sequence"):
        SigmaSearchCV(base, [0.0, 1.0]).fit(X, y)
    with pytest.raises(ValueError, match="no parameter 'features__gamma'"):
        SigmaSearchCV(base, [1.0], param="features__gamma").fit(X, y)
    with pytest.raises(ValueError, match="several alphas"):
        SigmaSearchCV(RandomFeatureRidge(RandomFourierFeatures(20), alphas=1.0), [1.0]).fit(X, y)


def test_progress_lines_without_a_terminal(capsys):
    X, y = _data(4, n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SigmaSearchCV(RandomFeatureRidge(RandomFourierFeatures(20, random_state=0)),
                      [0.5, 1.0], progress=True).fit(X, y)
    err = capsys.readouterr().err
    assert "SigmaSearchCV" in err and "sigma=1" in err


def _sample_weight_by_rows(estimator):
    reason = "the selection of alpha counts rows: repeating a row is not weighting it"
    return {"check_sample_weight_equivalence_on_dense_data": reason,
            "check_sample_weight_equivalence_on_sparse_data": reason}


@parametrize_with_checks(
    [SigmaSearchCV(RandomFeatureRidge(RandomFourierFeatures(200, random_state=0)), [2.0, 5.0],
                   progress=False),
     SigmaSearchCV(RandomFeatureRidgeClassifier(RandomFourierFeatures(20, random_state=0)),
                   [0.5, 2.0], progress=False)],
    expected_failed_checks=_sample_weight_by_rows)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
