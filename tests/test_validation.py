import re

import numpy as np
import pytest

from randfeat._validation import (
    as_float_array,
    check_n_threads,
    check_random_state,
    effective_n_cpus,
    is_power_of_two,
    next_power_of_two,
)


@pytest.mark.parametrize("n, expected", [
    (0, False), (1, True), (2, True), (3, False), (4, True), (5, False),
    (7, False), (8, True), (9, False), (1023, False), (1024, True), (1025, False),
    (2**40 - 1, False), (2**40, True), (2**40 + 1, False), (-1, False), (-2, False),
    (np.int64(64), True), (np.uint8(128), True),
])
def test_is_power_of_two(n, expected):
    assert is_power_of_two(n) is expected


@pytest.mark.parametrize("n", [2.0, True, "4", None])
def test_is_power_of_two_non_integers(n):
    assert is_power_of_two(n) is False


@pytest.mark.parametrize("n, expected", [
    (0, 1), (1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (7, 8), (8, 8), (9, 16),
    (1023, 1024), (1024, 1024), (1025, 2048), (2**40 - 1, 2**40), (2**40 + 1, 2**41),
])
def test_next_power_of_two(n, expected):
    assert next_power_of_two(n) == expected


def test_next_power_of_two_errors():
    with pytest.raises(ValueError, match="non-negative integer, got -1"):
        next_power_of_two(-1)
    with pytest.raises(TypeError, match="got 2.5 of type float"):
        next_power_of_two(2.5)


def test_check_random_state():
    g = np.random.default_rng(1)
    assert check_random_state(g) is g
    a = check_random_state(5).standard_normal(3)
    b = check_random_state(5).standard_normal(3)
    np.testing.assert_array_equal(a, b)
    assert isinstance(check_random_state(None), np.random.Generator)
    assert isinstance(check_random_state(np.random.SeedSequence(3)), np.random.Generator)
    rs = np.random.RandomState(0)
    x = check_random_state(rs).random()
    y = check_random_state(np.random.RandomState(0)).random()
    assert x == y
    with pytest.raises(TypeError, match="random_state must be"):
        check_random_state("seed")
    with pytest.raises(ValueError, match="non-negative"):
        check_random_state(-3)


def test_check_n_threads():
    n = effective_n_cpus()
    assert check_n_threads(None) == n
    assert check_n_threads(-1) == n
    assert check_n_threads(-(n + 5)) == 1
    assert check_n_threads(3) == 3
    with pytest.raises(ValueError, match="got 0"):
        check_n_threads(0)
    with pytest.raises(TypeError, match="n_threads must be None or an int, got 1.5"):
        check_n_threads(1.5)


def test_effective_n_cpus_respects_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert effective_n_cpus() == 1


@pytest.mark.parametrize("dtype, expected", [
    (np.float32, np.float32), (np.float64, np.float64), (np.int8, np.float64),
    (np.int64, np.float64), (np.uint16, np.float64), (np.bool_, np.float64),
])
def test_as_float_array_dtypes(dtype, expected):
    x = np.ones(4, dtype=dtype)
    assert as_float_array(x).dtype == expected


@pytest.mark.parametrize("dtype", [np.complex128, np.float16, object, "U3", "datetime64[s]"])
def test_as_float_array_rejects(dtype):
    x = np.zeros(4, dtype=dtype)
    msg = f"unsupported dtype {np.dtype(dtype).name} for x"
    with pytest.raises(TypeError, match=re.escape(msg)):
        as_float_array(x, name="x")


def test_as_float_array_copy_does_not_share():
    x = np.ones(3)
    assert as_float_array(x) is x
    assert not np.shares_memory(as_float_array(x, copy=True), x)


# ------------------------------------------------------------------------------------------
# RandomFeaturesBase._validate_X: the transform-time fast path
# ------------------------------------------------------------------------------------------
def _fitted_estimators(d):
    from randfeat import Fastfood, RandomBinningFeatures, RandomFourierFeatures

    X = np.random.default_rng(0).normal(size=(5, d))
    return [est.fit(X) for est in (RandomFourierFeatures(8, random_state=0),
                                   Fastfood(8, random_state=0),
                                   RandomBinningFeatures(3, random_state=0))]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_transform_fast_path_rejects_non_finite(bad):
    for est in _fitted_estimators(4):
        X = np.zeros((3, 4))
        X[1, 2] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            est.transform(X)


def test_transform_fast_path_huge_finite_values_do_not_warn():
    """A finite input whose sum overflows falls back to the full check without a warning
    (pytest turns warnings into errors here); binning handles it, the Fourier maps raise the
    overflow error of their projections."""
    X = np.full((3, 4), np.finfo(np.float64).max)
    rff, ff, binning = _fitted_estimators(4)
    assert np.isfinite(binning.transform(X).data).all()
    for est in (rff, ff):
        with pytest.raises(ValueError, match="overflowed"):
            est.transform(X)


def test_transform_fast_path_returns_input_unmodified():
    for est in _fitted_estimators(4):
        X = np.random.default_rng(1).normal(size=(3, 4))
        X0 = X.copy()
        assert est._validate_X(X, reset=False) is X
        est.transform(X)
        np.testing.assert_array_equal(X, X0)
        with pytest.raises(ValueError, match="4 features"):
            est.transform(X[:, :3].copy())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_overflowing_projections_raise(dtype):
    """Finite input so large that w'x overflows (every entry at the dtype's largest value:
    |w'x| = max * |sum of 16 N(0, 1)| > max for most of the 32-64 frequencies, fixed seed):
    a clear error, never NaN features."""
    big = np.finfo(dtype).max
    from randfeat import Fastfood, RandomFourierFeatures

    X0 = np.random.default_rng(0).normal(size=(5, 16)).astype(dtype)
    X = np.full((3, 16), big, dtype=dtype)
    X[0] = 0.5                       # a normal row next to the overflowing ones
    ests = [RandomFourierFeatures(64, features=f, random_state=0) for f in ("paired", "phase")]
    ests += [Fastfood(64, features=f, random_state=0) for f in ("paired", "phase")]
    if dtype == np.float64:  # FastfoodFFT computes in float64: float32's maxima do not overflow
        from paper_figures._fastfood_fft import FastfoodFFT
        ests += [FastfoodFFT(64, features=f, random_state=0) for f in ("paired", "phase")]
    for est in ests:
        est.fit(X0)
        with pytest.raises(ValueError, match=r"overflowed.*rescale X"):
            est.transform(X)
        assert np.isfinite(est.transform(X[:1])).all()


def test_kernel_counts_non_finite_projections():
    from randfeat._lib import _fourier

    buf = np.array([[0.5, np.inf, 1.0, 0.0], [0.1, 0.2, 0.0, 0.0], [np.nan, 1.0, 0.0, 0.0]])
    assert _fourier.paired_inplace(buf.copy(), 2, 1.0, 1) == 2
    ph = buf[:, :2].copy()
    assert _fourier.phase_inplace(ph, np.zeros(2), 1.0, 2) == 2
    assert np.isfinite(ph[1]).all()
