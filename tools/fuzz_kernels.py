"""Hypothesis fuzz harness of randfeat's compiled kernels against exact NumPy references.

Run by ``tools/sanitize.sh`` under AddressSanitizer/UBSan (any out-of-bounds access, overflow
or misaligned access then aborts with a report), and usable on its own::

    python tools/fuzz_kernels.py --examples 200          # every target, 200 inputs each
    python tools/fuzz_kernels.py --examples 50 --only fwht

Targets, each checked against a reference computed another way:

fwht       random batch shapes and axes, lengths 2**0..2**12, float32/float64, out=/in place,
           strided input, 1-3 threads; integer inputs (|x| <= 8) make ``x @ hadamard(d).T``
           exact, so the comparison is exact; lengths that are not powers of two and
           non-finite inputs must raise.
rff        RandomFourierFeatures (both maps, both dtypes, random shapes and scales up to |w'x|
           ~ 1e6) against cos/sin of NumPy's ``X @ W.T`` (a few ulp, plus the rounding of the
           product); n_threads 1 and 2 bit-identical.
fastfood   Fastfood's raw projections V x (``_project``) against the explicit dense
           S H G Pi H B / (sigma sqrt d) built from the fitted parameters; the features against
           cos/sin of those projections; n_threads 1 and 2 bit-identical.
sorf       StructuredOrthogonalFeatures against its explicit matrix (sqrt(d)/sigma) H D1 H D2
           H D3 (when the fitted attributes are present).
binning    RandomBinningFeatures, exact and hashing modes, float32/float64, 1-70 dimensions
           (multi-word cell keys), rows on the cell edges u + k * pitch and one ulp either
           side: Z Z' * P against the collision counts of NumPy's floor((x - u) / pitch) cell
           coordinates (exact mode: only cells occupied at fit), column indices in range,
           n_threads 1 and 2 identical, fit_transform == fit + transform.
gram       the ridge fit's float32 chunk product by column panels (``_gram.syrk_f32_into``) and
           its mixed-precision solve (``_gram.posv_mixed``):
           random rows, widths 1-300 and panel widths 1-300 (edge panels of every size),
           integer-valued features (|z| <= 3, so every float32 sum is exact) against the exact
           float64 lower triangle, added onto a random Gram; the upper triangle never written.
           The solve: random SPD matrices (D 1-120, condition 1-1e12, shifts -1 to 10, NaN
           above the diagonal), A never written, and a solution only when it meets LAPACK's
           float64 test (else a negative return).

Exit status 0 when every example passed; the first failing example is printed by hypothesis.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

try:  # run from a checkout without installing
    import randfeat  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from randfeat import Fastfood, RandomFourierFeatures, fwht  # noqa: E402

_H = {}


def _hadamard(d):
    if d not in _H:
        _H[d] = scipy.linalg.hadamard(d).astype(np.float64)
    return _H[d]


# ------------------------------------------------------------------------------------- fwht

@st.composite
def _fwht_case(draw):
    log_n = draw(st.integers(0, 12))
    d = 1 << log_n
    lead = draw(st.lists(st.integers(1, 5), min_size=0, max_size=2))
    shape = [*lead]
    axis = draw(st.integers(0, len(shape)))
    shape.insert(axis, d)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    strided = draw(st.booleans())
    mode = draw(st.sampled_from(["new", "out", "inplace"]))
    threads = draw(st.integers(1, 3))
    normalize = draw(st.booleans())
    return shape, axis, dtype, seed, strided, mode, threads, normalize


def fuzz_fwht(examples):
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_fwht_case())
    def run(case):
        shape, axis, dtype, seed, strided, mode, threads, normalize = case
        rng = np.random.default_rng(seed)
        x = rng.integers(-8, 9, size=shape).astype(dtype)
        if strided:  # a view with a step along the first axis
            big = np.repeat(x, 2, axis=0)
            x = big[::2]
        d = shape[axis]
        ref = np.moveaxis(np.moveaxis(x.astype(np.float64), axis, -1) @ _hadamard(d).T, -1,
                          axis)
        if normalize:
            ref = ref / math.sqrt(d)
        x0 = x.copy()
        if mode == "new":
            y = fwht(x, axis=axis, normalize=normalize, n_threads=threads)
            assert np.array_equal(x, x0)
        elif mode == "out":
            y = np.empty(x.shape, dtype)
            fwht(x, axis=axis, normalize=normalize, out=y, n_threads=threads)
            assert np.array_equal(x, x0)
        else:
            y = np.ascontiguousarray(x)
            fwht(y, axis=axis, normalize=normalize, out=y, n_threads=threads)
        assert y.dtype == dtype and y.shape == x.shape
        tol = 0 if not normalize else (4e-7 if dtype == np.float32 else 1e-15) * 8 * d
        assert np.max(np.abs(y - ref), initial=0) <= tol, "fwht differs from hadamard(d) @ x"
        # refusals
        if d > 1:
            bad = np.ones(d + 1, dtype)
            try:
                fwht(bad)
            except ValueError:
                pass
            else:
                raise AssertionError("a length that is not a power of two was accepted")
        nan = np.full(d, np.nan, dtype)
        try:
            fwht(nan)
        except ValueError:
            pass
        else:
            raise AssertionError("NaN input did not raise")

    run()


# -------------------------------------------------------------------------------------- rff

@st.composite
def _rff_case(draw):
    n = draw(st.integers(1, 60))
    d = draw(st.integers(1, 40))
    m = draw(st.integers(1, 300))
    features = draw(st.sampled_from(["paired", "phase"]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    log_scale = draw(st.floats(-2, 6))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return n, d, m, features, dtype, log_scale, seed


def fuzz_rff(examples):
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_rff_case())
    def run(case):
        n, d, m, features, dtype, log_scale, seed = case
        rng = np.random.default_rng(seed)
        X = (rng.standard_normal((n, d)) * 10.0 ** log_scale / math.sqrt(d)).astype(dtype)
        width = 2 * m if features == "paired" else m
        est = RandomFourierFeatures(width, features=features, random_state=seed % 997,
                                    n_threads=1).fit(X)
        Z = est.transform(X)
        Z2 = est.set_params(n_threads=2).transform(X)
        assert np.array_equal(Z, Z2), "n_threads=1 and 2 differ"
        W = est.frequencies_.astype(dtype)
        P = (X @ W.T).astype(np.float64)
        # the scale of a product's rounding: sum_j |x_j w_j| (cancellation can make |P| small)
        A = np.abs(X).astype(np.float64) @ np.abs(W).astype(np.float64).T
        s = math.sqrt(2.0 / width)
        if features == "paired":
            ref = s * np.hstack([np.cos(P), np.sin(P)])
            Pw = np.hstack([A, A])
        else:
            b = est.offsets_.astype(dtype)
            arg = P + b.astype(np.float64)
            if dtype == np.float32:  # small arguments add in float (per element)
                small = np.abs(P.astype(np.float32)) + 6.3 <= 8192
                arg[small] = (P.astype(np.float32) + b).astype(np.float64)[small]
            ref = s * np.cos(arg)
            Pw = A
        eps = np.finfo(dtype).eps
        # a few ulp of the trig part, plus the two BLAS products' rounding (d ulp of sum |x w|)
        bound = s * (8 * eps + 4 * eps * (d + 1) * (Pw + 1))
        assert np.all(np.abs(Z - ref) <= bound), float(np.max(np.abs(Z - ref) / bound))

    run()


# --------------------------------------------------------------------------------- fastfood

def _fastfood_V(ff):
    d = ff.d_padded_
    H = _hadamard(d)
    S = np.zeros(ff.n_blocks_ * d)
    S[:ff.n_freq_] = ff.S_
    S = S.reshape(ff.n_blocks_, d)
    blocks = []
    for b in range(ff.n_blocks_):
        Pi = np.zeros((d, d))
        Pi[np.arange(d), ff.P_[b]] = 1.0
        blocks.append(np.diag(S[b]) @ H @ np.diag(ff.G_[b].astype(np.float64)) @ Pi @ H
                      @ np.diag(ff.B_[b].astype(np.float64)) / (ff.sigma_ * math.sqrt(d)))
    return np.vstack(blocks)[:ff.n_freq_]


@st.composite
def _ff_case(draw):
    n = draw(st.integers(1, 30))
    d_in = draw(st.integers(1, 70))
    n_comp = draw(st.integers(1, 300))
    features = draw(st.sampled_from(["paired", "phase"]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return n, d_in, n_comp, features, dtype, seed


def fuzz_fastfood(examples):
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_ff_case())
    def run(case):
        n, d_in, n_comp, features, dtype, seed = case
        if features == "paired" and n_comp % 2:
            n_comp += 1
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, d_in)).astype(dtype)
        ff = Fastfood(n_comp, features=features, random_state=seed % 991, n_threads=1).fit(X)
        Z = ff.transform(X)
        assert np.array_equal(Z, ff.set_params(n_threads=2).transform(X)), "threads differ"
        V = _fastfood_V(ff)
        Xp = np.zeros((n, ff.d_padded_))
        Xp[:, :d_in] = X.astype(np.float64)
        ref = Xp @ V.T
        got = ff._project(X).astype(np.float64)
        eps = np.finfo(dtype).eps
        scale = np.abs(Xp).sum(axis=1, keepdims=True) * np.abs(V).max() + 1e-300
        tol = 8 * eps * (math.log2(ff.d_padded_) + 2) * scale
        assert np.all(np.abs(got - ref) <= tol), float(np.max(np.abs(got - ref) / tol))
        assert Z.shape == (n, n_comp) and np.all(np.isfinite(Z))

    run()


# ------------------------------------------------------------------------------------- sorf

def fuzz_sorf(examples):
    try:
        from randfeat import StructuredOrthogonalFeatures
    except ImportError:
        print("  sorf: not in this build, skipped")
        return

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(1, 20), st.integers(1, 40), st.integers(1, 200),
           st.sampled_from([np.float32, np.float64]), st.integers(0, 2 ** 32 - 1))
    def run(n, d_in, n_comp, dtype, seed):
        n_comp += n_comp % 2
        X = np.random.default_rng(seed).standard_normal((n, d_in)).astype(dtype)
        est = StructuredOrthogonalFeatures(n_comp, random_state=seed % 983, n_threads=1).fit(X)
        Z = est.transform(X)
        assert np.array_equal(Z, est.set_params(n_threads=2).transform(X)), "threads differ"
        assert Z.shape == (n, n_comp) and np.all(np.isfinite(Z))
        W = getattr(est, "frequencies_", None)
        if W is not None:
            P = X.astype(np.float64) @ np.asarray(W, dtype=np.float64).T
            s = math.sqrt(2.0 / n_comp)
            m = P.shape[1]
            ref = s * np.hstack([np.cos(P), np.sin(P)])
            assert Z.shape[1] == 2 * m
            eps = np.finfo(dtype).eps
            tol = s * 64 * eps * (np.abs(np.hstack([P, P])) + 1) * math.sqrt(d_in + 1)
            assert np.all(np.abs(Z - ref) <= tol), float(np.max(np.abs(Z - ref) / tol))

    run()


# ---------------------------------------------------------------------------------- binning

def _binning_cells(X, shifts, inv_widths):
    """Cell coordinates floor((x - u) * r) of every row in every grid, (P, n, d), float64
    arithmetic as the kernel does it (x widened to float64 first)."""
    Xd = X.astype(np.float64)
    return np.floor((Xd[None, :, :] - shifts[:, None, :]) * inv_widths[:, None, :])


@st.composite
def _binning_case(draw):
    n_fit = draw(st.integers(1, 40))
    n_new = draw(st.integers(1, 30))
    d = draw(st.sampled_from([1, 2, 3, 5, 8, 17, 33, 70]))
    P = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    sigma = draw(st.sampled_from([0.05, 0.3, 1.0, 4.0, 50.0]))
    hash_size = draw(st.sampled_from([None, None, 1, 7, 64]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return n_fit, n_new, d, P, dtype, sigma, hash_size, seed


def fuzz_binning(examples):
    """RandomBinningFeatures (exact and hashing modes) against the collision counts of the
    cell coordinates computed in NumPy: new rows mix training rows, fresh rows and points
    placed on the cell edges u + k * pitch (and one ulp either side) of the fitted grids."""
    from randfeat import RandomBinningFeatures

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_binning_case())
    def run(case):
        n_fit, n_new, d, P, dtype, sigma, hash_size, seed = case
        rng = np.random.default_rng(seed)
        Xf = (rng.integers(-6, 7, size=(n_fit, d)) * 0.25).astype(dtype)  # ties and collisions
        est = RandomBinningFeatures(n_grids=P, sigma=sigma, hash_size=hash_size,
                                    random_state=seed % 977, n_threads=1).fit(Xf)
        st_ = est._fitted_state()["_fitted"]
        shifts, inv = np.asarray(st_.shifts), np.asarray(st_.inv_widths)
        widths = 1.0 / inv
        # new rows: training rows, fresh rows, and cell edges of a random grid
        rows = [Xf[rng.integers(0, n_fit, size=n_new // 3 + 1)],
                rng.standard_normal((n_new // 3 + 1, d)).astype(dtype)]
        g = rng.integers(0, P)
        k = rng.integers(-3, 4, size=(n_new // 3 + 1, d))
        edge = shifts[g] + k * widths[g]
        step = rng.integers(-1, 2, size=edge.shape)  # the edge, or one ulp below / above
        edge = np.where(step < 0, np.nextafter(edge, -np.inf),
                        np.where(step > 0, np.nextafter(edge, np.inf), edge))
        rows.append(edge.astype(dtype))
        X = np.vstack(rows)
        X0 = X.copy()
        Z = est.transform(X)
        assert np.array_equal(X, X0), "transform modified its input"
        Z2 = est.set_params(n_threads=2).transform(X)
        assert (Z != Z2).nnz == 0, "n_threads=1 and 2 differ"
        n_cols = est.n_columns_ if hasattr(est, "n_columns_") else Z.shape[1]
        assert Z.shape == (X.shape[0], n_cols)
        assert Z.indices.size == 0 or (Z.indices.min() >= 0 and Z.indices.max() < n_cols)
        cx = _binning_cells(X, shifts, inv)         # (P, n, d)
        cf = _binning_cells(Xf, shifts, inv)
        same = np.all(cx[:, :, None, :] == cx[:, None, :, :], axis=-1)  # (P, n, n)
        if hash_size is None:
            seen = np.stack([(cx[p][:, None, :] == cf[p][None, :, :]).all(-1).any(-1)
                             for p in range(P)])  # (P, n): cell occupied at fit
            assert np.array_equal(np.diff(Z.indptr), seen.sum(axis=0)), "entries per row"
            count = (same & seen[:, :, None]).sum(axis=0)
        else:
            assert np.all(np.diff(Z.indptr) == P), "hashing mode: one entry per grid"
            cols = Z.indices.reshape(-1, P)
            assert np.all((cols // hash_size) == np.arange(P)[None, :]), "grid column ranges"
            for p in range(P):  # equal cells share a column (the converse holds w.h.p. only)
                eq = cols[:, p][:, None] == cols[:, p][None, :]
                assert np.all(eq[same[p]]), "a cell mapped to two columns"
            count = None
        G = (Z @ Z.T).toarray().astype(np.float64) * P
        if count is not None:
            assert np.allclose(G, count, rtol=0, atol=1e-4 * P), "collision counts differ"
        else:
            assert np.all(G >= same.sum(axis=0) - 1e-4 * P), "collisions lost"
        Zft = RandomBinningFeatures(n_grids=P, sigma=sigma, hash_size=hash_size,
                                    random_state=seed % 977).fit_transform(Xf)
        assert (Zft != est.transform(Xf)).nnz == 0, "fit_transform differs from fit.transform"

    run()


# ------------------------------------------------------------------------------------- gram

def fuzz_gram(examples):
    try:
        from randfeat._lib import _gram
    except ImportError:
        print("  gram: not in this build, skipped")
        return

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 200), st.integers(1, 300), st.integers(1, 300),
           st.integers(0, 2 ** 32 - 1))
    def run(n, D, p, seed):
        rng = np.random.default_rng(seed)
        Z = rng.integers(-3, 4, size=(n, D)).astype(np.float32)
        G0 = np.asfortranarray(rng.integers(-5, 6, size=(D, D)).astype(np.float64))
        G = G0.copy(order="F")
        ws = np.full((D, min(p, D)), np.nan, dtype=np.float32, order="F")
        _gram.syrk_f32_into(Z, G, ws)
        Z64 = Z.astype(np.float64)
        low = np.tril(np.ones((D, D), dtype=bool))
        assert np.array_equal(G[low], (G0 + Z64.T @ Z64)[low]), "lower triangle differs"
        assert np.array_equal(G[~low], G0[~low]), "upper triangle written"

    run()

    # the mixed-precision solve (float32 Cholesky + float64 refinement): A never written, a
    # non-negative return only with a solution that passes LAPACK's float64 test
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(1, 120), st.integers(1, 5), st.floats(0.0, 12.0),
           st.floats(-1.0, 10.0), st.integers(0, 2 ** 32 - 1))
    def run_posv(D, K, log_cond, shift, seed):
        rng = np.random.default_rng(seed)
        Q, _ = np.linalg.qr(rng.normal(size=(D, D)))
        A = np.asfortranarray((Q * np.geomspace(1.0, 10.0 ** -log_cond, D)) @ Q.T)
        A[np.triu_indices(D, 1)] = np.nan
        A0 = A.copy(order="F")
        B = np.asfortranarray(rng.normal(size=(D, K)))
        X, R = np.empty((D, K), order="F"), np.empty((D, K), order="F")
        SX = np.empty((D, K), dtype=np.float32, order="F")
        SA = np.full((D, D), np.nan, dtype=np.float32, order="F")
        it = _gram.posv_mixed(A, shift, B, X, SA, SX, R)
        assert np.array_equal(A, A0, equal_nan=True), "A written"
        if it >= 0:
            S = np.tril(A0) + np.tril(A0, -1).T + shift * np.eye(D)
            bound = (np.abs(X).max(axis=0) * np.abs(S).sum(axis=1).max()
                     * np.finfo(float).eps * np.sqrt(D))
            assert np.all(np.abs(B - S @ X).max(axis=0) <= bound), "test not met"

    run_posv()


TARGETS = {"fwht": fuzz_fwht, "rff": fuzz_rff, "fastfood": fuzz_fastfood, "sorf": fuzz_sorf,
           "binning": fuzz_binning, "gram": fuzz_gram}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=200, help="inputs per target (200)")
    ap.add_argument("--only", nargs="+", choices=sorted(TARGETS), default=sorted(TARGETS))
    args = ap.parse_args(argv)
    for name in args.only:
        t0 = time.perf_counter()
        TARGETS[name](args.examples)
        print(f"  {name:9s} {args.examples} examples passed ({time.perf_counter() - t0:.1f} s)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
