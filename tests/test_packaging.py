"""The house rules that are not about numbers: the library imports without the ``[analysis]`` extra,
one version number, the licence the metadata declares, the theory notes the comments cite, and the
``statistical`` marker that a seed sweep selects."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import randfeat

ROOT = Path(__file__).resolve().parents[1]

# Run in a fresh interpreter so that modules other tests imported cannot hide an import: blocking a
# name in sys.modules makes every later `import name` raise ImportError.
_IMPORT_WITHOUT = r"""
import importlib, pkgutil, sys
blocked = sys.argv[1].split(",")
for name in blocked:
    sys.modules[name] = None
import randfeat
names = ["randfeat"] + [m.name for m in pkgutil.walk_packages(randfeat.__path__, "randfeat.")]
for name in names:
    importlib.import_module(name)
leaked = sorted(n for n in sys.modules if n.split(".")[0] in blocked and sys.modules[n] is not None)
assert not leaked, leaked
print(len(names))
"""


def _import_every_module_without(blocked, cwd=ROOT):
    return subprocess.run([sys.executable, "-c", _IMPORT_WITHOUT, ",".join(blocked)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_library_imports_without_analysis_extra():
    # matplotlib and tqdm are the [analysis] extra: `import randfeat` and every one of its modules
    # must work without them.
    res = _import_every_module_without(["matplotlib", "tqdm"])
    assert res.returncode == 0, res.stderr
    assert int(res.stdout.split()[-1]) >= 10  # the walk found the modules (not a vacuous pass)


def test_import_check_can_fail():
    # The same check with a dependency the library does need must fail, so the test above is able to
    # catch an import of matplotlib or tqdm.
    res = _import_every_module_without(["scipy"])
    assert res.returncode != 0
    assert "ImportError" in res.stderr or "ModuleNotFoundError" in res.stderr


def _pyproject():
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def test_matplotlib_and_tqdm_are_an_extra():
    project = _pyproject()["project"]
    deps = " ".join(project["dependencies"])
    assert "matplotlib" not in deps and "tqdm" not in deps
    extras = project["optional-dependencies"]
    for extra in ("analysis", "test"):
        assert any(d.startswith("matplotlib") for d in extras[extra])
        assert any(d.startswith("tqdm") for d in extras[extra])


def test_one_version_number():
    # pyproject reads the version from randfeat.__version__; nothing else states it
    cfg = _pyproject()
    assert "version" not in cfg["project"]
    assert "version" in cfg["project"]["dynamic"]
    assert cfg["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "randfeat.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+|rc\d+)?", randfeat.__version__)
    assert f"randfeat {randfeat.__version__}" not in (ROOT / "setup.py").read_text()


def test_licence_file_matches_metadata():
    cfg = _pyproject()["project"]
    assert cfg["license"] == "BSD-3-Clause"  # PEP 639 SPDX expression, not the deprecated table
    assert cfg["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "the randfeat developers" in text
    assert "Neither the name of the copyright holder" in text  # clause 3


def test_changelog_has_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "keepachangelog.com" in text
    assert re.search(r"^## \[Unreleased\]$", text, re.M)


def _theory_sections():
    # the theory pages docs/theory/*.md; their section numbers are what the code cites
    text = "\n".join(p.read_text() for p in sorted((ROOT / "docs" / "theory").glob("*.md")))
    return set(re.findall(r"^#{1,3} (\d+(?:\.\d+)*)[. ]", text, re.M))


def _citations():
    cite = re.compile(r"THEORY(?:\.md)? ?§ ?(\d+(?:\.\d+)*)")
    found = []
    for sub in ("randfeat", "analysis", "paper_figures", "tests", "benchmarks", "docs"):
        for path in sorted((ROOT / sub).rglob("*")):
            if path.suffix in {".py", ".pyx", ".pxd", ".c", ".h", ".md"} and path.is_file():
                for m in cite.finditer(path.read_text(encoding="utf-8", errors="replace")):
                    found.append((path.relative_to(ROOT).as_posix(), m.group(1)))
    return found


def test_theory_citations_resolve():
    # every "THEORY §x.y" / "THEORY.md §x.y" in the code names a section of docs/theory/*.md
    sections = _theory_sections()
    assert {"1", "2", "2.3", "4.6", "5", "6", "7"} <= sections
    cites = _citations()
    assert len(cites) >= 50
    missing = sorted({(f, s) for f, s in cites if s not in sections})
    assert not missing, f"citations of sections that docs/theory/*.md lack: {missing}"
    # and the check can fail: a section number that is not there is reported
    assert "9.9" not in sections


def test_statistical_marker_on_seeded_tests(request, global_random_seed):
    # conftest marks every test that takes global_random_seed, so `-m statistical` selects them
    assert request.node.get_closest_marker("statistical") is not None


def test_no_statistical_marker_without_seed(request):
    assert request.node.get_closest_marker("statistical") is None
