"""The exact law of the SORF estimate (analysis.sorf_law) against direct enumeration of every
sign pattern, and against randfeat's StructuredOrthogonalFeatures by Monte Carlo.

Deterministic except the last test (seeded; tolerance 6 standard errors, false alarm ~2e-9 per
comparison)."""

import numpy as np
import pytest

from analysis import orth_common, sorf_law


def _inputs(d, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((3, d)) * np.array([[0.3], [1.0], [2.5]])
    e = np.eye(d)
    return np.vstack([V, 1.5 * e[0], np.ones(d) / np.sqrt(d), (e[0] + e[1]) * 0.8,
                      (-1.0) ** np.arange(d)])


@pytest.mark.parametrize("rows", [4, 3, 1])
@pytest.mark.parametrize("no_d2", [False, True])
def test_closed_form_equals_enumeration_d4(rows, no_d2):
    """D1 integrated in closed form, (D2, D3) enumerated (128 terms) == all 4096 patterns."""
    V = _inputs(4)
    mean, sec = sorf_law.moments(V, 1.3, rows=[rows], no_d2=no_d2)
    bm, bv = sorf_law.brute_force(V, 1.3, rows=rows, no_d2=no_d2)
    np.testing.assert_allclose(mean, bm, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sec[0] - mean ** 2, bv, rtol=0, atol=1e-12)


def test_closed_form_equals_enumeration_d2_and_padding():
    V = np.array([[0.7, -0.2], [1.5, 1.5]])
    m, s = sorf_law.moments(V)
    bm, bv = sorf_law.brute_force(V)
    np.testing.assert_allclose(m, bm, atol=1e-12)
    np.testing.assert_allclose(s[0] - m ** 2, bv, atol=1e-12)
    # d = 3 is padded to 4 with a zero coordinate: same law as the explicit padding
    V3 = np.array([[0.4, -1.1, 0.6]])
    np.testing.assert_allclose(sorf_law.estimate_law(V3, 4)[0],
                               sorf_law.estimate_law(np.hstack([V3, [[0.0]]]), 4)[0], atol=0)


@pytest.mark.slow
def test_closed_form_equals_enumeration_d8():
    """All 2^24 = 16 777 216 patterns at d = 8 (about 15 s per input)."""
    V = _inputs(8)[[1, 3]]
    mean, sec = sorf_law.moments(V, 1.0)
    bm, bv = sorf_law.brute_force(V, 1.0)
    np.testing.assert_allclose(mean, bm, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sec[0] - mean ** 2, bv, rtol=0, atol=1e-12)


def test_estimate_law_widths_and_phase():
    """n frequencies = b full blocks + r rows: Var = (b d^2 V_d + r^2 V_r)/n^2; the phase map
    adds 1/(2n); one frequency is one row (V_1 = E cos^2 - mean^2 = (1 + E cos 2y)/2 - m^2)."""
    V = _inputs(4)
    mean, sec = sorf_law.moments(V, rows=[4, 2, 1])
    m, v = sorf_law.estimate_law(V, 10)
    np.testing.assert_allclose(m, mean)
    np.testing.assert_allclose(v, (2 * 16 * (sec[0] - mean ** 2) + 4 * (sec[1] - mean ** 2))
                               / 100)
    _, vp = sorf_law.estimate_law(V, 10, features="phase")
    np.testing.assert_allclose(vp - v, 0.05)
    _, v1 = sorf_law.estimate_law(V, 1)
    m2, _ = sorf_law.moments(2 * V, mean_only=True)
    np.testing.assert_allclose(v1, 0.5 * (1 + m2) - mean ** 2, atol=1e-12)


def test_sorf_law_limits():
    """Delta = 0: mean 1, variance 0; a 2-sparse input at d = 4 gives a deterministic block
    (exact variance 0); the mean is NOT the Gaussian kernel (SORF is biased) but close."""
    m, v = sorf_law.estimate_law(np.zeros((1, 4)), 4)
    assert m[0] == pytest.approx(1.0) and abs(v[0]) < 1e-15
    m, v = sorf_law.estimate_law(np.array([[1.0, 1.0, 0, 0]]) / np.sqrt(2), 4)
    assert abs(v[0]) < 1e-12
    m, _ = sorf_law.estimate_law(np.eye(8)[:1] * 1.0, 8)
    assert 0.005 < abs(m[0] - np.exp(-0.5)) < 0.05


def test_library_sorf_matches_the_law(global_random_seed):
    """randfeat's SORF blocks: mean within 6 se (exact variance) and variance within 6 se of
    the exact law at d = 4 and 8 (20 000 blocks)."""
    import randfeat

    for d in (4, 8):
        V = _inputs(d, 1)[:6]
        mean, var = sorf_law.estimate_law(V, d)
        make = lambda n, rs: randfeat.StructuredOrthogonalFeatures(  # noqa: E731
            n, random_state=rs, n_threads=1)
        est = orth_common.block_estimates(make, d, d, 20000, V, global_random_seed,
                                          ("test_sorf_law", d))
        ok = var > 1e-12
        z = (est.mean(axis=0) - mean)[ok] / np.sqrt(var[ok] / 20000)
        assert np.all(np.abs(z) < 6), z
        c = est - est.mean(axis=0)
        se = np.sqrt(((c ** 4).mean(axis=0) - est.var(axis=0) ** 2) / 20000)
        assert np.all(np.abs(est.var(axis=0, ddof=1) - var)[ok] < 6 * se[ok])
