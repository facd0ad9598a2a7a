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


# ------------------------------------------------------------------ Yu et al. Fig. 2, 3, 4
def test_orf_fig2_tiny(tmp_path):
    from paper_figures import orf_fig2

    p = dict(ds=[2, 8], zs=[1.0], R=60, n_curve=0, seed=0, quick=True)
    res = orf_fig2.compute(p)
    assert [r["d"] for r in res["rows"]] == [2, 8]
    ex = {r["d"]: np.asarray(r["exact"]) for r in res["rows"]}
    # the exact ratio is below 1 and falls with d at these z (Yu et al. Fig. 2)
    assert np.all((ex[8] > 0) & (ex[8] < ex[2]) & (ex[2] < 1))
    for r in res["rows"]:
        assert np.all(np.isfinite(r["measured"])) and np.all(np.asarray(r["lo"]) <= r["hi"])
    paths = orf_fig2.render(res, p, tmp_path)
    md = (tmp_path / "orf_fig2.md").read_text()
    assert "QUICK MODE" in md and "| d | z | exact | eq. 3 |" in md
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_orf_fig3_tiny(tmp_path):
    from paper_figures import orf_fig3

    p = dict(ds=[4, 16], zs=[1.0], R=60, seed=0, quick=True)
    res = orf_fig3.compute(p)
    for r in res["rows"]:
        # SORF's bias is far inside Thm 3's bound; ORF' Monte Carlo bias near its exact value
        assert np.all(np.abs(r["bias"]) < np.asarray(r["bound"]))
        assert np.allclose(r["orf_unit_mc_bias"], r["orf_unit_bias"], atol=0.02)
        assert np.all(np.asarray(r["orf_unit_lo"]) <= r["orf_unit_hi"])
    orf_fig3.render(res, p, tmp_path)
    md = (tmp_path / "orf_fig3.md").read_text()
    assert "SORF bias ± se" in md and (tmp_path / "orf_fig3.png").exists()


def test_orf_fig4_tiny(tmp_path, monkeypatch):
    from sklearn.utils import Bunch

    import randfeat.datasets
    from paper_figures import orf_fig4

    def fake(name, data_home=None):
        if name == "gone":
            raise FileNotFoundError("gone.csv not found")
        X = np.random.default_rng(3).normal(size=(90, 6))
        return Bunch(X=X)

    monkeypatch.setattr(randfeat.datasets, "load_dataset", fake)
    p = dict(data_dir=str(tmp_path), datasets=["toy", "gone"], n_points=60, multiples=[1, 4],
             reps=2, seed=0, quick=True, knn=10)
    res = orf_fig4.compute(p)
    assert "missing" in res["sets"]["gone"]
    toy = res["sets"]["toy"]
    for m in orf_fig4.MAPS:
        v = np.asarray(toy["mse"][m])
        assert v.shape == (2, 2) and np.all(v > 0) and v[1].mean() < v[0].mean()
    orf_fig4.render(res, p, tmp_path)
    md = (tmp_path / "orf_fig4.md").read_text()
    assert "**toy** (d = 6)" in md and "data missing" in md and "gone.csv" in md
