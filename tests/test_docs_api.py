"""The API reference documents every public name (docs/apiref.py is its source).

A name exported in ``randfeat.__all__`` or in a public submodule's ``__all__`` must be placed in a
group of ``docs/apiref.py`` (the site lists unplaced names under "Not yet placed", and this test
fails until they are); every non-optional name placed there must import.  Every check of
``python -m analysis`` has a row in docs/theory/12-checks.md.  No Sphinx needed.
"""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def apiref():
    spec = importlib.util.spec_from_file_location("apiref", ROOT / "docs" / "apiref.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_public_name_has_a_page(apiref):
    assert apiref.public_names(), "found no public names: the scan is broken"
    missing = apiref.unplaced()
    assert not missing, (
        f"public names without a place in the API reference: {missing}; add each to a group "
        "of docs/apiref.py (GROUPS)")


def test_placed_names_import(apiref):
    bad = []
    for name in apiref.grouped_names():
        try:
            apiref._resolve(name)
        except ImportError:
            if name not in apiref.OPTIONAL:
                bad.append(name)
    assert not bad, f"names in docs/apiref.py that do not import: {bad}"


def test_a_new_public_name_is_caught(apiref, monkeypatch):
    """The check itself: a name added to a public __all__ and to no group is reported."""
    import randfeat.fourier

    monkeypatch.setattr(randfeat.fourier, "BrandNewMap", type("BrandNewMap", (), {}),
                        raising=False)
    monkeypatch.setattr(randfeat.fourier, "__all__",
                        [*randfeat.fourier.__all__, "BrandNewMap"])
    assert apiref.unplaced() == ["randfeat.fourier.BrandNewMap"]


def test_analysis_pages_cover_their_modules(apiref):
    """Every analysis module with an ``__all__`` has a page (each page lists its whole __all__)."""
    import importlib
    import pkgutil

    import analysis

    listed = {m for m, _ in apiref.ANALYSIS_MODULES}
    public = {f"analysis.{m.name}" for m in pkgutil.iter_modules(analysis.__path__)
              if not m.name.startswith("_")}
    with_all = {m for m in public if hasattr(importlib.import_module(m), "__all__")}
    assert with_all <= listed, f"analysis modules without a page: {sorted(with_all - listed)}"


def test_readme_figure_is_the_scripts():
    """The README shows the figure docs/readme_figure.py draws (committed next to it)."""
    import re

    readme = (ROOT / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert "docs/_static/readme_maps.png" in images
    assert (ROOT / "docs" / "_static" / "readme_maps.png").stat().st_size > 10_000
    assert "readme_maps.png" in (ROOT / "docs" / "readme_figure.py").read_text()


def _check_rows(text):
    """The check names of the rows of the table in docs/theory/12-checks.md (``| `name` | ...``)."""
    import re

    return set(re.findall(r"^\|\s*`([a-z0-9_]+)`\s*\|", text, flags=re.MULTILINE))


def _theory_gaps(names, table_text, theory_texts):
    """(names without a row in the checks table, names mentioned in no theory page)."""
    rows = _check_rows(table_text)
    no_row = [n for n in names if n not in rows]
    nowhere = [n for n in names if not any(f"`{n}`" in t for t in theory_texts)]
    return no_row, nowhere


def test_every_check_is_in_the_theory_pages():
    """Every check of ``python -m analysis`` has a row in docs/theory/12-checks.md (claim, what
    decides, theory) and is named in the theory pages."""
    from analysis.checks import CHECKS

    theory = ROOT / "docs" / "theory"
    table = (theory / "12-checks.md").read_text(encoding="utf-8")
    texts = [p.read_text(encoding="utf-8") for p in sorted(theory.glob("*.md"))]
    assert len(CHECKS) >= 20, f"found only {len(CHECKS)} checks: the discovery is broken"
    no_row, nowhere = _theory_gaps(CHECKS, table, texts)
    assert not no_row, (f"checks without a row in docs/theory/12-checks.md: {no_row}; add "
                        "'| `name` | claim | decided by | theory |' for each")
    assert not nowhere, f"checks named in no page of docs/theory: {nowhere}"
    # every row has its four cells filled
    for line in table.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            assert len(cells) >= 4 and all(cells), f"incomplete row in 12-checks.md: {line[:80]}"


def test_a_missing_check_row_is_caught():
    """The check itself: a table without the row of one check reports exactly that check."""
    table = (ROOT / "docs" / "theory" / "12-checks.md").read_text(encoding="utf-8")
    lines = [ln for ln in table.splitlines() if not ln.startswith("| `binning_law` |")]
    cut = "\n".join(lines)
    assert len(lines) == len(table.splitlines()) - 1
    no_row, nowhere = _theory_gaps(["binning_law", "sorf"], cut, [cut])
    assert no_row == ["binning_law"] and nowhere == ["binning_law"]
