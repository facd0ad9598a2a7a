"""Robustness of RandomBinningFeatures (issue 12 items 2 and 5, issue 17): atomic fits, one
consistent snapshot per transform, a validated cell layout, parameters changed after fit,
index overflow, the width warning, Ctrl-C in long loops and the fingerprint collision model.
"""

import math
import signal
import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import randfeat.binning as binning_mod
from randfeat import RandomBinningFeatures
from randfeat._lib import _binning
from randfeat.binning import WideBinningWarning

FITTED = ("kernel_", "widths_", "shifts_", "hash_salt_", "n_cells_", "column_offsets_",
          "n_columns_", "n_features_in_")


def _same_csr(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))


def _attrs(est):
    return {k: getattr(est, k) for k in FITTED}


def _assert_same_attrs(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k])
        else:
            assert a[k] == b[k], k


# -- atomic fits ------------------------------------------------------------------------------

@pytest.mark.parametrize("exc", [KeyboardInterrupt, MemoryError])
@pytest.mark.parametrize("hash_size", [None, 64])
def test_failed_refit_leaves_previous_fit_whole(monkeypatch, exc, hash_size):
    """Ctrl-C or MemoryError late in a re-fit (after the new grids were drawn and the new cells
    built) leaves every fitted attribute and the map of the previous fit unchanged."""
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(300, 4)), rng.normal(size=(200, 6)) * 3
    est = RandomBinningFeatures(20, sigma=0.5, hash_size=hash_size, random_state=0).fit(X1)
    before, Z = _attrs(est), est.transform(X1)

    real_warn = binning_mod._warn_width

    def fail(*args, **kwargs):  # the last step of building the new state
        real_warn(*args, **kwargs)
        raise exc()

    monkeypatch.setattr(binning_mod, "_warn_width", fail)
    est.set_params(random_state=1)
    with pytest.raises(exc):
        est.fit(X2)
    with pytest.raises(exc):
        est.fit_transform(X2)
    est.set_params(random_state=0)
    _assert_same_attrs(_attrs(est), before)
    assert _same_csr(est.transform(X1), Z)


def test_refit_replaces_all_attributes():
    X = np.random.default_rng(0).normal(size=(300, 4))
    est = RandomBinningFeatures(20, sigma=0.5, random_state=0).fit(X)
    assert est._fitted.cells is not None
    est.set_params(hash_size=32).fit(X)
    assert est._fitted.cells is None and est.n_columns_ == 20 * 32
    est.set_params(hash_size=None).fit(X[:, :3])
    assert est.n_features_in_ == 3 and est.widths_.shape == (20, 3)


def test_concurrent_fit_and_transform_are_consistent():
    """One thread refits (alternating two data sets: same grids, different cells and widths)
    while another transforms: every output is exactly the map of one of the two fits, with
    column indices inside the width (before: indices past the width, a use-after-free)."""
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(4000, 8)), rng.normal(size=(3000, 8)) * 0.5
    Xt = rng.normal(size=(500, 8))
    expected = [RandomBinningFeatures(30, sigma=1.0, random_state=0, n_threads=2)
                .fit(X).transform(Xt) for X in (X1, X2)]
    assert expected[0].shape != expected[1].shape
    est = RandomBinningFeatures(30, sigma=1.0, random_state=0, n_threads=2).fit(X1)
    stop = threading.Event()
    errors = []

    def refit():
        try:
            k = 0
            while not stop.is_set():
                k += 1
                est.fit(X1 if k % 2 == 0 else X2)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=refit)
    t.start()
    seen = set()
    try:
        for _ in range(150):
            Z = est.transform(Xt)
            assert Z.indices.size == 0 or Z.indices.max() < Z.shape[1]
            which = [i for i in (0, 1) if _same_csr(Z, expected[i])]
            assert which
            seen.update(which)
    finally:
        stop.set()
        t.join()
    assert not errors


# -- parameters changed after fit -------------------------------------------------------------

@pytest.mark.parametrize("change", [dict(hash_size=1000), dict(hash_size=None), dict(n_grids=7),
                                    dict(sigma=3.0), dict(kernel="laplacian"),
                                    dict(random_state=5), dict(kernel_params={"a": 2.0})])
@pytest.mark.parametrize("hash_size", [None, 16])
def test_set_params_after_fit_is_a_clear_error(change, hash_size):
    X = np.random.default_rng(0).normal(size=(200, 3))
    est = RandomBinningFeatures(10, kernel="inverse_power", hash_size=hash_size,
                                random_state=0).fit(X)
    if change.get("hash_size", 0) == hash_size:
        change = dict(hash_size=None if hash_size else 8)
    est.set_params(**change)
    with pytest.raises(NotFittedError, match=r"parameters changed after fit \((hash_size|"
                                             r"n_grids|sigma|kernel|random_state|kernel_params)"):
        est.transform(X)
    est.fit(X)  # refitting makes it usable again
    assert est.transform(X).shape == (200, est.n_columns_)


def test_n_threads_may_change_after_fit():
    X = np.random.default_rng(0).normal(size=(300, 3))
    est = RandomBinningFeatures(10, random_state=0, n_threads=1).fit(X)
    Z = est.transform(X)
    assert _same_csr(est.set_params(n_threads=2).transform(X), Z)


# -- validated layout -------------------------------------------------------------------------

def _layout_arrays(est):
    lay = est._fitted.cells.layout
    names = ["u", "r", "lo", "hi", "word", "shift", "raw", "fast", "idx", "n_active", "pu", "pr",
             "plo", "pscale", "xa", "xb", "wb", "bb_lo", "bb_hi", "fp_key"]
    return {k: lay.array(k) for k in names}


@pytest.mark.parametrize("field,value,msg", [
    ("idx", 99, "idx outside"),
    ("idx", -1, "idx outside"),
    ("shift", 64, "shift outside"),
    ("word", 5, "word outside"),
    ("n_active", 99, "n_active outside"),
    ("wb", 99, "word bounds"),
    ("fast", 2, "flags"),
])
def test_tampered_layout_is_a_clear_error(field, value, msg):
    X = np.random.default_rng(0).normal(size=(300, 4))
    est = RandomBinningFeatures(6, sigma=0.3, random_state=0).fit(X)
    arrays = _layout_arrays(est)
    arrays[field] = arrays[field].copy()
    arrays[field].flat[-1] = value
    with pytest.raises(ValueError, match=msg):
        _binning.CellLayout(**arrays)
    bad_shape = _layout_arrays(est)
    bad_shape["xa"] = bad_shape["xa"][:, :2]
    with pytest.raises(ValueError, match="xa must have shape"):
        _binning.CellLayout(**bad_shape)


def test_tampered_cell_map_is_a_clear_error():
    X = np.random.default_rng(0).normal(size=(300, 4))
    est = RandomBinningFeatures(6, sigma=0.3, random_state=0).fit(X)
    cells = est._fitted.cells
    layout, offsets = cells.layout, cells.column_offsets()
    entries = np.asarray(cells.__reduce__()[1][2]).copy()
    _binning.CellMap(layout, offsets, entries)  # the untouched state is accepted
    bad = offsets.copy()
    bad[-1] += 1
    with pytest.raises(ValueError, match="col_offsets"):
        _binning.CellMap(layout, bad, entries)
    swapped = entries.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    with pytest.raises(ValueError, match="out of order"):
        _binning.CellMap(layout, offsets, swapped)
    big_col = entries.copy()
    big_col[0, 1] |= np.uint64(0xFFFF) << np.uint64(32)  # column field (high half) too large
    with pytest.raises(ValueError, match="column outside"):
        _binning.CellMap(layout, offsets, big_col)


def test_public_attributes_do_not_steer_transform():
    """The compiled kernels read only the validated private snapshot: overwriting public
    fitted arrays (e.g. with out-of-range values) cannot make transform read out of bounds."""
    X = np.random.default_rng(0).normal(size=(300, 4))
    for hash_size in (None, 16):
        est = RandomBinningFeatures(6, sigma=0.3, hash_size=hash_size, random_state=0).fit(X)
        Z = est.transform(X)
        assert not est.shifts_.flags.writeable
        est.column_offsets_ = np.full_like(est.column_offsets_, 10 ** 12)
        est.shifts_.flags.writeable = True  # forced
        est.shifts_[:] = np.nan
        est.n_columns_ = 3
        assert _same_csr(est.transform(X), Z)


def test_layout_arrays_are_read_only_copies():
    X = np.random.default_rng(0).normal(size=(300, 4))
    est = RandomBinningFeatures(6, sigma=0.3, random_state=0).fit(X)
    a = est._fitted.cells.layout.array("idx")
    a[:] = -5  # a copy: the layout is unchanged
    assert (est._fitted.cells.layout.array("idx") >= 0).all()
    assert not est._fitted.shifts.flags.writeable


# -- overflow, width warning ------------------------------------------------------------------

def test_hash_width_overflow_is_a_clear_error():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match=r"n_grids \* hash_size = 4 \* 4611686018427387904 = "
                                         r"18446744073709551616 columns overflow"):
        RandomBinningFeatures(4, hash_size=2 ** 62, random_state=0).fit(X)
    with pytest.raises(ValueError, match="overflow the 64-bit column index"):
        RandomBinningFeatures(2, hash_size=2 ** 63, random_state=0).fit(X)


def test_wide_fit_warns():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.warns(WideBinningWarning, match=r"creates 20,000,000 output columns"):
        est = RandomBinningFeatures(2, hash_size=10 ** 7, random_state=0).fit(X)
    assert est.n_columns_ == 2 * 10 ** 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RandomBinningFeatures(2, hash_size=5 * 10 ** 6, random_state=0).fit(X)


def test_wide_exact_fit_warns(monkeypatch):
    X = np.random.default_rng(0).normal(size=(500, 3))
    monkeypatch.setattr(binning_mod, "WIDTH_WARNING_COLUMNS", 1000)
    with pytest.warns(WideBinningWarning, match="use a larger sigma"):
        RandomBinningFeatures(10, sigma=1e-3, random_state=0).fit(X)  # 5000 columns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RandomBinningFeatures(10, sigma=100.0, random_state=0).fit(X)


def test_thread_count_cap_is_a_clear_error():
    X = np.random.default_rng(0).normal(size=(50, 3))
    est = RandomBinningFeatures(4, random_state=0).fit(X)
    with pytest.raises(ValueError, match="n_threads"):
        est.set_params(n_threads=40000).transform(X)


# -- Ctrl-C -----------------------------------------------------------------------------------

@pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                    or not hasattr(signal, "pthread_kill"), reason="needs the main thread")
def test_ctrl_c_stops_a_long_compiled_loop():
    """SIGINT during a long hashed-columns loop raises KeyboardInterrupt before the loop ends:
    rows after the interruption are left untouched (no timing assertion: the loop needs several
    seconds, 6 s on 2 threads here).  The test's own handler raises KeyboardInterrupt for the
    first SIGINT only, and a SIGINT is sent every 0.2 s until the call returns, so neither a
    signal that lands before the loop starts nor the process's SIGINT disposition (which other
    libraries may change) can make it pass or fail by chance."""
    rng = np.random.default_rng(0)
    n, d, P = 6000, 1000, 200
    X = rng.normal(size=(n, d)).astype(np.float32)
    shifts = rng.random((P, d))
    inv = np.ones((P, d))
    out = np.full((n, P), -1, dtype=np.int64)
    raised = []

    def handler(signum, frame):
        if not raised:
            raised.append(signum)
            raise KeyboardInterrupt

    stop = threading.Event()
    main = threading.main_thread().ident

    def send():
        while not stop.wait(0.2):
            signal.pthread_kill(main, signal.SIGINT)

    old = signal.signal(signal.SIGINT, handler)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _binning.hashed_columns(X, shifts, inv, np.uint64(1), np.uint64(7), out, 2)
    finally:
        stop.set()
        sender.join()
        signal.signal(signal.SIGINT, old)
    assert (out[-1] == -1).all()  # the last rows were never reached


# -- fingerprints -----------------------------------------------------------------------------

def test_cells_are_exact_with_full_fingerprints():
    """With 96-bit fingerprints every distinct training cell gets its own column (a
    collision has probability below 2**-96 * n**2 / 2 here)."""
    X = np.random.default_rng(0).normal(size=(3000, 5))
    est = RandomBinningFeatures(8, sigma=1e-3, random_state=0).fit(X)
    np.testing.assert_array_equal(est.n_cells_, np.full(8, 3000))  # every row its own cell


def test_fingerprint_collision_model(monkeypatch, global_random_seed):
    """Keeping only k fingerprint bits (test seam), the number of colliding pairs of distinct
    cells matches the strongly universal model: E = C(N, 2) / 2**k per grid (exact over the
    random key, whatever the cells).

    N = 600 distinct cells (every row its own cell), k = 12: E = 43.9 per grid; 40 grids per
    fit and 10 fits give about 17,560 expected pairs.  The count is close to Poisson (variance
    ~ mean; pair indicators are pairwise independent and rare), so a 5-standard-error
    two-sided test has a false-alarm rate near 6e-7.  Broken hashing (e.g. keeping the low
    bits of a multiply-shift, or a hash that ignores a word) is far outside.
    """
    k, n, P, R = 12, 600, 40, 10
    monkeypatch.setattr(RandomBinningFeatures, "_fingerprint_bits", k)
    X = np.random.default_rng(global_random_seed).normal(size=(n, 6))
    pairs = 0
    for s in np.random.SeedSequence(global_random_seed).spawn(R):
        est = RandomBinningFeatures(P, sigma=1e-4, random_state=np.random.default_rng(s))
        Z = est.fit_transform(X)
        assert Z.indices.max() < Z.shape[1] and np.all(np.diff(Z.indptr) == P)
        counts = np.bincount(Z.indices, minlength=Z.shape[1])
        pairs += int((counts * (counts - 1) // 2).sum())
    expected = R * P * math.comb(n, 2) / 2 ** k
    assert abs(pairs - expected) <= 5 * math.sqrt(expected), (pairs, expected)


def test_fingerprint_bits_seam_changes_cells():
    """The seam really truncates (the collision test above can fail): with 4 bits, at most
    16 columns per grid remain."""
    X = np.random.default_rng(0).normal(size=(500, 3))
    est = RandomBinningFeatures(5, sigma=1e-3, random_state=0)
    est._fingerprint_bits = 4
    est.fit(X)
    assert (est.n_cells_ <= 16).all()
