"""Property tests of analysis.bounds: monotonicity, inversions, consistency (no randomness in the
bounds themselves; hypothesis varies the inputs only)."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from analysis import bounds

D_ = st.floats(1, 1e6)
EPS = st.floats(1e-3, 1.0)
DELTA = st.floats(1e-6, 0.5)
DIM = st.integers(1, 200)


@given(D_, D_, EPS, st.sampled_from([1.0, 2.0, 4.0]))
def test_hoeffding_monotone_in_D(D1, D2, eps, width):
    lo, hi = sorted((D1, D2))
    assert bounds.hoeffding(hi, eps, width) <= bounds.hoeffding(lo, eps, width)


@given(D_, EPS, EPS)
def test_hoeffding_monotone_in_eps(D, e1, e2):
    lo, hi = sorted((e1, e2))
    for f in (bounds.hoeffding_paired, bounds.hoeffding_phase, bounds.hoeffding_binning):
        assert f(D, hi) <= f(D, lo)


def test_hoeffding_printed_forms():
    D, eps = 100.0, 0.3
    assert bounds.hoeffding_paired(D, eps) == pytest.approx(2 * math.exp(-D * eps ** 2 / 2))
    assert bounds.hoeffding_phase(D, eps) == pytest.approx(2 * math.exp(-D * eps ** 2 / 8))
    assert bounds.hoeffding_binning(D, eps) == pytest.approx(2 * math.exp(-2 * D * eps ** 2))


@given(D_, DELTA, st.sampled_from([1.0, 2.0, 4.0]))
def test_hoeffding_inversion_round_trip(D, delta, width):
    eps = bounds.hoeffding_eps(D, delta, width)
    assert bounds.hoeffding(D, eps, width) == pytest.approx(delta, rel=1e-9)


@given(D_, DELTA, st.floats(1e-4, 1.0), st.floats(0.5, 3.0))
def test_bernstein_inversion_and_dominance(D, delta, var, b):
    eps = bounds.bernstein_eps(D, delta, var, b)
    assert bounds.bernstein(D, eps, var, b) == pytest.approx(delta, rel=1e-7)
    # with var <= b^2 / 4... Bernstein with the true variance of a [-1, 1] term (var <= 1, b = 2)
    # is never looser than Hoeffding in the regime eps <= 1 up to a constant: check monotonicity
    assert bounds.bernstein(D, eps * 1.1, var, b) <= bounds.bernstein(D, eps, var, b)


@given(D_, D_, EPS, DIM, st.floats(0.1, 10), st.floats(0.1, 10))
def test_claim1_monotone_in_D(D1, D2, eps, d, sp, diam):
    lo, hi = sorted((D1, D2))
    assert bounds.claim1(hi, eps, d, sp, diam) <= bounds.claim1(lo, eps, d, sp, diam)


@given(D_, EPS, EPS, DIM, st.floats(0.1, 10), st.floats(0.1, 10))
def test_claim1_monotone_in_eps(D, e1, e2, d, sp, diam):
    lo, hi = sorted((e1, e2))
    assert bounds.claim1(D, hi, d, sp, diam) <= bounds.claim1(D, lo, d, sp, diam)


@given(DELTA, EPS, DIM, st.floats(0.1, 10), st.floats(0.1, 10))
def test_claim1_D_round_trip(delta, eps, d, sp, diam):
    D = bounds.claim1_D(delta, eps, d, sp, diam)
    assume(D > 0)
    assert bounds.claim1(D, eps, d, sp, diam) == pytest.approx(delta, rel=1e-8)


@given(DELTA, st.floats(10, 1e7), DIM, st.floats(0.5, 10), st.floats(0.5, 10))
def test_claim1_eps_round_trip(delta, D, d, sp, diam):
    eps = bounds.claim1_eps(delta, D, d, sp, diam)
    assert math.isfinite(eps)
    assert bounds.claim1(D, eps, d, sp, diam) == pytest.approx(delta, rel=1e-6)


def test_claim1_theory_table():
    """THEORY §2.8: Gaussian sigma = 1 on [0,1]^d, delta = 0.05: 15,775 (d=1), 85,206 (d=10)."""
    assert bounds.claim1_D(0.05, 0.1, 1, 1.0, 1.0) == pytest.approx(15775, abs=1)
    assert (bounds.claim1_D(0.05, 0.1, 10, math.sqrt(10), math.sqrt(10))
            == pytest.approx(85206, abs=1))
    assert bounds.claim1_vacuous_below(0.1, 1, 1.0, 1.0) == pytest.approx(12180, abs=1)


@given(EPS, EPS, st.floats(1, 1e5), st.integers(1, 20))
def test_claim2_monotone_in_eps(e1, e2, P, d):
    lo, hi = sorted((e1, e2))
    assert (bounds.claim2_failure(P, hi, d, 1.0, 1.0, 1.0)
            <= bounds.claim2_failure(P, lo, d, 1.0, 1.0, 1.0))


@given(st.floats(0.01, 1.0), st.floats(1.0, 100.0), st.floats(1.0, 100.0), st.integers(1, 20))
def test_claim2_monotone_in_P_beyond_peak(eps, f1, f2, d):
    """Non-increasing beyond the peak up to rounding: at the peak the derivative is 0 and two
    float evaluations differ by a few ulps either way (the exact statement is checked in 30-digit
    arithmetic by test_analysis_pinned.test_claim2_monotone_beyond_peak_exact)."""
    p_star = 8 * (d + 1) / eps ** 2
    lo, hi = sorted((p_star * f1, p_star * f2))
    assert (bounds.claim2_failure(hi, eps, d, 1.0, 1.0, 1.0)
            <= bounds.claim2_failure(lo, eps, d, 1.0, 1.0, 1.0) * (1 + 1e-12))


@given(DELTA, st.floats(0.02, 1.0), st.integers(1, 10), st.floats(0.2, 5), st.floats(0.2, 5))
def test_claim2_P_round_trip(delta, eps, d, alpha, diam):
    P = bounds.claim2_P(delta, eps, d, alpha, diam, 1.0)
    assume(math.isfinite(P) and P > 8 * (d + 1) / eps ** 2)
    assert bounds.claim2_failure(P, eps, d, alpha, diam, 1.0) == pytest.approx(delta, rel=1e-6)


@given(DELTA, st.floats(1e3, 1e8), st.integers(1, 10))
def test_claim2_eps_round_trip(delta, P, d):
    eps = bounds.claim2_eps(delta, P, d, 1.0, 1.0, 1.0)
    assume(math.isfinite(eps) and eps > 1e-7)
    assert bounds.claim2_failure(P, eps, d, 1.0, 1.0, 1.0) == pytest.approx(delta, rel=1e-6)


@given(st.floats(0, 5), st.integers(1, 4096))
def test_fastfood_bounds_dominate_iid_variance(a, n):
    iid = bounds.var_rff_gaussian(a) / n
    assert bounds.fastfood_thm5_var(a, n) >= iid
    assert bounds.fastfood_thm4_var_mean(a, n) >= iid
    assert bounds.fastfood_C(a) >= 0


def test_fastfood_C_closed_form():
    assert bounds.fastfood_C(1.0) == pytest.approx(6 * (math.exp(-1) + 1 / 3))


@given(st.floats(1e-4, 0.4), st.integers(1, 12), st.floats(0.01, 5))
def test_thm6_threshold_monotone(delta, logd, a):
    d = 2 ** logd
    assert (bounds.fastfood_thm6_threshold(delta / 2, d, a)
            >= bounds.fastfood_thm6_threshold(delta, d, a))


@given(st.floats(0.0, 5.0))
def test_exact_variances_gaussian(r):
    k, k2 = math.exp(-r ** 2 / 2), math.exp(-2 * r ** 2)
    vp = bounds.var_rff_paired(k, k2)
    vph = bounds.var_rff_phase(k, k2)
    assert vp == pytest.approx(bounds.var_rff_gaussian(r), abs=1e-12)
    assert vph >= vp - 1e-12  # paired better at equal frequencies (S&S)
    assert -1e-12 <= vp <= 1  # (1 + k2 - 2k^2)/2 rounds to -1e-16 at r -> 0


@given(st.floats(-50, 50), st.floats(0.01, 100))
def test_invert_decreasing_generic(c, target):
    def f(x):
        return math.exp(-x) * math.exp(c)

    x = bounds.invert_decreasing(f, target, 1e-9, 1e9)
    if math.isfinite(x) and 1e-9 < x < 1e9:
        assert f(x) == pytest.approx(target, rel=1e-6)
