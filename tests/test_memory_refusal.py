"""Issue 29: a request far beyond memory is refused before the first allocation.

``RandomFourierFeatures(2**31, sampling="qmc_sobol")`` on d = 2 used to be killed by the OOM
killer at 22.5 GB resident (the kernel overcommits the empty array, the process dies filling it).
Now every sampler and every estimator whose parameters or output are sized by a user parameter
compares the peak with :func:`randfeat._validation.available_memory` first and raises a
MemoryError naming the parameter, the size and the fix.  The tests shrink the available memory
through that seam (monkeypatch) and check with tracemalloc that nothing large was allocated.
"""

import tracemalloc

import numpy as np
import pytest

from randfeat import (
    Fastfood,
    RandomBinningFeatures,
    RandomFourierFeatures,
    StructuredOrthogonalFeatures,
)
from randfeat import _validation as v
from randfeat._sampling import (
    SAMPLINGS,
    check_frequencies,
    frequency_bytes,
    qmc_frequencies,
    sample_frequencies,
)
from randfeat.kernels import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
)

MiB = 1 << 20
BOUND = 100 * MiB


@pytest.fixture
def small_memory(monkeypatch):
    """The machine seen with 100 MiB available."""
    monkeypatch.setattr(v, "available_memory", lambda: (BOUND, "test bound"))


def _refused(call, match):
    """``call()`` raises MemoryError matching ``match`` with a tracemalloc peak under 8 MiB."""
    tracemalloc.start()
    try:
        with pytest.raises(MemoryError, match=match) as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB, f"{peak / MiB:.1f} MiB allocated before the refusal"
    return str(info.value)


X2 = np.random.default_rng(0).normal(size=(4, 2))


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_rff_fit_refused_before_sampling(small_memory, sampling):
    """2**24 components on d = 2: 2**23 x 2 float64 frequencies, at least 128 MiB at the peak."""
    rff = RandomFourierFeatures(2 ** 24, sampling=sampling, random_state=0)
    msg = _refused(lambda: rff.fit(X2),
                   r"^RandomFourierFeatures\.fit: n_components=16777216 needs \d+\.\d MiB for "
                   r"its 8388608 x 2 frequencies \(sampling='" + sampling + "'")
    assert "but only 100.0 MiB of memory is available (test bound); lower n_components" in msg
    assert not hasattr(rff, "frequencies_")


def test_issue_example_sizes_are_refused_by_the_check(monkeypatch):
    """The issue's call, n_components=2**31 with QMC Sobol' on d = 2, on a machine seen with
    23 GiB available: 16 GiB of float64 points, 8 GiB of their scaling factors and the 8 GiB
    float32 copy cannot fit.  Only the
    check is called (no fit): were it to let the request through, nothing is allocated here."""
    monkeypatch.setattr(v, "available_memory", lambda: (23 << 30, "test: 23 GiB"))
    with pytest.raises(MemoryError, match=r"^RandomFourierFeatures\.fit: n_components=2147483648 "
                                          r"needs 32\.0 GiB for its 1073741824 x 2 frequencies "
                                          r"\(sampling='qmc_sobol'; float64 draws, temporaries "
                                          r"and the float32 result\), but only 23\.0 GiB"):
        check_frequencies(GaussianKernel(), 2 ** 30, 2, "qmc_sobol", np.float32,
                          param="n_components=2147483648", func="RandomFourierFeatures.fit")


def test_far_beyond_any_memory_refused_without_patching():
    """2**40 components (8 TiB of frequencies): refused by the real bound of this machine,
    naming the parameter (numpy's own error did not)."""
    _refused(lambda: RandomFourierFeatures(2 ** 40, random_state=0).fit(X2),
             r"n_components=1099511627776 needs 8\.0 TiB .* of memory is available \(")


def test_rff_transform_refused_before_the_output(small_memory):
    rff = RandomFourierFeatures(4096, random_state=0).fit(X2)
    X = np.zeros((1 << 15, 2))
    _refused(lambda: rff.transform(X),
             r"RandomFourierFeatures\.transform: n_components=4096 needs 1\.0 GiB for the output "
             r"\(32768 x 4096 float64\), but only 100\.0 MiB .*; transform fewer rows at a time")
    np.testing.assert_array_equal(rff.transform(X[:8]), rff.transform(X[:8]))  # small: fine


@pytest.mark.parametrize("est, match", [
    (Fastfood(2 ** 24, random_state=0), r"Fastfood\.fit: n_components=16777216 needs"),
    (StructuredOrthogonalFeatures(2 ** 26, random_state=0),
     r"StructuredOrthogonalFeatures\.fit: n_components=67108864 needs"),
    (RandomBinningFeatures(2 ** 21, random_state=0),
     r"RandomBinningFeatures\.fit: n_grids=2097152 needs"),
])
def test_structured_and_binning_fit_refused(small_memory, est, match):
    _refused(lambda: est.fit(X2), match)


@pytest.mark.parametrize("est, param", [
    (Fastfood(4096, random_state=0), "n_components=4096"),
    (StructuredOrthogonalFeatures(4096, random_state=0), "n_components=4096"),
    (RandomBinningFeatures(4096, sigma=1.0, random_state=0), "n_grids=4096"),
    (RandomBinningFeatures(4096, sigma=1.0, hash_size=64, random_state=0), "n_grids=4096"),
])
def test_structured_and_binning_transform_refused(small_memory, est, param):
    est.fit(X2)
    X = np.zeros((1 << 15, 2))
    msg = _refused(lambda: est.transform(X), param + " needs")
    assert "transform fewer rows at a time" in msg


def test_sampler_called_directly_names_its_n(small_memory):
    rng = np.random.default_rng(0)
    _refused(lambda: sample_frequencies(GaussianKernel(), 2 ** 24, 2, rng, "iid"),
             r"^sample_frequencies: n=16777216 needs 260\.0 MiB .*; lower n$")
    assert rng.bit_generator.state == np.random.default_rng(0).bit_generator.state  # untouched


def test_small_requests_are_not_checked(monkeypatch):
    monkeypatch.setattr(v, "available_memory", lambda: (0, "test: nothing"))
    v.check_allocation(v.ALLOCATION_CHECK_MIN_BYTES - 1, "x", "n=1")
    RandomFourierFeatures(64, random_state=0).fit_transform(X2)
    with pytest.raises(MemoryError, match="n=1 needs 64.0 MiB for x, but only 0 B"):
        v.check_allocation(v.ALLOCATION_CHECK_MIN_BYTES, "x", "n=1")


def test_unknown_memory_is_not_a_refusal(monkeypatch):
    monkeypatch.setattr(v, "available_memory", lambda: None)
    v.check_allocation(1 << 60, "x", "n=1")


def test_available_memory_of_this_machine():
    got = v.available_memory()
    if got is None:
        pytest.skip("no /proc/meminfo, sysconf or cgroup here")
    nbytes, source = got
    phys = v._physical_memory()
    assert 0 < nbytes <= (phys or nbytes) and isinstance(source, str) and source


# ----------------------------------------------------------------------------- Sobol' dimension
def test_sobol_beyond_its_dimension_names_the_parameter_and_the_alternative():
    X = np.zeros((2, 21202))
    with pytest.raises(ValueError, match=r"sampling='qmc_sobol' supports at most 21201 "
                                         r"dimensions .* the data have n_features=21202\. Use "
                                         r"sampling='qmc_halton' \(any dimension\) or 'iid'"):
        RandomFourierFeatures(4, sampling="qmc_sobol", random_state=0).fit(X)
    # the alternative named works
    assert RandomFourierFeatures(4, sampling="qmc_halton", random_state=0).fit(X).frequencies_ \
        .shape == (2, 21202)


def test_sobol_matern_needs_one_more_coordinate():
    X = np.zeros((2, 21201))
    with pytest.raises(ValueError, match=r"n_features=21201 \(MaternKernel.* needs one more "
                                         r"coordinate: s = 21202\)"):
        RandomFourierFeatures(4, kernel=MaternKernel(1.0, nu=1.5), sampling="qmc_sobol",
                              random_state=0).fit(X)


def test_sobol_point_count_names_n_components():
    """Checked before any allocation (the sampler is called directly, so the result does not
    depend on this machine's memory)."""
    with pytest.raises(ValueError, match=r"at most 2\*\*30 Sobol' points per fit .* got "
                                         r"1073741825 frequencies; lower n_components"):
        qmc_frequencies(GaussianKernel(), 2 ** 30 + 1, 2, np.random.default_rng(0), "sobol")


# ----------------------------------------------------------------------------- the peak model
KERNELS = {"gaussian": GaussianKernel(1.0), "laplacian": LaplacianKernel(1.0),
           "cauchy": CauchyKernel(1.0), "matern": MaternKernel(1.0, nu=1.5),
           "ballsum": BallSumKernel(1.0, t=1)}


@pytest.mark.parametrize("d", [1, 2, 8, 64])
@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_frequency_bytes_bounds_the_measured_peak(kernel, sampling, d):
    """frequency_bytes (what the check compares with the available memory) is at least the
    peak tracemalloc sees while sampling 2**16 frequencies, and not above twice it (+4 MiB):
    the check neither lets an array through nor refuses one that fits by much."""
    k, n = KERNELS[kernel], 2 ** 16
    est = frequency_bytes(k, n, d, sampling)
    try:  # warm up: scipy's Sobol' tables and other one-off set-up are not per frequency
        sample_frequencies(k, 64, d, np.random.default_rng(0), sampling)
    except ValueError:  # a kernel the sampling does not support
        pytest.skip(f"{sampling} does not take {kernel}")
    tracemalloc.start()
    try:
        sample_frequencies(k, n, d, np.random.default_rng(0), sampling)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= est < 2 * peak + (4 << 20), (peak, est)


def test_binning_fit_refuses_a_cell_index_beyond_memory(small_memory):
    """Exact mode indexes every (row, grid): 2**12 rows x 1024 grids need up to 192 MiB."""
    X = np.random.default_rng(0).normal(size=(1 << 12, 2))
    msg = _refused(lambda: RandomBinningFeatures(1024, sigma=1.0, random_state=0).fit(X),
                   r"RandomBinningFeatures\.fit: n_grids=1024 needs 192\.0 MiB for the cell "
                   r"index of 4096 rows x 1024 grids")
    assert "lower n_grids, fit on fewer rows, or use hash_size" in msg


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("features, D", [("paired", 2048), ("paired", 2049), ("phase", 2049)])
@pytest.mark.parametrize("cls", [RandomFourierFeatures, Fastfood, StructuredOrthogonalFeatures])
def test_checked_output_bytes_bound_the_transform_peak(monkeypatch, cls, features, D, dtype):
    """What transform checks is the output it allocates (odd widths: the folded copy too),
    within 1% of tracemalloc's peak."""
    import randfeat.fastfood
    import randfeat.fourier
    import randfeat.sorf

    seen = []
    for mod in (randfeat.fourier, randfeat.fastfood, randfeat.sorf):
        monkeypatch.setattr(mod, "check_allocation", lambda nb, *a, **k: seen.append(nb))
    X = np.random.default_rng(0).normal(size=(1000, 20)).astype(dtype)
    est = cls(D, features=features, random_state=0).fit(X)
    seen.clear()
    tracemalloc.start()
    try:
        est.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (checked,) = seen
    assert 0.99 * peak <= checked <= peak, (checked, peak)
