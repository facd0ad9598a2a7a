"""Shared fixtures.

Seeds
-----
Statistical tests take the ``global_random_seed`` fixture.  By default it is one fixed seed (42),
so the suite is deterministic.  ``RANDFEAT_TESTS_SEEDS`` widens it:

* ``RANDFEAT_TESTS_SEEDS=all`` runs every seed 0–99 (each test must pass for all of them);
* ``RANDFEAT_TESTS_SEEDS=3`` runs seed 3; ``RANDFEAT_TESTS_SEEDS=0-9`` runs 0..9 inclusive.

Every test that takes ``global_random_seed`` carries the ``statistical`` marker (added here, at
collection), so a seed sweep can run exactly those: ``RANDFEAT_TESTS_SEEDS=all python -m pytest
-m statistical``.

Hypothesis
----------
Profile ``ci`` (selected when ``CI`` is set) is derandomised with no deadline; ``dev`` has no
deadline either.  Hypothesis varies inputs, never the seed of a probabilistic bound.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from analysis.montecarlo import parse_seeds

settings.register_profile("dev", deadline=None, max_examples=50,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=50, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

DEFAULT_SEED = 42


def _seeds():
    spec = os.environ.get("RANDFEAT_TESTS_SEEDS", "").strip()
    return parse_seeds(spec) if spec else [DEFAULT_SEED]


def pytest_generate_tests(metafunc):
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _seeds(), ids=lambda s: f"seed{s}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "global_random_seed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.statistical)


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def global_dtype(request):
    return request.param


@pytest.fixture
def fail_first_dpotrf(monkeypatch):
    """Call it to make the next ``dpotrf`` of randfeat.linear's solvers report a non-positive
    pivot (info = 1, after computing) while later calls are the real ones, as when an in-place
    Cholesky factorisation fails; returns the list that counts the calls.  Undone at
    teardown."""
    import scipy.linalg.lapack

    import randfeat.linear._solvers as lin

    def arm():
        calls = []

        class FailFirst:
            def __getattr__(self, name):
                return getattr(scipy.linalg.lapack, name)

            def dpotrf(self, *a, **k):
                calls.append(1)
                M, info = scipy.linalg.lapack.dpotrf(*a, **k)
                return M, (1 if len(calls) == 1 else info)

        monkeypatch.setattr(lin, "_lapack", FailFirst())
        return calls

    return arm
