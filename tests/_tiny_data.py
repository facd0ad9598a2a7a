"""Write tiny synthetic copies of every dataset file format read by :mod:`randfeat.datasets`.

Same file names, separators, headers and column layouts as the real files (see
``../shared/data/README.md``), a few hundred rows of random numbers with a learnable target.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

KDD_PROTO = ["tcp", "udp", "icmp"]
KDD_SERVICE = ["http", "smtp", "ftp", "private"]
KDD_FLAG = ["SF", "S0", "REJ"]

# file -> (rows, columns) as written below (for the shape tests)
TINY_SHAPES = {
    "cpu_act": (300, 21), "census": (300, 16), "adult": (200 + 100, 123), "kddcup99": (400, None),
    "wine": (250, 11), "parkinsons": (300, 21), "insurance": (240 + 80, 85), "kegg": (350, 27),
    "covtype": (300, 54), "ct_slices": (120, 384), "year_prediction_msd": (200, 90),
    "letter": (260, 16),
}


def _w(path: Path, text: str):
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def _reg(rng, n, d):
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1 % d] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def write_tiny_data(folder, seed=0, skip=()):
    """Write every file into ``folder`` (names in ``skip`` — dataset keys — are left out)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def want(key):
        return key not in skip

    if want("cpu_act"):
        X, y = _reg(rng, 300, 21)
        X = np.abs(X) * 10
        y = 80 + 5 * y
        lines = ["% tiny synthetic cpu_act", "@relation cpu_act"]
        lines += [f"@attribute a{i} numeric" for i in range(21)] + ["@attribute class numeric",
                                                                    "", "@data"]
        lines += [",".join(f"{v:.6g}" for v in row) for row in np.column_stack([X, y])]
        _w(folder / "cpu_act.arff.gz", "\n".join(lines) + "\n")
    if want("census"):
        X, y = _reg(rng, 300, 16)
        y = 1e5 * (2 + y)
        txt = ",".join([str(i) for i in range(1, 17)] + ["y"]) + "\n"
        txt += "\n".join(",".join(f"{v:.7g}" for v in r) for r in np.column_stack([X, y]))
        _w(folder / "house_16H.csv.gz", txt + "\n")
    if want("adult"):
        for name, n in (("a9a.gz", 200), ("a9a.t.gz", 100)):
            out = []
            for _ in range(n):
                idx = np.sort(rng.choice(np.arange(1, 123), size=14, replace=False))
                lab = 1 if (idx[:3].sum() % 3 == 0) else -1
                out.append(f"{lab:+d} " + " ".join(f"{i}:1" for i in idx))
            _w(folder / name, "\n".join(out) + "\n")
    if want("kddcup99"):
        out = []
        for i in range(400):
            attack = rng.random() < 0.6
            num = np.abs(rng.normal(size=38)) * (3 if attack else 1)
            num[0] = int(num[0] * 10)
            cats = [KDD_PROTO[i % 3], KDD_SERVICE[i % 4], KDD_FLAG[i % 3]]
            vals = [f"{v:.2f}" for v in num]
            row = vals[:1] + cats + vals[1:] + ["smurf." if attack else "normal."]
            out.append(",".join(row))
        _w(folder / "kddcup.data_10_percent.gz", "\n".join(out) + "\n")
    if want("wine"):
        for v, n in (("white", 250), ("red", 120)):
            X, y = _reg(rng, n, 11)
            y = np.clip(np.round(6 + y), 3, 9)
            head = ";".join(f'"c{i}"' for i in range(11)) + ';"quality"'
            txt = head + "\n" + "\n".join(";".join(f"{a:.4g}" for a in r)
                                          for r in np.column_stack([X, y]))
            _w(folder / f"winequality-{v}.csv.gz", txt + "\n")
    if want("parkinsons"):
        X, y = _reg(rng, 300, 20)
        cols = ["subject#", "age", "sex", "test_time", "motor_UPDRS", "total_UPDRS"] + [
            f"v{i}" for i in range(16)]
        A = np.column_stack([X[:, :4], 20 + 5 * y, 25 + 6 * y, X[:, 4:]])
        txt = ",".join(cols) + "\n" + "\n".join(",".join(f"{a:.6g}" for a in r) for r in A)
        _w(folder / "parkinsons_updrs.data.gz", txt + "\n")
    if want("insurance"):
        Xtr = rng.integers(0, 10, size=(240, 85))
        ytr = (Xtr[:, 0] > 6).astype(int)
        Xev = rng.integers(0, 10, size=(80, 85))
        yev = (Xev[:, 0] > 6).astype(int)
        _w(folder / "ticdata2000.txt.gz",
           "\r\n".join("\t".join(map(str, r)) for r in np.column_stack([Xtr, ytr])) + "\r\n")
        _w(folder / "ticeval2000.txt.gz", "\r\n".join("\t".join(map(str, r)) for r in Xev) + "\r\n")
        _w(folder / "tictgts2000.txt.gz", "\r\n".join(map(str, yev)) + "\r\n")
    if want("kegg"):
        X, y = _reg(rng, 350, 27)
        _w(folder / "keggundirected.csv.gz",
           "\n".join(",".join(f"{a:.5g}" for a in r) for r in np.column_stack([X, y])) + "\n")
    if want("covtype"):
        X = rng.normal(size=(300, 54))
        lab = 1 + (np.abs(X[:, 0] * 3).astype(int) % 7)
        _w(folder / "covtype.data.gz",
           "\n".join(",".join(f"{a:.4g}" for a in r) + f",{c}"
                     for r, c in zip(X, lab, strict=True)) + "\n")
    if want("ct_slices"):
        X, y = _reg(rng, 120, 384)
        head = ",".join(["patientId"] + [f"value{i}" for i in range(384)] + ["reference"])
        A = np.column_stack([np.arange(120) % 7, X, 50 + 10 * y])
        _w(folder / "slice_localization_data.csv",
           head + "\n" + "\n".join(",".join(f"{a:.4g}" for a in r) for r in A) + "\n")
    if want("year_prediction_msd"):
        X, y = _reg(rng, 200, 90)
        A = np.column_stack([np.round(2000 + 5 * y), X])
        _w(folder / "YearPredictionMSD.txt",
           "\n".join(",".join(f"{a:.5g}" for a in r) for r in A) + "\n")
    if want("letter"):  # KEEL layout: 16 integer attributes 0-15, then the class letter
        r2 = np.random.default_rng([seed, 26])  # own stream: the files above stay as they were
        lab = np.arange(260) % 26
        X = np.clip(np.round(r2.normal(7.5, 2.0, size=(260, 16)) + (lab[:, None] % 4)), 0, 15)
        _w(folder / "letter.dat.gz", "\n".join(",".join(str(int(a)) for a in r) + f",{chr(65 + c)}"
                                              for r, c in zip(X, lab, strict=True)) + "\n")
    return folder
