"""scipy.sparse input in StructuredOrthogonalFeatures and RandomBinningFeatures (issue 31).

Both maps are row-wise: a sparse X is densified one block of rows at a time (at most 2**20
entries, never the whole matrix), in its own dtype, and goes through the dense kernels, so the
output is the dense array's bit for bit -- SORF's features and projections, binning's fitted
state (pitches, shifts, cell map, column numbering), ``fit_transform`` and ``transform`` (seen
and unseen cells, exact and hashing modes).  Zeros of a sparse row are real coordinates: every
coordinate is binned, and an empty row lands in the cells of the zero vector.  Formats: CSR and
CSC; others (COO, LIL, DOK, ...) are converted to CSR, as in RandomFourierFeatures and Fastfood.
Deterministic (no statistical claim)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import randfeat._binning_layout as layout
import randfeat.sorf as sorf_module
from randfeat import RandomBinningFeatures, StructuredOrthogonalFeatures

DENSITIES = [0.0, 0.01, 0.2, 0.7, 1.0]


def _sparse(n, d, density, fmt, dtype, seed=0):
    """A random sparse matrix with empty rows (every 5th) and all-zero columns (every 4th)."""
    X = sp.random(n, d, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: np.random.default_rng(seed).normal(size=k) * 3)
    X = X.toarray()
    X[::5] = 0.0
    X[:, ::4] = 0.0
    X = sp.csr_matrix(X.astype(dtype))
    return X.asformat(fmt)


def _dense(Xs):
    return Xs.toarray()


# ------------------------------------------------------------------------------ SORF
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("features, D", [("paired", 64), ("paired", 33), ("phase", 40)])
def test_sorf_sparse_equals_dense(density, fmt, features, D, global_dtype):
    Xs = _sparse(60, 13, density, fmt, global_dtype)
    X = _dense(Xs)
    est = StructuredOrthogonalFeatures(D, features=features, sigma=1.7, random_state=0)
    Zd = est.fit(X).transform(X)
    Zs = est.transform(Xs)
    assert Zs.dtype == global_dtype and isinstance(Zs, np.ndarray)
    np.testing.assert_array_equal(Zs, Zd)
    np.testing.assert_array_equal(est._project(Xs), est._project(X))
    # a fit on the sparse matrix is the same map
    est2 = StructuredOrthogonalFeatures(D, features=features, sigma=1.7, random_state=0).fit(Xs)
    np.testing.assert_array_equal(est2.signs_, est.signs_)
    np.testing.assert_array_equal(est2.transform(Xs), Zd)


@pytest.mark.parametrize("density", DENSITIES)
def test_sorf_data_sigma_of_sparse_input(density, global_dtype):
    """sigma="scale"/"median" on the sparse matrix: the dense matrix's value (to rounding:
    the sparse variance is E x^2 - (E x)^2, the dense one numpy's two-pass variance)."""
    Xs = _sparse(60, 13, density, "csc", global_dtype)
    X = _dense(Xs)
    for rule in ("scale", "median"):
        a = StructuredOrthogonalFeatures(8, sigma=rule, random_state=0).fit(Xs)
        b = StructuredOrthogonalFeatures(8, sigma=rule, random_state=0).fit(X)
        assert a.sigma_ == pytest.approx(b.sigma_, rel=1e-12)


def test_sorf_sparse_is_densified_a_block_at_a_time(monkeypatch, global_dtype):
    Xs = _sparse(50, 20, 0.3, "csc", global_dtype)
    X = _dense(Xs)
    est = StructuredOrthogonalFeatures(31, random_state=0).fit(X)
    Zd = est.transform(X)
    monkeypatch.setattr(sorf_module, "_SPARSE_BLOCK_ELEMENTS", 7 * 20)      # 8 blocks of <= 7
    seen = []
    compute = StructuredOrthogonalFeatures._compute

    def spy(self, Xb, output):
        assert isinstance(Xb, np.ndarray)
        seen.append(Xb.shape[0])
        return compute(self, Xb, output)

    monkeypatch.setattr(StructuredOrthogonalFeatures, "_compute", spy)
    np.testing.assert_array_equal(est.transform(Xs), Zd)
    assert max(seen) == 7 and sum(seen) == 50


@pytest.mark.parametrize("fmt", ["coo", "lil", "dok", "bsr", "dia"])
def test_other_formats_are_converted(fmt):
    Xs = _sparse(30, 8, 0.3, "csr", np.float64)
    X = _dense(Xs)
    s = StructuredOrthogonalFeatures(16, random_state=0).fit(X)
    np.testing.assert_array_equal(s.transform(Xs.asformat(fmt)), s.transform(X))
    for hash_size in (None, 16):
        b = RandomBinningFeatures(12, sigma=0.8, hash_size=hash_size, random_state=0).fit(X)
        assert (b.transform(Xs.asformat(fmt)) != b.transform(X)).nnz == 0
        assert (b.fit_transform(Xs.asformat(fmt)) != b.fit_transform(X)).nnz == 0


def test_sparse_arrays_and_integers():
    """scipy.sparse arrays (csr_array) as matrices; integer sparse data becomes float64."""
    Xi = sp.csr_array(np.array([[0, 2, 0], [1, 0, 0], [0, 0, 0]], dtype=np.int64))
    X = Xi.toarray().astype(np.float64)
    s = StructuredOrthogonalFeatures(8, random_state=0).fit(Xi)
    Z = s.transform(Xi)
    assert Z.dtype == np.float64
    np.testing.assert_array_equal(Z, s.transform(X))
    b = RandomBinningFeatures(5, random_state=0)
    Zb = b.fit_transform(Xi)
    assert Zb.dtype == np.float64
    assert (Zb != RandomBinningFeatures(5, random_state=0).fit_transform(X)).nnz == 0


@pytest.mark.parametrize("est", [StructuredOrthogonalFeatures(8, random_state=0),
                                 RandomBinningFeatures(5, random_state=0),
                                 RandomBinningFeatures(5, hash_size=4, random_state=0)],
                         ids=["sorf", "binning", "binning_hashed"])
def test_sparse_bad_input_and_input_untouched(est):
    X = np.abs(np.random.default_rng(0).normal(size=(10, 5)))
    est.fit(X)
    for bad, match in ((np.nan, "NaN"), (np.inf, "infinity")):
        Xb = sp.csr_matrix(X)
        Xb.data[3] = bad
        with pytest.raises(ValueError, match=match):
            est.transform(Xb)
        with pytest.raises(ValueError, match=match):
            type(est)(**est.get_params()).fit(Xb)
    with pytest.raises(ValueError, match="X has 4 features"):
        est.transform(sp.csr_matrix(X[:, :4]))
    with pytest.raises(ValueError, match="Complex data not supported"):
        est.transform(sp.csr_matrix(X.astype(np.complex128)))
    Xs = sp.csc_matrix(X)
    Xs.data.setflags(write=False)
    copy = Xs.copy()
    est.transform(Xs)
    type(est)(**est.get_params()).fit(Xs)
    assert Xs.format == "csc" and (Xs != copy).nnz == 0
    np.testing.assert_array_equal(Xs.indices, copy.indices)
    est.set_params(n_threads=1)
    if isinstance(est, RandomBinningFeatures):
        est.set_params(n_grids=6)
        with pytest.raises(NotFittedError):
            est.transform(Xs)


# ------------------------------------------------------------------------------ binning
def _assert_same_fit(a, b):
    st_a, st_b = a._fitted, b._fitted
    assert st_a.n_features == st_b.n_features and st_a.salt == st_b.salt
    assert st_a.hash_size == st_b.hash_size
    np.testing.assert_array_equal(st_a.shifts, st_b.shifts)
    np.testing.assert_array_equal(st_a.inv_widths, st_b.inv_widths)
    assert (st_a.cells is None) == (st_b.cells is None)
    if st_a.cells is not None:
        assert st_a.cells == st_b.cells                       # layout, keys, columns
    for name in ("widths_", "shifts_", "n_cells_", "column_offsets_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.n_columns_ == b.n_columns_ and a.hash_salt_ == b.hash_salt_


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("hash_size", [None, 64])
def test_binning_sparse_equals_dense(density, fmt, hash_size, global_dtype):
    Xs = _sparse(200, 9, density, fmt, global_dtype)
    X = _dense(Xs)
    new = _sparse(80, 9, max(density, 0.3), fmt, global_dtype, seed=1)
    new = sp.csr_matrix(new.toarray() * 1.5).astype(global_dtype).asformat(fmt)  # unseen cells
    kw = dict(sigma=0.7, hash_size=hash_size, random_state=0)
    dense = RandomBinningFeatures(25, **kw).fit(X)
    sparse = RandomBinningFeatures(25, **kw).fit(Xs)
    _assert_same_fit(sparse, dense)
    for Xt, Xtd in ((Xs, X), (new, new.toarray())):
        Zs, Zd = sparse.transform(Xt), dense.transform(Xtd)
        assert Zs.dtype == Zd.dtype == global_dtype and Zs.format == "csr"
        assert Zs.shape == Zd.shape and (Zs != Zd).nnz == 0
        np.testing.assert_array_equal(Zs.indptr, Zd.indptr)
        np.testing.assert_array_equal(Zs.indices, Zd.indices)
    if hash_size is None and density < 1:
        assert sparse.transform(new).nnz < new.shape[0] * 25     # some cells were unseen
    Zft = RandomBinningFeatures(25, **kw).fit_transform(Xs)
    assert (Zft != RandomBinningFeatures(25, **kw).fit_transform(X)).nnz == 0
    assert (Zft != sparse.transform(Xs)).nnz == 0


def test_binning_zeros_are_coordinates():
    """An empty sparse row is binned as the zero vector: its cells are those of np.zeros, and it
    shares a cell with a dense row of zeros in every grid; a row that differs from zero in one
    coordinate only shares a cell with it in the fraction of grids the kernel gives."""
    Xs = sp.csr_matrix(([0.05], ([1], [2])), shape=(3, 6))
    est = RandomBinningFeatures(500, sigma=1.0, random_state=0).fit(Xs)
    Z = est.transform(Xs)
    Zd = est.transform(np.zeros((1, 6)))
    assert (Z[0] != Zd).nnz == 0 and (Z[2] != Zd).nnz == 0
    assert est.n_columns_ <= 2 * 500
    shared = Z[0].multiply(Z[1]).sum()
    assert 0.9 < shared < 1.0        # exp(-0.05) = 0.951 +- 0.01 (P = 500)


@pytest.mark.parametrize("hash_size", [None, 32])
def test_binning_sparse_blocks(monkeypatch, hash_size, global_dtype):
    """With a small block size the fingerprints, the lookups and the hashed columns run over
    many blocks of rows; the output is unchanged, and no block holds more than the limit."""
    Xs = _sparse(300, 7, 0.3, "csr", global_dtype)
    X = _dense(Xs)
    kw = dict(sigma=0.6, hash_size=hash_size, random_state=2)
    ref_fit = RandomBinningFeatures(20, **kw).fit(X)
    ref = ref_fit.transform(X)
    monkeypatch.setattr(layout, "SPARSE_BLOCK_ELEMENTS", 50 * 20)     # P = 20: 50 rows
    sizes = []
    blocks = layout.dense_row_blocks

    def spy(Xb, per_row=0):
        for a, b, D in blocks(Xb, per_row):
            assert D.shape[0] * max(D.shape[1], per_row) <= 50 * 20 or D.shape[0] == 1
            sizes.append(b - a)
            yield a, b, D

    monkeypatch.setattr(layout, "dense_row_blocks", spy)
    import randfeat.binning as binning_module
    monkeypatch.setattr(binning_module, "_dense_row_blocks", spy)
    est = RandomBinningFeatures(20, **kw).fit(Xs)
    _assert_same_fit(est, ref_fit)
    assert (est.transform(Xs) != ref).nnz == 0
    assert (RandomBinningFeatures(20, **kw).fit_transform(Xs) != ref).nnz == 0
    assert len(sizes) >= 6 and max(sizes) <= 50 * 20 // 7


def test_binning_sparse_with_ard_and_rules():
    """ARD length scales and sigma="scale"/"median" on sparse input: the dense input's fit."""
    Xs = _sparse(120, 8, 0.4, "csc", np.float64)
    X = _dense(Xs)
    for sigma in (np.linspace(0.3, 2.0, 8), "scale", "median"):
        a = RandomBinningFeatures(15, sigma=sigma, random_state=0).fit(Xs)
        b = RandomBinningFeatures(15, sigma=sigma, random_state=0).fit(X)
        np.testing.assert_allclose(a.sigma_, b.sigma_, rtol=1e-12)
        if not isinstance(sigma, str):
            _assert_same_fit(a, b)
        assert (a.transform(Xs) != a.transform(X)).nnz == 0
