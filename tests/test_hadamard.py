"""Tests of randfeat.fwht and of its compiled kernels (every SIMD code path).

The transform is deterministic algebra, so these are exact or rounding-level checks (no
statistical tolerance, no false-alarm budget).  Integer-valued inputs with |x| <= 8 make every
partial sum exactly representable for d <= 2**12 (|sum| <= 2**15 < 2**24), so those comparisons
with ``scipy.linalg.hadamard`` are exact in float32 and float64.
"""

import functools
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from randfeat import fwht
from randfeat._lib import _cpu, _fwht

RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def _ints(rng, shape, dtype=np.float64):
    return rng.integers(-8, 9, size=shape).astype(dtype)


@functools.lru_cache(maxsize=16)
def _hadamard(d):
    return scipy.linalg.hadamard(d).astype(np.float64)


def _ref(x, axis=-1):
    """scipy.linalg.hadamard(d) @ v along ``axis``, in float64."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    h = _hadamard(x.shape[-1])
    return np.moveaxis(x @ h.T, -1, axis)


def _available_isas():
    out = []
    for name in ("scalar", "avx2", "avx512"):
        try:
            _fwht.set_isa(name)
        except ValueError:
            continue
        out.append(name)
    _fwht.set_isa("auto")
    return out


ISAS = _available_isas()


SCHEDULES = ("add", "fma")


@pytest.fixture
def restore_isa():
    yield
    _fwht.set_isa("auto")
    _cpu.set_fwht_schedule("auto")


# ----------------------------------------------------------------------------- values

@pytest.mark.parametrize("log_n", range(13))
def test_matches_scipy_hadamard_every_size(log_n, global_dtype):
    d = 1 << log_n
    x = _ints(np.random.default_rng(log_n), (3, d), global_dtype)
    y = fwht(x)
    assert y.dtype == global_dtype
    assert_array_equal(y, _ref(x).astype(global_dtype))


@given(log_n=st.integers(0, 12), n_rows=st.integers(0, 5), data_seed=st.integers(0, 2**32 - 1),
       f32=st.booleans())
def test_matches_scipy_hadamard_property(log_n, n_rows, data_seed, f32):
    dtype = np.float32 if f32 else np.float64
    d = 1 << log_n
    x = np.random.default_rng(data_seed).standard_normal((n_rows, d)).astype(dtype)
    y = fwht(x)
    assert y.shape == x.shape and y.dtype == dtype
    scale = np.sqrt(d) * max(1.0, float(np.abs(x).max(initial=0)))
    assert_allclose(y, _ref(x), rtol=0, atol=RTOL[dtype] * scale * log_n + 1e-30)


@given(log_n=st.integers(0, 12), data_seed=st.integers(0, 2**32 - 1), f32=st.booleans())
def test_involution(log_n, data_seed, f32):
    """H(Hx) = d x, and with normalize=True the transform is its own inverse."""
    dtype = np.float32 if f32 else np.float64
    d = 1 << log_n
    rng = np.random.default_rng(data_seed)
    xi = _ints(rng, (2, d), dtype)
    assert_array_equal(fwht(fwht(xi)), d * xi)  # exact: integer sums stay exact
    x = rng.standard_normal((2, d)).astype(dtype)
    assert_allclose(fwht(fwht(x, normalize=True), normalize=True), x,
                    rtol=0, atol=RTOL[dtype] * (log_n + 1) * 10)


@given(log_n=st.integers(0, 12), data_seed=st.integers(0, 2**32 - 1),
       a=st.floats(-4, 4), b=st.floats(-4, 4))
def test_linearity(log_n, data_seed, a, b):
    d = 1 << log_n
    rng = np.random.default_rng(data_seed)
    x, y = rng.standard_normal((2, 3, d))
    lhs = fwht(a * x + b * y)
    rhs = a * fwht(x) + b * fwht(y)
    assert_allclose(lhs, rhs, rtol=0, atol=1e-12 * np.sqrt(d) * (log_n + 1) * 20)


@given(log_n=st.integers(0, 12), data_seed=st.integers(0, 2**32 - 1), f32=st.booleans())
def test_parseval(log_n, data_seed, f32):
    dtype = np.float32 if f32 else np.float64
    x = np.random.default_rng(data_seed).standard_normal((3, 1 << log_n)).astype(dtype)
    y = fwht(x, normalize=True)
    assert y.dtype == dtype
    assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1),
                    rtol=RTOL[dtype] * (log_n + 1) * 5)


@given(log_n=st.integers(0, 10), n_rows=st.integers(1, 6), data_seed=st.integers(0, 2**32 - 1),
       normalize=st.booleans())
def test_batch_equals_row_by_row(log_n, n_rows, data_seed, normalize):
    x = np.random.default_rng(data_seed).standard_normal((n_rows, 1 << log_n))
    y = fwht(x, normalize=normalize)
    for i in range(n_rows):
        assert_array_equal(y[i], fwht(x[i], normalize=normalize))


@pytest.mark.parametrize("shape", [(8,), (4, 2), (2, 8, 4), (4, 1, 2, 8), (2, 16, 1, 4)])
def test_every_axis(shape, global_dtype):
    x = _ints(np.random.default_rng(len(shape)), shape, global_dtype)
    for axis in range(-len(shape), len(shape)):
        y = fwht(x, axis=axis)
        assert y.shape == x.shape and y.dtype == global_dtype and y.flags.c_contiguous
        assert_array_equal(y, _ref(x, axis).astype(global_dtype))


def test_length_one_is_identity_and_empty_batch():
    x = np.array([[3.5], [-1.0]])
    assert_array_equal(fwht(x), x)
    assert_array_equal(fwht(x, normalize=True), x)
    for dtype in (np.float32, np.float64, np.int64):
        e = np.empty((0, 8), dtype=dtype)
        y = fwht(e)
        assert y.shape == (0, 8)
        assert y.dtype == (np.float32 if dtype == np.float32 else np.float64)
    e3 = np.empty((2, 0, 4))
    assert fwht(e3, axis=-1).shape == (2, 0, 4)


def test_known_answer():
    assert_array_equal(fwht(np.array([1.0, 0.0, 1.0, 0.0])), [2.0, 2.0, 0.0, 0.0])
    assert_array_equal(fwht(np.array([1, 2, 3, 4])), [10.0, -2.0, -4.0, 0.0])
    assert_allclose(fwht(np.ones(16), normalize=True), np.eye(16)[0] * 4.0)


# ----------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dtype, expected", [
    (np.float32, np.float32), (np.float64, np.float64),
    (np.int8, np.float64), (np.int16, np.float64), (np.int32, np.float64), (np.int64, np.float64),
    (np.uint8, np.float64), (np.uint16, np.float64), (np.uint32, np.float64),
    (np.uint64, np.float64), (np.bool_, np.float64),
])
def test_dtype_table(dtype, expected):
    x = (np.arange(8) % 2).astype(dtype)
    y = fwht(x)
    assert y.dtype == expected
    assert_array_equal(y, _ref(x.astype(np.float64)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float16, object,
                                   np.longdouble, "U3", "datetime64[s]"])
def test_unsupported_dtypes(dtype):
    if np.dtype(dtype) == np.float64:  # platforms where longdouble is double
        pytest.skip("longdouble is float64 here")
    x = np.zeros(8, dtype=dtype)
    msg = f"fwht: unsupported dtype {np.dtype(dtype).name} for x; randfeat computes in float32"
    with pytest.raises(TypeError, match=re.escape(msg)):
        fwht(x)


def test_list_input():
    assert_array_equal(fwht([1, 2, 3, 4]), [10.0, -2.0, -4.0, 0.0])


# ----------------------------------------------------------------------------- layouts

def test_strided_f_ordered_read_only_unmodified(global_dtype):
    rng = np.random.default_rng(0)
    base = _ints(rng, (6, 32), global_dtype)
    keep = base.copy()
    strided = base[::2, ::2]  # (3, 16), non-contiguous
    assert_array_equal(fwht(strided), _ref(strided).astype(global_dtype))
    assert_array_equal(fwht(base[:4, ::2], axis=0), _ref(base[:4, ::2], 0).astype(global_dtype))
    f = np.asfortranarray(base[:4, :16])
    assert_array_equal(fwht(f), _ref(f).astype(global_dtype))
    assert_array_equal(fwht(f, axis=0), _ref(f, 0).astype(global_dtype))
    ro = base.copy()
    ro.flags.writeable = False
    assert_array_equal(fwht(ro), _ref(ro).astype(global_dtype))
    neg = base[:, ::-1]
    assert_array_equal(fwht(neg), _ref(neg).astype(global_dtype))
    assert_array_equal(base, keep)
    assert_array_equal(ro, keep)


def test_memmap_inputs(tmp_path, global_dtype):
    x = _ints(np.random.default_rng(1), (4, 64), global_dtype)
    path = tmp_path / "x.dat"
    mm = np.memmap(path, dtype=global_dtype, mode="w+", shape=x.shape)
    mm[...] = x
    mm.flush()
    del mm
    ro = np.memmap(path, dtype=global_dtype, mode="r", shape=x.shape)
    assert_array_equal(fwht(ro), _ref(x).astype(global_dtype))
    assert_array_equal(fwht(ro, axis=0), _ref(x, 0).astype(global_dtype))
    assert_array_equal(np.asarray(ro), x)
    rw = np.memmap(path, dtype=global_dtype, mode="r+", shape=x.shape)
    res = fwht(rw, out=rw)
    assert res is rw
    rw.flush()
    assert_array_equal(np.fromfile(path, dtype=global_dtype).reshape(x.shape),
                       _ref(x).astype(global_dtype))


# ----------------------------------------------------------------------------- out

def test_out_in_place(global_dtype):
    x = _ints(np.random.default_rng(2), (3, 16), global_dtype)
    expected = _ref(x).astype(global_dtype)
    y = x.copy()
    assert fwht(y, out=y) is y
    assert_array_equal(y, expected)
    # in place along a non-last axis (out not contiguous along it: goes through a buffer)
    z = np.ascontiguousarray(x.T)
    assert fwht(z, axis=0, out=z) is z
    assert_array_equal(z, expected.T)
    # separate out, input untouched
    out = np.empty_like(x)
    keep = x.copy()
    assert fwht(x, out=out) is out
    assert_array_equal(out, expected)
    assert_array_equal(x, keep)
    # strided out
    big = np.zeros((3, 32), dtype=global_dtype)
    view = big[:, ::2]
    assert fwht(x, out=view) is view
    assert_array_equal(big[:, ::2], expected)
    assert_array_equal(big[:, 1::2], 0)


def test_out_misaligned_rows_every_isa(restore_isa):
    """Rows starting at any byte offset (unaligned SIMD loads) are transformed correctly."""
    for isa in ISAS:
        _fwht.set_isa(isa)
        for dtype in (np.float32, np.float64):
            raw = _ints(np.random.default_rng(3), 3 * 64 + 1, dtype)
            x = raw[1:].reshape(3, 64)
            expected = _ref(x).astype(dtype)
            assert fwht(x, out=x) is x
            assert_array_equal(x, expected)


def test_out_errors():
    x = np.ones((2, 8))
    with pytest.raises(TypeError, match=re.escape(
            "fwht: out must be a numpy.ndarray, got list")):
        fwht(x, out=[0.0] * 16)
    with pytest.raises(ValueError, match=re.escape(
            "fwht: out has shape (2, 4) but x has shape (2, 8); pass an array of x's shape")):
        fwht(x, out=np.empty((2, 4)))
    with pytest.raises(TypeError, match=re.escape(
            "fwht: out has dtype float32 but the result is float64; pass an out of dtype "
            "float64")):
        fwht(x, out=np.empty((2, 8), np.float32))
    xi = np.ones((2, 8), dtype=np.int64)
    with pytest.raises(TypeError, match=re.escape(
            "fwht: out has dtype int64 but the result is float64; pass an out of dtype float64 "
            "(integer and bool input is transformed in float64, so it cannot be transformed "
            "in place)")):
        fwht(xi, out=xi)
    ro = np.ones((2, 8))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=re.escape(
            "fwht: out is read-only; pass a writable array (e.g. np.empty_like(x)) or "
            "out=None")):
        fwht(ro, out=ro)
    assert_array_equal(ro, 1.0)


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("d, nxt", [(3, 4), (5, 8), (6, 8), (7, 8), (12, 16),
                                    (1000, 1024), (1025, 2048)])
def test_not_power_of_two(d, nxt):
    with pytest.raises(ValueError, match=re.escape(
            f"fwht: the length of x along axis -1 must be a power of two, got {d}; "
            f"zero-pad it to {nxt} (e.g. with np.pad)")):
        fwht(np.ones((2, d)))
    with pytest.raises(ValueError, match=re.escape(f"along axis 0 must be a power of two, "
                                                   f"got {d}; zero-pad it to {nxt}")):
        fwht(np.ones((d, 4)), axis=0)


@pytest.mark.parametrize("shape, axis", [((2, 0), -1), ((0,), 0), ((0, 4), 0), ((3, 0, 2), 1)])
def test_empty_axis(shape, axis):
    """An empty transform axis is an error that says so (issue 29: it used to advise zero-padding
    to length 1), while an empty batch axis is fine."""
    x = np.ones(shape)
    with pytest.raises(ValueError, match=re.escape(
            f"fwht: x has length 0 along axis {axis} (shape {shape}): an empty vector cannot be "
            "transformed (the length must be a power of two, at least 1); transform along an "
            "axis that holds values, or skip the call for empty data")):
        fwht(x, axis=axis)


def test_other_argument_errors():
    with pytest.raises(ValueError, match=re.escape(
            "fwht: x must have at least one dimension, got a 0-d array")):
        fwht(np.float64(1.0))
    with pytest.raises(np.exceptions.AxisError, match=re.escape(
            "fwht: axis 2 is out of bounds for an array of dimension 2; use an axis in [-2, 1]")):
        fwht(np.ones((2, 4)), axis=2)
    with pytest.raises(TypeError, match=re.escape("fwht: axis must be an int, got 1.0")):
        fwht(np.ones((2, 4)), axis=1.0)
    with pytest.raises(TypeError, match=re.escape("fwht: normalize must be a bool, got 'yes'")):
        fwht(np.ones(4), normalize="yes")
    with pytest.raises(ValueError, match="n_threads must be a positive number of threads"):
        fwht(np.ones(4), n_threads=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite(bad, global_dtype):
    x = np.ones((3, 8), dtype=global_dtype)
    x[1, 2] = bad
    keep = x.copy()
    with pytest.raises(ValueError, match=re.escape(
            "fwht: the result holds NaN or infinity in 1 of 3 transformed vectors: the input "
            "contains NaN/inf or the sums overflowed")):
        fwht(x)
    assert_array_equal(x, keep)
    y = fwht(x, check_finite=False)  # propagates without error
    assert not np.isfinite(y[1]).any() and np.isfinite(y[[0, 2]]).all()


def test_overflow_is_reported():
    x = np.full((1, 4), 2e38, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed float32; clean the input"):
        fwht(x)
    assert np.isfinite(fwht(x.astype(np.float64))).all()


# ----------------------------------------------------------------------------- threads / ISAs

@given(log_n=st.integers(0, 11), n_rows=st.integers(0, 17), data_seed=st.integers(0, 2**32 - 1),
       normalize=st.booleans(), f32=st.booleans())
def test_thread_count_bit_identical(log_n, n_rows, data_seed, normalize, f32):
    dtype = np.float32 if f32 else np.float64
    x = np.random.default_rng(data_seed).standard_normal((n_rows, 1 << log_n)).astype(dtype)
    ref = fwht(x, normalize=normalize, n_threads=1)
    for t in (2, 3, -1, None):
        assert_array_equal(fwht(x, normalize=normalize, n_threads=t), ref)


@pytest.mark.parametrize("shape", [(64, 1024), (5, 1 << 14), (3, 1 << 16), (1000, 32)])
def test_thread_count_bit_identical_large(shape):
    """Batches big enough to be split over threads (small ones run on one thread)."""
    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(6).standard_normal(shape).astype(dtype)
        for normalize in (False, True):
            ref = fwht(x, normalize=normalize, n_threads=1)
            for t in (2, 3, -1):
                assert_array_equal(fwht(x, normalize=normalize, n_threads=t), ref)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("isa", [i for i in ISAS if i != "scalar"] or ["(none)"])
def test_simd_paths_bit_identical_to_scalar(isa, schedule, restore_isa):
    """Every SIMD code path, with either butterfly schedule (subtractions as vector subtractions
    or as FMAs by -1), gives exactly the scalar reference's bits, log_n = 0 .. 20, with and
    without the fused check."""
    if isa == "(none)":
        pytest.skip("no SIMD code path on this CPU/build")
    _cpu.set_fwht_schedule(schedule)
    rng = np.random.default_rng(4)
    for log_n in range(21):
        d = 1 << log_n
        n_rows = max(1, min(4, 2**14 // d))
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal((n_rows, d)).astype(dtype)
            _fwht.set_isa("scalar")
            ref = x.copy()
            _fwht.fwht_rows(ref, log_n, 1)
            _fwht.set_isa(isa)
            got = x.copy()
            _fwht.fwht_rows(got, log_n, 2)
            assert _fwht.isa() == isa and _cpu.fwht_schedule() == schedule
            assert_array_equal(got, ref, err_msg=f"{isa} {dtype.__name__} log_n={log_n}")
            got = x.copy()
            assert _fwht.fwht_rows(got, log_n, 1, 1.0, True) == 0
            assert_array_equal(got, ref, err_msg=f"{isa} {dtype.__name__} log_n={log_n} checked")
            if log_n <= 12:
                assert_allclose(got, _ref(x).astype(dtype),
                                rtol=0, atol=RTOL[dtype] * np.sqrt(d) * 8 * (log_n + 1))


def _butterfly_int(x):
    """NumPy reference: the radix-2 butterflies in int64 (exact), strides 1, 2, 4, ..."""
    y = np.asarray(x, dtype=np.int64).copy()
    n_rows, n = y.shape
    h = 1
    while h < n:
        v = y.reshape(n_rows, n // (2 * h), 2, h)
        a = v[:, :, 0, :].copy()
        v[:, :, 0, :] += v[:, :, 1, :]
        v[:, :, 1, :] = a - v[:, :, 1, :]
        h *= 2
    return y


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("isa", ISAS)
def test_exact_on_integers_to_2_20_every_isa(isa, schedule, restore_isa):
    """Integers in [-8, 8] have exact partial sums (|sum| <= 2**23 < 2**24) for every d up to
    2**20, so every code path, aligned or not, must return exactly the int64 butterfly of NumPy,
    log_n = 0 .. 20 (the cache-blocked passes start above 2**11 / 2**12)."""
    rng = np.random.default_rng(7)
    _fwht.set_isa(isa)
    _cpu.set_fwht_schedule(schedule)
    for log_n in range(21):
        d = 1 << log_n
        x = _ints(rng, (max(2, min(4, 2**15 // d)), d), np.float64)
        expected = _butterfly_int(x)
        for dtype in (np.float32, np.float64):
            for offset in (0, 1):  # 64-byte aligned rows or not
                got = _aligned(x.astype(dtype), offset)
                _fwht.fwht_rows(got, log_n, 2)
                assert_array_equal(got, expected.astype(dtype), err_msg=(
                    f"{isa} {dtype.__name__} log_n={log_n} offset={offset}"))


def _aligned(x, offset=0):
    """A copy of x whose data start ``offset`` elements after a 64-byte boundary."""
    raw = np.empty(x.size + 64, x.dtype)
    start = (-raw.ctypes.data % 64) // raw.itemsize + offset
    out = raw[start:start + x.size].reshape(x.shape)
    out[...] = x
    return out


def test_bit_identity_detects_reassociation():
    """The bit-identity tests (SIMD paths against the scalar reference) can fail: the same
    butterflies in another order (strides decreasing instead of increasing) round differently
    on random data."""
    x = np.random.default_rng(9).standard_normal((2, 1 << 12)).astype(np.float32)
    ref = x.copy()
    _fwht.fwht_rows(ref, 12, 1)
    y = x.copy()
    h = y.shape[1] // 2
    while h >= 1:  # decreasing strides
        v = y.reshape(2, -1, 2, h)
        a = v[:, :, 0, :].copy()
        v[:, :, 0, :] += v[:, :, 1, :]
        v[:, :, 1, :] = a - v[:, :, 1, :]
        h //= 2
    assert_allclose(y, ref, rtol=1e-4, atol=1e-3)  # the same transform ...
    assert not np.array_equal(y, ref)  # ... with other roundings


def test_normalize_fused_scale_every_isa(restore_isa):
    """normalize=True (scale fused into the last pass) gives exactly the unnormalised transform
    times 1/sqrt(d) rounded to the dtype, on every code path, log_n = 0 .. 20."""
    rng = np.random.default_rng(5)
    for log_n in range(21):
        d = 1 << log_n
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal((max(1, min(3, 2**13 // d)), d)).astype(dtype)
            _fwht.set_isa("scalar")
            expected = fwht(x) * dtype(1.0 / np.sqrt(d))
            for isa in ISAS:
                _fwht.set_isa(isa)
                assert_array_equal(fwht(x, normalize=True), expected,
                                   err_msg=f"{isa} {dtype.__name__} log_n={log_n}")


def test_set_isa_errors(restore_isa):
    with pytest.raises(ValueError, match="unknown SIMD code path 'sse9'"):
        _fwht.set_isa("sse9")
    _fwht.set_isa("scalar")
    assert _fwht.isa() == "scalar"
    _fwht.set_isa("auto")
    assert _fwht.isa() == ISAS[-1]


def test_schedule_setting_and_env_var(restore_isa):
    """RANDFEAT_FWHT_SCHEDULE (read once, at the first transform) selects the schedule, which
    show_config reports; "auto" is "fma" on AMD family 19h with AVX-512 (Zen 4), else "add"; an
    unknown name is a clear error from the setter."""
    with pytest.raises(ValueError, match="unknown FWHT schedule 'mul'"):
        _cpu.set_fwht_schedule("mul")
    for name in SCHEDULES:
        _cpu.set_fwht_schedule(name)
        assert _cpu.fwht_schedule() == name
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import numpy as np, randfeat; randfeat.fwht(np.ones(64)); "
            "print(randfeat.show_config(as_dict=True)['simd']['fwht_schedule'])")
    for name in ("add", "fma", "auto"):
        env = dict(os.environ, RANDFEAT_FWHT_SCHEDULE=name,
                   PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=root).stdout.split()
        if name == "auto":
            cpuinfo = pathlib.Path("/proc/cpuinfo")
            info = cpuinfo.read_text() if cpuinfo.exists() else ""
            zen4 = ("AuthenticAMD" in info and re.search(r"^cpu family\s*:\s*25$", info, re.M)
                    and " avx512f " in info)
            assert out == ["fma" if zen4 else "add"]
        else:
            assert out == [name]


def test_env_var_forces_scalar():
    """RANDFEAT_FWHT_ISA, read once at the first transform, caps the code path."""
    code = ("import numpy as np; from randfeat import fwht; from randfeat._lib import _fwht; "
            "y = fwht(np.arange(64.0)); print(_fwht.isa(), y[0])")
    env = dict(os.environ, RANDFEAT_FWHT_ISA="scalar")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=root)
    assert out.stdout.split() == ["scalar", "2016.0"]


def test_docstring_examples():
    import doctest

    import randfeat.hadamard

    res = doctest.testmod(randfeat.hadamard, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


# ------------------------------------------------------------------ the fused finiteness check

# Lengths that exercise every code path of each ISA's kernel: the scalar code (log_n < lanes),
# the in-register block alone (up to 2**8 / 2**7 / 2**6 / 2**5), the block then radix-2/4/8/16
# passes inside L1, and the cache-blocked recursion whose last pass is the top radix pass
# (2**13: a radix-2 top pass, 2**15, 2**16, 2**17).
CHECK_LOGS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17]


def _spike(d, k, dtype, factor):
    """x = c h_k (h_k the k-th row of the Sylvester Hadamard matrix, c = factor * max / d, max
    the dtype's largest finite value): the transform is d c e_k = factor max e_k, and every
    intermediate value is c times a power of two up to d/2, so with 1 < factor < 2 only output k
    overflows, and only in the last level."""
    # the Sylvester matrix entry (k, j) is (-1)**popcount(k & j)
    parity = np.bitwise_count(np.arange(d, dtype=np.uint64) & np.uint64(k)) & 1
    return (np.where(parity, -1.0, 1.0) * (float(np.finfo(dtype).max) * (factor / d))
            ).astype(dtype)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_catches_overflow_at_any_output_every_isa(isa, dtype, restore_isa):
    """A single output that overflows in the last pass (finite input, finite intermediates) is
    caught wherever it is: first, last, and inner positions (the last pass's first and last
    vector, a vector's first and last lane), in one row of many, in place and out of place,
    with and without normalize; the same values just below the overflow pass the check with the
    same bits as check_finite=False (no false alarm)."""
    _fwht.set_isa(isa)
    for log_n in CHECK_LOGS[1:]:  # d = 1 has no level to overflow in
        d = 1 << log_n
        ks = {0, d - 1, d // 2, max(0, d // 2 - 1), max(0, d - 17)}
        if log_n <= 13:
            ks |= {min(d - 1, 15), min(d - 1, 16), min(d - 1, 255), min(d - 1, 256)}
        for k in sorted(ks):
            n_rows = 5
            x = np.zeros((n_rows, d), dtype)
            x[0] = 1.0
            x[3] = _spike(d, k, dtype, 1.5)
            where = f"{isa} {dtype.__name__} log_n={log_n} k={k}"
            for normalize in (False, True):
                with pytest.raises(ValueError, match=r"NaN or infinity in 1 of 5 transformed"):
                    fwht(x, normalize=normalize)                       # out of place
                y = x.copy()
                with pytest.raises(ValueError, match=r"NaN or infinity in 1 of 5 transformed"):
                    fwht(y, out=y, normalize=normalize)                # in place
                ref = fwht(x, normalize=normalize, check_finite=False)
                assert np.isinf(ref[3, k]), where
                assert np.isfinite(np.delete(ref[3], k)).all(), where
                assert_array_equal(y, ref, err_msg=where)  # out holds the transform
            ok = x.copy()
            ok[3] = _spike(d, k, dtype, 0.99)
            assert_array_equal(fwht(ok), fwht(ok, check_finite=False), err_msg=where)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_catches_non_finite_input_every_isa(isa, dtype, bad, restore_isa):
    """NaN/Inf in the input at the first or last element or inside a row, in one row of many
    (or several rows, on two threads): the count of rows is exact, the other rows' results are
    the unchecked transform's bits."""
    _fwht.set_isa(isa)
    rng = np.random.default_rng(11)
    for log_n in CHECK_LOGS:
        d = 1 << log_n
        n_rows = max(3, min(64, 2**16 // d))
        for pos in sorted({0, d - 1, d // 3}):
            x = rng.standard_normal((n_rows, d)).astype(dtype)
            x[n_rows - 1, pos] = bad
            with pytest.raises(ValueError, match=(
                    f"NaN or infinity in 1 of {n_rows} transformed vectors")):
                fwht(x, n_threads=1)
            x[0, d - 1 - pos] = bad
            with pytest.raises(ValueError, match=(
                    f"NaN or infinity in 2 of {n_rows} transformed vectors")):
                fwht(x, n_threads=2)
            y = fwht(x, check_finite=False)
            assert not np.isfinite(y[[0, -1]]).any()
            assert_array_equal(y[1:-1], fwht(x[1:-1]))


def test_check_scalar_path_sizes_every_isa(restore_isa):
    """Rows shorter than a vector (the scalar code inside the SIMD paths) and 1-long rows."""
    for isa in ISAS:
        _fwht.set_isa(isa)
        for dtype in (np.float32, np.float64):
            for log_n in range(5):
                d = 1 << log_n
                x = np.ones((4, d), dtype)
                x[2, d - 1] = np.inf
                with pytest.raises(ValueError, match="in 1 of 4 transformed vectors"):
                    fwht(x)
                with pytest.raises(ValueError, match="in 1 of 4 transformed vectors"):
                    fwht(x, normalize=True)


def test_out_of_place_reads_input_directly_same_bits(restore_isa):
    """out=None, a separate out, out=x, a non-contiguous input and an overlapping out all give
    the same bits (the first three through the kernel's source pointer or in place, the last
    two through a copy); the input is never modified."""
    rng = np.random.default_rng(12)
    for isa in ISAS:
        _fwht.set_isa(isa)
        for dtype in (np.float32, np.float64):
            for log_n in (0, 3, 7, 10, 13, 16):
                d = 1 << log_n
                x = rng.standard_normal((3, d)).astype(dtype)
                keep = x.copy()
                ref = x.copy()
                _fwht.fwht_rows(ref, log_n, 1)
                assert_array_equal(fwht(x), ref)
                out = np.empty_like(x)
                assert fwht(x, out=out) is out
                assert_array_equal(out, ref)
                raw = np.empty(3 * d + 1, dtype)                 # misaligned input rows
                xm = raw[1:].reshape(3, d)
                xm[...] = x
                assert_array_equal(fwht(xm), ref)
                assert_array_equal(x, keep)
                assert_array_equal(xm, keep)
                big = np.zeros((4, d), dtype)                    # out overlaps x (shifted rows)
                big[:3] = x
                assert fwht(big[:3], out=big[1:]) is not None
                assert_array_equal(big[1:], ref)


def test_fwht_rows_src_errors():
    x = np.zeros((2, 8))
    with pytest.raises(ValueError, match=r"src has shape \(3, 8\), expected \(2, 8\)"):
        _fwht.fwht_rows(x, 3, 1, 1.0, False, np.zeros((3, 8)))
    big = np.zeros((3, 8))
    with pytest.raises(ValueError, match="src and x overlap"):
        _fwht.fwht_rows(big[1:], 3, 1, 1.0, False, big[:2])
    with pytest.raises(ValueError, match="src and x overlap"):
        _fwht.fwht_rows(x, 3, 1, 1.0, False, x)
    src = np.arange(16.0).reshape(2, 8)
    src.flags.writeable = False                                  # read-only source is fine
    _fwht.fwht_rows(x, 3, 1, 1.0, False, src)
    assert_array_equal(x, _ref(src))
