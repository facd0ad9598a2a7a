"""All-or-nothing fits: an exception of any kind in ``fit``, ``partial_fit``, ``merge`` or a
re-fit leaves the previous state whole and usable.

Each test injects a failure at one of several points of the computation through a public seam
of the module that runs it (a monkeypatched BLAS/LAPACK entry, a solver step, a kernel), then
compares the object with an untouched copy, bit for bit, and uses it again.  Deterministic: no
statistical claim.  The seams are looked up in the modules of the current layout
(``randfeat.linear._statistics``, ``._solvers``) or of randfeat 0.1's single ``randfeat.linear``
module, so that the tests also run (and fail) on the code before the change.
"""

import copy
import importlib
import signal

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from randfeat import (
    ExactKernelRidge,
    RandomFeatureRidge,
    RandomFeatureRidgeClassifier,
    RandomFourierFeatures,
    RidgeStatistics,
)


def _module_with(attr, *names):
    """The first of the modules ``names`` that has ``attr`` (current layout, then 0.1's)."""
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, attr):
            return mod
    raise AssertionError(f"no module of {names} has {attr}")


class _Proxy:
    """A module stand-in whose named functions are replaced; everything else is the real one."""

    def __init__(self, real, **replace):
        self._real, self._replace = real, replace

    def __getattr__(self, name):
        return self._replace.get(name) or getattr(self._real, name)


def _raise(exc):
    def fail(*args, **kwargs):
        raise exc
    return fail


def _snapshot(obj):
    return copy.deepcopy(obj.__dict__)


def _assert_equal(a, b, what):
    """Equal values, arrays bit for bit, recursively through tuples, lists and dicts."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=what)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_equal(x, y, f"{what}[{i}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), what
        for k in a:
            _assert_equal(a[k], b[k], f"{what}[{k!r}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):   # a fitted map, a posterior
        assert type(a) is type(b), what
        _assert_equal(a.__dict__, b.__dict__, what)
    else:
        assert a == b or (a != a and b != b), what


def _assert_same_state(obj, snap):
    """Every attribute of ``obj`` equals the snapshot's, arrays bit for bit (caches aside)."""
    now = obj.__dict__
    skip = ("_gram_full", "_buf32")
    assert {k for k in now if k not in skip} == {k for k in snap if k not in skip}, (
        sorted(set(now) ^ set(snap)))
    for k in sorted(set(now) - set(skip)):
        _assert_equal(now[k], snap[k], k)


# ------------------------------------------------------------------------------ RidgeStatistics
def _stats_data(seed=0, n=50, D=7, K=2):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, D)), rng.normal(size=(n, K)), rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
@pytest.mark.parametrize("exc", [MemoryError, KeyboardInterrupt])
def test_partial_fit_failing_in_the_gram_product_leaves_the_statistics_whole(
        monkeypatch, gram_dtype, exc):
    """The chunk's Gram product fails before it writes (MemoryError, Ctrl-C): the statistics
    are those before the call -- in randfeat 0.1 ``zty_`` and ``z_sum_`` held the chunk and
    ``n_samples_`` did not."""
    Z, Y, w = _stats_data()
    dt = np.float32 if gram_dtype == "float32" else np.float64
    st = RidgeStatistics(gram_dtype).partial_fit(Z[:20].astype(dt), Y[:20], w[:20])
    snap = _snapshot(st)
    mod = _module_with("_blas", "randfeat.linear._statistics", "randfeat.linear")
    if gram_dtype == "float64":
        monkeypatch.setattr(mod, "_blas", _Proxy(mod._blas, dsyrk=_raise(exc())))
    else:
        monkeypatch.setattr(mod, "_gramlib", _Proxy(mod._gramlib,
                                                    syrk_f32_into=_raise(exc())))
    with pytest.raises(exc):
        st.partial_fit(Z[20:].astype(dt), Y[20:], w[20:])
    _assert_same_state(st, snap)
    monkeypatch.undo()
    # still usable: the chunk added now gives the statistics of all rows
    st.partial_fit(Z[20:].astype(dt), Y[20:], w[20:])
    ref = RidgeStatistics(gram_dtype).partial_fit(Z[:20].astype(dt), Y[:20], w[:20])
    ref.partial_fit(Z[20:].astype(dt), Y[20:], w[20:])
    for name in ("gram_", "zty_", "z_sum_", "y_sum_", "y_sq_sum_"):
        np.testing.assert_array_equal(getattr(st, name), getattr(ref, name))
    assert (st.n_samples_, st.weight_sum_) == (ref.n_samples_, ref.weight_sum_)


@pytest.mark.parametrize("first", [False, True])
def test_partial_fit_ctrl_c_during_the_gram_product(monkeypatch, first):
    """A Ctrl-C (a real SIGINT) that arrives while the chunk's product is written into the
    Gram: the update completes, then KeyboardInterrupt is raised with a note saying so -- the
    statistics are whole (those with the chunk), never part of it.  randfeat 0.1 raised right
    after the product: the Gram had the chunk, n_samples_, y_sum_, weight_sum_ did not."""
    Z, Y, w = _stats_data(1)
    st = RidgeStatistics()
    if not first:
        st.partial_fit(Z[:20], Y[:20], w[:20])
    mod = _module_with("_blas", "randfeat.linear._statistics", "randfeat.linear")
    real = mod._blas.dsyrk

    def dsyrk(*args, **kwargs):
        out = real(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)    # Ctrl-C while the BLAS call runs
        return out

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(mod, "_blas", _Proxy(mod._blas, dsyrk=dsyrk))
    with pytest.raises(KeyboardInterrupt) as info:
        st.partial_fit(Z[20:], Y[20:], w[20:])
    assert "the chunk was added" in " ".join(getattr(info.value, "__notes__", []))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored
    monkeypatch.undo()
    ref = RidgeStatistics()
    if not first:
        ref.partial_fit(Z[:20], Y[:20], w[:20])
    ref.partial_fit(Z[20:], Y[20:], w[20:])
    _assert_same_state(st, _snapshot(ref))


def test_merge_with_bad_statistics_leaves_both_whole():
    """``a += b`` where b's last field is damaged (a bad part of a reduction): a is unchanged
    (randfeat 0.1 had already added b's Gram, Zᵀy, sums to a), b too; ``merge`` likewise."""
    Z, Y, w = _stats_data(2)
    a = RidgeStatistics().partial_fit(Z[:25], Y[:25])
    b = RidgeStatistics().partial_fit(Z[25:], Y[25:], w[25:])
    b.y_sq_sum_ = np.zeros(5)                     # K = 2 elsewhere: cannot be added
    sa, sb = _snapshot(a), _snapshot(b)
    with pytest.raises(ValueError):
        a += b
    _assert_same_state(a, sa)
    _assert_same_state(b, sb)
    with pytest.raises(ValueError):
        a.merge(b)
    _assert_same_state(a, sa)


def test_partial_fit_with_zero_rows():
    """Zero rows are allowed (the docstring says so): nothing is added; a first call with zero
    rows fixes D and K; dense and sparse, 1-D and 2-D targets (randfeat 0.1 raised "cannot
    reshape array of size 0")."""
    Z, Y, w = _stats_data(3)
    st = RidgeStatistics().partial_fit(np.zeros((0, 7)), np.zeros((0, 2)))
    assert (st.n_samples_, st.n_features, st.n_targets, st.weight_sum_) == (0, 7, 2, 0.0)
    st.partial_fit(Z, Y, w)
    snap = _snapshot(st)
    st.partial_fit(np.zeros((0, 7)), np.zeros((0, 2)), np.zeros(0))
    st.partial_fit(sp.csr_matrix((0, 7)), np.zeros((0, 2)))
    _assert_same_state(st, snap)
    one = RidgeStatistics().partial_fit(np.zeros((0, 4)), np.zeros(0))
    assert (one.n_features, one.n_targets) == (4, 1)
    one.partial_fit(Z[:, :4], Y[:, 0])
    ref = RidgeStatistics().partial_fit(Z[:, :4], Y[:, 0])
    np.testing.assert_array_equal(one.solve(1.0)[0], ref.solve(1.0)[0])
    with pytest.raises(ValueError, match="no samples"):
        RidgeStatistics().partial_fit(np.zeros((0, 3)), np.zeros(0)).solve(1.0)
    with pytest.raises(ValueError, match="D=4 features and K=1 targets, got D=3"):
        one.partial_fit(np.zeros((0, 3)), np.zeros(0))


# ------------------------------------------------------------------------------ the learners
def _learner_data(seed, n, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=1.0 + seed, size=(n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def _solver_seams(solver, gram_dtype="float64"):
    """Points where a re-fit can fail: ``(module, attribute, replacement factory)``; the float32
    statistics' own kernels (``syrk_f32_into``, the mixed-precision ``posv_mixed``) for
    ``gram_dtype="float32"``."""
    stats_mod = _module_with("_blas", "randfeat.linear._statistics", "randfeat.linear")
    solve_mod = _module_with("_lapack", "randfeat.linear._solvers", "randfeat.linear")
    pcg_mod = _module_with("_nystrom", "randfeat.linear._solvers", "randfeat.linear")
    seams = {
        "accumulate": (stats_mod, "_blas", lambda real, exc: _Proxy(real, dsyrk=_raise(exc))),
        "factorise": (solve_mod, "_lapack", lambda real, exc: _Proxy(real, dpotrf=_raise(exc))),
        "nystrom": (pcg_mod, "_nystrom", lambda real, exc: _raise(exc)),
    }
    if gram_dtype == "float32":
        seams.update(
            accumulate=(stats_mod, "_gramlib",
                        lambda real, exc: _Proxy(real, syrk_f32_into=_raise(exc))),
            factorise=(solve_mod, "_gramlib",
                       lambda real, exc: _Proxy(real, posv_mixed=_raise(exc))))
    if solver == "loo":   # the selection by leave-one-out (randfeat 0.4's default)
        import randfeat.linear._fit as fit_mod

        seams["eigendecompose"] = (solve_mod, "scipy", lambda real, exc: _Proxy(
            real, linalg=_Proxy(real.linalg, eigh=_raise(exc))))
        seams["loo pass"] = (fit_mod, "LooRows", lambda real, exc: (lambda *a, **k:
                                                                     _raise(exc)))
    use = {"cholesky": ("accumulate", "factorise"), "pcg": ("nystrom",),
           "loo": ("accumulate", "eigendecompose", "loo pass")}[solver]
    return [seams[k] for k in use]


@pytest.mark.parametrize("solver, point", [("cholesky", 0), ("cholesky", 1), ("pcg", 0),
                                           ("loo", 0), ("loo", 1), ("loo", 2)])
@pytest.mark.parametrize("exc", [MemoryError, KeyboardInterrupt])
@pytest.mark.parametrize("width", [4, 5])
@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
def test_ridge_refit_failing_part_way_keeps_the_previous_model(monkeypatch, solver, exc, point,
                                                               width, gram_dtype):
    """RandomFeatureRidge with sigma="median" (the features depend on the data) re-fitted on
    other data (of the same or another width), failing in the accumulation, the factorisation
    or the preconditioner (hold-out selection), or in the eigendecomposition or the second
    pass of the leave-one-out selection: the old model predicts exactly as before and every
    attribute is the untouched one.  randfeat 0.1 replaced ``features_`` first (predictions
    moved by ~0.7 on this data) and ``n_features_in_`` (predict then refused the old data's
    width).  Both precisions of the statistics (the default, "auto", is float32 here)."""
    mod, attr, make = _solver_seams(solver, gram_dtype)[point]
    X1, y1 = _learner_data(0, 300)
    X2, y2 = _learner_data(3, 400, d=width)   # other data (another width: n_features_in_)
    kw = (dict(selection="loo", store_covariance=True) if solver == "loo"
          else dict(solver=solver, selection="holdout"))
    m = RandomFeatureRidge(RandomFourierFeatures(64, sigma="median", random_state=0),
                           alphas=[0.1, 1.0, 10.0], chunk_size=100, random_state=0,
                           gram_dtype=gram_dtype, **kw).fit(X1, y1)
    p0 = m.predict(X1)
    snap = _snapshot(m)
    monkeypatch.setattr(mod, attr, make(getattr(mod, attr), exc()))
    with pytest.raises(exc):
        m.fit(X2, y2)
    monkeypatch.undo()
    np.testing.assert_array_equal(m.predict(X1), p0)
    _assert_same_state(m, snap)
    # and it is usable: the re-fit now succeeds and equals a fresh fit
    ref = RandomFeatureRidge(RandomFourierFeatures(64, sigma="median", random_state=0),
                             alphas=[0.1, 1.0, 10.0], chunk_size=100, random_state=0,
                             gram_dtype=gram_dtype, **kw).fit(X2, y2)
    np.testing.assert_array_equal(m.fit(X2, y2).predict(X2), ref.predict(X2))


def test_classifier_refit_with_a_bad_target_keeps_the_previous_model():
    """A re-fit that fails in its checks (one class left after class_weight) leaves the
    classifier whole: classes, coefficients, n_features_in_."""
    X1, y1 = _learner_data(0, 200)
    c = RandomFeatureRidgeClassifier(RandomFourierFeatures(32, random_state=0),
                                     random_state=0).fit(X1, y1 > 0)
    snap, p0 = _snapshot(c), c.decision_function(X1)
    X2 = np.random.default_rng(1).normal(size=(50, 6))
    with pytest.raises(ValueError, match="2 classes"):
        c.fit(X2, np.where(np.arange(50) < 25, "a", "b"), sample_weight=np.r_[np.ones(25),
                                                                            np.zeros(25)])
    _assert_same_state(c, snap)
    np.testing.assert_array_equal(c.decision_function(X1), p0)


# ------------------------------------------------------------------------------ exact ridge
@pytest.mark.parametrize("where", ["gram", "cholesky", "eigh"])
@pytest.mark.parametrize("exc", [MemoryError, KeyboardInterrupt])
def test_exact_kernel_ridge_refit_out_of_memory_keeps_the_previous_model(monkeypatch, where,
                                                                         exc):
    """ExactKernelRidge re-fitted on more rows runs out of memory (in the n x n kernel matrix,
    its Cholesky factorisation, or the validation path's eigendecomposition): the old model
    still predicts exactly as before (randfeat 0.1 replaced X_fit_ first: predict then raised
    a broadcasting error)."""
    from randfeat.kernels import GaussianKernel

    X1, y1 = _learner_data(0, 60)
    X2, y2 = _learner_data(1, 90)
    m = ExactKernelRidge(sigma=1.5, alphas=[1e-3, 1e-1], random_state=0).fit(X1, y1)
    p0, snap = m.predict(X1), _snapshot(m)
    if where == "gram":
        real = GaussianKernel._gram

        def gram(self, U, V):
            if U.shape[0] == V.shape[0] == 90:
                raise exc()
            return real(self, U, V)

        monkeypatch.setattr(GaussianKernel, "_gram", gram)
    elif where == "cholesky":
        monkeypatch.setattr(scipy.linalg, "cho_factor", _raise(exc()))
    else:
        monkeypatch.setattr(scipy.linalg, "eigh", _raise(exc()))
    with pytest.raises(exc):
        m.fit(X2, y2)
    monkeypatch.undo()
    np.testing.assert_array_equal(m.predict(X1), p0)
    _assert_same_state(m, snap)
    np.testing.assert_array_equal(m.fit(X2, y2).predict(X2), ExactKernelRidge(
        sigma=1.5, alphas=[1e-3, 1e-1], random_state=0).fit(X2, y2).predict(X2))
