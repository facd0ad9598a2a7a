"""Smoke test of ``python -m paper_figures orf_letter`` on a tiny synthetic LETTER file, and its
"data missing" output."""

import gzip

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from paper_figures import __main__ as cli  # noqa: E402
from paper_figures import orf_letter  # noqa: E402


def _tiny_letter(folder, n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 16, size=(n, 16))
    y = rng.choice(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), size=n)
    with gzip.open(folder / "letter.dat.gz", "wt") as f:
        for row, c in zip(X, y, strict=True):
            f.write(",".join(map(str, row)) + f",{c}\n")
    return folder


def test_orf_letter_quick(tmp_path, capsys):
    data = _tiny_letter(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["orf_letter", "--quick", "--data-dir", str(data), "--out", str(out),
                     "--reps", "2"]) == 0
    md = (out / "orf_letter.md").read_text()
    assert "QUICK MODE" in md and "| D/d | RFF (iid) | ORF |" in md
    assert (out / "orf_letter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = orf_letter.compute(dict(data_dir=str(data), n_points=60, multiples=[1, 4], reps=2,
                                  seed=0, quick=True, knn=10))
    assert set(res["mse"]) == set(orf_letter.MAPS)
    for m in orf_letter.MAPS:
        v = np.asarray(res["mse"][m])
        assert v.shape == (2, 2) and np.all(np.isfinite(v)) and np.all(v > 0)
        # every map converges: more frequencies, smaller error (4x the frequencies)
        assert v[1].mean() < v[0].mean()


def test_orf_letter_data_missing(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["orf_letter", "--quick", "--data-dir", str(tmp_path), "--out",
                     str(out)]) == 0
    md = (out / "orf_letter.md").read_text()
    assert "data missing" in md and "letter.dat.gz" in md
